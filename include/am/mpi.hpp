// SPDX-License-Identifier: MIT
/// @file
/// `am` inside an MPI program: run active-message phases on the program's own communicator.
///
/// Available when `am` was built with MPI (`AM_WITH_MPI=ON` and MPI found; the CMake package
/// then defines `AM_HAVE_MPI`). Including this header pulls in `<mpi.h>`.
///
/// Ownership of MPI: whoever initialises MPI finalises it. If the program called `MPI_Init`
/// (or `MPI_Init_thread`) before `am::run`, `am` never calls `MPI_Finalize`; otherwise `am`
/// initialises MPI on first use and finalises it at process exit. `am` never communicates on
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

namespace am {

/// Runs `fn` once on every process of `comm` (collective over `comm`), with this process as
/// rank `MPI_Comm_rank(comm)` of an `am` job of `MPI_Comm_size(comm)` ranks, then waits until
/// every message of the phase has been handled, as `am::run` does. The transport is mpi
/// whatever `cfg.transport` says; `cfg.ranks` is ignored. Processes of `comm` on one host reach
/// each other through shared memory (see `config::node_size`).
///
/// Returns 0 when the phase completed on every rank. A rank that throws, or a peer that dies,
/// brings the whole MPI job down (`MPI_Abort` on `comm`, after every reachable rank printed a
/// message naming the failed rank): an MPI job cannot continue with a rank missing.
/// Call it from one thread per process; not from inside another `am::run`.
int run(MPI_Comm comm, const config& cfg, const rank_main& fn);
/// As above with `config::from_env()`.
int run(MPI_Comm comm, const rank_main& fn);

}  // namespace am
