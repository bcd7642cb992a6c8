// SPDX-License-Identifier: MIT
// am::run on an MPI communicator (include/am/mpi.hpp).
#include "../transport/mpi/mpi_transport.hpp"
#include "run_rank.hpp"

#include <am/mpi.hpp>

#include <cstdio>
#include <exception>

namespace am {

int run(MPI_Comm comm, const config& cfg, const rank_main& fn) {
    config c = cfg;
    c.transport = transport_kind::mpi;
    try {
        return transport::mpi::launch_on(
            comm, c, [&](transport::transport& tp) { return detail::run_rank(tp, c, fn); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am: %s\n", e.what());
        return 1;
    }
}

int run(MPI_Comm comm, const rank_main& fn) {
    config cfg;
    try {
        cfg = config::from_env();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am: %s\n", e.what());
        return 1;
    }
    return run(comm, cfg, fn);
}

}  // namespace am
