// SPDX-License-Identifier: MIT
// context::barrier returns only when every rank has called it, round after round, and keeps
// handling messages while it waits.
#include "support/spmd.hpp"

#include <thread>

namespace {

using am_test::spmd_test;

class barrier : public spmd_test {};

constexpr int rounds = 40;

// Before round k's barrier every rank announces its arrival to every rank and waits until all
// announcements were handled (acknowledged); one rank per round comes late. A rank leaving
// the barrier before every rank had arrived would find fewer than n arrivals for round k. The
// check is made by each rank on its own state, so it holds on every transport (on mpi the
// test process sees only its own rank).
TEST_P(barrier, waits_for_every_rank) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        std::vector<int> count(rounds, 0);  // arrivals per round seen by this rank
        int early = 0;                      // rounds this rank left before all had arrived
        am::counter acks(ctx);
        auto ack = ctx.handler([&](am::token&) { acks.add(); });
        auto arrived = ctx.handler([&, ack](am::token& t, std::int32_t k) {
            ++count[static_cast<std::size_t>(k)];
            t.reply(ack);
        });
        ctx.barrier();
        for (int k = 0; k < rounds; ++k) {
            if ((k + me) % n == 0 && n <= 16) {  // one rank per round comes late
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
            for (int d = 0; d < n; ++d) ctx.request((me + d) % n, arrived, std::int32_t{k});
            acks.wait(static_cast<std::uint64_t>((k + 1) * n));
            ctx.barrier();
            if (count[static_cast<std::size_t>(k)] != n) ++early;
        }
        EXPECT_EQ(early, 0) << "rank " << me << " left a barrier before every rank arrived";
        for (int k = 0; k < rounds; ++k) {
            EXPECT_EQ(count[static_cast<std::size_t>(k)], n) << "round " << k << ", rank " << me;
        }
    });
    ASSERT_EQ(rc, 0);
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
