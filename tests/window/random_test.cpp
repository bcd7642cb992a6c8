// SPDX-License-Identifier: MIT
// Random window AMs against a sequential reference. Every rank draws the same plan from one
// seed: in each of three fence epochs every origin issues AMs to every target (more to random
// ones), of four operations with different In/P/Out types, random strided and indexed origin
// layouts for input and output, 0, 1 or many segments, pipeline units 0 (the window's), 1, 3,
// k = n and k > n, and random persistent ranges. Each rank then replays the plan sequentially
// and checks its own window and every output buffer it owns (around the scattered outputs too)
// after every fence, on windows over user memory and allocated ones, with the default buffers,
// with small internal buffers plus an attached buffer, and with no internal buffer at all.
//
// Operations (the target's persistent memory: a private range of R64 uint64 per origin, then a
// shared range of S32 uint32):
//   fetch_add (u32 → u64 → u64) on the origin's private range: adds, then reads back; its
//       outputs depend on the order of the AMs of that origin (strict ordering keeps it);
//   scatter_add (i16 → u32 → 3-byte struct) on the shared range: commutative additions from
//       all origins; outputs from the input only;
//   gather (u16 → u64 → u64) reads the origin's private range (ordered after its fetch_adds);
//   pair_add (16-byte-aligned pairs → u64 → pairs) updates the private range too.
// Every run also checks that its input, persistent and output elements are aligned for their
// types.
#include "window/window_support.hpp"

#include <atomic>
#include <cstring>
#include <deque>
#include <variant>

namespace {

using namespace am_test::win;
using am_test::mix;

constexpr std::size_t R64 = 24;  // private uint64 elements per origin at each target
constexpr std::size_t S32 = 96;  // shared uint32 elements at each target
constexpr int epochs = 3;

struct out3 {
    std::uint8_t b[3];
    bool operator==(const out3&) const = default;
};

struct alignas(16) pair64 {
    std::uint64_t a, b;
    bool operator==(const pair64&) const = default;
};

// ------------------------------------------------------------------ the operations' kernels

// Each kernel handles `nseg` packed segments whose first is segment `off` of the AM; a unit
// of any size gives the same result as the whole AM at once.
void k_fetch_add(std::span<const std::uint32_t> in, std::size_t in_per, std::span<std::uint64_t> p,
                 std::span<std::uint64_t> out, std::size_t out_per, std::size_t nseg,
                 std::size_t off) {
    const std::size_t c = p.size();
    if (c == 0) return;
    for (std::size_t i = 0; i < nseg; ++i) {
        const std::uint64_t s = off + i;
        for (std::size_t j = 0; j < in_per; ++j) p[(s * 7 + j) % c] += in[i * in_per + j] + s;
        for (std::size_t m = 0; m < out_per; ++m) out[i * out_per + m] = p[(s * 5 + m) % c] * 3 + s;
    }
}

void k_scatter_add(std::span<const std::int16_t> in, std::size_t in_per, std::span<std::uint32_t> p,
                   std::span<out3> out, std::size_t out_per, std::size_t nseg, std::size_t off) {
    const std::size_t c = p.size();
    if (c == 0) return;
    for (std::size_t i = 0; i < nseg; ++i) {
        const std::uint64_t s = off + i;
        std::uint64_t sum = 0;
        for (std::size_t j = 0; j < in_per; ++j) {
            const std::int16_t v = in[i * in_per + j];
            p[(s * 3 + j * 11) % c] +=
                static_cast<std::uint32_t>(v) * static_cast<std::uint32_t>(s + 1);
            sum = sum * 131 + static_cast<std::uint16_t>(v);
        }
        for (std::size_t m = 0; m < out_per; ++m) {
            const std::uint64_t h = mix(sum ^ (s << 20) ^ m);
            out[i * out_per + m] = {{static_cast<std::uint8_t>(h),
                                     static_cast<std::uint8_t>(h >> 8),
                                     static_cast<std::uint8_t>(h >> 16)}};
        }
    }
}

void k_gather(std::span<const std::uint16_t> in, std::size_t in_per, std::span<std::uint64_t> p,
              std::span<std::uint64_t> out, std::size_t out_per, std::size_t nseg,
              std::size_t off) {
    const std::size_t c = p.size();
    if (c == 0 || in_per == 0) return;
    for (std::size_t i = 0; i < nseg; ++i) {
        const std::uint64_t s = off + i;
        for (std::size_t m = 0; m < out_per; ++m) {
            out[i * out_per + m] = p[(in[i * in_per + m % in_per] + s) % c] ^ (m * 0x1000193u);
        }
    }
}

void k_pair_add(std::span<const pair64> in, std::size_t in_per, std::span<std::uint64_t> p,
                std::span<pair64> out, std::size_t out_per, std::size_t nseg, std::size_t off) {
    const std::size_t c = p.size();
    if (c == 0) return;
    for (std::size_t i = 0; i < nseg; ++i) {
        const std::uint64_t s = off + i;
        for (std::size_t j = 0; j < in_per; ++j) {
            const pair64 v = in[i * in_per + j];
            p[(s * 3 + j) % c] += (v.a ^ v.b) + s;
        }
        for (std::size_t m = 0; m < out_per; ++m) out[i * out_per + m] = {p[(s + m) % c], s * m};
    }
}

// Counts runs whose input, persistent or output elements are not aligned for their types.
template <class In, class P, class Out>
void check_alignment(const am::window_args<In, P, Out>& a, std::atomic<std::uint64_t>& bad) {
    const auto off = [](const void* ptr, std::size_t align) {
        return reinterpret_cast<std::uintptr_t>(ptr) % align != 0;
    };
    if ((!a.input.empty() && off(a.input.data(), alignof(In))) ||
        (!a.persistent.empty() && off(a.persistent.data(), alignof(P))) ||
        (!a.output.empty() && off(a.output.data(), alignof(Out)))) {
        bad.fetch_add(1);
    }
}

// --------------------------------------------------------------------------------- the plan

enum class op_kind { fetch_add, scatter_add, gather, pair_add };

struct am_plan {
    int target = 0;
    op_kind op = op_kind::fetch_add;
    std::size_t nseg = 0;
    am::segment_layout in_l, out_l;
    std::size_t disp = 0, count = 0;  // elements of the op's P
    std::size_t unit = 0;
    std::uint64_t seed = 0;
};

// The window of a job of `n` ranks: n private ranges, then the shared one.
std::size_t window_bytes(int n) {
    return static_cast<std::size_t>(n) * R64 * 8 + S32 * 4;
}
std::size_t shared_disp32(int n) {
    return static_cast<std::size_t>(n) * R64 * 2;
}

std::size_t random_segments(rng& r) {
    const std::size_t k = r.below(10);
    if (k == 0) return 0;
    if (k <= 2) return 1;
    return r.percent(80) ? r.between(2, 9) : r.between(10, 24);
}

std::size_t random_unit(rng& r, std::size_t nseg) {
    switch (r.below(5)) {
        case 0:
            return 0;
        case 1:
            return 1;
        case 2:
            return 3;
        case 3:
            return nseg;  // k = n (0 for an empty AM: the window's)
        default:
            return nseg + r.between(1, 4);
    }
}

am_plan random_am(rng& r, int origin, int target, int n) {
    am_plan a;
    a.target = target;
    a.op = static_cast<op_kind>(r.below(4));
    a.nseg = random_segments(r);
    a.in_l = random_layout(r, 1, 10);
    a.out_l = random_layout(r, 1, 10);
    a.unit = random_unit(r, a.nseg);
    a.seed = r.next();
    if (a.op == op_kind::scatter_add) {
        const std::size_t start = r.below(S32);
        a.count = r.between(1, S32 - start);
        a.disp = shared_disp32(n) + start;
    } else {
        const std::size_t start = r.below(R64);
        a.count = r.between(1, R64 - start);
        a.disp = static_cast<std::size_t>(origin) * R64 + start;
    }
    return a;
}

// The AMs origin `o` issues in `epoch`, in issue order: one to every target, then some more to
// random targets, shuffled.
std::vector<am_plan> plan_of(std::uint64_t seed, int epoch, int o, int n) {
    rng r{mix(seed ^ (static_cast<std::uint64_t>(epoch) << 40) ^ static_cast<std::uint64_t>(o))};
    std::vector<am_plan> v;
    for (int t = 0; t < n; ++t) v.push_back(random_am(r, o, t, n));
    const std::size_t extra = n > 4 ? r.between(1, 4) : r.between(8, 24);
    for (std::size_t i = 0; i < extra; ++i) {
        v.push_back(random_am(r, o, static_cast<int>(r.below(static_cast<std::size_t>(n))), n));
    }
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[r.below(i)]);
    return v;
}

// --------------------------------------------------------------- buffers of one AM, typed

template <class In, class Out>
struct typed_buffers {
    std::vector<In> in;
    std::vector<Out> out;
    std::vector<Out> want;  // the reference output buffer

    explicit typed_buffers(const am_plan& a) {
        in.resize(std::max<std::size_t>(1, buffer_elements(a.in_l, a.nseg)));
        out.resize(std::max<std::size_t>(1, buffer_elements(a.out_l, a.nseg)));
        fill_values(in, a.seed);
        fill_values(out, ~a.seed);  // what the scatter must leave alone
        want = out;
    }
    std::span<const In> in_span(const am_plan& a) const {
        return {in.data(), buffer_elements(a.in_l, a.nseg)};
    }
    std::span<Out> out_span(const am_plan& a) {
        return {out.data(), buffer_elements(a.out_l, a.nseg)};
    }
};

using buffers =
    std::variant<typed_buffers<std::uint32_t, std::uint64_t>, typed_buffers<std::int16_t, out3>,
                 typed_buffers<std::uint16_t, std::uint64_t>, typed_buffers<pair64, pair64>>;

buffers make_buffers(const am_plan& a) {
    switch (a.op) {
        case op_kind::fetch_add:
            return typed_buffers<std::uint32_t, std::uint64_t>(a);
        case op_kind::scatter_add:
            return typed_buffers<std::int16_t, out3>(a);
        case op_kind::gather:
            return typed_buffers<std::uint16_t, std::uint64_t>(a);
        default:
            return typed_buffers<pair64, pair64>(a);
    }
}

// Runs AM `a` on the simulated window `mem` of its target; fills the reference output.
template <class In, class P, class Out, class K>
void reference_run(const am_plan& a, std::span<std::byte> mem, typed_buffers<In, Out>& b,
                   K kernel) {
    const std::vector<In> packed_in = pack(b.in_span(a), a.in_l, a.nseg);
    std::vector<Out> packed_out(a.nseg * elements_of(a.out_l));
    std::span<P> p{reinterpret_cast<P*>(mem.data()) + a.disp, a.count};
    kernel(std::span<const In>(packed_in), elements_of(a.in_l), p, std::span<Out>(packed_out),
           elements_of(a.out_l), a.nseg, 0);
    scatter(std::span<Out>(b.want), a.out_l, std::span<const Out>(packed_out), a.nseg);
}

void random_reference(const am_plan& a, std::span<std::byte> mem, buffers& b) {
    switch (a.op) {
        case op_kind::fetch_add:
            reference_run<std::uint32_t, std::uint64_t, std::uint64_t>(a, mem, std::get<0>(b),
                                                                       k_fetch_add);
            break;
        case op_kind::scatter_add:
            reference_run<std::int16_t, std::uint32_t, out3>(a, mem, std::get<1>(b), k_scatter_add);
            break;
        case op_kind::gather:
            reference_run<std::uint16_t, std::uint64_t, std::uint64_t>(a, mem, std::get<2>(b),
                                                                       k_gather);
            break;
        default:
            reference_run<pair64, std::uint64_t, pair64>(a, mem, std::get<3>(b), k_pair_add);
    }
}

// ------------------------------------------------------------------------------- the job

struct ops {
    am::window_op<std::uint32_t, std::uint64_t, std::uint64_t> fetch_add;
    am::window_op<std::int16_t, std::uint32_t, out3> scatter_add;
    am::window_op<std::uint16_t, std::uint64_t, std::uint64_t> gather;
    am::window_op<pair64, std::uint64_t, pair64> pair_add;
};

ops register_ops(am::window& w, std::atomic<std::uint64_t>& bad) {
    ops o;
    o.fetch_add = w.register_op<std::uint32_t, std::uint64_t, std::uint64_t>(
        "fetch_add", [&bad](const am::window_args<std::uint32_t, std::uint64_t, std::uint64_t>& a) {
            check_alignment(a, bad);
            k_fetch_add(a.input, a.input_per_segment, a.persistent, a.output, a.output_per_segment,
                        a.num_segments, a.segment_offset);
        });
    o.scatter_add = w.register_op<std::int16_t, std::uint32_t, out3>(
        "scatter_add", [&bad](const am::window_args<std::int16_t, std::uint32_t, out3>& a) {
            check_alignment(a, bad);
            k_scatter_add(a.input, a.input_per_segment, a.persistent, a.output,
                          a.output_per_segment, a.num_segments, a.segment_offset);
        });
    o.gather = w.register_op<std::uint16_t, std::uint64_t, std::uint64_t>(
        "gather", [&bad](const am::window_args<std::uint16_t, std::uint64_t, std::uint64_t>& a) {
            check_alignment(a, bad);
            k_gather(a.input, a.input_per_segment, a.persistent, a.output, a.output_per_segment,
                     a.num_segments, a.segment_offset);
        });
    o.pair_add = w.register_op<pair64, std::uint64_t, pair64>(
        "pair_add", [&bad](const am::window_args<pair64, std::uint64_t, pair64>& a) {
            check_alignment(a, bad);
            k_pair_add(a.input, a.input_per_segment, a.persistent, a.output, a.output_per_segment,
                       a.num_segments, a.segment_offset);
        });
    return o;
}

void random_issue(am::window& w, const ops& o, const am_plan& a, buffers& b) {
    const am::am_options opt{a.unit};
    switch (a.op) {
        case op_kind::fetch_add: {
            auto& t = std::get<0>(b);
            w.am(o.fetch_add, a.target, t.in_span(a), a.in_l, t.out_span(a), a.out_l, a.nseg,
                 a.disp, a.count, opt);
            break;
        }
        case op_kind::scatter_add: {
            auto& t = std::get<1>(b);
            w.am(o.scatter_add, a.target, t.in_span(a), a.in_l, t.out_span(a), a.out_l, a.nseg,
                 a.disp, a.count, opt);
            break;
        }
        case op_kind::gather: {
            auto& t = std::get<2>(b);
            w.am(o.gather, a.target, t.in_span(a), a.in_l, t.out_span(a), a.out_l, a.nseg, a.disp,
                 a.count, opt);
            break;
        }
        default: {
            auto& t = std::get<3>(b);
            w.am(o.pair_add, a.target, t.in_span(a), a.in_l, t.out_span(a), a.out_l, a.nseg, a.disp,
                 a.count, opt);
        }
    }
}

bool outputs_match(const buffers& b) {
    return std::visit([](const auto& t) { return t.out == t.want; }, b);
}

// The window's initial contents at rank `r` (written by the rank before the first fence).
void initial_window(std::span<std::byte> mem, int r) {
    am_test::fill_pattern(mem, 0x51u + static_cast<std::uint64_t>(r));
}

struct job_options {
    am::window_info info{};
    bool allocate = false;   // window::allocate, else a window over user memory
    std::size_t attach = 0;  // bytes of an attached buffer at every rank (0: none)
    std::uint64_t seed = 1;
};

struct totals {
    std::uint64_t ams = 0, segments = 0;
    std::uint64_t too_big = 0;  // segments that cannot stage in the internal buffer
};

// Bytes one segment of `a` stages at its target (input and output, each rounded up to 16).
std::size_t segment_stage(const am_plan& a) {
    static constexpr std::size_t in_bytes[] = {4, 2, 2, 16}, out_bytes[] = {8, 3, 8, 16};
    const auto k = static_cast<std::size_t>(a.op);
    const auto up = [](std::size_t b) { return (b + 15) / 16 * 16; };
    return up(elements_of(a.in_l) * in_bytes[k]) + up(elements_of(a.out_l) * out_bytes[k]);
}

// One epoch: every rank issues its AMs, the fence completes them, and the rank checks its
// window and its outputs against the replay of all ranks' AMs on the simulated windows.
totals run_epoch(am::context& ctx, am::window& w, const ops& o, const job_options& opt, int e,
                 std::vector<std::vector<std::byte>>& sim) {
    const int n = ctx.size(), me = ctx.rank();
    const std::vector<am_plan> mine = plan_of(opt.seed, e, me, n);
    std::deque<buffers> bufs;  // stable addresses
    totals t;
    for (const am_plan& a : mine) {
        bufs.push_back(make_buffers(a));
        random_issue(w, o, a, bufs.back());
        ++t.ams;
        t.segments += a.nseg;
        if (segment_stage(a) > opt.info.internal_buffer) t.too_big += a.nseg;
    }
    w.fence();
    // The replay: all origins' AMs in issue order per origin (only same-origin order matters).
    for (int origin = 0; origin < n; ++origin) {
        const std::vector<am_plan> plan = origin == me ? mine : plan_of(opt.seed, e, origin, n);
        for (std::size_t i = 0; i < plan.size(); ++i) {
            buffers scratch = make_buffers(plan[i]);
            buffers& b = origin == me ? bufs[i] : scratch;
            random_reference(plan[i], sim[static_cast<std::size_t>(plan[i].target)], b);
        }
    }
    for (std::size_t i = 0; i < mine.size(); ++i) {
        EXPECT_TRUE(outputs_match(bufs[i]))
            << rank_name(me) << " epoch " << e << ": output of AM " << i << " (op "
            << static_cast<int>(mine[i].op) << ", target " << mine[i].target << ", " << mine[i].nseg
            << " segments, unit " << mine[i].unit << ")";
    }
    const auto& want = sim[static_cast<std::size_t>(me)];
    EXPECT_EQ(first_difference(w.memory(), want), -1)
        << rank_name(me) << " epoch " << e << ": first byte of the window that differs from the "
        << "reference";
    ctx.barrier();  // nobody starts the next epoch's AMs before every rank has checked
    return t;
}

void random_job(am::context& ctx, const job_options& opt) {
    const int n = ctx.size(), me = ctx.rank();
    std::vector<std::uint64_t> user(window_bytes(n) / 8);
    am::window w = opt.allocate
                       ? am::window::allocate(ctx, window_bytes(n), opt.info)
                       : am::window(ctx, std::as_writable_bytes(std::span(user)), opt.info);
    ASSERT_EQ(w.memory().size(), window_bytes(n));
    std::atomic<std::uint64_t> misaligned{0};
    const ops o = register_ops(w, misaligned);
    std::vector<std::byte> attached(opt.attach + 16);
    if (opt.attach > 0) w.attach(std::span(attached).first(opt.attach));
    std::vector<std::vector<std::byte>> sim(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        sim[static_cast<std::size_t>(r)].resize(window_bytes(n));
        initial_window(sim[static_cast<std::size_t>(r)], r);
    }
    initial_window(w.memory(), me);
    w.fence();
    totals all;
    for (int e = 0; e < epochs; ++e) {
        const totals t = run_epoch(ctx, w, o, opt, e, sim);
        all.ams += t.ams;
        all.segments += t.segments;
        all.too_big += t.too_big;
    }
    const am::window_stats s = w.stats();
    EXPECT_EQ(misaligned.load(), 0u) << rank_name(me) << ": runs saw misaligned elements";
    EXPECT_EQ(s.ams, all.ams) << rank_name(me);
    // Without the concurrency assertion every segment travels through a buffer at its target.
    EXPECT_EQ(s.segments_internal + s.segments_user, all.segments) << rank_name(me);
    EXPECT_EQ(s.units_at_origin, 0u) << rank_name(me);
    if (opt.info.internal_buffer == 0) {
        EXPECT_EQ(s.segments_internal, 0u) << rank_name(me);
    }
    EXPECT_GE(s.segments_user, all.too_big)
        << rank_name(me) << ": segments larger than the internal buffer went elsewhere";
    if (opt.attach == 0) {
        EXPECT_EQ(s.segments_user, 0u) << rank_name(me);
    }
    if (opt.attach > 0) {
        const std::span<std::byte> back = w.detach();
        EXPECT_EQ(back.data(), attached.data());
        EXPECT_EQ(back.size(), opt.attach);
    }
    w.fence(am::epoch_assert::nosucceed);
    w.free();
}

class window_random : public window_test {
  protected:
    // Runs random_job with `opt` on every rank; 0 when every rank passed.
    [[nodiscard]] int run_random(const job_options& opt,
                                 const am_test::tweak_fn& tweak = {}) const {
        return run([&](am::context& ctx) { random_job(ctx, opt); }, tweak);
    }
};

TEST_P(window_random, default_buffers_user_memory) {
    ASSERT_EQ(run_random({.seed = 11}), 0);
}

TEST_P(window_random, small_internal_buffer_attached_allocated) {
    ASSERT_EQ(run_random({.info = {.internal_buffer = 256, .pipeline_unit = 2},
                          .allocate = true,
                          .attach = 16 << 10,
                          .seed = 12}),
              0);
}

TEST_P(window_random, attached_buffer_only) {
    ASSERT_EQ(
        run_random(
            {.info = {.internal_buffer = 0, .pipeline_unit = 4}, .attach = 4 << 10, .seed = 13}),
        0);
}

// Operations run on a progress thread; medium messages of 256 bytes and small rings, so that
// units (and outputs) travel in several chunks and sends wait for room.
TEST_P(window_random, progress_thread_small_rings) {
    ASSERT_EQ(run_random({.info = {.internal_buffer = 1024}, .attach = 8 << 10, .seed = 14},
                         [](am::config& cfg) {
                             cfg.progress_thread = true;
                             cfg.ring_bytes = 4 << 10;
                             cfg.max_medium = 256;
                         }),
              0);
}

AM_INSTANTIATE(window_random, window_params());

}  // namespace
