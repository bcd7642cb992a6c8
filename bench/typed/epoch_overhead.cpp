// SPDX-License-Identifier: MIT
// epoch_overhead: the cost of an empty am::epoch (opened and ended, nothing sent) at several
// rank counts, against MPI_Barrier at the same rank count (mpi_typed_baseline barrier, run by
// this program under mpirun in the same invocation; --oversubscribe beyond the cores).
//
//   epoch_overhead [--json] [--ranks 2,4,8] [--full] [--transport shm|threads|mpi]
//                  [--reps 7] [--rounds N] [--iters K] [--min-ms 20] [--quick]
//
// Per point, a repetition is a loop of K operations on every rank; the value is rank 0's time
// for the loop divided by K (latency_us). K is calibrated (the shorter of two trials on rank 0,
// shared with every rank by an epoch's end value) so that a repetition lasts at least --min-ms
// (default 20 ms), unless --iters K fixes it. Ops, system "am":
//   epoch_general    `{ am::epoch e(ctx); }`: the general (four-counter) detector
//   epoch_depth0     `{ am::epoch e(ctx, {.depth = 0}); }`: the depth-limited detector
//   epoch_end_value  `e.end(rank + 1)` with the default detector; the sum is checked
//   am_barrier       `ctx.barrier()` (reference: the core's own barrier)
// and system "mpi": mpi_barrier (MPI_Barrier), mpi_allreduce (MPI_Allreduce of one uint64).
// Ratios (system "am/mpi"): every am op over mpi_barrier (latency_ratio); epoch_end_value
// over mpi_allreduce (ratio_vs_allreduce).
//
// The am side runs on shm and threads unless --transport names one (mpi: optional). Ranks:
// --ranks list, default 2,4,8; --full: 2,4,8,16,32,64 (64 ranks oversubscribe small machines
// heavily: ranks are then neither pinned nor busy-polling, as in the other programs).
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "typed/typed_bench.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "epoch_overhead";
constexpr const char* am_ops[] = {"epoch_general", "epoch_depth0", "epoch_end_value", "am_barrier"};

struct plan {
    std::vector<int> ranks;
    std::vector<std::string> transports;
    std::uint64_t iters;  // 0: calibrated
    double target;        // seconds a calibrated repetition lasts at least
    bool quiet_counts;    // do not print the calibrated counts on stderr
};

/// One point: calibrate K (collective), then `o.reps` timed loops of K.
template <class Loop>
void measure(am::context& ctx, const rank_env& env, const plan& p, const char* op, Loop loop) {
    std::uint64_t k = p.iters;
    if (k == 0) {
        k = 16;
        for (;;) {
            // The shorter of two trials: a burst of noise in one does not shrink K.
            double s = 0;
            for (int trial = 0; trial < 2; ++trial) {
                ctx.barrier();
                const auto t0 = bench_clock::now();
                loop(k);
                const double t = seconds_since(t0);
                s = trial == 0 ? t : std::min(s, t);
            }
            std::uint64_t ns = ctx.rank() == 0 ? static_cast<std::uint64_t>(s * 1e9) : 0;
            {
                am::epoch e(ctx, {.depth = 0});
                ns = e.end(ns);  // rank 0's time, on every rank
            }
            const std::uint64_t next =
                typed::next_count(k, static_cast<double>(ns) / 1e9, p.target);
            if (next == 0) break;
            k = next;
        }
    } else {
        loop(std::max<std::uint64_t>(1, k / 10));  // warm-up
    }
    std::vector<double> v;
    for (int r = 0; r < env.opts().reps; ++r) {
        ctx.barrier();
        const auto t0 = bench_clock::now();
        loop(k);
        v.push_back(seconds_since(t0) * 1e6 / static_cast<double>(k));
    }
    env.report(ctx, bench_name, op, 0, "latency_us", v);
    if (ctx.rank() == 0 && !p.quiet_counts) {
        std::fprintf(stderr, "epoch_overhead: %s, %s, %d ranks: %llu per repetition\n", op,
                     env.transport().c_str(), ctx.size(), static_cast<unsigned long long>(k));
    }
}

void rank_main(am::context& ctx, rank_env& env, const plan& p) {
    const options& o = env.opts();
    const auto n = static_cast<std::uint64_t>(ctx.size());
    const auto mine = static_cast<std::uint64_t>(ctx.rank()) + 1;
    const std::uint64_t want = n * (n + 1) / 2;
    if (o.wants("epoch_general")) {
        measure(ctx, env, p, "epoch_general", [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                am::epoch e(ctx);
            }
        });
    }
    if (o.wants("epoch_depth0")) {
        measure(ctx, env, p, "epoch_depth0", [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                am::epoch e(ctx, {.depth = 0});
            }
        });
    }
    if (o.wants("epoch_end_value")) {
        measure(ctx, env, p, "epoch_end_value", [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) {
                am::epoch e(ctx);
                const std::uint64_t got = e.end(mine);
                if (got != want) {
                    throw std::runtime_error("epoch_overhead: WRONG RESULT on rank " +
                                             std::to_string(ctx.rank()) + ": end(rank + 1) " +
                                             "summed to " + std::to_string(got) + ", not " +
                                             std::to_string(want));
                }
            }
        });
    }
    if (o.wants("am_barrier")) {
        measure(ctx, env, p, "am_barrier", [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) ctx.barrier();
        });
    }
}

/// The MPI baseline at `ranks`, and the ratios; false when it was wanted but not run.
bool compare_with_mpi(const options& o, const plan& p, int ranks, reporter& part) {
    if (!o.baseline) return true;
    if (!o.wants("mpi_barrier") && !o.wants("mpi_allreduce")) return true;
    for (const result& r : part.results()) {
        if (std::string_view(r.system) == "am") ranks = r.ranks;  // the launcher's size
    }
    std::vector<std::string> args = {"--bench", bench_name, "--reps", std::to_string(o.reps)};
    if (p.iters != 0) {
        args.insert(args.end(), {"--iters", std::to_string(p.iters)});
    } else {
        args.insert(args.end(),
                    {"--min-ms", std::to_string(static_cast<long long>(p.target * 1e3 + 0.5))});
    }
    if (!o.ops.empty()) {
        std::string ops;
        for (const std::string& op : o.ops) ops += (ops.empty() ? "" : ",") + op;
        args.insert(args.end(), {"--ops", ops});
    }
    if (!run_mpi_program(o, mpi_program::typed, "barrier", args, part, ranks, o.pin != 0)) {
        return false;
    }
    for (const char* op : am_ops) {
        part.add_ratios("am", op, "mpi", "mpi_barrier", "latency_us", "latency_ratio");
    }
    part.add_ratios("am", "epoch_end_value", "mpi", "mpi_allreduce", "latency_us",
                    "ratio_vs_allreduce");
    return true;
}

constexpr const char* about = R"(Cost of an empty am::epoch (general and depth-0 detectors,
end(value)) and of ctx.barrier(), against MPI_Barrier and MPI_Allreduce at the same rank count.
--iters K: operations per repetition (default: calibrated); --ops: epoch_general, epoch_depth0,
epoch_end_value, am_barrier, mpi_barrier, mpi_allreduce; --transport: only this am transport
(default: shm, then threads).)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    typed::extra_options x;
    options o = bench_options(argc, argv, bench_name, about, typed::extra_table(x, true), true);
    if (x.quick && !given(o, "--reps")) o.reps = 3;

    plan p{};
    p.ranks = !x.ranks.empty() ? x.ranks
              : x.quick        ? std::vector<int>{2}
              : x.full         ? std::vector<int>{2, 4, 8, 16, 32, 64}
                               : std::vector<int>{2, 4, 8};
    p.transports = o.transport_given || o.transport == "mpi"
                       ? std::vector<std::string>{o.transport}
                       : std::vector<std::string>{"shm", "threads"};
    p.iters = o.iters != 0 ? o.iters : x.quick ? 200 : 0;
    p.target = x.min_seconds > 0 ? x.min_seconds : 0.02;
    p.quiet_counts = o.mpi_child;
    if (o.mpi_child || std::getenv("AM_SHM_NAME") != nullptr ||
        (o.transport == "mpi" && am::launched_by_mpi())) {
        p.ranks.resize(1);  // one job, whose size the launcher chose
    }

    // The options of one am job (the mpi transport starts the program again with them):
    // those given, then --transport and --ranks of the job, which win.
    const std::vector<std::string> base_args = o.args;

    bool baseline_ok = true;
    bool said_skip = false;
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
                        job, {}, [&p](am::context& ctx, rank_env& env) { rank_main(ctx, env, p); },
                        part, reporting);
                    if (st != 0 || !reporting) return st;
                }
                if (!o.baseline && !said_skip) {
                    std::fprintf(stderr, "epoch_overhead: MPI baseline skipped (--no-baseline)\n");
                    said_skip = true;
                }
                baseline_ok = compare_with_mpi(o, p, n, part) && baseline_ok;
                for (const result& r : part.results()) rep.add(r);
            }
            return 0;
        });
    return status != 0 ? status : baseline_ok ? 0 : no_baseline_status;
}
