// SPDX-License-Identifier: MIT
// A program started by `mpiexec -n 2` in the malformed-message tests (tests/mpi/CMakeLists.txt):
// rank 0 runs am (every message through MPI, node size 1) and waits in a barrier; rank 1 does
// not run am but forges its part of am's set-up, so it holds am's private communicators, and
// sends rank 0 a message that breaks the mpi transport's protocol
// (src/transport/mpi/eager_format.hpp). Rank 0 must fail the job naming itself and rank 1
// ("rank 0: malformed MPI message from rank 1 (...)") and end it with MPI_Abort; before the
// checks it read the lengths it was sent as they were, and waited forever (or died of a huge
// allocation).
//
//   am_mpi_malformed big_short        a large-message announcement of 3 bytes, not 8
//   am_mpi_malformed big_huge         an announced large message of 2^40 bytes
//   am_mpi_malformed big_data_short   a large message of 100 bytes where 10000 were announced
//   am_mpi_malformed credit_lane      a credit return for lane 7
//   am_mpi_malformed credit_overflow  64 credits returned for a lane that lent none
//   am_mpi_malformed pack_cut         a pack whose second record claims more bytes than follow
//   am_mpi_malformed pack_reserved    a pack record header with its reserved word set
//   am_mpi_malformed pack_empty       a pack of no record (0 bytes)
// A pack is checked whole before any of it is delivered: the valid first record of pack_cut
// never reaches the core.
//
// Rank 1 mirrors, call for call, the collectives by which am sets up a job
// (src/transport/mpi/launch.cpp `job::job`, node.cpp `make_node`): change it with them.
#include <am/am.hpp>
#include <am/mpi.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// The protocol's tags (eager_format.hpp).
constexpr int tag_msg = 0, tag_big = 2, tag_credit = 4;

// Rank 1: am's set-up collectives with node size 1; returns am's two communicators.
void forge_setup(MPI_Comm& comm, MPI_Comm& data) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &data);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm host = MPI_COMM_NULL, group = MPI_COMM_NULL;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
    int host_rank = 0;
    MPI_Comm_rank(host, &host_rank);
    MPI_Comm_split(host, host_rank, host_rank, &group);  // node size 1: a node per rank
    MPI_Comm_free(&host);
    int global = 0;
    MPI_Allgather(&rank, 1, MPI_INT, &global, 1, MPI_INT, group);
    MPI_Comm_free(&group);
    const std::uint64_t mine = 0;  // the largest message of the job: rank 0's
    std::uint64_t largest = 0;
    MPI_Allreduce(&mine, &largest, 1, MPI_UINT64_T, MPI_MAX, comm);
}

void send(const void* bytes, int len, int tag, MPI_Comm comm) {
    MPI_Send(bytes, len, MPI_BYTE, 0, tag, comm);
}

int forge(const std::string& mode) {
    MPI_Comm comm = MPI_COMM_NULL, data = MPI_COMM_NULL;
    forge_setup(comm, data);
    if (mode == "big_short") {
        const unsigned char b[3] = {0xff, 0xff, 0xff};
        send(b, 3, tag_big, comm);
    } else if (mode == "big_huge") {
        const std::uint64_t n = std::uint64_t{1} << 40;
        send(&n, 8, tag_big + 1, comm);
    } else if (mode == "big_data_short") {
        const std::uint64_t n = 10000;
        send(&n, 8, tag_big, comm);
        const std::vector<unsigned char> part(100, 0);
        send(part.data(), 100, 0, data);
    } else if (mode == "credit_lane") {
        const std::uint32_t w[2] = {7, 32};
        send(w, 8, tag_credit, comm);
    } else if (mode == "credit_overflow") {
        const std::uint32_t w[2] = {0, 64};  // rank 0 has sent nothing: all 64 are still there
        send(w, 8, tag_credit, comm);
    } else if (mode == "pack_cut") {
        // A valid record of 16 bytes, then one that claims 100 and has 8.
        const std::uint32_t w[10] = {16, 0, 1, 2, 3, 4, 100, 0, 5, 6};
        send(w, sizeof w, tag_msg, comm);
    } else if (mode == "pack_reserved") {
        const std::uint32_t w[6] = {16, 1, 1, 2, 3, 4};
        send(w, sizeof w, tag_msg + 1, comm);
    } else if (mode == "pack_empty") {
        send(nullptr, 0, tag_msg, comm);
    } else {
        std::fprintf(stderr, "am_mpi_malformed: unknown mode %s\n", mode.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    // Rank 0's MPI_Abort ends this process; if it does not come, say so.
    std::this_thread::sleep_for(std::chrono::seconds(30));
    std::fprintf(stderr, "am_mpi_malformed: rank 0 did not fail within 30 s\n");
    MPI_Abort(MPI_COMM_WORLD, 99);
    return 99;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::string mode = argc > 1 ? argv[1] : "";
    if (size != 2) {
        if (rank == 0) std::fprintf(stderr, "am_mpi_malformed: run with 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 1) return forge(mode);
    am::config cfg;
    cfg.node_size = 1;
    const int rc = am::run(MPI_COMM_WORLD, cfg, [](am::context& ctx) { ctx.barrier(); });
    // Not reached when the job fails as it must (MPI_Abort).
    std::fprintf(stderr, "am_mpi_malformed: am::run returned %d\n", rc);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 3;
}
