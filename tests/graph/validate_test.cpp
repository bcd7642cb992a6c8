// SPDX-License-Identifier: MIT
// validator::run accepts correct BFS, SSSP and exploration results (0 errors, the component's
// edges recounted) and catches every single mutation of one: a predecessor out of range, a
// cycle, a parent that is not a neighbour, a second vertex that is its own parent, an
// unreached vertex next to a reached one, the root not its own parent, an SSSP distance off by
// more than the tolerance or a parent edge that is not tight, a BFS level inconsistency
// (pred two levels up, or a neighbour on the same level), a wrong edge count. Where the
// mutation breaks one rule only, some rank's first error must name that rule. The vertices to
// mutate are chosen from the gathered result, identically on every rank; only the owner of a
// vertex changes it.
#include "graph_support.hpp"

#include <gtest/gtest.h>

namespace {

using namespace graph_test;
using am::graph::kernel_kind;
using am_test::spmd_test;

class graph_validate : public spmd_test {};

/// A correct result of one kernel and what the mutations need to know about it.
struct fixture {
    am::context& ctx;
    const reference& ref;
    const csr_graph& g;
    am::graph::validator& check;
    am::graph::reductions& red;
    kernel_kind kind;
    std::uint32_t root;
    search_result good;
    global_result all;                ///< `good` on every vertex
    std::vector<std::int32_t> level;  ///< reference BFS levels
    std::vector<std::uint32_t> children;

    void set_pred(search_result& r, std::uint32_t v, std::int64_t p) const {
        if (g.owns(v)) r.pred[v - g.first] = p;
    }
    void set_dist(search_result& r, std::uint32_t v, float d) const {
        if (g.owns(v) && !r.dist.empty()) r.dist[v - g.first] = d;
    }
    [[nodiscard]] bool reached(std::uint32_t v) const { return all.pred[v] >= 0; }
    [[nodiscard]] std::uint32_t pred(std::uint32_t v) const {
        return static_cast<std::uint32_t>(all.pred[v]);
    }
    [[nodiscard]] std::uint32_t tree_depth(std::uint32_t v) const {
        std::uint32_t d = 0;
        for (; v != root && all.pred[v] >= 0 && d <= ref.n; v = pred(v)) ++d;
        return d;
    }

    /// The first reached vertex other than the root without children in the result's tree
    /// for which `also` holds.
    template <class F>
    std::uint32_t leaf(F&& also) const {
        for (std::uint32_t v = 0; v < ref.n; ++v) {
            if (v != root && reached(v) && children[v] == 0 && also(v)) return v;
        }
        ADD_FAILURE() << to_string(kind) << ": no leaf with the property the mutation needs";
        return root;
    }
    [[nodiscard]] std::uint32_t leaf() const {
        return leaf([](std::uint32_t) { return true; });
    }

    /// Validates `bad` and expects errors, and when `rule` is given, some rank's first error
    /// containing it. Collective.
    void expect_caught(const std::string& mutation, const search_result& bad,
                       const char* rule = nullptr) {
        const std::string what = std::string(to_string(kind)) + ", root " + std::to_string(root) +
                                 ", " + std::to_string(ctx.size()) + " ranks: " + mutation;
        const am::graph::validation v = check.run(kind, root, bad);
        EXPECT_GT(v.errors, 0u) << what << ": not caught";
        EXPECT_FALSE(v.ok()) << what;
        if (rule != nullptr) {
            const std::uint64_t named = red.sum(am_test::contains(v.first_error, rule) ? 1 : 0);
            EXPECT_GT(named, 0u) << what << ": no rank's first error says \"" << rule
                                 << "\"; this rank's: \"" << v.first_error << "\"";
        }
    }
};

/// Mutations every kernel's validation must catch.
void common_mutations(fixture& f) {
    const std::uint32_t n = f.ref.n;
    const std::uint32_t v = f.leaf();
    for (const std::int64_t p : {std::int64_t{n}, std::int64_t{-2}, std::int64_t{n} + 12345,
                                 (std::int64_t{1} << 32) + v}) {
        search_result bad = f.good;
        f.set_pred(bad, v, p);
        f.expect_caught("predecessor " + std::to_string(p) + " of vertex " + std::to_string(v), bad,
                        "out of range");
    }
    {  // a 2-cycle of neighbours: a leaf and one of its reached neighbours other than the root
        const std::uint32_t a = f.leaf([&](std::uint32_t x) {
            for (const adjacency& e : f.ref.neighbours(x)) {
                if (e.target != f.root && f.reached(e.target)) return true;
            }
            return false;
        });
        std::uint32_t b = a;
        for (const adjacency& e : f.ref.neighbours(a)) {
            if (e.target != f.root && f.reached(e.target)) b = e.target;
        }
        search_result bad = f.good;
        f.set_pred(bad, a, b);
        f.set_pred(bad, b, a);
        f.expect_caught("cycle " + std::to_string(a) + " <-> " + std::to_string(b), bad,
                        f.kind == kernel_kind::explore ? "do not lead to the root" : nullptr);
    }
    {  // a leaf two BFS levels or more from the root hung directly below the root
        const std::uint32_t x = f.leaf([&](std::uint32_t y) { return f.level[y] >= 2; });
        search_result bad = f.good;
        f.set_pred(bad, x, f.root);
        f.expect_caught(
            "vertex " + std::to_string(x) + " with the root (not a neighbour) as parent", bad,
            f.kind == kernel_kind::explore ? "no edge from its parent" : nullptr);
    }
    {  // a second vertex that is its own parent
        search_result bad = f.good;
        f.set_pred(bad, v, v);
        f.expect_caught("vertex " + std::to_string(v) + " its own parent", bad,
                        f.kind == kernel_kind::explore ? "no edge from its parent" : nullptr);
    }
    {  // a leaf left unreached, its neighbours reached; the edge count adjusted to the recount
        search_result bad = f.good;
        f.set_pred(bad, v, -1);
        f.set_dist(bad, v, inf);
        std::uint64_t degrees = 0;
        for (std::uint32_t x = 0; x < n; ++x) {
            if (f.reached(x) && x != v) degrees += f.ref.degree(x);
        }
        bad.edges = degrees / 2;
        f.expect_caught("vertex " + std::to_string(v) + " unreached", bad,
                        "joins a reached and an unreached vertex");
    }
    {
        search_result bad = f.good;
        f.set_pred(bad, f.root, -1);
        f.expect_caught("root unreached", bad);
    }
    {
        search_result bad = f.good;
        f.set_pred(bad, f.root, f.ref.neighbours(f.root)[0].target);
        f.expect_caught("root's parent a neighbour", bad);
    }
    for (const std::int64_t delta : {1, -1}) {
        search_result bad = f.good;
        bad.edges = static_cast<std::uint64_t>(static_cast<std::int64_t>(bad.edges) + delta);
        f.expect_caught("edge count off by " + std::to_string(delta), bad,
                        "edges in the component");
    }
}

void bfs_mutations(fixture& f) {
    {  // pred two levels up: the grandparent
        const std::uint32_t v = f.leaf([&](std::uint32_t x) { return f.tree_depth(x) >= 2; });
        search_result bad = f.good;
        f.set_pred(bad, v, f.pred(f.pred(v)));
        f.expect_caught("vertex " + std::to_string(v) + " with its grandparent as parent", bad);
    }
    {  // pred a neighbour on the same level: v one level too deep, next to its true parent
        const std::uint32_t v = f.leaf([&](std::uint32_t x) {
            for (const adjacency& e : f.ref.neighbours(x)) {
                if (f.level[e.target] == f.level[x]) return true;
            }
            return false;
        });
        std::uint32_t w = v;
        for (const adjacency& e : f.ref.neighbours(v)) {
            if (f.level[e.target] == f.level[v]) w = e.target;
        }
        search_result bad = f.good;
        f.set_pred(bad, v, w);
        f.expect_caught(
            "vertex " + std::to_string(v) + " below its same-level neighbour " + std::to_string(w),
            bad, "differ by more than the weight");
    }
}

void sssp_mutations(fixture& f) {
    const std::uint32_t v = f.leaf();
    const float d = f.all.dist[v];
    for (const float changed : {d + 1e-3f + d * 1e-3f, d - 1e-3f - d * 1e-3f, d * 1.5f + 0.01f}) {
        if (changed < 0) continue;
        search_result bad = f.good;
        f.set_dist(bad, v, changed);
        f.expect_caught("distance of vertex " + std::to_string(v) + " " + std::to_string(d) +
                            " -> " + std::to_string(changed),
                        bad);
    }
    {
        search_result bad = f.good;
        f.set_dist(bad, f.root, 0.25f);
        f.expect_caught("root at distance 0.25", bad);
    }
    {  // a leaf whose parent becomes a reached neighbour with no tight edge to it
        auto not_tight = [&](std::uint32_t x, std::uint32_t u) {
            if (u == f.pred(x) || u == x || !f.reached(u)) return false;
            for (const adjacency& e : f.ref.neighbours(x)) {
                if (e.target == u && f.all.dist[u] + e.w == f.all.dist[x]) return false;
            }
            return true;
        };
        const std::uint32_t x = f.leaf([&](std::uint32_t y) {
            for (const adjacency& e : f.ref.neighbours(y)) {
                if (not_tight(y, e.target)) return true;
            }
            return false;
        });
        std::uint32_t u = x;
        for (const adjacency& e : f.ref.neighbours(x)) {
            if (not_tight(x, e.target)) u = e.target;
        }
        search_result bad = f.good;
        f.set_pred(bad, x, u);
        f.expect_caught("vertex " + std::to_string(x) + " below neighbour " + std::to_string(u) +
                            " without a tight edge",
                        bad, "d(v) = d(parent) + w");
    }
}

void check_kind(am::context& ctx, const reference& ref, const csr_graph& g,
                am::graph::validator& check, am::graph::reductions& red, kernel_kind kind,
                std::uint32_t root) {
    fixture f{ctx, ref, g, check, red, kind, root, {}, {}, {}, {}};
    if (kind == kernel_kind::bfs) {
        am::graph::bfs_kernel k(ctx, g);
        k.run(root, f.good);
    } else if (kind == kernel_kind::sssp) {
        am::graph::sssp_kernel k(ctx, g);
        k.run(root, f.good);
    } else {
        am::graph::explore_kernel k(ctx, g);
        k.run(root, f.good);
    }
    f.all = gather(ctx, g, f.good);
    f.level = bfs_levels(ref, root);
    f.children.assign(ref.n, 0);
    for (std::uint32_t v = 0; v < ref.n; ++v) {
        if (f.all.pred[v] >= 0 && v != root) ++f.children[f.pred(v)];
    }
    const std::string what = std::string(to_string(kind)) + ", root " + std::to_string(root);
    const am::graph::validation ok = check.run(kind, root, f.good);
    EXPECT_EQ(ok.errors, 0u) << what << ": a correct result fails: " << ok.first_error;
    EXPECT_EQ(ok.edges, component_edges(ref, f.level)) << what;
    common_mutations(f);
    if (kind == kernel_kind::bfs) bfs_mutations(f);
    if (kind == kernel_kind::sssp) sssp_mutations(f);
    // The validator keeps no state from a failed run.
    EXPECT_EQ(check.run(kind, root, f.good).errors, 0u) << what << ": after the mutations";
}

TEST_P(graph_validate, catches_mutations) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const graph_spec spec = kronecker(9, 8);
                  const reference ref = make_reference(spec);
                  const csr_graph g = am::graph::build_csr(ctx, spec);
                  am::graph::reductions red(ctx);
                  am::graph::validator check(ctx, g);
                  const auto roots = am::graph::choose_roots(ctx, g, 2);
                  for (const std::uint32_t root : roots) {
                      for (const kernel_kind kind :
                           {kernel_kind::bfs, kernel_kind::sssp, kernel_kind::explore}) {
                          check_kind(ctx, ref, g, check, red, kind, root);
                      }
                  }
              }),
              0);
}

std::vector<am_test::spmd_param> validate_params() {
    return am_test::exact_params({1, 2, 3}, {2}, {2});
}

AM_INSTANTIATE(graph_validate, validate_params());

}  // namespace
