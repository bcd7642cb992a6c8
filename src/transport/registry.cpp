// SPDX-License-Identifier: MIT
#include "registry.hpp"

#include "mpi/mpi_transport.hpp"
#include "shm/shm_transport.hpp"
#include "threads/threads_transport.hpp"

namespace am::transport {

int launch(const config& cfg, const rank_body& body) {
    if (shm::launched_as_rank()) return shm::run_launched_rank(body);
    switch (cfg.transport) {
        case transport_kind::threads:
            return threads::launch(cfg, body);
        case transport_kind::shm:
            return shm::launch(cfg, body);
        case transport_kind::mpi:
        case transport_kind::ucx:  // an mpi job whose remote peers are reached through UCX
            return mpi::launch(cfg, body);
    }
    return 1;
}

}  // namespace am::transport
