// SPDX-License-Identifier: MIT
// Remote atomics on global pointers, on both paths (auto: CPU atomics on mapped segments, the
// network on ucx; am: a request run at the owner): exact results under contention against
// sequential references — fetch_add's old values are exactly {0..P·N−1}, compare_swap loops,
// min/max over known sets (signed and unsigned), and/or/xor on disjoint bits, swap chains,
// float adds of exactly representable values, 32-bit wraparound — split-phase forms with flags
// and futures, calls from handlers, the path taken, and bad input refused before anything is
// sent.
#include "rma/rma_support.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <vector>

namespace {

using am_test::expect_error;
using am_test::rank_prefix;
using am_test::rma_test;

class atomics : public rma_test {};

// Operations per rank: enough to contend, few enough that 64 thread-ranks on messages stay fast.
int per_rank(const am::context& ctx) {
    return ctx.size() >= 16 ? 16 : 200;
}

// One word of type T on rank `owner`, set to `init` before any rank uses it. Collective.
template <class T>
am::global_ptr<T> shared_word(am::context& ctx, int owner, T init) {
    const am::global_ptr<T> mine = ctx.allocate<T>(1);
    *ctx.local(mine) = init;
    const auto all = ctx.exchange(mine);
    ctx.barrier();
    return all[static_cast<std::size_t>(owner)];
}

// The value of `p` once every rank is done with it (a blocking get after a barrier). Collective.
template <class T>
T final_value(am::context& ctx, am::global_ptr<T> p) {
    ctx.barrier();
    T v{};
    ctx.get(&v, p, 1);
    ctx.barrier();
    return v;
}

// Every rank's `mine` (the same length everywhere), in rank order, on rank 0 (empty elsewhere).
template <class T>
std::vector<T> gather(am::context& ctx, const std::vector<T>& mine) {
    const std::size_t n = mine.size(), p = static_cast<std::size_t>(ctx.size());
    const am::global_ptr<T> buf = ctx.allocate<T>(n * p);
    const auto root = ctx.exchange(buf)[0];
    ctx.put(root + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(ctx.rank())),
            mine.data(), n);
    ctx.barrier();
    std::vector<T> all;
    if (ctx.rank() == 0) {
        all.resize(n * p);
        ctx.get(all.data(), buf, n * p);
    }
    ctx.barrier();
    ctx.deallocate(buf);
    return all;
}

AM_RMA_TEST(atomics, fetch_add_old_values_are_a_permutation) {
    const int n = per_rank(ctx), p = ctx.size();
    const auto word = shared_word<std::uint64_t>(ctx, 0, 0);
    std::vector<std::uint64_t> olds;
    for (int i = 0; i < n; ++i) olds.push_back(ctx.fetch_add(word, 1));
    EXPECT_TRUE(std::is_sorted(olds.begin(), olds.end())) << "one rank's fetches go up";
    EXPECT_EQ(final_value(ctx, word), std::uint64_t(p) * std::uint64_t(n));
    std::vector<std::uint64_t> all = gather(ctx, olds);
    if (ctx.rank() == 0) {
        std::sort(all.begin(), all.end());
        std::vector<std::uint64_t> want(all.size());
        std::iota(want.begin(), want.end(), 0);
        EXPECT_EQ(all, want) << "the old values of " << p << " × " << n << " fetch_adds";
    }
}

AM_RMA_TEST(atomics, compare_swap_loop_increments) {
    const int n = per_rank(ctx), p = ctx.size();
    const auto word = shared_word<std::int32_t>(ctx, p - 1, 0);
    for (int i = 0; i < n; ++i) {
        std::int32_t expected = ctx.atomic(word, am::atomic_op::add, 0);  // a fetching read
        for (;;) {
            const std::int32_t old = ctx.compare_swap(word, expected, expected + 1);
            if (old == expected) break;
            EXPECT_NE(old, expected);
            expected = old;
        }
    }
    EXPECT_EQ(final_value(ctx, word), p * n);
}

AM_RMA_TEST(atomics, min_max_over_known_sets) {
    const int n = per_rank(ctx), p = ctx.size(), me = ctx.rank();
    // Value i of rank r: spread over negative and positive, and above 2^31 for unsigned.
    auto value = [](int r, int i) { return std::int64_t((r * 7919 + i * 104729) % 20011) - 10005; };
    const auto smin = shared_word<std::int64_t>(ctx, 0, INT64_MAX);
    const auto smax = shared_word<std::int32_t>(ctx, p - 1, INT32_MIN);
    const auto umax = shared_word<std::uint32_t>(ctx, 0, 0);
    const auto umin = shared_word<std::uint64_t>(ctx, p / 2, UINT64_MAX);
    for (int i = 0; i < n; ++i) {
        const std::int64_t v = value(me, i);
        ctx.atomic_min(smin, v);
        (void)ctx.fetch_max(smax, static_cast<std::int32_t>(v));
        ctx.atomic_max(umax, static_cast<std::uint32_t>(v) ^ 0x80000000u);
        (void)ctx.fetch_min(umin, static_cast<std::uint64_t>(v + 20000) << 40);
    }
    std::int64_t want_min = INT64_MAX, want_max = INT64_MIN;
    std::uint32_t want_umax = 0;
    std::uint64_t want_umin = UINT64_MAX;
    for (int r = 0; r < p; ++r) {
        for (int i = 0; i < n; ++i) {
            const std::int64_t v = value(r, i);
            want_min = std::min(want_min, v);
            want_max = std::max(want_max, v);
            want_umax = std::max(want_umax, static_cast<std::uint32_t>(v) ^ 0x80000000u);
            want_umin = std::min(want_umin, static_cast<std::uint64_t>(v + 20000) << 40);
        }
    }
    EXPECT_EQ(final_value(ctx, smin), want_min);
    EXPECT_EQ(final_value(ctx, smax), want_max);
    EXPECT_EQ(final_value(ctx, umax), want_umax);
    EXPECT_EQ(final_value(ctx, umin), want_umin);
}

AM_RMA_TEST(atomics, bit_ops_on_disjoint_bits) {
    const int p = ctx.size(), me = ctx.rank();
    const auto ors = shared_word<std::uint64_t>(ctx, 0, 0);
    const auto ands = shared_word<std::uint64_t>(ctx, p - 1, ~std::uint64_t{0});
    const auto xors = shared_word<std::uint32_t>(ctx, 0, 0x0f0f0f0fu);
    const auto mixed = shared_word<std::int32_t>(ctx, 0, 0);
    const std::uint64_t bit = std::uint64_t{1} << (me % 64);
    const std::uint32_t bit32 = std::uint32_t{1} << (me % 32);
    const std::uint64_t old_or = ctx.fetch_or(ors, bit);
    EXPECT_EQ(old_or & bit, 0u) << "nobody else sets this rank's bit (at most 64 ranks)";
    ctx.atomic_and(ands, ~bit);
    (void)ctx.fetch_xor(xors, bit32);
    ctx.atomic_or(mixed, std::int32_t(1) << (me % 31));
    std::uint64_t want_or = 0;
    std::uint32_t want_xor = 0x0f0f0f0fu, want_mixed = 0;
    for (int r = 0; r < p; ++r) {
        want_or |= std::uint64_t{1} << (r % 64);
        want_xor ^= std::uint32_t{1} << (r % 32);
        want_mixed |= std::uint32_t{1} << (r % 31);
    }
    EXPECT_EQ(final_value(ctx, ors), want_or);
    EXPECT_EQ(final_value(ctx, ands), ~want_or);
    EXPECT_EQ(final_value(ctx, xors), want_xor);
    EXPECT_EQ(final_value(ctx, mixed), static_cast<std::int32_t>(want_mixed));
}

AM_RMA_TEST(atomics, swap_chain) {
    const int n = per_rank(ctx) / 4 + 1, p = ctx.size(), me = ctx.rank();
    const auto word = shared_word<std::int64_t>(ctx, 0, -1);
    std::vector<std::int64_t> olds;
    for (int i = 0; i < n; ++i) olds.push_back(ctx.swap(word, std::int64_t(me) * n + i));
    const std::int64_t last = final_value(ctx, word);
    std::vector<std::int64_t> all = gather(ctx, olds);
    if (me == 0) {
        // Every value swapped in comes out exactly once, except the one left in the word; the
        // initial -1 comes out once: the swaps form one chain.
        all.push_back(last);
        std::sort(all.begin(), all.end());
        std::vector<std::int64_t> want(static_cast<std::size_t>(p * n) + 1);
        std::iota(want.begin(), want.end(), -1);
        EXPECT_EQ(all, want);
    }
}

AM_RMA_TEST(atomics, float_add_swap_compare_swap) {
    const int n = per_rank(ctx), p = ctx.size(), me = ctx.rank();
    const auto d = shared_word<double>(ctx, 0, 0.0);
    const auto f = shared_word<float>(ctx, p - 1, 1.0f);
    for (int i = 0; i < n; ++i) {
        ctx.atomic_add(d, 0.25);
        (void)ctx.fetch_add(f, 2.0f);
    }
    EXPECT_EQ(final_value(ctx, d), 0.25 * p * n);                // exact: multiples of 1/4
    EXPECT_EQ(final_value(ctx, f), 1.0f + 2.0f * float(p * n));  // exact below 2^24
    const auto s = shared_word<double>(ctx, 0, -1.5);
    if (me == 0) {
        EXPECT_EQ(ctx.swap(s, 2.5), -1.5);
        EXPECT_EQ(ctx.compare_swap(s, 7.0, 9.0), 2.5) << "no match: unchanged";
        EXPECT_EQ(ctx.compare_swap(s, 2.5, 9.0), 2.5) << "match: swapped";
    }
    EXPECT_EQ(final_value(ctx, s), 9.0);
}

AM_RMA_TEST(atomics, wraparound_32_bit) {
    const int p = ctx.size();
    const auto u = shared_word<std::uint32_t>(ctx, 0, 0xfffffff0u);
    const auto s = shared_word<std::int32_t>(ctx, p - 1, INT32_MAX - 1);
    for (int i = 0; i < 20; ++i) ctx.atomic_add(u, 1u);
    (void)ctx.fetch_add(s, 1);
    EXPECT_EQ(final_value(ctx, u), static_cast<std::uint32_t>(0xfffffff0u + 20u * unsigned(p)));
    EXPECT_EQ(final_value(ctx, s),
              static_cast<std::int32_t>(static_cast<std::uint32_t>(INT32_MAX - 1) + unsigned(p)));
    // A 32-bit word next to others is updated alone.
    const auto pair = shared_word<std::uint64_t>(ctx, 0, 0);
    ctx.atomic_add(pair.cast<std::uint32_t>() + 1, 0xffffffffu);
    EXPECT_EQ(final_value(ctx, pair), std::uint64_t(std::uint32_t(0xffffffffu * unsigned(p)))
                                          << 32);
}

AM_RMA_TEST(atomics, split_phase_flags_and_futures) {
    const int n = per_rank(ctx), p = ctx.size(), me = ctx.rank();
    const auto next = shared_word<std::uint64_t>(ctx, (me + 1) % p, 0);  // the right neighbour's
    const auto root = shared_word<std::int64_t>(ctx, 0, 0);
    am::counter flag(ctx);
    for (int i = 0; i < n; ++i) {
        ctx.atomic_add(next, 3, flag);
        ctx.atomic(next, am::atomic_op::bit_or, std::uint64_t{1} << 63, flag);
    }
    flag.wait(std::uint64_t(2 * n));
    std::vector<am::future<std::int64_t>> fs;
    for (int i = 0; i < n; ++i) fs.push_back(ctx.fetch_add_async(root, 1));
    fs.push_back(ctx.atomic_async(root, am::atomic_op::compare_swap, 0, -1));  // no match
    std::vector<std::int64_t> olds;
    for (auto& f : fs) olds.push_back(f.get());
    const std::int64_t cas_old = olds.back();
    olds.pop_back();
    EXPECT_GE(cas_old, 1) << "the word had left 0 before";
    EXPECT_EQ(flag.value(), std::uint64_t(2 * n)) << "each split-phase atomic counts once";
    EXPECT_EQ(final_value(ctx, next), (std::uint64_t{1} << 63) | std::uint64_t(3 * n));
    EXPECT_EQ(final_value(ctx, root), std::int64_t(p) * n);
    std::vector<std::int64_t> all = gather(ctx, olds);
    if (me == 0) {
        std::sort(all.begin(), all.end());
        std::vector<std::int64_t> want(all.size());
        std::iota(want.begin(), want.end(), 0);
        EXPECT_EQ(all, want);
    }
}

// A request handler issues a split-phase atomic on the sender's word (Split-C's enqueue idiom).
AM_RMA_TEST(atomics, from_a_request_handler) {
    const int p = ctx.size(), me = ctx.rank();
    const auto word = shared_word<std::uint64_t>(ctx, me, 0);
    const auto words = ctx.exchange(word);
    am::counter done(ctx);
    auto h = ctx.handler([&](am::token& t, std::uint64_t v) {
        t.ctx().atomic_add(words[static_cast<std::size_t>(t.source())], v, done);
    });
    ctx.barrier();
    ctx.request((me + 1) % p, h, std::uint64_t(me + 1));
    done.wait(1);
    ctx.quiesce();
    EXPECT_EQ(final_value(ctx, word), std::uint64_t(me + 1)) << "the right neighbour added";
}

AM_RMA_TEST(atomics, the_path_taken) {
    const int p = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % p;
    const auto word = shared_word<std::uint64_t>(ctx, right, 0);
    const am::stats before = ctx.stats();
    (void)ctx.fetch_add(word, 1);
    const am::stats after = ctx.stats();
    const bool mapped = path == am::rma_path::automatic && am_test::same_node(me, right);
    const bool network = path == am::rma_path::automatic && am_test::one_sided(me, right);
    if (mapped) {
        EXPECT_EQ(after.messages_sent, before.messages_sent) << "a mapped atomic sent a message";
    } else if (network) {
        EXPECT_EQ(after.messages_sent, before.messages_sent) << "a network atomic sent a message";
    } else if (path == am::rma_path::am) {
        EXPECT_GT(after.messages_sent, before.messages_sent) << "the message path sent nothing";
    }
    EXPECT_EQ(final_value(ctx, word), 1u);
}

AM_RMA_TEST(atomics, bad_input) {
    const int p = ctx.size(), me = ctx.rank();
    const auto word = shared_word<std::uint64_t>(ctx, 0, 7);
    const std::size_t seg = ctx.segment().size();
    am::counter flag(ctx);
    const std::string r = rank_prefix(ctx);
    expect_error([&] { (void)ctx.fetch_add(am::global_ptr<std::uint64_t>(), 1); },
                 am::errc::invalid_argument, {"am::context::fetch_add", r, "null"});
    expect_error([&] { (void)ctx.fetch_add(am::global_ptr<std::uint64_t>(p, 0), 1); },
                 am::errc::bad_rank, {"am::context::fetch_add", r, std::to_string(p)});
    expect_error([&] { ctx.atomic_add(am::global_ptr<std::uint64_t>(0, word.offset() + 4), 1); },
                 am::errc::invalid_argument, {"am::context::atomic_add", r, "aligned", "8 bytes"});
    expect_error([&] { ctx.atomic_add(am::global_ptr<std::uint32_t>(0, seg), 1u, flag); },
                 am::errc::out_of_segment, {"am::context::atomic_add", r, std::to_string(seg)});
    expect_error([&] { (void)ctx.swap(am::global_ptr<std::int64_t>(0, seg), 1); },
                 am::errc::out_of_segment, {"am::context::swap", r, std::to_string(seg)});
    expect_error([&] { (void)ctx.atomic(word.cast<double>(), am::atomic_op::bit_xor, 1.0); },
                 am::errc::invalid_argument, {"am::context::atomic", r, "xor", "double"});
    expect_error([&] { ctx.atomic(word.cast<float>(), am::atomic_op::max, 1.0f, flag); },
                 am::errc::invalid_argument, {"am::context::atomic", r, "max", "float"});
    expect_error([&] { (void)ctx.atomic_async(word, static_cast<am::atomic_op>(99), 1); },
                 am::errc::invalid_argument, {"am::context::atomic_async", r});
    // Blocking atomics are refused in handlers, before anything is sent.
    am::counter ran(ctx);
    auto h = ctx.handler([&](am::token& t) {
        expect_error([&] { (void)t.ctx().fetch_add(word, 1); }, am::errc::bad_context,
                     {"am::context::fetch_add"});
        ran.add();
    });
    ctx.barrier();
    ctx.request(me, h);
    ran.wait(1);
    EXPECT_EQ(flag.value(), 0u) << "a refused atomic counted its flag";
    EXPECT_EQ(final_value(ctx, word), 7u) << "a refused atomic changed the word";
}

AM_INSTANTIATE(atomics, am_test::all_params());

}  // namespace
