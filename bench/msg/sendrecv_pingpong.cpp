// SPDX-License-Identifier: MIT
// sendrecv_pingpong: two-sided messages built on active messages (ctx.send / ctx.recv) against
// MPI_Send / MPI_Recv, in the same run.
//
//   sendrecv_pingpong [--json] [--transport shm|threads] [--sizes 8,1M] [--window 64] ...
//
// Ops, between ranks 0 and 1 (other ranks idle):
//
//   send_recv     ping-pong: rank 0 ctx.send(1, tag, n bytes) then ctx.recv(1, tag, n bytes);
//                 rank 1 the reverse. latency_us = round trip / 2; for >= 64 KiB also
//                 pingpong_GBps = bytes / one-way latency. Messages up to `config::eager_bytes`
//                 (8 KiB) travel eagerly, larger ones by the three-phase protocol.
//                 MPI: send_recv, MPI_Send/MPI_Recv ping-pong (mpi_baseline pingpong).
//   isend_window  bandwidth (>= 64 KiB): per window rank 1 posts `window` ctx.irecv, rank 0
//                 `window` ctx.isend, both wait for all, then rank 1 acknowledges with a 0-byte
//                 ctx.send; GB/s. Same scheme and message counts as the MPI baseline's
//                 isend_window (MPI_Irecv/MPI_Isend/MPI_Waitall, osu_bw style).
//
// The MPI pingpong_GBps lines are derived from MPI's send_recv latencies in this program
// (bytes / latency: the median of the transformed values is the transformed median).
// Ratios am/mpi: latency_ratio (send_recv) and bandwidth_ratio (isend_window).
#include "lib/am_harness.hpp"
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::bench {
namespace {

constexpr const char* bench_name = "sendrecv_pingpong";
constexpr std::size_t default_max_bytes = std::size_t{4} << 20;
constexpr int tag_data = 1, tag_ack = 2;

std::byte pattern(int rank) {
    return static_cast<std::byte>(0xa0 + rank);
}

/// Rank-local buffers of one rank.
struct buffers {
    page_buffer out, in;
    std::vector<am::request> reqs;

    [[nodiscard]] std::span<const std::byte> send_span(std::size_t n) const {
        return {out.data(), n};
    }
    [[nodiscard]] std::span<std::byte> recv_span(std::size_t n) const { return {in.data(), n}; }
};

[[noreturn]] void fail(am::context& ctx, const std::string& what) {
    const std::string msg =
        "bench: DATA CHECK FAILED: rank " + std::to_string(ctx.rank()) + ": " + what;
    std::fprintf(stderr, "%s\n", msg.c_str());
    ctx.abort(msg);
}

/// A blocking receive of exactly `n` bytes from `peer`.
void recv_exact(am::context& ctx, buffers& b, int peer, std::size_t n) {
    const am::message_status st = ctx.recv(peer, tag_data, b.recv_span(n));
    if (st.bytes != n || st.source != peer || st.tag != tag_data) {
        fail(ctx, "recv of " + std::to_string(n) + " bytes got " + std::to_string(st.bytes) +
                      " bytes from rank " + std::to_string(st.source) + " tag " +
                      std::to_string(st.tag));
    }
}

/// The first and last byte received came from the peer's buffer.
void check_received(am::context& ctx, const buffers& b, std::size_t n, int peer) {
    for (const std::size_t at : {std::size_t{0}, n - 1}) {
        if (b.in.data()[at] != pattern(peer)) {
            fail(ctx, "byte " + std::to_string(at) + " of a " + std::to_string(n) +
                          "-byte message is wrong");
        }
    }
}

void pingpong_rounds(am::context& ctx, buffers& b, std::size_t n, std::uint64_t rounds) {
    const int peer = 1 - ctx.rank();
    for (std::uint64_t i = 0; i < rounds; ++i) {
        if (ctx.rank() == 0) {
            ctx.send(peer, tag_data, b.send_span(n));
            recv_exact(ctx, b, peer, n);
        } else {
            recv_exact(ctx, b, peer, n);
            ctx.send(peer, tag_data, b.send_span(n));
        }
    }
}

void latency_point(am::context& ctx, const rank_env& env, buffers& b, std::size_t n) {
    const options& o = env.opts();
    const std::uint64_t iters = iters_for(o, latency_plan, n);
    const std::uint64_t warm = warmup_for(o, iters);
    b.in.data()[0] = b.in.data()[n - 1] = std::byte{0};
    ctx.barrier();
    if (ctx.rank() == 0) {
        pingpong_rounds(ctx, b, n, warm);
        std::vector<double> v;
        for (int r = 0; r < o.reps; ++r) {
            const auto t0 = bench_clock::now();
            pingpong_rounds(ctx, b, n, iters);
            v.push_back(seconds_since(t0) * 1e6 / static_cast<double>(iters) / 2);
        }
        env.report(ctx, bench_name, "send_recv", n, "latency_us", v);
        if (n >= bandwidth_min_bytes) {
            std::vector<double> bw;
            for (const double us : v) bw.push_back(static_cast<double>(n) / us / 1e3);
            env.report(ctx, bench_name, "send_recv", n, "pingpong_GBps", bw);
        }
    } else if (ctx.rank() == 1) {
        pingpong_rounds(ctx, b, n, warm + iters * static_cast<std::uint64_t>(o.reps));
    }
    if (ctx.rank() < 2) check_received(ctx, b, n, 1 - ctx.rank());
    ctx.barrier();
}

// `windows` windows of `w` messages of `n` bytes from rank 0 to rank 1, each acknowledged.
void window_rounds(am::context& ctx, buffers& b, std::size_t n, std::uint64_t w,
                   std::uint64_t windows) {
    for (std::uint64_t i = 0; i < windows; ++i) {
        if (ctx.rank() == 0) {
            for (std::uint64_t k = 0; k < w; ++k)
                b.reqs[k] = ctx.isend(1, tag_data, b.send_span(n));
            for (std::uint64_t k = 0; k < w; ++k) b.reqs[k].wait();
            ctx.recv(1, tag_ack, {});
        } else {
            for (std::uint64_t k = 0; k < w; ++k)
                b.reqs[k] = ctx.irecv(0, tag_data, b.recv_span(n));
            for (std::uint64_t k = 0; k < w; ++k) b.reqs[k].wait();
            ctx.send(0, tag_ack, {});
        }
    }
}

void window_point(am::context& ctx, const rank_env& env, buffers& b, std::size_t n) {
    const options& o = env.opts();
    // The MPI baseline's formulas: msgs rounded up to whole windows of --window.
    const auto w = static_cast<std::uint64_t>(o.window);
    const std::uint64_t msgs = iters_for(o, bandwidth_plan, n);
    const std::uint64_t windows = (msgs + w - 1) / w;
    const std::uint64_t warm = (warmup_for(o, msgs) + w - 1) / w;
    b.reqs.resize(w);
    b.in.data()[0] = b.in.data()[n - 1] = std::byte{0};
    ctx.barrier();
    if (ctx.rank() < 2) window_rounds(ctx, b, n, w, warm);
    std::vector<double> v;
    for (int r = 0; r < o.reps && ctx.rank() < 2; ++r) {
        const auto t0 = bench_clock::now();
        window_rounds(ctx, b, n, w, windows);
        v.push_back(static_cast<double>(windows * w * n) / seconds_since(t0) / 1e9);
    }
    env.report(ctx, bench_name, "isend_window", n, "bandwidth_GBps", v);
    if (ctx.rank() == 1) check_received(ctx, b, n, 0);
    ctx.barrier();
}

void rank_main(am::context& ctx, rank_env& env) {
    const options& o = env.opts();
    if (ctx.size() < 2) throw std::runtime_error("sendrecv_pingpong: needs at least 2 ranks");
    const std::vector<std::size_t> sizes =
        sizes_for(o, 8, std::max(default_max_bytes, o.max_bytes));
    std::size_t biggest = 8;
    for (const std::size_t s : sizes) biggest = std::max(biggest, s);
    buffers b;
    b.out.reset(biggest);
    b.in.reset(biggest);
    std::memset(b.out.data(), static_cast<int>(pattern(ctx.rank())), biggest);
    for (const std::size_t s : sizes) {
        if (o.wants("send_recv")) latency_point(ctx, env, b, s);
    }
    for (const std::size_t s : sizes) {
        if (o.wants("isend_window") && s >= bandwidth_min_bytes) window_point(ctx, env, b, s);
    }
    ctx.quiesce();
}

/// MPI's ping-pong bandwidth from its latencies, as the am side reports it.
void add_mpi_pingpong_bandwidth(reporter& rep) {
    const std::vector<result> snapshot = rep.results();
    for (const result& r : snapshot) {
        if (std::string_view(r.system) != "mpi" || std::string_view(r.op) != "send_recv" ||
            std::string_view(r.metric) != "latency_us" || r.bytes < bandwidth_min_bytes) {
            continue;
        }
        const auto gbps = [&](double us) { return static_cast<double>(r.bytes) / us / 1e3; };
        const summary s{gbps(r.median), gbps(r.max), gbps(r.min), r.reps};
        rep.add(make_result(r.bench, r.system, r.transport, r.ranks, r.op, r.bytes, "pingpong_GBps",
                            s));
    }
}

/// The MPI side of the same sizes, then the am/MPI ratios.
/// False when the baseline was wanted but could not be run.
bool compare_with_mpi(const options& o, reporter& rep) {
    const std::vector<std::size_t> lat = am_sizes(rep, "latency_us");
    const std::vector<std::size_t> bw = am_sizes(rep, "bandwidth_GBps");
    if (baseline_skipped(o) || (lat.empty() && bw.empty())) return true;
    // mpi_baseline measures the default sweep when given no --sizes: keep it to one size.
    std::vector<std::string> args =
        baseline_args(o, lat.empty() ? std::vector<std::size_t>{8} : lat);
    if (!bw.empty()) args.insert(args.end(), {"--bw-sizes", join_sizes(bw)});
    if (!run_mpi_baseline(o, "pingpong", args, rep)) return false;
    add_mpi_pingpong_bandwidth(rep);
    rep.add_ratios("am", "send_recv", "mpi", "send_recv", "latency_us", "latency_ratio");
    rep.add_ratios("am", "isend_window", "mpi", "isend_window", "bandwidth_GBps",
                   "bandwidth_ratio");
    return true;
}

int run_round(const options& o, reporter& rep, bool& reporting) {
    return run_am_job(o, {}, rank_main, rep, reporting);
}

constexpr const char* about = R"(Two-sided messages on active messages: ctx.send/ctx.recv ping-
pong latency (8 B - 4 MiB) and windowed isend/irecv bandwidth, and the MPI_Send/MPI_Recv baseline
in the same run.
ops (--ops): send_recv, isend_window (default both).)";

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    return bench_main(argc, argv, bench_program{bench_name, about, run_round, compare_with_mpi});
}
