// SPDX-License-Identifier: MIT
// Passive-target epochs. Exclusive locks exclude each other: every rank repeatedly locks rank
// 0, marks itself as the owner, reads a counter, waits for the value (flush), writes it back
// plus one and clears the owner — any interleaving shows as a foreign owner or a lost update.
// Shared locks are held by every rank at once (a barrier while holding them would never end if
// they excluded each other). Under lock_all, flush(target) puts the outputs of the AMs to that
// target in place, and flush_all those to every target, before the epoch ends.
#include "window/window_support.hpp"

#include <deque>

namespace {

using namespace am_test::win;

// Persistent [owner, counter]; input [command, argument]; one output element.
enum command : u64 { enter, read, write, leave };

void rmw(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.size() != 2 || a.input.size() != 2 || a.output.size() != 1) return;
    u64& owner = a.persistent[0];
    u64& counter = a.persistent[1];
    switch (a.input[0]) {
        case enter:
            a.output[0] = owner;
            owner = a.input[1];
            break;
        case read:
            a.output[0] = counter;
            break;
        case write:
            counter = a.input[1];
            a.output[0] = owner;
            break;
        default:
            a.output[0] = owner;
            owner = 0;
    }
}

u64 call(am::window& w, op_t op, int target, command c, u64 arg) {
    const u64 in[2] = {c, arg};
    u64 out[1] = {~u64{0}};
    w.am(op, target, std::span<const u64>(in), 2, std::span<u64>(out), 1, 1, 0, 2);
    w.flush(target);
    return out[0];
}

void exclusive_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const int rounds = n > 4 ? 4 : 12;
    am::window w = am::window::allocate(ctx, 2 * sizeof(u64));
    const op_t op = w.register_op<u64, u64, u64>("rmw", rmw);
    ctx.barrier();
    const u64 id = static_cast<u64>(me) + 1;
    for (int i = 0; i < rounds; ++i) {
        w.lock(0, am::lock_type::exclusive);
        EXPECT_EQ(call(w, op, 0, enter, id), 0u) << rank_name(me) << " entered while another held";
        const u64 v = call(w, op, 0, read, 0);
        EXPECT_EQ(call(w, op, 0, write, v + 1), id) << rank_name(me) << ": owner changed";
        // Issued without a flush: unlock completes it.
        const u64 in[2] = {leave, 0};
        u64 out[1] = {0};
        w.am(op, 0, std::span<const u64>(in), 2, std::span<u64>(out), 1, 1, 0, 2);
        w.unlock(0);
        EXPECT_EQ(out[0], id) << rank_name(me) << ": owner changed before leaving";
    }
    ctx.barrier();
    if (me == 0) {
        const auto mem = as_u64(w.memory());
        EXPECT_EQ(mem[0], 0u) << "owner left set";
        EXPECT_EQ(mem[1], static_cast<u64>(rounds) * static_cast<u64>(n)) << "lost updates";
    }
    ctx.barrier();
    w.free();
}

// x += input; the output is the target's rank-dependent constant (persistent[1]).
void add_and_tell(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.size() != 2) return;
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        for (u64 v : a.in(i)) std::atomic_ref<u64>(a.persistent[0]).fetch_add(v);
        for (u64& o : a.out(i)) o = a.persistent[1] + a.segment_offset + i;
    }
}

u64 constant_of(int rank) {
    return mix(static_cast<u64>(rank) + 99);
}

am::window constant_window(am::context& ctx) {
    am::window w = am::window::allocate(ctx, 2 * sizeof(u64));
    as_u64(w.memory())[1] = constant_of(ctx.rank());
    return w;
}

void shared_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = constant_window(ctx);
    const op_t op = w.register_op<u64, u64, u64>("add_and_tell", add_and_tell);
    ctx.barrier();
    for (int round = 0; round < 2; ++round) {
        w.lock(0, am::lock_type::shared);
        const u64 in[3] = {1, 2, 3};
        u64 out[3] = {0, 0, 0};
        w.am(op, 0, std::span<const u64>(in), 1, std::span<u64>(out), 1, 3, 0, 2);
        ctx.barrier();  // every rank holds its shared lock here
        w.unlock(0);
        for (u64 s = 0; s < 3; ++s) EXPECT_EQ(out[s], constant_of(0) + s) << rank_name(me);
    }
    ctx.barrier();
    if (me == 0) {
        EXPECT_EQ(as_u64(w.memory())[0], 12u * static_cast<u64>(n));
    }
    ctx.barrier();
    w.free();
}

struct flushed_am {
    std::vector<u64> in, out;
};

void flush_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = constant_window(ctx);
    const op_t op = w.register_op<u64, u64, u64>("add_and_tell", add_and_tell);
    ctx.barrier();
    w.lock_all();
    std::deque<flushed_am> ams;
    const auto send = [&](int t, std::size_t nseg) {
        ams.push_back(
            {std::vector<u64>(nseg, static_cast<u64>(me) + 1), std::vector<u64>(nseg, 0)});
        w.am(op, t, std::span<const u64>(ams.back().in), 1, std::span<u64>(ams.back().out), 1, nseg,
             0, 2);
    };
    const auto expect_done = [&](const flushed_am& a, int t, const char* after) {
        for (std::size_t s = 0; s < a.out.size(); ++s) {
            EXPECT_EQ(a.out[s], constant_of(t) + s) << rank_name(me) << ": output of segment " << s
                                                    << " to rank " << t << " after " << after;
        }
    };
    for (int k = 0; k < n; ++k) {  // one target at a time, each flushed on its own
        const int t = (me + k) % n;
        send(t, 5);
        send(t, 2);
        w.flush(t);
        expect_done(ams[ams.size() - 2], t, "flush");
        expect_done(ams.back(), t, "flush");
    }
    ams.clear();
    for (int t = 0; t < n; ++t) send(t, 4);
    w.flush_all();
    for (int t = 0; t < n; ++t) expect_done(ams[static_cast<std::size_t>(t)], t, "flush_all");
    w.unlock_all();
    ctx.barrier();
    // Every rank added (rank + 1) × (5 + 2 + 4) here.
    EXPECT_EQ(as_u64(w.memory())[0], 11u * static_cast<u64>(n) * static_cast<u64>(n + 1) / 2)
        << rank_name(me);
    ctx.barrier();
    w.free();
}

// Readers and writers on rank 0: persistent [readers, writer]; input [command]; the output
// is what the section must see (the writer flag for readers, readers + writer for writers).
enum rw_command : u64 { enter_shared, leave_shared, enter_exclusive, leave_exclusive };

void readers_writers(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.size() != 2 || a.input.size() != 1 || a.output.size() != 1) return;
    u64& readers = a.persistent[0];
    u64& writer = a.persistent[1];
    switch (a.input[0]) {
        case enter_shared:
            ++readers;
            a.output[0] = writer;
            break;
        case leave_shared:
            --readers;
            a.output[0] = writer;
            break;
        case enter_exclusive:
            a.output[0] = readers + writer;
            writer = 1;
            break;
        default:
            writer = 0;
            a.output[0] = readers;
    }
}

u64 rw_call(am::window& w, op_t op, rw_command c, bool flush) {
    const u64 in[1] = {c};
    u64 out[1] = {~u64{0}};
    w.am(op, 0, std::span<const u64>(in), 1, std::span<u64>(out), 1, 1, 0, 2);
    if (flush) w.flush(0);
    return out[0];
}

// Every rank alternates shared and exclusive sections on rank 0; a shared section never sees a
// writer, an exclusive one never sees anybody else.
void shared_exclusive_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const int rounds = n > 4 ? 4 : 10;
    am::window w = am::window::allocate(ctx, 2 * sizeof(u64));
    const op_t op = w.register_op<u64, u64, u64>("readers_writers", readers_writers);
    ctx.barrier();
    for (int i = 0; i < rounds; ++i) {
        if ((i + me) % 2 == 0) {
            w.lock(0, am::lock_type::shared);
            EXPECT_EQ(rw_call(w, op, enter_shared, true), 0u)
                << rank_name(me) << ": a writer inside";
            EXPECT_EQ(rw_call(w, op, leave_shared, true), 0u)
                << rank_name(me) << ": a writer inside";
            w.unlock(0);
        } else {
            w.lock(0, am::lock_type::exclusive);
            EXPECT_EQ(rw_call(w, op, enter_exclusive, true), 0u)
                << rank_name(me) << ": readers or a writer inside an exclusive section";
            EXPECT_EQ(rw_call(w, op, leave_exclusive, true), 0u)
                << rank_name(me) << ": readers came in during an exclusive section";
            w.unlock(0);
        }
    }
    ctx.barrier();
    if (me == 0) {
        EXPECT_EQ(as_u64(w.memory())[0], 0u);
        EXPECT_EQ(as_u64(w.memory())[1], 0u);
    }
    ctx.barrier();
    w.free();
}

// free() completes the AMs of the open epoch (no fence before it): outputs in place at the
// origin, updates in the target's window memory (user memory, still readable after free).
// Two windows with different hints are used side by side, their AMs interleaved.
void free_completes_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    std::vector<u64> mem_a(2, 0), mem_b(2, 0);
    am::window_info relaxed;
    relaxed.ordering = am::am_order::none;
    relaxed.internal_buffer = 64;
    am::window a(ctx, std::as_writable_bytes(std::span(mem_a)));
    am::window b(ctx, std::as_writable_bytes(std::span(mem_b)), relaxed);
    const op_t op_a = a.register_op<u64, u64, u64>("add_and_tell", add_and_tell);
    const op_t op_b = b.register_op<u64, u64, u64>("add_and_tell", add_and_tell);
    mem_a[1] = constant_of(me);
    mem_b[1] = constant_of(me) + 1;
    a.fence();
    b.fence();
    std::deque<std::vector<u64>> outs;
    const std::vector<u64> in(3, static_cast<u64>(me) + 1);
    for (int i = 0; i < 20; ++i) {
        outs.emplace_back(3, 0);
        am::window& w = i % 2 == 0 ? a : b;
        w.am(i % 2 == 0 ? op_a : op_b, right, std::span<const u64>(in), 1,
             std::span<u64>(outs.back()), 1, 3, 0, 2);
    }
    a.free();
    b.free();
    for (std::size_t i = 0; i < outs.size(); ++i) {
        const u64 c = constant_of(right) + (i % 2 == 0 ? 0 : 1);
        EXPECT_EQ(outs[i], (std::vector<u64>{c, c + 1, c + 2})) << rank_name(me) << ": AM " << i;
    }
    const u64 total = 10u * 3u * (static_cast<u64>(left) + 1);
    EXPECT_EQ(mem_a[0], total) << rank_name(me) << ": window a after free";
    EXPECT_EQ(mem_b[0], total) << rank_name(me) << ": window b after free";
}

class window_epochs : public window_test {};

WINDOW_JOB_TEST(window_epochs, free_completes_the_open_epoch, free_completes_job)
WINDOW_JOB_TEST(window_epochs, shared_and_exclusive_locks_exclude_each_other, shared_exclusive_job)

WINDOW_JOB_TEST(window_epochs, exclusive_locks_exclude_each_other, exclusive_job)
WINDOW_JOB_TEST(window_epochs, shared_locks_are_held_together, shared_job)
WINDOW_JOB_TEST(window_epochs, flush_and_flush_all_complete_under_lock_all, flush_job)

AM_INSTANTIATE(window_epochs, window_params());

}  // namespace
