// SPDX-License-Identifier: MIT
// Grouping the job's ranks into nodes and mapping each node's shared ring region.
#include "node.hpp"

#include "../ring/params.hpp"
#include "../ring/region.hpp"
#include "check.hpp"
#include "setup.hpp"

#include <am/error.hpp>

#include <sys/mman.h>

#include <cstdio>
#include <string>

namespace am::transport::mpi {
namespace {

constexpr std::size_t name_bytes = 64;

}  // namespace

node::~node() {
    if (private_base != nullptr) munmap(private_base, private_bytes);
}

void make_node(MPI_Comm comm, const config& cfg, int rank, int size, node& nd) {
    MPI_Comm host = MPI_COMM_NULL, group = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host),
          "MPI_Comm_split_type");
    int host_rank = 0;
    MPI_Comm_rank(host, &host_rank);
    MPI_Comm_size(host, &nd.host_size);
    const int color = cfg.node_size > 0 ? host_rank / cfg.node_size : 0;
    check(MPI_Comm_split(host, color, host_rank, &group), "MPI_Comm_split");
    MPI_Comm_free(&host);
    int n = 1;
    MPI_Comm_size(group, &n);
    MPI_Comm_rank(group, &nd.me);
    nd.global_of.assign(static_cast<std::size_t>(n), 0);
    check(MPI_Allgather(&rank, 1, MPI_INT, nd.global_of.data(), 1, MPI_INT, group),
          "MPI_Allgather");
    nd.local_of.assign(static_cast<std::size_t>(size), -1);
    for (int i = 0; i < n; ++i) nd.local_of[static_cast<std::size_t>(nd.global_of[i])] = i;

    config node_cfg = cfg;
    node_cfg.ranks = n;
    const ring::region_params p = ring::params_for(node_cfg);
    if (n == 1) {
        nd.private_bytes = ring::layout(p).total;
        nd.private_base = mmap(nullptr, nd.private_bytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (nd.private_base == MAP_FAILED) {
            nd.private_base = nullptr;
            MPI_Comm_free(&group);
            throw error(errc::system, "am::run: mpi transport: mmap of " +
                                          std::to_string(nd.private_bytes) + " bytes failed");
        }
        nd.base = static_cast<std::byte*>(nd.private_base);
        ring::initialize(nd.base, p);
        MPI_Comm_free(&group);
        return;
    }
    // The node's first rank creates the region; the others map it by name; once all have,
    // the name is removed, so nothing is left in /dev/shm whatever happens next.
    char name[name_bytes] = {};
    int ok = 1;
    if (nd.me == 0) {
        try {
            nd.created = std::make_unique<shm::shared_region>(p);
            std::snprintf(name, sizeof name, "%s", nd.created->name().c_str());
        } catch (const error&) {
            ok = 0;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, group);
    if (!ok) {
        MPI_Comm_free(&group);
        throw error(errc::system, "am::run: mpi transport: rank " +
                                      std::to_string(nd.global_of[0]) +
                                      " could not create the node's shared memory");
    }
    MPI_Bcast(name, static_cast<int>(name_bytes), MPI_CHAR, 0, group);
    if (nd.me != 0) nd.mapped = std::make_unique<shm::mapped_region>(name);
    MPI_Barrier(group);
    if (nd.created) nd.created->unlink();
    nd.base = nd.created ? nd.created->data() : nd.mapped->data();
    MPI_Comm_free(&group);
}

}  // namespace am::transport::mpi
