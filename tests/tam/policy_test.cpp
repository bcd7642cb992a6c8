// SPDX-License-Identifier: MIT
// The two dispatch policies order inlets and threads as "TAM on the J-Machine" (section 2.3,
// Fig. 1) says: with two inlet messages queued for a frame, active_messages runs both inlets
// (at the poll point) and then the threads they posted; message_driven runs the first inlet,
// the threads it posts and their descendants, and only then the second inlet. Deterministic
// programs on rank 0 (other ranks idle), whose order the test checks exactly; and the threads
// and quanta each policy runs for a small program, derived by hand.
#include "tam/tam_support.hpp"

namespace {

using namespace am_tam_test;
using am::tam::codeblock_def;
using am::tam::program;

class tam_policy : public tam_test {};

// ----------------------------------------------------------------- one frame, two messages
// t0 sends two messages to its own frame: A (inlet 1) posts T1, which forks T2, which forks
// T3 (entry 2); B (inlet 2) posts T3. Every inlet and thread appends its digit to slot 0:
// t0 1, A 2, T1 3, T2 4, B 5, T3 6. T3 needs both T2 and B, so the order is fixed by the
// policy alone (not by the order of a frame's continuation vector).
//   active_messages: t0, A, B (both inlets at the poll point), T1, T2, T3  -> 0x125346
//   message_driven:  t0, A, T1, T2 (A's thread and its descendants), B, T3 -> 0x123456
enum : am::tam::thread_id { f_t0, f_t1, f_t2, f_t3 };

void note(frame& f, word digit) {
    f.slot(0) = f.slot(0) * 16 + digit;
}

program one_frame_program() {
    codeblock_def cb = codeblock("fig1_one_frame", 1);
    cb.threads = {
        {[](frame& f) {
             note(f, 1);
             f.send(f.self(), 1, {});
             f.send(f.self(), 2, {});
         },
         1, "t0"},
        {[](frame& f) {
             note(f, 3);
             f.fork(f_t2);
         },
         1, "T1"},
        {[](frame& f) {
             note(f, 4);
             f.fork(f_t3);
         },
         1, "T2"},
        {[](frame& f) {
             note(f, 6);
             f.finish(f.slot(0));
         },
         2, "T3"},
    };
    cb.inlets = {
        [](frame& f, std::span<const word>) {
            f.slot(0) = 0;
            f.post(f_t0);
        },
        [](frame& f, std::span<const word>) {
            note(f, 2);
            f.post(f_t1);
        },
        [](frame& f, std::span<const word>) {
            note(f, 5);
            f.post(f_t3);
        },
    };
    return program_of(std::move(cb));
}

TAM_TEST_P(tam_policy, two_inlets_one_frame) {
    t.job_ok([p](am::context& ctx) {
        const am::tam::result res = am::tam::run(ctx, one_frame_program(), 0, {}, opts(p));
        EXPECT_TRUE(res.finished);
        const word expected = p == policy::active_messages ? 0x125346 : 0x123456;
        EXPECT_EQ(res.value, expected)
            << std::hex << "order 0x" << res.value << " (t0 1, A 2, T1 3, T2 4, B 5, T3 6)";
        EXPECT_EQ(res.total.threads, 4u);
        EXPECT_EQ(res.total.inlets, 3u);
    });
}

// ------------------------------------------------------------------ two frames, Fig. 1
// Frame 1 (the root) calls a child (frame 2) on its own rank; when the child has said hello,
// frame 1's thread "burst" sends, in this order, A to frame 1, B to frame 2, C to frame 1.
// A posts TA, which forks TA2, which forks TC (entry 2); C posts TC; B posts UB. The trace
// (a thread_local list: one rank) records burst 10, A 1, B 2, C 3, TA 4, TA2 5, TC 6, UB 7.
//   active_messages: the three inlets, then frame 1's threads, then frame 2's (frame 1 was
//   made ready first): 10 1 2 3 4 5 6 7.
//   message_driven: each message with the threads it posts: 10 1 4 5 2 7 3 6.
// Quanta (runs of threads of one frame without a switch of frame): t0 (frame 1), hello
// (frame 2), burst (frame 1), then under AM TA TA2 TC still in frame 1 and UB (frame 2): 4;
// under MD TA TA2 (frame 1, still burst's quantum), UB (frame 2), TC (frame 1): 5.
namespace two {

enum : am::tam::thread_id { r_t0, r_burst, r_ta, r_ta2, r_tc };
enum : am::tam::thread_id { c_hello, c_ub };

void log(int e) {
    trace().push_back(e);
}

program make() {
    codeblock_def root = codeblock("fig1_frame1", 2);  // child, events left
    root.threads = {
        {[](frame& f) { f.call(1, f.rank(), 0, {f.self().as_word()}); }, 1, "t0"},
        {[](frame& f) {
             log(10);
             const frame_ref child = frame_ref::from(f.slot(0));
             f.send(f.self(), 2, {});
             f.send(child, 1, {});
             f.send(f.self(), 3, {});
         },
         1, "burst"},
        {[](frame& f) {
             log(4);
             f.fork(r_ta2);
         },
         1, "TA"},
        {[](frame& f) {
             log(5);
             f.fork(r_tc);
         },
         1, "TA2"},
        {[](frame&) { log(6); }, 2, "TC"},
    };
    root.inlets = {
        [](frame& f, std::span<const word>) { f.post(r_t0); },
        [](frame& f, std::span<const word> a) {  // hello {child}
            f.slot(0) = a[0];
            f.post(r_burst);
        },
        [](frame& f, std::span<const word>) {
            log(1);
            f.post(r_ta);
        },
        [](frame& f, std::span<const word>) {
            log(3);
            f.post(r_tc);
        },
    };
    codeblock_def child = codeblock("fig1_frame2", 1);
    child.threads = {
        {[](frame& f) { f.send(frame_ref::from(f.slot(0)), 1, {f.self().as_word()}); }, 1, "hello"},
        {[](frame&) { log(7); }, 1, "UB"},
    };
    child.inlets = {
        [](frame& f, std::span<const word> a) {
            f.slot(0) = a[0];
            f.post(c_hello);
        },
        [](frame& f, std::span<const word>) {
            log(2);
            f.post(c_ub);
        },
    };
    return program_of(std::move(root), std::move(child));
}

}  // namespace two

TAM_TEST_P(tam_policy, three_messages_two_frames) {
    t.job_ok([p](am::context& ctx) {
        trace().clear();
        const am::tam::result res = am::tam::run(ctx, two::make(), 0, {}, opts(p));
        EXPECT_FALSE(res.finished);
        const std::vector<int> expected = p == policy::active_messages
                                              ? std::vector<int>{10, 1, 2, 3, 4, 5, 6, 7}
                                              : std::vector<int>{10, 1, 4, 5, 2, 7, 3, 6};
        if (ctx.rank() == 0) {
            EXPECT_EQ(trace(), expected);
        } else {
            EXPECT_TRUE(trace().empty());
        }
        EXPECT_EQ(res.total.threads, 7u);  // t0, hello, burst, TA, TA2, TC, UB
        EXPECT_EQ(res.total.quanta, p == policy::active_messages ? 4u : 5u);
        EXPECT_EQ(res.total.frames, 2u);
    });
}

// ------------------------------------------------------------------------- quanta and TPQ
// As above, but burst sends k = 4 messages to each frame, alternating (frame 1, frame 2, ...);
// each posts one "work" thread of its frame. Threads: t0, hello, burst and 2k work = 11.
//   active_messages: t0 | hello | burst, then all 8 inlets at the poll point, then frame 1's
//   4 work threads (frame 1 is still active: burst's quantum goes on) | frame 2's 4: 4 quanta.
//   message_driven: t0 | hello | burst, work1 (same frame) | work2 | work1 | work2 | work1 |
//   work2 | work1 | work2: 10 quanta.
namespace tpq {

constexpr int k = 4;
enum : am::tam::thread_id { r_t0, r_burst, r_work };

program make() {
    codeblock_def root = codeblock("tpq_frame1", 1);
    root.threads = {
        {[](frame& f) { f.call(1, f.rank(), 0, {f.self().as_word()}); }, 1, "t0"},
        {[](frame& f) {
             const frame_ref child = frame_ref::from(f.slot(0));
             for (int i = 0; i < k; ++i) {
                 f.send(f.self(), 2, {});
                 f.send(child, 1, {});
             }
         },
         1, "burst"},
        {[](frame&) {}, 1, "work1"},
    };
    root.inlets = {
        [](frame& f, std::span<const word>) { f.post(r_t0); },
        [](frame& f, std::span<const word> a) {
            f.slot(0) = a[0];
            f.post(r_burst);
        },
        [](frame& f, std::span<const word>) { f.post(r_work); },
    };
    codeblock_def child = codeblock("tpq_frame2", 1);
    child.threads = {
        {[](frame& f) { f.send(frame_ref::from(f.slot(0)), 1, {f.self().as_word()}); }, 1, "hello"},
        {[](frame&) {}, 1, "work2"},
    };
    child.inlets = {
        [](frame& f, std::span<const word> a) {
            f.slot(0) = a[0];
            f.post(0);
        },
        [](frame& f, std::span<const word>) { f.post(1); },
    };
    return program_of(std::move(root), std::move(child));
}

}  // namespace tpq

TAM_TEST_P(tam_policy, quanta_and_tpq) {
    t.job_ok([p](am::context& ctx) {
        const am::tam::result res = am::tam::run(ctx, tpq::make(), 0, {}, opts(p));
        const bool am_policy = p == policy::active_messages;
        EXPECT_EQ(res.total.threads, 3u + 2 * tpq::k);
        EXPECT_EQ(res.total.inlets, 3u + 2 * tpq::k);  // root in0, hello, child in0, 2k
        EXPECT_EQ(res.total.quanta, am_policy ? 4u : 10u);
        EXPECT_DOUBLE_EQ(res.total.tpq(), am_policy ? 11.0 / 4 : 11.0 / 10);
        EXPECT_EQ(res.local.quanta, ctx.rank() == 0 ? res.total.quanta : 0u);
        EXPECT_EQ(res.total.remote_messages, 0u);
    });
}

// The one-frame program never switches frames: one quantum under either policy.
TAM_TEST_P(tam_policy, one_frame_one_quantum) {
    t.job_ok([p](am::context& ctx) {
        const am::tam::result res = am::tam::run(ctx, one_frame_program(), 0, {}, opts(p));
        EXPECT_EQ(res.total.quanta, 1u);
        EXPECT_DOUBLE_EQ(res.total.tpq(), 4.0);
    });
}

// The programs live on rank 0; with more ranks the core is polled at every thread too, and
// the order must not change.
AM_INSTANTIATE(tam_policy, tam_params());

}  // namespace
