// SPDX-License-Identifier: MIT
#include "registry.hpp"

#include "mpi/mpi_transport.hpp"
#include "shm/shm_transport.hpp"
#include "threads/threads_transport.hpp"

#include <vector>

namespace am::transport {

void transport::allreduce_sum(const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                              const idle_fn& idle) {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size()) * n);
    allgather(in, all.data(), n * sizeof(std::uint64_t), idle, {});
    for (std::size_t i = 0; i < n; ++i) out[i] = 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(size()); ++r) {
        for (std::size_t i = 0; i < n; ++i) out[i] += all[r * n + i];
    }
}

int launch(const config& cfg, const rank_body& body) {
    if (shm::launched_as_rank()) return shm::run_launched_rank(body);
    switch (cfg.transport) {
        case transport_kind::threads:
            return threads::launch(cfg, body);
        case transport_kind::shm:
            return shm::launch(cfg, body);
        case transport_kind::mpi:
            return mpi::launch(cfg, body);
    }
    return 1;
}

}  // namespace am::transport
