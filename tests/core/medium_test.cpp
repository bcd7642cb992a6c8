// SPDX-License-Identifier: MIT
// Medium requests and replies: payloads of 0, 1 and max_medium() bytes, content checked, the
// source buffer reusable on return, with default and tiny rings.
#include "support/spmd.hpp"

#include <algorithm>

namespace {

using am_test::spmd_test;

class medium_am : public spmd_test {};

std::uint64_t seed_of(int src, int dst, std::size_t len, int k) {
    return am_test::mix((static_cast<std::uint64_t>(src) << 40) ^
                        (static_cast<std::uint64_t>(dst) << 20) ^ (len << 4) ^
                        static_cast<std::uint64_t>(k));
}

// Every rank sends every rank one medium of each size; the handler checks length and content
// and echoes the payload back in a medium reply, which the sender checks too.
void exchange_sizes(am::context& ctx, const std::vector<std::size_t>& sizes) {
    const int n = ctx.size();
    am::counter got(ctx), echoed(ctx);
    auto echo = ctx.handler(
        [&](am::token& t, std::span<const std::byte> p, std::uint64_t len, std::uint64_t seed) {
            EXPECT_FALSE(t.is_request());
            ASSERT_EQ(p.size(), len);
            EXPECT_EQ(seed, seed_of(ctx.rank(), t.source(), len, 0));
            EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(len, seed))) << len << " bytes";
            echoed.add();
        });
    auto take = ctx.handler([&, echo](am::token& t, std::span<const std::byte> p, std::uint64_t len,
                                      std::uint64_t seed) {
        ASSERT_EQ(p.size(), len) << "from rank " << t.source();
        EXPECT_EQ(seed, seed_of(t.source(), ctx.rank(), len, 0));
        EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(len, seed))) << len << " bytes";
        got.add();
        t.reply(echo, p, len, seed);  // the payload span is valid for the whole handler
    });
    ctx.barrier();
    for (std::size_t len : sizes) {
        for (int d = 0; d < n; ++d) {
            const std::uint64_t seed = seed_of(ctx.rank(), d, len, 0);
            std::vector<std::byte> buf = am_test::pattern(len, seed);
            ctx.request(d, take, am::bytes(buf), std::uint64_t{len}, seed);
            std::ranges::fill(buf, std::byte{0xee});  // copied before return: reuse is safe
        }
    }
    const auto expected = static_cast<std::uint64_t>(sizes.size()) * static_cast<std::uint64_t>(n);
    got.wait(expected);
    echoed.wait(expected);
}

TEST_P(medium_am, sizes_zero_one_max) {
    const int rc = run([](am::context& ctx) {
        const std::size_t max = ctx.max_medium();
        EXPECT_GE(max, std::size_t{1024});
        EXPECT_LE(max, std::size_t{64} << 10);  // the default config::max_medium
        exchange_sizes(ctx, {0, 1, 2, 7, 8, 9, 4093, max - 1, max});
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(medium_am, tiny_ring_sizes) {
    const int rc = run(
        [](am::context& ctx) {
            const std::size_t max = ctx.max_medium();
            // A 1 KiB ring carries at most half of itself per message.
            EXPECT_GT(max, std::size_t{0});
            EXPECT_LT(max, std::size_t{512});
            exchange_sizes(ctx, {0, 1, max / 2, max, max, max});
        },
        [](am::config& c) { c.ring_bytes = 1024; });
    ASSERT_EQ(rc, 0);
}

TEST_P(medium_am, max_medium_follows_config) {
    const int rc = run(
        [](am::context& ctx) {
            EXPECT_EQ(ctx.max_medium(), std::size_t{100});
            exchange_sizes(ctx, {0, 1, 99, 100});
        },
        [](am::config& c) { c.max_medium = 100; });
    ASSERT_EQ(rc, 0);
}

TEST_P(medium_am, sixteen_args_and_payload) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size();
        am::counter got(ctx);
        auto take = ctx.handler([&](am::token& t, std::span<const std::byte> p, std::uint64_t a0,
                                    std::uint64_t a1, std::uint64_t a2, std::uint64_t a3,
                                    std::uint64_t a4, std::uint64_t a5, std::uint64_t a6,
                                    std::uint64_t a7, std::uint64_t a8, std::uint64_t a9,
                                    std::uint64_t a10, std::uint64_t a11, std::uint64_t a12,
                                    std::uint64_t a13, std::uint64_t a14, std::int8_t a15) {
            const std::uint64_t args[] = {a0, a1, a2,  a3,  a4,  a5,  a6, a7,
                                          a8, a9, a10, a11, a12, a13, a14};
            for (std::uint64_t i = 0; i < 15; ++i) {
                EXPECT_EQ(args[i], am_test::mix(static_cast<std::uint64_t>(t.source()) * 100 + i));
            }
            EXPECT_EQ(a15, std::int8_t{-5});
            const std::uint64_t seed = seed_of(t.source(), ctx.rank(), p.size(), 16);
            EXPECT_EQ(p.size(), ctx.max_medium());
            EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), seed)));
            got.add();
        });
        ctx.barrier();
        auto a = [&](std::uint64_t i) {
            return am_test::mix(static_cast<std::uint64_t>(ctx.rank()) * 100 + i);
        };
        for (int d = 0; d < n; ++d) {
            const std::size_t len = ctx.max_medium();
            const auto buf = am_test::pattern(len, seed_of(ctx.rank(), d, len, 16));
            ctx.request(d, take, am::bytes(buf), a(0), a(1), a(2), a(3), a(4), a(5), a(6), a(7),
                        a(8), a(9), a(10), a(11), a(12), a(13), a(14), std::int8_t{-5});
        }
        got.wait(static_cast<std::uint64_t>(n));
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(medium_am, am_test::all_params());

}  // namespace
