// SPDX-License-Identifier: MIT
// Setting MPI up for a job: initialisation and thread level (setup.cpp), and the size of the
// reduction that every bootstrap collective is.
#pragma once

#include "../transport.hpp"

#include <mpi.h>

#include <cstddef>

namespace am::transport::mpi {

/// Initialises MPI when nobody has (and finalises it at exit then); checks the thread level:
/// MULTIPLE with a progress thread; otherwise any level, as long as the calling thread may
/// make the MPI calls (below SERIALIZED: it must be the thread that initialised MPI).
void ensure_initialized(bool progress_thread);

// Words of a collective's reduction: the minimum and the complemented maximum of the ranks'
// collective words, then the counters to sum (mpi_transport.cpp, `reduce`).
inline constexpr std::size_t tagged_words = 2 + transport::max_reduce_words;

}  // namespace am::transport::mpi
