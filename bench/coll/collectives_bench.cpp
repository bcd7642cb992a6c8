// SPDX-License-Identifier: MIT
// collectives_bench: am::coll collectives against MPI's (issue 31). Per rank count, one am job
// per transport, then the MPI baseline (mpi_coll_baseline under mpirun) on as many ranks, in
// the same invocation; with --rounds N the pair repeats N times (am and MPI alternate, so a
// change of machine state mid-way hits both) and the figures are pooled.
//
//   collectives_bench [--json] [--ranks 2,4,8] [--transports threads,shm,mpi] [--ops a,b]
//                     [--sizes 8,1K,64K,1M] [--reps 7] [--rounds N] [--iters K] [--min-ms 20]
//                     [--quick] [--no-baseline]
//   collectives_bench --ops epoch,barrier --transport threads --ranks 64,128,256,512,1024
//                     --no-baseline          the scaling of the issue (fits: plot_collectives.py)
//
// Ops (system "am", the world team; "mpi": MPI_COMM_WORLD; bytes as coll_bench.hpp says):
//   barrier      am::coll::barrier                       MPI_Barrier
//   ctx_barrier  ctx.barrier() (the core's)              (ratio over MPI_Barrier)
//   epoch        `am::epoch e(ctx); e.end();` (empty)    MPI_Allreduce of 2 uint64 counters
//   scan         am::coll::inclusive_scan of a uint64    MPI_Scan, MPI_SUM
//   bcast        am::coll::broadcast(span<uint64_t>)     MPI_Bcast, root 0
//   allreduce    am::coll::allreduce(span in, span out, sum{}) of uint64   MPI_Allreduce
//   alltoall     am::coll::alltoall(span) (returns a vector)               MPI_Alltoall
// Metrics: latency_us, the slowest rank's time for a batch of K operations / K, every rank
// starting after a barrier (K calibrated so that a repetition lasts --min-ms, the same on every
// rank, or --iters), median over --reps; bcast and
// allreduce from 64 KiB also bandwidth_GBps = bytes / time. Ratio lines (system "am/mpi", one
// per am line): latency_ratio (am time / MPI time: < 1 is faster) and bandwidth_ratio (am / MPI
// bandwidth: > 1 is faster).
//
// Both sides check every repetition's last result, untimed, the same way (bcast: the root's
// data, after zeroing the others' buffers; allreduce: every element's sum, after zeroing the
// output; scan and alltoall: every value); a wrong one fails the run.
//
// Ranks beyond the cores oversubscribe them: am ranks then neither pin nor busy-poll (every
// wait backs off) and the MPI job runs with --oversubscribe (Open MPI then yields when idle).
#include "coll/coll_bench.hpp"
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <am/am.hpp>

#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef AM_BENCH_MPI_COLL_BASELINE
#define AM_BENCH_MPI_COLL_BASELINE ""
#endif

namespace am::bench::collectives {
namespace {

struct plan {
    std::vector<int> ranks;
    std::vector<std::string> transports;
    batch_plan batch;
};

[[noreturn]] void wrong(const am::context& ctx, const std::string& op, std::size_t bytes,
                        const std::string& what) {
    throw std::runtime_error("collectives_bench: WRONG RESULT on rank " +
                             std::to_string(ctx.rank()) + ": " + op + " " + std::to_string(bytes) +
                             " B: " + what);
}

/// One rank's view of a point: the world team and the helpers the measuring templates need.
struct point {
    am::context& ctx;
    const rank_env& env;
    const plan& p;
    const am::team& world;

    void barrier() const { ctx.barrier(); }
    /// The largest `s` of all ranks (untimed plumbing; am::coll's own allreduce).
    [[nodiscard]] double slowest(double s) const {
        return am::coll::allreduce(world, s, am::coll::max{});
    }

    /// Calibrates K, times the repetitions, reports latency (and bandwidth).
    template <class Loop, class Reset, class Check>
    void run(const char* op, std::size_t bytes, Loop loop, Reset reset, Check check) const {
        auto sync = [this] { barrier(); };
        auto max = [this](double s) { return slowest(s); };
        const std::uint64_t k = batch_size(p.batch, loop, sync, max);
        const std::vector<double> us =
            time_batches(env.opts().reps, k, loop, sync, max, std::move(reset), std::move(check));
        env.report(ctx, bench_name, op, bytes, "latency_us", us);
        if (with_bandwidth(op, bytes)) {
            env.report(ctx, bench_name, op, bytes, "bandwidth_GBps", bandwidth_of(bytes, us));
        }
        if (ctx.rank() == 0 && !env.opts().mpi_child && !env.opts().json) {
            std::fprintf(stderr, "collectives_bench: am %s %s %zu B, %d ranks: K = %llu\n",
                         env.transport().c_str(), op, bytes, ctx.size(),
                         static_cast<unsigned long long>(k));
        }
    }
};

auto nothing = [] {};

void no_data_ops(const point& pt) {
    const options& o = pt.env.opts();
    if (runs(o, "barrier")) {
        pt.run(
            "barrier", 0,
            [&](std::uint64_t k) {
                for (std::uint64_t i = 0; i < k; ++i) am::coll::barrier(pt.world);
            },
            nothing, nothing);
    }
    if (runs(o, "ctx_barrier")) {
        pt.run(
            "ctx_barrier", 0,
            [&](std::uint64_t k) {
                for (std::uint64_t i = 0; i < k; ++i) pt.ctx.barrier();
            },
            nothing, nothing);
    }
    if (runs(o, "epoch")) {
        // As bench/core/scaling.cpp's epoch_general: the default (general) detector.
        pt.run(
            "epoch", 0,
            [&](std::uint64_t k) {
                for (std::uint64_t i = 0; i < k; ++i) {
                    am::epoch e(pt.ctx);
                    e.end();
                }
            },
            nothing, nothing);
    }
}

void scan_op(const point& pt) {
    const auto v = static_cast<std::uint64_t>(pt.ctx.rank()) + 1;
    std::uint64_t got = 0;
    pt.run(
        "scan", 8,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                got = am::coll::inclusive_scan(pt.world, v, am::coll::sum{});
            }
        },
        [&] { got = 0; },
        [&] {
            if (got != scan_of(pt.ctx.rank())) wrong(pt.ctx, "scan", 8, std::to_string(got));
        });
}

void bcast_op(const point& pt, std::size_t bytes) {
    const std::size_t n = bytes / 8;
    const int me = pt.ctx.rank();
    std::vector<std::uint64_t> buf(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = value(0, i);
    pt.run(
        "bcast", bytes,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                am::coll::broadcast(pt.world, std::span<std::uint64_t>(buf), 0);
            }
        },
        [&] {
            if (me != 0) std::fill(buf.begin(), buf.end(), 0);
        },
        [&] {
            for (std::size_t i = 0; i < n; ++i) {
                if (buf[i] != value(0, i))
                    wrong(pt.ctx, "bcast", bytes, "element " + std::to_string(i));
            }
        });
}

void allreduce_op(const point& pt, std::size_t bytes) {
    const std::size_t n = bytes / 8;
    const int me = pt.ctx.rank(), P = pt.ctx.size();
    std::vector<std::uint64_t> in(n), out(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = value(me, i);
    pt.run(
        "allreduce", bytes,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                am::coll::allreduce(pt.world, std::span<const std::uint64_t>(in),
                                    std::span<std::uint64_t>(out), am::coll::sum{});
            }
        },
        [&] { std::fill(out.begin(), out.end(), 0); },
        [&] {
            for (std::size_t i = 0; i < n; ++i) {
                if (out[i] != sum_of_values(P, i)) {
                    wrong(pt.ctx, "allreduce", bytes, "element " + std::to_string(i));
                }
            }
        });
}

void alltoall_op(const point& pt, std::size_t bytes) {
    const std::size_t n = bytes / 8;
    const int me = pt.ctx.rank(), P = pt.ctx.size();
    std::vector<std::uint64_t> in(n * static_cast<std::size_t>(P)), out;
    for (int j = 0; j < P; ++j) {
        for (std::size_t e = 0; e < n; ++e)
            in[static_cast<std::size_t>(j) * n + e] = block_value(me, j, e);
    }
    pt.run(
        "alltoall", bytes,
        [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                out = am::coll::alltoall(pt.world, std::span<const std::uint64_t>(in));
            }
        },
        [&] { out.clear(); },
        [&] {
            if (out.size() != in.size()) wrong(pt.ctx, "alltoall", bytes, "size");
            for (int s = 0; s < P; ++s) {
                for (std::size_t e = 0; e < n; ++e) {
                    if (out[static_cast<std::size_t>(s) * n + e] != block_value(s, me, e)) {
                        wrong(pt.ctx, "alltoall", bytes, "block from " + std::to_string(s));
                    }
                }
            }
        });
}

void rank_main(am::context& ctx, rank_env& env, const plan& p) {
    const am::team world = am::coll::world(ctx);
    const point pt{ctx, env, p, world};
    const options& o = env.opts();
    no_data_ops(pt);
    if (runs(o, "scan") && !sizes_of(o, "scan").empty()) scan_op(pt);
    if (runs(o, "bcast")) {
        for (std::size_t s : sizes_of(o, "bcast")) bcast_op(pt, s);
    }
    if (runs(o, "allreduce")) {
        for (std::size_t s : sizes_of(o, "allreduce")) allreduce_op(pt, s);
    }
    if (runs(o, "alltoall")) {
        for (std::size_t s : sizes_of(o, "alltoall")) alltoall_op(pt, s);
    }
    ctx.barrier();
}

/// The MPI baseline at `ranks` ranks (same ops, sizes, reps and K rule), then the ratios into
/// `part`. False when it was wanted but could not run.
bool compare_with_mpi(const options& o, const plan& p, int ranks, reporter& part) {
    if (!o.baseline) return true;
    const std::string exe = AM_BENCH_MPI_COLL_BASELINE;
    if (exe.empty()) {
        std::fprintf(stderr,
                     "collectives_bench: NO MPI BASELINE: mpi_coll_baseline was not "
                     "built (no MPI); am figures are not compared\n");
        return false;
    }
    std::vector<std::string> argv = mpirun_command(o, ranks, o.pin != 0);
    argv.insert(argv.end(), {exe, "coll", "--reps", std::to_string(o.reps), "--json"});
    if (p.batch.iters != 0) {
        argv.insert(argv.end(), {"--iters", std::to_string(p.batch.iters)});
    } else {
        argv.insert(argv.end(),
                    {"--min-ms", std::to_string(static_cast<long long>(p.batch.target * 1e3))});
    }
    std::string ops;
    for (const std::string& op : all_ops) {
        if (runs(o, op)) ops += (ops.empty() ? "" : ",") + op;
    }
    argv.insert(argv.end(), {"--ops", ops});
    if (!o.sizes.empty()) argv.insert(argv.end(), {"--sizes", join_sizes(o.sizes)});
    const child_outcome c = run_collecting(argv, {}, part);
    if (c.status != 0 || c.results == 0) {
        std::fprintf(stderr,
                     "collectives_bench: NO MPI BASELINE: '%s -n %d ... %s' failed "
                     "(status %d, %d results)\n",
                     argv[0].c_str(), ranks, exe.c_str(), c.status, c.results);
        return false;
    }
    for (const std::string& op : all_ops) {
        const char* den = op == "ctx_barrier" ? "barrier" : op.c_str();
        part.add_ratios("am", op, "mpi", den, "latency_us", "latency_ratio");
        part.add_ratios("am", op, "mpi", den, "bandwidth_GBps", "bandwidth_ratio");
    }
    return true;
}

plan make_plan(const options& o, const extra_options& x) {
    plan p;
    p.ranks = !x.ranks.empty() ? x.ranks
              : x.quick        ? std::vector<int>{2}
                               : std::vector<int>{2, 4, 8};
    p.transports = o.transport_given       ? std::vector<std::string>{o.transport}
                   : !x.transports.empty() ? x.transports
                   : x.quick               ? std::vector<std::string>{"threads", "shm"}
                                           : std::vector<std::string>{"threads", "shm", "mpi"};
    p.batch.iters = o.iters != 0 ? o.iters : x.quick ? 20 : 0;
    p.batch.target = x.min_seconds > 0 ? x.min_seconds : 0.02;
    if (o.mpi_child || std::getenv("AM_SHM_NAME") != nullptr ||
        (o.transport == "mpi" && am::launched_by_mpi())) {
        p.ranks.resize(1);  // one job, whose size the launcher chose
    }
    return p;
}

constexpr const char* about = R"(am::coll collectives (barrier, epoch, scan, bcast, allreduce,
alltoall; and ctx.barrier()) against MPI's on the same ranks, sizes and checks, in the same run.
--ops: barrier, ctx_barrier, epoch, scan, bcast, allreduce, alltoall (ctx_barrier runs with
barrier); --iters K: operations per repetition (default: calibrated to --min-ms).)";

}  // namespace
}  // namespace am::bench::collectives

int main(int argc, char** argv) {
    using namespace am::bench;
    using namespace am::bench::collectives;
    extra_options x;
    options o = bench_options(argc, argv, bench_name, about, extra_table(x), true);
    for (const std::string& op : o.ops) {
        if (!known_op(op)) {
            std::fprintf(stderr, "collectives_bench: --ops: unknown op '%s'\n", op.c_str());
            return 2;
        }
    }
    if (x.quick && !given(o, "--reps")) o.reps = 3;
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
                    if (tp == "mpi" && n > usable_cores()) {
                        // Every rank takes part in a collective: the harness's placement for
                        // oversubscribed point-to-point runs (rank 0 alone on core 0, the
                        // others sharing the rest, busy-polling) would starve them. Unbound
                        // and backing off, as the MPI baseline's ranks are.
                        job.pin = 0;
                        job.args.push_back("--no-pin");
                    }
                    const int st = run_am_job(
                        job, {.hop = false},
                        [&p](am::context& ctx, rank_env& env) { rank_main(ctx, env, p); }, part,
                        reporting);
                    if (st != 0 || !reporting) return st;
                }
                baseline_ok = compare_with_mpi(o, p, n, part) && baseline_ok;
                for (const result& r : part.results()) rep.add(r);
            }
            return 0;
        });
    return status != 0 ? status : baseline_ok ? 0 : no_baseline_status;
}
