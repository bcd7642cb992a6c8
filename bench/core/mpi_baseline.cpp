// SPDX-License-Identifier: MIT
// mpi_baseline: the MPI side of am_pingpong and am_flood, run by them under
// `mpirun -n 2 --bind-to core`, with the same options and the same JSON lines
// (system "mpi", transport "mpi"). Also usable on its own:
//
//   mpirun -n 2 --bind-to core mpi_baseline pingpong --sizes 8,1K --bw-sizes 1M --json
//   mpirun -n 2 --bind-to core mpi_baseline flood --sizes 8,64K --window 64 --json
//
// pingpong: MPI_Send/MPI_Recv ping-pong, one-way latency (half a round trip) for --sizes
//           (op "send_recv"); windowed MPI_Isend bandwidth for --bw-sizes (op "isend_window").
// flood:    windowed MPI_Isend message rate for --sizes (op "isend_window"): per window the
//           receiver pre-posts `window` MPI_Irecv, the sender posts `window` MPI_Isend, both
//           MPI_Waitall, and the receiver acknowledges with a 0-byte message (osu_bw style).
//
// What the receiver does with the data: every receive goes into the one receive buffer (all
// `window` MPI_Irecv of a window too), which MPI fills by a copy on the receiving side (Open
// MPI's vader BTL: CMA process_vm_readv from the sender's buffer above 4 KiB, a copy out of
// the shared-memory FIFO below); the program does not read the buffer afterwards. Senders
// send their own constant buffer (the ping-pong's reply does not echo what arrived). The am
// side's long messages match this: their receivers read every byte (am_pingpong).
#include "lib/mpi_hop.hpp"
#include "lib/mpi_main.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace am::bench {
namespace {

constexpr int tag_data = 1, tag_ack = 2;

struct job {
    const options& o;
    int rank;
    std::vector<char> sbuf, rbuf;
    std::vector<MPI_Request> reqs;
    reporter& rep;
    std::string bench;

    void report(const char* op, std::size_t bytes, const char* metric, const std::vector<double>& v,
                const char* system = "mpi") {
        if (rank == 0) {
            rep.add(make_result(bench, system, "mpi", 2, op, bytes, metric, summarize(v)));
        }
    }
};

void hop_point(job& j) {
    const auto v = mpi_cacheline_hop(j.rank, j.o.reps);
    if (!v.empty()) j.report("hop", 8, "latency_us", v, "cacheline");
}

void pingpong_rounds(job& j, std::size_t bytes, std::uint64_t n) {
    const int len = static_cast<int>(bytes);
    for (std::uint64_t i = 0; i < n; ++i) {
        if (j.rank == 0) {
            MPI_Send(j.sbuf.data(), len, MPI_BYTE, 1, tag_data, MPI_COMM_WORLD);
            MPI_Recv(j.rbuf.data(), len, MPI_BYTE, 1, tag_data, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(j.rbuf.data(), len, MPI_BYTE, 0, tag_data, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(j.sbuf.data(), len, MPI_BYTE, 0, tag_data, MPI_COMM_WORLD);
        }
    }
}

void latency_point(job& j, std::size_t bytes) {
    const std::uint64_t iters = iters_for(j.o, latency_plan, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    pingpong_rounds(j, bytes, warmup_for(j.o, iters));
    std::vector<double> v;
    for (int r = 0; r < j.o.reps; ++r) {
        const auto t0 = bench_clock::now();
        pingpong_rounds(j, bytes, iters);
        v.push_back(seconds_since(t0) * 1e6 / static_cast<double>(iters) / 2);
    }
    j.report("send_recv", bytes, "latency_us", v);
}

// `windows` windows of `window` messages of `bytes`, each window acknowledged.
void window_rounds(job& j, std::size_t bytes, std::uint64_t windows) {
    const int len = static_cast<int>(bytes);
    const int w = j.o.window;
    for (std::uint64_t i = 0; i < windows; ++i) {
        if (j.rank == 0) {
            for (int k = 0; k < w; ++k) {
                MPI_Isend(j.sbuf.data(), len, MPI_BYTE, 1, tag_data, MPI_COMM_WORLD, &j.reqs[k]);
            }
            MPI_Waitall(w, j.reqs.data(), MPI_STATUSES_IGNORE);
            MPI_Recv(nullptr, 0, MPI_BYTE, 1, tag_ack, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int k = 0; k < w; ++k) {
                MPI_Irecv(j.rbuf.data(), len, MPI_BYTE, 0, tag_data, MPI_COMM_WORLD, &j.reqs[k]);
            }
            MPI_Waitall(w, j.reqs.data(), MPI_STATUSES_IGNORE);
            MPI_Send(nullptr, 0, MPI_BYTE, 0, tag_ack, MPI_COMM_WORLD);
        }
    }
}

/// Windowed stream: message rate (Mmsg/s) or bandwidth (GB/s) per repetition.
void window_point(job& j, std::size_t bytes, const work_plan& plan, bool bandwidth) {
    const auto w = static_cast<std::uint64_t>(j.o.window);
    const std::uint64_t msgs = iters_for(j.o, plan, bytes);
    const std::uint64_t windows = (msgs + w - 1) / w;
    MPI_Barrier(MPI_COMM_WORLD);
    window_rounds(j, bytes, (warmup_for(j.o, msgs) + w - 1) / w);
    std::vector<double> v;
    for (int r = 0; r < j.o.reps; ++r) {
        const auto t0 = bench_clock::now();
        window_rounds(j, bytes, windows);
        const double s = seconds_since(t0);
        const double n = static_cast<double>(windows * w);
        v.push_back(bandwidth ? n * static_cast<double>(bytes) / s / 1e9 : n / s / 1e6);
    }
    j.report("isend_window", bytes, bandwidth ? "bandwidth_GBps" : "rate_Mmsgps", v);
}

int run(const options& o, int rank) {
    std::size_t biggest = 8;
    for (std::size_t s : o.sizes) biggest = std::max(biggest, s);
    for (std::size_t s : o.bw_sizes) biggest = std::max(biggest, s);
    reporter rep(o.json ? output::json_only : output::table);
    job j{o,
          rank,
          std::vector<char>(biggest, 'a'),
          std::vector<char>(biggest, 'b'),
          std::vector<MPI_Request>(static_cast<std::size_t>(o.window)),
          rep,
          o.bench.empty() ? "mpi_" + o.mode : o.bench};
    hop_point(j);
    if (o.mode == "pingpong") {
        for (std::size_t s : o.sizes) latency_point(j, s);
        for (std::size_t s : o.bw_sizes) window_point(j, s, bandwidth_plan, true);
    } else {
        for (std::size_t s : o.sizes) window_point(j, s, flood_plan, false);
    }
    return 0;
}

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    return mpi_baseline_main(
        argc, argv, "mpi_baseline",
        "MPI baseline of am_pingpong / am_flood. Positional mode: pingpong or flood. Run with "
        "exactly 2 MPI ranks.",
        {"pingpong", "flood"}, 2, [](options& o, int rank, int) {
            if (o.sizes.empty()) o.sizes = sizes_for(o, 8, o.mode == "flood" ? 64 << 10 : 4 << 20);
            return run(o, rank);
        });
}
