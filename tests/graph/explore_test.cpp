// SPDX-License-Identifier: MIT
// explore_kernel (nested messages in one epoch) against a sequential BFS: it reaches exactly
// the vertices a BFS reaches, its predecessors form a tree rooted at the root whose edges are
// edges of the graph, `edges` is the component's edge count, and on several ranks visits
// actually travel between them — Kronecker and ER graphs, several roots (also an isolated one),
// one kernel object reused for every root.
#include "graph_support.hpp"

#include <gtest/gtest.h>

namespace {

using namespace graph_test;
using am_test::spmd_test;

class graph_explore : public spmd_test {};

void check_explore(am::context& ctx, const graph_spec& spec, int root_count) {
    const reference ref = make_reference(spec);
    const csr_graph g = am::graph::build_csr(ctx, spec);
    am::graph::reductions red(ctx);
    std::vector<std::uint32_t> roots = am::graph::choose_roots(ctx, g, root_count);
    ASSERT_EQ(roots.size(), static_cast<std::size_t>(root_count));
    for (std::uint32_t v = 0; v < ref.n; ++v) {
        if (ref.degree(v) == 0) {
            roots.push_back(v);
            break;
        }
    }
    am::graph::explore_kernel explore(ctx, g);
    for (const std::uint32_t root : roots) {
        const std::string what = describe(spec) + ", root " + std::to_string(root) + ", " +
                                 std::to_string(ctx.size()) + " ranks";
        search_result r;
        r.dist.assign(2, 0.5f);
        explore.run(root, r);
        const std::uint64_t messages = red.sum(r.messages);
        const global_result all = gather(ctx, g, r);
        const std::vector<std::int32_t> level = bfs_levels(ref, root);
        const std::vector<std::int32_t> depth = depths_from_pred(all.pred);
        ASSERT_EQ(r.pred.size(), g.local_n) << what;
        EXPECT_TRUE(r.dist.empty()) << what;
        EXPECT_EQ(r.levels, 0) << what;
        mismatches reach(what + ": reached set");
        mismatches tree(what + ": tree");
        for (std::uint32_t local = 0; local < g.local_n; ++local) {
            const std::uint32_t v = g.first + local;
            const std::int64_t p = r.pred[local];
            reach.check((p != -1) == (level[v] >= 0), [&] {
                return "vertex " + std::to_string(v) + ": pred " + std::to_string(p) +
                       ", BFS level " + std::to_string(level[v]);
            });
            if (v == root) {
                EXPECT_EQ(p, root) << what;
            } else if (p != -1) {
                tree.check(depth[v] > 0 && p >= 0 && p < ref.n &&
                               ref.adjacent(v, static_cast<std::uint32_t>(p)),
                           [&] {
                               return "vertex " + std::to_string(v) + ": pred " +
                                      std::to_string(p) +
                                      " is not a neighbour on a path to the root (depth " +
                                      std::to_string(depth[v]) + ")";
                           });
            }
        }
        EXPECT_EQ(r.edges, component_edges(ref, level)) << what;
        // On several ranks a component spanning ranks needs visits between them.
        bool spans = false;
        for (std::uint32_t v = 0; v < ref.n; ++v) {
            if (level[v] >= 0 && g.part.owner(v) != g.part.owner(root)) spans = true;
        }
        if (spans) {
            EXPECT_GT(messages, 0u) << what;
        }
    }
}

TEST_P(graph_explore, kronecker) {
    ASSERT_EQ(run([](am::context& ctx) {
                  check_explore(ctx, kronecker(10, 16), 3);
                  check_explore(ctx, kronecker(7, 2, 5), 3);  // sparse: several components
              }),
              0);
}

TEST_P(graph_explore, erdos_renyi) {
    ASSERT_EQ(run([](am::context& ctx) {
                  check_explore(ctx, erdos_renyi(9, 8), 3);
                  check_explore(ctx, erdos_renyi(10, 1), 2);  // long paths: deep nesting
              }),
              0);
}

AM_INSTANTIATE(graph_explore, graph_params());

}  // namespace
