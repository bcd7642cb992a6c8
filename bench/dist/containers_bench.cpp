// SPDX-License-Identifier: MIT
// containers_bench: am's distributed containers (am::dist, issue 32) against a hand-written
// MPI_Alltoallv batch and a single-threaded std::unordered_map, in the same invocation. Per
// rank count, one am job per transport, then the MPI baseline (mpi_dist_baseline under
// mpirun, as many ranks) and the std::unordered_map reference (this process, one thread).
//
//   containers_bench [--json] [--ranks 2,4,8] [--transports threads,shm,mpi] [--ops a,b]
//                    [--keys 8,32] [--dist uniform,powerlaw] [--n 1M] [--reps 7] [--rounds N]
//                    [--quick] [--no-baseline]
//
// Ops (dist_bench.hpp): map_insert, set_insert, counting_set, visit, bag, dsu; an op on
// power-law keys is named op.powerlaw ("map_insert.powerlaw"). bytes: the key's size, 8
// (uint64_t) or 32 (a trivially copyable struct of four uint64_t, dist_bench.hpp's key32).
// Each rank does --n operations on its own keys (the same keys on every side); a repetition
// is, on every rank: a new container (untimed), a team barrier, the n operations, and the
// container's barrier(), which completes them all; its time is the slowest rank's.
//
// Lines (metric ops_per_s = ranks x n / the slowest rank's time, median over --reps, after one
// untimed repetition):
//   system am                 the am::dist container, transport threads|shm|mpi
//   system mpi_alltoallv      each rank buckets its keys by owner (am's hash), MPI_Alltoall of
//                             the counts, MPI_Alltoallv of the records, then applies them to a
//                             std::unordered_map / set / vector: the same final state (not dsu)
//   system std_umap           std::unordered_map: one thread does every rank's operations on
//                             one std container (dsu: a sequential union-find), transport "none"
//   system am/mpi             metric ratio_am_over_mpi: am ops/s over mpi_alltoallv's (> 1: am
//                             faster)
//   system am/std             metric ratio_am_rank_over_std: am ops/s per rank over the one
//                             thread's ops/s (the "per core" figure)
// (The names fit the fields of bench/lib/report.hpp's result: system 15 characters, metric 23.)
//
// Instructions per operation (callgrind; both ranks are threads of one process):
//   valgrind --tool=callgrind --toggle-collect='*point::timed*' containers_bench --transport
//       threads --ranks 2 --ops map_insert --keys 8 --dist uniform --n 100000 --reps 1
//       --no-baseline
// then the total over 2 ranks x 2 repetitions (one warm-up) x n.
//
// Checked, untimed, on the last am repetition: counting_set's counts, visit's sums and the
// bag's items add up to ranks x n; a wrong total fails the run.
#include "dist/dist_bench.hpp"
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <am/am.hpp>
#include <am/dist.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#ifndef AM_BENCH_MPI_DIST_BASELINE
#define AM_BENCH_MPI_DIST_BASELINE ""
#endif

namespace am::bench::dist {
namespace {

struct plan {
    std::vector<int> ranks;
    std::vector<std::string> transports;
    std::vector<std::uint64_t> keys;
    std::vector<bool> powerlaw;
    std::uint64_t n = 0;
};

/// One rank's view of a job: the world team and the slowest-rank reduction.
struct point {
    am::context& ctx;
    const rank_env& env;
    const plan& p;
    const am::team& world;

    [[nodiscard]] double slowest(double s) const {
        return am::coll::allreduce(world, s, am::coll::max{});
    }
    /// A team barrier, `body()`, then `c.barrier()`: the slowest rank's seconds. Not inlined, so
    /// that callgrind can count what it runs alone (--toggle-collect='*point::timed*'): the
    /// operations, the handlers they run on this rank, the barrier.
    template <class C, class Body>
    [[gnu::noinline]] double timed(C& c, Body&& body) const {
        am::coll::barrier(world);
        const auto t0 = bench_clock::now();
        body();
        c.barrier();
        return slowest(seconds_since(t0));
    }
    /// Fails the run unless the team's `mine` add up to ranks x n.
    void check_total(const char* op, std::uint64_t mine) const {
        const std::uint64_t all = am::coll::allreduce(world, mine, am::coll::sum{});
        const std::uint64_t want = static_cast<std::uint64_t>(ctx.size()) * p.n;
        if (all != want) {
            throw std::runtime_error("containers_bench: WRONG RESULT: " + std::string(op) +
                                     " total " + std::to_string(all) + ", want " +
                                     std::to_string(want));
        }
    }
};

/// One repetition of op `O` on `keys`: seconds of the slowest rank.
template <class K, kind O>
double one_rep(const point& pt, kind_t<O>, const std::vector<K>& keys,
               const std::vector<K>& partners, bool check) {
    using H = hash_t<K>;
    if constexpr (O == kind::map_insert) {
        am::dist::map<K, std::uint64_t, H> m(pt.world);
        return pt.timed(m, [&] {
            for (const K& k : keys) m.insert(k, value_of(k));
        });
    } else if constexpr (O == kind::visit) {
        am::dist::map<K, std::uint64_t, H> m(pt.world);
        const double t = pt.timed(m, [&] {
            for (const K& k : keys) {
                m.async_visit(
                    k, [](const K&, std::uint64_t& v, std::uint64_t x) { v += x; }, value_of(k));
            }
        });
        if (check) {
            std::uint64_t sum = 0;
            m.for_all([&](const K&, std::uint64_t v) { sum += v; });
            pt.check_total("visit", sum);
        }
        return t;
    } else if constexpr (O == kind::counting_set) {
        am::dist::counting_set<K, H> c(pt.world);
        const double t = pt.timed(c, [&] {
            for (const K& k : keys) c.add(k);
        });
        if (check) {
            std::uint64_t sum = 0;
            c.for_all([&](const K&, std::uint64_t v) { sum += v; });
            pt.check_total("counting_set", sum);
        }
        return t;
    } else if constexpr (O == kind::set_insert) {
        am::dist::set<K, H> s(pt.world);
        return pt.timed(s, [&] {
            for (const K& k : keys) s.insert(k);
        });
    } else if constexpr (O == kind::bag) {
        am::dist::bag<K> b(pt.world);
        const double t = pt.timed(b, [&] {
            for (const K& k : keys) b.insert(k);
        });
        if (check) pt.check_total("bag", b.local_size());
        return t;
    } else {
        am::dist::disjoint_set<K, H> d(pt.world);
        return pt.timed(d, [&] {
            for (std::size_t i = 0; i < keys.size(); ++i) d.async_union(keys[i], partners[i]);
        });
    }
}

template <class K>
void run_point(const point& pt, const std::string& op, bool powerlaw) {
    const int me = pt.ctx.rank();
    const std::uint64_t n = pt.p.n;
    const std::vector<K> keys = keys_of<K>(me, n, powerlaw);
    std::vector<K> partners;
    if (op == "dsu") {
        for (std::uint64_t i = 0; i < n; ++i) partners.push_back(keys[partner(me, i, n)]);
    }
    const int reps = pt.env.opts().reps;
    std::vector<double> v;
    with_kind(op, [&]<kind O>(kind_t<O> o) {
        for (int rep = -1; rep < reps; ++rep) {  // -1: warm-up
            const double t = one_rep<K>(pt, o, keys, partners, rep == reps - 1);
            if (rep >= 0) v.push_back(ops_per_s(pt.ctx.size(), n, t));
        }
    });
    pt.env.report(pt.ctx, bench_name, op_name(op, powerlaw).c_str(), sizeof(K), "ops_per_s", v);
}

void rank_main(am::context& ctx, rank_env& env, const plan& p) {
    const am::team world = am::coll::world(ctx);
    const point pt{ctx, env, p, world};
    for (const std::uint64_t bytes : p.keys) {
        for (const bool pl : p.powerlaw) {
            for (const std::string& op : all_ops) {
                if (!env.opts().wants(op)) continue;
                if (bytes == 8) {
                    run_point<std::uint64_t>(pt, op, pl);
                } else {
                    run_point<key32>(pt, op, pl);
                }
            }
        }
    }
    ctx.barrier();
}

/// For every am ops_per_s line in `part`: its ratio over the `den` line of the same op and
/// key size (am per rank when `per_rank`), as system `system`, metric `metric`.
void add_ratio_lines(reporter& part, std::string_view den, const char* system, const char* metric,
                     bool per_rank) {
    const std::vector<result> snapshot = part.results();
    for (const result& a : snapshot) {
        if (std::string_view(a.system) != "am") continue;
        const std::optional<result> b = part.find(den, a.op, a.bytes, "ops_per_s");
        if (!b || b->median == 0 || b->min == 0 || b->max == 0) continue;
        const double per = per_rank ? 1.0 / a.ranks : 1.0;
        const summary num{a.median * per, a.min * per, a.max * per, a.reps};
        part.add(make_result(bench_name, system, a.transport, a.ranks, a.op, a.bytes, metric,
                             ratio_of(num, {b->median, b->min, b->max, b->reps})));
    }
}

/// The MPI_Alltoallv baseline at `ranks` ranks (same ops but dsu, keys, n and reps) into
/// `part`. False when it was wanted but could not run.
bool compare_with_mpi(const options& o, const plan& p, int ranks, reporter& part) {
    if (!o.baseline) return true;
    const std::string exe = AM_BENCH_MPI_DIST_BASELINE;
    if (exe.empty()) {
        std::fprintf(stderr,
                     "containers_bench: NO MPI BASELINE: mpi_dist_baseline was not "
                     "built (no MPI); am figures are not compared with it\n");
        return false;
    }
    std::string ops, keys, dists;
    for (const std::string& op : all_ops) {
        if (o.wants(op) && op != "dsu") ops += (ops.empty() ? "" : ",") + op;
    }
    if (ops.empty()) return true;
    for (const std::uint64_t b : p.keys) keys += (keys.empty() ? "" : ",") + std::to_string(b);
    for (const bool pl : p.powerlaw) {
        dists += std::string(dists.empty() ? "" : ",") + (pl ? "powerlaw" : "uniform");
    }
    std::vector<std::string> argv = mpirun_command(o, ranks, o.pin != 0);
    argv.insert(argv.end(),
                {exe, "dist", "--reps", std::to_string(o.reps), "--n", std::to_string(p.n),
                 "--keys", keys, "--dist", dists, "--ops", ops, "--json"});
    const child_outcome c = run_collecting(argv, {}, part);
    if (c.status != 0 || c.results == 0) {
        std::fprintf(stderr,
                     "containers_bench: NO MPI BASELINE: '%s -n %d ... %s' failed "
                     "(status %d, %d results)\n",
                     argv[0].c_str(), ranks, exe.c_str(), c.status, c.results);
        return false;
    }
    return true;
}

/// The std::unordered_map reference of every point at `ranks` ranks into `part`.
void compare_with_std(const options& o, const plan& p, int ranks, reporter& part) {
    for (const std::uint64_t bytes : p.keys) {
        for (const bool pl : p.powerlaw) {
            for (const std::string& op : all_ops) {
                if (!o.wants(op)) continue;
                const std::vector<double> v =
                    bytes == 8 ? std_reference<std::uint64_t>(op, ranks, p.n, pl, o.reps)
                               : std_reference<key32>(op, ranks, p.n, pl, o.reps);
                part.add(make_result(bench_name, std_system, "none", ranks, op_name(op, pl), bytes,
                                     "ops_per_s", summarize(v)));
            }
        }
    }
}

plan make_plan(const options& o, const extra_options& x) {
    plan p;
    const bool quick = x.coll.quick;
    p.ranks = !x.coll.ranks.empty() ? x.coll.ranks
              : quick               ? std::vector<int>{2}
                                    : std::vector<int>{2, 4, 8};
    p.transports = o.transport_given            ? std::vector<std::string>{o.transport}
                   : !x.coll.transports.empty() ? x.coll.transports
                   : quick                      ? std::vector<std::string>{"threads", "shm"}
                                                : std::vector<std::string>{"threads", "shm", "mpi"};
    p.keys = !x.keys.empty() ? x.keys : std::vector<std::uint64_t>{8, 32};
    const std::vector<std::string> d =
        !x.dists.empty() ? x.dists : std::vector<std::string>{"uniform", "powerlaw"};
    for (const std::string& s : d) p.powerlaw.push_back(s == "powerlaw");
    p.n = x.n != 0 ? x.n : quick ? 2000 : std::uint64_t{1} << 20;
    if (o.mpi_child || std::getenv("AM_SHM_NAME") != nullptr ||
        (o.transport == "mpi" && am::launched_by_mpi())) {
        p.ranks.resize(1);  // one job, whose size the launcher chose
    }
    return p;
}

constexpr const char* about = R"(am::dist containers (map insert, set insert, counting_set add,
map async_visit, bag insert, disjoint_set async_union) against a hand-written MPI_Alltoallv batch
and a single-threaded std::unordered_map on the same keys, in the same run.
--ops: map_insert, set_insert, counting_set, visit, bag, dsu.)";

}  // namespace
}  // namespace am::bench::dist

int main(int argc, char** argv) {
    using namespace am::bench;
    using namespace am::bench::dist;
    extra_options x;
    options o = bench_options(argc, argv, bench_name, about, extra_table(x), true);
    for (const std::string& op : o.ops) {
        if (!known_op(op)) {
            std::fprintf(stderr, "containers_bench: --ops: unknown op '%s'\n", op.c_str());
            return 2;
        }
    }
    if (x.coll.quick && !given(o, "--reps")) o.reps = 3;
    const plan p = make_plan(o, x);
    const std::vector<std::string> base_args = o.args;

    bool baseline_ok = true;
    const int status =
        run_rounds(o, o.json ? output::json : output::table, [&](reporter& rep, bool& reporting) {
            for (const int n : p.ranks) {
                reporter part(output::quiet);  // one rank count: its ratios, then into `rep`
                for (const std::string& tp : p.transports) {
                    options job = o;
                    job.ranks = n;
                    job.transport = tp;
                    job.args = base_args;
                    job.args.insert(job.args.end(),
                                    {"--transport", tp, "--ranks", std::to_string(n)});
                    const int st = run_am_job(
                        job, {.hop = false},
                        [&p](am::context& ctx, rank_env& env) { rank_main(ctx, env, p); }, part,
                        reporting);
                    if (st != 0 || !reporting) return st;
                }
                baseline_ok = compare_with_mpi(o, p, n, part) && baseline_ok;
                compare_with_std(o, p, n, part);
                add_ratio_lines(part, "mpi_alltoallv", "am/mpi", mpi_ratio, false);
                add_ratio_lines(part, std_system, "am/std", std_ratio, true);
                for (const result& r : part.results()) rep.add(r);
            }
            return 0;
        });
    return status != 0 ? status : baseline_ok ? 0 : no_baseline_status;
}
