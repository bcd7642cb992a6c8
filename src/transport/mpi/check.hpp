// SPDX-License-Identifier: MIT
// MPI return codes to am::error: set-up and transport calls throw with MPI's own text.
#pragma once

#include <am/error.hpp>

#include <mpi.h>

#include <cstddef>
#include <string>

namespace am::transport::mpi {

[[noreturn]] inline void fail_mpi(const char* call, int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    throw error(errc::system, std::string("am: mpi transport: ") + call +
                                  " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

inline void check(int code, const char* call) {
    if (code != MPI_SUCCESS) [[unlikely]]
        fail_mpi(call, code);
}

}  // namespace am::transport::mpi
