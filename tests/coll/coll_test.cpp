// SPDX-License-Identifier: MIT
// am::coll: every collective against a sequential computation of the same result, on every
// transport and at 1, 2, 3, 4, 5 and 64 ranks (odd sizes exercise the non-power-of-two paths),
// on the world team and on split teams.
#include "support/expect.hpp"
#include "support/spmd.hpp"

#include <am/coll.hpp>

#include <numeric>
#include <string>
#include <vector>

namespace {

using am_test::spmd_test;

class coll : public spmd_test {};

// A value only rank r contributes, to tell ranks apart and check rank order.
std::uint64_t val(int r, int round) {
    return 1000003ull * static_cast<std::uint64_t>(r + 1) + static_cast<std::uint64_t>(round);
}

TEST_P(coll, smoke_every_kind) {
    const int rc = run([](am::context& ctx) {
        const am::team w = am::coll::world(ctx);
        const int n = w.size(), me = w.rank();
        ASSERT_EQ(n, ctx.size());
        for (int round = 0; round < 3; ++round) {
            am::coll::barrier(w);
            const int root = (round + 1) % n;
            EXPECT_EQ(am::coll::broadcast(w, val(me, round), root), val(root, round));
            std::uint64_t total = 0;
            for (int r = 0; r < n; ++r) total += val(r, round);
            EXPECT_EQ(am::coll::allreduce(w, val(me, round), am::coll::sum{}), total);
            const auto red = am::coll::reduce(w, val(me, round), am::coll::max{}, root);
            if (me == root) {
                ASSERT_TRUE(red.has_value());
                EXPECT_EQ(*red, val(n - 1, round));
            } else {
                EXPECT_FALSE(red.has_value());
            }
            std::uint64_t prefix = 0;
            for (int r = 0; r <= me; ++r) prefix += val(r, round);
            EXPECT_EQ(am::coll::inclusive_scan(w, val(me, round), am::coll::sum{}), prefix);
            const auto ex = am::coll::exclusive_scan(w, val(me, round), am::coll::sum{});
            if (me == 0) {
                EXPECT_FALSE(ex.has_value());
            } else {
                ASSERT_TRUE(ex.has_value());
                EXPECT_EQ(*ex, prefix - val(me, round));
            }
            // Rank order for a non-commutative operator: concatenation of strings.
            const std::string cat = am::coll::allreduce(
                w, std::to_string(me) + ",",
                [](const std::string& a, const std::string& b) { return a + b; });
            std::string want;
            for (int r = 0; r < n; ++r) want += std::to_string(r) + ",";
            EXPECT_EQ(cat, want);
            const auto all = am::coll::allgather(w, val(me, round));
            ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
            for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], val(r, round));
            const auto g =
                am::coll::gather(w, std::string(static_cast<std::size_t>(me), 'x'), root);
            if (me == root) {
                ASSERT_EQ(g.size(), static_cast<std::size_t>(n));
                for (int r = 0; r < n; ++r) EXPECT_EQ(g[r].size(), static_cast<std::size_t>(r));
            } else {
                EXPECT_TRUE(g.empty());
            }
            std::vector<std::uint64_t> out(static_cast<std::size_t>(2 * n));
            for (int j = 0; j < n; ++j) {
                out[2 * j] = val(me, j);
                out[2 * j + 1] = val(j, me);
            }
            const auto in = am::coll::alltoall(w, std::span<const std::uint64_t>(out));
            ASSERT_EQ(in.size(), out.size());
            for (int i = 0; i < n; ++i) {
                EXPECT_EQ(in[2 * i], val(i, me));
                EXPECT_EQ(in[2 * i + 1], val(me, i));
            }
        }
        // A large broadcast (pipelined in segments) and a large element-wise allreduce.
        std::vector<std::uint32_t> big(300000);
        if (me == 0) std::iota(big.begin(), big.end(), 7u);
        am::coll::broadcast(w, std::span<std::uint32_t>(big), 0);
        EXPECT_EQ(big[299999], 299999u + 7u);
        std::vector<std::uint32_t> sum(big.size());
        am::coll::allreduce(w, std::span<const std::uint32_t>(big), std::span<std::uint32_t>(sum),
                            am::coll::sum{});
        EXPECT_EQ(sum[12345], static_cast<std::uint32_t>(n) * (12345u + 7u));
        // Split: odd and even ranks, reversed order by key.
        const am::team half = w.split(me % 2, -me);
        const int hn = (n + 1 - me % 2) / 2;
        ASSERT_EQ(half.size(), hn);
        EXPECT_EQ(half.world_rank(half.rank()), me);
        EXPECT_EQ(half.world_rank(0), me % 2 + 2 * (hn - 1));  // the largest key -me first
        const int got = am::coll::allreduce(half, me, am::coll::sum{});
        int want = 0;
        for (int r = me % 2; r < n; r += 2) want += r;
        EXPECT_EQ(got, want);
        const am::team none = w.split(me == 0 ? am::coll::team::undefined : 1, 0);
        EXPECT_EQ(none.valid(), me != 0);
        // Nonblocking: two outstanding on different teams, then waited for.
        auto f1 = am::coll::allreduce_nb(w, 1, am::coll::sum{});
        auto f2 = am::coll::allgather_nb(half, me);
        EXPECT_EQ(f1.get(), n);
        EXPECT_EQ(f2.get().size(), static_cast<std::size_t>(hn));
        am::coll::barrier(w);
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(coll, am_test::make_params({1, 2, 3, 5, 64}, {1, 2, 3, 4}));

}  // namespace
