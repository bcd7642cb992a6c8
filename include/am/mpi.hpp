// SPDX-License-Identifier: MIT
/// @file
/// `am` inside an MPI program: run active-message phases on the program's own communicator.
///
/// Available when `am` was built with MPI (`AM_WITH_MPI=ON` and MPI found; the CMake package
/// then defines `AM_HAVE_MPI`). Including this header pulls in `<mpi.h>`.
///
/// Ownership of MPI: whoever initialises MPI finalises it. If the program called `MPI_Init`
/// (or `MPI_Init_thread`) before `am::run`, `am` never calls `MPI_Finalize`; otherwise `am`
/// initialises MPI on first use and finalises it at process exit (an exit while an `am` job is
/// still open aborts the job instead: see `run`). `am` never communicates on
/// `MPI_COMM_WORLD` or on the caller's communicator: it works on a duplicate it frees when
/// `run` returns, so the program's own messages and collectives are never matched by `am`.
///
/// Threads: without a progress thread the thread that calls `am::run` makes every MPI call of
/// the phase, so any thread level works (below `MPI_THREAD_SERIALIZED`, call `run` from the
/// thread that initialised MPI). A progress thread (`AM_PROGRESS_THREAD=1`) needs
/// `MPI_THREAD_MULTIPLE`. When `am` initialises MPI itself it asks for `MPI_THREAD_SINGLE`
/// (Open MPI is markedly slower at higher levels), or MULTIPLE with a progress thread.
/// Anything else is `errc::invalid_argument` naming the levels.
#pragma once

#include <am/config.hpp>
#include <am/context.hpp>

#include <mpi.h>

#include <exception>
#include <memory>
#include <string_view>

namespace am {

/// An `am` job on an MPI communicator held open between two points of the program instead of
/// around a function: the non-scoped form of `am::run(MPI_Comm, ...)` (which is built on it),
/// for libraries with init/finalize calls (such as the AML API in compat/aml).
///
/// The constructor does what `run` does before calling the rank function: collective over
/// `comm`, it sets up the transport (mpi, whatever `cfg.transport` says; `cfg.ranks` is
/// ignored), this rank's context and the model layers, and starts the progress thread when
/// configured. `finish()` (or the destructor) does what `run` does after it: waits until every
/// message sent by any rank has been handled (collective), then tears the job down and frees
/// `am`'s duplicates of `comm`. MPI ownership and threads: as for `run` (see the file comment).
///
/// Failure, as in `run`: a rank that fails brings the whole MPI job down, after every
/// reachable rank printed a message naming it; `exit()` while the session is open is such a
/// failure (see `run`). Catch exceptions thrown by `am` (or by your own code) while the
/// session is open and pass them to `fail`; `finish` does so itself. A session destroyed by an
/// exception (stack unwinding) also fails the job, without the exception's text.
///
/// Thread-safety and lifetime: used by the thread that created it (the one that makes the MPI
/// calls). Not inside `am::run` or another open session of the same process. `ctx()` is valid
/// until `finish`. Not copyable or movable.
class mpi_session {
  public:
    /// Opens the session on `comm` (collective). Throws `am::error` when it cannot start (MPI
    /// finalised, wrong thread level, bad configuration) before the transport exists; a
    /// failure after that brings the job down like `fail`.
    mpi_session(MPI_Comm comm, const config& cfg);
    /// As above with `config::from_env()`.
    explicit mpi_session(MPI_Comm comm);
    /// Calls `finish()` if it has not been called, or fails the job when the destructor runs
    /// because of an exception.
    ~mpi_session();
    mpi_session(const mpi_session&) = delete;
    mpi_session& operator=(const mpi_session&) = delete;

    /// This rank's context (rank `MPI_Comm_rank(comm)` of `MPI_Comm_size(comm)`); valid until
    /// `finish`. Calling it after `finish` throws `am::error` (errc::bad_context).
    [[nodiscard]] context& ctx() const;
    /// True once `finish` has returned.
    [[nodiscard]] bool finished() const noexcept { return _s == nullptr; }

    /// Collective: returns when every message sent by any rank (nested ones too) has been
    /// handled and the job is torn down (the rank's part of `am::run` after its function). Any
    /// failure on the way brings the job down (never returns then). A no-op after the first
    /// call. Not callable from a handler.
    void finish();

    /// Brings the whole MPI job down because of `failure`, caught on this rank: prints it on
    /// stderr naming this rank, tells the other ranks (errc::aborted, which says another rank
    /// failed first, is only printed), stops the progress thread and ends the job with
    /// `MPI_Abort` once the notices had time to leave. Never returns. From the session's
    /// thread, also from a handler that thread runs (not from the progress thread).
    [[noreturn]] void fail(const std::exception_ptr& failure) noexcept;
    /// As above with a reason of your own (an `am::error` carrying `reason`).
    [[noreturn]] void fail(std::string_view reason) noexcept;

  private:
    struct state;
    std::unique_ptr<state> _s;
    int _uncaught = 0;  // std::uncaught_exceptions() when the session opened
};

/// Runs `fn` once on every process of `comm` (collective over `comm`), with this process as
/// rank `MPI_Comm_rank(comm)` of an `am` job of `MPI_Comm_size(comm)` ranks, then waits until
/// every message of the phase has been handled, as `am::run` does (an `mpi_session` around
/// `fn`). The transport is mpi whatever `cfg.transport` says; `cfg.ranks` is ignored.
/// Processes of `comm` on one host reach each other through shared memory (see
/// `config::node_size`).
///
/// Returns 0 when the phase completed on every rank. A rank that throws, or a peer that dies,
/// brings the whole MPI job down (`MPI_Abort` on `MPI_COMM_WORLD`, after every reachable rank
/// printed a message naming the failed rank): an MPI job cannot continue with a rank missing. A
/// peer that stops answering (its host's links cut, its process stopped) is found by heartbeats
/// when the job spans hosts (`config::heartbeat`, docs/transports.md "Lost hosts"). So
/// does `exit()` (any status, also 0) in this process before `run` returns, from `fn`, a handler or
/// any thread: the rank prints `am: rank R called exit(S) before finishing am::run` and ends
/// the job with `MPI_Abort` (status S, 1 for 0) instead of hanging in `MPI_Finalize`. Exit
/// handlers registered after the first am job of the process opened run before that check.
/// Call it from one thread per process; not from inside another `am::run`.
int run(MPI_Comm comm, const config& cfg, const rank_main& fn);
/// As above with `config::from_env()`.
int run(MPI_Comm comm, const rank_main& fn);

}  // namespace am
