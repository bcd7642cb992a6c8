// SPDX-License-Identifier: MIT
// am::run: starts the ranks through the transport registry and runs the rank function in a
// context on each, then waits for quiescence so no message is lost at the end.
#include "../transport/registry.hpp"
#include "rank_session.hpp"

#include <am/context.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace am {
namespace {

int report_failure(transport::transport& tp, const char* what, bool caused_here) noexcept {
    try {
        if (caused_here && !tp.job_failed()) {
            tp.fail_job("rank " + std::to_string(tp.rank()) + " failed: " + what);
        }
        // am::error messages already name the rank; anything else gets it here.
        const std::string prefix = "rank " + std::to_string(tp.rank()) + ": ";
        const bool named = std::string(what).find(prefix) != std::string::npos;
        std::fprintf(stderr, "am: %s%s\n", named ? "" : prefix.c_str(), what);
    } catch (...) {
        std::fprintf(stderr, "am: rank %d: %s\n", tp.rank(), what);
    }
    return 1;
}

}  // namespace

int detail::rank_failed(transport::transport& tp, const std::exception_ptr& failure) noexcept {
    try {
        std::rethrow_exception(failure);
    } catch (const error& e) {
        return report_failure(tp, e.what(), e.code() != errc::aborted);
    } catch (const std::exception& e) {
        return report_failure(tp, e.what(), true);
    } catch (...) {
        return report_failure(tp, "unknown exception", true);
    }
}

detail::rank_session::rank_session(transport::transport& tp, const config& cfg,
                                   std::span<const runtime::layer_entry> extra)
    : _tp(tp), _print_stats(cfg.print_stats), _impl(tp, cfg), _layers(_impl.front(), cfg, extra) {
    tp.collective_names().add(
        end_of_run,
        {"am::run", " returned from the rank function (the quiescence at the end of am::run)",
         false});
    // The layers registered their handlers above, before any message can be dispatched here
    // (no poll has run, no progress thread yet).
    _impl.register_trace_handler();
    _impl.seal_builtin();
    if (cfg.progress_thread) _impl.start_progress_thread();
    // AM_TRACE applies to every run, also of programs that build their config in code (the
    // benchmarks, am-graph500): it is a switch for whoever runs the program.
    const char* env = std::getenv("AM_TRACE");
    const std::string trace = !cfg.trace_path.empty() ? cfg.trace_path : env != nullptr ? env : "";
    if (!trace.empty()) _impl.trace_start(trace, "AM_TRACE");
}

detail::rank_session::~rank_session() {
    _impl.stop_progress_thread();
}

void detail::rank_session::finish() {
    _impl.quiesce(end_of_run);
    if (_impl.trace() != nullptr) {  // AM_TRACE, or a trace_start without its stop
        _impl.trace_stop("am::run (AM_TRACE)");
        _impl.quiesce(end_of_run);  // the trace's own messages
    }
    _impl.stop_progress_thread();
    if (_print_stats) {
        std::fputs((_impl.snapshot().to_string() + _layers.report()).c_str(), stderr);
    }
    _tp.mark_finished();
}

int detail::run_rank(transport::transport& tp, const config& cfg, const rank_main& fn,
                     std::span<const runtime::layer_entry> extra) {
    try {
        detail::rank_session session(tp, cfg, extra);
        fn(session.ctx());
        session.finish();
        return 0;
    } catch (...) {
        return rank_failed(tp, std::current_exception());
    }
}

int runtime::run_with_layers(const config& cfg, std::span<const layer_entry> extra,
                             const rank_main& fn) {
    try {
        return transport::launch(
            cfg, [&](transport::transport& tp) { return detail::run_rank(tp, cfg, fn, extra); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am: %s\n", e.what());
        return 1;
    }
}

int run(const config& cfg, const rank_main& fn) {
    return runtime::run_with_layers(cfg, {}, fn);
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
