// SPDX-License-Identifier: MIT
// TAM semantics (include/am/tam.hpp), under both dispatch policies on every transport at 1, 2
// and 4 ranks: entry counts (a synchronising thread runs once per `entry` forks/posts and its
// count starts again; set_count), forks from threads and posts from inlets, slots and words,
// calls that allocate frames on other ranks with the caller's frame_ref in the arguments and a
// result sent back, release, finish's value returned by run on every rank, and run's stats
// equal to what the programs count themselves.
#include "tam/tam_support.hpp"

namespace {

using namespace am_tam_test;
using am::tam::codeblock_def;
using am::tam::program;

class tam_semantics : public tam_test {};

// ----------------------------------------------------------------------------- entry counts
// One frame on rank 0. t0 forks S (entry 3) 7 times: S is enabled by the 3rd and 6th fork and
// 2 more are owed; set_count(S, 1) and one fork enable it (3rd run) and its count starts again
// at 3; 2 forks leave 1 owed; 1 post from an inlet enables it (4th run); 2 more posts leave it
// waiting. N (non-synchronising) forked 3 times runs 3 times. With `with_r`, R (declared
// non-synchronising) gets set_count(R, 5): 4 forks do nothing, the 5th enables it, and then
// its count starts again at its entry, 1: 2 forks, 2 runs. F (entry 7, or 10 with R) waits for
// every run of S, N (and R) and finishes with the run counts.
enum : am::tam::thread_id { c_t0, c_s, c_n, c_r, c_f };
constexpr word counts_expected = 4 * 10000 + 3 * 100;
constexpr word counts_with_r_expected = 4 * 10000 + 3 * 100 + 3;

program counts_program(bool with_r = false) {
    codeblock_def cb = codeblock("counts", 4);  // S runs, N runs, R runs, with_r
    cb.threads = {
        {[](frame& f) {
             for (int i = 0; i < 7; ++i) f.fork(c_s);
             f.set_count(c_s, 1);
             f.fork(c_s);
             f.fork(c_s);
             f.fork(c_s);
             for (int i = 0; i < 3; ++i) f.fork(c_n);
             if (f.slot(3) != 0) {
                 f.set_count(c_r, 5);
                 for (int i = 0; i < 5; ++i) f.fork(c_r);
                 f.fork(c_r);
                 f.fork(c_r);
             }
             for (int i = 0; i < 3; ++i) f.send(f.self(), 1, {});
         },
         1, "t0"},
        {[](frame& f) {
             ++f.slot(0);
             f.fork(c_f);
         },
         3, "S"},
        {[](frame& f) {
             ++f.slot(1);
             f.fork(c_f);
         },
         1, "N"},
        {[](frame& f) {
             ++f.slot(2);
             f.fork(c_f);
         },
         1, "R"},
        {[](frame& f) { f.finish(f.slot(0) * 10000 + f.slot(1) * 100 + f.slot(2)); },
         with_r ? 10u : 7u, "F"},
    };
    cb.inlets = {
        [](frame& f, std::span<const word> a) {
            f.slot(0) = f.slot(1) = f.slot(2) = 0;
            f.slot(3) = a[0];
            f.post(c_t0);
        },
        [](frame& f, std::span<const word>) { f.post(c_s); },
    };
    return program_of(std::move(cb));
}

TAM_TEST_P(tam_semantics, entry_counts) {
    t.job_ok([p](am::context& ctx) {
        const am::tam::result res = am::tam::run(ctx, counts_program(), 0, {0}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, counts_expected) << "S runs * 10000 + N runs * 100";
        // t0, 4 S, 3 N, F; the start inlet and 3 posts; one frame, never released.
        EXPECT_EQ(res.total.threads, 9u);
        EXPECT_EQ(res.total.inlets, 4u);
        EXPECT_EQ(res.total.frames, 1u);
        EXPECT_EQ(res.total.released, 0u);
        EXPECT_EQ(res.total.remote_messages, 0u);
        EXPECT_EQ(res.local.threads, ctx.rank() == 0 ? 9u : 0u);
        EXPECT_EQ(res.local.frames, ctx.rank() == 0 ? 1u : 0u);
    });
}

// set_count on a thread declared non-synchronising (entry 1): "sets thread t's remaining entry
// count (a loop whose trip count is known at run time)" — 5 forks for one run, then entry 1.
TAM_TEST_P(tam_semantics, set_count_on_plain_thread) {
    t.job_ok([p](am::context& ctx) {
        const am::tam::result res = am::tam::run(ctx, counts_program(true), 0, {1}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, counts_with_r_expected) << "S runs * 10000 + N runs * 100 + R runs";
        EXPECT_EQ(res.total.threads, 12u);  // t0, 4 S, 3 N, 3 R, F
    });
}

// ------------------------------------------------------------------------------ slots, words
TEST(tam_words, round_trip) {
    static_assert(am::tam::from_word<int>(am::tam::to_word(-7)) == -7);
    static_assert(am::tam::from_word<double>(am::tam::to_word(2.5)) == 2.5);
    static_assert(am::tam::to_word(-1) == ~word{0}, "a negative int is sign-extended");
    static_assert(am::tam::from_word<std::uint32_t>(am::tam::to_word(std::uint32_t{7})) == 7u);
    const frame_ref r{(word{3} << 48) | (word{9} << 32) | 42};
    EXPECT_EQ(r.rank(), 3);
    EXPECT_EQ(r.generation(), 9);
    EXPECT_EQ(r.index(), 42u);
    EXPECT_TRUE(r.valid());
    EXPECT_FALSE(frame_ref{}.valid());
    EXPECT_EQ(frame_ref::from(r.as_word()), r);
    EXPECT_EQ(am::tam::parse_policy("am"), policy::active_messages);
    EXPECT_EQ(am::tam::parse_policy("md"), policy::message_driven);
    EXPECT_EQ(am::tam::parse_policy("message_driven"), policy::message_driven);
    EXPECT_EQ(am::tam::parse_policy("active_messages"), policy::active_messages);
    EXPECT_THROW((void)am::tam::parse_policy("fifo"), am::error);
    EXPECT_EQ(am::tam::parse_policy(am::tam::to_string(policy::message_driven)),
              policy::message_driven);
}

TEST(tam_words, program_add_refuses) {
    program prog;
    codeblock_def unnamed;
    unnamed.threads = {{[](frame&) {}}};
    am_test::expect_error([&] { prog.add(unnamed); }, am::errc::invalid_argument, {});
    codeblock_def null_thread = codeblock("null_thread");
    null_thread.threads = {{nullptr}};
    am_test::expect_error([&] { prog.add(null_thread); }, am::errc::invalid_argument, {});
    codeblock_def null_inlet = codeblock("null_inlet");
    null_inlet.inlets = {nullptr};
    am_test::expect_error([&] { prog.add(null_inlet); }, am::errc::invalid_argument, {});
    EXPECT_EQ(prog.size(), 0u);
    codeblock_def ok = codeblock("ok", 2);
    ok.inlets = {[](frame&, std::span<const word>) {}};
    EXPECT_EQ(prog.add(ok), 0);
    EXPECT_EQ(prog.add(ok), 1);
    EXPECT_EQ(prog.at(1).name, "ok");
}

// A value of each kind through a slot, a message and a slot again; the frame_ref of the
// frame itself arrives as it was sent; codeblock_name, rank and ranks.
TAM_TEST_P(tam_semantics, slots_and_messages) {
    t.job_ok([p](am::context& ctx) {
        codeblock_def cb = codeblock("slots_cb", 5);
        cb.threads = {
            {[](frame& f) {
                f.put(0, 2.5);
                f.put(1, -7);
                f.put(2, f.self());
                f.send(f.self(), 1, {f.slot(0), f.slot(1), f.slot(2), am::tam::to_word(f.ranks())});
            }},
            {[](frame& f) {
                bool ok = f.get<double>(3) == 2.5 * 2 && f.get<int>(4) == -14;
                ok = ok && f.codeblock_name() == "slots_cb" && f.rank() == 0;
                f.finish(ok ? 1 : 0);
            }},
        };
        cb.inlets = {
            [](frame& f, std::span<const word> a) {
                f.slot(4) = a.size() == 1 ? a[0] : 0;  // run's one argument: 5
                f.post(0);
            },
            [](frame& f, std::span<const word> a) {
                const bool ok = a.size() == 4 && frame_ref::from(a[2]) == f.self() &&
                                am::tam::from_word<int>(a[3]) == f.ranks() && f.get<word>(4) == 5;
                f.put(3, am::tam::from_word<double>(a[0]) * 2);
                f.put(4, ok ? am::tam::from_word<int>(a[1]) * 2 : 0);
                f.post(1);
            },
        };
        const am::tam::result res = am::tam::run(ctx, program_of(std::move(cb)), 0, {5}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, 1u);
    });
}

// ------------------------------------------------------------------- calls to other ranks
// square_program (tam_support.hpp): the root calls "square" on every rank, a join sums.
TAM_TEST_P(tam_semantics, call_on_every_rank) {
    t.job_ok([p](am::context& ctx) {
        const word x = 17;
        const am::tam::result res = am::tam::run(ctx, square_program(), 0, {x}, opts(p));
        const word n = static_cast<word>(ctx.size());
        EXPECT_TRUE(res.finished) << "rank " << ctx.rank();
        EXPECT_EQ(res.value, square_expected(ctx.size(), x)) << "rank " << ctx.rank();
        EXPECT_EQ(res.total.frames, 1 + n);
        EXPECT_EQ(res.total.released, n);
        EXPECT_EQ(res.local.frames, ctx.rank() == 0 ? 2u : 1u);
        EXPECT_EQ(res.local.released, 1u);
        EXPECT_EQ(res.total.threads, 2 + n);  // t0, sum, one per callee
        EXPECT_EQ(res.total.inlets, 1 + 2 * n);
        if (ctx.size() == 1) {
            EXPECT_EQ(res.total.remote_messages, 0u);
        } else {
            // at least the calls to and the replies from the other ranks
            EXPECT_GE(res.total.remote_messages, 2 * (n - 1));
            EXPECT_GE(res.local.remote_messages, ctx.rank() == 0 ? n - 1 : 1u);
        }
        EXPECT_GE(res.total.messages, res.total.remote_messages);
    });
}

// ------------------------------------------------- a token around a ring, release, stats
// The root calls a "node" on every rank; each node sends its frame_ref back, the root's
// sync thread (entry = ranks) sends every node its successor's ref, and the token starts at
// node 0. A node's "fwd" thread needs the successor and the token before its first run
// (entry 2), then only the token (it sets its count to 1 each run, since the count starts
// again at 2). The token carries the hops left and an accumulator; the node where it ends
// finishes the program and tells the root, which stops every node (each releases its frame)
// and releases its own. Every thread and inlet counts itself in a rank-local tally that must
// equal run's stats for the rank.
namespace ring {

enum : am::tam::thread_id { r_t0, r_all, r_stop };
enum : am::tam::thread_id { n_hello, n_fwd, n_rel };
constexpr unsigned first_node_slot = 2;
constexpr word mult = 1000003;

word expected(int ranks, word hops) {
    word acc = 1;
    int at = 0;
    for (word h = hops + 1; h-- > 0;) {
        acc = acc * mult + static_cast<word>(at + 1);
        at = (at + 1) % ranks;
    }
    return acc;
}

void count_thread() {
    ++my_tally().threads;
}
void count_inlet() {
    ++my_tally().inlets;
}

program make() {
    codeblock_def root = codeblock("ring_root", first_node_slot + 8);
    root.threads = {
        {[](frame& f) {
             count_thread();
             f.set_count(r_all, static_cast<std::uint32_t>(f.ranks()));
             for (int r = 0; r < f.ranks(); ++r) {
                 f.call(1, r, 0, {f.self().as_word(), am::tam::to_word(r)});
             }
         },
         1, "t0"},
        {[](frame& f) {
             count_thread();
             const unsigned n = static_cast<unsigned>(f.ranks());
             for (unsigned r = 0; r < n; ++r) {
                 const frame_ref node = frame_ref::from(f.slot(first_node_slot + r));
                 f.send(node, 1, {f.slot(first_node_slot + (r + 1) % n)});
             }
             f.send(frame_ref::from(f.slot(first_node_slot)), 2, {f.slot(0), 1});
         },
         runtime_count, "all_in"},
        {[](frame& f) {
             count_thread();
             for (int r = 0; r < f.ranks(); ++r) {
                 f.send(frame_ref::from(f.slot(first_node_slot + static_cast<unsigned>(r))), 3, {});
             }
             f.release();
             ++my_tally().released;
         },
         1, "stop"},
    };
    root.inlets = {
        [](frame& f, std::span<const word> a) {
            count_inlet();
            ++my_tally().frames;
            f.slot(0) = a[0];
            f.post(r_t0);
        },
        [](frame& f, std::span<const word> a) {  // {rank, node ref}
            count_inlet();
            f.slot(first_node_slot + static_cast<unsigned>(a[0])) = a[1];
            f.post(r_all);
        },
        [](frame& f, std::span<const word>) {
            count_inlet();
            f.post(r_stop);
        },
    };
    codeblock_def node = codeblock("ring_node", 5);  // root, rank, successor, hops, acc
    node.threads = {
        {[](frame& f) {
             count_thread();
             f.send(frame_ref::from(f.slot(0)), 1, {f.slot(1), f.self().as_word()});
         },
         1, "hello"},
        {[](frame& f) {
             count_thread();
             f.set_count(n_fwd, 1);
             const word acc = f.slot(4) * mult + static_cast<word>(f.rank() + 1);
             const word hops = f.slot(3);
             if (hops == 0) {
                 f.finish(acc);
                 f.send(frame_ref::from(f.slot(0)), 2, {});
             } else {
                 f.send(frame_ref::from(f.slot(2)), 2, {hops - 1, acc});
             }
         },
         2, "fwd"},
        {[](frame& f) {
             count_thread();
             f.release();
             ++my_tally().released;
         },
         1, "release"},
    };
    node.inlets = {
        [](frame& f, std::span<const word> a) {  // {root, rank}
            count_inlet();
            ++my_tally().frames;
            f.slot(0) = a[0];
            f.slot(1) = a[1];
            f.post(n_hello);
        },
        [](frame& f, std::span<const word> a) {  // {successor}
            count_inlet();
            f.slot(2) = a[0];
            f.post(n_fwd);
        },
        [](frame& f, std::span<const word> a) {  // {hops, acc}
            count_inlet();
            f.slot(3) = a[0];
            f.slot(4) = a[1];
            f.post(n_fwd);
        },
        [](frame& f, std::span<const word>) {
            count_inlet();
            f.post(n_rel);
        },
    };
    return program_of(std::move(root), std::move(node));
}

}  // namespace ring

TAM_TEST_P(tam_semantics, ring_token_and_stats) {
    watchdog dog("ring_token_and_stats", 25);
    t.job_ok([p](am::context& ctx) {
        constexpr word hops = 1000;
        my_tally() = {};
        const am::tam::result res = am::tam::run(ctx, ring::make(), 0, {hops}, opts(p));
        const word n = static_cast<word>(ctx.size());
        EXPECT_TRUE(res.finished) << "rank " << ctx.rank();
        EXPECT_EQ(res.value, ring::expected(ctx.size(), hops)) << "rank " << ctx.rank();
        const tally& mine = my_tally();
        EXPECT_EQ(res.local.threads, mine.threads) << "rank " << ctx.rank();
        EXPECT_EQ(res.local.inlets, mine.inlets) << "rank " << ctx.rank();
        EXPECT_EQ(res.local.frames, mine.frames) << "rank " << ctx.rank();
        EXPECT_EQ(res.local.released, mine.released) << "rank " << ctx.rank();
        // root: t0, all_in, stop; nodes: hello and release each, fwd once per visit.
        EXPECT_EQ(res.total.threads, 3 + 2 * n + hops + 1);
        // root: start, n hellos, stop; nodes: start, successor, stop each, one per visit.
        EXPECT_EQ(res.total.inlets, 2 + n + 3 * n + hops + 1);
        EXPECT_EQ(res.total.frames, 1 + n);
        EXPECT_EQ(res.total.released, 1 + n);
        EXPECT_GE(res.total.messages, 3 * n + hops + 2);  // the sends alone
        if (ctx.size() == 1) {
            EXPECT_EQ(res.total.remote_messages, 0u);
        } else {
            EXPECT_GE(res.total.remote_messages, hops);  // every hop crosses ranks
        }
        EXPECT_EQ(res.total.fetches, 0u);
        EXPECT_GT(res.total.quanta, 0u);
        EXPECT_LE(res.total.quanta, res.total.threads);
    });
}

// A run after a run in the same job: the machine starts clean (stats, frames, finish).
TAM_TEST_P(tam_semantics, runs_back_to_back) {
    t.job_ok([p](am::context& ctx) {
        for (int i = 0; i < 3; ++i) {
            const am::tam::result res = am::tam::run(ctx, counts_program(), 0, {0}, opts(p));
            EXPECT_TRUE(res.finished);
            EXPECT_EQ(res.value, counts_expected) << "run " << i;
            EXPECT_EQ(res.total.threads, 9u) << "run " << i;
            const am::tam::result sq = am::tam::run(ctx, square_program(), 0, {word(i)}, opts(p));
            EXPECT_EQ(sq.value, square_expected(ctx.size(), word(i))) << "run " << i;
            EXPECT_EQ(sq.total.frames, 1 + static_cast<word>(ctx.size())) << "run " << i;
        }
    });
}

// A program that never calls finish: run returns on every rank with finished false.
TAM_TEST_P(tam_semantics, no_finish) {
    t.job_ok([p](am::context& ctx) {
        codeblock_def cb = codeblock("quiet", 1);
        cb.threads = {{[](frame& f) { f.slot(0) = 1; }}};
        cb.inlets = {[](frame& f, std::span<const word>) { f.post(0); }};
        const am::tam::result res = am::tam::run(ctx, program_of(std::move(cb)), 0, {}, opts(p));
        EXPECT_FALSE(res.finished);
        EXPECT_EQ(res.total.threads, 1u);
        EXPECT_EQ(res.total.inlets, 1u);
    });
}

AM_INSTANTIATE(tam_semantics, tam_params());

}  // namespace
