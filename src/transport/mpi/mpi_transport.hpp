// SPDX-License-Identifier: MIT
// mpi: ranks are the processes of an MPI job. Peers of the same node (same host, at most
// `config::node_size` of them) share a ring region in POSIX shared memory, exactly as on the
// shm transport; every other peer is reached with MPI point-to-point messages on a private
// duplicate of the job's communicator (GASNet's PSHM arrangement). See docs/transports.md.
#pragma once

#include "../registry.hpp"

#ifdef AM_HAVE_MPI
#include <mpi.h>
#endif

namespace am::transport::mpi {

/// Runs `body` as this process's rank of a job over (a duplicate of) MPI_COMM_WORLD,
/// initialising MPI first if nobody has. Throws am::error when am was built without MPI.
int launch(const config& cfg, const rank_body& body);

#ifdef AM_HAVE_MPI
/// As `launch`, on (a duplicate of) the caller's communicator.
int launch_on(MPI_Comm comm, const config& cfg, const rank_body& body);
#endif

}  // namespace am::transport::mpi
