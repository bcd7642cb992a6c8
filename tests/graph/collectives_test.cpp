// SPDX-License-Identifier: MIT
// choose_roots against the sequential Graph500 rule (the first `count` distinct candidates of
// the root stream with an edge: the same list, in the same order, on every rank and for every
// rank count), also when the graph has fewer vertices with edges than roots asked for; and
// reductions::sum / min over ranks (wrap-around, the minimum on any rank, state reused).
#include "graph_support.hpp"

#include <gtest/gtest.h>

namespace {

using namespace graph_test;
using am_test::spmd_test;

class graph_roots : public spmd_test {};
class graph_reductions : public spmd_test {};

void check_roots(am::context& ctx, const graph_spec& spec, int count) {
    const reference ref = make_reference(spec);
    const csr_graph g = am::graph::build_csr(ctx, spec);
    const std::vector<std::uint32_t> roots = am::graph::choose_roots(ctx, g, count);
    const std::vector<std::uint32_t> expected = reference_roots(ref, count);
    const std::string what = describe(spec) + ", " + std::to_string(count) + " roots";
    EXPECT_EQ(roots, expected) << what;
    std::vector<std::uint32_t> sorted = roots;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end())
        << what << ": repeated root";
    for (const std::uint32_t root : roots) {
        ASSERT_LT(root, ref.n) << what;
        EXPECT_GT(ref.degree(root), 0u) << what << ": root " << root << " has no edge";
    }
}

TEST_P(graph_roots, match_reference) {
    ASSERT_EQ(run([](am::context& ctx) {
                  check_roots(ctx, kronecker(10, 16), 16);
                  check_roots(ctx, kronecker(10, 16), 1);
                  check_roots(ctx, erdos_renyi(8, 4), 16);
                  check_roots(ctx, kronecker(6, 2, 17), 12);  // many isolated vertices
              }),
              0);
}

// More roots asked for than vertices with edges: every such vertex, each once.
TEST_P(graph_roots, fewer_candidates_than_asked) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const graph_spec spec = kronecker(3, 1, 1);
                  const reference ref = make_reference(spec);
                  std::size_t with_edges = 0;
                  for (std::uint32_t v = 0; v < ref.n; ++v) with_edges += ref.degree(v) > 0;
                  const csr_graph g = am::graph::build_csr(ctx, spec);
                  const std::vector<std::uint32_t> roots = am::graph::choose_roots(ctx, g, 64);
                  EXPECT_EQ(roots.size(), with_edges);
                  EXPECT_EQ(roots, reference_roots(ref, 64));
              }),
              0);
}

TEST_P(graph_reductions, sum_and_min) {
    ASSERT_EQ(run([](am::context& ctx) {
                  am::graph::reductions red(ctx);
                  const auto me = static_cast<std::uint64_t>(ctx.rank());
                  const auto n = static_cast<std::uint64_t>(ctx.size());
                  EXPECT_EQ(red.sum(me + 1), n * (n + 1) / 2);
                  EXPECT_EQ(red.sum(0), 0u);
                  // Modulo 2^64.
                  EXPECT_EQ(red.sum((std::uint64_t{1} << 63) + me),
                            (n % 2) * (std::uint64_t{1} << 63) + n * (n - 1) / 2);
                  EXPECT_EQ(red.min(100 + me), 100u);
                  // The minimum on the last rank, smaller than the previous call's result.
                  EXPECT_EQ(red.min(me + 1 == n ? 7 : 1000 - me), 7u);
                  // Larger than the previous minimum everywhere: no state carried over.
                  EXPECT_EQ(red.min(500 - me), 500 - (n - 1));
                  EXPECT_EQ(red.min(~std::uint64_t{0}), ~std::uint64_t{0});
                  EXPECT_EQ(red.min(me == n / 2 ? 0 : ~std::uint64_t{0}), 0u);
                  EXPECT_EQ(red.sum(me == 0 ? 42 : 0), 42u);
                  for (int i = 0; i < 20; ++i) {  // alternating, with different values each time
                      const auto k = static_cast<std::uint64_t>(i);
                      EXPECT_EQ(red.min(k * 10 + (me + k) % n), k * 10);
                      EXPECT_EQ(red.sum(k * me), k * n * (n - 1) / 2);
                  }
              }),
              0);
}

AM_INSTANTIATE(graph_roots, graph_params());
AM_INSTANTIATE(graph_reductions, graph_params());

}  // namespace
