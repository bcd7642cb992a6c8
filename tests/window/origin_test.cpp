// SPDX-License-Identifier: MIT
// Origin-side execution. Two windows made by window::allocate get the same AMs from every rank
// to every rank: one in epochs with epoch_assert::concurrent, the other without. The operation
// is concurrency-safe (atomic additions into an accumulate range, reads of a read-only range),
// so both final windows, and every output, must equal the sequential reference. With the
// assertion, AMs to targets whose window is mapped here (threads, shm, node peers under mpi)
// run at the origin — stats().units_at_origin counts them and nothing is sent — while AMs to
// the others still travel (units_at_origin stays 0 for them); without it nothing runs at the
// origin.
#include "window/window_support.hpp"

#include <atomic>
#include <deque>

namespace {

using namespace am_test::win;
using am_test::mix;
using am_test::same_node;

using u64 = std::uint64_t;
constexpr std::size_t ro = 64, acc = 64;  // read-only elements, then accumulated ones

// Adds every input element into acc[(s + j) % acc] (atomically: runs may be concurrent) and
// outputs ro[(first input + m) % ro] + s.
void accumulate(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.size() != ro + acc) return;
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        const u64 s = a.segment_offset + i;
        const auto in = a.in(i);
        for (std::size_t j = 0; j < in.size(); ++j) {
            std::atomic_ref<u64>(a.persistent[ro + (s + j) % acc])
                .fetch_add(in[j], std::memory_order_relaxed);
        }
        const auto out = a.out(i);
        for (std::size_t m = 0; m < out.size(); ++m) {
            out[m] = std::atomic_ref<u64>(a.persistent[(in[0] + m) % ro])
                         .load(std::memory_order_relaxed) +
                     s;
        }
    }
}

struct origin_am {
    int target;
    std::size_t nseg, in_per, out_per;
    std::vector<u64> in, out;
};

u64 ro_value(int rank, std::size_t i) {
    return mix(static_cast<u64>(rank) << 20 | i);
}

void init_window(std::span<std::byte> mem, int rank) {
    const auto v = as_u64(mem);
    for (std::size_t i = 0; i < ro; ++i) v[i] = ro_value(rank, i);
    for (std::size_t i = 0; i < acc; ++i) v[ro + i] = 0;
}

// The AMs of `origin` to the targets `pick` accepts, in issue order (same on every rank).
std::deque<origin_am> plan(int origin, int n, std::uint64_t seed,
                           const std::function<bool(int)>& pick) {
    rng r{mix(seed ^ static_cast<u64>(origin))};
    std::deque<origin_am> v;
    for (int rep = 0; rep < 3; ++rep) {
        for (int t = 0; t < n; ++t) {
            origin_am a{t, r.between(1, 12), r.between(1, 8), r.between(1, 4), {}, {}};
            a.in.resize(a.nseg * a.in_per);
            a.out.assign(a.nseg * a.out_per, 0);
            fill_values(a.in, r.next());
            if (pick(t)) v.push_back(std::move(a));
        }
    }
    return v;
}

// The sequential effect of `a` on the target's simulated window, and its outputs.
std::vector<u64> reference(const origin_am& a, std::vector<u64>& mem) {
    std::vector<u64> out(a.out.size());
    for (std::size_t s = 0; s < a.nseg; ++s) {
        for (std::size_t j = 0; j < a.in_per; ++j)
            mem[ro + (s + j) % acc] += a.in[s * a.in_per + j];
        for (std::size_t m = 0; m < a.out_per; ++m) {
            out[s * a.out_per + m] = mem[(a.in[s * a.in_per] + m) % ro] + s;
        }
    }
    return out;
}

struct run_counts {
    std::uint64_t units_at_origin, units_sent;
};

// The rest of the open epoch of `w`: this rank's AMs to the targets `pick` accepts, then the
// fence that opens the next epoch with `next`; checks the outputs; returns the stats' growth.
run_counts epoch(am::window& w, am::window_op<u64, u64, u64> op, unsigned next,
                 const std::function<bool(int)>& pick, std::uint64_t seed) {
    am::context& ctx = w.ctx();
    const int n = ctx.size(), me = ctx.rank();
    const am::window_stats before = w.stats();
    std::deque<origin_am> ams = plan(me, n, seed, pick);
    for (origin_am& a : ams) {
        w.am(op, a.target, std::span<const u64>(a.in), a.in_per, std::span<u64>(a.out), a.out_per,
             a.nseg, 0, ro + acc);
    }
    w.fence(next);
    for (std::size_t i = 0; i < ams.size(); ++i) {
        std::vector<u64> mem(ro + acc);
        init_window(std::as_writable_bytes(std::span(mem)), ams[i].target);
        EXPECT_EQ(ams[i].out, reference(ams[i], mem))
            << rank_name(me) << ": output of AM " << i << " to rank " << ams[i].target;
    }
    const am::window_stats after = w.stats();
    return {after.units_at_origin - before.units_at_origin, after.units_sent - before.units_sent};
}

// The accumulated range `me`'s window must hold after every origin ran plan(.., pick).
std::vector<u64> expected_window(int me, int n, std::uint64_t seed,
                                 const std::function<bool(int, int)>& pick) {
    std::vector<u64> mem(ro + acc);
    init_window(std::as_writable_bytes(std::span(mem)), me);
    for (int o = 0; o < n; ++o) {
        for (const origin_am& a : plan(o, n, seed, [&](int t) { return t == me && pick(o, t); })) {
            reference(a, mem);
        }
    }
    return mem;
}

void origin_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const std::size_t bytes = (ro + acc) * sizeof(u64);
    am::window conc = am::window::allocate(ctx, bytes);
    am::window plain = am::window::allocate(ctx, bytes);
    const auto op_c = conc.register_op<u64, u64, u64>("accumulate", accumulate);
    const auto op_p = plain.register_op<u64, u64, u64>("accumulate", accumulate);
    for (int t = 0; t < n; ++t) {
        EXPECT_EQ(conc.mapped(t), same_node(me, t)) << rank_name(me) << ": mapped(" << t << ")";
    }
    init_window(conc.memory(), me);
    init_window(plain.memory(), me);
    conc.fence(am::epoch_assert::concurrent);
    plain.fence();
    ctx.barrier();
    // Epoch 1: only targets that are not mapped here; epoch 2: only mapped ones (both epochs of
    // `conc` are concurrent).
    const auto far = [&](int t) { return !same_node(me, t); };
    const auto near = [&](int t) { return same_node(me, t); };
    const run_counts c1 = epoch(conc, op_c, am::epoch_assert::concurrent, far, 1);
    const run_counts c2 = epoch(conc, op_c, am::epoch_assert::none, near, 2);
    const run_counts p1 = epoch(plain, op_p, am::epoch_assert::none, far, 1);
    const run_counts p2 = epoch(plain, op_p, am::epoch_assert::none, near, 2);
    const std::size_t far_ams = plan(me, n, 1, far).size(), near_ams = plan(me, n, 2, near).size();
    EXPECT_EQ(c1.units_at_origin, 0u) << rank_name(me) << ": AMs to unmapped targets ran here";
    EXPECT_GE(c1.units_sent, far_ams) << rank_name(me);
    EXPECT_GE(c2.units_at_origin, near_ams)
        << rank_name(me) << ": concurrent AMs to mapped targets did not run at the origin";
    EXPECT_EQ(c2.units_sent, 0u) << rank_name(me) << ": origin-side AMs sent units";
    EXPECT_EQ(p1.units_at_origin + p2.units_at_origin, 0u)
        << rank_name(me) << ": AMs ran at the origin without the concurrency assertion";
    EXPECT_GE(p1.units_sent + p2.units_sent, far_ams + near_ams) << rank_name(me);
    ctx.barrier();
    // Every rank's two windows: equal to each other and to the reference.
    const std::vector<u64> want = [&] {
        std::vector<u64> a =
            expected_window(me, n, 1, [&](int o, int t) { return !same_node(o, t); });
        const std::vector<u64> b =
            expected_window(me, n, 2, [&](int o, int t) { return same_node(o, t); });
        for (std::size_t i = ro; i < ro + acc; ++i) a[i] += b[i];
        return a;
    }();
    const auto got_c = as_u64(conc.memory()), got_p = as_u64(plain.memory());
    EXPECT_TRUE(std::equal(got_c.begin(), got_c.end(), got_p.begin(), got_p.end()))
        << rank_name(me) << ": origin-side and target-side execution left different windows";
    EXPECT_TRUE(std::equal(got_c.begin(), got_c.end(), want.begin(), want.end()))
        << rank_name(me) << ": the concurrent window differs from the reference";
    EXPECT_TRUE(std::equal(got_p.begin(), got_p.end(), want.begin(), want.end()))
        << rank_name(me) << ": the window differs from the reference";
    plain.free();
    conc.free();
}

// Passive epochs: lock_all with the assertion runs the AMs to mapped targets here too, and
// flush_all completes the others; the windows end as the reference says.
void origin_lock_all_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = am::window::allocate(ctx, (ro + acc) * sizeof(u64));
    const auto op = w.register_op<u64, u64, u64>("accumulate", accumulate);
    init_window(w.memory(), me);
    ctx.barrier();
    const auto all = [](int) { return true; };
    std::deque<origin_am> ams = plan(me, n, 3, all);
    std::size_t near_ams = 0;
    w.lock_all(am::epoch_assert::concurrent);
    for (origin_am& a : ams) {
        w.am(op, a.target, std::span<const u64>(a.in), a.in_per, std::span<u64>(a.out), a.out_per,
             a.nseg, 0, ro + acc);
        if (same_node(me, a.target)) ++near_ams;
    }
    w.flush_all();
    for (std::size_t i = 0; i < ams.size(); ++i) {
        std::vector<u64> mem(ro + acc);
        init_window(std::as_writable_bytes(std::span(mem)), ams[i].target);
        EXPECT_EQ(ams[i].out, reference(ams[i], mem))
            << rank_name(me) << ": output of AM " << i << " to rank " << ams[i].target;
    }
    w.unlock_all();
    const am::window_stats s = w.stats();
    EXPECT_GE(s.units_at_origin, near_ams) << rank_name(me);
    EXPECT_GE(s.units_sent, ams.size() - near_ams) << rank_name(me);
    if (near_ams == ams.size()) {
        EXPECT_EQ(s.units_sent, 0u) << rank_name(me);
    }
    ctx.barrier();
    const std::vector<u64> want = expected_window(me, n, 3, [](int, int) { return true; });
    const auto got = as_u64(w.memory());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
        << rank_name(me) << ": the window differs from the reference";
    ctx.barrier();
    w.free();
}

class window_origin : public window_test {};

WINDOW_JOB_TEST(window_origin, concurrent_lock_all_runs_at_the_origin, origin_lock_all_job)

WINDOW_JOB_TEST(window_origin, concurrent_epochs_run_at_the_origin_with_the_same_result, origin_job)

AM_INSTANTIATE(window_origin, window_params());

}  // namespace
