// SPDX-License-Identifier: MIT
// Setting up the liveness watchdog (liveness.hpp) of an mpi job: whether heartbeats are on,
// the exchange of the ranks' UDP endpoints and the reachability probe (liveness_setup.cpp).
#pragma once

#include "liveness.hpp"
#include "node.hpp"

#include <am/config.hpp>

#include <mpi.h>

#include <chrono>
#include <memory>

namespace am::transport::mpi {

/// The heartbeat timeout of a job (0: heartbeats off): `config::heartbeat` when set; auto
/// (negative): `auto_heartbeat_timeout` when the job spans more than one host (this host has
/// fewer than all `size` ranks: MPI_Comm_split_type SHARED, before any AM_NODE_SIZE cap),
/// off on one host. Off with one rank.
std::chrono::milliseconds heartbeat_timeout(const config& cfg, int host_size, int size) noexcept;
inline constexpr std::chrono::milliseconds auto_heartbeat_timeout{5000};

/// Starts the job's watchdog when heartbeats are on for it; null when they are off. Collective
/// over `comm`: one MPI_Allgather of the ranks' endpoints (addresses, port, host name) and of
/// rank 0's random job id, a probe in which every rank waits up to `probe_limit` for a first
/// datagram from both ring neighbours, one MPI_Allgather of the outcome. When some pair did
/// not hear each other, rank 0 prints a warning naming it and heartbeats are off for the job
/// (never a false loss). Throws am::error on every rank, naming the rank, when one of them
/// could not set up (no socket, AM_HEARTBEAT_IF without an address).
std::unique_ptr<liveness> start_liveness(MPI_Comm comm, const config& cfg, int rank, int size,
                                         const node& nd, liveness_hooks hooks);

}  // namespace am::transport::mpi
