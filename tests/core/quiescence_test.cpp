// SPDX-License-Identifier: MIT
// End-of-job quiescence: ranks that send and return at once still have every message, nested
// ones included, handled before am::run returns.
#include "support/spmd.hpp"

namespace {

using am_test::spmd_test;

class quiescence : public spmd_test {};

struct tally {
    std::atomic<std::uint64_t> handled{0};
    std::atomic<std::uint64_t> nested{0};
    std::atomic<std::uint64_t> replies{0};
};

// Every rank sends `count` requests to every rank and returns without waiting; each handler
// replies and sends one nested request. Counts land in memory shared with the test process.
// Every rank handles count * n of each kind, so the test process expects that many per rank it
// can see (all of them; on mpi its own).
void send_and_leave(am::context& ctx, tally* t, int count) {
    const int n = ctx.size(), me = ctx.rank();
    auto reply = ctx.handler([t](am::token&) { ++t->replies; });
    auto leaf = ctx.handler([t](am::token&, std::span<const std::byte> p) {
        EXPECT_EQ(p.size(), 40u);
        ++t->nested;
    });
    auto first = ctx.handler([t, reply, leaf, n](am::token& tok, std::int32_t k) {
        ++t->handled;
        tok.reply(reply);
        const std::vector<std::byte> buf(40);
        tok.ctx().request((tok.ctx().rank() + k) % n, leaf, am::bytes(buf));
    });
    ctx.barrier();
    for (int k = 0; k < count; ++k) {
        for (int d = 0; d < n; ++d) ctx.request((me + d) % n, first, static_cast<std::int32_t>(k));
    }
    // No wait: am::run must not return before all of the above has been handled everywhere.
}

TEST_P(quiescence, everything_handled_when_run_returns) {
    const int count = ranks() > 16 ? 10 : 300;
    am_test::shared<tally> t;
    const int rc = run([&](am::context& ctx) { send_and_leave(ctx, &*t, count); },
                       [](am::config& c) { c.ring_bytes = 1024; });
    ASSERT_EQ(rc, 0);
    const auto total = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(ranks()) *
                       static_cast<std::uint64_t>(visible_ranks().size());
    EXPECT_EQ(t->handled.load(), total);
    EXPECT_EQ(t->replies.load(), total);
    EXPECT_EQ(t->nested.load(), total);
}

// context::quiesce inside the rank function: when it returns, everything sent before it (nested
// sends and replies included) has been handled, so rank-local state can be checked at once.
TEST_P(quiescence, quiesce_in_rank_function) {
    const int count = ranks() > 16 ? 5 : 200;
    const int rc = run(
        [count](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            const auto un = static_cast<std::uint64_t>(n);
            std::uint64_t handled = 0, nested = 0, replies = 0;
            auto reply = ctx.handler([&](am::token&) { ++replies; });
            auto leaf = ctx.handler([&](am::token&) { ++nested; });
            auto first = ctx.handler([&, reply, leaf](am::token& t, std::int32_t k) {
                ++handled;
                t.reply(reply);
                t.ctx().request((me + k) % n, leaf);
            });
            ctx.barrier();
            for (int round = 0; round < 3; ++round) {
                for (int k = 0; k < count; ++k) {
                    for (int d = 0; d < n; ++d) {
                        ctx.request((me + d) % n, first, static_cast<std::int32_t>(k));
                    }
                }
                ctx.quiesce();  // no waits: quiesce alone must make the counts exact
                const auto want = static_cast<std::uint64_t>((round + 1) * count) * un;
                EXPECT_EQ(handled, want) << "round " << round;
                EXPECT_EQ(replies, want) << "round " << round;
                EXPECT_EQ(nested, want) << "round " << round;
                // Ranks leave quiesce() at different times: nobody sends the next round before
                // everyone has checked this one.
                ctx.barrier();
            }
        },
        [](am::config& c) { c.ring_bytes = 1024; });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(quiescence, am_test::all_params());

}  // namespace
