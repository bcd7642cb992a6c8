// SPDX-License-Identifier: MIT
// mpi_coll_baseline: the MPI side of collectives_bench, run by it under `mpirun -n <ranks>`
// (bound to cores when every rank has one, else --oversubscribe) with the same ops, sizes,
// repetitions and K rule, printing the same JSON lines (system "mpi", transport "mpi"). Also
// usable on its own:
//
//   mpirun -n 2 --bind-to core mpi_coll_baseline coll --min-ms 20 --json
//
// Ops (MPI_COMM_WORLD; data and checks of coll_bench.hpp, as the am side):
//   barrier    MPI_Barrier
//   epoch      MPI_Allreduce (MPI_SUM) of 2 uint64 counters: the counterpart of an empty am
//              epoch, whose detector sums the sent and received counts of every rank once
//              nothing is in flight (not checked, as the am epoch is not)
//   scan       MPI_Scan (MPI_SUM) of one uint64
//   bcast      MPI_Bcast of bytes/8 uint64 from root 0
//   allreduce  MPI_Allreduce (MPI_SUM) of bytes/8 uint64, separate input and output
//   alltoall   MPI_Alltoall of bytes/8 uint64 per destination
#include "coll/coll_bench.hpp"
#include "lib/mpi_main.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace am::bench::collectives {
namespace {

struct job {
    const options& o;
    int rank;
    int size;
    reporter& rep;
    batch_plan batch;

    [[noreturn]] void wrong(const char* op, std::size_t bytes, std::size_t at) const {
        std::fprintf(stderr, "mpi_coll_baseline: WRONG RESULT on rank %d: %s %zu B at %zu\n", rank,
                     op, bytes, at);
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::abort();
    }

    /// As collectives_bench's point::run.
    template <class Loop, class Reset, class Check>
    void run(const char* op, std::size_t bytes, Loop loop, Reset reset, Check check) const {
        auto sync = [] { MPI_Barrier(MPI_COMM_WORLD); };
        auto slowest = [](double s) {
            double m = 0;
            MPI_Allreduce(&s, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            return m;
        };
        const std::uint64_t k = batch_size(batch, loop, sync, slowest);
        const std::vector<double> us = time_batches(o.reps, k, loop, sync, slowest, reset, check);
        if (rank != 0) return;
        rep.add(
            make_result(bench_name, "mpi", "mpi", size, op, bytes, "latency_us", summarize(us)));
        if (with_bandwidth(op, bytes)) {
            rep.add(make_result(bench_name, "mpi", "mpi", size, op, bytes, "bandwidth_GBps",
                                summarize(bandwidth_of(bytes, us))));
        }
    }
};

auto nothing = [] {};

void no_data_ops(const job& j) {
    if (runs(j.o, "barrier")) {
        j.run(
            "barrier", 0,
            [](std::uint64_t k) {
                for (std::uint64_t i = 0; i < k; ++i) MPI_Barrier(MPI_COMM_WORLD);
            },
            nothing, nothing);
    }
    if (runs(j.o, "epoch")) {
        std::uint64_t counts[2] = {0, 0}, sums[2] = {0, 0};
        j.run(
            "epoch", 0,
            [&](std::uint64_t k) {
                for (std::uint64_t i = 0; i < k; ++i) {
                    MPI_Allreduce(counts, sums, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
                }
            },
            nothing, nothing);
    }
}

void scan_op(const job& j) {
    std::uint64_t v = static_cast<std::uint64_t>(j.rank) + 1, got = 0;
    j.run(
        "scan", 8,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                MPI_Scan(&v, &got, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            }
        },
        [&] { got = 0; },
        [&] {
            if (got != scan_of(j.rank)) j.wrong("scan", 8, 0);
        });
}

void bcast_op(const job& j, std::size_t bytes) {
    const std::size_t n = bytes / 8;
    std::vector<std::uint64_t> buf(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = value(0, i);
    j.run(
        "bcast", bytes,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                MPI_Bcast(buf.data(), static_cast<int>(n), MPI_UINT64_T, 0, MPI_COMM_WORLD);
            }
        },
        [&] {
            if (j.rank != 0) std::fill(buf.begin(), buf.end(), 0);
        },
        [&] {
            for (std::size_t i = 0; i < n; ++i) {
                if (buf[i] != value(0, i)) j.wrong("bcast", bytes, i);
            }
        });
}

void allreduce_op(const job& j, std::size_t bytes) {
    const std::size_t n = bytes / 8;
    std::vector<std::uint64_t> in(n), out(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = value(j.rank, i);
    j.run(
        "allreduce", bytes,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_UINT64_T, MPI_SUM,
                              MPI_COMM_WORLD);
            }
        },
        [&] { std::fill(out.begin(), out.end(), 0); },
        [&] {
            for (std::size_t i = 0; i < n; ++i) {
                if (out[i] != sum_of_values(j.size, i)) j.wrong("allreduce", bytes, i);
            }
        });
}

void alltoall_op(const job& j, std::size_t bytes) {
    const std::size_t n = bytes / 8;
    const auto P = static_cast<std::size_t>(j.size);
    std::vector<std::uint64_t> in(n * P), out(n * P);
    for (std::size_t d = 0; d < P; ++d) {
        for (std::size_t e = 0; e < n; ++e)
            in[d * n + e] = block_value(j.rank, static_cast<int>(d), e);
    }
    j.run(
        "alltoall", bytes,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                MPI_Alltoall(in.data(), static_cast<int>(n), MPI_UINT64_T, out.data(),
                             static_cast<int>(n), MPI_UINT64_T, MPI_COMM_WORLD);
            }
        },
        [&] { std::fill(out.begin(), out.end(), 0); },
        [&] {
            for (std::size_t s = 0; s < P; ++s) {
                for (std::size_t e = 0; e < n; ++e) {
                    if (out[s * n + e] != block_value(static_cast<int>(s), j.rank, e)) {
                        j.wrong("alltoall", bytes, s * n + e);
                    }
                }
            }
        });
}

int run(const options& o, const extra_options& x, int rank, int size) {
    reporter rep(o.json ? output::json_only : output::table);
    batch_plan b;
    b.iters = o.iters;
    b.target = x.min_seconds > 0 ? x.min_seconds : 0.02;
    const job j{o, rank, size, rep, b};
    no_data_ops(j);
    if (runs(o, "scan") && !sizes_of(o, "scan").empty()) scan_op(j);
    if (runs(o, "bcast")) {
        for (std::size_t s : sizes_of(o, "bcast")) bcast_op(j, s);
    }
    if (runs(o, "allreduce")) {
        for (std::size_t s : sizes_of(o, "allreduce")) allreduce_op(j, s);
    }
    if (runs(o, "alltoall")) {
        for (std::size_t s : sizes_of(o, "alltoall")) alltoall_op(j, s);
    }
    return 0;
}

}  // namespace
}  // namespace am::bench::collectives

int main(int argc, char** argv) {
    using namespace am::bench;
    using namespace am::bench::collectives;
    extra_options x;
    const std::vector<option_spec> extra = extra_table(x);
    return mpi_baseline_main(
        argc, argv, "mpi_coll_baseline",
        "MPI baseline of collectives_bench (MPI_Barrier, MPI_Allreduce, MPI_Scan, MPI_Bcast, "
        "MPI_Alltoall). Positional mode: coll. Any number of ranks.",
        {"coll"}, 0, [&x](options& o, int rank, int size) { return run(o, x, rank, size); }, extra);
}
