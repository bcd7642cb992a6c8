// SPDX-License-Identifier: MIT
// am::run: starts the ranks through the transport registry and runs the rank function in a
// context on each, then waits for quiescence so no message is lost at the end.
#include "../models/model_set.hpp"
#include "../transport/registry.hpp"
#include "context_impl.hpp"
#include "run_rank.hpp"

#include <am/context.hpp>

#include <cstdio>
#include <exception>
#include <string>

namespace am {
namespace {

int rank_failed(transport::transport& tp, const char* what, bool caused_here) {
    if (caused_here && !tp.job_failed()) {
        tp.fail_job("rank " + std::to_string(tp.rank()) + " failed: " + what);
    }
    // am::error messages already name the rank; anything else gets it here.
    const std::string prefix = "rank " + std::to_string(tp.rank()) + ": ";
    const bool named = std::string(what).find(prefix) != std::string::npos;
    std::fprintf(stderr, "am: %s%s\n", named ? "" : prefix.c_str(), what);
    return 1;
}

}  // namespace

int detail::run_rank(transport::transport& tp, const config& cfg, const rank_main& fn) {
    try {
        detail::context_impl impl(tp, cfg);
        // The model layers register their handlers first, identically on every rank, before
        // any message can be dispatched here (no poll has run, no progress thread yet).
        detail::model_set models(impl.front(), cfg);
        impl.front().attach_models(&models);
        impl.seal_builtin();
        // Stops the progress thread before the models go, also when the rank function throws.
        struct progress_stopper {
            detail::context_impl& impl;
            ~progress_stopper() { impl.stop_progress_thread(); }
        } stopper{impl};
        if (cfg.progress_thread) impl.start_progress_thread();
        fn(impl.front());
        impl.quiesce();
        impl.stop_progress_thread();
        if (cfg.print_stats) {
            std::fputs((impl.snapshot().to_string() + models.typed().report()).c_str(), stderr);
        }
        tp.mark_finished();
        return 0;
    } catch (const error& e) {
        return rank_failed(tp, e.what(), e.code() != errc::aborted);
    } catch (const std::exception& e) {
        return rank_failed(tp, e.what(), true);
    } catch (...) {
        return rank_failed(tp, "unknown exception", true);
    }
}

int run(const config& cfg, const rank_main& fn) {
    try {
        return transport::launch(
            cfg, [&](transport::transport& tp) { return detail::run_rank(tp, cfg, fn); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am: %s\n", e.what());
        return 1;
    }
}

int run(int /*argc*/, char** /*argv*/, const rank_main& fn) {
    config cfg;
    try {
        cfg = config::from_env();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am: %s\n", e.what());
        return 1;
    }
    return run(cfg, fn);
}

}  // namespace am
