// SPDX-License-Identifier: MIT
// bfs_kernel against a sequential BFS: the levels derived from the predecessors equal the
// reference levels exactly, every predecessor is a tree edge of the reference graph one level
// up, the reached set and the component's edge count are exact — for Kronecker and ER graphs,
// several roots (also an isolated one), with direction optimisation off, on (defaults), forced
// bottom-up on every level, and alternating between the two directions (the defaults must
// switch to bottom-up on the Kronecker graph); on graphs smaller than 64 vertices per rank too.
// The same with 2 and 3 threads per rank (kernel_options::threads, config::thread_multiple),
// and the kernel's refusal of a bad thread count.
#include "graph_support.hpp"

#include <gtest/gtest.h>

namespace {

using namespace graph_test;
using am::graph::kernel_options;
using am_test::spmd_test;

class graph_bfs : public spmd_test {};

/// How many levels a variant must run bottom-up.
enum class bottom_up { any, none, every, some };

struct variant {
    const char* name;
    kernel_options opt;
    bottom_up expect;
};

std::vector<variant> variants() {
    return {
        {"direction-optimising (defaults)", kernel_options{}, bottom_up::any},
        {"top-down only", kernel_options{.direction_optimizing = false}, bottom_up::none},
        // α huge: switch to bottom-up as soon as the frontier has an edge; β huge: never back.
        {"bottom-up every level", kernel_options{.alpha = 1e30, .beta = 1e30}, bottom_up::every},
        // β = 1: back to top-down whenever the frontier is smaller than n, so the directions
        // alternate level by level.
        {"alternating", kernel_options{.alpha = 1e30, .beta = 1}, bottom_up::some},
    };
}

/// Checks a BFS from `root` on this rank's vertices (collective: gathers the result).
void check_bfs(am::context& ctx, const csr_graph& g, const reference& ref, std::uint32_t root,
               const search_result& r, const std::string& what) {
    const global_result all = gather(ctx, g, r);
    const std::vector<std::int32_t> level = bfs_levels(ref, root);
    const std::vector<std::int32_t> derived = depths_from_pred(all.pred);
    ASSERT_EQ(r.pred.size(), g.local_n) << what;
    EXPECT_TRUE(r.dist.empty()) << what;
    mismatches levels(what + ": levels from pred");
    mismatches tree(what + ": tree edges");
    for (std::uint32_t local = 0; local < g.local_n; ++local) {
        const std::uint32_t v = g.first + local;
        const std::int64_t p = r.pred[local];
        levels.check(derived[v] == level[v], [&] {
            return "vertex " + std::to_string(v) + ": level " + std::to_string(derived[v]) +
                   " from pred " + std::to_string(p) + ", reference " + std::to_string(level[v]);
        });
        if (v == root) {
            EXPECT_EQ(p, root) << what << ": the root is not its own parent";
        } else if (level[v] > 0) {
            tree.check(p >= 0 && p < ref.n && ref.adjacent(v, static_cast<std::uint32_t>(p)) &&
                           level[static_cast<std::size_t>(p)] == level[v] - 1,
                       [&] {
                           return "vertex " + std::to_string(v) + " at level " +
                                  std::to_string(level[v]) + ": pred " + std::to_string(p) +
                                  " is not a neighbour one level up";
                       });
        } else {
            tree.check(p == -1, [&] {
                return "unreachable vertex " + std::to_string(v) + " has pred " + std::to_string(p);
            });
        }
    }
    EXPECT_EQ(std::count(all.pred.begin(), all.pred.end(), -2), 0)
        << what << ": some vertices were owned by no rank";
    EXPECT_EQ(r.edges, component_edges(ref, level)) << what;
    EXPECT_EQ(r.levels, *std::max_element(level.begin(), level.end()) + 1) << what;
}

/// BFS from `root_count` chosen roots (and an isolated vertex) with every variant;
/// `defaults_go_bottom_up`: from a root in the giant component, the default options must
/// run some, not all, levels bottom-up.
/// `threads`: kernel_options::threads of every variant.
void check_variants(am::context& ctx, const graph_spec& spec, int root_count,
                    bool with_isolated_root, bool defaults_go_bottom_up = false, int threads = 1) {
    const reference ref = make_reference(spec);
    const csr_graph g = am::graph::build_csr(ctx, spec);
    std::vector<std::uint32_t> roots = am::graph::choose_roots(ctx, g, root_count);
    ASSERT_EQ(roots.size(), static_cast<std::size_t>(root_count));
    if (with_isolated_root) {
        for (std::uint32_t v = ref.n; v-- > 0;) {
            if (ref.degree(v) == 0) {
                roots.push_back(v);
                break;
            }
        }
    }
    for (variant var : variants()) {
        var.opt.threads = threads;
        am::graph::bfs_kernel bfs(ctx, g, var.opt);
        for (const std::uint32_t root : roots) {
            const std::string what =
                describe(spec) + ", " + var.name + search_name(ctx, root, threads);
            search_result r;
            r.dist.assign(3, 1.0f);  // a reused result: the kernel must reset it
            bfs.run(root, r);
            check_bfs(ctx, g, ref, root, r, what);
            EXPECT_LE(r.bottom_up_levels, r.levels) << what;
            const bool isolated = ref.degree(root) == 0;
            // In the giant component (not, e.g., a root whose only neighbour is a leaf).
            const bool giant = 2 * r.edges > ref.edges;
            switch (var.expect) {
                case bottom_up::any:
                    if (defaults_go_bottom_up && giant) {
                        EXPECT_GT(r.bottom_up_levels, 0) << what;
                        EXPECT_LT(r.bottom_up_levels, r.levels) << what;
                    }
                    break;
                case bottom_up::none:
                    EXPECT_EQ(r.bottom_up_levels, 0) << what;
                    break;
                case bottom_up::every:  // unless the root has no edge to look at
                    EXPECT_EQ(r.bottom_up_levels, isolated ? 0 : r.levels) << what;
                    break;
                case bottom_up::some:
                    if (!isolated) {
                        EXPECT_GT(r.bottom_up_levels, 0) << what;
                        EXPECT_LT(r.bottom_up_levels, r.levels) << what;
                    }
                    break;
            }
        }
    }
}

TEST_P(graph_bfs, kronecker) {
    ASSERT_EQ(run([](am::context& ctx) { check_variants(ctx, kronecker(10, 16), 3, true, true); }),
              0);
}

TEST_P(graph_bfs, erdos_renyi) {
    ASSERT_EQ(run([](am::context& ctx) { check_variants(ctx, erdos_renyi(9, 8), 3, false); }), 0);
}

// Fewer than 64 vertices per rank: trailing ranks own nothing, and the frontier bitmap has a
// single word (scale 5) or words of some ranks only.
TEST_P(graph_bfs, small_graphs) {
    ASSERT_EQ(run([](am::context& ctx) {
                  check_variants(ctx, kronecker(7, 8), 2, true);
                  check_variants(ctx, erdos_renyi(5, 2), 2, false);
                  check_variants(ctx, kronecker(8, 3, 11), 2, true);
              }),
              0);
}

AM_INSTANTIATE(graph_bfs, graph_params());

class graph_bfs_threads : public spmd_test {};

// Every variant (also bottom-up on every level, and alternating) with 2 and 3 threads per
// rank: the same exact checks as with one.
TEST_P(graph_bfs_threads, kronecker) {
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      for (const int threads : {2, 3}) {
                          check_variants(ctx, kronecker(10, 16), 2, true, true, threads);
                      }
                  },
                  thread_multiple),
              0);
}

TEST_P(graph_bfs_threads, erdos_renyi) {
    ASSERT_EQ(
        run([](am::context& ctx) { check_variants(ctx, erdos_renyi(9, 8), 2, false, false, 2); },
            thread_multiple),
        0);
}

// A thread count outside [1, 64], or above 1 on a single-threaded context, is refused by the
// constructor (collectively) before any search.
// Option checks do not depend on the transport: threads only.
class graph_bfs_thread_options : public spmd_test {};

TEST_P(graph_bfs_thread_options, rejects_bad_thread_counts) {
    ASSERT_EQ(run(thread_refusals_job<am::graph::bfs_kernel>("bfs_kernel")), 0);
}

AM_INSTANTIATE(graph_bfs_threads, thread_params());
AM_INSTANTIATE(graph_bfs_thread_options,
               (std::vector<am_test::spmd_param>{{am::transport_kind::threads, 1},
                                                 {am::transport_kind::threads, 2}}));

}  // namespace
