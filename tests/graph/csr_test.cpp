// SPDX-License-Identifier: MIT
// The distributed CSR (build_csr) against the sequential reference: every rank's adjacency
// lists hold exactly the reference's (u, v, w) entries of its vertices (both directions,
// self-loops dropped, duplicates kept), each list sorted by weight; the ranks together own
// every vertex once; global_edges; partition fields consistent with the rank's share; also
// when the rank count is not a power of two and when some ranks own no vertex at all.
#include "graph_support.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>

namespace {

using namespace graph_test;
using am_test::spmd_test;

class graph_csr : public spmd_test {};
class graph_csr_errors : public spmd_test {};

bool entry_less(const adjacency& a, const adjacency& b) {
    return std::tie(a.target, a.w) < std::tie(b.target, b.w);
}

/// Checks this rank's share of `spec`'s CSR against the reference.
void check_csr(am::context& ctx, const graph_spec& spec) {
    const std::string what = describe(spec) + " on " + std::to_string(ctx.size()) + " ranks";
    const reference ref = make_reference(spec);
    const csr_graph g = am::graph::build_csr(ctx, spec);
    am::graph::reductions red(ctx);

    // Partition and ownership.
    EXPECT_EQ(g.part.n(), ref.n) << what;
    EXPECT_EQ(g.rank, ctx.rank()) << what;
    EXPECT_EQ(g.first, g.part.first(ctx.rank())) << what;
    EXPECT_EQ(g.local_n, g.part.count(ctx.rank())) << what;
    EXPECT_EQ(g.part.chunk() % 64, 0u) << what;
    EXPECT_EQ(red.sum(g.local_n), ref.n) << what << ": the ranks do not own every vertex once";
    EXPECT_EQ(red.min(g.first == g.part.first(ctx.rank()) ? 1 : 0), 1u) << what;
    EXPECT_EQ(red.sum(g.adj.size()), 2 * ref.edges) << what;
    mismatches owner(what + ": owner/owns");
    for (std::uint32_t v = 0; v < ref.n; ++v) {
        const bool mine = v >= g.first && v - g.first < g.local_n;
        owner.check(g.owns(v) == mine && (g.part.owner(v) == ctx.rank()) == mine, [&] {
            return "vertex " + std::to_string(v) + ": owns " + std::to_string(g.owns(v)) +
                   ", owner " + std::to_string(g.part.owner(v)) + ", block [" +
                   std::to_string(g.first) + ", +" + std::to_string(g.local_n) + ")";
        });
    }

    // Offsets and lists (no collective call after this point: an ASSERT may return early).
    ASSERT_EQ(g.offsets.size(), std::size_t{g.local_n} + 1) << what;
    EXPECT_EQ(g.offsets.front(), 0u) << what;
    EXPECT_EQ(g.offsets.back(), g.adj.size()) << what;
    EXPECT_EQ(g.bytes(), g.offsets.size() * 8 + g.adj.size() * sizeof(adjacency)) << what;
    mismatches lists(what + ": adjacency");
    mismatches sorted(what + ": sorted by weight");
    for (std::uint32_t local = 0; local < g.local_n; ++local) {
        const std::uint32_t v = g.first + local;
        const auto got = g.neighbours(local);
        sorted.check(
            std::is_sorted(got.begin(), got.end(),
                           [](const adjacency& a, const adjacency& b) { return a.w < b.w; }),
            [&] { return "vertex " + std::to_string(v); });
        std::vector<adjacency> mine(got.begin(), got.end());
        const auto expected_span = ref.neighbours(v);
        std::vector<adjacency> expected(expected_span.begin(), expected_span.end());
        std::sort(mine.begin(), mine.end(), entry_less);
        std::sort(expected.begin(), expected.end(), entry_less);
        const bool equal = mine.size() == expected.size() &&
                           std::equal(mine.begin(), mine.end(), expected.begin(),
                                      [](const adjacency& a, const adjacency& b) {
                                          return a.target == b.target && a.w == b.w;
                                      });
        lists.check(equal && g.degree(local) == ref.degree(v), [&] {
            return "vertex " + std::to_string(v) + ": " + std::to_string(mine.size()) +
                   " entries, reference " + std::to_string(expected.size());
        });
    }
    EXPECT_EQ(g.global_edges, ref.edges) << what;
}

// Several graphs, both kinds; the small ones have fewer vertices than 64 per rank, so on 2+
// ranks some ranks own nothing (scale 5: 32 vertices; scale 7 on 3 ranks: blocks of 64, the
// last rank empty; scale 8 on 3 ranks: blocks of 128).
TEST_P(graph_csr, matches_reference) {
    ASSERT_EQ(run([](am::context& ctx) {
                  for (const graph_spec& s :
                       {kronecker(10, 16), erdos_renyi(9, 8), kronecker(5, 4), kronecker(7, 8),
                        erdos_renyi(8, 3), kronecker(1, 1), kronecker(8, 2, 99)}) {
                      check_csr(ctx, s);
                  }
              }),
              0);
}

// build_csr checks the spec before any collective step: every rank throws
// std::invalid_argument naming the field, and the job goes on.
TEST_P(graph_csr_errors, rejects_bad_spec) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            for (const graph_spec& s : {kronecker(0, 16), kronecker(32, 16), erdos_renyi(8, 0)}) {
                try {
                    (void)am::graph::build_csr(ctx, s);
                    ADD_FAILURE() << "no exception for " << describe(s);
                } catch (const std::invalid_argument& e) {
                    const std::string what = e.what();
                    EXPECT_TRUE(am_test::contains(
                        what, s.scale == 0 || s.scale == 32 ? "scale" : "edgefactor"))
                        << what;
                }
            }
            const csr_graph g = am::graph::build_csr(ctx, kronecker(6, 4));
            EXPECT_EQ(g.global_edges, make_reference(kronecker(6, 4)).edges);
        }),
        0);
}

AM_INSTANTIATE(graph_csr, graph_params());
AM_INSTANTIATE(graph_csr_errors, graph_params_small());

}  // namespace
