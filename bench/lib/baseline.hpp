// SPDX-License-Identifier: MIT
/// @file
/// Runs an MPI baseline (bench/core/mpi_baseline.cpp, bench/rma/mpi_rma_baseline.cpp,
/// bench/typed/mpi_typed_baseline.cpp) as a child job in the same invocation:
/// `mpirun -n <ranks> --bind-to core <program> <mode> <options>`, forwarding its JSON lines.
#pragma once

#include "options.hpp"
#include "report.hpp"

#include <string>
#include <vector>

namespace am::bench {

/// Exit status of an am benchmark whose own figures are fine but whose MPI baseline, wanted
/// (no --no-baseline), could not be run: the comparison the program exists for is missing.
inline constexpr int no_baseline_status = 3;

/// The MPI programs an am benchmark can start.
enum class mpi_program {
    baseline,  ///< bench/core/mpi_baseline.cpp: ping-pong and flood (two-sided)
    rma,       ///< bench/rma/mpi_rma_baseline.cpp: MPI_Put/MPI_Get in a passive-target epoch
    typed,     ///< bench/typed/mpi_typed_baseline.cpp: MPI_Alltoallv and MPI_Barrier
};

/// Launches `program` with `ranks` MPI ranks (placed as `mpirun_command` says: by default 2,
/// bound to cores 0 and 1 like the pinned am ranks) and adds every result line it prints to
/// `rep`. Returns false, after saying why on stderr, when the program was not built, mpirun
/// is missing, or the job failed.
bool run_mpi_program(const options& o, mpi_program program, const std::string& mode,
                     const std::vector<std::string>& args, reporter& rep, int ranks = 2,
                     bool bind = true);

/// `run_mpi_program` with mpi_baseline.
bool run_mpi_baseline(const options& o, const std::string& mode,
                      const std::vector<std::string>& args, reporter& rep);

/// The options a baseline child needs to measure what the am run measured.
std::vector<std::string> forwarded_options(const options& o);

/// `mpirun -n <ranks>` (the launcher of --mpirun, else the one of the build's MPI, -DAM_MPI)
/// and the placement of the baseline: with a core per rank, rank r bound to core r
/// (`--bind-to core --map-by core`); otherwise, or when `bind` is false, unbound (`--bind-to
/// none --map-by core`, with Open MPI's `--oversubscribe` when there are more ranks than
/// cores). Options that both Open MPI and MPICH (Hydra) take, except `--oversubscribe`.
std::vector<std::string> mpirun_command(const options& o, int ranks, bool bind);

/// Whether the build's MPI is Open MPI, whose launcher takes options (`--mca`,
/// `--oversubscribe`) and environment variables (`OMPI_*`) that MPICH's does not.
bool launcher_is_open_mpi();

/// What became of a child started by `run_collecting`.
struct child_outcome {
    int status;   ///< exit status; -1 when it could not be started or was killed by a signal
    int results;  ///< result lines read from its stdout
};

/// Runs `argv` (with `env`, "NAME=value" entries, added to the environment) and adds every
/// result line it prints on stdout to `rep`; other lines go to stderr. From inside an MPI job
/// the child gets an environment without the job's launcher variables and every core of the
/// machine, so that it can start an MPI job of its own.
child_outcome run_collecting(std::vector<std::string> argv, const std::vector<std::string>& env,
                             reporter& rep);

/// This executable (/proc/self/exe), or empty.
std::string self_path();

}  // namespace am::bench
