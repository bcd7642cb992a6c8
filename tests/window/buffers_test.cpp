// SPDX-License-Identifier: MIT
// Attached buffers. With an internal buffer smaller than one segment every AM is staged in the
// target's attached buffer (stats().segments_user), and detach hands back the very buffer;
// detach in the middle of an epoch, while other ranks' AMs are staged in it, returns only after
// they ran (the buffer is overwritten right after, and every result must still be right); an
// attached buffer smaller than one segment, with no room in the internal buffer, is a clear
// error at the origin's completion call that loses no other AM; attaching twice, or an empty
// buffer, is refused.
#include "window/window_support.hpp"

#include <cstring>
#include <deque>
#include <functional>

namespace {

using namespace am_test::win;

struct sum_am {
    int target;
    std::size_t nseg, per;
    std::vector<u64> in, out;
};

u64 initial(int target, int origin) {
    return mix(static_cast<u64>(target) * 7919 + static_cast<u64>(origin));
}

// `count` AMs of `nseg` segments of `per` elements from `origin`, to `target_of(i)`.
std::deque<sum_am> make_ams(int origin, int count, std::size_t nseg, std::size_t per,
                            const std::function<int(int)>& target_of) {
    std::deque<sum_am> v;
    for (int i = 0; i < count; ++i) {
        sum_am a{target_of(i), nseg, per, std::vector<u64>(nseg * per), std::vector<u64>(nseg, 0)};
        fill_values(a.in, mix(static_cast<u64>(origin) << 16 | static_cast<u64>(i)));
        v.push_back(std::move(a));
    }
    return v;
}

void issue(am::window& w, op_t op, std::deque<sum_am>& ams, std::size_t unit = 0) {
    const int me = w.ctx().rank();
    for (sum_am& a : ams) {
        w.am(op, a.target, std::span<const u64>(a.in), a.per, std::span<u64>(a.out), 1, a.nseg,
             static_cast<std::size_t>(me), 1, {unit});
    }
}

// Checks the outputs of `ams` (issued by `origin`) in issue order per target and returns the
// final value of each target's slot for `origin`.
std::vector<u64> check_sums(const std::deque<sum_am>& ams, int origin, int n, bool expect) {
    std::vector<u64> x(static_cast<std::size_t>(n));
    for (int t = 0; t < n; ++t) x[static_cast<std::size_t>(t)] = initial(t, origin);
    for (std::size_t i = 0; i < ams.size(); ++i) {
        const sum_am& a = ams[i];
        u64& v = x[static_cast<std::size_t>(a.target)];
        for (std::size_t s = 0; s < a.nseg; ++s) {
            for (std::size_t j = 0; j < a.per; ++j) v += a.in[s * a.per + j];
            if (expect) {
                EXPECT_EQ(a.out[s], v) << rank_name(origin) << ": AM " << i << " to rank "
                                       << a.target << ", segment " << s;
            }
        }
    }
    return x;
}

void init_slots(am::window& w) {
    const int n = w.ctx().size(), me = w.ctx().rank();
    const auto slots = as_u64(w.memory());
    for (int o = 0; o < n; ++o) slots[static_cast<std::size_t>(o)] = initial(me, o);
}

// Checks this rank's slots after every origin ran make_ams(o, ...).
void check_slots(am::window& w, const std::function<std::deque<sum_am>(int)>& ams_of) {
    const int n = w.ctx().size(), me = w.ctx().rank();
    const auto slots = as_u64(w.memory());
    for (int o = 0; o < n; ++o) {
        const std::vector<u64> want = check_sums(ams_of(o), o, n, false);
        EXPECT_EQ(slots[static_cast<std::size_t>(o)], want[static_cast<std::size_t>(me)])
            << rank_name(me) << ": the slot of origin " << o;
    }
}

am::window slots_window(am::context& ctx, std::size_t internal) {
    am::window_info info;
    info.internal_buffer = internal;
    return am::window::allocate(ctx, static_cast<std::size_t>(ctx.size()) * sizeof(u64), info);
}

// Every segment (8 + 1 elements: 64 + 16 bytes) is larger than the 64-byte internal buffer.
void attached_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = slots_window(ctx, 64);
    const op_t op = w.register_op<u64, u64, u64>("running_sum", running_sum);
    EXPECT_TRUE(w.detach().empty()) << "detach with nothing attached";
    std::vector<std::byte> buffer(8 << 10);
    w.attach(buffer);
    expect_error([&] { w.attach(buffer); }, am::errc::invalid_argument,
                 {"am::window::attach", rank_name(me)});
    init_slots(w);
    w.fence();
    const auto ams_of = [n](int o) {
        return make_ams(o, 2 * n + 3, 3, 8, [n, o](int i) { return (o + i) % n; });
    };
    std::deque<sum_am> mine = ams_of(me);
    issue(w, op, mine);
    w.fence();
    check_sums(mine, me, n, true);
    check_slots(w, ams_of);
    EXPECT_GT(w.stats().segments_user, 0u) << rank_name(me);
    EXPECT_EQ(w.stats().segments_internal, 0u) << rank_name(me);
    const std::span<std::byte> back = w.detach();
    EXPECT_EQ(back.data(), buffer.data());
    EXPECT_EQ(back.size(), buffer.size());
    // Attached again (a smaller part of it): used again.
    w.attach(std::span(buffer).first(4 << 10));
    ctx.barrier();
    w.free();
}

// Rank 0 detaches while the AMs of every rank to it are staged in its attached buffer, then
// overwrites the buffer. Segments of 10 + 1 elements (96 bytes) fit the 256-byte internal
// buffer two at a time, so the others go through the attached buffer until it is detached and
// through the internal buffers after.
void detach_midway_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = slots_window(ctx, 256);
    const op_t op = w.register_op<u64, u64, u64>("running_sum", running_sum);
    std::vector<std::byte> buffer(16 << 10);
    if (me == 0) w.attach(buffer);
    init_slots(w);
    w.fence();
    const auto ams_of = [](int o) { return make_ams(o, 40, 2, 10, [](int) { return 0; }); };
    std::deque<sum_am> mine = ams_of(me);
    issue(w, op, mine, 1);
    if (me == 0) {
        const std::span<std::byte> back = w.detach();
        EXPECT_EQ(back.data(), buffer.data());
        std::memset(buffer.data(), 0xee, buffer.size());  // the runtime must be done with it
    }
    w.fence();
    check_sums(mine, me, n, true);
    if (me == 0) check_slots(w, ams_of);
    ctx.barrier();
    w.free();
}

// The too-small jobs: rank 0 sends its right neighbour (`target`) one AM that fits the internal
// buffer (32 bytes: 1 + 1 elements), then one whose segment (8 + 1 elements, 80 bytes) fits
// neither the internal buffer nor the 48-byte attached buffer `small`, then one more.
constexpr u64 small_one[1] = {5}, small_big[8] = {1, 2, 3, 4, 5, 6, 7, 8}, small_after[1] = {9};

struct too_small_case {
    explicit too_small_case(am::context& ctx)
        : me(ctx.rank()),
          target(1 % ctx.size()),
          w(slots_window(ctx, 32)),
          op(w.register_op<u64, u64, u64>("running_sum", running_sum)) {
        w.attach(small);
        init_slots(w);
    }
    too_small_case(const too_small_case&) = delete;
    too_small_case& operator=(const too_small_case&) = delete;

    // Rank 0 issues the three AMs; `between` runs before the third one.
    void issue(const std::function<void()>& between) {
        am_to_slot0(small_one, out[0]);
        am_to_slot0(small_big, out[1]);
        between();
        am_to_slot0(small_after, out[2]);
    }
    // One AM of one segment of `in` to slot 0 of `target`, its one output element into `o`.
    void am_to_slot0(std::span<const u64> in, u64& o) {
        w.am(op, target, in, in.size(), std::span<u64>(&o, 1), 1, 1, 0, 1);
    }
    // After completion: rank 0's outputs, and the slot at the target, show that the AMs
    // around the refused one ran and the refused one wrote nothing.
    void check() {
        if (me == 0) {
            EXPECT_EQ(out[0], x + 5) << "the AM before the refused one";
            EXPECT_EQ(out[1], 0u) << "the refused AM wrote an output";
            EXPECT_EQ(out[2], x + 5 + 9) << "the AM after the refused one";
        }
        if (me == target) {
            EXPECT_EQ(as_u64(w.memory())[0], x + 5 + 9) << rank_name(me) << ": the slot of rank 0";
        }
    }

    const int me, target;
    alignas(16) std::byte small[48];
    am::window w;
    op_t op;
    const u64 x = initial(target, 0);  // slot 0 at the target before the AMs
    u64 out[3] = {};
};

// In a lock epoch, flush names the problem; the first AM, and one issued after the error,
// complete.
void too_small_job(am::context& ctx) {
    too_small_case c(ctx);
    ctx.barrier();
    if (c.me == 0) {
        c.w.lock(c.target);
        c.issue([&] {
            expect_error([&] { c.w.flush(c.target); }, am::errc::too_large,
                         {"am::window::", rank_name(c.me), "48"});
        });
        c.w.unlock(c.target);
    }
    ctx.barrier();
    c.check();
    ctx.barrier();
    c.w.free();
}

// The same in a fence epoch: rank 0's fence raises the error (after its barrier: the other
// ranks are not left waiting), the AMs around the refused one complete, and the next epoch works.
void too_small_fence_job(am::context& ctx) {
    too_small_case c(ctx);
    c.w.fence();
    if (c.me == 0) {
        c.issue([] {});
        expect_error([&] { c.w.fence(); }, am::errc::too_large,
                     {"am::window::fence", rank_name(c.me), "48"});
    } else {
        c.w.fence();
    }
    c.check();
    // The next epoch: every rank adds 5 to its slot at rank 0.
    const int me = c.me;
    u64 out4[1] = {0};
    c.w.am(c.op, 0, std::span<const u64>(small_one), 1, std::span<u64>(out4), 1, 1,
           static_cast<std::size_t>(me), 1);
    c.w.fence();
    const u64 before = me == 0 && c.target == 0 ? c.x + 5 + 9 : initial(0, me);
    EXPECT_EQ(out4[0], before + 5) << rank_name(me) << ": an AM of the epoch after the error";
    ctx.barrier();
    c.w.free();
}

void empty_attach_job(am::context& ctx) {
    am::window w = slots_window(ctx, 64);
    expect_error([&] { w.attach({}); }, am::errc::invalid_argument,
                 {"am::window::attach", rank_name(ctx.rank())});
    EXPECT_TRUE(w.detach().empty());
    w.free();
}

class window_buffers : public window_test {};

WINDOW_JOB_TEST(window_buffers, attached_buffer_stages_segments_and_comes_back, attached_job)
WINDOW_JOB_TEST(window_buffers, detach_waits_for_the_ams_staged_in_it, detach_midway_job)
WINDOW_JOB_TEST(window_buffers, segment_larger_than_every_buffer_fails_at_completion, too_small_job)
TEST_P(window_buffers, segment_larger_than_every_buffer_fails_at_the_fence) {
    const watchdog dog("segment_larger_than_every_buffer_fails_at_the_fence", 20);
    ASSERT_EQ(run(too_small_fence_job), 0);
}
WINDOW_JOB_TEST(window_buffers, empty_attach_refused, empty_attach_job)

AM_INSTANTIATE(window_buffers, window_params());

}  // namespace
