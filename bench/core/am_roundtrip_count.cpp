// SPDX-License-Identifier: MIT
// am_roundtrip_count: a short-AM round-trip loop made to be counted by callgrind.
//
// With one rank (default) the rank pings itself, so each iteration is exactly
//   request → (the send's own poll) dispatch ping → handler → reply → poll → dispatch pong,
// with no waiting: the instruction count per iteration is deterministic. With 2 ranks
// (--ranks 2 --transport shm) rank 0 pings rank 1 and busy-polls for the pong.
//
//   valgrind --tool=callgrind --toggle-collect='am_bench_roundtrip_loop*'
//            build/bench/am_roundtrip_count --iters 100000
//   → Ir of the collected part / iterations = instructions per short-AM round trip.
// bench/scripts/count_instructions.sh does that and prints the figure; see docs/performance.md.
#include "lib/am_harness.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <am/am.hpp>

#include <algorithm>
#include <cstdio>
#include <string_view>

using ping_handler = am::handler<am::category::short_am, std::uint64_t>;

static inline void roundtrips(am::context& ctx, ping_handler ping, int peer,
                              const std::uint64_t& pongs, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t want = pongs + 1;
        ctx.request(peer, ping, i);
        while (pongs < want) ctx.poll();
    }
}

// The measured loop, outside any namespace and named for --toggle-collect. noipa keeps GCC
// from folding it with the identical warm-up loop or inlining it into its caller.
[[gnu::noipa]] void am_bench_roundtrip_loop(am::context& ctx, ping_handler ping, int peer,
                                            const std::uint64_t& pongs, std::uint64_t n) {
    roundtrips(ctx, ping, peer, pongs, n);
}

[[gnu::noipa]] void am_bench_warmup_loop(am::context& ctx, ping_handler ping, int peer,
                                         const std::uint64_t& pongs, std::uint64_t n) {
    roundtrips(ctx, ping, peer, pongs, n);
}

// Rank 1's side with 2 ranks: poll until every ping has been answered.
[[gnu::noipa]] void am_bench_roundtrip_serve(am::context& ctx, const std::uint64_t& pings,
                                             std::uint64_t n) {
    while (pings < n) ctx.poll();
}

namespace am::bench {
namespace {

void rank_main(am::context& ctx, rank_env& env) {
    std::uint64_t pings = 0, pongs = 0;
    auto pong = ctx.handler([&pongs](am::token&, std::uint64_t) { ++pongs; });
    auto ping = ctx.handler([&pings, pong](am::token& t, std::uint64_t x) {
        ++pings;
        t.reply(pong, x);
    });
    ctx.barrier();
    const std::uint64_t n = env.opts().iters != 0 ? env.opts().iters : 100000;
    const int peer = ctx.size() > 1 ? 1 : 0;
    if (ctx.rank() == 0) {
        am_bench_warmup_loop(ctx, ping, peer, pongs, n / 10 + 1);
        const auto t0 = bench_clock::now();
        am_bench_roundtrip_loop(ctx, ping, peer, pongs, n);
        const double ns = seconds_since(t0) * 1e9 / static_cast<double>(n);
        env.report(ctx, "am_roundtrip_count", "short", 8, "roundtrip_ns", {ns});
    } else if (ctx.rank() == 1) {
        am_bench_roundtrip_serve(ctx, pings, n + n / 10 + 1);
    }
    ctx.barrier();
}

}  // namespace
}  // namespace am::bench

int main(int argc, char** argv) {
    using namespace am::bench;
    options o = parse_options(argc, argv,
                              "Short-AM round-trip loop for instruction counting under "
                              "valgrind --tool=callgrind (see docs/performance.md). Default: "
                              "1 rank on the threads transport, pinging itself; --iters N "
                              "round trips (default 100000) after N/10+1 warm-up ones.");
    if (!given(o, "--ranks")) o.ranks = 1;
    if (!given(o, "--transport")) o.transport = "threads";
    o.bench = "am_roundtrip_count";
    reporter rep(o.json ? output::json_only : output::table);
    bool reporting = false;
    return run_am_job(o, {0, false}, rank_main, rep, reporting);
}
