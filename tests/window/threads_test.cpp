// SPDX-License-Identifier: MIT
// config::thread_multiple: four std::threads of every rank issue AMs at once (each call is
// atomic) to every rank, two epochs. Each thread updates its own slot at every target with a
// non-commutative update and reads it back, so its outputs follow from the order of its own
// AMs, which the window keeps (one origin, one target, overlapping ranges); every output and
// every slot equals the sequential reference.
#include "window/window_support.hpp"

#include <atomic>
#include <deque>
#include <thread>

namespace {

using namespace am_test::win;

constexpr int threads = 4;

// x = x·31 + v over the segment; the output is x after it.
void threads_horner(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.size() != 1) return;
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        for (u64 v : a.in(i)) a.persistent[0] = a.persistent[0] * 31 + v;
        for (u64& o : a.out(i)) o = a.persistent[0];
    }
}

struct thread_am {
    int target;
    std::size_t nseg;
    std::vector<u64> in, out;
};

int ams_per_target(int n) {
    return n > 4 ? 3 : 10;
}

// The AMs thread `t` of `origin` issues in `epoch`, in order.
std::deque<thread_am> threads_plan(int origin, int t, int epoch, int n) {
    rng r{mix(static_cast<u64>(origin) << 32 ^ static_cast<u64>(t) << 8 ^ static_cast<u64>(epoch))};
    std::deque<thread_am> v;
    for (int i = 0; i < ams_per_target(n); ++i) {
        for (int k = 0; k < n; ++k) {
            thread_am a{(origin + k) % n, r.between(1, 4), {}, {}};
            a.in.resize(a.nseg * 3);
            a.out.assign(a.nseg, 0);
            fill_values(a.in, r.next());
            v.push_back(std::move(a));
        }
    }
    return v;
}

std::size_t slot_of(int origin, int t) {
    return static_cast<std::size_t>(origin) * threads + static_cast<std::size_t>(t);
}

u64 threads_initial(int target, std::size_t slot) {
    return mix(static_cast<u64>(target) << 24 | slot);
}

// Runs `ams` sequentially on the slots `x` (per target); checks outputs when `outs`.
void replay(const std::deque<thread_am>& ams, std::vector<u64>& x, bool outs, int me) {
    for (std::size_t i = 0; i < ams.size(); ++i) {
        const thread_am& a = ams[i];
        u64& v = x[static_cast<std::size_t>(a.target)];
        for (std::size_t s = 0; s < a.nseg; ++s) {
            for (std::size_t j = 0; j < 3; ++j) v = v * 31 + a.in[s * 3 + j];
            if (outs) {
                EXPECT_EQ(a.out[s], v) << rank_name(me) << ": AM " << i << ", segment " << s;
            }
        }
    }
}

void threads_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const std::size_t nslots = static_cast<std::size_t>(n) * threads;
    am::window w = am::window::allocate(ctx, nslots * sizeof(u64));
    const op_t op = w.register_op<u64, u64, u64>("threads_horner", threads_horner);
    for (std::size_t s = 0; s < nslots; ++s) as_u64(w.memory())[s] = threads_initial(me, s);
    // x[origin][thread][target]: the reference slots.
    std::vector<std::vector<u64>> x(nslots, std::vector<u64>(static_cast<std::size_t>(n)));
    for (int o = 0; o < n; ++o) {
        for (int t = 0; t < threads; ++t) {
            for (int target = 0; target < n; ++target) {
                x[slot_of(o, t)][static_cast<std::size_t>(target)] =
                    threads_initial(target, slot_of(o, t));
            }
        }
    }
    w.fence();
    for (int epoch = 0; epoch < 2; ++epoch) {
        std::vector<std::deque<thread_am>> ams(threads);
        for (int t = 0; t < threads; ++t)
            ams[static_cast<std::size_t>(t)] = threads_plan(me, t, epoch, n);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                for (thread_am& a : ams[static_cast<std::size_t>(t)]) {
                    w.am(op, a.target, std::span<const u64>(a.in), 3, std::span<u64>(a.out), 1,
                         a.nseg, slot_of(me, t), 1);
                }
            });
        }
        for (auto& th : pool) th.join();
        w.fence();
        for (int o = 0; o < n; ++o) {
            for (int t = 0; t < threads; ++t) {
                if (o == me) {
                    replay(ams[static_cast<std::size_t>(t)], x[slot_of(o, t)], true, me);
                } else {
                    replay(threads_plan(o, t, epoch, n), x[slot_of(o, t)], false, me);
                }
            }
        }
        const auto slots = as_u64(w.memory());
        for (std::size_t s = 0; s < nslots; ++s) {
            EXPECT_EQ(slots[s], x[s][static_cast<std::size_t>(me)])
                << rank_name(me) << " epoch " << epoch << ": slot " << s;
        }
        ctx.barrier();
    }
    EXPECT_EQ(w.stats().ams,
              2u * threads * static_cast<u64>(ams_per_target(n)) * static_cast<u64>(n));
    w.free();
}

// Concurrent epochs with thread_multiple: the threads' AMs run concurrently, at the origin for
// mapped targets (possibly on several threads at once), and threads flush targets while
// others issue. The operation adds atomically; totals and each AM's own outputs are checked.
void add_atomic(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.size() != 1) return;
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        u64 sum = 0;
        for (u64 v : a.in(i)) sum += v;
        std::atomic_ref<u64>(a.persistent[0]).fetch_add(sum);
        for (u64& o : a.out(i)) o = sum;
    }
}

void concurrent_threads_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = am::window::allocate(ctx, sizeof(u64));
    const op_t op = w.register_op<u64, u64, u64>("add_atomic", add_atomic);
    w.fence(am::epoch_assert::concurrent);
    std::vector<std::deque<thread_am>> ams(threads);
    for (int t = 0; t < threads; ++t) ams[static_cast<std::size_t>(t)] = threads_plan(me, t, 7, n);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            int k = 0;
            for (thread_am& a : ams[static_cast<std::size_t>(t)]) {
                w.am(op, a.target, std::span<const u64>(a.in), 3, std::span<u64>(a.out), 1, a.nseg,
                     0, 1);
                if (++k % 5 == 0) w.flush(a.target);
            }
        });
    }
    for (auto& th : pool) th.join();
    w.fence();
    std::size_t near = 0;
    for (int t = 0; t < threads; ++t) {
        for (const thread_am& a : ams[static_cast<std::size_t>(t)]) {
            if (am_test::same_node(me, a.target)) ++near;
            for (std::size_t s = 0; s < a.nseg; ++s) {
                EXPECT_EQ(a.out[s], a.in[3 * s] + a.in[3 * s + 1] + a.in[3 * s + 2])
                    << rank_name(me) << ": thread " << t << ", segment " << s;
            }
        }
    }
    u64 total = 0;
    for (int o = 0; o < n; ++o) {
        for (int t = 0; t < threads; ++t) {
            for (const thread_am& a : threads_plan(o, t, 7, n)) {
                if (a.target != me) continue;
                for (u64 v : a.in) total += v;
            }
        }
    }
    EXPECT_EQ(as_u64(w.memory())[0], total) << rank_name(me);
    EXPECT_GE(w.stats().units_at_origin, near) << rank_name(me);
    ctx.barrier();
    w.free();
}

class window_threads : public window_test {};

TEST_P(window_threads, thread_multiple_concurrent_epoch) {
    ASSERT_EQ(run(concurrent_threads_job, [](am::config& cfg) { cfg.thread_multiple = true; }), 0);
}

TEST_P(window_threads, thread_multiple_issuers_keep_each_threads_order) {
    ASSERT_EQ(run(threads_job, [](am::config& cfg) { cfg.thread_multiple = true; }), 0);
}

AM_INSTANTIATE(window_threads, window_params());

}  // namespace
