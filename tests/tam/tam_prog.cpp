// SPDX-License-Identifier: MIT
// TAM programs that fail (or must not), started by the tests in CMakeLists.txt beside this
// file (threads, shm, mpiexec) through tests/shm/amrun_check.sh, which checks the exit status,
// the time taken and what the output names (issue 36, items 6, 7 and 10):
//
//   run_vs_epoch      rank 0 calls am::tam::run while the others end an epoch
//   run_vs_barrier    ... while the others call barrier()
//   run_vs_quiesce    ... while the others call quiesce()
//   run_vs_return     ... while the others return from the rank function
//   run_straggler     rank 1 sleeps 6 s before am::tam::run (AM_EPOCH_TIMEOUT=1: the others
//                     must fail the job naming rank 1, not wait for it)
//   thread_straggler  a TAM thread on the last rank sleeps 6 s (the rank stops polling)
//   stale_frame_ref   a frame slot is reused 65 536 times, then a message goes to its first
//                     frame_ref: it must be refused, not delivered to the live frame
//   inlet_throws      an inlet throws std::runtime_error("inlet failed")
//   thread_throws     a thread throws std::runtime_error("thread failed")
//   run_matched       every rank runs TAM between epochs, barriers, quiesce and exchange:
//                     must succeed
//
// The root frame is on rank 0; it calls a "child" on the last rank, which sends its frame_ref
// back and releases itself.
#include <am/am.hpp>
#include <am/tam.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

using am::tam::frame;
using am::tam::frame_ref;
using am::tam::word;

enum class mode {
    none,
    run_vs_epoch,
    run_vs_barrier,
    run_vs_quiesce,
    run_vs_return,
    run_straggler,
    thread_straggler,
    stale_frame_ref,
    inlet_throws,
    thread_throws,
    run_matched
};
// Set before am::run (forked shm ranks inherit it); read-only afterwards.
mode g_mode = mode::none;

// Allocations of the child's frame slot before the stale frame_ref is used: the first and
// 65 536 reuses, so that a 16-bit generation has wrapped back to the first one's.
constexpr word stale_allocations = 65537;

int last_rank(const frame& f) {
    return f.ranks() - 1;
}

// Root (rank 0). Slots: 0 the child's first frame_ref, 1 children returned, 2 the last one's.
void root_start(frame& f) {
    f.call(1, last_rank(f), 0, {f.self().as_word(), 0});
}
void root_returned(frame& f) {
    const word count = f.slot(1);
    if (g_mode == mode::stale_frame_ref && count < stale_allocations) {
        f.call(1, last_rank(f), 0, {f.self().as_word(), count + 1 == stale_allocations ? 1u : 0u});
        return;
    }
    if (g_mode == mode::stale_frame_ref) {
        const frame_ref stale = frame_ref::from(f.slot(0));
        const frame_ref live = frame_ref::from(f.slot(2));
        if (stale == live) std::printf("tam_prog: the stale frame_ref equals the live one\n");
        f.send(stale, 1, {});  // must be refused: that frame was released long ago
        f.send(live, 2, {});   // the live child releases itself
    }
    f.finish(1);
    f.release();
}
void root_args(frame& f, std::span<const word>) {
    f.post(0);
}
void root_child_back(frame& f, std::span<const word> a) {
    if (f.slot(1) == 0) f.slot(0) = a[0];
    f.slot(2) = a[0];
    ++f.slot(1);
    f.post(1);
}

// Child (last rank). Slots: 0 the caller, 1 "keep" (do not release: stale_frame_ref's last).
void child_body(frame& f) {
    if (g_mode == mode::thread_throws) throw std::runtime_error("thread failed");
    if (g_mode == mode::thread_straggler) std::this_thread::sleep_for(std::chrono::seconds(6));
    f.send(frame_ref::from(f.slot(0)), 1, {f.self().as_word()});
    if (f.slot(1) == 0) f.release();
}
void child_release(frame& f) {
    f.release();
}
void child_args(frame& f, std::span<const word> a) {
    if (g_mode == mode::inlet_throws) throw std::runtime_error("inlet failed");
    f.slot(0) = a[0];
    f.slot(1) = a[1];
    f.post(0);
}
void child_stale(frame& f, std::span<const word>) {
    std::printf("tam_prog: rank %d: a message for a released frame reached frame %u.%u\n", f.rank(),
                f.self().index(), static_cast<unsigned>(f.self().generation()));
}
void child_done(frame& f, std::span<const word>) {
    f.post(1);
}

am::tam::program make_program() {
    am::tam::program prog;
    am::tam::codeblock_def root;
    root.name = "root";
    root.slots = 3;
    root.threads = {{root_start, 1, "start"}, {root_returned, 1, "returned"}};
    root.inlets = {root_args, root_child_back};
    am::tam::codeblock_def child;
    child.name = "child";
    child.slots = 2;
    child.threads = {{child_body, 1, "body"}, {child_release, 1, "release"}};
    child.inlets = {child_args, child_stale, child_done};
    prog.add(std::move(root));
    prog.add(std::move(child));
    return prog;
}

void tam_run(am::context& ctx) {
    const am::tam::program prog = make_program();
    const am::tam::result r = am::tam::run(ctx, prog, 0, {});
    if (r.value != 1) throw std::runtime_error("am::tam::run returned " + std::to_string(r.value));
}

void body(am::context& ctx) {
    const bool first = ctx.rank() == 0;
    switch (g_mode) {
        case mode::run_vs_epoch:
            if (first) {
                tam_run(ctx);
            } else {
                am::epoch e(ctx);
                (void)e.end();
            }
            break;
        case mode::run_vs_barrier:
            first ? tam_run(ctx) : ctx.barrier();
            break;
        case mode::run_vs_quiesce:
            first ? tam_run(ctx) : ctx.quiesce();
            break;
        case mode::run_vs_return:
            if (first) tam_run(ctx);
            break;
        case mode::run_straggler:
            if (ctx.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(6));
            tam_run(ctx);
            break;
        case mode::run_matched:
            for (int round = 0; round < 3; ++round) {
                tam_run(ctx);
                {
                    am::epoch e(ctx);
                    (void)e.end();
                }
                ctx.barrier();
                tam_run(ctx);
                ctx.quiesce();
                (void)ctx.exchange(am::global_ptr<int>{});
            }
            std::printf("tam_prog: rank %d ok\n", ctx.rank());
            return;
        default:
            tam_run(ctx);
    }
    std::printf("tam_prog: rank %d passed\n", ctx.rank());
}

mode parse(const std::string& s) {
    const std::pair<const char*, mode> modes[] = {
        {"run_vs_epoch", mode::run_vs_epoch},       {"run_vs_barrier", mode::run_vs_barrier},
        {"run_vs_quiesce", mode::run_vs_quiesce},   {"run_vs_return", mode::run_vs_return},
        {"run_straggler", mode::run_straggler},     {"thread_straggler", mode::thread_straggler},
        {"stale_frame_ref", mode::stale_frame_ref}, {"inlet_throws", mode::inlet_throws},
        {"thread_throws", mode::thread_throws},     {"run_matched", mode::run_matched},
    };
    for (const auto& [name, m] : modes)
        if (s == name) return m;
    return mode::none;
}

}  // namespace

int main(int argc, char** argv) {
    g_mode = parse(argc > 1 ? argv[1] : "");
    if (g_mode == mode::none) {
        std::fprintf(stderr,
                     "usage: tam_prog run_vs_epoch|run_vs_barrier|run_vs_quiesce|run_vs_return|"
                     "run_straggler|thread_straggler|stale_frame_ref|inlet_throws|thread_throws|"
                     "run_matched\n");
        return 2;
    }
    return am::run(argc, argv, body);
}
