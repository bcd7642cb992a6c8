// SPDX-License-Identifier: MIT
// The node: the ranks of the job that share memory with this one (same host, at most
// AM_NODE_SIZE of them), and the ring region they share (node.cpp). Messages between them go
// through the rings (`ring::ring_transport`), as on the shm transport; only the others use MPI.
#pragma once

#include "../shm/shm_region.hpp"
#include "../transport.hpp"

#include <am/config.hpp>

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace am::transport::mpi {

/// The ranks that share memory with this one, and the region they share.
struct node {
    std::vector<int> local_of;   // global rank -> index in the node, or -1
    std::vector<int> global_of;  // index in the node -> global rank
    int me = 0;                  // this rank's index in the node
    int host_size = 1;           // ranks of the communicator on this host
    std::unique_ptr<shm::shared_region> created;
    std::unique_ptr<shm::mapped_region> mapped;
    void* private_base = nullptr;  // a node of one: anonymous memory
    std::size_t private_bytes = 0;
    std::byte* base = nullptr;

    node() = default;
    node(const node&) = delete;
    node& operator=(const node&) = delete;
    ~node();
};

/// Groups the ranks of `comm` into nodes (same host, at most `cap` consecutive host ranks when
/// cap > 0) and maps the node's region. Collective over `comm`.
void make_node(MPI_Comm comm, const config& cfg, int rank, int size, node& nd);

/// Delivers node messages under their global source rank.
class node_sink final : public message_sink {
  public:
    node_sink(message_sink& inner, const std::vector<int>& global_of)
        : _inner(inner), _global_of(global_of) {}
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) override {
        _inner.deliver(_global_of[static_cast<std::size_t>(source)], lane, msg, len);
    }

  private:
    message_sink& _inner;
    const std::vector<int>& _global_of;
};

}  // namespace am::transport::mpi
