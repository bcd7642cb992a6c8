// SPDX-License-Identifier: MIT
// A program launched through amrun by the tests: `amrun_prog ok` exchanges checked medium and
// long messages all-to-all and exits 0; `amrun_prog twice` does so in two consecutive
// `am::run` calls (a rank prints its "ok" line once per run); `amrun_prog kill` has rank 2 kill
// itself after a barrier while the others wait, so the job must fail; `amrun_prog exit` has
// rank 1 call std::exit(3) there instead, `amrun_prog exit_in_handler` std::exit(0) in a
// handler, `amrun_prog exit_in_rpc` std::exit(0) in a remote function rank 0 waits on, and
// `amrun_prog exit_in_progress` std::exit(0) in a handler on rank 1's progress thread. `stuck
// [R]` and `stuck_epoch [R]` leave rank R (default: the last) in user code for a minute, never
// polling, while the job fails (another rank throws; or, with AM_EPOCH_TIMEOUT, the others time out
// ending an epoch rank R never ends): the job must still end within a bound. `runs_differ`: rank 0
// calls am::run a second time, the others do not: rank 0 must fail naming a rank that exited, not
// wait forever. Other modes ignore arguments after the mode (tests use one to find their ranks).
#include <am/am.hpp>
#include <am/rpc.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 7) >> 1);
    return v;
}

unsigned seed_of(int src, int dst) {
    return static_cast<unsigned>(src * 1000 + dst);
}

void all_to_all(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    constexpr std::size_t len = 3000;
    am::counter got(ctx);
    int bad = 0;
    auto check = [&](int src, std::span<const std::byte> p) {
        const auto want = pattern(len, seed_of(src, me));
        if (!std::ranges::equal(p, want)) ++bad;
        got.add();
    };
    auto medium =
        ctx.handler([&](am::token& t, std::span<const std::byte> p) { check(t.source(), p); });
    auto put = ctx.handler([&](am::token& t, std::span<std::byte> p, std::uint64_t off) {
        if (p.data() != ctx.segment().data() + off) ++bad;
        check(t.source(), p);
    });
    ctx.barrier();
    for (int d = 0; d < n; ++d) {
        const auto buf = pattern(len, seed_of(me, d));
        ctx.request(d, medium, am::bytes(buf));
        const std::size_t off = static_cast<std::size_t>(me) * len;
        ctx.request(d, put, am::bytes(buf), off, std::uint64_t{off});
    }
    got.wait(2 * static_cast<std::uint64_t>(n));
    ctx.barrier();
    if (bad != 0) {
        throw std::runtime_error("rank " + std::to_string(me) + ": " + std::to_string(bad) +
                                 " messages with wrong content");
    }
    std::printf("amrun_prog: rank %d of %d ok\n", me, n);
}

void kill_rank_two(am::context& ctx) {
    ctx.barrier();
    if (ctx.rank() == 2) std::raise(SIGKILL);
    am::counter never(ctx);
    never.wait(1);  // throws am::error(aborted) once the launcher marks the job failed
}

void exit_rank_one(am::context& ctx) {
    ctx.barrier();
    if (ctx.rank() == 1) std::exit(3);
    am::counter never(ctx);
    never.wait(1);
}

void exit_in_handler(am::context& ctx) {
    auto quit = ctx.handler([](am::token&) { std::exit(0); });
    ctx.barrier();
    if (ctx.rank() == 0) ctx.request(1, quit);
    am::counter never(ctx);
    never.wait(1);
}

// Rank 0 waits on an RPC whose function, on rank 1, calls std::exit(0).
int exit_quietly(int x) {
    std::exit(0);
    return x;
}

void exit_in_rpc(am::context& ctx) {
    am::rpc_register<&exit_quietly>(ctx);
    ctx.barrier();
    if (ctx.rank() == 0) (void)am::rpc<&exit_quietly>(ctx, 1, 7).get();
    am::counter never(ctx);
    never.wait(1);
}

// Rank 1's progress thread runs the handler that calls std::exit(0): rank 1 itself sleeps in
// user code, never polling (run with AM_PROGRESS_THREAD=1).
void exit_in_progress(am::context& ctx) {
    auto quit = ctx.handler([](am::token&) { std::exit(0); });
    ctx.barrier();
    if (ctx.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));
    if (ctx.rank() == 0) ctx.request(1, quit);
    am::counter never(ctx);
    never.wait(1);
}

// Sleeps in user code without polling, long past any bound of the tests.
void never_poll() {
    std::this_thread::sleep_for(std::chrono::seconds(60));
}

int g_stuck = -1;  // the rank that never polls; -1: the last

int stuck_of(const am::context& ctx) {
    return g_stuck < 0 ? ctx.size() - 1 : g_stuck;
}

void stuck_rank(am::context& ctx) {
    ctx.barrier();
    const int stuck = stuck_of(ctx);
    if (ctx.rank() == stuck) return never_poll();
    if (ctx.rank() == (stuck + 1) % ctx.size()) {
        throw std::runtime_error("rank " + std::to_string(ctx.rank()) + " gives up");
    }
    am::counter never(ctx);
    never.wait(1);  // throws am::error(aborted) once rank 0 has failed the job
}

void stuck_in_epoch(am::context& ctx) {
    am::message_type<int> type(
        ctx, [](int) {}, "probe");
    am::epoch e(ctx);
    type.send(ctx.rank(), (ctx.rank() + 1) % ctx.size());
    if (ctx.rank() == stuck_of(ctx)) return never_poll();
    e.end();  // times out (AM_EPOCH_TIMEOUT): the last rank never ends the epoch
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (argc > 2) g_stuck = std::atoi(argv[2]);
    int rank = -1;
    const am::rank_main fn = mode == "ok" || mode == "twice" ? am::rank_main(all_to_all)
                             : mode == "runs_differ"
                                 ? am::rank_main([&](am::context& ctx) { rank = ctx.rank(); })
                             : mode == "kill"             ? am::rank_main(kill_rank_two)
                             : mode == "exit"             ? am::rank_main(exit_rank_one)
                             : mode == "exit_in_handler"  ? am::rank_main(exit_in_handler)
                             : mode == "exit_in_rpc"      ? am::rank_main(exit_in_rpc)
                             : mode == "exit_in_progress" ? am::rank_main(exit_in_progress)
                             : mode == "stuck"            ? am::rank_main(stuck_rank)
                             : mode == "stuck_epoch"      ? am::rank_main(stuck_in_epoch)
                                                          : am::rank_main();
    if (!fn) {
        std::fprintf(stderr,
                     "usage: amrun_prog ok|twice|runs_differ|kill|exit|exit_in_handler|exit_in_rpc|"
                     "exit_in_progress|"
                     "stuck [R]|"
                     "stuck_epoch [R]\n");
        return 2;
    }
    const int first = am::run(argc, argv, fn);
    // runs_differ: rank 0 starts a second am::run the others never start.
    if (first == 0 && mode == "runs_differ" && rank == 0) return am::run(argc, argv, fn);
    if (first != 0 || mode != "twice") return first;
    std::fflush(stdout);  // the first run's lines come first, even through a pipe
    return am::run(argc, argv, fn);
}
