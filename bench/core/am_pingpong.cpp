// SPDX-License-Identifier: MIT
// am_pingpong: one-way latency (half a round trip) between ranks 0 and 1 for short, medium and
// long active messages; long-message streaming bandwidth beside single-core memcpy; then the
// MPI baseline (MPI_Send/MPI_Recv ping-pong, windowed MPI_Isend bandwidth) and, when
// ucx_perftest is installed, the UCX baseline (ucp_am_lat, ucp_am_bw) in the same run.
//
//   am_pingpong [--json] [--transport shm|threads|mpi|ucx|ucx,mpi] [--ranks 2] [--reps 7] ... (see
//   --help) am_pingpong --demo          am vs MPI and UCX, 8-byte one-way latency, for the README
//   am_pingpong --transport mpi [--node-size 1] ...   am over the mpi transport: the program
//                               starts itself under mpirun (or runs under the user's mpirun)
//
// Every ping is answered by a pong of the same category and size: short ping (one 8-byte
// argument) → short pong; medium ping → medium pong echoing the payload; long ping (written
// at offset 0 of rank 1's segment) → long pong echoing it to offset 0 of rank 0's segment.
// So each direction carries `bytes`, as in the MPI ping-pong, and each receiver reads every
// byte it received, as MPI_Recv's copy into the receive buffer does: rank 1 in its echo, rank
// 0 in the long pong's handler, which checks the sum of the bytes (`read_sum`).
//
// Long-message bandwidth: the long stream's receiver reads every byte too (its handler checks
// the sum), and each message lands in its own slot of the receiver's segment: the sender
// reuses a slot only after the receiver has read it (one credit, a short reply, per message),
// so no message is overwritten while it is being read. A payload whose sum is wrong fails
// the run.
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "lib/ucx_baseline.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "am_pingpong";
constexpr std::size_t default_max_long = std::size_t{4} << 20;

/// Most bytes of the receiver's segment the long stream spreads its slots over (the slots of
/// the largest sizes take more: at least 2 slots, so sending overlaps reading).
constexpr std::size_t stream_slot_budget = std::size_t{4} << 20;
constexpr std::size_t max_stream_slots = 64;  // as the MPI baseline's default window

/// Slots of the long stream at `bytes`: messages in flight, each to its own slot.
std::size_t stream_slots(std::size_t bytes) {
    return std::clamp<std::size_t>(stream_slot_budget / std::max<std::size_t>(bytes, 1), 2,
                                   max_stream_slots);
}

/// Rank-local state and the handlers of one rank.
struct pingpong {
    std::uint64_t pings = 0;          // requests handled (rank 1)
    std::uint64_t pongs = 0;          // replies handled (rank 0): pongs, and the stream's credits
    std::uint64_t expected = 0;       // requests this rank has handled when the current point ends
    std::uint64_t checked = 0;        // long payloads read by their receiver (rank 0: as reported)
    std::uint64_t bad = 0;            // of which with a wrong sum
    page_buffer buf;                  // payloads (aligned like the memcpy reference's buffers)
    std::vector<std::uint64_t> sums;  // read_sum of buf's first n bytes, by n (long sizes)
    std::vector<std::size_t> sum_sizes;
    std::size_t pong_offset = 0;  // where long pongs land (apart from the ping when alone)

    am::handler<am::category::short_am, std::uint64_t> ping_short;
    am::handler<am::category::medium> ping_medium;
    am::handler<am::category::long_am> ping_long;
    am::handler<am::category::long_am> stream_long;

    explicit pingpong(am::context& ctx) {
        auto pong_s = ctx.handler([this](am::token&, std::uint64_t) { ++pongs; });
        ping_short = ctx.handler([this, pong_s](am::token& t, std::uint64_t x) {
            ++pings;
            t.reply(pong_s, x);
        });
        auto pong_m = ctx.handler([this](am::token&, std::span<const std::byte>) { ++pongs; });
        ping_medium = ctx.handler([this, pong_m](am::token& t, std::span<const std::byte> p) {
            ++pings;
            t.reply(pong_m, p);
        });
        // The echo reads every byte of the ping; the pong's handler reads every byte it got.
        auto pong_l = ctx.handler([this](am::token&, std::span<std::byte> p) {
            bad += intact(p) ? 0 : 1;
            ++checked;
            ++pongs;
        });
        ping_long = ctx.handler([this, pong_l](am::token& t, std::span<std::byte> p) {
            ++pings;
            t.reply(pong_l, p, pong_offset);
        });
        // Streamed long messages: read, then one credit back (its argument: 1 if the sum was
        // wrong), after which the sender may reuse the slot.
        auto credit = ctx.handler([this](am::token&, std::uint64_t wrong) {
            bad += wrong;
            ++checked;
            ++pongs;
        });
        stream_long = ctx.handler([this, credit](am::token& t, std::span<std::byte> p) {
            ++pings;
            t.reply(credit, std::uint64_t{intact(p) ? 0U : 1U});
        });
        ctx.barrier();
    }

    /// Fills the payload buffer with the pattern and notes the sum of each long size.
    void prepare(std::size_t bytes, const std::vector<std::size_t>& long_sizes) {
        buf.reset(bytes);
        fill_pattern(std::span<std::byte>(buf.data(), bytes));
        sum_sizes = long_sizes;
        sums.clear();
        for (std::size_t n : long_sizes) sums.push_back(read_sum({buf.data(), n}));
    }

    /// Reads all of `p`: true if its sum is that of the first p.size() bytes of the pattern.
    [[nodiscard]] bool intact(std::span<const std::byte> p) const {
        const std::uint64_t got = read_sum(p);
        for (std::size_t i = 0; i < sum_sizes.size(); ++i) {
            if (sum_sizes[i] == p.size()) return sums[i] == got;
        }
        return false;
    }
};

/// Rank 0: `iters` round trips per repetition after a warm-up; one-way µs per repetition.
template <class Send>
std::vector<double> time_pingpong(am::context& ctx, const rank_env& env, pingpong& pp,
                                  std::uint64_t iters, std::uint64_t warm, Send send) {
    auto rounds = [&](std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t want = pp.pongs + 1;
            send(i);
            env.wait(ctx, [&] { return pp.pongs >= want; });
        }
    };
    rounds(warm);
    std::vector<double> v;
    for (int r = 0; r < env.opts().reps; ++r) {
        const auto t0 = bench_clock::now();
        rounds(iters);
        v.push_back(seconds_since(t0) * 1e6 / static_cast<double>(iters) / 2);
    }
    return v;
}

/// Runs one ping-pong point on rank 0 and `peer` (rank 0 alone: it pings itself).
template <class Send>
void point(am::context& ctx, const rank_env& env, pingpong& pp, int peer, const char* op,
           std::size_t bytes, Send send) {
    const std::uint64_t iters = iters_for(env.opts(), latency_plan, bytes);
    const std::uint64_t warm = warmup_for(env.opts(), iters);
    if (ctx.rank() == 0) {
        const auto v = time_pingpong(ctx, env, pp, iters, warm, send);
        env.report(ctx, bench_name, op, bytes, "latency_us", v);
        if (std::string_view(op) == "long" && bytes >= bandwidth_min_bytes) {
            std::vector<double> bw;
            for (double us : v) bw.push_back(static_cast<double>(bytes) / us / 1e3);
            env.report(ctx, bench_name, op, bytes, "pingpong_GBps", bw);
        }
        env.release_idle(ctx, peer);
    } else if (ctx.rank() == peer) {
        // Counted from the start, not from now: pings may already have arrived, and been
        // handled, while this rank was still in the barrier that ended the previous point.
        pp.expected += warm + iters * env.opts().reps;
        env.wait(ctx, [&] { return pp.pings >= pp.expected; });
    } else {
        env.idle(ctx);
    }
    ctx.barrier();
}

/// Long-message bandwidth: rank 0 streams long messages to `peer`, message i to slot
/// i mod `stream_slots(bytes)` of its segment, with at most that many not yet read (credits);
/// bytes × N / time until the last credit is back. Beside it, memcpy of the same size on the
/// same core.
void stream_point(am::context& ctx, const rank_env& env, pingpong& pp, int peer,
                  std::size_t bytes) {
    const std::uint64_t n = iters_for(env.opts(), bandwidth_plan, bytes);
    const std::uint64_t warm = warmup_for(env.opts(), n);
    const auto payload = std::span<const std::byte>(pp.buf.data(), bytes);
    const std::size_t slots = stream_slots(bytes);
    std::uint64_t sent = 0;  // rank 0: stream messages sent; pp.pongs counts their credits
    auto burst = [&](std::uint64_t count) {
        const std::uint64_t base = pp.pongs - sent;  // credits of other points
        for (std::uint64_t i = 0; i < count; ++i) {
            env.wait(ctx, [&] { return sent - (pp.pongs - base) < slots; });
            ctx.request(peer, pp.stream_long, payload, (sent % slots) * bytes);
            ++sent;
        }
        env.wait(ctx, [&] { return pp.pongs - base == sent; });
    };
    if (ctx.rank() == 0) {
        env.report(ctx, bench_name, "memcpy", bytes, "bandwidth_GBps",
                   memcpy_bandwidth(env.opts(), bytes), "memcpy");
        burst(warm);
        std::vector<double> v;
        for (int r = 0; r < env.opts().reps; ++r) {
            const auto t0 = bench_clock::now();
            burst(n);
            v.push_back(static_cast<double>(bytes * n) / seconds_since(t0) / 1e9);
        }
        env.report(ctx, bench_name, "long", bytes, "bandwidth_GBps", v);
        env.release_idle(ctx, peer);
    } else if (ctx.rank() == peer) {
        pp.expected += warm + n * env.opts().reps;  // as in point()
        env.wait(ctx, [&] { return pp.pings >= pp.expected; });
    } else {
        env.idle(ctx);
    }
    ctx.barrier();
}

/// Rank 0, after the points: says how many long payloads their receivers read and checked;
/// one that arrived with a wrong sum fails the run.
void check_intact(const am::context& ctx, const pingpong& pp) {
    if (ctx.rank() != 0 || pp.checked == 0) return;
    std::fprintf(stderr,
                 "am_pingpong: long payloads read by their receivers: %llu checked, %llu wrong "
                 "sum\n",
                 static_cast<unsigned long long>(pp.checked),
                 static_cast<unsigned long long>(pp.bad));
    if (pp.bad != 0) {
        throw std::runtime_error("am_pingpong: " + std::to_string(pp.bad) +
                                 " long payloads arrived with a wrong sum");
    }
}

struct size_plan {
    std::vector<std::size_t> medium, long_lat, long_bw;
};

size_plan plan_sizes(const options& o, std::size_t max_medium) {
    size_plan p;
    const std::size_t max_long = std::max(default_max_long, o.max_bytes);
    if (o.wants("medium")) p.medium = sizes_for(o, 8, max_medium);
    if (o.wants("long")) {
        p.long_lat = sizes_for(o, 8, max_long);
        for (std::size_t s : p.long_lat) {
            if (s >= bandwidth_min_bytes) p.long_bw.push_back(s);
        }
    }
    return p;
}

void rank_main(am::context& ctx, rank_env& env) {
    pingpong pp(ctx);
    const options& o = env.opts();
    const size_plan plan = plan_sizes(o, ctx.max_medium());
    std::size_t biggest = std::max<std::size_t>(8, ctx.max_medium());
    for (std::size_t s : plan.long_lat) biggest = std::max(biggest, s);
    pp.prepare(biggest, plan.long_lat);
    if (ctx.size() == 1) pp.pong_offset = biggest;  // one segment holds both ping and pong

    for (const int peer : env.peers(ctx)) {
        env.use_peer(peer);
        if (o.wants("short")) {
            point(ctx, env, pp, peer, "short", 8,
                  [&](std::uint64_t i) { ctx.request(peer, pp.ping_short, i); });
        }
        for (std::size_t s : plan.medium) {
            const auto payload = std::span<const std::byte>(pp.buf.data(), s);
            point(ctx, env, pp, peer, "medium", s,
                  [&](std::uint64_t) { ctx.request(peer, pp.ping_medium, payload); });
        }
        for (std::size_t s : plan.long_lat) {
            const auto payload = std::span<const std::byte>(pp.buf.data(), s);
            point(ctx, env, pp, peer, "long", s,
                  [&](std::uint64_t) { ctx.request(peer, pp.ping_long, payload, std::size_t{0}); });
        }
        for (std::size_t s : plan.long_bw) stream_point(ctx, env, pp, peer, s);
    }
    check_intact(ctx, pp);
}

/// With --transport ucx,mpi: am over ucx against am over mpi, point by point.
void compare_transports(reporter& rep) {
    rep.add_transport_ratios("am", "ucx", "mpi", "latency_us", "latency_ratio");
    rep.add_transport_ratios("am", "ucx", "mpi", "bandwidth_GBps", "bandwidth_ratio");
}

/// The MPI side of the same sizes, then the am/MPI and am/memcpy ratios.
/// False when the baseline was wanted but could not be run.
bool compare_with_mpi(const options& o, reporter& rep) {
    const std::vector<std::size_t> lat = am_sizes(rep, "latency_us");
    const std::vector<std::size_t> bw = am_sizes(rep, "bandwidth_GBps");
    rep.add_ratios("am", "long", "memcpy", "memcpy", "bandwidth_GBps", "bandwidth_ratio");
    if (baseline_skipped(o) || lat.empty()) return true;
    std::vector<std::string> args = baseline_args(o, lat);
    if (!bw.empty()) args.insert(args.end(), {"--bw-sizes", join_sizes(bw)});
    if (!run_mpi_baseline(o, "pingpong", args, rep)) return false;
    for (const char* op : {"short", "medium", "long"}) {
        rep.add_ratios("am", op, "mpi", "send_recv", "latency_us", "latency_ratio");
    }
    rep.add_ratios("am", "long", "mpi", "isend_window", "bandwidth_GBps", "bandwidth_ratio");
    return true;
}

/// The UCX side of the same sizes (ucp_am_lat on the latency sizes, ucp_am_bw on the
/// bandwidth sizes, same iterations), then the am/UCX ratios. False when ucx_perftest is
/// installed but failed.
bool compare_with_ucx(const options& o, ucx_baseline& ucx, reporter& rep) {
    std::vector<ucx_point> points;
    add_ucx_points(points, o, ucx_test::am_lat, am_sizes(rep, "latency_us"), latency_plan,
                   "latency_us");
    add_ucx_points(points, o, ucx_test::am_bw, am_sizes(rep, "bandwidth_GBps"), bandwidth_plan,
                   "bandwidth_GBps");
    if (!ucx.run(points, rep)) return false;
    for (const char* op : {"short", "medium", "long"}) {
        rep.add_ratios("am", op, "ucx", "ucp_am_lat", "latency_us", "latency_ratio");
    }
    rep.add_ratios("am", "long", "ucx", "ucp_am_bw", "bandwidth_GBps", "bandwidth_ratio");
    return true;
}

const result* find_in(const std::vector<result>& v, std::string_view system,
                      std::string_view transport, std::string_view op, std::string_view metric) {
    for (const result& r : v) {
        if (system == r.system && (transport.empty() || transport == r.transport) && op == r.op &&
            r.bytes == 8 && metric == r.metric) {
            return &r;
        }
    }
    return nullptr;
}

/// One round of the demo: the 8 B latencies and hops it has (null when absent).
struct demo_round {
    const result *am, *mpi, *ucx, *hop_am, *hop_mpi, *hop_ucx;
    explicit demo_round(const std::vector<result>& v)
        : am(find_in(v, "am", "", "short", "latency_us")),
          mpi(find_in(v, "mpi", "", "send_recv", "latency_us")),
          ucx(find_in(v, "ucx", "", "ucp_am_lat", "latency_us")),
          hop_am(find_in(v, "cacheline", "shm", "hop", "latency_us")),
          hop_mpi(find_in(v, "cacheline", "mpi", "hop", "latency_us")),
          hop_ucx(find_in(v, "cacheline", "ucx-sm", "hop", "latency_us")) {}
    /// A VM's vCPUs can move between host cores closer or farther apart mid-run.
    [[nodiscard]] bool moved() const {
        double lo = 0, hi = 0;
        for (const result* h : {hop_am, hop_mpi, hop_ucx}) {
            if (h == nullptr) continue;
            lo = lo == 0 ? h->median : std::min(lo, h->median);
            hi = std::max(hi, h->median);
        }
        return hi > 1.5 * lo;
    }
};

/// "  0.123" (width 8), or "     n/a".
void print_value(const result* r) {
    if (r != nullptr) {
        std::printf("  %6.3f", r->median);
    } else {
        std::printf("  %6s", "n/a");
    }
}

/// "  0.92" (width 8) for a/b, or "   n/a"; the ratio goes to `ratios`.
void print_ratio(const result* a, const result* b, std::vector<double>& ratios) {
    if (a != nullptr && b != nullptr && b->median > 0) {
        ratios.push_back(a->median / b->median);
        std::printf("  %6.2f", ratios.back());
    } else {
        std::printf("  %6s", "n/a");
    }
}

void print_median(const char* what, const std::vector<double>& ratios, const char* goal) {
    if (ratios.empty()) {
        std::printf("  %s: baseline not available (see the message above)\n", what);
    } else {
        std::printf("  %s, median over the runs: %.2f   (goal: %s)\n", what,
                    summarize(ratios).median, goal);
    }
}

void print_demo(const std::vector<std::vector<result>>& rounds) {
    std::printf(
        "One-way latency of an 8-byte message between 2 processes pinned to cores 0 and 1\n"
        "(half a round trip in microseconds; median of %d repetitions per run; MPI: Send/Recv;\n"
        "UCX: ucx_perftest ucp_am_lat over UCX_TLS=sm,self)\n\n",
        rounds[0].empty() ? 0 : rounds[0][0].reps);
    std::printf("%51s%24s\n", "", "cache-line hop");
    std::printf("  run  am short     MPI  am/MPI     UCX  am/UCX          am     MPI     UCX\n");
    std::vector<double> vs_mpi, vs_ucx;
    bool moved = false;
    int k = 0;
    for (const std::vector<result>& v : rounds) {
        const demo_round d(v);
        std::printf("  %3d  ", ++k);
        print_value(d.am);
        print_value(d.mpi);
        print_ratio(d.am, d.mpi, vs_mpi);
        print_value(d.ucx);
        print_ratio(d.am, d.ucx, vs_ucx);
        std::printf("    ");
        for (const result* h : {d.hop_am, d.hop_mpi, d.hop_ucx}) print_value(h);
        std::printf("%s\n", d.moved() ? "  *" : "");
        moved = moved || d.moved();
    }
    if (moved) {
        std::printf(
            "  * the cores were not equally far apart in the am, MPI and UCX runs (a VM's\n"
            "    vCPUs moved between host cores); compare within rows whose hops agree\n");
    }
    std::printf("\n");
    print_median("am/MPI", vs_mpi, "<= 0.5");
    print_median("am/UCX", vs_ucx, "<= 0.7");
}

constexpr const char* about = R"(One-way latency of short/medium/long active messages, long-
message bandwidth vs memcpy, and the MPI baseline in the same run.)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    options o = bench_options(argc, argv, bench_name, about, {}, true);
    if (o.demo) {
        o.transport = "shm";
        o.ranks = 2;
        o.ops = {"short"};
        o.sizes = {8};
        if (o.iters == 0) o.iters = 20000;
        if (o.rounds == 0) o.rounds = 5;
    }
    std::size_t segment = std::max(default_max_long, o.max_bytes);
    for (std::size_t s : o.sizes) segment = std::max(segment, s);
    segment *= 2;  // a rank alone gets its ping and its pong side by side
    const output mode = o.demo ? output::quiet : o.json ? output::json : output::table;
    std::vector<std::vector<result>> rounds;
    ucx_baseline ucx(o, bench_name);
    const int status =
        bench_main(o,
                   {[&](reporter& rep, bool& reporting) {
                        return run_am_job(o, {segment, true}, rank_main, rep, reporting);
                    },
                    [&](reporter& rep) {
                        compare_transports(rep);
                        const bool mpi = compare_with_mpi(o, rep);
                        return compare_with_ucx(o, ucx, rep) && mpi;
                    }},
                   mode, &rounds);
    const bool am_ok = status == 0 || status == no_baseline_status;
    if (am_ok && o.demo && !rounds.empty()) print_demo(rounds);
    return status;
}
