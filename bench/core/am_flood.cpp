// SPDX-License-Identifier: MIT
// am_flood: one-way message rate from rank 0 to rank 1, then the MPI baseline (windowed
// MPI_Isend flood) and, when ucx_perftest is installed, the UCX baseline (ucp_am_bw) on the
// same sizes in the same run.
//
//   am_flood [--json] [--transport shm|threads|mpi|ucx|ucx,mpi] [--ranks 2] [--reps 7] ...   (see
//   --help)
//
// Per repetition rank 0 sends N messages back to back (short with one 8-byte argument for
// op "short", a medium payload of `bytes` with no argument for op "medium"); rank 1 counts
// them in the handler and replies to the N-th with a short acknowledgement. The handler does
// not read the payload unless --touch (op "medium_read": it reads every byte). The time runs
// from the first send until rank 0 has handled that acknowledgement. No window: the ring's
// flow control alone paces the sender.
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "lib/ucx_baseline.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <span>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "am_flood";
constexpr std::size_t default_max_bytes = 64 << 10;

/// Rank-local state and the handlers of one rank.
struct flood {
    std::uint64_t received = 0;         // messages handled (rank 1)
    std::uint64_t acks = 0;             // acknowledgements handled (rank 0)
    std::vector<std::uint64_t> ack_at;  // rank 1: acknowledge when `received` hits these
    std::size_t next_ack = 0;
    std::vector<std::byte> buf;
    bool touch = false;
    std::uint64_t checksum = 0;  // what --touch read (kept so the reads are not optimised out)

    am::handler<am::category::short_am, std::uint64_t> msg_short;
    am::handler<am::category::medium> msg_medium;

    explicit flood(am::context& ctx) {
        auto ack = ctx.handler([this](am::token&) { ++acks; });
        msg_short = ctx.handler([this, ack](am::token& t, std::uint64_t) { arrived(t, ack); });
        msg_medium = ctx.handler([this, ack](am::token& t, std::span<const std::byte> p) {
            if (touch) consume(p);
            arrived(t, ack);
        });
        ctx.barrier();
    }

    /// Reads the whole payload, as a handler that uses the data would.
    void consume(std::span<const std::byte> p) { checksum += read_sum(p); }

    void arrived(am::token& t, am::handler<am::category::short_am> ack) {
        ++received;
        if (next_ack < ack_at.size() && received == ack_at[next_ack]) {
            ++next_ack;
            t.reply(ack);
        }
    }
};

/// One point from rank 0 to `peer`: warm-up burst, then `reps` timed bursts of `n` messages.
template <class Send>
void point(am::context& ctx, const rank_env& env, flood& f, int peer, const char* op,
           std::size_t bytes, Send send) {
    const options& o = env.opts();
    const std::uint64_t n = iters_for(o, flood_plan, bytes);
    const std::uint64_t warm = warmup_for(o, n);
    // The peer (rank 0 alone: itself) acknowledges the last message of every burst.
    if (ctx.rank() == peer) {
        f.ack_at.clear();
        f.next_ack = 0;
        std::uint64_t at = f.received + warm;
        f.ack_at.push_back(at);
        for (int r = 0; r < o.reps; ++r) f.ack_at.push_back(at += n);
    }
    ctx.barrier();  // ack_at is in place before the first message
    if (ctx.rank() == 0) {
        auto burst = [&](std::uint64_t count) {
            const std::uint64_t want = f.acks + 1;
            for (std::uint64_t i = 0; i < count; ++i) send(i);
            env.wait(ctx, [&] { return f.acks >= want; });
        };
        burst(warm);
        std::vector<double> v;
        for (int r = 0; r < o.reps; ++r) {
            const auto t0 = bench_clock::now();
            burst(n);
            v.push_back(static_cast<double>(n) / seconds_since(t0) / 1e6);
        }
        env.report(ctx, bench_name, op, bytes, "rate_Mmsgps", v);
        env.release_idle(ctx, peer);
    } else if (ctx.rank() == peer) {
        env.wait(ctx, [&] { return f.next_ack == f.ack_at.size(); });
    } else {
        env.idle(ctx);
    }
    ctx.barrier();
}

void rank_main(am::context& ctx, rank_env& env) {
    flood f(ctx);
    const options& o = env.opts();
    f.touch = o.touch;
    const std::size_t max_bytes =
        std::min<std::size_t>(ctx.max_medium(), std::max(default_max_bytes, o.max_bytes));
    f.buf.assign(max_bytes, std::byte{0x5a});
    for (const int peer : env.peers(ctx)) {
        env.use_peer(peer);
        if (o.wants("short") && sizes_for(o, 8, 8).size() == 1) {
            point(ctx, env, f, peer, "short", 8,
                  [&](std::uint64_t i) { ctx.request(peer, f.msg_short, i); });
        }
        if (o.wants("medium")) {
            for (std::size_t s : sizes_for(o, 8, max_bytes)) {
                const auto payload = std::span<const std::byte>(f.buf.data(), s);
                point(ctx, env, f, peer, o.touch ? "medium_read" : "medium", s,
                      [&](std::uint64_t) { ctx.request(peer, f.msg_medium, payload); });
            }
        }
    }
}

/// With --transport ucx,mpi: am over ucx against am over mpi, point by point.
void compare_transports(reporter& rep) {
    rep.add_transport_ratios("am", "ucx", "mpi", "rate_Mmsgps", "rate_ratio");
}

/// False when the baseline was wanted but could not be run.
bool compare_with_mpi(const options& o, reporter& rep) {
    const std::vector<std::size_t> sizes = am_sizes(rep);
    if (baseline_skipped(o) || sizes.empty()) return true;
    if (!run_mpi_baseline(o, "flood", baseline_args(o, sizes), rep)) return false;
    for (const char* op : {"short", "medium", "medium_read"}) {
        rep.add_ratios("am", op, "mpi", "isend_window", "rate_Mmsgps", "rate_ratio");
    }
    return true;
}

/// The UCX side of the same sizes (ucp_am_bw: the client streams UCP active messages to the
/// server, same message counts), then the am/UCX ratios. False when ucx_perftest is
/// installed but failed.
bool compare_with_ucx(const options& o, ucx_baseline& ucx, reporter& rep) {
    std::vector<ucx_point> points;
    add_ucx_points(points, o, ucx_test::am_bw, am_sizes(rep, "rate_Mmsgps"), flood_plan,
                   "rate_Mmsgps");
    if (!ucx.run(points, rep)) return false;
    for (const char* op : {"short", "medium", "medium_read"}) {
        rep.add_ratios("am", op, "ucx", "ucp_am_bw", "rate_Mmsgps", "rate_ratio");
    }
    return true;
}

constexpr const char* about = R"(One-way message rate of short and medium active messages (8 B -
64 KiB), and the MPI windowed-Isend baseline.)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    const options o = bench_options(argc, argv, bench_name, about, {}, true);
    ucx_baseline ucx(o, bench_name);
    return bench_main(o, {[&](reporter& rep, bool& reporting) {
                              return run_am_job(o, {}, rank_main, rep, reporting);
                          },
                          [&](reporter& rep) {
                              compare_transports(rep);
                              const bool mpi = compare_with_mpi(o, rep);
                              return compare_with_ucx(o, ucx, rep) && mpi;
                          }});
}
