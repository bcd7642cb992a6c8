// SPDX-License-Identifier: MIT
/// @file
/// The cache-line hop measured by the MPI programs (included by them only: needs <mpi.h>).
#pragma once

#include "sys.hpp"

#include <mpi.h>

#include <new>
#include <vector>

namespace am::bench {

/// The raw cache-line hop between the cores of ranks 0 and 1 of `comm` (two ranks on one host;
/// by default MPI_COMM_WORLD) through an MPI shared-memory window, as the am runs measure it:
/// tells whether the am and the MPI run had their cores equally far apart. Collective; rank 0
/// gets the one-way µs per repetition, other ranks (and every rank when the window cannot be
/// created, or the ranks are on different hosts) an empty vector.
inline std::vector<double> mpi_cacheline_hop(int rank, int reps, MPI_Comm comm = MPI_COMM_WORLD) {
    // Ranks on different hosts (e.g. emulated hosts, scripts/multihost.sh) share no window:
    // no hop then, rather than an MPI_Win_allocate_shared that fails the job.
    MPI_Comm host;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
    int on_host = 0, all = 0;
    MPI_Comm_size(host, &on_host);
    MPI_Comm_size(comm, &all);
    MPI_Comm_free(&host);
    int one_host = on_host == all ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &one_host, 1, MPI_INT, MPI_MIN, comm);
    if (one_host == 0) return {};
    MPI_Win win;
    void* mine = nullptr;
    const MPI_Aint bytes = rank == 0 ? static_cast<MPI_Aint>(sizeof(hop_lines)) : 0;
    if (MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, comm, &mine, &win) != MPI_SUCCESS) {
        return {};
    }
    MPI_Aint size = 0;
    int disp = 0;
    void* lines = nullptr;
    MPI_Win_shared_query(win, 0, &size, &disp, &lines);
    if (rank == 0) new (lines) hop_lines{};
    MPI_Barrier(comm);
    auto v = cacheline_hop(*static_cast<hop_lines*>(lines), rank, reps, 20000);
    MPI_Barrier(comm);
    MPI_Win_free(&win);
    return v;
}

}  // namespace am::bench
