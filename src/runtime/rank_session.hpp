// SPDX-License-Identifier: MIT
// One rank of a job: context, layers, the rank function, quiescence (src/runtime/run.cpp).
// `rank_session` is the part before and after the rank function, shared by `am::run` (every
// transport) and `am::mpi_session` (include/am/mpi.hpp).
#pragma once

#include "../core/context_impl.hpp"
#include "../transport/transport.hpp"
#include "layers.hpp"

#include <am/context.hpp>

#include <exception>

namespace am::detail {

/// The runtime's collective: the quiescence after the rank function returned.
inline constexpr transport::coll_kind end_of_run{runtime_coll_part, 1};

/// The rank `tp` belongs to, set up: its context, the layers (registered first,
/// identically on every rank, before any message can be dispatched) and, when configured, the
/// progress thread. Used by the rank's thread.
class rank_session {
  public:
    /// Throws am::error when the context cannot be set up.
    rank_session(transport::transport& tp, const config& cfg,
                 std::span<const runtime::layer_entry> extra = {});
    /// Stops the progress thread before the layers and the context go, also when the rank
    /// function threw.
    ~rank_session();
    rank_session(const rank_session&) = delete;
    rank_session& operator=(const rank_session&) = delete;

    /// The context handed to the rank function.
    [[nodiscard]] context& ctx() noexcept { return _impl.front(); }
    /// The rank function has returned: waits until every message of the job has been handled
    /// (collective), stops the progress thread, prints the statistics when asked and marks the
    /// rank finished. Throws am::error (errc::aborted when another rank failed).
    void finish();
    /// Stops the progress thread (no-op without one). Not from a handler the progress thread
    /// runs.
    void stop_progress() noexcept { _impl.stop_progress_thread(); }

  private:
    transport::transport& _tp;
    bool _print_stats;
    context_impl _impl;
    runtime::layer_stack _layers;
};

/// Runs `fn` as the rank `tp` belongs to; returns 0, or 1 after printing why the rank failed
/// (and failing the job when the failure started here).
int run_rank(transport::transport& tp, const config& cfg, const rank_main& fn,
             std::span<const runtime::layer_entry> extra = {});

/// Reports `failure` (an exception caught on this rank) on stderr, naming the rank, and fails
/// the job when the failure started here (anything but errc::aborted, which means another rank
/// failed first). Returns 1, the rank's exit status.
int rank_failed(transport::transport& tp, const std::exception_ptr& failure) noexcept;

}  // namespace am::detail
