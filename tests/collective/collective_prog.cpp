// SPDX-License-Identifier: MIT
// Programs whose ranks call different collectives, started by the tests in CMakeLists.txt
// beside this file (threads, shm, amrun, mpiexec) through tests/shm/amrun_check.sh, which
// checks the exit status, the time taken and what the output names:
//
//   extra_epoch        every rank ends an epoch; rank 0 then ends a second one while the
//                      others return (their end-of-run quiescence)
//   missing_barrier    rank 0 returns while the others call barrier()
//   quiesce_vs_barrier rank 0 calls quiesce() while the others call barrier()
//   straggler          rank 1 stops polling for 8 s while the others end an epoch; run with
//                      AM_EPOCH_TIMEOUT=1, the diagnosis must name rank 1
//   fence_vs_barrier   rank 0 calls am::window::fence while the others call barrier()
//   free_vs_fence      rank 0 calls am::window::free while the others call fence
//   matched            every rank makes the same sequence of different collectives (epochs,
//                      barriers, quiesce, exchange): must succeed
#include <am/am.hpp>
#include <am/window.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

namespace {

void extra_epoch(am::context& ctx) {
    { am::epoch e(ctx); }
    if (ctx.rank() == 0) {
        am::epoch e(ctx);
        std::printf("collective_prog: sum = %llu\n", static_cast<unsigned long long>(e.end(1)));
    }
}

void missing_barrier(am::context& ctx) {
    ctx.barrier();
    if (ctx.rank() != 0) ctx.barrier();
}

// Rank 0 calls `zero`, the others `others`: collectives that do not match, which the job must
// refuse; a rank that gets past them says so.
void mismatched(am::context& ctx, const std::function<void()>& zero,
                const std::function<void()>& others) {
    if (ctx.rank() == 0) {
        zero();
    } else {
        others();
    }
    std::printf("collective_prog: rank %d passed a mismatched collective\n", ctx.rank());
}

void quiesce_vs_barrier(am::context& ctx) {
    ctx.barrier();
    mismatched(
        ctx, [&] { ctx.quiesce(); }, [&] { ctx.barrier(); });
}

// The barrier in a fence or free is a collective of its own kind: matching it with a plain
// barrier (or a fence with a free) would let the ranks run on with the window in different
// states.
void fence_vs_barrier(am::context& ctx) {
    am::window w = am::window::allocate(ctx, 64);
    mismatched(
        ctx, [&] { w.fence(); }, [&] { ctx.barrier(); });
}

void free_vs_fence(am::context& ctx) {
    am::window w = am::window::allocate(ctx, 64);
    mismatched(
        ctx, [&] { w.free(); }, [&] { w.fence(); });
}

void straggler(am::context& ctx) {
    ctx.barrier();
    am::epoch e(ctx);
    if (ctx.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(8));
    e.end();
}

void matched(am::context& ctx) {
    am::counter got(ctx);
    auto h = ctx.handler([&](am::token&) { got.add(); });
    ctx.barrier();
    std::uint64_t total = 0;
    for (int round = 0; round < 20; ++round) {
        for (int d = 0; d < ctx.size(); ++d) ctx.request(d, h);
        {
            am::epoch e(ctx);
            total += e.end(1);
        }
        if (round % 3 == 0) ctx.quiesce();
        if (round % 4 == 0) ctx.barrier();
        if (round % 5 == 0) (void)ctx.exchange(am::global_ptr<int>{});
    }
    got.wait(20 * static_cast<std::uint64_t>(ctx.size()));
    if (total != 20 * static_cast<std::uint64_t>(ctx.size())) {
        throw std::runtime_error("epoch sums " + std::to_string(total));
    }
    std::printf("collective_prog: rank %d ok\n", ctx.rank());
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    void (*body)(am::context&) = mode == "extra_epoch"          ? extra_epoch
                                 : mode == "missing_barrier"    ? missing_barrier
                                 : mode == "quiesce_vs_barrier" ? quiesce_vs_barrier
                                 : mode == "fence_vs_barrier"   ? fence_vs_barrier
                                 : mode == "free_vs_fence"      ? free_vs_fence
                                 : mode == "straggler"          ? straggler
                                 : mode == "matched"            ? matched
                                                                : nullptr;
    if (body == nullptr) {
        std::fprintf(stderr,
                     "usage: collective_prog extra_epoch|missing_barrier|quiesce_vs_barrier|"
                     "fence_vs_barrier|free_vs_fence|straggler|matched\n");
        return 2;
    }
    return am::run(argc, argv, [&](am::context& ctx) { body(ctx); });
}
