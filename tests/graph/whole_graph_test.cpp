// SPDX-License-Identifier: MIT
// cc_kernel and pagerank_kernel against sequential references computed here. Connected
// components: every vertex's label equals the smallest id of its component (union-find over
// the whole edge list), `pred` is a forest of reference edges within a component rooted at
// the labels, the edge count is the graph's; on Kronecker and sparse Erdős–Rényi graphs (many
// components) and a hand-made graph whose long path crosses every rank. PageRank: the L1
// distance to a sequential power iteration run to 1e-13 is within the kernel's tolerance.
// The validator accepts both results and catches a wrong label, a parent cycle, a parent
// that is not a neighbour, and a perturbed score; bad PageRank options are rejected naming
// the rank.
#include "graph_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace {

using namespace graph_test;
using am::graph::kernel_kind;
using am::graph::kernel_options;
using am_test::spmd_test;

class graph_whole : public spmd_test {};

/// Smallest vertex id of every vertex's component (union-find).
std::vector<std::uint32_t> reference_components(const reference& ref) {
    std::vector<std::uint32_t> parent(ref.n);
    std::iota(parent.begin(), parent.end(), 0U);
    auto find = [&](std::uint32_t v) {
        while (parent[v] != v) v = parent[v] = parent[parent[v]];
        return v;
    };
    for (std::uint32_t u = 0; u < ref.n; ++u) {
        for (const adjacency& a : ref.neighbours(u)) {
            const std::uint32_t x = find(u), y = find(a.target);
            if (x != y) parent[std::max(x, y)] = std::min(x, y);  // the root stays the smallest
        }
    }
    std::vector<std::uint32_t> label(ref.n);
    for (std::uint32_t v = 0; v < ref.n; ++v) label[v] = find(v);
    return label;
}

/// PageRank of the whole graph by power iteration, until the L1 change is below 1e-13.
std::vector<double> reference_pagerank(const reference& ref, double d) {
    const double n = ref.n;
    std::vector<double> score(ref.n, 1.0 / n), next(ref.n);
    for (int it = 0; it < 10000; ++it) {
        double dangling = 0;
        for (std::uint32_t v = 0; v < ref.n; ++v) {
            if (ref.degree(v) == 0) dangling += score[v];
        }
        std::fill(next.begin(), next.end(), (1 - d) / n + d * dangling / n);
        for (std::uint32_t u = 0; u < ref.n; ++u) {
            for (const adjacency& a : ref.neighbours(u)) {
                next[a.target] += d * score[u] / static_cast<double>(ref.degree(u));
            }
        }
        double change = 0;
        for (std::uint32_t v = 0; v < ref.n; ++v) change += std::fabs(next[v] - score[v]);
        score.swap(next);
        if (change < 1e-13) break;
    }
    return score;
}

/// Labels and scores of every vertex, gathered on every rank.
struct gathered {
    std::vector<std::uint32_t> label;
    std::vector<double> score;
};

gathered gather_values(am::context& ctx, const csr_graph& g, const search_result& r) {
    struct record {
        std::uint32_t vertex;
        std::uint32_t label;
        double score;
    };
    gathered out;
    out.label.assign(g.part.n(), ~0U);
    out.score.assign(g.part.n(), -1);
    auto store = [&](const record& x) {
        out.label[x.vertex] = x.label;
        out.score[x.vertex] = x.score;
    };
    am::message_type<record> msg(
        ctx, [&](const record& x) { store(x); }, "graph_test.gather_values");
    am::epoch ep(ctx, {.depth = 0});
    for (std::uint32_t v = 0; v < g.local_n; ++v) {
        const record x{g.first + v, r.component.empty() ? 0 : r.component[v],
                       r.score.empty() ? 0 : r.score[v]};
        store(x);
        for (int dest = 0; dest < ctx.size(); ++dest) {
            if (dest != ctx.rank()) msg.send(x, dest);
        }
    }
    ep.end();
    return out;
}

std::string rank_count(const am::context& ctx) {
    return std::to_string(ctx.size()) + " ranks";
}

void check_cc(am::context& ctx, const csr_graph& g, const reference& ref, const std::string& what) {
    am::graph::cc_kernel cc(ctx, g);
    search_result r;
    r.pred.assign(3, 9);  // a reused result: the kernel must reset it
    cc.run(r);
    ASSERT_EQ(r.component.size(), g.local_n) << what;
    ASSERT_EQ(r.pred.size(), g.local_n) << what;
    const std::vector<std::uint32_t> expect = reference_components(ref);
    const global_result all = gather(ctx, g, r);
    const std::vector<std::int32_t> depth = depths_from_pred(all.pred);
    mismatches labels(what + ": labels");
    mismatches forest(what + ": forest");
    for (std::uint32_t local = 0; local < g.local_n; ++local) {
        const std::uint32_t v = g.first + local;
        labels.check(r.component[local] == expect[v], [&] {
            return "vertex " + std::to_string(v) + ": label " + std::to_string(r.component[local]) +
                   ", reference " + std::to_string(expect[v]);
        });
        const std::int64_t p = r.pred[local];
        const bool ok = depth[v] >= 0 && p >= 0 && p < ref.n &&
                        (v == expect[v] ? p == v
                                        : ref.adjacent(v, static_cast<std::uint32_t>(p)) &&
                                              expect[static_cast<std::uint32_t>(p)] == expect[v]);
        forest.check(ok, [&] {
            return "vertex " + std::to_string(v) + ": pred " + std::to_string(p) + " (depth " +
                   std::to_string(depth[v]) + ")";
        });
    }
    EXPECT_EQ(r.edges, ref.edges) << what;
    EXPECT_GE(r.levels, 1) << what;
    am::graph::validator check(ctx, g);
    const am::graph::validation v = check.run(kernel_kind::cc, 0, r);
    EXPECT_TRUE(v.ok()) << what << ": " << v.first_error;
    EXPECT_EQ(v.edges, ref.edges) << what;
}

TEST_P(graph_whole, cc_matches_union_find) {
    ASSERT_EQ(run([](am::context& ctx) {
                  for (const graph_spec& spec :
                       {kronecker(10, 8), erdos_renyi(9, 1), kronecker(6, 2, 3)}) {
                      const reference ref = make_reference(spec);
                      const csr_graph g = am::graph::build_csr(ctx, spec);
                      check_cc(ctx, g, ref, describe(spec) + ", " + rank_count(ctx));
                  }
              }),
              0);
}

// A path 255 – 254 – … – 128 whose smallest id is at the far end, crossing every rank's
// share, beside two small components and isolated vertices: one round per hop.
TEST_P(graph_whole, cc_long_path) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const graph_spec spec = kronecker(8, 1);
                  std::vector<am::graph::edge> edges = {{3, 90, 1}, {90, 7, 1}, {20, 21, 1}};
                  for (std::uint32_t v = 255; v > 128; --v) edges.push_back({v, v - 1, 0.5f});
                  const reference ref =
                      make_reference(spec, edges.size(), [&](std::uint64_t i) { return edges[i]; });
                  const csr_graph g = csr_from_edges(ctx, spec, edges);
                  check_cc(ctx, g, ref, "hand-made path, " + rank_count(ctx));
              }),
              0);
}

void check_pagerank(am::context& ctx, const graph_spec& spec, double damping) {
    const std::string what =
        describe(spec) + ", damping " + std::to_string(damping) + ", " + rank_count(ctx);
    const reference ref = make_reference(spec);
    const csr_graph g = am::graph::build_csr(ctx, spec);
    const kernel_options opt{.damping = damping, .tolerance = 1e-9};
    am::graph::pagerank_kernel pr(ctx, g, opt);
    search_result r;
    pr.run(r);
    ASSERT_EQ(r.score.size(), g.local_n) << what;
    const std::vector<double> expect = reference_pagerank(ref, damping);
    const gathered all = gather_values(ctx, g, r);
    double distance = 0, sum = 0;
    for (std::uint32_t v = 0; v < ref.n; ++v) {
        distance += std::fabs(all.score[v] - expect[v]);
        sum += all.score[v];
    }
    // Within the tolerance of the fixed point: ‖x − x*‖ ≤ ‖x − T(x)‖ / (1 − d).
    EXPECT_LT(distance, 1e-9 / (1 - damping)) << what;
    EXPECT_NEAR(sum, 1.0, 1e-9) << what;
    EXPECT_GE(r.levels, 2) << what;
    EXPECT_EQ(r.edges, ref.edges * static_cast<std::uint64_t>(r.levels)) << what;
    am::graph::validator check(ctx, g, opt);
    const am::graph::validation v = check.run(kernel_kind::pagerank, 0, r);
    EXPECT_TRUE(v.ok()) << what << ": " << v.first_error;
}

TEST_P(graph_whole, pagerank_matches_power_iteration) {
    ASSERT_EQ(run([](am::context& ctx) {
                  check_pagerank(ctx, kronecker(10, 8), 0.85);
                  check_pagerank(ctx, erdos_renyi(8, 1), 0.5);  // many vertices without edges
              }),
              0);
}

/// Runs the validator on `r` changed by `mutate` (on the owner of the vertex it names) and
/// expects an error whose text contains `expect` on some rank.
template <class F>
void expect_caught(am::context& ctx, am::graph::validator& check, kernel_kind kind, search_result r,
                   F&& mutate, const std::string& expect) {
    mutate(r);
    const am::graph::validation v = check.run(kind, 0, r);
    EXPECT_GT(v.errors, 0U) << to_string(kind) << ": not caught: " << expect;
    am::graph::reductions red(ctx);
    const bool named = v.first_error.find(expect) != std::string::npos;
    EXPECT_GT(red.sum(named ? 1 : 0), 0U)
        << to_string(kind) << ": no rank's first error names \"" << expect << "\"";
}

TEST_P(graph_whole, validator_catches_mutations) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const graph_spec spec = kronecker(9, 8);
            const reference ref = make_reference(spec);
            const csr_graph g = am::graph::build_csr(ctx, spec);
            const std::vector<std::uint32_t> label = reference_components(ref);
            am::graph::validator check(ctx, g);
            search_result good;
            am::graph::cc_kernel(ctx, g).run(good);
            // Vertices of the giant component (label 0 or the smallest) with edges.
            const std::uint32_t giant = label[reference_roots(ref, 1).front()];
            std::vector<std::uint32_t> members;
            for (std::uint32_t v = 0; v < ref.n; ++v) {
                if (label[v] == giant && v != giant && ref.degree(v) > 0) members.push_back(v);
            }
            ASSERT_GE(members.size(), 2U);
            std::uint32_t isolated = 0;
            while (ref.degree(isolated) != 0) ++isolated;
            const std::uint32_t a = members.back();
            auto set = [&](search_result& r, std::uint32_t v, auto&& f) {
                if (g.owns(v)) f(r, v - g.first);
            };
            // Another component's label: an edge joins two labels.
            expect_caught(
                ctx, check, kernel_kind::cc, good,
                [&](search_result& r) {
                    set(r, a,
                        [&](search_result& x, std::uint32_t l) { x.component[l] = isolated; });
                },
                "joins labels");
            // A label larger than the vertex id.
            expect_caught(
                ctx, check, kernel_kind::cc, good,
                [&](search_result& r) {
                    set(r, isolated,
                        [&](search_result& x, std::uint32_t l) { x.component[l] = isolated + 1; });
                },
                "larger than its id");
            // A parent that is not a neighbour (the isolated vertex).
            expect_caught(
                ctx, check, kernel_kind::cc, good,
                [&](search_result& r) {
                    set(r, a, [&](search_result& x, std::uint32_t l) { x.pred[l] = isolated; });
                },
                "no edge from its parent");
            // A cycle of two neighbours: a ↔ one of its neighbours.
            const std::uint32_t b = ref.neighbours(a).front().target;
            expect_caught(
                ctx, check, kernel_kind::cc, good,
                [&](search_result& r) {
                    set(r, a, [&](search_result& x, std::uint32_t l) { x.pred[l] = b; });
                    set(r, b, [&](search_result& x, std::uint32_t l) { x.pred[l] = a; });
                },
                "do not lead to the root");

            const kernel_options opt{.tolerance = 1e-8};
            am::graph::validator pcheck(ctx, g, opt);
            search_result scores;
            am::graph::pagerank_kernel(ctx, g, opt).run(scores);
            const am::graph::validation ok = pcheck.run(kernel_kind::pagerank, 0, scores);
            EXPECT_TRUE(ok.ok()) << ok.first_error;
            // One score moved to another vertex: still sums to 1, no longer a fixed point.
            expect_caught(
                ctx, check, kernel_kind::pagerank, scores,
                [&](search_result& r) {
                    set(r, a, [&](search_result& x, std::uint32_t l) { x.score[l] += 1e-4; });
                    set(r, b, [&](search_result& x, std::uint32_t l) { x.score[l] -= 1e-4; });
                },
                "one more iteration changes the scores");
            expect_caught(
                ctx, check, kernel_kind::pagerank, scores,
                [&](search_result& r) {
                    set(r, a, [&](search_result& x, std::uint32_t l) { x.score[l] += 0.01; });
                },
                "the scores sum to");
        }),
        0);
}

TEST_P(graph_whole, pagerank_rejects_bad_options) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const csr_graph g = am::graph::build_csr(ctx, kronecker(6, 4));
                  const std::string rank = "rank " + std::to_string(ctx.rank());
                  for (const kernel_options& bad :
                       {kernel_options{.damping = 1.0}, kernel_options{.damping = -0.1},
                        kernel_options{.tolerance = 0}, kernel_options{.max_iterations = 0}}) {
                      try {
                          am::graph::pagerank_kernel pr(ctx, g, bad);
                          ADD_FAILURE() << "accepted a bad option";
                      } catch (const std::invalid_argument& e) {
                          EXPECT_NE(std::string(e.what()).find(rank), std::string::npos)
                              << e.what();
                      }
                  }
              }),
              0);
}

AM_INSTANTIATE(graph_whole, graph_params_small());

}  // namespace
