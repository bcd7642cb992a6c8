// SPDX-License-Identifier: MIT
// A program started by mpiexec in the liveness tests (tests/mpi/CMakeLists.txt), run with
// heartbeats forced on one host (AM_HEARTBEAT=<timeout s>) through tests/shm/amrun_check.sh:
//
//   am_mpi_liveness stop     rank 1 stops (SIGSTOP: its heartbeat thread stops with it, as on
//                            a host whose links were cut) after the job started, while the
//                            others wait in a barrier: each of them must print a line naming
//                            rank 1 and mpiexec must fail within the bound.
//   am_mpi_liveness compute  rank 1 computes without polling am for 3 × the timeout while the
//                            others wait in a barrier: it must not be declared lost (the
//                            heartbeats do not depend on the rank's own thread).
//   am_mpi_liveness twice    two am::run calls in one process, each with traffic: no false
//                            loss across jobs (each job has its own socket and job id).
//   am_mpi_liveness late     rank 1 sleeps 2 × the timeout after the others have returned
//                            from the rank function (they wait in am::run's end): no loss.
//
// Every rank prints "liveness: ok (rank R)" when its last am::run returned 0.
#include "mpi_prog.hpp"

#include <am/am.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

namespace {

using clock_type = std::chrono::steady_clock;

// Some traffic, so that the job is under way (and the transport's connections exist).
void exchange(am::context& ctx) {
    const int n = ctx.size();
    am::counter got(ctx);
    auto take = ctx.handler([&](am::token&, std::uint64_t) { got.add(); });
    ctx.barrier();
    for (int k = 0; k < 20; ++k) {
        for (int d = 0; d < n; ++d) ctx.request(d, take, std::uint64_t{1});
    }
    got.wait(20 * static_cast<std::uint64_t>(n));
    ctx.barrier();
}

// Burns the CPU without calling am for `d`.
double compute_for(std::chrono::duration<double> d) {
    const auto until = clock_type::now() + d;
    double x = 1;
    while (clock_type::now() < until) {
        for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
    }
    return x;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode != "stop" && mode != "compute" && mode != "twice" && mode != "late") {
        std::fprintf(stderr, "usage: am_mpi_liveness stop|compute|twice|late\n");
        return 2;
    }
    am::config cfg = am_mpi_prog::config_from_env("am_mpi_liveness");
    const std::chrono::duration<double> timeout(cfg.heartbeat > 0 ? cfg.heartbeat : 5.0);
    int me = -1;
    const auto body = [&](am::context& ctx) {
        me = ctx.rank();
        exchange(ctx);
        if (me == 1 && mode == "stop") {
            std::fprintf(stderr, "am_mpi_liveness: rank 1 stops\n");
            std::fflush(stderr);
            std::raise(SIGSTOP);
            std::fprintf(stderr, "am_mpi_liveness: rank 1 was continued\n");
        }
        if (me == 1 && mode == "compute") {
            std::printf("liveness: rank 1 computed (%g)\n", compute_for(3 * timeout));
        }
        if (me == 1 && mode == "late") std::this_thread::sleep_for(2 * timeout);
        if (mode != "late") ctx.barrier();  // late: the others go on to am::run's end
        if (mode == "stop") {
            std::fprintf(stderr, "am_mpi_liveness: rank %d: the barrier returned\n", me);
        }
    };
    int rc = am::run(cfg, body);
    if (rc == 0 && mode == "twice") rc = am::run(cfg, body);
    if (rc == 0) std::printf("liveness: ok (rank %d)\n", me);
    return rc;
}
