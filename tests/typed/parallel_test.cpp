// SPDX-License-Identifier: MIT
// thread_multiple: received batches are run by whichever threads of the rank poll, several at
// once. Two batches reach rank 0; its first handler waits until a second handler is running
// on another thread, which only happens if batches run concurrently. Batches that arrive
// before rank 0 has begun their epoch are kept back until it does; they too must run in
// parallel, not one after the other on the thread that began the epoch.
#include "support/spmd.hpp"

#include <am/typed.hpp>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using am_test::spmd_test;

class typed_parallel : public spmd_test {};

// Rank 1 sends rank 0 two batches of one message each; rank 0 polls from three threads.
// With `late_begin`, rank 0 polls for a while before it begins its epoch, so the batches arrive
// (and are kept back) first.
void two_batches_in_parallel(am::context& ctx, bool late_begin) {
    std::atomic<int> running{0}, most{0}, handled{0};
    am::message_type<std::uint64_t> type(ctx, [&](int, const std::uint64_t&) {
        const int now = running.fetch_add(1) + 1;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        // Wait (bounded) for a handler on another thread.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (most.load() < 2 && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
        }
        running.fetch_sub(1);
        handled.fetch_add(1);
    });
    // Two more threads of rank 0 poll beside the rank's thread, from before the epoch begins
    // (beginning it may run a batch that was kept back, on the rank's thread).
    std::atomic<bool> stop{false};
    std::vector<std::thread> pollers;
    if (ctx.rank() == 0) {
        for (int i = 0; i < 2; ++i) {
            pollers.emplace_back([&] {
                while (!stop.load()) {
                    if (ctx.poll() == 0) std::this_thread::yield();
                }
            });
        }
    }
    ctx.barrier();
    if (late_begin && ctx.rank() == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        while (std::chrono::steady_clock::now() < until) {
            if (ctx.poll() == 0) std::this_thread::yield();
        }
    }
    {
        am::epoch epoch(ctx);
        if (ctx.rank() == 1) {
            type.send(1, 0);  // two batches of one message each
            type.send(2, 0);
        }
        while (ctx.rank() == 0 && handled.load() < 2) {
            if (ctx.poll() == 0) std::this_thread::yield();
        }
    }
    stop.store(true);
    for (auto& t : pollers) t.join();
    if (ctx.rank() == 0) {
        EXPECT_EQ(handled.load(), 2);
        EXPECT_EQ(most.load(), 2) << "batches never ran concurrently";
    }
}

void thread_multiple(am::config& cfg) {
    cfg.thread_multiple = true;
}

TEST_P(typed_parallel, batches_run_on_several_threads_at_once) {
    ASSERT_EQ(run([](am::context& ctx) { two_batches_in_parallel(ctx, false); }, thread_multiple),
              0);
}

TEST_P(typed_parallel, batches_kept_for_a_late_epoch_also_run_at_once) {
    ASSERT_EQ(run([](am::context& ctx) { two_batches_in_parallel(ctx, true); }, thread_multiple),
              0);
}

INSTANTIATE_TEST_SUITE_P(all, typed_parallel,
                         ::testing::Values(am_test::spmd_param{am::transport_kind::threads, 2},
                                           am_test::spmd_param{am::transport_kind::shm, 2}),
                         am_test::param_name);

}  // namespace
