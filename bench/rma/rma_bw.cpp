// SPDX-License-Identifier: MIT
// rma_bw: bandwidth of puts and gets (Split-C global memory) from rank 0 to rank 1's segment,
// on both put/get paths, beside a single-core memcpy of the same size; then the MPI baseline
// (MPI_Put/MPI_Get + MPI_Win_flush in a passive-target epoch) with the same window.
//
//   rma_bw [--json] [--transport shm|threads] [--rma auto|am|both] [--window 64] ...
//
// Ops, streamed in windows (bench/lib/options.hpp: windows_for): per window rank 0 issues
// `window` split-phase operations of `bytes`, all to the same place, then polls until all of
// them have completed; N = iters_for(bandwidth_plan) operations per repetition (20 000 up to
// 8 KiB, then 20 000 × 8 KiB / size; 1 MiB: 156), rounded up to whole windows.
//
//   put     ctx.put(dst, src, n, flag, done) × window, then wait until `done` counts them
//           (the data is in place at the target). MPI: put_flush (MPI_Put × window, flush).
//   get     ctx.get(dst, src, n, flag) × window, then wait until the flag counts them.
//           MPI: get_flush (MPI_Get × window, flush).
//   memcpy  (system memcpy) single-core memcpy of `bytes` between two warm page-aligned
//           buffers on rank 0's core, as many copies as puts (the am sources, destinations
//           and windows are page-aligned too). Measured once per size, in the first am job.
//
// bytes × N / time, GB/s (10^9 B/s). Paths and labels as rma_lat: "put"/"get" on the
// automatic path, "put_am"/"get_am" through active messages. Ratios: am/mpi and am/memcpy
// (bandwidth_ratio).
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "rma/rma_ranks.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "rma_bw";

/// One window of puts or gets, complete when it returns.
void window(rma_ranks& r, const rank_env& env, bool put, std::size_t bytes, std::uint64_t w) {
    if (put) {
        for (std::uint64_t k = 0; k < w; ++k) {
            r.ctx.put(r.peer_put, r.src.data(), bytes, r.put_flag, r.done);
        }
        r.puts_flagged += w;
        const std::uint64_t want = r.want_done += w;
        env.wait(r.ctx, [&] { return r.done.test(want); });
    } else {
        for (std::uint64_t k = 0; k < w; ++k) {
            r.ctx.get(r.dst.data(), r.peer_get, bytes, r.got);
        }
        const std::uint64_t want = r.want_got += w;
        env.wait(r.ctx, [&] { return r.got.test(want); });
    }
}

void stream_point(rma_ranks& r, const rank_env& env, am::rma_path path, bool put,
                  std::size_t bytes) {
    const options& o = env.opts();
    const std::string op = rma_op(put ? "put" : "get", path);
    const window_plan plan = windows_for(o, iters_for(o, bandwidth_plan, bytes));
    const std::uint64_t warm = warmup_for(o, plan.window * plan.windows) / plan.window + 1;
    r.begin(bytes);
    if (r.ctx.rank() == 0) {
        for (std::uint64_t i = 0; i < warm; ++i) window(r, env, put, bytes, plan.window);
        std::vector<double> v;
        for (int rep = 0; rep < o.reps; ++rep) {
            const auto t0 = bench_clock::now();
            for (std::uint64_t i = 0; i < plan.windows; ++i) {
                window(r, env, put, bytes, plan.window);
            }
            const double total = static_cast<double>(plan.window * plan.windows * bytes);
            v.push_back(total / seconds_since(t0) / 1e9);
        }
        env.report(r.ctx, bench_name, op.c_str(), bytes, "bandwidth_GBps", v);
    }
    r.end(env);
    if (put && r.ctx.rank() == 1) r.check_put(op, bytes);
    if (!put) r.check_get(op, bytes);
}

void rank_main(am::context& ctx, rank_env& env, am::rma_path path, bool first) {
    const options& o = env.opts();
    const std::vector<std::size_t> sizes = rma_sizes(o);
    rma_ranks r(ctx, sizes.empty() ? 8 : *std::max_element(sizes.begin(), sizes.end()));
    for (const std::size_t s : sizes) {
        if (first && ctx.rank() == 0) {
            env.report(ctx, bench_name, "memcpy", s, "bandwidth_GBps", memcpy_bandwidth(o, s),
                       "memcpy");
        }
        if (rma_wants(o, "put")) stream_point(r, env, path, true, s);
        if (rma_wants(o, "get")) stream_point(r, env, path, false, s);
    }
    ctx.quiesce();  // the stop handler and the counters live in this function
}

/// The MPI side of the same sizes, then the am/MPI and am/memcpy ratios.
/// False when the baseline was wanted but could not be run.
bool compare_with_mpi(const options& o, reporter& rep) {
    const std::vector<std::size_t> sizes = am_sizes(rep);
    for (const am::rma_path path : {am::rma_path::automatic, am::rma_path::am}) {
        for (const char* op : {"put", "get"}) {
            rep.add_ratios("am", rma_op(op, path), "memcpy", "memcpy", "bandwidth_GBps",
                           "bandwidth_ratio");
        }
    }
    if (baseline_skipped(o) || sizes.empty()) return true;
    std::string ops;
    if (rma_wants(o, "put")) ops = "put_flush";
    if (rma_wants(o, "get")) ops += ops.empty() ? "get_flush" : ",get_flush";
    std::vector<std::string> args = baseline_args(o, sizes);
    args.insert(args.end(), {"--ops", ops});
    if (!run_mpi_program(o, mpi_program::rma, "bw", args, rep)) return false;
    for (const am::rma_path path : {am::rma_path::automatic, am::rma_path::am}) {
        rep.add_ratios("am", rma_op("put", path), "mpi", "put_flush", "bandwidth_GBps",
                       "bandwidth_ratio");
        rep.add_ratios("am", rma_op("get", path), "mpi", "get_flush", "bandwidth_GBps",
                       "bandwidth_ratio");
    }
    return true;
}

int run_round(const options& o, reporter& rep, bool& reporting) {
    return run_rma_jobs(o, rank_main, rep, reporting);
}

constexpr const char* about = R"(Bandwidth of windowed puts / gets (Split-C global memory), 8 B -
4 MiB, on the direct and the active-message path, beside memcpy, and the MPI_Put/MPI_Get +
MPI_Win_flush baseline with the same window.
ops (--ops): put, get (default both).)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    return bench_main(argc, argv, bench_program{bench_name, about, run_round, compare_with_mpi});
}
