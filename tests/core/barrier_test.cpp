// SPDX-License-Identifier: MIT
// context::barrier returns only when every rank has called it, round after round, and keeps
// handling messages while it waits.
#include "support/spmd.hpp"

#include <thread>

namespace {

using am_test::spmd_test;

class barrier : public spmd_test {};

constexpr int rounds = 40;

struct arrivals {
    std::atomic<int> count[rounds];
    std::atomic<int> early{0};  // a rank left round k before every rank had arrived
};

TEST_P(barrier, waits_for_every_rank) {
    am_test::shared<arrivals> a;
    const int rc = run([&](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        for (int k = 0; k < rounds; ++k) {
            if ((k + me) % n == 0 && n <= 16) {  // one rank per round comes late
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
            ++a->count[k];
            ctx.barrier();
            if (a->count[k].load() != n) ++a->early;
        }
    });
    ASSERT_EQ(rc, 0);
    EXPECT_EQ(a->early.load(), 0);
    for (int k = 0; k < rounds; ++k) EXPECT_EQ(a->count[k].load(), ranks()) << "round " << k;
}

// A rank waiting in barrier() handles requests, so a peer that needs its reply before
// reaching the barrier is not deadlocked.
TEST_P(barrier, handles_messages_while_waiting) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter replies(ctx);
        auto answer = ctx.handler([&](am::token&) { replies.add(); });
        auto ask = ctx.handler([answer](am::token& t) { t.reply(answer); });
        ctx.barrier();
        if (me == n - 1) {
            for (int d = 0; d < n; ++d) ctx.request(d, ask);
            replies.wait(static_cast<std::uint64_t>(n));  // the others are in the barrier
        }
        ctx.barrier();
        EXPECT_EQ(replies.value(), me == n - 1 ? static_cast<std::uint64_t>(n) : 0u);
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(barrier, am_test::all_params());

}  // namespace
