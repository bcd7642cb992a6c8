// SPDX-License-Identifier: MIT
// Progress-thread ("interrupt") mode: handlers run while the rank computes without polling.
#include "support/spmd.hpp"

#include <thread>

namespace {

using am_test::spmd_test;
using namespace std::chrono_literals;

class progress : public spmd_test {};

void with_progress_thread(am::config& c) {
    c.progress_thread = true;
}

// Every rank pokes its right neighbour, then spins on a counter bumped by the poke handler
// without ever polling, for several rounds: after the rank's barrier() has returned, only the
// progress thread can run those handlers. (A poke may arrive while the neighbour still polls
// inside barrier(); that one legitimately runs on the neighbour's own thread.)
TEST_P(progress, thread_serves_rank_that_never_polls) {
    struct board {
        std::atomic<int> on_progress_thread{0};
    };
    am_test::shared<board> b;
    const int rc = run(
        [&b](am::context& ctx) {
            constexpr int rounds = 6;
            const int n = ctx.size(), me = ctx.rank();
            const std::thread::id main_thread = std::this_thread::get_id();
            bool computing = false;  // set by the rank's thread once it stops polling
            std::atomic<int> pokes{0}, on_main_while_computing{0}, wrong_source{0};
            am::counter answers(ctx);
            auto answer = ctx.handler([&](am::token&) { answers.add(); });
            auto poke = ctx.handler([&, answer](am::token& t) {
                if (std::this_thread::get_id() != main_thread) {
                    ++b->on_progress_thread;
                } else if (computing) {
                    ++on_main_while_computing;
                }
                if (t.source() != (me + n - 1) % n) ++wrong_source;
                pokes.fetch_add(1, std::memory_order_release);
                t.reply(answer);
            });
            ctx.barrier();
            computing = true;
            for (int k = 0; k < rounds; ++k) {
                ctx.request((me + 1) % n, poke);
                const auto deadline = std::chrono::steady_clock::now() + 20s;
                while (pokes.load(std::memory_order_acquire) <= k &&
                       std::chrono::steady_clock::now() < deadline) {
                    std::this_thread::yield();  // "computing": no poll, no wait
                }
                ASSERT_GT(pokes.load(), k) << "no handler ran while the rank did not poll";
            }
            computing = false;
            EXPECT_EQ(on_main_while_computing.load(), 0)
                << "a handler ran on the rank's own thread while it did not poll";
            EXPECT_EQ(wrong_source.load(), 0);
            answers.wait(rounds);
            ctx.barrier();
        },
        with_progress_thread);
    ASSERT_EQ(rc, 0);
    EXPECT_GT(b->on_progress_thread.load(), 0) << "no poke was ever served by a progress thread";
}

// With a progress thread, the rank's thread sends and waits while handlers (which send nested
// requests and replies) run on the progress thread; counts and payloads must be exact.
TEST_P(progress, all_to_all_with_progress_thread) {
    const int count = ranks() > 16 ? 20 : 2000;
    const int rc = run(
        [count](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            am::counter got(ctx), forwarded(ctx), replies(ctx);
            std::atomic<std::uint64_t> sum{0};
            auto answer = ctx.handler([&](am::token& t, std::uint64_t v) {
                EXPECT_FALSE(t.is_request());
                sum += v;
                replies.add();
            });
            auto second =
                ctx.handler([&](am::token&, std::span<const std::byte> p, std::uint64_t seed) {
                    EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), seed)));
                    forwarded.add();
                });
            auto first = ctx.handler([&, answer, second](am::token& t, std::span<const std::byte> p,
                                                         std::uint64_t seed) {
                EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), seed)));
                got.add();
                t.ctx().request((me + 1) % n, second, p, seed);
                t.reply(answer, seed);
            });
            ctx.barrier();
            std::uint64_t want_sum = 0;
            for (int k = 0; k < count; ++k) {
                for (int i = 0; i < n; ++i) {
                    const auto seed =
                        am_test::mix(static_cast<std::uint64_t>(me * count + k) * 1000 +
                                     static_cast<std::uint64_t>(i));
                    const auto buf = am_test::pattern(seed % 200, seed);
                    ctx.request((me + i) % n, first, am::bytes(buf), seed);
                    want_sum += seed;
                }
            }
            const auto total = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(n);
            got.wait(total);
            replies.wait(total);
            forwarded.wait(total);  // every rank forwards all it got to its right neighbour
            EXPECT_EQ(sum.load(), want_sum);
            ctx.barrier();
        },
        [](am::config& c) {
            c.progress_thread = true;
            c.ring_bytes = 4096;
        });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(progress, am_test::all_params());

}  // namespace
