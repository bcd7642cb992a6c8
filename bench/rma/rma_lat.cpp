// SPDX-License-Identifier: MIT
// rma_lat: latency of one completed put or get (Split-C global memory) between ranks 0 and 1,
// on both put/get paths, then the MPI baseline (MPI_Put/MPI_Get + MPI_Win_flush in a
// passive-target epoch on an MPI_Win_allocate window) on the same sizes in the same run.
//
//   rma_lat [--json] [--transport shm|threads] [--rma auto|am|both] [--sizes 8,1M] ...
//
// Each rank exposes a page-aligned window in its segment (rma/rma_ranks.hpp). Rank 0 is the
// origin; rank 1 polls (busy) until rank 0 says the point is over. Ops, each timed over
// `iters` operations per repetition, each operation complete before the next starts:
//
//   get           ctx.get(dst, src, n, flag), then poll until the flag counts it: the data is
//                 in rank 0's buffer. µs per get. MPI: get_flush (MPI_Get + MPI_Win_flush).
//   put           ctx.put(dst, src, n, flag, done), then poll until `done` counts it: the data
//                 is in place at the target (origin-side completion). µs per put.
//                 MPI: put_flush (MPI_Put + MPI_Win_flush).
//   put_flag      put ping-pong: rank 0 puts with a flag, rank 1 polls until its flag counts
//                 it and puts back the same way; µs = round trip / 2, i.e. from the put call
//                 until the target has seen its flag. MPI: put_flag (MPI_Put of the data +
//                 flush, MPI_Put of a sequence number into the target's flag word + flush;
//                 the target polls the word).
//   put_blocking  ctx.put(dst, src, n): returns when the data is in place at the target; no
//                 flag, so the closest match of MPI's put_flush.
//   get_blocking  ctx.get(dst, src, n): returns when the data is here. MPI: get_flush.
//
// Paths (--rma, default both, one am job each): op labels as above for rma_path::automatic
// (direct copies where the target's segment is mapped: threads, shm), with "_am" appended for
// rma_path::am (put = long request + acknowledgement, get = request answered by the data).
// Ratios am/mpi (latency_ratio) pair every am op, on both paths, with its MPI op.
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
#include <utility>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "rma_lat";

/// The MPI op each am op is compared with.
constexpr std::pair<const char*, const char*> mpi_op_of[] = {{"get", "get_flush"},
                                                             {"put", "put_flush"},
                                                             {"put_flag", "put_flag"},
                                                             {"put_blocking", "put_flush"},
                                                             {"get_blocking", "get_flush"}};

/// Runs `one()` `warm` times, then `reps` × `iters` times; µs per call per repetition.
template <class One>
std::vector<double> time_ops(const options& o, std::uint64_t iters, std::uint64_t warm, One one) {
    for (std::uint64_t i = 0; i < warm; ++i) one();
    std::vector<double> v;
    for (int r = 0; r < o.reps; ++r) {
        const auto t0 = bench_clock::now();
        for (std::uint64_t i = 0; i < iters; ++i) one();
        v.push_back(seconds_since(t0) * 1e6 / static_cast<double>(iters));
    }
    return v;
}

/// One origin-side point: rank 0 times `one` (one complete operation), rank 1 serves.
template <class One>
void point(rma_ranks& r, const rank_env& env, const std::string& op, std::size_t bytes, One one) {
    const options& o = env.opts();
    const std::uint64_t iters = iters_for(o, latency_plan, bytes);
    r.begin(bytes);
    if (r.ctx.rank() == 0) {
        const auto v = time_ops(o, iters, warmup_for(o, iters), one);
        env.report(r.ctx, bench_name, op.c_str(), bytes, "latency_us", v);
    }
    r.end(env);
}

void get_point(rma_ranks& r, const rank_env& env, am::rma_path path, std::size_t bytes) {
    const std::string op = rma_op("get", path);
    point(r, env, op, bytes, [&] {
        r.ctx.get(r.dst.data(), r.peer_get, bytes, r.got);
        const std::uint64_t want = ++r.want_got;
        env.wait(r.ctx, [&] { return r.got.test(want); });
    });
    r.check_get(op, bytes);
}

void put_point(rma_ranks& r, const rank_env& env, am::rma_path path, std::size_t bytes) {
    const std::string op = rma_op("put", path);
    point(r, env, op, bytes, [&] {
        r.ctx.put(r.peer_put, r.src.data(), bytes, r.put_flag, r.done);
        ++r.puts_flagged;
        const std::uint64_t want = ++r.want_done;
        env.wait(r.ctx, [&] { return r.done.test(want); });
    });
    if (r.ctx.rank() == 1) r.check_put(op, bytes);
}

void blocking_points(rma_ranks& r, const rank_env& env, am::rma_path path, std::size_t bytes) {
    const options& o = env.opts();
    if (rma_wants(o, "get_blocking")) {
        const std::string op = rma_op("get_blocking", path);
        point(r, env, op, bytes, [&] { r.ctx.get(r.dst.data(), r.peer_get, bytes); });
        r.check_get(op, bytes);
    }
    if (rma_wants(o, "put_blocking")) {
        const std::string op = rma_op("put_blocking", path);
        point(r, env, op, bytes, [&] { r.ctx.put(r.peer_put, r.src.data(), bytes); });
        if (r.ctx.rank() == 1) r.check_put(op, bytes);
    }
}

/// Put ping-pong: each rank waits for its flag before it puts back; one-way µs = rt / 2.
void flag_point(rma_ranks& r, const rank_env& env, am::rma_path path, std::size_t bytes) {
    const options& o = env.opts();
    const std::string op = rma_op("put_flag", path);
    const std::uint64_t iters = iters_for(o, latency_plan, bytes);
    const std::uint64_t warm = warmup_for(o, iters);
    auto one = [&] {
        const std::uint64_t want = ++r.want_pp;
        if (r.ctx.rank() == 0) {
            r.ctx.put(r.peer_put, r.src.data(), bytes, r.pp_flag);
            env.wait(r.ctx, [&] { return r.pp_flag.test(want); });
        } else {
            env.wait(r.ctx, [&] { return r.pp_flag.test(want); });
            r.ctx.put(r.peer_put, r.src.data(), bytes, r.pp_flag);
        }
    };
    r.begin(bytes);
    if (r.ctx.rank() == 0) {
        auto v = time_ops(o, iters, warm, one);
        for (double& us : v) us /= 2;
        env.report(r.ctx, bench_name, op.c_str(), bytes, "latency_us", v);
    } else if (r.ctx.rank() == 1) {
        const std::uint64_t total = warm + iters * static_cast<std::uint64_t>(o.reps);
        for (std::uint64_t i = 0; i < total; ++i) one();
    }
    r.end(env);
    r.check_put(op, bytes);
}

void rank_main(am::context& ctx, rank_env& env, am::rma_path path, bool /*first*/) {
    const options& o = env.opts();
    const std::vector<std::size_t> sizes = rma_sizes(o);
    rma_ranks r(ctx, sizes.empty() ? 8 : *std::max_element(sizes.begin(), sizes.end()));
    for (const std::size_t s : sizes) {
        if (rma_wants(o, "get")) get_point(r, env, path, s);
        if (rma_wants(o, "put")) put_point(r, env, path, s);
        if (rma_wants(o, "put_flag")) flag_point(r, env, path, s);
        blocking_points(r, env, path, s);
    }
    ctx.quiesce();  // the stop handler and the counters live in this function
}

/// The MPI side of the same sizes and ops, then the am/MPI ratios.
/// False when the baseline was wanted but could not be run.
bool compare_with_mpi(const options& o, reporter& rep) {
    std::vector<std::size_t> sizes;
    std::vector<std::string> mpi_ops;
    auto add = [](auto& v, auto x) {
        if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    };
    for (const result& r : rep.results()) {
        if (std::string_view(r.system) != "am") continue;
        add(sizes, static_cast<std::size_t>(r.bytes));
        for (const auto& [am_op, mpi_op] : mpi_op_of) {
            const std::string_view op = r.op;
            if (op == am_op || op == rma_op(am_op, am::rma_path::am)) add(mpi_ops, mpi_op);
        }
    }
    if (baseline_skipped(o) || sizes.empty()) return true;
    std::sort(sizes.begin(), sizes.end());
    std::string ops;
    for (const std::string& op : mpi_ops) ops += (ops.empty() ? "" : ",") + op;
    std::vector<std::string> args = baseline_args(o, sizes);
    args.insert(args.end(), {"--ops", ops});
    if (!run_mpi_program(o, mpi_program::rma, "lat", args, rep)) return false;
    for (const am::rma_path path : {am::rma_path::automatic, am::rma_path::am}) {
        for (const auto& [am_op, mpi_op] : mpi_op_of) {
            rep.add_ratios("am", rma_op(am_op, path), "mpi", mpi_op, "latency_us", "latency_ratio");
        }
    }
    return true;
}

int run_round(const options& o, reporter& rep, bool& reporting) {
    return run_rma_jobs(o, rank_main, rep, reporting);
}

constexpr const char* about = R"(Latency of one completed put / get (Split-C global memory), 8 B -
4 MiB, on the direct and the active-message path, and the MPI_Put/MPI_Get + MPI_Win_flush
baseline.
ops (--ops): get, put, put_flag, get_blocking, put_blocking (default all).)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    return bench_main(argc, argv, bench_program{bench_name, about, run_round, compare_with_mpi});
}
