// SPDX-License-Identifier: MIT
// Test support for the optimistic-handler and RPC tests: neighbours, bounded waits that end
// the job with a message instead of hanging, the counts the stress-like tests scale by.
#pragma once

#include "support/expect.hpp"

#include <am/future.hpp>
#include <am/oam.hpp>
#include <am/rpc.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

namespace am_oam_test {

using am_test::expect_error;

inline int right_of(const am::context& ctx) {
    return (ctx.rank() + 1) % ctx.size();
}
inline int left_of(const am::context& ctx) {
    return (ctx.rank() + ctx.size() - 1) % ctx.size();
}

/// Fixture of the oam tests (the transport and rank count are the parameter).
class oam_test : public am_test::spmd_test {
  protected:
    /// Runs rank code `fn` on every rank of a job that must succeed.
    void run_ok(const am_test::rank_fn& fn, const am_test::tweak_fn& tweak = {}) const {
        ASSERT_EQ(run(fn, tweak), 0);
    }
};

/// The tweak of the progress-thread variants.
inline void progress_thread(am::config& cfg) {
    cfg.progress_thread = true;
}

/// The tweak of a test's variant: `tweak` (if any), then a progress thread if `on`, else none.
inline am_test::tweak_fn progress_thread_if(bool on, am_test::tweak_fn tweak = {}) {
    return [on, tweak = std::move(tweak)](am::config& cfg) {
        if (tweak) tweak(cfg);
        cfg.progress_thread = on;
    };
}

/// Defines TEST_P(fixture, name), which runs rank code `fn` on every rank without a progress
/// thread, and TEST_P(fixture, name_progress_thread), which runs it with one; `...`: a tweak of
/// the configuration both apply first (optional).
#define AM_OAM_TEST_BOTH(fixture, name, fn, ...)                                                   \
    TEST_P(fixture, name) {                                                                        \
        ASSERT_EQ(run(fn, ::am_oam_test::progress_thread_if(false __VA_OPT__(, ) __VA_ARGS__)),    \
                  0);                                                                              \
    }                                                                                              \
    TEST_P(fixture, name##_progress_thread) {                                                      \
        ASSERT_EQ(run(fn, ::am_oam_test::progress_thread_if(true __VA_OPT__(, ) __VA_ARGS__)), 0); \
    }

/// Rank code: polls until `pred()` holds; after `seconds` the job is aborted naming `what` (a
/// blocked handler that never resumes would otherwise hang the test until CTest kills it).
template <class Pred>
void wait_until(am::context& ctx, Pred pred, const std::string& what, double seconds = 20) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(seconds));
    ctx.wait([&] { return pred() || std::chrono::steady_clock::now() > until; });
    if (!pred()) {
        ADD_FAILURE() << "rank " << ctx.rank() << ": timed out waiting for " << what;
        ctx.abort("am_oam_test: rank " + std::to_string(ctx.rank()) + " timed out waiting for " +
                  what);
    }
}

/// Rank code: registers the remote functions `Fns` (the same on every rank), then waits at a
/// barrier, so that no rank calls one before every rank has registered it.
template <auto... Fns>
void register_rpcs(am::context& ctx) {
    ((void)am::rpc_register<Fns>(ctx), ...);
    ctx.barrier();
}

/// Rank code: waits until counter `c` has reached `n` (bounded as wait_until).
inline void wait_count(am::context& ctx, const am::counter& c, std::uint64_t n,
                       const std::string& what, double seconds = 20) {
    wait_until(
        ctx, [&] { return c.test(n); }, what, seconds);
}

/// Rank code: waits until `n` optimistic handlers of this rank are blocked at once.
inline void wait_blocked(am::context& ctx, std::uint64_t n, const std::string& what) {
    wait_until(
        ctx, [&] { return am::optimistic_stats(ctx).live >= n; },
        std::to_string(n) + " blocked handlers (" + what + ")");
}

/// A count from the environment (set by CTest, smaller under sanitizers), else `fallback`.
inline std::uint64_t env_count(const char* var, std::uint64_t fallback) {
    const char* s = std::getenv(var);
    if (s == nullptr || *s == '\0') return fallback;
    const std::uint64_t v = std::strtoull(s, nullptr, 10);
    return v == 0 ? fallback : v;
}

/// The optimistic-handler counters gained between two readings.
struct stats_delta {
    std::uint64_t handlers, blocked, resumes;
};
inline stats_delta gained(const am::oam_stats& before, const am::oam_stats& after) {
    return {after.handlers - before.handlers, after.blocked - before.blocked,
            after.resumes - before.resumes};
}

}  // namespace am_oam_test
