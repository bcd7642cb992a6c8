// SPDX-License-Identifier: MIT
// Long requests and replies: payloads written into the target's segment at random offsets
// (segment start and end included) before the handler runs; content checked in the handler
// and again after the exchange.
#include "support/spmd.hpp"

#include <algorithm>
#include <random>

namespace {

using am_test::spmd_test;

class long_am : public spmd_test {};

struct placement {
    std::size_t offset = 0, len = 0;
    std::uint64_t seed = 0;
};

// The part of every segment that rank `src` may write: disjoint per source, the last one
// reaching the end of the segment.
std::pair<std::size_t, std::size_t> slice_of(std::size_t seg, int n, int src) {
    const std::size_t width = seg / static_cast<std::size_t>(n) / 8 * 8;
    const std::size_t begin = width * static_cast<std::size_t>(src);
    return {begin, src == n - 1 ? seg : begin + width};
}

placement choose(std::size_t seg, int n, int src, int dst, int round) {
    const auto [begin, end] = slice_of(seg, n, src);
    const std::size_t room = end - begin;
    const std::size_t cap = std::min<std::size_t>(room, 48 << 10);
    std::mt19937_64 rng(am_test::mix(static_cast<std::uint64_t>(src * 7919 + dst * 131 + round)));
    placement p;
    p.seed = rng();
    switch (round) {
        case 0:
            p.offset = begin, p.len = 0;
            break;  // empty, at the slice start
        case 1:
            p.len = cap, p.offset = end - cap;
            break;  // ends at the slice end
        case 2:
            p.len = 1, p.offset = end - 1;
            break;  // last byte of the slice
        case 3:
            p.len = cap, p.offset = begin;
            break;  // from the slice start
        default:
            p.len = std::uniform_int_distribution<std::size_t>(0, cap)(rng);
            p.offset = begin + std::uniform_int_distribution<std::size_t>(0, room - p.len)(rng);
    }
    return p;
}

TEST_P(long_am, random_offsets) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int rounds = n > 16 ? 5 : 24;
        const std::span<std::byte> seg = ctx.segment();
        ASSERT_GE(seg.size(), std::size_t{1} << 20);
        std::vector<placement> last(static_cast<std::size_t>(n));
        am::counter got(ctx), acks(ctx);
        auto ack = ctx.handler([&](am::token&) { acks.add(); });
        auto put = ctx.handler([&, ack](am::token& t, std::span<std::byte> p, std::uint64_t off,
                                        std::uint64_t len, std::uint64_t seed) {
            EXPECT_EQ(p.data(), seg.data() + off) << "payload not where it was put";
            EXPECT_EQ(p.size(), len);
            EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(len, seed)))
                << len << " bytes at " << off << " from rank " << t.source();
            last[static_cast<std::size_t>(t.source())] = {off, len, seed};
            got.add();
            t.reply(ack);
        });
        ctx.barrier();
        for (int k = 0; k < rounds; ++k) {
            for (int i = 0; i < n; ++i) {
                const int d = (me + i) % n;
                const placement pl = choose(seg.size(), n, me, d, k);
                std::vector<std::byte> buf = am_test::pattern(pl.len, pl.seed);
                ctx.request(d, put, am::bytes(buf), pl.offset, std::uint64_t{pl.offset},
                            std::uint64_t{pl.len}, pl.seed);
                std::ranges::fill(buf, std::byte{0});  // the source buffer is free on return
            }
            // One message per target in flight: the next round may overwrite the slice.
            acks.wait(static_cast<std::uint64_t>((k + 1) * n));
        }
        got.wait(static_cast<std::uint64_t>(rounds * n));
        ctx.barrier();  // every source has its acks: no more writes into this segment
        for (int s = 0; s < n; ++s) {
            const placement& pl = last[static_cast<std::size_t>(s)];
            const placement want = choose(seg.size(), n, s, me, rounds - 1);
            EXPECT_EQ(pl.offset, want.offset);
            EXPECT_EQ(pl.len, want.len);
            EXPECT_TRUE(std::ranges::equal(seg.subspan(pl.offset, pl.len),
                                           am_test::pattern(pl.len, pl.seed)))
                << "segment bytes of rank " << s << "'s last message changed after its handler";
        }
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(long_am, segment_end_and_empty) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const std::span<std::byte> seg = ctx.segment();
        am::counter got(ctx);
        auto put = ctx.handler([&](am::token& t, std::span<std::byte> p, std::uint64_t off) {
            EXPECT_EQ(p.data(), seg.data() + off);
            if (off == seg.size()) {
                EXPECT_TRUE(p.empty());
            } else {
                ASSERT_EQ(p.size(), seg.size() - off);
                EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), 99)));
                EXPECT_EQ(t.source(), n - 1);
            }
            got.add();
        });
        ctx.barrier();
        for (int d = 0; d < n; ++d) {  // an empty payload exactly at the end of the segment
            ctx.request(d, put, std::span<const std::byte>{}, seg.size(),
                        std::uint64_t{seg.size()});
        }
        if (me == n - 1) {  // one rank fills the last 4 KiB + 3 bytes of every segment
            const std::size_t len = 4099;
            const auto buf = am_test::pattern(len, 99);
            for (int d = 0; d < n; ++d) {
                ctx.request(d, put, am::bytes(buf), seg.size() - len,
                            std::uint64_t{seg.size() - len});
            }
        }
        got.wait(static_cast<std::uint64_t>(n + 1));
        EXPECT_TRUE(std::ranges::equal(seg.last(4099), am_test::pattern(4099, 99)));
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(long_am, long_reply) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const std::span<std::byte> seg = ctx.segment();
        const int rounds = n > 16 ? 2 : 6;
        am::counter replies(ctx);
        std::vector<placement> last(static_cast<std::size_t>(n));
        auto back = ctx.handler(
            [&](am::token& t, std::span<std::byte> p, std::uint64_t off, std::uint64_t seed) {
                EXPECT_FALSE(t.is_request());
                EXPECT_EQ(p.data(), seg.data() + off);
                EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), seed)));
                last[static_cast<std::size_t>(t.source())] = {off, p.size(), seed};
                replies.add();
            });
        // The target answers with a long reply into the requester's segment, in the slice
        // the requester reserved for it.
        auto ask = ctx.handler(
            [&, back](am::token& t, std::uint64_t off, std::uint64_t len, std::uint64_t seed) {
                std::vector<std::byte> buf = am_test::pattern(len, seed);
                t.reply(back, am::bytes(buf), off, off, seed);
                std::ranges::fill(buf, std::byte{0});
            });
        ctx.barrier();
        for (int k = 0; k < rounds; ++k) {
            for (int d = 0; d < n; ++d) {
                const placement pl = choose(seg.size(), n, d, me, k + 1);
                ctx.request(d, ask, std::uint64_t{pl.offset}, std::uint64_t{pl.len}, pl.seed);
            }
            replies.wait(static_cast<std::uint64_t>((k + 1) * n));
        }
        for (int d = 0; d < n; ++d) {
            const placement& pl = last[static_cast<std::size_t>(d)];
            EXPECT_EQ(pl.seed, choose(seg.size(), n, d, me, rounds).seed);
            EXPECT_TRUE(std::ranges::equal(seg.subspan(pl.offset, pl.len),
                                           am_test::pattern(pl.len, pl.seed)));
        }
    });
    ASSERT_EQ(rc, 0);
}

// Payloads of megabytes: each rank writes its whole slice of every segment in one message.
TEST_P(long_am, large_payloads) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const std::span<std::byte> seg = ctx.segment();
        am::counter got(ctx);
        auto put = ctx.handler([&](am::token& t, std::span<std::byte> p, std::uint64_t seed) {
            const auto [begin, end] = slice_of(seg.size(), n, t.source());
            EXPECT_EQ(p.data(), seg.data() + begin);
            EXPECT_EQ(p.size(), end - begin);
            EXPECT_EQ(am_test::checksum(p), am_test::checksum(am_test::pattern(p.size(), seed)));
            got.add();
        });
        ctx.barrier();
        const auto [begin, end] = slice_of(seg.size(), n, me);
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            const std::uint64_t seed = am_test::mix(static_cast<std::uint64_t>(me * 1000 + d));
            const auto buf = am_test::pattern(end - begin, seed);
            ctx.request(d, put, am::bytes(buf), begin, seed);
        }
        got.wait(static_cast<std::uint64_t>(n));
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(long_am, am_test::all_params());

}  // namespace
