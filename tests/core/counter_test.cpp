// SPDX-License-Identifier: MIT
// am::counter (completion flag) and context::wait.
#include "support/spmd.hpp"

namespace {

using am_test::spmd_test;

class counter : public spmd_test {};

TEST_P(counter, counts_handler_adds) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter c(ctx);
        EXPECT_EQ(c.value(), 0u);
        EXPECT_TRUE(c.test(0));
        EXPECT_FALSE(c.test(1));
        // Each message adds its payload length: the counter sums, not just counts.
        std::uint64_t bytes_seen = 0;
        auto add = ctx.handler([&](am::token&, std::span<const std::byte> p) {
            bytes_seen += p.size();
            c.add(p.size());
        });
        ctx.barrier();
        std::uint64_t want = 0;
        for (int s = 0; s < n; ++s) want += static_cast<std::uint64_t>(10 + (s + me) % n);
        for (int d = 0; d < n; ++d) {
            const std::vector<std::byte> buf(static_cast<std::size_t>(10 + (me + d) % n));
            ctx.request(d, add, am::bytes(buf));
        }
        c.wait(want);
        EXPECT_EQ(c.value(), want);
        EXPECT_EQ(bytes_seen, want);
        EXPECT_TRUE(c.test(want));
        EXPECT_FALSE(c.test(want + 1));
        ctx.barrier();
        EXPECT_EQ(c.value(), want) << "more was added than was sent";
        c.reset();
        EXPECT_EQ(c.value(), 0u);
        ctx.barrier();
        // Reused after reset.
        for (int d = 0; d < n; ++d) ctx.request(d, add, am::bytes(std::vector<std::byte>(3)));
        c.wait(3 * static_cast<std::uint64_t>(n));
        EXPECT_EQ(c.value(), 3 * static_cast<std::uint64_t>(n));
    });
    ASSERT_EQ(rc, 0);
}

// A token travels the ring of ranks `rounds` times; every rank waits with context::wait on a
// plain variable its handler updates.
TEST_P(counter, wait_predicate_makes_progress) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size();
        const int rounds = n > 16 ? 3 : 50;
        int tokens = 0;  // plain int: handlers run on this rank's thread (no progress thread)
        am::handler<am::category::short_am, std::int32_t> self{};
        auto pass = ctx.handler([&](am::token& t, std::int32_t hops_left) {
            ++tokens;
            if (hops_left > 0) t.ctx().request((t.ctx().rank() + 1) % n, self, hops_left - 1);
        });
        self = pass;
        ctx.barrier();
        if (ctx.rank() == 0) ctx.request(1 % n, pass, std::int32_t{n * rounds - 1});
        ctx.wait([&] { return tokens == rounds; });
        ctx.barrier();  // the token has stopped: the last hop was handled before its rank got here
        EXPECT_EQ(tokens, rounds);
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(counter, am_test::all_params());

}  // namespace
