// SPDX-License-Identifier: MIT
// Rank order of non-commutative operators on every algorithm path: the left projection
// op(a, b) = a and the right one op(a, b) = b are associative, and give rank 0's and the last
// rank's value only when every combine keeps rank order — small vectors (recursive doubling),
// large ones (reduce-scatter + allgather, split from 64 KiB), scans and reduce.
#include "support/expect.hpp"
#include "support/spmd.hpp"

#include <am/coll.hpp>

#include <memory>
#include <vector>

namespace {

using am_test::spmd_test;

class coll_order : public spmd_test {};

struct left {
    std::uint32_t operator()(std::uint32_t a, std::uint32_t) const { return a; }
};
struct right {
    std::uint32_t operator()(std::uint32_t, std::uint32_t b) const { return b; }
};

std::uint32_t mark(int rank, std::size_t i) {
    return static_cast<std::uint32_t>(rank + 1) * 100000u + static_cast<std::uint32_t>(i % 1000);
}

TEST_P(coll_order, projections_keep_rank_order) {
    const int rc = run([](am::context& ctx) {
        const am::team w = am::coll::world(ctx);
        const int n = w.size(), me = w.rank();
        for (const std::size_t count : {std::size_t{3}, std::size_t{40000}}) {  // 12 B, 160 KB
            std::vector<std::uint32_t> in(count), out(count);
            for (std::size_t i = 0; i < count; ++i) in[i] = mark(me, i);
            am::coll::allreduce(w, std::span<const std::uint32_t>(in), std::span(out), left{});
            for (std::size_t i = 0; i < count; i += 997) ASSERT_EQ(out[i], mark(0, i)) << i;
            am::coll::allreduce(w, std::span<const std::uint32_t>(in), std::span(out), right{});
            for (std::size_t i = 0; i < count; i += 997) ASSERT_EQ(out[i], mark(n - 1, i)) << i;
            am::coll::reduce(w, std::span<const std::uint32_t>(in), std::span(out), right{}, n / 2);
            if (me == n / 2) {
                for (std::size_t i = 0; i < count; i += 997) ASSERT_EQ(out[i], mark(n - 1, i));
            }
        }
        EXPECT_EQ(am::coll::inclusive_scan(w, mark(me, 0), left{}), mark(0, 0));
        EXPECT_EQ(am::coll::inclusive_scan(w, mark(me, 0), right{}), mark(me, 0));
        const auto ex = am::coll::exclusive_scan(w, mark(me, 0), right{});
        if (me > 0) {
            EXPECT_EQ(*ex, mark(me - 1, 0));
        }
        EXPECT_EQ(am::coll::allreduce(w, mark(me, 0), left{}), mark(0, 0));
    });
    ASSERT_EQ(rc, 0);
}

// A value larger than one medium message (80 KB, elements of one "element"): sent whole in
// fragments by recursive doubling, never split (a fragment cannot hold whole elements; the
// send once looped on empty fragments). And the output span checks.
struct big {
    std::uint32_t v[20000];
};

TEST_P(coll_order, value_larger_than_a_fragment) {
    const int rc = run([](am::context& ctx) {
        const am::team w = am::coll::world(ctx);
        const int n = w.size(), me = w.rank();
        auto mine = std::make_unique<big>();
        for (std::size_t i = 0; i < std::size(mine->v); ++i) mine->v[i] = mark(me, i);
        const big total = am::coll::allreduce(w, *mine, [](const big& a, const big& b) {
            big r;
            for (std::size_t i = 0; i < std::size(r.v); ++i) r.v[i] = a.v[i] + b.v[i];
            return r;
        });
        for (std::size_t i = 0; i < std::size(total.v); i += 991) {
            std::uint32_t want = 0;
            for (int r = 0; r < n; ++r) want += mark(r, i);
            ASSERT_EQ(total.v[i], want) << i;
        }
        std::vector<int> in(5, 1), shorter(4);
        am_test::expect_error(
            [&] {
                am::coll::allreduce(w, std::span<const int>(in), std::span(shorter),
                                    am::coll::sum{});
            },
            am::errc::invalid_argument, {"am::coll::allreduce", "4 output elements"});
        am::coll::barrier(w);  // nothing was sent by the refused call
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(coll_order, am_test::make_params({1, 2, 3, 4, 5, 6, 7, 8, 13}, {2, 3}));

}  // namespace
