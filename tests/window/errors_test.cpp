// SPDX-License-Identifier: MIT
// Misuse of the window layer: each error is an am::error with the right code and a message
// naming the call and the rank (and the limit where there is one), sends nothing, and leaves
// the AMs issued before it intact — they complete with the right outputs and updates at the
// next fence. Operations registered differently on one rank (name, types), and window_info
// that differs; an operation of another window; a persistent range outside the target's
// window; output and input buffers too small for their layouts; untyped segments that are not
// whole target elements (and the untyped trigger itself); AMs before the first fence and after
// fence(nosucceed); bad target ranks; an operation that calls back into the window (am, fence,
// flush, lock, lock_all, attach, detach), which must take nothing (later locks still granted).
#include "window/window_support.hpp"

#include <climits>
#include <deque>

namespace {

using namespace am_test::win;

constexpr std::size_t errors_slots = 8;

// AMs accepted around the errors: two segments each, added to this rank's slot at the right
// neighbour (the windows have a slot per rank, then a spare one per rank).
struct accepted {
    am::window& w;
    op_t op;
    std::deque<std::pair<std::vector<u64>, std::vector<u64>>> ams{};

    void issue() {
        const int n = w.ctx().size(), me = w.ctx().rank();
        const u64 k = ams.size();
        ams.push_back({{k + 1, 2 * k + 1}, {0, 0}});
        w.am(op, (me + 1) % n, std::span<const u64>(ams.back().first), 1,
             std::span<u64>(ams.back().second), 1, 2, static_cast<std::size_t>(me), 1);
    }
    // After the fence: the outputs are the running sums from 0.
    void check() {
        u64 x = 0;
        for (std::size_t i = 0; i < ams.size(); ++i) {
            for (std::size_t s = 0; s < 2; ++s) {
                x += ams[i].first[s];
                EXPECT_EQ(ams[i].second[s], x)
                    << rank_name(w.ctx().rank()) << ": accepted AM " << i;
            }
        }
    }
    // At the target, after the fence: the left neighbour's slot holds its total.
    void check_target(std::size_t count) {
        const int n = w.ctx().size(), me = w.ctx().rank();
        u64 x = 0;
        for (u64 k = 0; k < count; ++k) x += (k + 1) + (2 * k + 1);
        EXPECT_EQ(as_u64(w.memory())[static_cast<std::size_t>((me + n - 1) % n)], x)
            << rank_name(me) << ": the slot of the left neighbour";
    }
};

std::size_t window_slots(int n) {
    return 2 * std::max<std::size_t>(errors_slots, static_cast<std::size_t>(n));
}

am::window errors_slots_window(am::context& ctx) {
    return am::window::allocate(ctx, window_slots(ctx.size()) * sizeof(u64));
}

// Registers running_sum on `w` (every rank), opens the first fence epoch and issues `count`
// accepted AMs in it.
accepted accepted_after_fence(am::window& w, int count) {
    const op_t op = w.register_op<u64, u64, u64>("errors_running_sum", running_sum);
    w.fence();
    accepted ok{w, op};
    for (int i = 0; i < count; ++i) ok.issue();
    return ok;
}

void bad_arguments_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    am::window w = errors_slots_window(ctx);
    am::window other = errors_slots_window(ctx);
    const op_t op = w.register_op<u64, u64, u64>("errors_running_sum", running_sum);
    const op_t foreign = other.register_op<u64, u64, u64>("errors_running_sum", running_sum);
    const std::string who = rank_name(me);
    const std::size_t size = w.size_of(right);
    EXPECT_EQ(size, window_slots(n) * sizeof(u64));
    u64 in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {};
    const std::span<const u64> ins(in);
    const std::span<u64> outs(out);
    // Before the first fence: no epoch.
    expect_error([&] { w.am(op, right, ins, 1, outs, 1, 1, 0, 1); }, am::errc::bad_context,
                 {"am::window::am", who});
    w.fence();
    accepted ok{w, op};
    ok.issue();
    expect_error([&] { w.am(foreign, right, ins, 1, outs, 1, 1, 0, 1); }, am::errc::bad_handler,
                 {"am::window::am", who});
    ok.issue();
    // Persistent ranges that end past the target's window (in elements of 8 bytes).
    const std::size_t elems = size / sizeof(u64);
    for (const auto& [disp, count] : std::vector<std::pair<std::size_t, std::size_t>>{
             {elems, 1},
             {elems - 1, 2},
             {0, elems + 1},
             {SIZE_MAX / 8, 2},
             {0, SIZE_MAX / 8 + 1},  // count × 8 bytes wrapped to 0 (issue 36)
             {SIZE_MAX / 8 + 1, 1},  // disp × 8 bytes wrapped to 0
             {0, SIZE_MAX}}) {
        SCOPED_TRACE("persistent [" + std::to_string(disp) + ", +" + std::to_string(count) + ")");
        const bool wraps = disp > SIZE_MAX / 8 || count > SIZE_MAX / 8;
        expect_error([&] { w.am(op, right, ins, 1, outs, 1, 1, disp, count); },
                     am::errc::out_of_segment,
                     {"am::window::am", who, wraps ? "SIZE_MAX" : std::to_string(size)});
    }
    ok.issue();
    // Buffers too small: 3 segments of 2 input and 2 output elements need 6 each; strided
    // output segments (1 of every 3) need 7.
    expect_error([&] { w.am(op, right, ins.first(5), 2, outs, 2, 3, 0, 1); },
                 am::errc::invalid_argument, {"am::window::am", who, "input"});
    expect_error([&] { w.am(op, right, ins, 2, outs.first(5), 2, 3, 0, 1); },
                 am::errc::invalid_argument, {"am::window::am", who, "output"});
    expect_error(
        [&] {
            w.am(op, right, ins, am::segment_layout::contiguous(1), outs.first(6),
                 am::segment_layout::strided(1, 1, 3), 3, 0, 1);
        },
        am::errc::invalid_argument, {"am::window::am", who, "output"});
    // Segments whose span wraps around size_t (8 of 2^61 + 1 elements spanned 8 elements, and
    // the operation saw 1 per segment; issue 36).
    const std::size_t huge = (std::size_t{1} << 61) + 1;
    expect_error([&] { w.am(op, right, ins, huge, outs, 1, 8, 0, 1); }, am::errc::invalid_argument,
                 {"am::window::am", who, "input", "SIZE_MAX"});
    expect_error([&] { w.am(op, right, ins, 1, outs, huge, 8, 0, 1); }, am::errc::invalid_argument,
                 {"am::window::am", who, "output", "SIZE_MAX"});
    expect_error(
        [&] {
            w.am(op, right, ins, am::segment_layout::indexed({{SIZE_MAX - 1, 2}}), outs,
                 am::segment_layout::contiguous(1), 1, 0, 1);
        },
        am::errc::invalid_argument, {"am::window::am", who, "input", "SIZE_MAX"});
    ok.issue();
    // Target ranks outside [0, n).
    for (int bad : {n, n + 1, -1, INT_MAX}) {
        SCOPED_TRACE("target " + std::to_string(bad));
        expect_error([&] { w.am(op, bad, ins, 1, outs, 1, 1, 0, 1); }, am::errc::bad_rank,
                     {"am::window::am", who, std::to_string(bad)});
    }
    ok.issue();
    EXPECT_TRUE(std::all_of(out, out + 8, [](u64 v) { return v == 0; }))
        << "a refused AM wrote an output";
    w.fence(am::epoch_assert::nosucceed);
    ok.check();
    ok.check_target(ok.ams.size());
    // After fence(nosucceed): no epoch.
    expect_error([&] { w.am(op, right, ins, 1, outs, 1, 1, 0, 1); }, am::errc::bad_context,
                 {"am::window::am", who});
    ctx.barrier();
    other.free();
    w.free();
}

// An operation that calls back into the window it runs on: each call is refused inside it.
struct reentry {
    am::window* w = nullptr;
    op_t self{};
    std::vector<std::string> refused;  // "<code> <what>" of each refused call
    int runs = 0;

    void operator()(const am::window_args<u64, u64, u64>& a) {
        ++runs;
        const auto record = [&](auto&& f) {
            try {
                f();
                refused.push_back("accepted");
            } catch (const am::error& e) {
                refused.push_back(std::to_string(static_cast<int>(e.code())) + " " + e.what());
            }
        };
        u64 in[1] = {1}, out[1] = {0};
        record([&] {
            w->am(self, a.origin, std::span<const u64>(in), 1, std::span<u64>(out), 1, 1, 0, 1);
        });
        record([&] { w->fence(); });
        record([&] { w->flush(a.origin); });
        record([&] { w->lock(a.origin); });
        record([&] { w->lock_all(); });
        record([&] { w->detach(); });
        alignas(16) std::byte spare[64];
        record([&] { w->attach(spare); });
        running_sum(a);
    }
};

void reentry_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = errors_slots_window(ctx);
    const op_t op = w.register_op<u64, u64, u64>("errors_running_sum", running_sum);
    reentry r;
    r.w = &w;
    const op_t bad = w.register_op<u64, u64, u64>("reentry", std::ref(r));
    r.self = bad;
    w.fence();
    accepted ok{w, op};
    ok.issue();
    const u64 in[1] = {7};
    u64 out[1] = {0};
    // To the left neighbour, into this rank's spare slot there.
    const int left = (me + n - 1) % n;
    const std::size_t spare = window_slots(n) / 2 + static_cast<std::size_t>(me);
    w.am(bad, left, std::span<const u64>(in), 1, std::span<u64>(out), 1, 1, spare, 1);
    ok.issue();
    w.fence();
    ok.check();
    ok.check_target(2);
    EXPECT_EQ(out[0], 7u) << rank_name(me) << ": the output of the operation that called back";
    const int right = (me + 1) % n;
    EXPECT_EQ(as_u64(w.memory())[window_slots(n) / 2 + static_cast<std::size_t>(right)], 7u)
        << rank_name(me) << ": the update of the operation that called back";
    const std::string bad_ctx = std::to_string(static_cast<int>(am::errc::bad_context)) + " ";
    EXPECT_EQ(r.runs, 1) << rank_name(me);
    const std::vector<std::string> calls = {
        "am::window::am",   "am::window::fence",  "am::window::flush", "am::window::lock",
        "am::window::lock", "am::window::detach", "am::window::attach"};
    ASSERT_EQ(r.refused.size(), calls.size()) << rank_name(me);
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const std::string& got = r.refused[i];
        EXPECT_EQ(got.rfind(bad_ctx, 0), 0u) << got;
        EXPECT_TRUE(am_test::contains(got, calls[i])) << got;
        EXPECT_TRUE(am_test::contains(got, rank_name(me))) << got;
    }
    // Every rank has read its window before any rank updates it again below.
    ctx.barrier();
    // The refused calls took nothing: every lock can still be had, no buffer is attached.
    const u64 more[1] = {1};
    u64 sink[1] = {0};
    w.lock(right, am::lock_type::exclusive);
    w.am(op, right, std::span<const u64>(more), 1, std::span<u64>(sink), 1, 1,
         static_cast<std::size_t>(me), 1);
    w.unlock(right);
    w.lock_all();
    w.unlock_all();
    EXPECT_TRUE(w.detach().empty()) << rank_name(me) << ": a refused attach attached a buffer";
    ctx.barrier();
    w.free();
}

// Registrations that differ on the last rank: a name, or a type.
void mismatch_job(am::context& ctx, bool by_type) {
    const int n = ctx.size(), me = ctx.rank();
    const bool odd = me == n - 1;
    am::window w = errors_slots_window(ctx);
    accepted ok = accepted_after_fence(w, 2);
    // Every rank names itself, a rank that registered differently, and both entries.
    const std::vector<std::string> parts = {"am::window::register_op",
                                            rank_name(me) + ":",
                                            odd ? rank_name(0) : rank_name(n - 1),
                                            "second",
                                            by_type ? "j:4" : "other_name",
                                            "m:8"};
    expect_error(
        [&] {
            if (by_type && odd) {
                (void)w.register_op<std::uint32_t, u64, u64>(
                    "second", [](const am::window_args<std::uint32_t, u64, u64>&) {});
            } else {
                (void)w.register_op<u64, u64, u64>(odd && !by_type ? "other_name" : "second",
                                                   running_sum);
            }
        },
        am::errc::handler_mismatch, parts);
    ok.issue();
    // The failed registration left every rank's table alike: the next one is used by all.
    const op_t third = w.register_op<u64, u64, u64>("third", running_sum);
    u64 in[1] = {4}, out[1] = {0};
    w.am(third, me, std::span<const u64>(in), 1, std::span<u64>(out), 1, 1,
         window_slots(n) / 2 + static_cast<std::size_t>(me), 1);
    w.fence();
    ok.check();
    ok.check_target(3);
    EXPECT_EQ(out[0], 4u) << rank_name(me) << ": the operation registered after the mismatch";
    ctx.barrier();
    w.free();
}

// window_info differs on the last rank: every rank's constructor refuses it, naming the
// field's values; a window created after that works.
void info_mismatch_job(am::context& ctx, int field) {
    const int n = ctx.size(), me = ctx.rank();
    am::window_info info;
    if (me == n - 1) {
        if (field == 0) info.ordering = am::am_order::none;
        if (field == 1) info.internal_buffer = 1024;
        if (field == 2) info.pipeline_unit = 3;
    }
    std::vector<std::byte> mem(64);
    expect_error([&] { am::window w(ctx, mem, info); }, am::errc::invalid_argument,
                 {"am::window::window", rank_name(me) + ":", "window_info"});
    am::window w = errors_slots_window(ctx);
    accepted ok = accepted_after_fence(w, 1);
    w.fence();
    ok.check();
    ok.check_target(1);
    ctx.barrier();
    w.free();
}

// The untyped trigger: an operation registered with register_bytes runs from am_bytes with the
// packed bytes; segments that are not a whole number of the target's elements are refused.
void bytes_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    am::window w = errors_slots_window(ctx);
    const std::uint32_t op =
        w.register_bytes("xor_bytes", "u8,u8,u8", [](const am::window_call& c) {
            for (std::size_t s = 0; s < c.num_segments; ++s) {
                for (std::size_t i = 0; i < c.output_segment_bytes; ++i) {
                    c.output[s * c.output_segment_bytes + i] =
                        c.input[s * c.input_segment_bytes + i % c.input_segment_bytes] ^
                        c.persistent[0] ^ static_cast<std::byte>(c.segment_offset + s);
                }
                c.persistent[0] ^= std::byte{1};  // per segment: any cut into units agrees
            }
        });
    as_u64(w.memory())[0] = 0x40 + static_cast<u64>(me);
    w.fence();
    // Segments of 6 input bytes (2 blocks of 3, 5 apart) and 4 output bytes, 3 segments.
    std::vector<std::byte> in(30), out(12, std::byte{0xcc});
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i);
    am::am_desc d;
    d.op = op;
    d.target = right;
    d.input = in.data();
    d.input_layout = am::detail::to_bytes(am::segment_layout::strided(2, 3, 5), 1);
    d.output = out.data();
    d.output_layout = am::detail::to_bytes(am::segment_layout::contiguous(4), 1);
    d.num_segments = 3;
    d.persistent_disp = 0;
    d.persistent_bytes = 1;
    am::am_desc bad = d;
    bad.input_elem = 4;  // 6 bytes are not N elements of 4
    expect_error([&] { w.am_bytes(bad); }, am::errc::invalid_argument,
                 {"am::window::am", rank_name(me), "6"});
    bad = d;
    bad.output_elem = 3;  // 4 bytes are not N elements of 3
    expect_error([&] { w.am_bytes(bad); }, am::errc::invalid_argument,
                 {"am::window::am", rank_name(me), "4"});
    bad = d;
    bad.num_segments = SIZE_MAX / 4;  // of 6 input bytes each: more than SIZE_MAX bytes
    expect_error([&] { w.am_bytes(bad); }, am::errc::invalid_argument,
                 {"am::window::am", rank_name(me), "SIZE_MAX"});
    w.am_bytes(d);
    w.fence();
    const auto p = static_cast<std::byte>(0x40 + right);
    for (std::size_t s = 0; s < 3; ++s) {
        const std::byte packed[6] = {in[10 * s],     in[10 * s + 1], in[10 * s + 2],
                                     in[10 * s + 5], in[10 * s + 6], in[10 * s + 7]};
        for (std::size_t i = 0; i < 4; ++i) {
            EXPECT_EQ(out[4 * s + i],
                      packed[i] ^ p ^ static_cast<std::byte>(s & 1) ^ static_cast<std::byte>(s))
                << rank_name(me) << ": segment " << s << ", byte " << i;
        }
    }
    EXPECT_EQ(w.memory()[0], static_cast<std::byte>((0x40 + me) ^ 1))
        << rank_name(me) << ": three segments flipped the low bit of the left neighbour's byte";
    ctx.barrier();
    w.free();
}

class window_errors : public window_test {};
class window_mismatch : public window_test {};
// A job that fails: the test process reads every rank's report (not under mpi, where the
// report is mpiexec's).
class window_failure : public window_test {};

void errors_throwing_op(const am::window_args<u64, u64, u64>&) {
    throw std::runtime_error("user op failed");
}

// An exception from an operation fails the job naming the operation, the window, the origin and
// the segments, with the original text (issue 36; before: only "user op failed").
TEST_P(window_failure, operation_exception_names_the_operation) {
    ::testing::internal::CaptureStderr();
    const int rc = run([](am::context& ctx) {
        am::window w = errors_slots_window(ctx);
        const op_t op = w.register_op<u64, u64, u64>("errors_throwing_op", errors_throwing_op);
        w.fence();
        std::vector<u64> in{1, 2}, out{0, 0};
        if (ctx.rank() == 0) {
            w.am(op, 1, std::span<const u64>(in), 1, std::span<u64>(out), 1, 2, 0, 1);
        }
        w.fence();
    });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(rc, 0);
    EXPECT_TRUE(am_test::contains(err,
                                  "am::window op: rank 1: operation 'errors_throwing_op' of "
                                  "window 0 (an AM from rank 0, segments 0..2) threw: user op "
                                  "failed"))
        << err;
}

WINDOW_JOB_TEST(window_errors, bad_arguments_refused_earlier_ams_complete, bad_arguments_job)
WINDOW_JOB_TEST(window_errors, untyped_trigger_and_type_signatures, bytes_job)
TEST_P(window_errors, operation_calling_back_into_the_window) {
    const watchdog dog("operation_calling_back_into_the_window", 20);
    ASSERT_EQ(run(reentry_job), 0);
}
TEST_P(window_mismatch, operation_name_differs_on_one_rank) {
    ASSERT_EQ(run([](am::context& ctx) { mismatch_job(ctx, false); }), 0);
}
TEST_P(window_mismatch, operation_types_differ_on_one_rank) {
    ASSERT_EQ(run([](am::context& ctx) { mismatch_job(ctx, true); }), 0);
}

TEST_P(window_mismatch, window_info_differs_on_one_rank) {
    for (int field = 0; field < 3; ++field) {
        SCOPED_TRACE("field " + std::to_string(field));
        ASSERT_EQ(run([field](am::context& ctx) { info_mismatch_job(ctx, field); }), 0);
    }
}

AM_INSTANTIATE(window_errors, window_params());
AM_INSTANTIATE(window_mismatch, window_multi_params());
AM_INSTANTIATE(window_failure, am_test::without_mpi(am_test::make_params({2}, {2})));

}  // namespace
