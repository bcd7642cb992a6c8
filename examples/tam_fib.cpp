// SPDX-License-Identifier: MIT
// Fibonacci on TAM (docs/tam.md), as a TAM compiler would emit it: one codeblock, a frame per
// call, placed round-robin over the ranks. Its inlets store the argument and the two results
// and post threads; a synchronising thread (entry count 2) adds the results when both are in.
//
//   AM_RANKS=4 ./tam_fib 20      -> "fib(20) = 6765" under both dispatch policies
#include <am/am.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using am::tam::frame;
using am::tam::word;

enum slot : unsigned { n_slot, parent_slot, parent_inlet, left_slot, right_slot, slots };
enum thread : am::tam::thread_id { start_thread, sum_thread };
enum inlet : am::tam::inlet_id { args_inlet, left_inlet, right_inlet };
constexpr word no_parent = ~word{0};
constexpr am::tam::codeblock_id fib_cb = 0;

// Returns v to whoever called this frame (or ends the program), then frees the frame.
void give_back(frame& f, word v) {
    if (f.slot(parent_slot) == no_parent) {
        f.finish(v);
    } else {
        f.send(am::tam::frame_ref::from(f.slot(parent_slot)),
               static_cast<am::tam::inlet_id>(f.slot(parent_inlet)), {v});
    }
    f.release();
}

void start(frame& f) {
    const word n = f.slot(n_slot);
    if (n < 2) return give_back(f, n);
    const int next = (f.rank() + 1) % f.ranks();
    f.call(fib_cb, next, args_inlet, {n - 1, f.self().as_word(), left_inlet});
    f.call(fib_cb, (next + 1) % f.ranks(), args_inlet, {n - 2, f.self().as_word(), right_inlet});
}

void sum(frame& f) {
    give_back(f, f.slot(left_slot) + f.slot(right_slot));
}

void on_args(frame& f, std::span<const word> a) {
    f.slot(n_slot) = a[0];
    f.slot(parent_slot) = a[1];
    f.slot(parent_inlet) = a[2];
    f.post(start_thread);
}
void on_left(frame& f, std::span<const word> a) {
    f.slot(left_slot) = a[0];
    f.post(sum_thread);
}
void on_right(frame& f, std::span<const word> a) {
    f.slot(right_slot) = a[0];
    f.post(sum_thread);
}

}  // namespace

int main(int argc, char** argv) {
    const word n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20;
    return am::run(argc, argv, [n](am::context& ctx) {
        am::tam::program p;
        p.add({"fib", slots, {{start, 1, "start"}, {sum, 2, "sum"}}, {on_args, on_left, on_right}});
        for (const auto policy :
             {am::tam::policy::active_messages, am::tam::policy::message_driven}) {
            am::tam::options o;
            o.dispatch = policy;
            const am::tam::result r = am::tam::run(ctx, p, fib_cb, {n, no_parent, 0}, o);
            if (ctx.rank() != 0) continue;
            std::printf(
                "%s: fib(%llu) = %llu on %d ranks: %llu threads in %llu quanta, %llu "
                "inlets, %llu frames, %llu messages (%llu between ranks)\n",
                am::tam::to_string(policy), static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(r.value), ctx.size(),
                static_cast<unsigned long long>(r.total.threads),
                static_cast<unsigned long long>(r.total.quanta),
                static_cast<unsigned long long>(r.total.inlets),
                static_cast<unsigned long long>(r.total.frames),
                static_cast<unsigned long long>(r.total.messages),
                static_cast<unsigned long long>(r.total.remote_messages));
        }
    });
}
