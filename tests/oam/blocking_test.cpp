// SPDX-License-Identifier: MIT
// Optimistic handlers (include/am/oam.hpp): one that never blocks runs at once, in the order
// sent, on a pooled stack, and becomes no thread; one that blocks in each way the header lists
// — an am::mutex held by rank code or by another handler, an am::condition_variable, an
// am::future not yet ready (a nested RPC's, a promise's), ctx.wait(pred), counter::wait —
// becomes a thread, lets later messages run, resumes and finishes, and optimistic_stats count
// it. quiesce() and the end of am::run wait for blocked handlers; the token is for replies only
// until the handler first blocks. The main cases also run with a progress thread.
#include "oam/oam_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace am_oam_test;

class oam_block : public oam_test {};

std::uint64_t value_of(int rank, int i) {
    return am_test::mix((static_cast<std::uint64_t>(rank) << 32) | static_cast<std::uint32_t>(i));
}

// The remote function a handler waits for (its future is not ready when get() is called).
std::uint64_t square_plus_rank(am::context& ctx, std::uint64_t x) {
    return x * x + static_cast<std::uint64_t>(ctx.rank());
}

// Waits until no optimistic handler of this rank is blocked (with a progress thread the last
// one may still be finishing when the count it adds is seen).
void wait_none_live(am::context& ctx) {
    wait_until(
        ctx, [&] { return am::optimistic_stats(ctx).live == 0; }, "no blocked handlers");
}

// ---------------------------------------------------------------- handlers that do not block

void nonblocking(am::context& ctx) {
    constexpr int count = 2000;
    const int me = ctx.rank(), from = left_of(ctx);
    am::counter done(ctx);
    std::atomic<int> disorder{0}, wrong_source{0};
    int next = 0;           // handlers only (one runs at a time)
    std::uint64_t sum = 0;  // handlers, then the rank after `done`
    auto h = am::optimistic_handler(ctx, [&](am::token& t, int seq, std::uint64_t v) {
        if (t.source() != from) ++wrong_source;
        if (seq != next) ++disorder;
        next = seq + 1;
        sum += v;
        done.add();
    });
    // Before the barrier: after it, messages of faster ranks may already run here.
    const am::oam_stats before = am::optimistic_stats(ctx);
    ctx.barrier();
    for (int i = 0; i < count; ++i) ctx.request(right_of(ctx), h, i, value_of(me, i));
    wait_count(ctx, done, count, "the handlers");
    wait_none_live(ctx);
    const am::oam_stats after = am::optimistic_stats(ctx);
    std::uint64_t want = 0;
    for (int i = 0; i < count; ++i) want += value_of(from, i);
    EXPECT_EQ(sum, want);
    EXPECT_EQ(disorder.load(), 0) << "handlers from one source started out of order";
    EXPECT_EQ(wrong_source.load(), 0);
    const auto d = gained(before, after);
    EXPECT_EQ(d.handlers, std::uint64_t{count});
    EXPECT_EQ(d.blocked, 0u) << "a handler that never blocks became a thread";
    EXPECT_EQ(d.resumes, 0u);
    EXPECT_EQ(after.live, 0u);
    EXPECT_EQ(after.peak_live, 0u);
    EXPECT_GE(after.stacks, 1u) << "an optimistic handler runs on a stack of its own";
    EXPECT_LE(after.stacks, 2u) << "handlers that never block reuse their stack";
    EXPECT_EQ(after.stack_bytes, std::size_t{48} << 10) << "config::oam_stack_bytes";
    EXPECT_EQ(after.max_threads, 1000u) << "config::oam_max_threads";
    ctx.quiesce();
}

void small_limits(am::config& cfg) {
    cfg.oam_stack_bytes = std::size_t{48} << 10;
    cfg.oam_max_threads = 1000;
}

AM_OAM_TEST_BOTH(oam_block, nonblocking_handlers, nonblocking, small_limits)

// -------------------------------------------------------- blocking on a mutex the rank holds

// Three handlers queue on the mutex rank code holds; after unlock() they get it in FIFO order.
void mutex_held_by_rank_code(am::context& ctx) {
    constexpr int waiters = 3;
    am::mutex m(ctx);
    am::counter done(ctx);
    bool rank_holds = false;   // under m
    int saw_rank_holding = 0;  // under m
    std::vector<int> order;    // under m
    auto h = am::optimistic_handler(ctx, [&](am::token&, int seq) {
        std::lock_guard<am::mutex> g(m);
        if (rank_holds) ++saw_rank_holding;
        order.push_back(seq);
        done.add();
    });
    ctx.barrier();
    const am::oam_stats before = am::optimistic_stats(ctx);
    m.lock();
    rank_holds = true;
    ctx.barrier();  // every rank holds its mutex before the requests go out
    for (int i = 0; i < waiters; ++i) ctx.request(right_of(ctx), h, i);
    wait_blocked(ctx, waiters, "on the mutex the rank holds");
    EXPECT_EQ(done.value(), 0u) << "a handler got the mutex the rank holds";
    rank_holds = false;
    m.unlock();
    wait_count(ctx, done, waiters, "the handlers after unlock()");
    {
        std::lock_guard<am::mutex> g(m);
        EXPECT_EQ(saw_rank_holding, 0);
        EXPECT_EQ(order, (std::vector<int>{0, 1, 2})) << "unlock() did not hand over in FIFO order";
    }
    wait_none_live(ctx);
    const am::oam_stats after = am::optimistic_stats(ctx);
    const auto d = gained(before, after);
    EXPECT_EQ(d.handlers, std::uint64_t{waiters});
    EXPECT_EQ(d.blocked, std::uint64_t{waiters});
    EXPECT_GE(d.resumes, std::uint64_t{waiters});
    EXPECT_GE(after.peak_live, std::uint64_t{waiters});
    ctx.quiesce();
}

AM_OAM_TEST_BOTH(oam_block, mutex_held_by_rank_code, mutex_held_by_rank_code)

// ------------------------------------------------ blocking on a mutex another handler holds

// The holder takes the mutex and waits (ctx.wait) while holding it; the contender, sent after
// it from the same source, starts meanwhile and queues on the mutex.
void mutex_held_by_handler(am::context& ctx) {
    am::mutex m(ctx);
    am::counter done(ctx);
    std::atomic<bool> release{false};
    std::string trace;  // under m
    auto holder = am::optimistic_handler(ctx, [&](am::token&) {
        std::lock_guard<am::mutex> g(m);
        trace += 'A';
        ctx.wait([&] { return release.load(); });
        trace += 'a';
        done.add();
    });
    auto contender = am::optimistic_handler(ctx, [&](am::token&) {
        std::lock_guard<am::mutex> g(m);
        trace += 'B';
        done.add();
    });
    // Before the barrier: after it, messages of faster ranks may already run here.
    const am::oam_stats before = am::optimistic_stats(ctx);
    ctx.barrier();
    ctx.request(right_of(ctx), holder);
    ctx.request(right_of(ctx), contender);
    wait_blocked(ctx, 2, "a holder waiting and a contender on its mutex");
    EXPECT_EQ(done.value(), 0u);
    if (m.try_lock()) {
        ADD_FAILURE() << "the mutex a blocked handler holds was free";
        m.unlock();
    }
    release = true;
    wait_count(ctx, done, 2, "holder and contender");
    {
        std::lock_guard<am::mutex> g(m);
        EXPECT_EQ(trace, "AaB") << "the contender ran inside the holder's critical section";
    }
    wait_none_live(ctx);
    const auto d = gained(before, am::optimistic_stats(ctx));
    EXPECT_EQ(d.handlers, 2u);
    EXPECT_EQ(d.blocked, 2u);
    EXPECT_GE(d.resumes, 2u);
    ctx.quiesce();
}

AM_OAM_TEST_BOTH(oam_block, mutex_held_by_handler, mutex_held_by_handler)

// ------------------------------------------------------------ blocking on a condition variable

void condition_variable_waits(am::context& ctx) {
    constexpr int waiters = 3;
    am::mutex m(ctx);
    am::condition_variable cv;
    am::counter done(ctx);
    bool go = false;       // under m
    int tokens = 0;        // under m
    std::vector<int> got;  // under m
    auto on_all = am::optimistic_handler(ctx, [&](am::token&, int seq) {
        std::unique_lock<am::mutex> lk(m);
        cv.wait(lk, [&] { return go; });
        got.push_back(seq);
        done.add();
    });
    auto on_one = am::optimistic_handler(ctx, [&](am::token&) {
        std::unique_lock<am::mutex> lk(m);
        cv.wait(lk, [&] { return tokens > 0; });
        --tokens;
        done.add();
    });
    // Before the barrier: after it, messages of faster ranks may already run here.
    const am::oam_stats before = am::optimistic_stats(ctx);
    ctx.barrier();
    for (int i = 0; i < waiters; ++i) ctx.request(right_of(ctx), on_all, i);
    wait_blocked(ctx, waiters, "on the condition variable");
    EXPECT_EQ(done.value(), 0u);
    {
        std::lock_guard<am::mutex> g(m);
        go = true;
    }
    cv.notify_all();
    wait_count(ctx, done, waiters, "the waiters after notify_all()");
    {
        std::lock_guard<am::mutex> g(m);
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
    }
    wait_none_live(ctx);
    ctx.barrier();  // no rank's second-phase waiters arrive while another checks the first
    // notify_one, from rank code without the mutex held: one waiter per token.
    for (int i = 0; i < waiters; ++i) ctx.request(right_of(ctx), on_one);
    wait_blocked(ctx, waiters, "on the condition variable, for notify_one");
    for (int k = 1; k <= waiters; ++k) {
        {
            std::lock_guard<am::mutex> g(m);
            ++tokens;
        }
        cv.notify_one();
        wait_count(ctx, done, std::uint64_t(waiters + k), "a waiter after notify_one()");
    }
    {
        std::lock_guard<am::mutex> g(m);
        EXPECT_EQ(tokens, 0);
    }
    wait_none_live(ctx);
    const auto d = gained(before, am::optimistic_stats(ctx));
    EXPECT_EQ(d.handlers, std::uint64_t{2 * waiters});
    EXPECT_EQ(d.blocked, std::uint64_t{2 * waiters});
    EXPECT_GE(d.resumes, std::uint64_t{2 * waiters});
    ctx.quiesce();
}

AM_OAM_TEST_BOTH(oam_block, condition_variable, condition_variable_waits)

// ------------------------------------------------------ blocking on a future: a nested RPC

// Each rank's handler (sent by its left neighbour) calls square_plus_rank on its right
// neighbour and waits for the result from inside the handler.
void future_of_rpc(am::context& ctx, bool exact) {
    constexpr int calls = 4;
    const int me = ctx.rank();
    am::rpc_register<&square_plus_rank>(ctx);
    am::counter done(ctx);
    std::atomic<int> wrong{0};
    auto h = am::optimistic_handler(ctx, [&](am::token&, std::uint64_t x) {
        const int target = right_of(ctx);
        am::future<std::uint64_t> f = am::rpc<&square_plus_rank>(ctx, target, x);
        if (f.get() != x * x + static_cast<std::uint64_t>(target)) ++wrong;
        done.add();
    });
    // Before the barrier: after it, messages of faster ranks may already run here.
    const am::oam_stats before = am::optimistic_stats(ctx);
    ctx.barrier();
    for (int i = 0; i < calls; ++i) {
        ctx.request(right_of(ctx), h, static_cast<std::uint64_t>(me * 100 + i));
    }
    wait_count(ctx, done, calls, "handlers waiting for RPC results");
    EXPECT_EQ(wrong.load(), 0);
    ctx.quiesce();  // the RPCs this rank serves for its left neighbour's handlers, too
    const am::oam_stats after = am::optimistic_stats(ctx);
    const auto d = gained(before, after);
    EXPECT_EQ(d.handlers, std::uint64_t{2 * calls}) << "the handlers and the remote functions";
    if (exact) {
        // The result cannot be there when get() is called: the poll that would handle it is
        // the one running the handler.
        EXPECT_EQ(d.blocked, std::uint64_t{calls});
        EXPECT_GE(d.resumes, std::uint64_t{calls});
    } else {
        EXPECT_GE(d.blocked, 1u);
        EXPECT_GE(d.resumes, d.blocked);
    }
    EXPECT_EQ(after.live, 0u);
}

TEST_P(oam_block, future_of_nested_rpc) {
    ASSERT_EQ(run([](am::context& ctx) { future_of_rpc(ctx, true); }, progress_thread_if(false)),
              0);
}

TEST_P(oam_block, future_of_nested_rpc_progress_thread) {
    ASSERT_EQ(run([](am::context& ctx) { future_of_rpc(ctx, false); }, progress_thread_if(true)),
              0);
}

// ------------------------------------------------- blocking on a future: a promise set later

TEST_P(oam_block, future_of_promise) {
    run_ok([](am::context& ctx) {
        const int me = ctx.rank();
        am::promise<int> p(ctx);  // set by rank code
        am::future<int> f = p.get_future();
        am::promise<std::string> q(ctx);  // set by a plain handler
        am::future<std::string> g = q.get_future();
        am::counter done(ctx);
        std::atomic<int> got_int{0};
        std::string got_text;  // the handler, then the rank after `done`
        auto wait_int = am::optimistic_handler(ctx, [&](am::token&) {
            got_int = f.get();
            done.add();
        });
        auto wait_text = am::optimistic_handler(ctx, [&](am::token&) {
            got_text = g.get();
            done.add();
        });
        auto set_text =
            ctx.handler([&](am::token&, int v) { q.set_value("value " + std::to_string(v)); });
        ctx.barrier();
        const am::oam_stats before = am::optimistic_stats(ctx);
        ctx.request(me, wait_int);
        ctx.request(me, wait_text);
        wait_blocked(ctx, 2, "on two futures");
        EXPECT_EQ(done.value(), 0u);
        p.set_value(me + 7);
        wait_count(ctx, done, 1, "the handler waiting for the rank's promise");
        EXPECT_EQ(got_int.load(), me + 7);
        EXPECT_EQ(done.value(), 1u) << "a handler got a value nobody set";
        ctx.request(me, set_text, me * 3);
        wait_count(ctx, done, 2, "the handler waiting for a handler's promise");
        EXPECT_EQ(got_text, "value " + std::to_string(me * 3));
        wait_none_live(ctx);
        const auto d = gained(before, am::optimistic_stats(ctx));
        EXPECT_EQ(d.blocked, 2u);
        EXPECT_GE(d.resumes, 2u);
        ctx.quiesce();
    });
}

// A handler waiting on a promise that is destroyed without a value gets broken_promise.
TEST_P(oam_block, future_of_broken_promise) {
    run_ok([](am::context& ctx) {
        auto p = std::make_unique<am::promise<int>>(ctx);
        am::future<int> f = p->get_future();
        am::counter done(ctx);
        std::atomic<int> broken{0};
        auto h = am::optimistic_handler(ctx, [&](am::token&) {
            expect_error([&] { (void)f.get(); }, am::errc::broken_promise, {});
            ++broken;
            done.add();
        });
        ctx.barrier();
        ctx.request(ctx.rank(), h);
        wait_blocked(ctx, 1, "on a promise");
        p.reset();
        wait_count(ctx, done, 1, "the handler after the promise died");
        EXPECT_EQ(broken.load(), 1);
        ctx.quiesce();
    });
}

// ------------------------------------------------- ctx.wait(pred) and counter::wait in a handler

void waits_in_handler(am::context& ctx) {
    am::counter gate(ctx), done(ctx);
    std::atomic<bool> flag{false};
    std::atomic<int> early{0};
    auto by_pred = am::optimistic_handler(ctx, [&](am::token&) {
        ctx.wait([&] { return flag.load(); });
        if (!flag.load()) ++early;
        done.add();
    });
    auto by_counter = am::optimistic_handler(ctx, [&](am::token&) {
        gate.wait(2);
        if (gate.value() < 2) ++early;
        done.add();
    });
    auto open = ctx.handler([&](am::token&) { gate.add(); });
    // Before the barrier: after it, messages of faster ranks may already run here.
    const am::oam_stats before = am::optimistic_stats(ctx);
    ctx.barrier();
    ctx.request(right_of(ctx), by_pred);
    ctx.request(right_of(ctx), by_counter);
    wait_blocked(ctx, 2, "in ctx.wait and counter::wait");
    EXPECT_EQ(done.value(), 0u);
    flag = true;
    wait_count(ctx, done, 1, "the handler in ctx.wait");
    EXPECT_EQ(done.value(), 1u) << "counter::wait returned before the count";
    ctx.request(ctx.rank(), open);
    ctx.request(ctx.rank(), open);
    wait_count(ctx, done, 2, "the handler in counter::wait");
    EXPECT_EQ(early.load(), 0);
    wait_none_live(ctx);
    const auto d = gained(before, am::optimistic_stats(ctx));
    EXPECT_EQ(d.blocked, 2u);
    EXPECT_GE(d.resumes, 2u);
    ctx.quiesce();
}

AM_OAM_TEST_BOTH(oam_block, wait_and_counter_wait, waits_in_handler)

// ------------------------------------------------------------------ quiescence and the token

using std::chrono::steady_clock;

// The handler sleeps (in ctx.wait) far longer than the messages take, then sends one more:
// quiesce() returns only after it finished and its message was handled.
TEST_P(oam_block, quiesce_waits_for_blocked_handlers) {
    run_ok([](am::context& ctx) {
        std::atomic<int> finished{0};
        am::counter late(ctx);
        auto after = ctx.handler([&](am::token&) { late.add(); });
        auto slow = am::optimistic_handler(ctx, [&, after](am::token&) {
            const auto until = steady_clock::now() + std::chrono::milliseconds(50);
            ctx.wait([&] { return steady_clock::now() >= until; });
            ++finished;
            ctx.request(right_of(ctx), after);
        });
        ctx.barrier();
        ctx.request(right_of(ctx), slow);
        ctx.quiesce();
        EXPECT_EQ(finished.load(), 1) << "quiesce() returned while a handler was blocked";
        EXPECT_EQ(late.value(), 1u) << "quiesce() missed a message a resumed handler sent";
        EXPECT_EQ(am::optimistic_stats(ctx).live, 0u);
    });
}

struct end_board {
    std::atomic<int> finished{0};
};

// The rank function returns while its handler is blocked: am::run finishes it first.
TEST_P(oam_block, end_of_run_waits_for_blocked_handlers) {
    am_test::shared<end_board> b;
    end_board* board = &*b;
    run_ok([board](am::context& ctx) {
        auto slow = am::optimistic_handler(ctx, [board](am::token& t) {
            am::context& c = t.ctx();
            const auto until = steady_clock::now() + std::chrono::milliseconds(50);
            c.wait([&] { return steady_clock::now() >= until; });
            ++board->finished;
        });
        ctx.barrier();
        ctx.request(right_of(ctx), slow);
    });
    EXPECT_EQ(b->finished.load(), static_cast<int>(visible_ranks().size()));
}

// A reply works before the handler blocks and throws errc::bad_reply after it; a request to
// the source (taken before blocking) answers instead.
TEST_P(oam_block, token_until_first_block) {
    run_ok([](am::context& ctx) {
        am::counter answers(ctx);
        std::atomic<int> sum{0};
        std::atomic<bool> go{false};
        auto answer = ctx.handler([&](am::token&, int v) {
            sum += v;
            answers.add();
        });
        auto ask = am::optimistic_handler(ctx, [&, answer](am::token& t) {
            const int src = t.source();
            t.reply(answer, 1);
            ctx.wait([&] { return go.load(); });
            expect_error([&] { t.reply(answer, 100); }, am::errc::bad_reply, {"am::token::reply"});
            ctx.request(src, answer, 10);
        });
        ctx.barrier();
        ctx.request(right_of(ctx), ask);
        wait_blocked(ctx, 1, "the asking handler");
        go = true;
        wait_count(ctx, answers, 2, "both answers");
        ctx.quiesce();
        EXPECT_EQ(sum.load(), 11);
        EXPECT_EQ(answers.value(), 2u);
    });
}

AM_INSTANTIATE(oam_block, am_test::all_params());

}  // namespace
