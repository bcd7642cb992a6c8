// SPDX-License-Identifier: MIT
// scaling: what the typed layer's epochs and coalescing cost as the rank count P grows (issue
// 20, part 4; docs/scaling.md). Per rank count, one am job:
//
//   scaling [--json] [--ranks 64,128,256] [--transport threads|shm|mpi] [--reps 5]
//           [--iters K] [--min-ms 200] [--coalesce-bytes B] [--quick]
//
// Ops and metrics (system "am", rank 0 reports; "per rank" values are sums over the ranks,
// carried by an epoch's end value, divided by P):
//   epoch_general, epoch_depth0, am_barrier   (K operations per repetition, --reps repetitions)
//       latency_us         rank 0's time per operation
//       core_us_per_rank   latency_us × min(P, cores) / P: the core time one rank's share of
//                          an operation takes when P ranks share the cores
//       msgs_per_rank      core AM messages sent per rank per operation (context::stats)
//       bytes_per_rank     their payload bytes per rank per operation
//       rounds             detector reduction rounds per epoch (epoch_stats::waves; epochs only)
//   alltoall, alltoall_routed   (one epoch in which every rank sends one 16-byte record to every
//               other rank through one `am::coalesced`, or one `am::routed` with the default
//               group, with the default or --coalesce-bytes buffers; routed epochs: depth 1)
//       latency_us, msgs_per_rank (typed messages; routed: each hop counts),
//       batches_per_rank (core messages), bytes_per_rank (batch payload bytes), rounds
//   memory, memory_routed   (bytes = the bytes of one buffer)
//       coalesce_kib       buffer_bytes() of the layer on rank 0 (allocated; direct: O(P),
//                          routed: O(√P) buffers, allocated on first use)
//       buffers            (routed) buffers of rank 0: group + number of groups
//       typed_kib          am::typed_memory_bytes(ctx) on rank 0 after the all-to-all
//       rss_setup_kib      resident memory per rank when the job has started: (VmRSS at the
//                          start of the rank body - VmRSS of the launcher before the job) / R
//       rss_alltoall_kib   growth of VmRSS per rank from then to after the all-to-all epoch / R
//       hwm_kib            VmHWM per rank after the all-to-all / R (the launcher's peak included)
//   where R is the ranks per process: P on threads, 1 on shm and mpi (rank 0's process).
//
// Ranks beyond the cores oversubscribe them: ranks then neither pin nor busy-poll, and times
// measure the scheduler as much as the runtime (docs/scaling.md says how to read them).
#include "lib/am_harness.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "typed/typed_bench.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "scaling";

struct plan {
    std::uint64_t iters = 0;   // 0: calibrated
    double target = 0.2;       // seconds a calibrated repetition lasts at least
    std::size_t coalesce = 0;  // coalesce_options::bytes (0: the default)
    double rss_before_kib = 0;
};

/// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); 0 when it cannot be read.
double status_kib(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const std::string key = std::string(field) + ":";
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) return std::strtod(line.c_str() + key.size(), nullptr);
    }
    return 0;
}

/// The sum of `v` over all ranks (collective: an empty depth-0 epoch's end value).
std::uint64_t sum_over_ranks(am::context& ctx, std::uint64_t v) {
    am::epoch e(ctx, {.depth = 0});
    return e.end(v);
}

struct counts {
    std::uint64_t messages, bytes;
};
counts core_counts(am::context& ctx) {
    const am::stats s = ctx.stats();
    return {s.messages_sent, s.bytes_sent};
}

/// One op: K calibrated on rank 0 (shared), then the repetitions; the time, the core time per
/// rank, the core messages and bytes per rank and the detector rounds per operation.
template <class Loop>
void measure(am::context& ctx, const rank_env& env, const plan& p, const char* op, bool epochs,
             Loop loop) {
    const double P = ctx.size();
    const double cores = std::min(P, static_cast<double>(usable_cores()));
    std::uint64_t k = p.iters;
    (void)loop(1);  // warm-up
    if (k == 0) {
        ctx.barrier();
        const auto t0 = bench_clock::now();
        (void)loop(1);
        const double s = seconds_since(t0);
        const std::uint64_t ns =
            sum_over_ranks(ctx, ctx.rank() == 0 ? static_cast<std::uint64_t>(s * 1e9) : 0);
        const double per = std::max(static_cast<double>(ns) / 1e9, 1e-7);
        k = static_cast<std::uint64_t>(std::clamp(p.target / per, 1.0, 100000.0));
    }
    std::vector<double> lat, core, msgs, bytes, rounds;
    for (int r = 0; r < env.opts().reps; ++r) {
        ctx.barrier();
        const counts c0 = core_counts(ctx);
        const auto t0 = bench_clock::now();
        const std::uint64_t waves = loop(k);
        const double us = seconds_since(t0) * 1e6 / static_cast<double>(k);
        const counts c1 = core_counts(ctx);
        // Summed after the timed loop: the summing epoch's own messages are not counted.
        const double kk = static_cast<double>(k);
        const double m = static_cast<double>(sum_over_ranks(ctx, c1.messages - c0.messages));
        const double b = static_cast<double>(sum_over_ranks(ctx, c1.bytes - c0.bytes));
        lat.push_back(us);
        core.push_back(us * cores / P);
        msgs.push_back(m / (P * kk));
        bytes.push_back(b / (P * kk));
        rounds.push_back(static_cast<double>(waves) / kk);
    }
    env.report(ctx, bench_name, op, 0, "latency_us", lat);
    env.report(ctx, bench_name, op, 0, "core_us_per_rank", core);
    env.report(ctx, bench_name, op, 0, "msgs_per_rank", msgs);
    env.report(ctx, bench_name, op, 0, "bytes_per_rank", bytes);
    if (epochs) env.report(ctx, bench_name, op, 0, "rounds", rounds);
    if (ctx.rank() == 0 && !env.opts().mpi_child) {
        std::fprintf(stderr, "scaling: %s, %s, %d ranks: %llu per repetition\n", op,
                     env.transport().c_str(), ctx.size(), static_cast<unsigned long long>(k));
    }
}

/// The all-to-all epoch through one coalescing layer (`am::coalesced`, or `am::routed` when
/// `routed`), and the memory figures around it.
void alltoall(am::context& ctx, const rank_env& env, const plan& p, bool routed) {
    const int P = ctx.size(), me = ctx.rank();
    const double per_process = env.transport() == "threads" ? P : 1.0;
    const char* op = routed ? "alltoall_routed" : "alltoall";
    const char* mem = routed ? "memory_routed" : "memory";
    ctx.barrier();
    const double rss_setup = status_kib("VmRSS");
    std::uint64_t got = 0, sum = 0;
    am::message_type<typed::record> type(ctx, [&](const typed::record& r) {
        ++got;
        sum += typed::checksum(r);
    });
    std::optional<am::coalesced<typed::record>> direct;
    std::optional<am::routed<typed::record>> via;
    if (routed) {
        via.emplace(type, am::route_options{.bytes = p.coalesce});
    } else {
        direct.emplace(type, am::coalesce_options{.bytes = p.coalesce});
    }
    am::epoch_stats st;
    std::uint64_t sent_sum = 0;
    ctx.barrier();
    const auto t0 = bench_clock::now();
    {
        // A routed message takes two levels (its forward nests below it).
        am::epoch e(ctx, {.depth = routed ? 1 : 0});
        for (int d = 1; d < P; ++d) {
            const int dest = (me + d) % P;
            const typed::record r{static_cast<std::uint64_t>(me), static_cast<std::uint64_t>(dest)};
            sent_sum += typed::checksum(r);
            if (routed) {
                via->send(r, dest);
            } else {
                direct->send(r, dest);
            }
        }
        e.end();
        st = e.stats();
    }
    const double us = seconds_since(t0) * 1e6;
    // Every rank got one record from every other rank, and the checksums agree.
    const std::uint64_t bad = got != static_cast<std::uint64_t>(P - 1) ? 1 : 0;
    if (sum_over_ranks(ctx, bad) != 0 ||
        sum_over_ranks(ctx, sent_sum) != sum_over_ranks(ctx, sum)) {
        throw std::runtime_error(std::string("scaling: WRONG RESULT: the ") + op +
                                 " epoch lost or changed records (rank " + std::to_string(me) +
                                 " got " + std::to_string(got) + ")");
    }
    const double n = P;
    const auto per_rank = [&](std::uint64_t v) {
        return std::vector<double>{static_cast<double>(sum_over_ranks(ctx, v)) / n};
    };
    const std::vector<double> msgs = per_rank(st.messages_sent);
    const std::vector<double> batches = per_rank(st.batches_sent);
    const std::vector<double> bytes = per_rank(st.bytes_sent);
    ctx.barrier();
    const double rss_after = status_kib("VmRSS");
    const double hwm = status_kib("VmHWM");
    const std::size_t buf = routed ? via->buffer_bytes() : direct->buffer_bytes();
    const std::size_t typed_bytes = am::typed_memory_bytes(ctx);
    env.report(ctx, bench_name, op, 0, "latency_us", {us});
    env.report(ctx, bench_name, op, 0, "msgs_per_rank", msgs);
    env.report(ctx, bench_name, op, 0, "batches_per_rank", batches);
    env.report(ctx, bench_name, op, 0, "bytes_per_rank", bytes);
    env.report(ctx, bench_name, op, 0, "rounds", {static_cast<double>(st.waves)});
    const std::size_t cb = routed ? via->capacity() * (sizeof(typed::record) + 8)
                                  : direct->capacity() * sizeof(typed::record);
    if (routed) {
        env.report(ctx, bench_name, mem, cb, "buffers", {static_cast<double>(via->buffers())});
    }
    env.report(ctx, bench_name, mem, cb, "coalesce_kib", {static_cast<double>(buf) / 1024});
    env.report(ctx, bench_name, mem, cb, "typed_kib", {static_cast<double>(typed_bytes) / 1024});
    env.report(ctx, bench_name, mem, cb, "rss_setup_kib",
               {(rss_setup - p.rss_before_kib) / per_process});
    env.report(ctx, bench_name, mem, cb, "rss_alltoall_kib",
               {(rss_after - rss_setup) / per_process});
    env.report(ctx, bench_name, mem, cb, "hwm_kib", {hwm / per_process});
}

void rank_main(am::context& ctx, rank_env& env, const plan& p) {
    const options& o = env.opts();
    // Routed first: its RSS growth is then not helped by pages the direct layer touched (the
    // direct one's includes the rings to every peer that it is first to use). One-time costs
    // of a job's first messages fall on the first; --ops alltoall or alltoall_routed alone
    // measures one layer per job.
    if (o.wants("alltoall_routed")) alltoall(ctx, env, p, true);
    if (o.wants("alltoall")) alltoall(ctx, env, p, false);
    if (o.wants("epoch_general")) {
        measure(ctx, env, p, "epoch_general", true, [&](std::uint64_t k) {
            std::uint64_t waves = 0;
            for (std::uint64_t i = 0; i < k; ++i) {
                am::epoch e(ctx);
                e.end();
                waves += e.stats().waves;
            }
            return waves;
        });
    }
    if (o.wants("epoch_depth0")) {
        measure(ctx, env, p, "epoch_depth0", true, [&](std::uint64_t k) {
            std::uint64_t waves = 0;
            for (std::uint64_t i = 0; i < k; ++i) {
                am::epoch e(ctx, {.depth = 0});
                e.end();
                waves += e.stats().waves;
            }
            return waves;
        });
    }
    if (o.wants("am_barrier")) {
        measure(ctx, env, p, "am_barrier", false, [&](std::uint64_t k) {
            for (std::uint64_t i = 0; i < k; ++i) ctx.barrier();
            return std::uint64_t{0};
        });
    }
}

constexpr const char* about = R"(Scaling of the typed layer with the rank count: time of an empty
epoch (general and depth-0 detectors) and of ctx.barrier(), core messages and bytes per rank per
epoch, an all-to-all epoch through one coalescing layer, and memory per rank.
scaling: --ranks a,b,... (default 64,128,256,512,1024; --quick 4,8);
--iters K per repetition (default: calibrated to --min-ms, default 200); --coalesce-bytes B of the
all-to-all (default: the library's); --quick: ranks 4,8, K = 20, 3 repetitions; --ops:
alltoall_routed, alltoall, epoch_general, epoch_depth0, am_barrier; --transport: threads
(default), shm or mpi (mpirun --oversubscribe).)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    typed::extra_options x;
    options o = bench_options(argc, argv, bench_name, about, typed::extra_table(x, true), true);
    if (!o.transport_given && o.transport != "mpi") o.transport = "threads";
    if (!given(o, "--reps")) o.reps = x.quick ? 3 : 5;
    o.baseline = false;  // no MPI baseline: the MPI side is the mpi transport itself

    plan p;
    std::vector<int> ranks = !x.ranks.empty() ? x.ranks
                             : x.quick        ? std::vector<int>{4, 8}
                                              : std::vector<int>{64, 128, 256, 512, 1024};
    p.iters = o.iters != 0 ? o.iters : x.quick ? 20 : 0;
    p.target = x.min_seconds > 0 ? x.min_seconds : 0.2;
    p.coalesce = given(o, "--coalesce-bytes") ? x.coalesce_bytes : 0;
    if (o.mpi_child || std::getenv("AM_SHM_NAME") != nullptr ||
        (o.transport == "mpi" && am::launched_by_mpi())) {
        ranks.resize(1);  // one job, whose size the launcher chose
    }

    // The options of one job (the mpi transport starts the program again with them): those
    // given, then --transport and --ranks of the job, which win.
    const std::vector<std::string> base_args = o.args;

    return run_rounds(
        o, o.json ? output::json : output::table, [&](reporter& rep, bool& reporting) {
            for (const int n : ranks) {
                options job = o;
                job.ranks = n;
                job.args = base_args;
                job.args.insert(job.args.end(),
                                {"--transport", o.transport, "--ranks", std::to_string(n)});
                p.rss_before_kib = status_kib("VmRSS");
                const int st = run_am_job(
                    job, {.hop = false},
                    [&p](am::context& ctx, rank_env& env) { rank_main(ctx, env, p); }, rep,
                    reporting);
                if (st != 0 || !reporting) return st;
            }
            return 0;
        });
}
