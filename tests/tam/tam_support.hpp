// SPDX-License-Identifier: MIT
// Test support for the TAM layer (include/am/tam.hpp): a fixture whose tests run once per
// dispatch policy (TAM_TEST_P defines <name>_am and <name>_md), a board in shared memory that
// collects what am::tam::run threw on each rank, a watchdog that ends a hanging test with a
// message, and rank-local tallies the test programs keep to check run's stats against.
#pragma once

#include "support/expect.hpp"
#include "support/watchdog.hpp"

#include <am/tam.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace am_tam_test {

using am::tam::frame;
using am::tam::frame_ref;
using am::tam::istruct_ref;
using am::tam::policy;
using am::tam::word;

/// Fixture of the TAM tests (the transport and rank count are the parameter).
class tam_test : public am_test::spmd_test {
  public:
    int job(const am_test::rank_fn& fn) const { return spmd(GetParam(), fn); }
    /// Runs `fn` on every rank of a job that must succeed.
    void job_ok(const am_test::rank_fn& fn) const { ASSERT_EQ(job(fn), 0); }
    [[nodiscard]] int nranks() const { return GetParam().ranks; }
    [[nodiscard]] bool on_mpi() const { return am_test::is_mpi(GetParam().transport); }
    [[nodiscard]] std::vector<int> seen_ranks() const { return visible_ranks(); }
};

/// Defines a test body `void <fixture>_<name>(const <fixture>& t, policy p)` and two tests,
/// <name>_am (active_messages) and <name>_md (message_driven), that run it.
#define TAM_TEST_P(fixture, name)                                    \
    void fixture##_##name(const fixture& t, ::am::tam::policy p);    \
    TEST_P(fixture, name##_am) {                                     \
        fixture##_##name(*this, ::am::tam::policy::active_messages); \
    }                                                                \
    TEST_P(fixture, name##_md) {                                     \
        fixture##_##name(*this, ::am::tam::policy::message_driven);  \
    }                                                                \
    void fixture##_##name([[maybe_unused]] const fixture& t, [[maybe_unused]] ::am::tam::policy p)

/// The declared entry count of a join thread whose count the program sets at run time
/// (set_count): any count above 1 declares the thread synchronising.
inline constexpr std::uint32_t runtime_count = 2;

inline am::tam::options opts(policy p) {
    am::tam::options o;
    o.dispatch = p;
    return o;
}

/// A codeblock named `name` with `slots` words of frame; the caller adds its threads and
/// inlets.
inline am::tam::codeblock_def codeblock(std::string name, unsigned slots = 0) {
    am::tam::codeblock_def cb;
    cb.name = std::move(name);
    cb.slots = slots;
    return cb;
}

/// A program of `defs`, in order: the first is codeblock 0.
template <class... Defs>
am::tam::program program_of(Defs&&... defs) {
    am::tam::program prog;
    ((void)prog.add(std::forward<Defs>(defs)), ...);
    return prog;
}

/// The rank counts and transports of the TAM semantic tests: 1, 2 and 4 ranks on threads and
/// shm; with MPI, mpi at 2 and 4 and mixed at 4.
inline std::vector<am_test::spmd_param> tam_params() {
    return am_test::make_params({1, 2, 4}, {1, 2, 4});
}
inline std::vector<am_test::spmd_param> tam_multi_params() {
    return am_test::make_params({2, 4}, {2, 4});
}
inline std::vector<am_test::spmd_param> one_rank_params() {
    return am_test::make_params({1}, {1});
}

// A call on every rank (tests/tam semantics, tests/trace layers).
// The root (rank 0) calls codeblock "square" on every rank with its own frame_ref and x; each
// callee checks it runs on the rank it was called on, sends back (x + r)^2 + 1000 * r and the
// caller's rank it decoded, and releases its frame. The root's "sum" thread has entry count
// `ranks` (set_count at run time) and finishes with the sum and a mask of the ranks heard.
enum : am::tam::thread_id { q_t0, q_sum };

/// What square_program finishes with on `ranks` ranks, given x.
inline word square_expected(int ranks, word x) {
    word sum = 0, mask = 0;
    for (int r = 0; r < ranks; ++r) {
        const word v = x + static_cast<word>(r);
        sum += v * v + 1000 * static_cast<word>(r);
        mask |= word{1} << r;
    }
    return sum | (mask << 48);
}

/// The program described above (tests/tam, tests/trace).
inline am::tam::program square_program() {
    am::tam::codeblock_def root = codeblock("square_root", 3);
    root.threads = {
        {[](frame& f) {
             f.set_count(q_sum, static_cast<std::uint32_t>(f.ranks()));
             for (int r = 0; r < f.ranks(); ++r) {
                 f.call(1, r, 0, {f.self().as_word(), am::tam::to_word(r), f.slot(0)});
             }
         },
         1, "t0"},
        {[](frame& f) { f.finish(f.slot(1) | (f.slot(2) << 48)); }, runtime_count, "sum"},
    };
    root.inlets = {
        [](frame& f, std::span<const word> a) {
            f.slot(0) = a[0];
            f.slot(1) = f.slot(2) = 0;
            f.post(q_t0);
        },
        [](frame& f, std::span<const word> a) {  // {rank, value, caller rank seen}
            const bool caller_ok = a[2] == 0;
            f.slot(1) += caller_ok ? a[1] : 0;
            f.slot(2) |= word{1} << a[0];
            f.post(q_sum);
        },
    };
    am::tam::codeblock_def sq = codeblock("square", 3);
    sq.threads = {{[](frame& f) {
        const frame_ref caller = frame_ref::from(f.slot(0));
        const int r = am::tam::from_word<int>(f.slot(1));
        const word v = f.slot(2) + static_cast<word>(r);
        const word value = f.rank() == r ? v * v + 1000 * static_cast<word>(f.rank()) : 0;
        f.send(caller, 1, {static_cast<word>(f.rank()), value, static_cast<word>(caller.rank())});
        f.release();
    }}};
    sq.inlets = {[](frame& f, std::span<const word> a) {
        f.slot(0) = a[0];
        f.slot(1) = a[1];
        f.slot(2) = a[2];
        f.post(0);
    }};
    return program_of(std::move(root), std::move(sq));
}

/// What this rank's TAM threads and inlets did, counted by the test programs themselves (TAM
/// code runs on the rank's own thread, so a thread_local is the rank's).
struct tally {
    std::uint64_t threads = 0, inlets = 0, frames = 0, released = 0;
};
inline tally& my_tally() {
    static thread_local tally t;
    return t;
}

/// A trace of events on this rank (1-rank order tests).
inline std::vector<int>& trace() {
    static thread_local std::vector<int> t;
    return t;
}

/// The hang guard (tests/support/watchdog.hpp): watchdog dog("what", seconds).
using am_test::watchdog;

/// What am::tam::run threw on each rank of a failing job (read by the test process).
struct error_board {
    static constexpr int max_ranks = 8;
    std::atomic<int> thrown[max_ranks] = {};  // 1: run threw am::error on that rank
    std::atomic<int> code[max_ranks] = {};
    std::atomic<int> returned[max_ranks] = {};  // 1: run returned normally
    am_test::fixed_string<1024> what[max_ranks];

    /// Rank code: runs `f` (which calls am::tam::run), recording what it threw; rethrows.
    template <class F>
    void record(am::context& ctx, F&& f) {
        const int r = ctx.rank();
        try {
            f();
            returned[r] = 1;
        } catch (const am::error& e) {
            code[r] = static_cast<int>(e.code());
            what[r].set(e.what());
            thrown[r] = 1;
            throw;
        }
    }
    /// Ranks that threw something other than errc::aborted.
    [[nodiscard]] std::vector<int> raisers(int ranks) const {
        std::vector<int> v;
        for (int r = 0; r < ranks; ++r) {
            if (thrown[r].load() && code[r].load() != static_cast<int>(am::errc::aborted)) {
                v.push_back(r);
            }
        }
        return v;
    }
    [[nodiscard]] std::string dump(int ranks) const {
        std::string s;
        for (int r = 0; r < ranks; ++r) {
            s += "\n  rank " + std::to_string(r) + ": ";
            if (thrown[r].load()) {
                s += "code " + std::to_string(code[r].load()) + ": " + what[r].str();
            } else {
                s += returned[r].load() ? "returned" : "nothing recorded";
            }
        }
        return s;
    }
};

}  // namespace am_tam_test
