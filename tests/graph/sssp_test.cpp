// SPDX-License-Identifier: MIT
// sssp_kernel (Δ-stepping) against a sequential Dijkstra computed in float with the same
// additions fl(d(u) + w): with non-negative weights the least fixed point of
// d(v) = min fl(d(u) + w) is unique, so the distances must be equal exactly. Every reached
// vertex's predecessor is a neighbour with d(v) = fl(d(pred) + w) for one of their edges, the
// predecessors form a tree, unreached vertices have +inf and no predecessor, and `edges` is
// the component's edge count — for Δ in {0.01, 0.1, 0.5, 1, 10}, Kronecker and ER graphs,
// several roots (also an isolated one). The same with 2 and 3 threads per rank
// (kernel_options::threads, config::thread_multiple) on graphs large enough for every thread
// to own vertices, and the kernel's refusal of a bad thread count.
#include "graph_support.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace {

using namespace graph_test;
using am::graph::kernel_options;
using am_test::spmd_test;

class graph_sssp : public spmd_test {};

std::string show(float x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g (%a)", static_cast<double>(x), static_cast<double>(x));
    return buf;
}

/// Checks an SSSP from `root` on this rank's vertices (collective: gathers the result).
void check_sssp(am::context& ctx, const csr_graph& g, const reference& ref, std::uint32_t root,
                const search_result& r, const std::string& what) {
    const global_result all = gather(ctx, g, r);
    const std::vector<float> dist = dijkstra(ref, root);
    const std::vector<std::int32_t> depth = depths_from_pred(all.pred);
    ASSERT_EQ(r.pred.size(), g.local_n) << what;
    ASSERT_EQ(r.dist.size(), g.local_n) << what;
    ASSERT_EQ(all.dist.size(), ref.n) << what;
    mismatches distances(what + ": distances");
    mismatches parents(what + ": predecessors");
    std::vector<std::int32_t> reached(ref.n, -1);
    for (std::uint32_t v = 0; v < ref.n; ++v) reached[v] = dist[v] < inf ? 0 : -1;
    for (std::uint32_t local = 0; local < g.local_n; ++local) {
        const std::uint32_t v = g.first + local;
        const std::int64_t p = r.pred[local];
        distances.check(r.dist[local] == dist[v], [&] {
            return "vertex " + std::to_string(v) + ": " + show(r.dist[local]) + ", Dijkstra " +
                   show(dist[v]) + ", pred " + std::to_string(p);
        });
        if (v == root) {
            EXPECT_EQ(p, root) << what;
            continue;
        }
        if (dist[v] == inf) {
            parents.check(p == -1, [&] {
                return "unreachable vertex " + std::to_string(v) + " has pred " + std::to_string(p);
            });
            continue;
        }
        bool tight = false;
        if (p >= 0 && p < ref.n) {
            for (const adjacency& a : ref.neighbours(v)) {
                if (a.target == p && all.dist[static_cast<std::size_t>(p)] + a.w == r.dist[local]) {
                    tight = true;
                }
            }
        }
        parents.check(tight && depth[v] > 0, [&] {
            return "vertex " + std::to_string(v) + " at " + show(r.dist[local]) + ": pred " +
                   std::to_string(p) + " is not a neighbour with d(v) = d(pred) + w on a path " +
                   "to the root (tree depth " + std::to_string(depth[v]) + ")";
        });
    }
    EXPECT_EQ(r.edges, component_edges(ref, reached)) << what;
}

void check_deltas(am::context& ctx, const graph_spec& spec, int root_count,
                  const std::vector<float>& deltas, bool fusion = true, int threads = 1) {
    const reference ref = make_reference(spec);
    const csr_graph g = am::graph::build_csr(ctx, spec);
    std::vector<std::uint32_t> roots = am::graph::choose_roots(ctx, g, root_count);
    ASSERT_EQ(roots.size(), static_cast<std::size_t>(root_count));
    for (std::uint32_t v = 0; v < ref.n; ++v) {
        if (ref.degree(v) == 0) {
            roots.push_back(v);  // an isolated root: reaches itself only
            break;
        }
    }
    for (const float delta : deltas) {
        am::graph::sssp_kernel sssp(
            ctx, g, kernel_options{.delta = delta, .bucket_fusion = fusion, .threads = threads});
        if (delta != 0) {
            EXPECT_EQ(sssp.delta(), delta);
        }
        for (const std::uint32_t root : roots) {
            const std::string what = describe(spec) + ", delta " + std::to_string(sssp.delta()) +
                                     (fusion ? "" : ", no bucket fusion") +
                                     search_name(ctx, root, threads);
            search_result r;
            r.pred.assign(5, 7);  // a reused result: the kernel must reset it
            sssp.run(root, r);
            check_sssp(ctx, g, ref, root, r, what);
        }
    }
}

const std::vector<float> all_deltas = {0.01f, 0.1f, 0.5f, 1.0f, 10.0f};

TEST_P(graph_sssp, kronecker) {
    ASSERT_EQ(run([](am::context& ctx) {
                  check_deltas(ctx, kronecker(9, 8), 2, all_deltas);
                  check_deltas(ctx, kronecker(9, 8), 1, {0.02f, 0.1f}, false);
              }),
              0);
}

// Δ = 0: chosen from the graph, the same on every rank: 5 × mean weight / mean degree of the
// vertices with edges, recomputed here from the sequential reference.
TEST_P(graph_sssp, automatic_delta) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const graph_spec spec = kronecker(9, 8);
                  const reference ref = make_reference(spec);
                  const csr_graph g = am::graph::build_csr(ctx, spec);
                  double weights = 0, with_edges = 0;
                  for (const adjacency& a : ref.adj) weights += a.w;
                  for (std::uint32_t v = 0; v < ref.n; ++v) with_edges += ref.degree(v) > 0;
                  const double expect = am::graph::auto_delta_factor *
                                        (weights / static_cast<double>(ref.adj.size())) /
                                        (static_cast<double>(ref.adj.size()) / with_edges);
                  const am::graph::delta_choice c = am::graph::auto_delta(ctx, g);
                  EXPECT_NEAR(c.delta, expect, 1e-6 * expect);
                  am::graph::sssp_kernel sssp(ctx, g);
                  EXPECT_EQ(sssp.delta(), c.delta);
                  check_deltas(ctx, spec, 2, {0.0f});
              }),
              0);
}

TEST_P(graph_sssp, erdos_renyi) {
    ASSERT_EQ(run([](am::context& ctx) { check_deltas(ctx, erdos_renyi(8, 8), 2, all_deltas); }),
              0);
}

// Fewer than 64 vertices per rank (trailing ranks own nothing), sparse graphs with long paths.
TEST_P(graph_sssp, small_graphs) {
    ASSERT_EQ(run([](am::context& ctx) {
                  check_deltas(ctx, erdos_renyi(7, 1), 2, {0.05f, 0.3f});
                  check_deltas(ctx, kronecker(6, 4, 3), 1, {0.1f});
              }),
              0);
}

// Hand-made paths root – a – b – c whose edge a–b is heavy for a's bucket (w ≥ end of the
// bucket − d(a), so it is relaxed once, after the bucket's light rounds) while fl(d(a) + w), the
// distance of b, still falls into that same bucket by the kernel's bucket_of(): at Δ = 0.01,
// 5·Δ rounds to 0x1.999998p-5 and 0x1.999998p-5 · 100 rounds to 4.99999952, bucket 4; at Δ = 0.1
// fl(0.1 − d(a)) rounds down. b must still get its distance and pass it on to c (Dijkstra:
// d(c) = fl(d(b) + 0.5)). The vertices lie on different ranks where there are several.
TEST_P(graph_sssp, heavy_edge_into_current_bucket) {
    ASSERT_EQ(run([](am::context& ctx) {
                  struct path_case {
                      float delta, w_root_a, w_a_b;
                  };
                  for (const path_case& c : {path_case{0.01f, 0x1.901018p-5f, 0x1.313p-10f},
                                             path_case{0.1f, 0x1.11c032p-5f, 0x1.10b98p-4f}}) {
                      const graph_spec spec = kronecker(8, 1);
                      const std::vector<am::graph::edge> edges = {
                          {0, 70, c.w_root_a}, {70, 140, c.w_a_b}, {140, 200, 0.5f}, {5, 6, 0.25f}};
                      const reference ref = make_reference(
                          spec, edges.size(), [&](std::uint64_t i) { return edges[i]; });
                      const csr_graph g = csr_from_edges(ctx, spec, edges);
                      am::graph::sssp_kernel sssp(ctx, g, kernel_options{.delta = c.delta});
                      search_result r;
                      sssp.run(0, r);
                      check_sssp(ctx, g, ref, 0, r,
                                 "hand-made path, delta " + std::to_string(c.delta) + ", " +
                                     std::to_string(ctx.size()) + " ranks");
                  }
              }),
              0);
}

// A path of 1000 vertices with weights 0.125–0.875 at Δ = 0.2: 8 bucket queues, distances up
// to about 500, so the ring of queues wraps around some 300 times. Consecutive vertices of the
// path lie far apart, on different ranks and thread slices.
void check_long_path(am::context& ctx, int threads) {
    const graph_spec spec = kronecker(12, 1);
    std::vector<am::graph::edge> edges;
    const auto at = [](std::uint32_t k) { return (k * 2731U) % 4096U; };
    for (std::uint32_t i = 0; i < 1000; ++i) {
        edges.push_back({at(i), at(i + 1), static_cast<float>(i % 7 + 1) / 8});
    }
    const reference ref =
        make_reference(spec, edges.size(), [&](std::uint64_t i) { return edges[i]; });
    const csr_graph g = csr_from_edges(ctx, spec, edges);
    am::graph::sssp_kernel sssp(ctx, g, kernel_options{.delta = 0.2f, .threads = threads});
    search_result r;
    sssp.run(0, r);
    check_sssp(ctx, g, ref, 0, r, "long path, delta 0.2, " + std::to_string(threads) + " threads");
    EXPECT_GT(r.levels, 1000) << "the path should take over 500 buckets";
}

TEST_P(graph_sssp, long_path_wraps_the_bucket_ring) {
    ASSERT_EQ(run([](am::context& ctx) { check_long_path(ctx, 1); }), 0);
}

AM_INSTANTIATE(graph_sssp, graph_params());

class graph_sssp_threads : public spmd_test {};

// A thread owns slices of 512 of its rank's vertices: with 2^12 vertices every thread of 2
// owns some on up to 2 ranks (with 3, the third owns none and hands every relaxation over).
TEST_P(graph_sssp_threads, kronecker) {
    ASSERT_EQ(
        run(
            [](am::context& ctx) {
                for (const int threads : {2, 3}) {
                    check_deltas(ctx, kronecker(12, 8), 2, {0.02f, 0.5f, 0.0f}, true, threads);
                }
                check_deltas(ctx, kronecker(12, 8), 1, {0.1f}, false, 2);
            },
            thread_multiple),
        0);
}

TEST_P(graph_sssp_threads, long_path_wraps_the_bucket_ring) {
    ASSERT_EQ(run([](am::context& ctx) { check_long_path(ctx, 2); }, thread_multiple), 0);
}

TEST_P(graph_sssp_threads, erdos_renyi) {
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      check_deltas(ctx, erdos_renyi(12, 4), 2, {0.05f, 1.0f}, true, 2);
                      // Fewer vertices than a slice: one thread owns them all.
                      check_deltas(ctx, erdos_renyi(8, 8), 1, {0.1f}, true, 2);
                  },
                  thread_multiple),
              0);
}

// The bucket queues are a ring of ⌈max weight / Δ⌉ + 3 queues (rounded up to a power of two),
// at most 2^20: a heavier edge for the Δ is refused by the constructor on every rank, naming
// the rank, the weight, the Δ and the limit, with one thread and with two.
class graph_sssp_thread_errors : public spmd_test {};

TEST_P(graph_sssp_thread_errors, rejects_too_many_buckets) {
    ASSERT_EQ(
        run(
            [](am::context& ctx) {
                const graph_spec spec = kronecker(12, 1);
                const std::vector<am::graph::edge> edges = {{0, 3000, 2.5f}, {3000, 3001, 0.5f}};
                const csr_graph g = csr_from_edges(ctx, spec, edges);
                for (const int threads : {1, 2}) {
                    try {
                        am::graph::sssp_kernel sssp(
                            ctx, g, kernel_options{.delta = 1e-6f, .threads = threads});
                        ADD_FAILURE() << "2.5 / 1e-6 buckets were accepted";
                    } catch (const std::invalid_argument& e) {
                        const std::string what = e.what();
                        EXPECT_NE(what.find("sssp_kernel: rank " + std::to_string(ctx.rank()) +
                                            ": heaviest edge 2.5 / delta 1e-06"),
                                  std::string::npos)
                            << what;
                        EXPECT_NE(what.find("more than 2^20"), std::string::npos) << what;
                    }
                    // Within the limit (2^20 queues of 24 bytes) it runs, exactly.
                    am::graph::sssp_kernel sssp(
                        ctx, g, kernel_options{.delta = 2.5e-6f, .threads = threads});
                    search_result r;
                    sssp.run(0, r);
                    const reference ref = make_reference(spec, edges.size(),
                                                         [&](std::uint64_t i) { return edges[i]; });
                    check_sssp(ctx, g, ref, 0, r,
                               "delta 2.5e-6, " + std::to_string(threads) + " threads");
                }
            },
            thread_multiple),
        0);
}

// A thread count outside [1, 64], or above 1 on a single-threaded context, is refused by the
// constructor (collectively) before any search. Threads only: the checks do not depend on
// the transport.
class graph_sssp_thread_options : public spmd_test {};

TEST_P(graph_sssp_thread_options, rejects_bad_thread_counts) {
    ASSERT_EQ(run(thread_refusals_job<am::graph::sssp_kernel>("sssp_kernel")), 0);
}

// 3 ranks: 1408, 1408 and 1280 vertices of 2^12, so the second thread's slice is shorter
// than the first's (1024).
AM_INSTANTIATE(graph_sssp_threads, [] {
    std::vector<am_test::spmd_param> v = thread_params();
    v.push_back({am::transport_kind::threads, 3});
    return v;
}());
AM_INSTANTIATE(graph_sssp_thread_errors,
               (std::vector<am_test::spmd_param>{{am::transport_kind::threads, 1},
                                                 {am::transport_kind::threads, 2}}));
AM_INSTANTIATE(graph_sssp_thread_options,
               (std::vector<am_test::spmd_param>{{am::transport_kind::threads, 1},
                                                 {am::transport_kind::threads, 2}}));

}  // namespace
