// SPDX-License-Identifier: MIT
// Setting MPI up for a job: initialisation and thread level.
#include "setup.hpp"

#include "check.hpp"

#include <am/error.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace am::transport::mpi {
namespace {

const char* level_name(int level) {
    switch (level) {
        case MPI_THREAD_SINGLE:
            return "MPI_THREAD_SINGLE";
        case MPI_THREAD_FUNNELED:
            return "MPI_THREAD_FUNNELED";
        case MPI_THREAD_SERIALIZED:
            return "MPI_THREAD_SERIALIZED";
        default:
            return "MPI_THREAD_MULTIPLE";
    }
}

extern "C" void finalize_at_exit() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

}  // namespace

void ensure_initialized(bool progress_thread) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) {
        throw error(errc::invalid_argument,
                    "am::run: mpi transport: MPI has already been finalised in this process");
    }
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
        // Above MPI_THREAD_SINGLE, Open MPI 4 takes locks on every send and match (25-45 %
        // slower here): without a progress thread only the calling thread makes MPI calls.
        const int wanted = progress_thread ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
        check(MPI_Init_thread(nullptr, nullptr, wanted, &provided), "MPI_Init_thread");
        std::atexit(finalize_at_exit);
    } else {
        MPI_Query_thread(&provided);
    }
    if (progress_thread && provided < MPI_THREAD_MULTIPLE) {
        throw error(errc::invalid_argument,
                    std::string("am::run: mpi transport: MPI provides ") + level_name(provided) +
                        ", a progress thread (AM_PROGRESS_THREAD=1) needs MPI_THREAD_MULTIPLE; "
                        "initialise MPI with MPI_Init_thread at that level");
    }
    int is_main = 1;
    MPI_Is_thread_main(&is_main);
    if (provided < MPI_THREAD_SERIALIZED && !is_main) {
        throw error(errc::invalid_argument,
                    std::string("am::run: mpi transport: MPI provides ") + level_name(provided) +
                        ": call am::run from the thread that initialised MPI, or initialise "
                        "MPI with MPI_Init_thread at MPI_THREAD_SERIALIZED or above");
    }
}

}  // namespace am::transport::mpi
