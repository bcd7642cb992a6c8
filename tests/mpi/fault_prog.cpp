// SPDX-License-Identifier: MIT
// A program started by mpiexec in the MPI fault tests (tests/mpi/CMakeLists.txt), run through
// tests/shm/amrun_check.sh, which checks that mpiexec fails within a time bound and what the
// output says:
//
//   am_mpi_fault kill    rank 1 kills itself (SIGKILL) in the middle of an am phase, after it
//                        sent part of its messages, while rank 0 waits on a counter for the
//                        rest and the other ranks wait in a barrier.
//   am_mpi_fault throw   rank 1 throws out of the rank function in the middle of the phase
//                        while the others wait the same way.
//
// The transport is mpi (mpiexec started the process), node size from AM_NODE_SIZE.
#include <am/am.hpp>

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

void phase(am::context& ctx, bool kill) {
    const int n = ctx.size(), me = ctx.rank();
    am::counter got(ctx);
    auto take = ctx.handler([&](am::token&, std::uint64_t) { got.add(); });
    ctx.barrier();
    // Everybody is busy with messages when rank 1 goes: each rank sends every rank 100.
    for (int k = 0; k < 100; ++k) {
        for (int d = 0; d < n; ++d) ctx.request(d, take, std::uint64_t{1});
    }
    got.wait(100 * static_cast<std::uint64_t>(n));
    ctx.barrier();
    if (me == 1) {
        for (int k = 0; k < 10; ++k) ctx.request(0, take, std::uint64_t{2});
        std::fflush(stdout);
        if (kill) std::raise(SIGKILL);
        throw std::runtime_error("deliberate failure in the middle of the phase");
    }
    std::fprintf(stderr, "am_mpi_fault: rank %d waits\n", me);
    if (me == 0) {
        got.wait(100 * static_cast<std::uint64_t>(n) + 20);  // rank 1 sends only 10 of these
    } else {
        ctx.barrier();  // rank 1 never arrives
    }
    std::fprintf(stderr, "am_mpi_fault: rank %d: the wait returned although its peer failed\n", me);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode != "kill" && mode != "throw") {
        std::fprintf(stderr, "usage: am_mpi_fault kill|throw\n");
        return 2;
    }
    const int rc = am::run(argc, argv, [&](am::context& ctx) { phase(ctx, mode == "kill"); });
    // Not reached when the job fails as it must (MPI_Abort ends every process); if it is, the
    // status says so.
    std::fprintf(stderr, "am_mpi_fault: am::run returned %d\n", rc);
    return rc == 0 ? 3 : rc;
}
