// SPDX-License-Identifier: MIT
// shm: ranks are processes on one host. The job region (rings, segments, job state) is a memfd
// created by the launcher, without a name: forked ranks inherit its mapping, exec'd ranks its
// descriptor (AM_SHM_FD), so nothing is ever left in /dev/shm, whoever dies.
// The launcher supervises the ranks: one that dies, or exits before finishing `am::run`,
// marks the job failed, and ranks that do not stop within 3 s are killed.
#pragma once

#include "../registry.hpp"
#include "../ring/region.hpp"

namespace am::transport::shm {

/// Seconds the launcher waits after a failure before it kills the ranks still running.
inline constexpr int kill_grace_seconds = ring::stop_grace_seconds;

/// True in a process started by a launcher (`amrun`) as one rank of a shm job.
bool launched_as_rank();

/// Attaches to the launcher's region as this process's rank and runs `body`. May be called
/// again for a further run of the same job (the descriptor stays open).
int run_launched_rank(const rank_body& body);

/// Forks `cfg.ranks` ranks of the calling program, runs `body` in each, supervises them and
/// returns the job's status. The calling process itself runs no rank.
int launch(const config& cfg, const rank_body& body);

/// For `amrun`: starts `argv` (a program and its arguments) as `cfg.ranks` processes that
/// attach to a new region, supervises them and returns the job's status.
int launch_exec(const config& cfg, char* const* argv);

}  // namespace am::transport::shm
