// SPDX-License-Identifier: MIT
// mpi_dist_baseline: the MPI side of containers_bench, run by it under `mpirun -n <ranks>`
// with the same ops (not dsu), keys, --n and repetitions, printing the same JSON lines (system
// "mpi_alltoallv", transport "mpi"). Also usable on its own:
//
//   mpirun -n 2 --bind-to core mpi_dist_baseline dist --n 1M --keys 8 --dist uniform --json
//
// A repetition, on every rank, timed from an MPI_Barrier to the end of the last local update
// (the slowest rank's time): bucket the n records by destination (the owner by am's hash,
// dist_bench.hpp; bag: round-robin from rank + 1, as am::dist::bag deals), MPI_Alltoall of the
// counts, MPI_Alltoallv of the records (the key, and for map_insert and visit a uint64), then
// apply every received record to a fresh std::unordered_map / set / vector
// (dist_bench.hpp's local_state: the final state of am's container).
#include "dist/dist_bench.hpp"
#include "lib/mpi_main.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

namespace am::bench::dist {
namespace {

template <class K>
struct kv_record {
    K k;
    std::uint64_t v;
};

/// Ops per second of every rank per repetition (after an untimed warm-up repetition).
template <class K, kind O>
std::vector<double> mpi_point(kind_t<O> o, int rank, int ranks, std::uint64_t n, bool powerlaw,
                              int reps) {
    constexpr bool kv = O == kind::map_insert || O == kind::visit;
    using R = std::conditional_t<kv, kv_record<K>, K>;
    if (n * sizeof(R) > static_cast<std::uint64_t>(INT_MAX)) {
        std::fprintf(stderr, "mpi_dist_baseline: --n %llu: more than 2 GiB of records\n",
                     static_cast<unsigned long long>(n));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const auto P = static_cast<std::size_t>(ranks);
    const std::vector<K> keys = keys_of<K>(rank, n, powerlaw);
    std::vector<R> out(n), in;
    std::vector<int> dest(n), sc(P), sd(P), rc(P), rd(P), at(P);
    std::vector<double> v;
    for (int rep = -1; rep < reps; ++rep) {
        local_state<K> s;
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = bench_clock::now();
        std::fill(sc.begin(), sc.end(), 0);
        for (std::uint64_t i = 0; i < n; ++i) {
            const int d =
                O == kind::bag ? static_cast<int>((rank + 1 + i) % P) : owner(keys[i], ranks);
            dest[i] = d;
            ++sc[static_cast<std::size_t>(d)];
        }
        std::exclusive_scan(sc.begin(), sc.end(), at.begin(), 0);
        for (std::uint64_t i = 0; i < n; ++i) {
            R& r = out[static_cast<std::size_t>(at[static_cast<std::size_t>(dest[i])]++)];
            if constexpr (kv) {
                r = R{keys[i], value_of(keys[i])};
            } else {
                r = keys[i];
            }
        }
        MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, MPI_COMM_WORLD);
        const int total = std::accumulate(rc.begin(), rc.end(), 0);
        in.resize(static_cast<std::size_t>(total));
        constexpr int w = static_cast<int>(sizeof(R));
        for (std::size_t d = 0; d < P; ++d) {
            sc[d] *= w;
            rc[d] *= w;
        }
        std::exclusive_scan(sc.begin(), sc.end(), sd.begin(), 0);
        std::exclusive_scan(rc.begin(), rc.end(), rd.begin(), 0);
        MPI_Alltoallv(out.data(), sc.data(), sd.data(), MPI_BYTE, in.data(), rc.data(), rd.data(),
                      MPI_BYTE, MPI_COMM_WORLD);
        for (const R& r : in) {
            if constexpr (kv) {
                s.apply(o, r.k, r.v);
            } else {
                s.apply(o, r, 1);
            }
        }
        const double t = seconds_since(t0);
        double slowest = 0;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rep >= 0) v.push_back(ops_per_s(ranks, n, slowest));
    }
    return v;
}

int run(const options& o, const extra_options& x, int rank, int size) {
    reporter rep(o.json ? output::json_only : output::table);
    const std::uint64_t n = x.n != 0 ? x.n : std::uint64_t{1} << 20;
    const std::vector<std::uint64_t> keys =
        !x.keys.empty() ? x.keys : std::vector<std::uint64_t>{8, 32};
    const std::vector<std::string> dists =
        !x.dists.empty() ? x.dists : std::vector<std::string>{"uniform", "powerlaw"};
    for (const std::uint64_t bytes : keys) {
        for (const std::string& d : dists) {
            const bool pl = d == "powerlaw";
            for (const std::string& op : all_ops) {
                if (!o.wants(op) || op == "dsu") continue;
                const std::vector<double> v = with_kind(op, [&]<kind O>(kind_t<O> k) {
                    return bytes == 8 ? mpi_point<std::uint64_t>(k, rank, size, n, pl, o.reps)
                                      : mpi_point<key32>(k, rank, size, n, pl, o.reps);
                });
                if (rank == 0) {
                    rep.add(make_result(bench_name, "mpi_alltoallv", "mpi", size, op_name(op, pl),
                                        bytes, "ops_per_s", summarize(v)));
                }
            }
        }
    }
    return 0;
}

}  // namespace
}  // namespace am::bench::dist

int main(int argc, char** argv) {
    using namespace am::bench;
    using namespace am::bench::dist;
    extra_options x;
    const std::vector<option_spec> extra = extra_table(x);
    return mpi_baseline_main(
        argc, argv, "mpi_dist_baseline",
        "MPI_Alltoallv batch baseline of containers_bench (map_insert, set_insert, counting_set, "
        "visit, bag). Positional mode: dist. Any number of ranks.",
        {"dist"}, 0, [&x](options& o, int rank, int size) { return run(o, x, rank, size); }, extra);
}
