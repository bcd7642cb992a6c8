// SPDX-License-Identifier: MIT
// thread_scale: where time and memory go when a threads job has thousands of ranks (issue 36:
// "one routed typed epoch on 4096 thread ranks took 166 s and 5.9 GB, a barrier 4 s and
// 1.7 GB"; docs/performance.md, "Typed epochs at thousands of thread ranks").
//
//   thread_scale [--json] [--ranks 256,512,1024] [--messages K] [--reps R] [--ops a,b,...]
//
// Each rank count runs in a forked child of its own, so that the peak resident memory
// (getrusage ru_maxrss, process-wide: every rank is a thread of the child) belongs to that
// rank count only. In the child, phases run one after the other on every rank, each after an
// untimed ctx.barrier(); rank 0 measures (system "am", transport "threads"):
//   startup       am::run called -> the first ctx.barrier() returned on rank 0 (once)
//   barrier       one ctx.barrier()
//   epoch_empty   an empty epoch with the depth-limited detector: one reduction round, i.e.
//                 one allreduce_sum of the transport plus the layer's bookkeeping
//   types         constructing the message type, the `am::routed` and the `am::coalesced`
//                 (once; the typed layer's per-type, per-peer counters are allocated here)
//   epoch_routed  one epoch (depth 1) in which every rank sends K values through the routed
//                 layer (default group) to pseudo-random ranks
//   epoch_direct  the same K values per rank through `am::coalesced` (depth 0)
// Metrics per op: wall_s (rank 0's time), cpu_s (user + system time of the whole process over
// the phase: all ranks), maxrss_mib (ru_maxrss after the phase), rss_mib (VmRSS after the
// phase), and for the epochs rounds (detector reduction rounds, epoch_stats::waves).
// R repetitions of barrier, epoch_empty and the two messaging epochs (default 1); startup and
// types happen once. The library's defaults are used throughout (ring sizes by rank count,
// default coalescing buffers and routing group, no pinning): this measures what a program
// that just asks for N thread ranks gets. Ranks beyond the cores oversubscribe them.
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "typed/typed_bench.hpp"

#include <am/am.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "thread_scale";
using clock_type = std::chrono::steady_clock;

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto s = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return s(u.ru_utime) + s(u.ru_stime);
}

double maxrss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024;  // KiB on Linux
}

double vmrss_mib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024;
    }
    return 0;
}

/// Rank 0's samples: op -> metric -> one value per repetition.
using samples = std::map<std::string, std::map<std::string, std::vector<double>>>;

/// A timed phase on rank 0: wall and CPU time from construction to `done`, memory after it.
class phase {
  public:
    phase(am::context& ctx, samples& out, const char* op)
        : _ctx(ctx),
          _out(out),
          _op(op),
          _t0(clock_type::now()),
          // Rank 0 only: getrusage(RUSAGE_SELF) walks every thread of the process, so P ranks
          // calling it would add an O(P²) cost of the benchmark's own to every phase.
          _cpu0(ctx.rank() == 0 ? cpu_seconds() : 0) {}
    void done(std::optional<double> rounds = std::nullopt) {
        if (_ctx.rank() != 0) return;
        auto& m = _out[_op];
        m["wall_s"].push_back(std::chrono::duration<double>(clock_type::now() - _t0).count());
        m["cpu_s"].push_back(cpu_seconds() - _cpu0);
        m["maxrss_mib"].push_back(maxrss_mib());
        m["rss_mib"].push_back(vmrss_mib());
        if (rounds) m["rounds"].push_back(*rounds);
    }

  private:
    am::context& _ctx;
    samples& _out;
    const char* _op;
    clock_type::time_point _t0;
    double _cpu0;
};

/// The k-th destination of `me`'s values: pseudo-random (splitmix64), never `me` itself.
int destination(int me, std::uint64_t k, int ranks) {
    std::uint64_t z = (static_cast<std::uint64_t>(me) << 32 | k) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const int d = static_cast<int>(z % static_cast<std::uint64_t>(ranks > 1 ? ranks - 1 : 1));
    return ranks > 1 ? (me + 1 + d) % ranks : me;
}

struct plan {
    std::uint64_t messages = 4;
    int reps = 1;
    const options* o = nullptr;
};

/// One messaging epoch: K values from every rank through `send`; checks that all arrived.
template <class Send>
void messaging_epoch(am::context& ctx, samples& out, const char* op, int depth,
                     std::uint64_t messages, const std::uint64_t& got, Send send) {
    ctx.barrier();
    const std::uint64_t before = got;
    phase ph(ctx, out, op);
    am::epoch e(ctx, {.depth = depth});
    for (std::uint64_t k = 0; k < messages; ++k) send(destination(ctx.rank(), k, ctx.size()));
    (void)e.end();
    ph.done(static_cast<double>(e.stats().waves));
    const std::uint64_t total = [&] {
        am::epoch s(ctx, {.depth = 0});
        return s.end(got - before);
    }();
    if (total != messages * static_cast<std::uint64_t>(ctx.size())) {
        throw std::runtime_error(std::string("thread_scale: WRONG RESULT: ") + op + " delivered " +
                                 std::to_string(total) + " values, not " +
                                 std::to_string(messages * static_cast<std::uint64_t>(ctx.size())));
    }
}

void rank_main(am::context& ctx, const plan& p, samples& out, clock_type::time_point started,
               double cpu_started) {
    const options& o = *p.o;
    ctx.barrier();
    if (ctx.rank() == 0) {
        auto& m = out["startup"];
        m["wall_s"].push_back(std::chrono::duration<double>(clock_type::now() - started).count());
        m["cpu_s"].push_back(cpu_seconds() - cpu_started);
        m["maxrss_mib"].push_back(maxrss_mib());
        m["rss_mib"].push_back(vmrss_mib());
    }
    for (int r = 0; o.wants("barrier") && r < p.reps; ++r) {
        ctx.barrier();
        phase ph(ctx, out, "barrier");
        ctx.barrier();
        ph.done();
    }
    for (int r = 0; o.wants("epoch_empty") && r < p.reps; ++r) {
        ctx.barrier();
        phase ph(ctx, out, "epoch_empty");
        am::epoch e(ctx, {.depth = 0});
        (void)e.end();
        ph.done(static_cast<double>(e.stats().waves));
    }
    const bool routed_on = o.wants("epoch_routed"), direct_on = o.wants("epoch_direct");
    if (!routed_on && !direct_on && !o.wants("types")) return;
    ctx.barrier();
    std::uint64_t got = 0;
    phase types(ctx, out, "types");
    am::message_type<std::uint64_t> type(ctx, [&](const std::uint64_t&) { ++got; });
    am::routed<std::uint64_t> via(type, am::route_options{});
    am::coalesced<std::uint64_t> direct(type, am::coalesce_options{});
    ctx.barrier();  // message types are registered collectively: all ranks have them here
    types.done();
    const auto me = static_cast<std::uint64_t>(ctx.rank());
    // Routed first: its figures are then not helped by rings the direct epoch attached.
    for (int r = 0; routed_on && r < p.reps; ++r) {
        messaging_epoch(ctx, out, "epoch_routed", 1, p.messages, got,
                        [&](int dest) { via.send(me, dest); });
    }
    for (int r = 0; direct_on && r < p.reps; ++r) {
        messaging_epoch(ctx, out, "epoch_direct", 0, p.messages, got,
                        [&](int dest) { direct.send(me, dest); });
    }
}

/// One rank count, in this (forked) process: runs the job and prints rank 0's results.
int run_one(const plan& p, int ranks) {
    samples out;
    am::config cfg;
    cfg.ranks = ranks;
    cfg.transport = am::transport_kind::threads;
    const auto started = clock_type::now();
    const double cpu_started = cpu_seconds();
    const int st = am::run(cfg, [&](am::context& ctx) {
        rank_main(ctx, p, out, started, cpu_started);
        return 0;
    });
    if (st != 0) return st;
    reporter rep(p.o->json ? output::json_only : output::table);
    for (const auto& [op, metrics] : out) {
        for (const auto& [metric, values] : metrics) {
            rep.add(
                make_result(bench_name, "am", "threads", ranks, op, 0, metric, summarize(values)));
        }
    }
    std::fflush(stdout);
    return 0;
}

constexpr const char* about = R"(Start-up, barrier, an empty epoch and one routed and one direct
messaging epoch on many thread ranks: wall time, CPU time of the process and peak resident memory.
thread_scale options: --ranks a,b,... rank counts, each in a child process (default 64,256,1024)
--messages K values each rank sends per messaging epoch (default 4) --reps R repetitions of
barrier and the epochs (default 1) --ops a,b,... barrier, epoch_empty, types, epoch_routed,
epoch_direct (startup always))";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    typed::extra_options x;
    options o = parse_options(argc, argv, about, typed::extra_table(x, true));
    plan p;
    p.o = &o;
    p.reps = given(o, "--reps") ? o.reps : 1;
    if (x.messages != 0) p.messages = x.messages;
    const std::vector<int> ranks = x.ranks.empty() ? std::vector<int>{64, 256, 1024} : x.ranks;
    int status = 0;
    for (const int n : ranks) {
        std::fflush(nullptr);
        const pid_t child = fork();
        if (child < 0) {
            std::perror("thread_scale: fork");
            return 1;
        }
        if (child == 0) {
            int st = 1;
            try {
                st = run_one(p, n);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "thread_scale: %d ranks: %s\n", n, e.what());
            }
            std::fflush(nullptr);
            std::_Exit(st);
        }
        int ws = 0;
        if (waitpid(child, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
            std::fprintf(stderr, "thread_scale: the job of %d ranks failed\n", n);
            status = 1;
        }
    }
    return status;
}
