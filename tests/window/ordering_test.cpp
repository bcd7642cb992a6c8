// SPDX-License-Identifier: MIT
// Ordering hints. Every origin sends its right neighbour (itself on one rank) alternating large
// AMs, whose segments do not fit the tiny internal buffer and so wait for a reservation in the
// target's attached buffer, and small ones that fit the internal buffer and could overtake
// them. With the default strict ordering a non-commutative update (x = x·31 + v, and x·37 + v
// for a second operation) must give the sequential result and outputs, and nothing may be
// overtaken; with `am_order::none` only what is guaranteed is checked (each AM's own outputs,
// the total of commutative additions) and, across a remote target, that small AMs did overtake
// (the scenario provokes what strict ordering forbids). Also am_order::parse and to_string.
#include "window/window_support.hpp"

#include <deque>

namespace {

using namespace am_test::win;

constexpr std::size_t ordering_internal =
    256;  // a large segment (40 + 1 elements: 336 B) never fits
constexpr std::size_t large_in = 40, large_segments = 3, small_in = 2;
constexpr int pairs = 30;  // large, small, large, small, ...

// x = x·M + v over every input element of a segment; the output is x after the segment.
template <u64 M>
void horner(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.empty()) return;
    u64& x = a.persistent[0];
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        for (u64 v : a.in(i)) x = x * M + v;
        for (u64& o : a.out(i)) o = x;
    }
}

// x += v (times M); the output is the segment's own sum: independent of the order.
template <u64 M>
void add(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.empty()) return;
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        u64 sum = 0;
        for (u64 v : a.in(i)) sum += v * M;
        a.persistent[0] += sum;
        for (u64& o : a.out(i)) o = sum;
    }
}

struct one_am {
    bool large;
    int op;  // 0 or 1
    std::vector<u64> in, out;
};

// Which operation the small AMs use (the large ones use operation 0).
enum class small_ops { alternate, same, other };

// The AMs an origin issues, in order: large ones with operation 0, small ones by `smalls`.
std::deque<one_am> ordering_make_ams(int origin, small_ops smalls) {
    std::deque<one_am> v;
    for (int i = 0; i < 2 * pairs; ++i) {
        const bool large = i % 2 == 0;
        const std::size_t segs = large ? large_segments : 1;
        const int small_op = smalls == small_ops::alternate ? (i / 2) % 2
                             : smalls == small_ops::same    ? 0
                                                            : 1;
        one_am a{large, large ? 0 : small_op,
                 std::vector<u64>(segs * (large ? large_in : small_in)), std::vector<u64>(segs, 0)};
        fill_values(a.in, mix(static_cast<u64>(origin) * 1000 + static_cast<u64>(i)));
        v.push_back(std::move(a));
    }
    return v;
}

u64 ordering_initial(int target, int origin) {
    return mix(static_cast<u64>(target) << 32 | static_cast<u64>(origin));
}

struct ordering_job {
    unsigned ordering;
    bool commutative;  // add instead of horner
    small_ops smalls = small_ops::alternate;
    bool may_overtake = false;  // the hints let small AMs pass waiting large ones
};

// The sequential result: runs the AMs one after the other on x; returns the outputs.
std::vector<std::vector<u64>> sequential(std::deque<one_am>& ams, u64& x, bool commutative) {
    std::vector<std::vector<u64>> outs;
    for (const one_am& a : ams) {
        const std::size_t per = a.in.size() / a.out.size();
        std::vector<u64> o(a.out.size());
        for (std::size_t s = 0; s < a.out.size(); ++s) {
            const u64 m = a.op == 0 ? 31 : 37;
            u64 sum = 0;
            for (std::size_t j = 0; j < per; ++j) {
                const u64 v = a.in[s * per + j];
                if (commutative) {
                    sum += v * m;
                } else {
                    x = x * m + v;
                }
            }
            if (commutative) x += sum;
            o[s] = commutative ? sum : x;
        }
        outs.push_back(std::move(o));
    }
    return outs;
}

void ordering_run(am::context& ctx, const ordering_job& job) {
    const int n = ctx.size(), me = ctx.rank();
    const int target = (me + 1) % n, left = (me + n - 1) % n;
    am::window_info info;
    info.ordering = job.ordering;
    info.internal_buffer = ordering_internal;
    am::window w = am::window::allocate(ctx, static_cast<std::size_t>(n) * sizeof(u64), info);
    op_t ops[2];
    if (job.commutative) {
        ops[0] = w.register_op<u64, u64, u64>("add31", add<31>);
        ops[1] = w.register_op<u64, u64, u64>("add37", add<37>);
    } else {
        ops[0] = w.register_op<u64, u64, u64>("horner31", horner<31>);
        ops[1] = w.register_op<u64, u64, u64>("horner37", horner<37>);
    }
    std::vector<std::byte> attached(64 << 10);
    w.attach(attached);
    const auto slots = as_u64(w.memory());
    for (int o = 0; o < n; ++o) slots[static_cast<std::size_t>(o)] = ordering_initial(me, o);
    w.fence();
    std::deque<one_am> ams = ordering_make_ams(me, job.smalls);
    for (one_am& a : ams) {
        const std::size_t per = a.in.size() / a.out.size();
        w.am(ops[a.op], target, std::span<const u64>(a.in), per, std::span<u64>(a.out), 1,
             a.out.size(), static_cast<std::size_t>(me), 1);
    }
    w.fence();
    u64 x = ordering_initial(target, me);
    const auto want = sequential(ams, x, job.commutative);
    for (std::size_t i = 0; i < ams.size(); ++i) {
        EXPECT_EQ(ams[i].out, want[i]) << rank_name(me) << ": output of AM " << i << " ("
                                       << (ams[i].large ? "large" : "small") << ")";
    }
    // My left neighbour's updates of my slot for it.
    u64 y = ordering_initial(me, left);
    std::deque<one_am> theirs = ordering_make_ams(left, job.smalls);
    sequential(theirs, y, job.commutative);
    EXPECT_EQ(slots[static_cast<std::size_t>(left)], y)
        << rank_name(me) << ": the updates of rank " << left << " differ from the sequential ones";
    const am::window_stats s = w.stats();
    EXPECT_GT(s.segments_user, 0u) << rank_name(me) << ": the large AMs used no attached buffer";
    if (!job.may_overtake) {
        EXPECT_EQ(s.overtaken, 0u) << rank_name(me) << ": ordered AMs, yet units overtook";
    } else if (n > 1) {
        EXPECT_GT(s.overtaken, 0u)
            << rank_name(me) << ": relaxed ordering, yet no small AM overtook a waiting one";
    }
    EXPECT_EQ(w.detach().data(), attached.data());
    w.free();
}

class window_ordering : public window_test {};

TEST_P(window_ordering, strict_keeps_non_commutative_updates_sequential) {
    ASSERT_EQ(run([](am::context& ctx) { ordering_run(ctx, {am::am_order::strict, false}); }), 0);
}

TEST_P(window_ordering, none_lets_small_ams_overtake) {
    ASSERT_EQ(run([](am::context& ctx) {
                  ordering_run(ctx, {am::am_order::none, true, {}, true});
              }),
              0);
}

// sameop alone: AMs of one operation stay in order (non-commutative, sequential result) ...
TEST_P(window_ordering, sameop_keeps_one_operations_ams_in_order) {
    const unsigned bits = am::am_order::sameop | am::am_order::sameam;
    ASSERT_EQ(run([&](am::context& ctx) {
                  ordering_run(ctx, {bits, false, small_ops::same, false});
              }),
              0);
}

// ... while AMs of another operation may pass them (commutative: only totals checked).
TEST_P(window_ordering, sameop_lets_other_operations_overtake) {
    const unsigned bits = am::am_order::sameop | am::am_order::sameam;
    ASSERT_EQ(run([&](am::context& ctx) {
                  ordering_run(ctx, {bits, true, small_ops::other, true});
              }),
              0);
}

AM_INSTANTIATE(window_ordering, window_params());

// A long queue: every origin sends its right neighbour 1500 AMs over 4 slots, every seventh
// one large (waiting for the attached buffer). Strict ordering binds only AMs on the same slot:
// each slot's non-commutative updates and outputs follow issue order, while AMs on other slots
// may pass a waiting one.
constexpr int queue_ams = 1500, queue_slots = 4;

struct queued_am {
    std::size_t slot;
    std::vector<u64> in;
    u64 out = 0;
};

std::deque<queued_am> queue_plan(int origin) {
    rng r{mix(static_cast<u64>(origin) + 77)};
    std::deque<queued_am> v;
    for (int i = 0; i < queue_ams; ++i) {
        queued_am a{r.below(queue_slots), std::vector<u64>(i % 7 == 0 ? large_in : small_in), 0};
        fill_values(a.in, r.next());
        v.push_back(std::move(a));
    }
    return v;
}

// The slots' values after `ams` ran in order from `x`; checks the outputs when `outs`.
void queue_replay(const std::deque<queued_am>& ams, std::vector<u64>& x, bool outs, int me) {
    for (std::size_t i = 0; i < ams.size(); ++i) {
        u64& v = x[ams[i].slot];
        for (u64 e : ams[i].in) v = v * 31 + e;
        if (outs && ams[i].out != v) {
            ADD_FAILURE() << rank_name(me) << ": AM " << i << " on slot " << ams[i].slot
                          << " saw another order";
            return;
        }
    }
}

void queue_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    am::window_info info;
    info.internal_buffer = ordering_internal;
    am::window w = am::window::allocate(ctx, queue_slots * sizeof(u64), info);
    const op_t op = w.register_op<u64, u64, u64>("horner31", horner<31>);
    std::vector<std::byte> attached(4 << 10);
    w.attach(attached);
    w.fence();
    std::deque<queued_am> ams = queue_plan(me);
    for (queued_am& a : ams) {
        w.am(op, right, std::span<const u64>(a.in), a.in.size(), std::span<u64>(&a.out, 1), 1, 1,
             a.slot, 1);
    }
    w.fence();
    std::vector<u64> mine(queue_slots, 0), theirs(queue_slots, 0);
    queue_replay(ams, mine, true, me);
    queue_replay(queue_plan(left), theirs, false, me);
    const auto slots = as_u64(w.memory());
    for (std::size_t s = 0; s < queue_slots; ++s) {
        EXPECT_EQ(slots[s], theirs[s]) << rank_name(me) << ": slot " << s;
    }
    EXPECT_EQ(w.stats().ams, static_cast<u64>(queue_ams)) << rank_name(me);
    ctx.barrier();
    w.free();
}

WINDOW_JOB_TEST(window_ordering, long_queue_keeps_order_per_range, queue_job)

// -------------------------------------------------------------------- am_order's words

TEST(window_order, parse_and_to_string) {
    namespace o = am::am_order;
    EXPECT_EQ(o::parse("none"), o::none);
    EXPECT_EQ(o::parse("sameop"), o::sameop);
    EXPECT_EQ(o::parse("diffop"), o::diffop);
    EXPECT_EQ(o::parse("sameam"), o::sameam);
    EXPECT_EQ(o::parse("sameop,diffop,sameam"), o::strict);
    EXPECT_EQ(o::parse("sameam,sameop"), o::sameop | o::sameam);
    EXPECT_EQ(o::strict, o::sameop | o::diffop | o::sameam);
    EXPECT_EQ(am::window_info{}.ordering, o::strict) << "the default is strict";
    EXPECT_EQ(o::to_string(o::strict), "sameop,diffop,sameam");
    EXPECT_EQ(o::to_string(o::none), "none");
    EXPECT_EQ(o::to_string(o::diffop), "diffop");
    EXPECT_EQ(o::to_string(o::sameop | o::sameam), "sameop,sameam");
    for (unsigned bits = 0; bits <= o::strict; ++bits) {
        EXPECT_EQ(o::parse(o::to_string(bits)), bits) << o::to_string(bits);
    }
}

TEST(window_order, parse_refuses_bad_words) {
    struct bad_word {
        const char* value;
        const char* named;
    };
    for (const bad_word b : {bad_word{"strict", "strict"}, bad_word{"sameop,bogus", "bogus"},
                             bad_word{"sameop;diffop", "sameop;diffop"}}) {
        SCOPED_TRACE(b.value);
        expect_error([&] { (void)am::am_order::parse(b.value); }, am::errc::invalid_argument,
                     {"parse", b.named});
    }
}

}  // namespace
