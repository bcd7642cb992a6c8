// SPDX-License-Identifier: MIT
// mpi: ranks are the processes of an MPI job. Peers of the same node (same host, at most
// `config::node_size` of them) share a ring region in POSIX shared memory, exactly as on the
// shm transport; every other peer is reached with MPI point-to-point messages on a private
// duplicate of the job's communicator (GASNet's PSHM arrangement). See docs/transports.md.
#pragma once

#include "../registry.hpp"

#include <memory>

#ifdef AM_HAVE_MPI
#include <mpi.h>
#endif

namespace am::transport::mpi {

/// Runs `body` as this process's rank of a job over (a duplicate of) MPI_COMM_WORLD,
/// initialising MPI first if nobody has. Throws am::error when am was built without MPI.
int launch(const config& cfg, const rank_body& body);

#ifdef AM_HAVE_MPI
/// This process's part of an am job on (duplicates of) an MPI communicator, open from the
/// constructor to `finish`: what `launch_on` does around the rank body, and what
/// `am::mpi_session` keeps open while the program runs. Used by one thread.
class job {
  public:
    /// Collective over `comm`: checks MPI (initialising it when nobody has, see
    /// include/am/mpi.hpp), duplicates `comm`, maps the node's shared memory and creates the
    /// transport. Throws am::error; nothing of the job is left then.
    job(MPI_Comm comm, const config& cfg);
    /// Releases what `finish` has not (only after a failure elsewhere: no drain, no abort).
    ~job();
    job(const job&) = delete;
    job& operator=(const job&) = delete;

    /// The transport of this rank; valid until `finish`.
    [[nodiscard]] transport& tp() noexcept;
    /// Ends the job. `status` 0 on a healthy job: drains the protocol with every peer and frees
    /// the communicators (collective; the rank must have quiesced and `mark_finished`).
    /// Otherwise (non-zero `status`, or the job failed meanwhile) brings the whole MPI job down
    /// with MPI_Abort after the failure messages had time to leave: does not return then; so
    /// does a malformed message from a peer met while draining.
    void finish(int status);

  private:
    struct state;
    std::unique_ptr<state> _s;
};

/// As `launch`, on (a duplicate of) the caller's communicator: a `job` around one call of
/// `body`.
int launch_on(MPI_Comm comm, const config& cfg, const rank_body& body);
#endif

}  // namespace am::transport::mpi
