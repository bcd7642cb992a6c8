// SPDX-License-Identifier: MIT
// Misuse of the optimistic-handler API and its limits: a plain handler that would block gets
// errc::bad_context (mutex, future, condition variable, ctx.wait) while what does not block
// works; a handler that locks the mutex it holds gets errc::bad_context; collectives are
// refused in optimistic handlers; config::oam_max_threads blocked handlers are fine and one
// more fails the job with errc::too_large naming the limit.
#include "oam/oam_support.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>
#include <string>

namespace {

using namespace am_oam_test;

class oam_errors : public oam_test {};
// Tests of a job that fails: they read every rank's report from the test process.
class oam_failure : public oam_test {};

TEST_P(oam_errors, plain_handler_must_not_block) {
    run_ok([](am::context& ctx) {
        am::mutex held(ctx), free_m(ctx);
        am::condition_variable cv;
        am::promise<int> pending(ctx), done_p(ctx);
        am::future<int> not_ready = pending.get_future();
        am::future<int> ready = done_p.get_future();
        done_p.set_value(3);
        am::counter done(ctx);
        std::atomic<int> checks{0};
        auto plain = ctx.handler([&](am::token&) {
            expect_error([&] { held.lock(); }, am::errc::bad_context, {"am::mutex::lock"});
            EXPECT_FALSE(held.try_lock());
            free_m.lock();  // free: a plain handler may take it
            {
                std::unique_lock<am::mutex> lk(free_m, std::adopt_lock);
                expect_error([&] { cv.wait(lk); }, am::errc::bad_context, {});
                EXPECT_TRUE(lk.owns_lock()) << "a refused wait gave up the lock";
                EXPECT_FALSE(free_m.try_lock()) << "a refused wait released the mutex";
            }
            EXPECT_TRUE(free_m.try_lock());
            free_m.unlock();
            expect_error([&] { not_ready.wait(); }, am::errc::bad_context, {"am::future::wait"});
            EXPECT_TRUE(not_ready.valid());
            EXPECT_EQ(ready.get(), 3) << "a ready future's get() does not block";
            expect_error([&] { ctx.wait([] { return false; }); }, am::errc::bad_context,
                         {"am::context::wait"});
            ++checks;
            done.add();
        });
        ctx.barrier();
        held.lock();
        ctx.barrier();
        ctx.request(right_of(ctx), plain);
        wait_count(ctx, done, 1, "the plain handler");
        held.unlock();
        EXPECT_EQ(checks.load(), 1);
        pending.set_value(1);
        EXPECT_EQ(not_ready.get(), 1);
        ctx.quiesce();
    });
}

// get() of a future that is not ready, in a plain handler: refused, the future still valid.
TEST_P(oam_errors, plain_handler_future_get) {
    run_ok([](am::context& ctx) {
        am::promise<int> p(ctx);
        am::future<int> f = p.get_future();
        am::counter done(ctx);
        auto plain = ctx.handler([&](am::token&) {
            expect_error([&] { (void)f.get(); }, am::errc::bad_context, {"am::future::get"});
            EXPECT_TRUE(f.valid()) << "a refused get() used up the future";
            done.add();
        });
        ctx.barrier();
        ctx.request(ctx.rank(), plain);
        wait_count(ctx, done, 1, "the plain handler");
        p.set_value(2);
        EXPECT_EQ(f.get(), 2);
        ctx.quiesce();
    });
}

// Locking the mutex a handler holds, from that handler: at once, and after it had to wait for
// the mutex (it is a thread by then).
TEST_P(oam_errors, lock_twice_in_handler) {
    run_ok([](am::context& ctx) {
        am::mutex m(ctx);
        am::counter done(ctx);
        std::atomic<int> refused{0};
        auto twice = am::optimistic_handler(ctx, [&](am::token&) {
            m.lock();
            expect_error([&] { m.lock(); }, am::errc::bad_context, {"am::mutex::lock"});
            EXPECT_FALSE(m.try_lock());
            m.unlock();
            m.lock();  // still a working mutex
            m.unlock();
            ++refused;
            done.add();
        });
        ctx.barrier();
        ctx.request(right_of(ctx), twice);
        wait_count(ctx, done, 1, "the handler");
        m.lock();
        ctx.barrier();  // every rank holds its mutex
        ctx.request(right_of(ctx), twice);
        wait_blocked(ctx, 1, "on the mutex");
        m.unlock();
        wait_count(ctx, done, 2, "the handler after waiting");
        EXPECT_EQ(refused.load(), 2);
        ctx.quiesce();
    });
}

TEST_P(oam_errors, collectives_in_optimistic_handler) {
    run_ok([](am::context& ctx) {
        am::counter done(ctx);
        auto h = am::optimistic_handler(ctx, [&](am::token&) {
            expect_error([&] { ctx.barrier(); }, am::errc::bad_context, {"am::context::barrier"});
            expect_error([&] { ctx.quiesce(); }, am::errc::bad_context, {"am::context::quiesce"});
            done.add();
        });
        ctx.barrier();
        ctx.request(right_of(ctx), h);
        wait_count(ctx, done, 1, "the handler");
        ctx.quiesce();
    });
}

// Exactly config::oam_max_threads handlers blocked at once: fine.
TEST_P(oam_errors, thread_limit_reached) {
    constexpr int limit = 4;
    run_ok(
        [](am::context& ctx) {
            am::mutex m(ctx);
            am::counter done(ctx);
            auto h = am::optimistic_handler(ctx, [&](am::token&) {
                std::lock_guard<am::mutex> g(m);
                done.add();
            });
            ctx.barrier();
            m.lock();
            ctx.barrier();
            for (int i = 0; i < limit; ++i) ctx.request(right_of(ctx), h);
            wait_blocked(ctx, limit, "up to the limit");
            m.unlock();
            wait_count(ctx, done, limit, "the handlers");
            ctx.quiesce();
            const am::oam_stats s = am::optimistic_stats(ctx);
            EXPECT_EQ(s.peak_live, std::uint64_t{limit});
            EXPECT_EQ(s.max_threads, std::size_t{limit});
            EXPECT_EQ(s.live, 0u);
        },
        [](am::config& cfg) { cfg.oam_max_threads = limit; });
}

struct limit_board {
    std::atomic<int> caught{0};
    std::atomic<int> code{0};
    am_test::fixed_string<512> what;
};

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// One more than config::oam_max_threads: the job fails with errc::too_large naming the limit.
// Not on mpi: a failing job there is mpiexec's to report (tests/core/failure_test.cpp).
TEST_P(oam_failure, thread_limit_exceeded_fails_job) {
    constexpr int limit = 4;
    am_test::shared<limit_board> b;
    limit_board* board = &*b;
    ::testing::internal::CaptureStderr();
    const int rc = run(
        [board](am::context& ctx) {
            am::mutex m(ctx);
            auto h =
                am::optimistic_handler(ctx, [&](am::token&) { std::lock_guard<am::mutex> g(m); });
            ctx.barrier();
            // Held to the end: the job fails with handlers still queued on it, which are
            // never resumed (no unlock while the rank unwinds).
            m.lock();
            am::counter never(ctx);
            try {  // the refusal may come out of a send to self too
                if (ctx.rank() == 0) {
                    for (int i = 0; i < limit + 2; ++i) ctx.request(0, h);
                }
                never.wait(1);
            } catch (const am::error& e) {
                if (ctx.rank() == 0) {
                    board->code = static_cast<int>(e.code());
                    board->what.set(e.what());
                    ++board->caught;
                }
                throw;
            }
        },
        [](am::config& cfg) { cfg.oam_max_threads = limit; });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(rc, 0);
    EXPECT_EQ(b->caught.load(), 1) << err;
    EXPECT_EQ(b->code.load(), static_cast<int>(am::errc::too_large)) << b->what.str();
    const std::string what = lower(b->what.str());
    EXPECT_TRUE(am_test::contains(what, "oam_max_threads")) << b->what.str();
    EXPECT_TRUE(am_test::contains(what, std::to_string(limit))) << b->what.str();
    EXPECT_TRUE(am_test::contains(lower(err), "oam_max_threads")) << err;
}

AM_INSTANTIATE(oam_errors, am_test::all_params());
AM_INSTANTIATE(oam_failure, am_test::without_mpi(am_test::all_params()));

}  // namespace
