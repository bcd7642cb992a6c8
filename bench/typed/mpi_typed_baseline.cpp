// SPDX-License-Identifier: MIT
// mpi_typed_baseline: the MPI side of typed_rate and epoch_overhead, run by them under
// `mpirun -n <ranks>` (bound to cores when every rank has one, else --oversubscribe) with the
// same options, printing the same JSON lines (system "mpi", transport "mpi"). Also usable on
// its own:
//
//   mpirun -n 2 --bind-to core mpi_typed_baseline alltoallv --messages 8M --json
//   mpirun -n 8 --oversubscribe mpi_typed_baseline barrier --min-ms 20 --json
//
// alltoallv: per repetition every rank produces the records typed_rate sends (the same
//   generator, seeds and destinations: bench/typed/typed_bench.hpp), buckets them by
//   destination (counting sort: a pass counting, a pass writing each record at its
//   bucket's next slot, records generated again rather than stored), exchanges the counts
//   (MPI_Alltoall) and the records (MPI_Alltoallv, 16-byte datatype), then runs the "handler"
//   loop over what arrived, adding the same checksum to a rank-local sum. Rank 0 times it
//   from a barrier to a barrier after the handler loop (op "alltoallv", rate_Mmsgps: records
//   of all ranks per second / 10^6). The sums and counts are checked afterwards (untimed).
// barrier: loops of MPI_Barrier (op "mpi_barrier") and of MPI_Allreduce of one uint64 (op
//   "mpi_allreduce"), K per repetition, calibrated like epoch_overhead's loops (--min-ms)
//   unless --iters K; latency_us per operation.
#include "lib/mpi_main.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "typed/typed_bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace am::bench {
namespace {

using typed::record;
constexpr std::uint64_t warmup_rep = std::uint64_t{1} << 32;  // as in typed_rate

struct job {
    const options& o;
    int rank;
    int size;
    reporter& rep;
    std::string bench;

    void report(const char* op, std::size_t bytes, const char* metric,
                const std::vector<double>& v) const {
        if (rank == 0) {
            rep.add(make_result(bench, "mpi", "mpi", size, op, bytes, metric, summarize(v)));
        }
    }
};

// ------------------------------------------------------------------------------ alltoallv

struct exchange {
    std::uint64_t m;  // records per rank
    int size;
    MPI_Datatype rec;
    std::vector<record> send;
    std::unique_ptr<record[]> recv;
    std::size_t recv_cap = 0;
    std::vector<int> scount, sdispl, rcount, rdispl, next;
    std::uint64_t sum = 0, count = 0;  // what the "handler" loop accumulated

    exchange(std::uint64_t records, int ranks, MPI_Datatype t)
        : m(records),
          size(ranks),
          rec(t),
          send(records),
          scount(static_cast<std::size_t>(ranks)),
          sdispl(static_cast<std::size_t>(ranks)),
          rcount(static_cast<std::size_t>(ranks)),
          rdispl(static_cast<std::size_t>(ranks)),
          next(static_cast<std::size_t>(ranks)) {
        reserve(records + records / 8 + 1024);
    }

    void reserve(std::size_t n) {
        if (n <= recv_cap) return;
        recv = std::make_unique<record[]>(n);  // zeroed: the pages are touched here
        recv_cap = n;
    }

    /// One repetition; returns the checksum of what this rank sent.
    std::uint64_t run(int rank, std::uint64_t rep) {
        const std::uint64_t seed = typed::stream_seed(rank, rep);
        const auto ranks = static_cast<std::size_t>(size);
        std::fill(scount.begin(), scount.end(), 0);
        for (std::uint64_t i = 0; i < m; ++i) {
            ++scount[static_cast<std::size_t>(typed::dest_of(typed::record_at(seed, i), size))];
        }
        int at = 0;
        for (std::size_t d = 0; d < ranks; ++d) {
            sdispl[d] = next[d] = at;
            at += scount[d];
        }
        std::uint64_t sent = 0;
        for (std::uint64_t i = 0; i < m; ++i) {
            const record r = typed::record_at(seed, i);
            sent += typed::checksum(r);
            send[static_cast<std::size_t>(
                next[static_cast<std::size_t>(typed::dest_of(r, size))]++)] = r;
        }
        MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
        std::size_t total = 0;
        for (std::size_t s = 0; s < ranks; ++s) {
            rdispl[s] = static_cast<int>(total);
            total += static_cast<std::size_t>(rcount[s]);
        }
        reserve(total);
        MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), rec, recv.get(), rcount.data(),
                      rdispl.data(), rec, MPI_COMM_WORLD);
        for (std::size_t j = 0; j < total; ++j) {  // the handler of typed_rate
            sum += typed::checksum(recv[j]);
            ++count;
        }
        return sent;
    }
};

void alltoallv_point(const job& j, std::uint64_t m) {
    MPI_Datatype rec;
    MPI_Type_contiguous(2, MPI_UINT64_T, &rec);
    MPI_Type_commit(&rec);
    exchange x(m, j.size, rec);
    auto repetition = [&](std::uint64_t rep) {
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = bench_clock::now();
        const std::uint64_t sent = x.run(j.rank, rep);
        MPI_Barrier(MPI_COMM_WORLD);
        const double s = seconds_since(t0);
        // Untimed: every record sent was handled exactly once, somewhere.
        const std::uint64_t mine[3] = {sent, x.sum, x.count};
        std::uint64_t all[3] = {};
        MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        x.sum = x.count = 0;
        if (all[0] != all[1] || all[2] != m * static_cast<std::uint64_t>(j.size)) {
            if (j.rank == 0) {
                std::fprintf(
                    stderr,
                    "mpi_typed_baseline: WRONG RESULT: handled %llu records with "
                    "checksum %llu, sent %llu with checksum %llu\n",
                    static_cast<unsigned long long>(all[2]),
                    static_cast<unsigned long long>(all[1]),
                    static_cast<unsigned long long>(m * static_cast<std::uint64_t>(j.size)),
                    static_cast<unsigned long long>(all[0]));
            }
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        return s;
    };
    (void)repetition(warmup_rep);
    std::vector<double> v;
    for (int r = 0; r < j.o.reps; ++r) {
        const double s = repetition(static_cast<std::uint64_t>(r));
        v.push_back(static_cast<double>(m) * j.size / s / 1e6);
    }
    j.report("alltoallv", sizeof(record), "rate_Mmsgps", v);
    MPI_Type_free(&rec);
}

// -------------------------------------------------------------------------------- barrier

template <class Loop>
void loop_point(const job& j, double target, const char* op, Loop loop) {
    std::uint64_t k = j.o.iters;
    if (k == 0) {
        k = 16;
        for (;;) {
            // The shorter of two trials, as epoch_overhead calibrates.
            double s = 0;
            for (int trial = 0; trial < 2; ++trial) {
                MPI_Barrier(MPI_COMM_WORLD);
                const auto t0 = bench_clock::now();
                loop(k);
                const double t = seconds_since(t0);
                s = trial == 0 ? t : std::min(s, t);
            }
            MPI_Bcast(&s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);  // rank 0's time decides
            const std::uint64_t next = typed::next_count(k, s, target);
            if (next == 0) break;
            k = next;
        }
    } else {
        loop(std::max<std::uint64_t>(1, k / 10));  // warm-up
    }
    std::vector<double> v;
    for (int r = 0; r < j.o.reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = bench_clock::now();
        loop(k);
        v.push_back(seconds_since(t0) * 1e6 / static_cast<double>(k));
    }
    j.report(op, 0, "latency_us", v);
}

void barrier_points(const job& j, double target) {
    if (j.o.wants("mpi_barrier")) {
        loop_point(j, target, "mpi_barrier", [](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) MPI_Barrier(MPI_COMM_WORLD);
        });
    }
    if (j.o.wants("mpi_allreduce")) {
        const auto want = static_cast<std::uint64_t>(j.size) * (j.size + 1) / 2;
        const auto mine = static_cast<std::uint64_t>(j.rank) + 1;
        loop_point(j, target, "mpi_allreduce", [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                std::uint64_t sum = 0;
                MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
                if (sum != want) {
                    std::fprintf(stderr, "mpi_typed_baseline: WRONG RESULT: allreduce\n");
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        });
    }
}

int run(const options& o, const typed::extra_options& x, int rank, int size) {
    reporter rep(o.json ? output::json_only : output::table);
    const job j{o, rank, size, rep, o.bench.empty() ? "mpi_" + o.mode : o.bench};
    if (o.mode == "barrier") {
        barrier_points(j, x.min_seconds > 0 ? x.min_seconds : 0.02);
        return 0;
    }
    const std::uint64_t m = x.messages != 0 ? x.messages : std::uint64_t{8} << 20;
    if (m > 0x7fffffffull) {
        if (rank == 0) std::fprintf(stderr, "mpi_typed_baseline: --messages beyond 2^31\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    alltoallv_point(j, m);
    return 0;
}

constexpr const char* about = R"(MPI baseline of typed_rate (mode alltoallv: --messages N per
rank) and epoch_overhead (mode barrier:
--iters K or --min-ms T). Any number of ranks.)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    typed::extra_options x;
    return mpi_baseline_main(
        argc, argv, "mpi_typed_baseline", about, {"alltoallv", "barrier"}, 0,
        [&x](const options& o, int rank, int size) { return run(o, x, rank, size); },
        typed::extra_table(x, false));
}
