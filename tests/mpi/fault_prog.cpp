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
//   am_mpi_fault exit    rank 1 calls std::exit(3) in the rank function at the same point.
//   am_mpi_fault exit_in_handler
//                        rank 1 calls std::exit(0) in a request handler (sent to it by rank 0)
//                        while it waits in the barrier.
//   am_mpi_fault exit_in_progress
//                        as exit_in_handler with a progress thread, which runs that handler:
//                        rank 1's own thread sleeps outside am.
//
// The transport is mpi (mpiexec started the process), node size from AM_NODE_SIZE.
#include "mpi_prog.hpp"

#include <am/am.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

enum class fault { kill, throw_, exit, exit_in_handler, exit_in_progress };

// How rank 1 leaves the phase.
void leave(am::context& ctx, fault how) {
    switch (how) {
        case fault::kill:
            std::raise(SIGKILL);
            break;
        case fault::throw_:
            throw std::runtime_error("deliberate failure in the middle of the phase");
        case fault::exit:
            std::exit(3);
        case fault::exit_in_handler:
            ctx.barrier();  // rank 0's request arrives while rank 1 waits here
            break;
        case fault::exit_in_progress:
            std::this_thread::sleep_for(std::chrono::seconds(60));  // not polling: the
            break;                                                  // progress thread does
    }
    std::fprintf(stderr, "am_mpi_fault: rank 1 is still there\n");
}

void phase(am::context& ctx, fault how) {
    const int n = ctx.size(), me = ctx.rank();
    am::counter got(ctx);
    auto take = ctx.handler([&](am::token&, std::uint64_t) { got.add(); });
    auto quit = ctx.handler([](am::token&) { std::exit(0); });
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
        leave(ctx, how);
    }
    if (me == 0 && (how == fault::exit_in_handler || how == fault::exit_in_progress)) {
        ctx.request(1, quit);
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
    fault how = fault::kill;
    if (mode == "throw") {
        how = fault::throw_;
    } else if (mode == "exit") {
        how = fault::exit;
    } else if (mode == "exit_in_handler") {
        how = fault::exit_in_handler;
    } else if (mode == "exit_in_progress") {
        how = fault::exit_in_progress;
    } else if (mode != "kill") {
        std::fprintf(stderr,
                     "usage: am_mpi_fault kill|throw|exit|exit_in_handler|exit_in_progress\n");
        return 2;
    }
    am::config cfg = am_mpi_prog::config_from_env("am_mpi_fault");
    if (how == fault::exit_in_progress) cfg.progress_thread = true;
    const int rc = am::run(cfg, [&](am::context& ctx) { phase(ctx, how); });
    // Not reached when the job fails as it must (MPI_Abort ends every process); if it is, the
    // status says so.
    std::fprintf(stderr, "am_mpi_fault: am::run returned %d\n", rc);
    return rc == 0 ? 3 : rc;
}
