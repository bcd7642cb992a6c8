// SPDX-License-Identifier: MIT
// Streaming: how AMs are cut into pipeline units. Every rank sends its right neighbour AMs of
// 10 segments with per-call units 1, 3, k = n, k > n and 0 (the window's: a fixed unit, or as
// many as fit the internal buffer); the target records every run of the operation and the runs
// of each AM must be exactly its units, in order (sameam), with outputs and stats to match.
// Units larger than a medium message travel in chunks (inputs and outputs, strided layouts on
// both sides). A unit larger than the target's attached buffer is cut down to fit it.
#include "window/window_support.hpp"

#include <deque>

namespace {

using namespace am_test::win;

constexpr std::size_t nseg = 10;

// One run of the operation at the target: which AM (from its input), its first segment, its
// segment count.
struct run_rec {
    u64 am;
    std::size_t first, count;
    bool operator==(const run_rec&) const = default;
};

// Input segment s of AM a: {a·1000 + s, anything}; output: {a·1000 + s + 1}. Records the run.
struct recorder {
    std::vector<run_rec> runs;
    bool bad = false;
    void operator()(const am::window_args<u64, u64, u64>& a) {
        if (a.num_segments == 0 || a.input_per_segment != 2 || a.output_per_segment != 1) {
            bad = true;
            return;
        }
        const u64 id = a.in(0)[0] / 1000;
        for (std::size_t i = 0; i < a.num_segments; ++i) {
            if (a.in(i)[0] != id * 1000 + a.segment_offset + i) bad = true;
            a.out(i)[0] = a.in(i)[0] + 1;
        }
        runs.push_back({id, a.segment_offset, a.num_segments});
    }
};

struct unit_case {
    std::size_t per_call;  // am_options::pipeline_unit
    std::size_t expect;    // segments per unit (the last may have fewer)
};

struct sent_am {
    std::vector<u64> in, out;
};

// The runs AM `id` of `expect` segments per unit must produce.
void expected_runs(std::vector<run_rec>& v, u64 id, std::size_t expect) {
    for (std::size_t f = 0; f < nseg; f += expect) v.push_back({id, f, std::min(expect, nseg - f)});
}

// Sends one AM per case to the right neighbour; checks outputs, the neighbour's runs recorded
// here (from the left one), and the unit counts.
void run_cases(am::context& ctx, am::window& w, op_t op, recorder& rec,
               const std::vector<unit_case>& cases) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    const am::window_stats before = w.stats();
    rec.runs.clear();
    w.fence();
    std::deque<sent_am> ams;
    std::vector<run_rec> want;
    u64 units = 0;
    for (std::size_t c = 0; c < cases.size(); ++c) {
        const u64 id = c + 1;
        sent_am a{std::vector<u64>(2 * nseg), std::vector<u64>(nseg, 0)};
        for (std::size_t s = 0; s < nseg; ++s) a.in[2 * s] = id * 1000 + s;
        ams.push_back(std::move(a));
        w.am(op, right, std::span<const u64>(ams.back().in), 2, std::span<u64>(ams.back().out), 1,
             nseg, 0, 1, {cases[c].per_call});
        expected_runs(want, id, cases[c].expect);
        units += (nseg + cases[c].expect - 1) / cases[c].expect;
    }
    w.fence();
    for (std::size_t c = 0; c < cases.size(); ++c) {
        for (std::size_t s = 0; s < nseg; ++s) {
            EXPECT_EQ(ams[c].out[s], (c + 1) * 1000 + s + 1)
                << rank_name(me) << ": case " << c << ", segment " << s;
        }
    }
    EXPECT_FALSE(rec.bad) << rank_name(me) << ": a run saw the wrong segments";
    EXPECT_EQ(rec.runs.size(), want.size()) << rank_name(me);
    EXPECT_TRUE(rec.runs == want) << rank_name(me) << ": the runs are not the AMs' units in order";
    const am::window_stats after = w.stats();
    EXPECT_EQ(after.units_sent - before.units_sent, units) << rank_name(me);
    EXPECT_EQ(after.units_run - before.units_run, units) << rank_name(me);
    ctx.barrier();
}

am::window make_window(am::context& ctx, std::size_t internal, std::size_t unit) {
    am::window_info info;
    info.internal_buffer = internal;
    info.pipeline_unit = unit;
    return am::window::allocate(ctx, sizeof(u64), info);
}

// Segments of 2 + 1 elements: 16 + 8 bytes.
void units_job(am::context& ctx) {
    recorder rec;
    {
        am::window w = make_window(ctx, 8 << 10, 0);
        const op_t op = w.register_op<u64, u64, u64>("record", std::ref(rec));
        // 0: the whole AM fits the 8 KiB internal buffer.
        run_cases(ctx, w, op, rec, {{1, 1}, {3, 3}, {nseg, nseg}, {nseg + 4, nseg}, {0, nseg}});
        w.fence(am::epoch_assert::nosucceed);
        w.free();
    }
    {
        am::window w = make_window(ctx, 8 << 10, 4);
        const op_t op = w.register_op<u64, u64, u64>("record", std::ref(rec));
        run_cases(ctx, w, op, rec, {{0, 4}, {3, 3}, {1, 1}, {nseg + 1, nseg}});
        w.fence(am::epoch_assert::nosucceed);
        w.free();
    }
}

// With pipeline_unit 0 a unit is as many segments as fit the internal buffer: never more (its
// input and its output, each rounded up to 16 bytes), and at least all that fit beside that
// rounding.
std::size_t stage_bytes(std::size_t segments, std::size_t in_seg, std::size_t out_seg) {
    const auto up = [](std::size_t b) { return (b + 15) / 16 * 16; };
    return up(segments * in_seg) + up(segments * out_seg);
}

void fitting_units_job(am::context& ctx) {
    const int me = ctx.rank();
    recorder rec;
    constexpr std::size_t internal = 256;
    am::window w = make_window(ctx, internal, 0);
    const op_t op = w.register_op<u64, u64, u64>("record", std::ref(rec));
    w.fence();
    std::vector<u64> in(2 * nseg), out(nseg, 0);
    for (std::size_t s = 0; s < nseg; ++s) in[2 * s] = 1000 + s;
    w.am(op, (me + 1) % ctx.size(), std::span<const u64>(in), 2, std::span<u64>(out), 1, nseg, 0,
         1);
    w.fence();
    for (std::size_t s = 0; s < nseg; ++s) EXPECT_EQ(out[s], 1000 + s + 1) << rank_name(me);
    ASSERT_FALSE(rec.runs.empty()) << rank_name(me);
    std::size_t next = 0;
    for (const run_rec& r : rec.runs) {
        EXPECT_EQ(r.first, next) << rank_name(me);
        EXPECT_LE(stage_bytes(r.count, 16, 8), internal)
            << rank_name(me) << ": a unit larger than the buffer";
        if (r.first + r.count < nseg) {
            EXPECT_GE(r.count, (internal - 32) / 24)
                << rank_name(me) << ": a needlessly small unit";
        }
        next = r.first + r.count;
    }
    EXPECT_EQ(next, nseg) << rank_name(me);
    ctx.barrier();
    w.free();
}

// x += every input element; output element m of a segment: x + m. Large strided segments.
void sum_op(const am::window_args<u64, u64, u64>& a) {
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        for (u64 v : a.in(i)) a.persistent[0] += v;
        const auto o = a.out(i);
        for (std::size_t m = 0; m < o.size(); ++m) o[m] = a.persistent[0] + m;
    }
}

// Units of 2 segments whose input (and output) exceed a medium message, through strided
// layouts; every rank to its right neighbour, twice.
void chunked_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const std::size_t per_in = ctx.max_medium() / 8 * 3 / 4 + 5;   // a unit of 2: 1.5 messages
    const std::size_t per_out = ctx.max_medium() / 8 * 2 / 3 + 3;  // 1.33
    const am::segment_layout in_l = am::segment_layout::strided(per_in, 1, 2);
    const am::segment_layout out_l = am::segment_layout::indexed({{1, per_out}}, per_out + 3);
    am::window_info info;
    info.internal_buffer = 2 * (per_in + per_out) * 8 + 64;
    info.pipeline_unit = 2;
    am::window w = am::window::allocate(ctx, sizeof(u64), info);
    const op_t op = w.register_op<u64, u64, u64>("sum", sum_op);
    w.fence();
    constexpr std::size_t segs = 5;
    std::vector<u64> in(in_l.span_of(segs)), out(out_l.span_of(segs), 7);
    fill_values(in, static_cast<u64>(me) + 3);
    w.am(op, (me + 1) % n, std::span<const u64>(in), in_l, std::span<u64>(out), out_l, segs, 0, 1);
    w.fence();
    // The reference: the left neighbour's sums at my window, my outputs from my right one.
    u64 x = 0;
    std::vector<u64> want(out.size(), 7);
    for (std::size_t s = 0; s < segs; ++s) {
        for (std::size_t j = 0; j < per_in; ++j) x += in[s * in_l.extent + 2 * j];
        for (std::size_t m = 0; m < per_out; ++m) want[s * out_l.extent + 1 + m] = x + m;
    }
    EXPECT_TRUE(out == want) << rank_name(me) << ": outputs of chunked units";
    EXPECT_EQ(w.stats().units_sent, 3u) << rank_name(me);
    std::vector<u64> left_in(in.size());
    fill_values(left_in, static_cast<u64>((me + n - 1) % n) + 3);
    u64 y = 0;
    for (std::size_t s = 0; s < segs; ++s) {
        for (std::size_t j = 0; j < per_in; ++j) y += left_in[s * in_l.extent + 2 * j];
    }
    EXPECT_EQ(as_u64(w.memory())[0], y) << rank_name(me);
    ctx.barrier();
    w.free();
}

// Every segment (8 + 1 elements: 64 + 16 bytes) exceeds the 64-byte internal buffer; a unit of
// 8 needs 576 bytes, more than the 512-byte attached buffer: the runtime cuts it to fit.
void split_to_attached_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window_info info;
    info.internal_buffer = 64;
    am::window w = am::window::allocate(ctx, sizeof(u64), info);
    const op_t op = w.register_op<u64, u64, u64>("sum", sum_op);
    alignas(16) std::byte attached[512];
    w.attach(attached);
    w.fence();
    constexpr std::size_t segs = 8;
    std::vector<u64> in(8 * segs), out(segs, 0);
    fill_values(in, static_cast<u64>(me) + 11);
    w.am(op, (me + 1) % n, std::span<const u64>(in), 8, std::span<u64>(out), 1, segs, 0, 1, {segs});
    w.fence();
    u64 x = 0;
    for (std::size_t s = 0; s < segs; ++s) {
        for (std::size_t j = 0; j < 8; ++j) x += in[8 * s + j];
        EXPECT_EQ(out[s], x) << rank_name(me) << ": segment " << s;
    }
    EXPECT_EQ(w.stats().segments_user, segs) << rank_name(me);
    ctx.barrier();
    w.free();
}

// Segments with no input elements (a query) or no output elements (an update), or neither: the
// operation still runs once per unit with the right segment counts.
void empty_parts_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    am::window w = am::window::allocate(ctx, 2 * sizeof(u64));
    std::size_t runs = 0, segments = 0;
    const op_t op = w.register_op<u64, u64, u64>(
        "parts", [&runs, &segments](const am::window_args<u64, u64, u64>& a) {
            ++runs;
            segments += a.num_segments;
            for (std::size_t i = 0; i < a.num_segments; ++i) {
                for (u64 v : a.in(i)) a.persistent[0] += v;
                const auto o = a.out(i);
                for (std::size_t m = 0; m < o.size(); ++m) o[m] = a.persistent[1] + m;
            }
        });
    as_u64(w.memory())[1] = 1000 + static_cast<u64>(me);
    w.fence();
    const std::vector<u64> in = {1, 2, 3, 4, 5, 6};
    std::vector<u64> query(6, 9), none(1, 9);
    const auto no_elems = am::segment_layout::contiguous(0);
    w.am(op, right, std::span<const u64>(in).first(0), no_elems, std::span<u64>(query),
         am::segment_layout::contiguous(2), 3, 0, 2, {1});
    w.am(op, right, std::span<const u64>(in), am::segment_layout::contiguous(2),
         std::span<u64>(none).first(0), no_elems, 3, 0, 2, {2});
    w.am(op, right, std::span<const u64>(in).first(0), no_elems, std::span<u64>(none).first(0),
         no_elems, 4, 0, 2);
    w.fence();
    const u64 c = 1000 + static_cast<u64>(right);
    EXPECT_EQ(query, (std::vector<u64>{c, c + 1, c, c + 1, c, c + 1})) << rank_name(me);
    EXPECT_EQ(none[0], 9u) << rank_name(me);
    EXPECT_EQ(as_u64(w.memory())[0], 21u) << rank_name(me) << ": the updates without outputs";
    EXPECT_EQ(segments, 10u) << rank_name(me);
    EXPECT_GE(runs, 3u + 2u + 1u) << rank_name(me);
    ctx.barrier();
    w.free();
}

// An AM issued right after register_op, in an epoch opened before it: its target may still be
// inside the registration (its exchange completes later than the origin's) and must find the
// operation there (found by the MPIX tests; a failure is the job's "not registered" error).
void fresh_op_job(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    am::window w = am::window::allocate(ctx, sizeof(u64));
    w.fence();
    const std::vector<u64> in = {1};
    std::vector<std::vector<u64>> outs(20 * static_cast<std::size_t>(n), std::vector<u64>(1));
    for (int round = 0; round < 20; ++round) {
        const op_t op = w.register_op<u64, u64, u64>("fresh" + std::to_string(round),
                                                     [](const am::window_args<u64, u64, u64>& a) {
                                                         a.persistent[0] += a.in(0)[0];
                                                         a.out(0)[0] = a.persistent[0];
                                                     });
        for (int t = 0; t < n; ++t) {
            std::vector<u64>& out = outs[static_cast<std::size_t>(round * n + t)];
            w.am(op, t, std::span<const u64>(in), 1, std::span<u64>(out), 1, 1, 0, 1);
        }
    }
    w.fence();
    EXPECT_EQ(as_u64(w.memory())[0], static_cast<u64>(20 * n)) << rank_name(me);
    w.free();
}

class window_streaming : public window_test {};

WINDOW_JOB_TEST(window_streaming, am_right_after_registration_finds_the_operation, fresh_op_job)

WINDOW_JOB_TEST(window_streaming, segments_without_input_or_output, empty_parts_job)

WINDOW_JOB_TEST(window_streaming, units_are_cut_as_requested_and_run_in_order, units_job)
WINDOW_JOB_TEST(window_streaming, default_unit_fills_the_internal_buffer, fitting_units_job)
TEST_P(window_streaming, units_larger_than_a_medium_message_travel_in_chunks) {
    ASSERT_EQ(run(chunked_job, [](am::config& cfg) { cfg.ring_bytes = 16 << 10; }), 0);
}
TEST_P(window_streaming, unit_larger_than_the_attached_buffer_is_cut_to_fit) {
    const watchdog dog("unit_larger_than_the_attached_buffer_is_cut_to_fit", 20);
    ASSERT_EQ(run(split_to_attached_job), 0);
}

AM_INSTANTIATE(window_streaming, window_params());

}  // namespace
