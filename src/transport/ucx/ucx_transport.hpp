// SPDX-License-Identifier: MIT
// ucx: an mpi job (src/transport/mpi: launch, node rings, collectives, failures, heartbeats)
// whose peers off the node are reached through UCX instead of MPI point-to-point: core
// messages as UCP active messages (eager, or rendezvous when large), and one-sided put/get and
// atomics on the segments, registered with UCP when the job starts. See README.md here and
// docs/transports.md.
#pragma once

#include "../transport.hpp"

#include <memory>

#include <mpi.h>

namespace am::transport::ucx {

/// Wraps `inner`, this rank's mpi transport over `comm` (which must outlive the result): node
/// peers, collectives and failures stay with `inner`, every other peer is reached through a
/// UCP worker of this rank. Collective over `comm` (exchanges worker addresses and segment
/// keys). `locking`: a progress thread or thread_multiple shares the transport. Throws
/// am::error naming the UCX call that failed.
std::unique_ptr<transport> make(transport& inner, MPI_Comm comm, bool locking);

/// Ends the UCX side of a healthy job: completes every operation, closes the endpoints and
/// releases the worker (collective over the comm given to `make`; the rank has quiesced).
void finish(transport& ucx);

}  // namespace am::transport::ucx
