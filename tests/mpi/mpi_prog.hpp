// SPDX-License-Identifier: MIT
// What the MPI test programs of this folder (fault_prog.cpp, liveness_prog.cpp) share.
#pragma once

#include <am/am.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace am_mpi_prog {

/// am::config::from_env(); a variable it refuses ends the program with status 2 after
/// "<program>: <what was refused>" on stderr (the tests look for that text).
inline am::config config_from_env(const char* program) {
    try {
        return am::config::from_env();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        std::exit(2);
    }
}

}  // namespace am_mpi_prog
