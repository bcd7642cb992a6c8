// SPDX-License-Identifier: MIT
// mpi_rma_baseline: the MPI side of rma_lat and rma_bw, run by them under
// `mpirun -n 2 --bind-to core`, with the same options and the same JSON lines
// (system "mpi", transport "mpi"). Also usable on its own:
//
//   mpirun -n 2 --bind-to core mpi_rma_baseline lat --sizes 8,1M --json
//   mpirun -n 2 --bind-to core mpi_rma_baseline bw --sizes 8,1M --window 64 --json
//
// Every rank creates a window with MPI_Win_allocate and opens one passive-target epoch on it
// (MPI_Win_lock_all, MPI_MODE_NOCHECK) for the whole run; rank 0 is the origin, rank 1 the
// target, and the target only sits in MPI_Barrier (or, for put_flag, polls its window).
//
// lat: per size and op, `iters` operations per repetition, each completed before the next;
//      µs per operation:
//        put_flush  MPI_Put of `bytes` + MPI_Win_flush (complete at the target)
//        get_flush  MPI_Get of `bytes` + MPI_Win_flush (the data is in the origin buffer)
//        put_flag   put with notification, ping-pong: MPI_Put of the data + flush, MPI_Put of
//                   an 8-byte sequence number to the target's flag word + flush; the target
//                   polls that word (MPI_Win_sync between reads), then answers the same way.
//                   One-way: half the round trip, i.e. until the target has seen its flag.
// bw:  per size and op, windows of `window` operations then one MPI_Win_flush; GB/s:
//        put_flush, get_flush as above, `window` operations per flush.
// Work per repetition as the am side (bench/lib/options.hpp: latency_plan, bandwidth_plan,
// windows_for). --ops put_flush,get_flush,put_flag selects ops (default: all of the mode).
#include "lib/mpi_hop.hpp"
#include "lib/mpi_main.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace am::bench {
namespace {

/// The window: `data` bytes for puts and gets, then the flag word of put_flag on its own
/// cache line.
struct rma_job {
    rma_job(const options& opts, int r, reporter& out, std::string name)
        : o(opts), rank(r), rep(out), bench(std::move(name)) {}

    const options& o;
    int rank;
    reporter& rep;
    std::string bench;
    std::size_t data = 0;
    MPI_Win win = MPI_WIN_NULL;
    std::byte* base = nullptr;  // this rank's window
    page_buffer local;          // origin buffer of puts and gets
    std::uint64_t seq = 0;      // last put_flag sequence number sent or awaited
    std::uint64_t seq_out = 0;  // the origin buffer of the flag put (stable until the flush)

    [[nodiscard]] MPI_Aint flag_disp() const { return static_cast<MPI_Aint>(data); }
    [[nodiscard]] volatile std::uint64_t* flag() const {
        return reinterpret_cast<volatile std::uint64_t*>(base + data);
    }

    void report(const char* op, std::size_t bytes, const char* metric, const std::vector<double>& v,
                const char* system = "mpi") {
        if (rank == 0) {
            rep.add(make_result(bench, system, "mpi", 2, op, bytes, metric, summarize(v)));
        }
    }
};

int len_of(std::size_t bytes) {
    return static_cast<int>(bytes);
}

void put_flush(rma_job& j, std::size_t bytes, int peer) {
    MPI_Put(j.local.data(), len_of(bytes), MPI_BYTE, peer, 0, len_of(bytes), MPI_BYTE, j.win);
    MPI_Win_flush(peer, j.win);
}

void get_flush(rma_job& j, std::size_t bytes, int peer) {
    MPI_Get(j.local.data(), len_of(bytes), MPI_BYTE, peer, 0, len_of(bytes), MPI_BYTE, j.win);
    MPI_Win_flush(peer, j.win);
}

// Data, then the sequence number into the peer's flag word; the data is complete at the
// target before the flag is written (the first flush).
void put_with_flag(rma_job& j, std::size_t bytes, int peer) {
    MPI_Put(j.local.data(), len_of(bytes), MPI_BYTE, peer, 0, len_of(bytes), MPI_BYTE, j.win);
    MPI_Win_flush(peer, j.win);
    j.seq_out = j.seq;
    MPI_Put(&j.seq_out, 8, MPI_BYTE, peer, j.flag_disp(), 8, MPI_BYTE, j.win);
    MPI_Win_flush(peer, j.win);
}

void wait_flag(rma_job& j) {
    while (*j.flag() < j.seq) MPI_Win_sync(j.win);
}

// `n` put_flag round trips: rank 0 puts first, rank 1 answers each.
void flag_rounds(rma_job& j, std::size_t bytes, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
        ++j.seq;
        if (j.rank == 0) {
            put_with_flag(j, bytes, 1);
            wait_flag(j);
        } else {
            wait_flag(j);
            put_with_flag(j, bytes, 0);
        }
    }
}

// Rank 0 times `reps` repetitions of `ops(n)`; the target waits in MPI_Barrier meanwhile,
// except for put_flag where both ranks take part.
template <class Ops>
std::vector<double> timed(rma_job& j, std::uint64_t n, std::uint64_t warm, bool both, Ops ops) {
    std::vector<double> v;
    MPI_Barrier(MPI_COMM_WORLD);
    if (j.rank == 0 || both) {
        ops(warm);
        for (int r = 0; r < j.o.reps; ++r) {
            const auto t0 = bench_clock::now();
            ops(n);
            v.push_back(seconds_since(t0));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return v;
}

void latency_point(rma_job& j, const char* op, std::size_t bytes) {
    const std::string_view name = op;
    const std::uint64_t iters = iters_for(j.o, latency_plan, bytes);
    const std::uint64_t warm = warmup_for(j.o, iters);
    std::vector<double> v;
    if (name == "put_flag") {
        v = timed(j, iters, warm, true, [&](std::uint64_t n) { flag_rounds(j, bytes, n); });
        for (double& s : v) s = s * 1e6 / static_cast<double>(iters) / 2;
    } else {
        const bool put = name == "put_flush";
        v = timed(j, iters, warm, false, [&](std::uint64_t n) {
            for (std::uint64_t i = 0; i < n; ++i) {
                if (put) {
                    put_flush(j, bytes, 1);
                } else {
                    get_flush(j, bytes, 1);
                }
            }
        });
        for (double& s : v) s = s * 1e6 / static_cast<double>(iters);
    }
    j.report(op, bytes, "latency_us", v);
}

void bandwidth_point(rma_job& j, const char* op, std::size_t bytes) {
    const bool put = std::string_view(op) == "put_flush";
    const window_plan plan = windows_for(j.o, iters_for(j.o, bandwidth_plan, bytes));
    const std::uint64_t warm = warmup_for(j.o, plan.window * plan.windows) / plan.window + 1;
    const int len = len_of(bytes);
    auto windows = [&](std::uint64_t count) {
        for (std::uint64_t i = 0; i < count; ++i) {
            for (std::uint64_t k = 0; k < plan.window; ++k) {
                if (put) {
                    MPI_Put(j.local.data(), len, MPI_BYTE, 1, 0, len, MPI_BYTE, j.win);
                } else {
                    MPI_Get(j.local.data(), len, MPI_BYTE, 1, 0, len, MPI_BYTE, j.win);
                }
            }
            MPI_Win_flush(1, j.win);
        }
    };
    std::vector<double> v = timed(j, plan.windows, warm, false, windows);
    const double total = static_cast<double>(plan.window * plan.windows * bytes);
    for (double& s : v) s = total / s / 1e9;
    j.report(op, bytes, "bandwidth_GBps", v);
}

/// Ops of the mode, filtered by --ops.
std::vector<const char*> ops_of(const options& o) {
    std::vector<const char*> all = {"get_flush", "put_flush"};
    if (o.mode == "lat") all.push_back("put_flag");
    std::vector<const char*> v;
    for (const char* op : all) {
        if (o.wants(op)) v.push_back(op);
    }
    return v;
}

int run(const options& o, int rank) {
    reporter rep(o.json ? output::json_only : output::table);
    rma_job j(o, rank, rep, o.bench.empty() ? "mpi_rma_" + o.mode : o.bench);
    for (std::size_t s : o.sizes) j.data = std::max(j.data, s);
    j.data = (j.data + 63) / 64 * 64;
    j.local.reset(j.data);
    std::memset(j.local.data(), 0xa0 + rank, j.data);
    void* base = nullptr;
    if (MPI_Win_allocate(static_cast<MPI_Aint>(j.data + 64), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                         &base, &j.win) != MPI_SUCCESS) {
        std::fprintf(stderr, "mpi_rma_baseline: MPI_Win_allocate failed\n");
        return 1;
    }
    j.base = static_cast<std::byte*>(base);
    std::memset(j.base, 0, j.data + 64);
    int* model = nullptr;
    int found = 0;
    MPI_Win_get_attr(j.win, MPI_WIN_MODEL, &model, &found);
    const bool unified = found != 0 && *model == MPI_WIN_UNIFIED;
    if (const auto v = mpi_cacheline_hop(rank, o.reps); !v.empty()) {
        j.report("hop", 8, "latency_us", v, "cacheline");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, j.win);
    for (std::size_t s : o.sizes) {
        for (const char* op : ops_of(o)) {
            // Polling the window needs the unified memory model (public and private copy
            // the same memory).
            if (std::string_view(op) == "put_flag" && !unified) continue;
            if (o.mode == "lat") {
                latency_point(j, op, s);
            } else {
                bandwidth_point(j, op, s);
            }
        }
    }
    MPI_Win_unlock_all(j.win);
    if (!unified && rank == 0 && o.wants("put_flag") && o.mode == "lat") {
        std::fprintf(stderr, "mpi_rma_baseline: window not in the unified model: no put_flag\n");
    }
    MPI_Win_free(&j.win);
    return 0;
}

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    return mpi_baseline_main(argc, argv, "mpi_rma_baseline",
                             "MPI RMA baseline of rma_lat / rma_bw. Positional mode: lat or bw. "
                             "Run with exactly 2 MPI ranks.",
                             {"lat", "bw"}, 2, [](options& o, int rank, int) {
                                 if (o.sizes.empty()) o.sizes = sizes_for(o, 8, 4 << 20);
                                 return run(o, rank);
                             });
}
