// SPDX-License-Identifier: MIT
// Job failure on either transport: a rank that throws, a handler that throws, or
// context::abort brings every rank down promptly with an error naming the cause, and am::run
// returns non-zero.
#include "support/spmd.hpp"

#include <functional>
#include <thread>

namespace {

using am_test::spmd_test;
using clock_type = std::chrono::steady_clock;

class failure : public spmd_test {
  protected:
    // Runs `fn` on every rank with stderr captured (shm ranks' output too): the job must fail.
    // Returns what it printed.
    std::string run_failing(const am_test::rank_fn& fn, const am_test::tweak_fn& tweak = {}) const {
        ::testing::internal::CaptureStderr();
        const int rc = run(fn, tweak);
        std::string err = ::testing::internal::GetCapturedStderr();
        EXPECT_NE(rc, 0) << err;
        return err;
    }
};

struct board {
    std::atomic<int> saw_abort{0};  // ranks that got errc::aborted naming the cause
    std::atomic<int> wrong{0};      // ranks that got something else
    std::atomic<int> ready{0};      // the last rank polls only on its second thread now
    std::atomic<int> caught{0};     // that thread's poll threw the handler's exception
    // Steady-clock nanoseconds (one clock for all processes of the host): when the failure
    // happened, and when the last rank saw it. The bound is on the difference, so the time
    // to start and tear down many (sanitized, oversubscribed) ranks does not count.
    std::atomic<std::int64_t> failed_at{0};
    std::atomic<std::int64_t> last_seen{0};
    am_test::fixed_string<512> sample;
};

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock_type::now().time_since_epoch())
        .count();
}

// Every rank saw the failure within 5 s of it.
void expect_prompt(const board& b) {
    const std::int64_t failed = b.failed_at.load(), seen = b.last_seen.load();
    EXPECT_NE(failed, 0) << "the failure time was not recorded";
    EXPECT_LT(seen - failed, std::int64_t{5'000'000'000}) << "ns from the failure to the last rank";
}

// Waits for a message that never comes; records what the wait threw, then rethrows.
// `ranks` ranks saw the abort naming its cause, and none anything else.
void expect_aborted(const board& b, int ranks) {
    EXPECT_EQ(b.saw_abort.load(), ranks) << b.sample.str();
    EXPECT_EQ(b.wrong.load(), 0) << b.sample.str();
}

void wait_for_abort(am::context& ctx, board& b, const std::vector<std::string>& parts) {
    am::counter never(ctx);
    try {
        never.wait(1);
    } catch (const am::error& e) {
        const std::int64_t t = now_ns();
        std::int64_t seen = b.last_seen.load();
        while (t > seen && !b.last_seen.compare_exchange_weak(seen, t)) {
        }
        bool ok = e.code() == am::errc::aborted;
        for (const std::string& p : parts) ok = ok && am_test::contains(e.what(), p);
        ++(ok ? b.saw_abort : b.wrong);
        if (!ok) b.sample.set(e.what());
        throw;
    }
    ++b.wrong;
    b.sample.set("rank " + std::to_string(ctx.rank()) + ": the wait returned");
}

// Registers the handler that records the failure's time in `b` and throws "handler exploded".
auto exploding_handler(am::context& ctx, board& b) {
    return ctx.handler([&b](am::token&) {
        b.failed_at.store(now_ns());
        throw std::runtime_error("handler exploded");
    });
}

// Sleeps until `done()`, for at most 30 s (CTest's timeout is longer).
void sleep_until_done(const std::function<bool()>& done) {
    const auto until = clock_type::now() + std::chrono::seconds(30);
    while (!done() && clock_type::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

TEST_P(failure, rank_throws_fails_job) {
    am_test::shared<board> b;
    const std::string err = run_failing([&](am::context& ctx) {
        const int last = ctx.size() - 1;
        ctx.barrier();
        if (ctx.rank() == last) {
            b->failed_at.store(now_ns());
            throw std::runtime_error("deliberate failure");
        }
        wait_for_abort(ctx, *b, {"rank " + std::to_string(last), "deliberate failure"});
    });
    if (ranks() > 1) expect_prompt(*b);
    expect_aborted(*b, ranks() - 1);
    EXPECT_TRUE(am_test::contains(err, "deliberate failure")) << err;
}

TEST_P(failure, handler_throws_fails_job) {
    am_test::shared<board> b;
    const std::string err = run_failing([&](am::context& ctx) {
        const int last = ctx.size() - 1;
        auto bomb = exploding_handler(ctx, *b);
        ctx.barrier();
        if (ctx.rank() == 0) ctx.request(last, bomb);
        wait_for_abort(ctx, *b, {"handler exploded"});
    });
    if (ranks() > 1) expect_prompt(*b);
    // The rank running the handler sees the handler's exception itself, the others an abort.
    EXPECT_EQ(b->saw_abort.load(), ranks() - 1) << b->sample.str();
    EXPECT_TRUE(am_test::contains(err, "handler exploded")) << err;
}

// thread_multiple: a handler that throws on another thread of a rank (whose poll returns
// the exception to that thread) fails the job too; otherwise its message stays unhandled and
// the rank's own thread waits forever.
TEST_P(failure, handler_throwing_on_another_thread_fails_job) {
    am_test::shared<board> b;
    const std::string err = run_failing(
        [&](am::context& ctx) {
            const int last = ctx.size() - 1;
            auto bomb = exploding_handler(ctx, *b);
            ctx.barrier();
            if (ctx.rank() != last) {
                while (b->ready.load() == 0) std::this_thread::yield();
                if (ctx.rank() == 0) ctx.request(last, bomb);
                wait_for_abort(ctx, *b, {"handler exploded"});
                return;
            }
            std::atomic<bool> stop{false};
            std::thread poller([&] {
                try {
                    while (!stop.load()) {
                        if (ctx.poll() == 0) std::this_thread::yield();
                    }
                } catch (const am::error&) {  // the job failed meanwhile
                } catch (const std::runtime_error& e) {
                    if (am_test::contains(e.what(), "handler exploded")) ++b->caught;
                }
            });
            struct joiner {
                std::atomic<bool>& stop;
                std::thread& t;
                ~joiner() {
                    stop.store(true);
                    t.join();
                }
            } join{stop, poller};
            if (ctx.rank() == 0) ctx.request(last, bomb);  // a single rank sends to itself
            b->ready.store(1);
            // The rank's thread does not poll until the other thread has run the handler.
            sleep_until_done([&] { return b->caught.load() != 0; });
            wait_for_abort(ctx, *b, {"handler exploded"});
        },
        [](am::config& c) { c.thread_multiple = true; });
    expect_prompt(*b);
    EXPECT_EQ(b->caught.load(), 1) << "the handler did not run on the second thread";
    expect_aborted(*b, ranks());
    EXPECT_TRUE(am_test::contains(err, "handler exploded")) << err;
}

// The same on the rank's progress thread: the job fails naming that thread.
TEST_P(failure, handler_throwing_on_progress_thread_fails_job) {
    am_test::shared<board> b;
    const std::string err = run_failing(
        [&](am::context& ctx) {
            const int last = ctx.size() - 1;
            auto bomb = exploding_handler(ctx, *b);
            ctx.barrier();
            if (ctx.rank() == last) b->ready.store(1);
            while (b->ready.load() == 0) std::this_thread::yield();
            if (ctx.rank() == 0) ctx.request(last, bomb);
            if (ctx.rank() == last) {
                // The rank's thread does not poll until the progress thread has run the handler.
                sleep_until_done([&] { return b->failed_at.load() != 0; });
            }
            wait_for_abort(ctx, *b, {"(progress thread)", "handler exploded"});
        },
        [](am::config& c) { c.progress_thread = true; });
    expect_prompt(*b);
    expect_aborted(*b, ranks());
    EXPECT_TRUE(am_test::contains(
        err, "rank " + std::to_string(ranks() - 1) + " (progress thread): handler exploded"))
        << err;
}

TEST_P(failure, abort_names_rank_and_reason) {
    am_test::shared<board> b;
    (void)run_failing([&](am::context& ctx) {
        ctx.barrier();
        if (ctx.rank() == 0) {
            try {
                b->failed_at.store(now_ns());
                ctx.abort("enough is enough");
            } catch (const am::error& e) {
                const bool ok = e.code() == am::errc::aborted &&
                                am_test::contains(e.what(), "am::context::abort") &&
                                am_test::contains(e.what(), "enough is enough");
                if (!ok) b->sample.set(e.what());
                ++(ok ? b->saw_abort : b->wrong);
                throw;
            }
        }
        wait_for_abort(ctx, *b, {"rank 0 called abort: enough is enough"});
    });
    expect_prompt(*b);
    expect_aborted(*b, ranks());
}

// Not on mpi: these tests check am::run's status and every rank's error in the test process
// after the job failed; on mpi a failed job ends every process with MPI_Abort (the mpiexec
// fault tests in tests/mpi check that instead).
AM_INSTANTIATE(failure, am_test::without_mpi(am_test::all_params()));

}  // namespace
