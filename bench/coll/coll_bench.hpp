// SPDX-License-Identifier: MIT
/// @file
/// Shared by collectives_bench (am::coll) and its MPI baseline (mpi_coll_baseline): the ops
/// and their sizes, the data every rank contributes and the results it must get back (both
/// sides check the same way), the options these programs add to the shared ones, and the
/// batch of K operations a repetition times. Header-only; needs neither am nor MPI.
#pragma once

#include "lib/options.hpp"
#include "lib/sys.hpp"
#include "typed/typed_bench.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench::collectives {

constexpr const char* bench_name = "coll";

/// Every op, in the order a job runs them. ctx_barrier (the core's `ctx.barrier()`) is am's
/// only; it runs whenever barrier does (its ratio is over MPI_Barrier). epoch is the typed
/// layer's empty `am::epoch`; its MPI counterpart is an MPI_Allreduce (sum) of two uint64
/// counters, what one wave of a termination detector that finds nothing in flight computes
/// (sent and received counts).
inline const std::vector<std::string> all_ops = {"barrier", "ctx_barrier", "epoch",   "scan",
                                                 "bcast",   "allreduce",   "alltoall"};

/// Whether `op` is one of `all_ops`.
inline bool known_op(std::string_view op) {
    return std::find(all_ops.begin(), all_ops.end(), op) != all_ops.end();
}

/// Whether `op` runs: selected by --ops (ctx_barrier also when barrier is).
inline bool runs(const options& o, const std::string& op) {
    return o.wants(op) || (op == "ctx_barrier" && o.wants("barrier"));
}

/// The sizes of `op` in bytes: 0 for the ops that carry nothing (barriers, epoch); 8 for scan
/// (one uint64); bcast and allreduce 8 B, 1 KiB, 64 KiB, 1 MiB of uint64; alltoall per
/// destination block 8 B and 1 KiB. --sizes replaces the lists of bcast, allreduce and
/// alltoall (multiples of 8 only) and keeps scan when it names 8.
inline std::vector<std::size_t> sizes_of(const options& o, std::string_view op) {
    if (op == "barrier" || op == "ctx_barrier" || op == "epoch") return {0};
    std::vector<std::size_t> v;
    if (op == "scan") {
        v = {8};
    } else if (op == "alltoall") {
        v = {8, 1024};
    } else {
        v = {8, 1024, 64 << 10, 1 << 20};
    }
    if (o.sizes.empty()) return v;
    v.clear();
    for (std::size_t s : o.sizes) {
        if (s >= 8 && s % 8 == 0 && (op != "scan" || s == 8)) v.push_back(s);
    }
    return v;
}

/// Whether a point of `op` at `bytes` reports bandwidth beside latency.
inline bool with_bandwidth(std::string_view op, std::size_t bytes) {
    return (op == "bcast" || op == "allreduce") && bytes >= bandwidth_min_bytes;
}

/// Element i of rank r's allreduce input (and, from rank 0, the broadcast's data).
inline std::uint64_t value(int r, std::size_t i) {
    return static_cast<std::uint64_t>(r) * 0x10001u + i + 1;
}

/// Element i of the allreduce (sum) over `ranks` ranks.
inline std::uint64_t sum_of_values(int ranks, std::size_t i) {
    const auto p = static_cast<std::uint64_t>(ranks);
    return p * (i + 1) + 0x10001u * (p * (p - 1) / 2);
}

/// Element e of the block that rank `from` sends to rank `to` in the all-to-all.
inline std::uint64_t block_value(int from, int to, std::size_t e) {
    return (static_cast<std::uint64_t>(from) << 40) ^ (static_cast<std::uint64_t>(to) << 20) ^
           (e + 1);
}

/// The inclusive scan (sum) of rank + 1 at `rank`.
inline std::uint64_t scan_of(int rank) {
    const auto r = static_cast<std::uint64_t>(rank);
    return (r + 1) * (r + 2) / 2;
}

/// Options of collectives_bench and its baseline besides the shared ones.
struct extra_options {
    std::vector<int> ranks;               ///< --ranks a,b,c
    std::vector<std::string> transports;  ///< --transports a,b (am's)
    bool quick = false;                   ///< --quick: smoke run
    double min_seconds = 0;               ///< --min-ms T
};

inline std::vector<option_spec> extra_table(extra_options& x) {
    return {
        {"--ranks", "a,b,...", "rank counts (default 2,4,8; --quick 2)",
         [&x](const std::string& v) {
             x.ranks.clear();
             for (std::uint64_t n : to_counts("--ranks", v, 1, 4096)) {
                 x.ranks.push_back(static_cast<int>(n));
             }
         }},
        {"--transports", "a,b,...",
         "am transports: threads, shm, mpi (default threads,shm,mpi; --quick threads,shm;\n"
         "--transport T: T alone)",
         [&x](const std::string& v) {
             x.transports = to_choices("--transports", v, {"threads", "shm", "mpi"});
         }},
        {"--min-ms", "T", "a calibrated repetition lasts >= T ms (default 20)",
         [&x](const std::string& v) {
             x.min_seconds = static_cast<double>(to_count("--min-ms", v)) / 1e3;
         }},
        {"--quick", nullptr, "smoke run: 2 ranks, threads and shm, K = 20, 3 repetitions",
         store_flag(x.quick)},
    };
}

/// How many operations a repetition times.
struct batch_plan {
    std::uint64_t iters = 0;  ///< fixed K (--iters; --quick 20), 0: calibrated
    double target = 0.02;     ///< seconds a calibrated repetition lasts at least
};

/// K for one point: fixed (after a warm-up of K/10 + 1 operations), or calibrated from 1 up,
/// doubling at least, until the shorter of two trials of the slowest rank lasts `target` (the
/// trials are the warm-up). `loop(k)` runs k operations; `barrier()` lines the ranks up;
/// `slowest(s)` returns the largest `s` of all ranks on every rank (so every rank runs the
/// same K).
template <class Loop, class Barrier, class Slowest>
std::uint64_t batch_size(const batch_plan& p, Loop&& loop, Barrier&& barrier, Slowest&& slowest) {
    if (p.iters != 0) {
        barrier();
        loop(p.iters / 10 + 1);
        return p.iters;
    }
    std::uint64_t k = 1;
    for (;;) {
        double s = 0;
        for (int trial = 0; trial < 2; ++trial) {
            barrier();
            const auto t0 = bench_clock::now();
            loop(k);
            const double t = seconds_since(t0);
            s = trial == 0 ? t : std::min(s, t);
        }
        const std::uint64_t next = typed::next_count(k, slowest(s), p.target, 1 << 20);
        if (next == 0) return k;
        k = next;
    }
}

/// The repetitions of one point: per repetition `reset()`, a barrier, K operations timed on
/// every rank, then `check()` (untimed; it throws or aborts on a wrong result). Microseconds
/// per operation, per repetition: the slowest rank's batch / K (`slowest`, as in
/// `batch_size`; untimed). Rank 0's own time would flatter rooted and one-directional
/// operations: a root that only sends (bcast, MPI_Scan's rank 0) runs ahead of the others.
template <class Loop, class Barrier, class Slowest, class Reset, class Check>
std::vector<double> time_batches(int reps, std::uint64_t k, Loop&& loop, Barrier&& barrier,
                                 Slowest&& slowest, Reset&& reset, Check&& check) {
    std::vector<double> v;
    for (int r = 0; r < reps; ++r) {
        reset();
        barrier();
        const auto t0 = bench_clock::now();
        loop(k);
        const double t = seconds_since(t0);
        check();
        v.push_back(slowest(t) * 1e6 / static_cast<double>(k));
    }
    return v;
}

/// GB/s (10^9 bytes/s) of `bytes` per operation from µs per operation.
inline std::vector<double> bandwidth_of(std::size_t bytes, const std::vector<double>& us) {
    std::vector<double> v;
    for (double t : us) v.push_back(static_cast<double>(bytes) / t / 1e3);
    return v;
}

}  // namespace am::bench::collectives
