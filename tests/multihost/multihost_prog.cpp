// SPDX-License-Identifier: MIT
// A program the multi-host tests start across emulated hosts (scripts/multihost.sh, see
// tests/multihost/CMakeLists.txt):
//
//   am_multihost work SECONDS   every rank keeps sending requests to every rank (each answered
//                               by a reply) and meets the others in barriers, in rounds, until
//                               SECONDS passed on rank 0; then checks every count and prints
//                               "am_multihost: rank R of P on HOST ok (N rounds)". Used over
//                               degraded links, and with a link cut in the middle (the job must
//                               then fail, named, in bounded time).
//   am_multihost kill           as work, but the last rank (on the last host) kills itself
//                               (SIGKILL) after the first rounds, while the others are busy.
//
// The transport is mpi (started by the MPI launcher); ranks of one host share memory.
#include <am/am.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct totals {
    std::uint64_t requests = 0;  // handled here
    std::uint64_t replies = 0;   // received here
    // The round rank 0 said is the last (its requests of that round carry bit 0). Its requests
    // of round r + 1 may arrive while this rank still ends round r, so the decision names its
    // round rather than being a flag.
    std::uint64_t last_round = ~std::uint64_t{0};
};

// One round: 64 requests to every rank (a reply to each), then a barrier. Rank 0's requests
// carry its decision whether this round is the last (bit 0): every rank handled them before
// rank 0 saw their replies, so after the barrier all ranks agree.
void round(am::context& ctx, am::handler<am::category::short_am, std::uint64_t> ask, totals& t,
           std::uint64_t word) {
    const int n = ctx.size();
    const std::uint64_t before = t.replies;
    for (int k = 0; k < 64; ++k) {
        for (int d = 0; d < n; ++d) ctx.request(d, ask, word);
    }
    ctx.wait([&] { return t.replies - before == 64 * static_cast<std::uint64_t>(n); });
    ctx.barrier();
}

int run_rank(am::context& ctx, double seconds, bool kill_last) {
    const int n = ctx.size(), me = ctx.rank();
    totals t;
    auto answer = ctx.handler([&](am::token&, std::uint64_t) { ++t.replies; });
    auto ask = ctx.handler([&](am::token& tok, std::uint64_t word) {
        ++t.requests;
        if (word & 1) t.last_round = word >> 1;
        tok.reply(answer, word);
    });
    ctx.barrier();  // handlers enabled everywhere
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t rounds = 0;
    for (;;) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const bool last = me == 0 && elapsed >= seconds;
        round(ctx, ask, t, rounds << 1 | (last ? 1 : 0));
        ++rounds;
        if (kill_last && me == n - 1 && rounds == 20) std::raise(SIGKILL);
        if (t.last_round < rounds) break;  // the round just ended was the last
    }
    ctx.barrier();
    const std::uint64_t expect = rounds * 64 * static_cast<std::uint64_t>(n);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    if (t.requests != expect || t.replies != expect) {
        std::printf(
            "am_multihost: rank %d of %d on %s FAILED: %llu requests, %llu replies, "
            "expected %llu each\n",
            me, n, host, static_cast<unsigned long long>(t.requests),
            static_cast<unsigned long long>(t.replies), static_cast<unsigned long long>(expect));
        return 1;
    }
    std::printf("am_multihost: rank %d of %d on %s ok (%llu rounds)\n", me, n, host,
                static_cast<unsigned long long>(rounds));
    std::fflush(stdout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    double seconds = 5;
    if (mode == "work" && argc == 3) {
        seconds = std::atof(argv[2]);
    } else if (mode == "kill") {
        seconds = 60;  // the job must still run when the last rank dies
    } else {
        std::fprintf(stderr, "usage: am_multihost work SECONDS | kill\n");
        return 2;
    }
    int status = 0;
    const int rc = am::run(argc, argv, [&](am::context& ctx) {
        if (run_rank(ctx, seconds, mode == "kill") != 0) status = 1;
    });
    return rc != 0 ? rc : status;
}
