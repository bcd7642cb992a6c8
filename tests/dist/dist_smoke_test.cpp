// SPDX-License-Identifier: MIT
// am::async and am::dist: each container against a sequential reference on every transport.
#include "support/spmd.hpp"

#include <am/dist.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace {

using am_test::spmd_test;

class dist : public spmd_test {};

TEST_P(dist, async_counts_and_chains) {
    const int rc = run([](am::context& ctx) {
        const am::team w = am::coll::world(ctx);
        const int n = ctx.size(), me = ctx.rank();
        am::dist::dist_object<std::uint64_t> sum(w, 0);
        // Each rank sends to every rank: k to rank k % n, with a string argument.
        for (int k = 0; k < 200; ++k) {
            sum.async(
                k % n,
                [](std::uint64_t& s, std::string text, std::uint64_t v) { s += v + text.size(); },
                std::string(static_cast<std::size_t>(k % 7), 'a'), std::uint64_t(k));
        }
        sum.barrier();
        std::uint64_t want = 0;
        for (int k = 0; k < 200; ++k) {
            if (k % n == me) want += static_cast<std::uint64_t>(n) * (k + k % 7);
        }
        EXPECT_EQ(sum.local(), want);
        // A chain: each call forwards to the next rank until the hop count runs out.
        am::dist::dist_object<std::uint64_t> hops(w, 0);
        struct hop {
            void operator()(am::dist::dist_object<std::uint64_t>& o, std::uint64_t& v,
                            int left) const {
                ++v;
                if (left > 0) o.async((o.team().rank() + 1) % o.team().size(), hop{}, left - 1);
            }
        };
        hops.async((me + 1) % n, hop{}, 50);
        hops.barrier();
        const auto total = am::coll::allreduce(w, hops.local(), am::coll::sum{});
        EXPECT_EQ(total, static_cast<std::uint64_t>(51 * n));
        // A large argument (well over a medium message).
        std::vector<std::uint64_t> big(100000);
        std::iota(big.begin(), big.end(), static_cast<std::uint64_t>(me));
        sum.local() = 0;
        am::coll::barrier(w);
        sum.async((me + 1) % n,
                  [](std::uint64_t& s, std::vector<std::uint64_t> v) {
                      s = std::accumulate(v.begin(), v.end(), std::uint64_t{0});
                  },
                  big);
        sum.barrier();
        const int from = (me + n - 1) % n;
        EXPECT_EQ(sum.local(), 100000ull * from + 100000ull * 99999 / 2);
    });
    EXPECT_EQ(rc, 0);
}

TEST_P(dist, map_and_counting_set) {
    const int rc = run([](am::context& ctx) {
        const am::team w = am::coll::world(ctx);
        const int n = ctx.size(), me = ctx.rank();
        am::dist::map<std::string, std::uint64_t> m(w);
        am::dist::counting_set<std::uint64_t> cs(w);
        for (int k = 0; k < 500; ++k) {
            m.insert_or_assign("k" + std::to_string(k), static_cast<std::uint64_t>(k));
            cs.add(static_cast<std::uint64_t>(k % 13));
            m.async_visit(
                "sum", [](const std::string&, std::uint64_t& v, std::uint64_t x) { v += x; },
                std::uint64_t(k));
        }
        const auto all = m.gather(0);
        if (me == 0) {
            std::map<std::string, std::uint64_t> got(all.begin(), all.end());
            ASSERT_EQ(got.size(), 501u);
            EXPECT_EQ(got["sum"], static_cast<std::uint64_t>(n) * 499 * 500 / 2);
            EXPECT_EQ(got["k17"], 17u);
        }
        EXPECT_EQ(cs.size(), 13u);
        const auto top = cs.topk(3);
        ASSERT_EQ(top.size(), 3u);
        EXPECT_EQ(top[0].first, 0u);
        EXPECT_EQ(top[0].second, static_cast<std::uint64_t>(n) * 39);
        EXPECT_EQ(cs.count(12), static_cast<std::uint64_t>(n) * 38);
    });
    EXPECT_EQ(rc, 0);
}

TEST_P(dist, disjoint_set_components) {
    const int rc = run([](am::context& ctx) {
        const am::team w = am::coll::world(ctx);
        const int me = ctx.rank(), n = ctx.size();
        am::dist::disjoint_set<std::uint64_t> ds(w);
        // Items 0..999; i joined with i + 10 (rank me does every n-th pair): 10 components.
        for (std::uint64_t i = static_cast<std::uint64_t>(me); i + 10 < 1000;
             i += static_cast<std::uint64_t>(n)) {
            ds.async_union(i, i + 10);
        }
        ds.all_compress();
        EXPECT_EQ(ds.num_sets(), 10u);
        ds.for_all([](std::uint64_t item, std::uint64_t root) { EXPECT_EQ(root, item % 10); });
    });
    EXPECT_EQ(rc, 0);
}

// With a progress thread handlers run on a second thread from the start of the rank: the layer
// must lock from then on (it once read the setting before the thread started and never locked:
// double frees and lost records in 6 of 20 runs of this shape).
TEST_P(dist, progress_thread_large_and_small_records) {
    const int rc = run(
        [](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            am::dist::map<std::string, std::string> m(w);
            const std::string r = std::to_string(ctx.rank());
            for (int k = 0; k < 20; ++k) {
                m.insert_or_assign(r + "k" + std::to_string(k) + std::string(100000, 'x'),
                                   std::string(70000, 'v'));
            }
            for (int k = 0; k < 3000; ++k) m.insert_or_assign(r + "s" + std::to_string(k), "v");
            EXPECT_EQ(m.size(), 3020u * static_cast<std::size_t>(ctx.size()));
            std::size_t big = 0;
            m.for_all([&](const std::string& k, const std::string& v) {
                if (k.size() > 100000) big += v.size() == 70000 ? 1 : 0;
            });
            EXPECT_EQ(am::coll::allreduce(w, big, am::coll::sum{}),
                      20u * static_cast<std::size_t>(ctx.size()));
        },
        [](am::config& cfg) { cfg.progress_thread = true; });
    EXPECT_EQ(rc, 0);
}

AM_INSTANTIATE(dist, am_test::make_params({1, 2, 3, 5}, {1, 2, 3}));

}  // namespace
