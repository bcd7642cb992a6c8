// SPDX-License-Identifier: MIT
/// @file
/// The main of every MPI baseline (included by them only: needs <mpi.h>): MPI_Init, the shared
/// options, the checks of the mode and the job size, the run, MPI_Finalize.
#pragma once

#include "options.hpp"

#include <mpi.h>

#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace am::bench {

/// Runs `run(o, rank, size)` in an MPI job, `o` parsed from argv (the shared table extended
/// by `extra`), after checking that the positional mode is one of `modes` and that the job has
/// `ranks` processes (0: any); aborts the job with status 2 otherwise, rank 0 saying why.
/// Returns `run`'s status.
template <class Run>
int mpi_baseline_main(int argc, char** argv, const char* name, const char* summary,
                      std::initializer_list<std::string_view> modes, int ranks, Run&& run,
                      std::span<const option_spec> extra = {}) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    options o = parse_options(argc, argv, summary, extra);
    std::string why;
    try {
        (void)to_choice("mode", o.mode, modes);
    } catch (const std::exception& e) {
        why = e.what();
    }
    if (why.empty() && ranks != 0 && size != ranks) {
        why = "needs exactly " + std::to_string(ranks) + " ranks, got " + std::to_string(size);
    }
    if (!why.empty()) {
        if (rank == 0) std::fprintf(stderr, "%s: %s\n", name, why.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int status = run(o, rank, size);
    MPI_Finalize();
    return status;
}

}  // namespace am::bench
