// SPDX-License-Identifier: MIT
// Rank order of non-commutative operators on every algorithm path: the left projection
// op(a, b) = a and the right one op(a, b) = b are associative, and give rank 0's and the last
// rank's value only when every combine keeps rank order — small vectors (recursive doubling),
// large ones (reduce-scatter + allgather, split from 64 KiB), scans and reduce.
#include "support/spmd.hpp"

#include <am/coll.hpp>

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

AM_INSTANTIATE(coll_order, am_test::make_params({1, 2, 3, 4, 5, 6, 7, 8, 13}, {2, 3}));

}  // namespace
