// SPDX-License-Identifier: MIT
// Many optimistic handlers contending for one am::mutex per rank: 10^5 handlers in the job
// (AM_OAM_TEST_HANDLERS; CTest sets fewer under sanitizers), every fourth holding the mutex
// across a yield so that the others queue on it. The counts kept under the mutex (a
// read-modify-write split by the yield) must come out exact, and no two handlers may hold the
// mutex at once. Senders keep at most `window` requests unacknowledged, which bounds the
// handlers blocked at once well below config::oam_max_threads.
#include "oam/oam_support.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>

namespace {

using namespace am_oam_test;

class oam_contention : public oam_test {};

constexpr std::uint64_t window = 32;

std::uint64_t contention_value_of(int rank, std::uint64_t i) {
    return am_test::mix((static_cast<std::uint64_t>(rank) << 40) ^ i);
}

struct expected {
    std::uint64_t count = 0, sum = 0, yields = 0;
};

// What rank `me` receives when rank s sends `sends_of(s)` requests, its i-th to (s + i) % n.
template <class F>
expected expected_for(int me, int n, F sends_of) {
    expected e;
    for (int s = 0; s < n; ++s) {
        for (std::uint64_t i = static_cast<std::uint64_t>((me - s + n) % n); i < sends_of(s);
             i += static_cast<std::uint64_t>(n)) {
            const std::uint64_t v = contention_value_of(s, i);
            ++e.count;
            e.sum += v;
            if ((v & 3) == 0) ++e.yields;
        }
    }
    return e;
}

void contend(am::context& ctx, std::uint64_t total) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::uint64_t>(n);
    auto sends_of = [&](int s) {
        return total / un + (static_cast<std::uint64_t>(s) < total % un ? 1 : 0);
    };
    am::mutex m(ctx);
    am::counter acked(ctx), handled(ctx);
    // Under m.
    std::uint64_t count = 0, sum = 0, yields = 0, overlaps = 0;
    int holders = 0;
    auto ack = ctx.handler([&](am::token&) { acked.add(); });
    auto h = am::optimistic_handler(ctx, [&, ack](am::token& t, std::uint64_t v) {
        const int src = t.source();
        {
            std::lock_guard<am::mutex> g(m);
            if (holders++ != 0) ++overlaps;
            const std::uint64_t c = count;
            if ((v & 3) == 0) {  // hold the mutex across a yield: later handlers queue on it
                ++yields;
                bool once = false;
                ctx.wait([&] { return std::exchange(once, true); });
            }
            count = c + 1;
            sum += v;
            --holders;
        }
        handled.add();
        ctx.request(src, ack);
    });
    // Before the barrier: after it, messages of faster ranks may already run here.
    const am::oam_stats before = am::optimistic_stats(ctx);
    ctx.barrier();
    const std::uint64_t mine = sends_of(me);
    for (std::uint64_t i = 0; i < mine; ++i) {
        if (i >= window) acked.wait(i - window + 1);
        ctx.request(static_cast<int>((static_cast<std::uint64_t>(me) + i) % un), h,
                    contention_value_of(me, i));
    }
    wait_count(ctx, acked, mine, "acknowledgements", 60);
    const expected want = expected_for(me, n, sends_of);
    wait_count(ctx, handled, want.count, "the contending handlers", 60);
    {
        std::lock_guard<am::mutex> g(m);
        EXPECT_EQ(count, want.count) << "updates under the mutex were lost";
        EXPECT_EQ(sum, want.sum);
        EXPECT_EQ(yields, want.yields);
        EXPECT_EQ(overlaps, 0u) << "two handlers held the mutex at once";
    }
    wait_until(
        ctx, [&] { return am::optimistic_stats(ctx).live == 0; }, "no blocked handlers");
    const am::oam_stats after = am::optimistic_stats(ctx);
    const auto d = gained(before, after);
    EXPECT_EQ(d.handlers, want.count);
    EXPECT_GE(d.blocked, want.yields) << "every handler that yielded became a thread";
    EXPECT_GE(d.resumes, d.blocked);
    EXPECT_LE(after.peak_live, window * un) << "more handlers blocked than were in flight";
    ctx.quiesce();
}

std::uint64_t handlers_in_job() {
    return env_count("AM_OAM_TEST_HANDLERS", 100000);
}

TEST_P(oam_contention, one_mutex) {
    const std::uint64_t total = handlers_in_job();
    ASSERT_EQ(run([total](am::context& ctx) { contend(ctx, total); }), 0);
}

TEST_P(oam_contention, one_mutex_progress_thread) {
    const std::uint64_t total = handlers_in_job() / 10;
    ASSERT_EQ(run([total](am::context& ctx) { contend(ctx, total); }, progress_thread), 0);
}

AM_INSTANTIATE(oam_contention, am_test::all_params());

}  // namespace
