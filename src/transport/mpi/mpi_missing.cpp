// SPDX-License-Identifier: MIT
// The mpi transport of a build without MPI: asking for it is a clear error.
#include "mpi_transport.hpp"

#include <am/error.hpp>

namespace am::transport::mpi {

int launch(const config& /*cfg*/, const rank_body& /*body*/) {
    throw error(errc::invalid_argument,
                "am::run: the mpi transport was requested (AM_TRANSPORT=mpi or an MPI launcher) "
                "but this build of am has no MPI: install MPI (e.g. libopenmpi-dev) and "
                "configure with AM_WITH_MPI=ON");
}

}  // namespace am::transport::mpi
