// SPDX-License-Identifier: MIT
// Bad TAM programs (include/am/tam.hpp): each ends am::tam::run with an am::error whose what()
// names the frame, its codeblock and the rank, and the job fails — the other ranks get
// errc::aborted (tests/core/failure_test.cpp, tests/oam/errors_test.cpp): a message to a
// released frame, a fork after release, a frame released twice, an I-structure element
// written twice, an element read but never written (reported when the program has ended, not
// a hang), inlet, thread and slot indices out of range, more than max_args arguments,
// different programs on different ranks. And what an inlet may not do (send, call, release,
// ...) is refused at the call, the program going on. Failing jobs are read from the test
// process, so not on mpi (a failing job there is mpiexec's to report); the refusals run
// everywhere.
#include "tam/tam_support.hpp"

#include <functional>

namespace {

using namespace am_tam_test;
using am::tam::codeblock_def;
using am::tam::program;

class tam_errors : public tam_test {};
class tam_errors_multi : public tam_test {};
class tam_refusals : public tam_test {};

int last_rank(const frame& f) {
    return f.ranks() - 1;
}

/// The rank of a failure_spec that means the last rank.
constexpr int on_last = 1000;

/// What a failing run must show: the error on rank `rank` (-1: any one rank; on_last: the last
/// rank) containing every one of `parts` ("@last" in a part stands for the last rank's
/// number); the other ranks aborted.
struct failure_spec {
    std::vector<std::string> parts;
    int rank = -1;
    /// Every rank's run throws (any error: run's collective checks, before the program starts
    /// or when it has ended, fail on every rank); the parts are checked on `rank` (-1: on all).
    bool every_rank = false;
};

std::string expand(std::string s, int ranks) {
    const std::string key = "@last";
    for (std::size_t i = s.find(key); i != std::string::npos; i = s.find(key)) {
        s.replace(i, key.size(), std::to_string(ranks - 1));
    }
    return s;
}

void expect_failed_run(const tam_test& t, const std::function<program(int rank)>& make,
                       std::initializer_list<word> args, policy p, failure_spec spec) {
    watchdog dog(::testing::UnitTest::GetInstance()->current_test_info()->name(), 20);
    am_test::shared<error_board> b;
    const std::vector<word> argv(args);
    ::testing::internal::CaptureStderr();
    const int rc = t.job([&](am::context& ctx) {
        const program prog = make(ctx.rank());
        b->record(ctx, [&] {
            switch (argv.size()) {  // run takes an initializer_list
                case 0:
                    (void)am::tam::run(ctx, prog, 0, {}, opts(p));
                    break;
                case 1:
                    (void)am::tam::run(ctx, prog, 0, {argv[0]}, opts(p));
                    break;
                default:
                    (void)am::tam::run(ctx, prog, 0, {argv[0], argv[1], argv[2], argv[3], argv[4]},
                                       opts(p));
            }
        });
    });
    const std::string err = ::testing::internal::GetCapturedStderr();
    const int n = t.nranks();
    EXPECT_NE(rc, 0) << "the job did not fail" << b->dump(n);
    const std::vector<int> raisers = b->raisers(n);
    const int check_rank = spec.rank == on_last ? n - 1 : spec.rank;
    if (spec.every_rank) {
        for (int r = 0; r < n; ++r) EXPECT_TRUE(b->thrown[r].load()) << "rank " << r << b->dump(n);
        if (check_rank >= 0) {
            EXPECT_TRUE(b->thrown[check_rank].load() &&
                        b->code[check_rank].load() != static_cast<int>(am::errc::aborted))
                << b->dump(n);
        }
    } else {
        ASSERT_EQ(raisers.size(), 1u)
            << "one rank raises the error, the others are aborted" << b->dump(n);
        if (check_rank >= 0) {
            EXPECT_EQ(raisers[0], check_rank) << b->dump(n);
        }
        for (int r = 0; r < n; ++r) {
            if (r == raisers[0]) continue;
            EXPECT_TRUE(b->thrown[r].load() &&
                        b->code[r].load() == static_cast<int>(am::errc::aborted))
                << "rank " << r << " was not aborted" << b->dump(n);
        }
    }
    for (int r : raisers) {
        if (spec.every_rank && check_rank >= 0 && r != check_rank) continue;
        const std::string what = b->what[r].str();
        for (const std::string& part : spec.parts) {
            const std::string want = expand(part, n);
            EXPECT_TRUE(am_test::contains(what, want))
                << "\"" << want << "\" not in rank " << r << "'s error: " << what;
        }
    }
    EXPECT_FALSE(err.empty()) << "the failure was not reported on stderr";
}

/// A program whose root (rank 0) calls codeblock "victim" on the last rank with {root}; the
/// victim's thread 0 runs `body`. The root's inlet 1 posts its thread 1 (`root_t1`).
program with_victim(am::tam::thread_fn body, am::tam::thread_fn root_t1, unsigned victim_slots = 2,
                    unsigned victim_threads = 2) {
    codeblock_def root = codeblock("err_root", 2);
    root.threads = {
        {[](frame& f) { f.call(1, last_rank(f), 0, {f.self().as_word()}); }, 1, "t0"},
        {root_t1, 1, "t1"},
    };
    root.inlets = {
        [](frame& f, std::span<const word>) { f.post(0); },
        [](frame& f, std::span<const word> a) {
            f.slot(0) = a.empty() ? 0 : a[0];
            f.post(1);
        },
    };
    codeblock_def victim = codeblock("victim", victim_slots);
    victim.threads.push_back({body, 1, "body"});
    for (unsigned i = 1; i < victim_threads; ++i) victim.threads.push_back({[](frame&) {}});
    victim.inlets = {
        [](frame& f, std::span<const word> a) {
            f.slot(0) = a[0];
            f.post(0);
        },
        [](frame&, std::span<const word>) {},
    };
    return program_of(std::move(root), std::move(victim));
}

void nothing(frame&) {}

/// A with_victim program whose victim runs `body` (and the root's thread 1 `root_t1`) fails on
/// the last rank, the error containing `what` and naming the victim's codeblock and rank.
void expect_victim_fails(const tam_test& t, policy p, const std::string& what,
                         am::tam::thread_fn body, am::tam::thread_fn root_t1 = nothing) {
    expect_failed_run(t, [body, root_t1](int) { return with_victim(body, root_t1); }, {}, p,
                      {{what, "(codeblock 'victim') on rank @last"}, on_last});
}

// The victim says hello and releases its frame; the root then sends to its inlet 1.
TAM_TEST_P(tam_errors, send_to_released_frame) {
    expect_victim_fails(
        t, p, "released",
        [](frame& f) {
            f.send(frame_ref::from(f.slot(0)), 1, {f.self().as_word()});
            f.release();
        },
        [](frame& f) { f.send(frame_ref::from(f.slot(0)), 1, {}); });
}

TAM_TEST_P(tam_errors, fork_after_release) {
    expect_victim_fails(t, p, "released", [](frame& f) {
        f.release();
        f.fork(1);
    });
}

TAM_TEST_P(tam_errors, set_count_after_release) {
    expect_victim_fails(t, p, "released", [](frame& f) {
        f.release();
        f.set_count(1, 2);
    });
}

// Released while one of its threads is enabled: that thread would run on a released frame.
TAM_TEST_P(tam_errors, release_with_enabled_thread) {
    expect_victim_fails(t, p, "released while", [](frame& f) {
        f.fork(1);
        f.release();
    });
}

TAM_TEST_P(tam_errors, release_twice) {
    expect_victim_fails(t, p, "released", [](frame& f) {
        f.release();
        f.release();
    });
}

TAM_TEST_P(tam_errors, thread_index_out_of_range) {
    expect_victim_fails(t, p, "thread 9", [](frame& f) { f.fork(9); });
}

TAM_TEST_P(tam_errors, slot_out_of_range) {
    expect_victim_fails(t, p, "slot 2", [](frame& f) { f.slot(2) = 1; });
}

// The victim sends to inlet 5 of the root (2 inlets), on rank 0.
TAM_TEST_P(tam_errors, inlet_index_out_of_range) {
    expect_failed_run(t,
                      [](int) {
                          return with_victim(
                              [](frame& f) { f.send(frame_ref::from(f.slot(0)), 5, {}); }, nothing);
                      },
                      {}, p, {{"inlet 5", "(codeblock 'err_root') on rank 0"}, 0});
}

TAM_TEST_P(tam_errors, too_many_args_in_send) {
    expect_victim_fails(t, p, "at most 4", [](frame& f) {
        f.send(frame_ref::from(f.slot(0)), 1, {1, 2, 3, 4, 5});
    });
}

TAM_TEST_P(tam_errors, too_many_args_in_call) {
    expect_victim_fails(t, p, "at most 4", [](frame& f) { f.call(0, 0, 0, {1, 2, 3, 4, 5}); });
}

TAM_TEST_P(tam_errors, too_many_args_in_run) {
    expect_failed_run(t, [](int) { return with_victim(nothing, nothing); }, {1, 2, 3, 4, 5}, p,
                      {{"am::tam::run", "at most 4"}, -1, true});
}

// Root (rank 0) allocates an I-structure; the victim on the last rank writes element 0 twice
// (the second store is caught where the element lives: rank 0).
TAM_TEST_P(tam_errors, element_written_twice) {
    expect_failed_run(
        t,
        [](int) {
            codeblock_def root = codeblock("err_root", 1);
            root.threads = {
                {[](frame& f) { f.call(1, last_rank(f), 0, {f.ialloc(3).as_word()}); }}};
            root.inlets = {[](frame& f, std::span<const word>) { f.post(0); }};
            codeblock_def writer = codeblock("writer", 1);
            writer.threads = {{[](frame& f) {
                f.istore(istruct_ref::from(f.slot(0)), 2, 1);
                f.istore(istruct_ref::from(f.slot(0)), 2, 2);
            }}};
            writer.inlets = {[](frame& f, std::span<const word> a) {
                f.slot(0) = a[0];
                f.post(0);
            }};
            return program_of(std::move(root), std::move(writer));
        },
        {}, p, {{"element 2", "written twice", "(codeblock 'writer') on rank @last"}, 0});
}

TAM_TEST_P(tam_errors, element_out_of_range) {
    expect_failed_run(t,
                      [](int) {
                          codeblock_def root = codeblock("err_root", 1);
                          root.threads = {{[](frame& f) { f.istore(f.ialloc(3), 3, 1); }}};
                          root.inlets = {[](frame& f, std::span<const word>) { f.post(0); }};
                          return program_of(std::move(root));
                      },
                      {}, p, {{"element 3", "(codeblock 'err_root') on rank 0"}, 0});
}

// The reader ("reader", on the last rank) fetches element 1 of the root's structure (rank 0),
// which nobody writes: when the program has ended, run reports the element and the reader.
TAM_TEST_P(tam_errors, element_never_written) {
    expect_failed_run(
        t,
        [](int) {
            codeblock_def root = codeblock("err_root", 1);
            root.threads = {{[](frame& f) {
                const istruct_ref a = f.ialloc(2);
                f.istore(a, 0, 1);
                f.call(1, last_rank(f), 0, {a.as_word()});
            }}};
            root.inlets = {[](frame& f, std::span<const word>) { f.post(0); }};
            codeblock_def reader = codeblock("reader", 1);
            reader.threads = {{[](frame& f) { f.ifetch(istruct_ref::from(f.slot(0)), 1, 1); }},
                              {[](frame&) {}}};
            reader.inlets = {[](frame& f, std::span<const word> a) {
                                 f.slot(0) = a[0];
                                 f.post(0);
                             },
                             [](frame& f, std::span<const word>) { f.post(1); }};
            return program_of(std::move(root), std::move(reader));
        },
        {}, p,
        {{"never", "element 1", "read by frame", "(codeblock 'reader') on rank @last"}, 0, true});
}

// Rank 0's program has a codeblock of another name than the others': run refuses on every rank
// before anything runs. Two ranks at least (tam_errors_multi).
TAM_TEST_P(tam_errors_multi, different_programs) {
    expect_failed_run(t,
                      [](int rank) {
                          program prog = with_victim(nothing, nothing);
                          codeblock_def extra =
                              codeblock(rank == 0 ? "only_on_rank0" : "elsewhere");
                          extra.inlets = {[](frame&, std::span<const word>) {}};
                          return program_of(std::move(extra));
                      },
                      {}, p, {{"am::tam::run", "different programs"}, -1, true});
}

// finish twice (by two threads): every rank's run reports it when the program has ended.
TAM_TEST_P(tam_errors, finish_twice) {
    expect_failed_run(t,
                      [](int) {
                          return with_victim(
                              [](frame& f) {
                                  f.send(frame_ref::from(f.slot(0)), 1, {});
                                  f.finish(1);
                              },
                              [](frame& f) { f.finish(2); });
                      },
                      {}, p, {{"finish", "2 times"}, -1, true});
}

AM_INSTANTIATE(tam_errors, am_test::without_mpi(tam_params()));
AM_INSTANTIATE(tam_errors_multi, am_test::without_mpi(tam_multi_params()));

// ----------------------------------------------------------------------- refusals (no fail)
// Inlet 0 tries each thing an inlet may not do; each must throw am::error at once and leave
// the frame usable. The inlet counts the refusals in slot 0 and posts the thread, which
// finishes with the count. Thread 1 also checks that finish is refused a second time.
TAM_TEST_P(tam_refusals, inlet_may_not) {
    t.job_ok([p](am::context& ctx) {
        codeblock_def cb = codeblock("inlet_refusals", 2);
        cb.threads = {{[](frame& f) { f.finish(f.slot(0)); }}};
        cb.inlets = {[](frame& f, std::span<const word>) {
            word refused = 0;
            auto refuse = [&](auto&& call) {
                try {
                    call();
                } catch (const am::error&) {
                    ++refused;
                }
            };
            refuse([&] { f.send(f.self(), 0, {}); });
            refuse([&] { f.call(0, 0, 0, {}); });
            refuse([&] { f.release(); });
            refuse([&] { (void)f.ialloc(1); });
            refuse([&] { f.finish(7); });
            f.slot(0) = refused;
            f.post(0);
        }};
        const am::tam::result res = am::tam::run(ctx, program_of(std::move(cb)), 0, {}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, 5u) << "refusals counted by the inlet";
        EXPECT_EQ(res.total.frames, 1u) << "a refused call allocated a frame";
        EXPECT_EQ(res.total.released, 0u) << "a refused release released the frame";
        EXPECT_EQ(res.total.inlets, 1u) << "a refused send was delivered";
    });
}

// ifetch and istore from an inlet are refused too (the structure comes from a thread).
TAM_TEST_P(tam_refusals, inlet_may_not_touch_istructures) {
    t.job_ok([p](am::context& ctx) {
        codeblock_def cb = codeblock("inlet_ist_refusals", 2);
        cb.threads = {
            {[](frame& f) {
                f.slot(1) = f.ialloc(1).as_word();
                f.send(f.self(), 1, {});
            }},
            {[](frame& f) { f.finish(f.slot(0)); }},
        };
        cb.inlets = {
            [](frame& f, std::span<const word>) { f.post(0); },
            [](frame& f, std::span<const word>) {
                word refused = 0;
                const istruct_ref a = istruct_ref::from(f.slot(1));
                try {
                    f.ifetch(a, 0, 1);
                } catch (const am::error&) {
                    ++refused;
                }
                try {
                    f.istore(a, 0, 1);
                } catch (const am::error&) {
                    ++refused;
                }
                f.slot(0) = refused;
                f.post(1);
            },
        };
        const am::tam::result res = am::tam::run(ctx, program_of(std::move(cb)), 0, {}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, 2u);
        EXPECT_EQ(res.total.stores, 0u);
        EXPECT_EQ(res.total.fetches, 0u);
    });
}

// run's own checks, on every rank before the program starts: options::poll_every 0, a root
// codeblock out of range, a root without inlet 0. Each throws errc::invalid_argument on every
// rank, and the next run works.
TAM_TEST_P(tam_refusals, run_refuses_bad_setup) {
    t.job_ok([p](am::context& ctx) {
        program prog;
        codeblock_def no_inlet = codeblock("no_inlet");
        no_inlet.threads = {{[](frame&) {}}};
        prog.add(std::move(no_inlet));
        codeblock_def ok = codeblock("ok_root");
        ok.threads = {{[](frame& f) { f.finish(9); }}};
        ok.inlets = {[](frame& f, std::span<const word>) { f.post(0); }};
        prog.add(std::move(ok));
        am::tam::options zero = opts(p);
        zero.poll_every = 0;
        am_test::expect_error([&] { (void)am::tam::run(ctx, prog, 1, {}, zero); },
                              am::errc::invalid_argument, {"am::tam::run", "poll_every"});
        am_test::expect_error([&] { (void)am::tam::run(ctx, prog, 7, {}, opts(p)); },
                              am::errc::invalid_argument, {"am::tam::run", "root codeblock 7"});
        am_test::expect_error([&] { (void)am::tam::run(ctx, prog, 0, {}, opts(p)); },
                              am::errc::invalid_argument, {"am::tam::run", "no_inlet"});
        const am::tam::result res = am::tam::run(ctx, prog, 1, {}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, 9u);
        EXPECT_EQ(res.total.threads, 1u);
    });
}

AM_INSTANTIATE(tam_refusals, tam_params());

}  // namespace
