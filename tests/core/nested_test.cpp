// SPDX-License-Identifier: MIT
// Handlers that send: request -> reply + nested request chains around the ring of ranks, and
// handlers fanning nested requests out to every rank (with tiny rings, so nested sends must be
// parked and flushed by later progress instead of blocking or deadlocking).
#include "support/spmd.hpp"

namespace {

using am_test::spmd_test;

class nested : public spmd_test {};

// Rank r starts a chain of `hops` requests: each hop handler acknowledges its requester with a
// reply and forwards the chain to the next rank; the last hop tells the origin it is done.
TEST_P(nested, request_reply_chain) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int hops = n > 16 ? 3 * n : 40;
        am::counter done(ctx), acks(ctx), hops_seen(ctx);
        std::atomic<std::uint64_t> hops_sent{0};
        std::uint64_t remaining_sum = 0;
        auto finished = ctx.handler([&](am::token& t, std::int32_t origin, std::int32_t from) {
            EXPECT_EQ(origin, me);
            EXPECT_EQ(from, t.source());
            done.add();
        });
        auto ack = ctx.handler([&](am::token& t, std::int32_t remaining) {
            EXPECT_FALSE(t.is_request());
            EXPECT_GE(remaining, 0);
            acks.add();
        });
        am::handler<am::category::short_am, std::int32_t, std::int32_t> hop_self;
        auto hop = ctx.handler(
            [&, ack, finished](am::token& t, std::int32_t origin, std::int32_t remaining) {
                hops_seen.add();
                remaining_sum += static_cast<std::uint64_t>(remaining);
                t.reply(ack, remaining);
                if (remaining > 0) {
                    ++hops_sent;
                    t.ctx().request((me + 1) % n, hop_self, origin, remaining - 1);
                } else {
                    t.ctx().request(origin, finished, origin, me);
                }
            });
        hop_self = hop;
        ctx.barrier();
        ++hops_sent;
        ctx.request((me + 1) % n, hop, me, hops);
        done.wait(1);
        ctx.barrier();  // every chain has finished: hops_sent is final everywhere
        acks.wait(hops_sent.load());
        // Chain of origin o visits o+1, o+2, ... (hops + 1 hops, remaining hops..0).
        std::uint64_t want_hops = 0, want_sum = 0;
        for (int o = 0; o < n; ++o) {
            for (int k = 1; k <= hops + 1; ++k) {
                if ((o + k) % n != me) continue;
                ++want_hops;
                want_sum += static_cast<std::uint64_t>(hops + 1 - k);
            }
        }
        EXPECT_EQ(hops_seen.value(), want_hops);
        EXPECT_EQ(remaining_sum, want_sum);
        EXPECT_EQ(done.value(), 1u);
        ctx.barrier();
    });
    ASSERT_EQ(rc, 0);
}

// Each rank sends `spread(depth)` to every rank; a handler with depth > 0 sends
// `spread(depth - 1)` to every rank again and acknowledges its requester.
void fanout(am::context& ctx) {
    const int n = ctx.size();
    const auto un = static_cast<std::uint64_t>(n);
    const int depth = n >= 64 ? 1 : (n >= 4 ? 3 : (n == 2 ? 5 : 6));
    am::counter received(ctx), acks(ctx);
    std::vector<std::uint64_t> per_level(static_cast<std::size_t>(depth) + 1, 0);
    auto ack = ctx.handler([&](am::token& t) {
        EXPECT_FALSE(t.is_request());
        acks.add();
    });
    am::handler<am::category::short_am, std::int32_t> self{};
    auto spread = ctx.handler([&, ack](am::token& t, std::int32_t level) {
        ASSERT_GE(level, 0);
        ASSERT_LE(level, depth);
        ++per_level[static_cast<std::size_t>(level)];
        received.add();
        if (level < depth) {
            for (int d = 0; d < n; ++d) t.ctx().request(d, self, level + 1);
        }
        t.reply(ack);
    });
    self = spread;
    ctx.barrier();
    for (int d = 0; d < n; ++d) ctx.request(d, spread, std::int32_t{0});
    // Level l reaches every rank n^(l+1) times; this rank sends n for each handler below depth.
    std::uint64_t want_received = 0, want_acks = un, level_count = un;
    for (int l = 0; l <= depth; ++l) {
        want_received += level_count;
        if (l < depth) want_acks += level_count * un;
        level_count *= un;
    }
    received.wait(want_received);
    acks.wait(want_acks);
    level_count = un;
    for (int l = 0; l <= depth; ++l, level_count *= un) {
        EXPECT_EQ(per_level[static_cast<std::size_t>(l)], level_count) << "level " << l;
    }
    ctx.barrier();
}

TEST_P(nested, fanout_to_all_ranks) {
    ASSERT_EQ(run(fanout), 0);
}

TEST_P(nested, fanout_tiny_rings) {
    ASSERT_EQ(run(fanout, [](am::config& c) { c.ring_bytes = 1024; }), 0);
}

AM_INSTANTIATE(nested, am_test::all_params());

}  // namespace
