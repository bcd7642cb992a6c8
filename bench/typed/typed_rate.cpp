// SPDX-License-Identifier: MIT
// typed_rate: aggregate rate of small typed messages (16 bytes: two uint64) to uniformly
// random destinations, the sending rank included, over all ranks; then the MPI baseline
// (mpi_typed_baseline alltoallv) exchanging exactly the same records in the same run.
//
//   typed_rate [--json] [--transport shm|threads|mpi] [--ranks 2] [--reps 7] [--rounds N]
//              [--messages 8M] [--uncoalesced-messages N] [--coalesce-bytes 16K] [--quick]
//
// Per repetition every rank sends M records, record i of rank r in repetition k being
// `record_at(stream_seed(r, k), i)` to `dest_of(record)` (bench/typed/typed_bench.hpp); the
// handler, in its per-message form `(const record&)`, adds `checksum(record)` to a rank-local
// sum and counts. The time runs on rank 0 from just before its first send (after a barrier)
// until `epoch.end(sum sent)` has returned: termination detection included. Afterwards
// (untimed) two epochs sum the handled checksums and counts over the ranks; a mismatch with
// what was sent fails the job.
//
// op "coalesced":   `am::coalesce(type, {.bytes = B})`, one `am::epoch` per repetition.
// op "uncoalesced": `type.send(value, dest)`, one core message per record (M/16 records).
// op "alltoallv":   the MPI baseline (system "mpi"): the same M records per rank, bucketed by
//                   destination (counting sort, timed), MPI_Alltoall of the counts,
//                   MPI_Alltoallv of the records, the same accumulation over what arrived.
// Metric rate_Mmsgps: records of all ranks per second / 10^6. Ratio lines: am/am
// "coalesced/uncoalesced", am/mpi "coalesced" and "uncoalesced" (rate_ratio).
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "typed/typed_bench.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "typed_rate";
constexpr std::uint64_t warmup_rep = std::uint64_t{1} << 32;  // seed index of the warm-up

using typed::record;

struct plan {
    std::uint64_t messages;     // coalesced (and baseline) records per rank per repetition
    std::uint64_t uncoalesced;  // uncoalesced records per rank per repetition
    std::size_t coalesce_bytes;
};

/// What the handlers of one rank accumulate.
struct tally {
    std::uint64_t sum = 0;
    std::uint64_t count = 0;
};

/// After a repetition (untimed): every record sent has been handled exactly once, somewhere.
void verify(am::context& ctx, tally& t, std::uint64_t sent_sum, std::uint64_t sent_count,
            const char* op) {
    std::uint64_t got_sum = 0, got_count = 0;
    {
        am::epoch e(ctx, {.depth = 0});
        got_sum = e.end(t.sum);
    }
    {
        am::epoch e(ctx, {.depth = 0});
        got_count = e.end(t.count);
    }
    t = {};
    if (got_sum != sent_sum || got_count != sent_count) {
        throw std::runtime_error(std::string("typed_rate: ") + op + ": WRONG RESULT on rank " +
                                 std::to_string(ctx.rank()) + ": handled " +
                                 std::to_string(got_count) + " records with checksum " +
                                 std::to_string(got_sum) + ", sent " + std::to_string(sent_count) +
                                 " with checksum " + std::to_string(sent_sum));
    }
}

void rank_main(am::context& ctx, rank_env& env, const plan& p) {
    const options& o = env.opts();
    const int n = ctx.size();
    const int me = ctx.rank();
    tally t;
    am::message_type<record> type(
        ctx,
        [&t](const record& r) {
            t.sum += typed::checksum(r);
            ++t.count;
        },
        "typed_rate.record");
    auto coalesced = am::coalesce(type, {.bytes = p.coalesce_bytes});

    // One repetition: `m` records per rank through `send`; returns rank 0's seconds.
    auto repetition = [&](const char* op, std::uint64_t m, std::uint64_t rep, auto&& send) {
        const std::uint64_t seed = typed::stream_seed(me, rep);
        ctx.barrier();
        const auto t0 = bench_clock::now();
        std::uint64_t global = 0;
        {
            am::epoch e(ctx);
            std::uint64_t sent = 0;
            for (std::uint64_t i = 0; i < m; ++i) {
                const record r = typed::record_at(seed, i);
                sent += typed::checksum(r);
                send(r, typed::dest_of(r, n));
            }
            global = e.end(sent);
        }
        const double s = seconds_since(t0);
        verify(ctx, t, global, m * static_cast<std::uint64_t>(n), op);
        return s;
    };
    auto point = [&](const char* op, std::uint64_t m, auto&& send) {
        (void)repetition(op, m, warmup_rep, send);
        std::vector<double> v;
        for (int r = 0; r < o.reps; ++r) {
            const double s = repetition(op, m, static_cast<std::uint64_t>(r), send);
            v.push_back(static_cast<double>(m) * n / s / 1e6);
        }
        env.report(ctx, bench_name, op, sizeof(record), "rate_Mmsgps", v);
    };

    if (o.wants("coalesced")) {
        point("coalesced", p.messages, [&](const record& r, int dest) { coalesced.send(r, dest); });
    }
    if (o.wants("uncoalesced")) {
        point("uncoalesced", p.uncoalesced, [&](const record& r, int dest) { type.send(r, dest); });
    }
}

/// Adds num/den of two am ops as system "am/am", op "<num>/<den>".
void add_am_ratio(reporter& rep, const char* num, const char* den) {
    const auto a = rep.find("am", num, sizeof(record), "rate_Mmsgps");
    const auto b = rep.find("am", den, sizeof(record), "rate_Mmsgps");
    if (!a || !b || b->median == 0 || b->min == 0 || b->max == 0) return;
    const summary s = ratio_of(summary{a->median, a->min, a->max, a->reps},
                               summary{b->median, b->min, b->max, b->reps});
    rep.add(make_result(a->bench, "am/am", a->transport, a->ranks, std::string(num) + "/" + den,
                        a->bytes, "rate_ratio", s));
}

/// False when the baseline was wanted but could not be run.
bool compare_with_mpi(const options& o, const plan& p, reporter& rep) {
    if (baseline_skipped(o) || !o.wants("alltoallv")) return true;
    int ranks = o.ranks;
    for (const result& r : rep.results()) {
        if (std::string_view(r.system) == "am") ranks = r.ranks;  // the mpi transport's size
    }
    const std::vector<std::string> args = {"--bench",    bench_name,
                                           "--reps",     std::to_string(o.reps),
                                           "--messages", std::to_string(p.messages)};
    if (!run_mpi_program(o, mpi_program::typed, "alltoallv", args, rep, ranks, o.pin != 0)) {
        return false;
    }
    for (const char* op : {"coalesced", "uncoalesced"}) {
        rep.add_ratios("am", op, "mpi", "alltoallv", "rate_Mmsgps", "rate_ratio");
    }
    return true;
}

constexpr const char* about = R"(Aggregate rate of 16-byte typed messages to uniformly random
ranks (self included): am::coalesce (op coalesced), message_type::send (op uncoalesced), and the
MPI baseline: MPI_Alltoall + MPI_Alltoallv of the same records (op alltoallv).)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    typed::extra_options x;
    options o = bench_options(argc, argv, bench_name, about, typed::extra_table(x, false), true);
    if (x.quick && !given(o, "--reps")) o.reps = 3;
    plan p{};
    p.messages = x.messages != 0 ? x.messages
                 : x.quick       ? std::uint64_t{16} << 10
                                 : std::uint64_t{8} << 20;
    p.uncoalesced =
        x.uncoalesced != 0 ? x.uncoalesced : std::max<std::uint64_t>(1, p.messages / 16);
    p.coalesce_bytes = x.coalesce_bytes;

    return bench_main(o, {[&](reporter& rep, bool& reporting) {
                              return run_am_job(
                                  o, {.hop = false},
                                  [&p](am::context& ctx, rank_env& env) { rank_main(ctx, env, p); },
                                  rep, reporting);
                          },
                          [&](reporter& rep) {
                              add_am_ratio(rep, "coalesced", "uncoalesced");
                              return compare_with_mpi(o, p, rep);
                          }});
}
