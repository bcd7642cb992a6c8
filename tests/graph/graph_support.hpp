// SPDX-License-Identifier: MIT
// Test support for apps/graph: independent sequential references computed from make_edge
// directly (the whole graph as one CSR, BFS levels, Dijkstra in float, Graph500 root choice),
// a gather of a distributed search result onto every rank (typed messages of the test's own),
// the transport/rank-count (and thread) combinations the graph tests run on, and a bounded failure
// reporter for per-vertex comparisons.
#pragma once

#include "support/spmd.hpp"

#include <graph/graph.hpp>

#include <am/typed.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace graph_test {

using am::graph::adjacency;
using am::graph::csr_graph;
using am::graph::graph_kind;
using am::graph::graph_spec;
using am::graph::search_result;

inline constexpr float inf = std::numeric_limits<float>::infinity();

inline graph_spec kronecker(int scale, int edgefactor, std::uint64_t seed = 0x5eed) {
    return graph_spec{graph_kind::kronecker, scale, edgefactor, seed};
}
inline graph_spec erdos_renyi(int scale, int edgefactor, std::uint64_t seed = 0x5eed) {
    return graph_spec{graph_kind::erdos_renyi, scale, edgefactor, seed};
}
inline std::string describe(const graph_spec& s) {
    return std::string(s.kind == graph_kind::kronecker ? "kronecker" : "erdos-renyi") + " scale " +
           std::to_string(s.scale) + " edgefactor " + std::to_string(s.edgefactor);
}

/// The whole graph of a spec, built sequentially: both directions of every edge, self-loops
/// dropped, duplicates kept, each list in edge-index order.
struct reference {
    graph_spec spec;
    std::uint32_t n = 0;
    std::vector<std::uint64_t> offsets;
    std::vector<adjacency> adj;
    std::uint64_t edges = 0;  ///< undirected edges without self-loops

    [[nodiscard]] std::span<const adjacency> neighbours(std::uint32_t v) const {
        return {adj.data() + offsets[v], adj.data() + offsets[v + 1]};
    }
    [[nodiscard]] std::uint64_t degree(std::uint32_t v) const {
        return offsets[v + 1] - offsets[v];
    }
    [[nodiscard]] bool adjacent(std::uint32_t u, std::uint32_t v) const {
        for (const adjacency& a : neighbours(u)) {
            if (a.target == v) return true;
        }
        return false;
    }
};

/// The reference of the graph whose edge i is `edge_at(i)`, i < m, on the vertices of `s`.
template <class F>
reference make_reference(const graph_spec& s, std::uint64_t m, F&& edge_at) {
    reference r;
    r.spec = s;
    r.n = static_cast<std::uint32_t>(am::graph::vertex_count(s));
    r.offsets.assign(std::size_t{r.n} + 1, 0);
    for (std::uint64_t i = 0; i < m; ++i) {
        const am::graph::edge e = edge_at(i);
        if (e.u == e.v) continue;
        ++r.offsets[e.u + 1];
        ++r.offsets[e.v + 1];
        ++r.edges;
    }
    for (std::uint32_t v = 0; v < r.n; ++v) r.offsets[v + 1] += r.offsets[v];
    r.adj.resize(r.offsets[r.n]);
    std::vector<std::uint64_t> cursor(r.offsets.begin(), r.offsets.end() - 1);
    for (std::uint64_t i = 0; i < m; ++i) {
        const am::graph::edge e = edge_at(i);
        if (e.u == e.v) continue;
        r.adj[cursor[e.u]++] = adjacency{e.v, e.w};
        r.adj[cursor[e.v]++] = adjacency{e.u, e.w};
    }
    return r;
}

inline reference make_reference(const graph_spec& s) {
    return make_reference(s, am::graph::edge_count(s),
                          [&s](std::uint64_t i) { return am::graph::make_edge(s, i); });
}

/// This rank's CSR of a hand-made graph on the 2^scale vertices of `s` (the kernels accept any
/// csr_graph): what build_csr would build if the generator drew `edges`. Not collective.
inline csr_graph csr_from_edges(const am::context& ctx, const graph_spec& s,
                                const std::vector<am::graph::edge>& edges) {
    csr_graph g;
    g.spec = s;
    g.part = am::graph::partition(am::graph::vertex_count(s), ctx.size());
    g.rank = ctx.rank();
    g.first = g.part.first(g.rank);
    g.local_n = g.part.count(g.rank);
    const reference all =
        make_reference(s, edges.size(), [&](std::uint64_t i) { return edges[i]; });
    g.offsets.assign(std::size_t{g.local_n} + 1, 0);
    for (std::uint32_t v = 0; v < g.local_n; ++v) {
        const auto list = all.neighbours(g.first + v);
        g.offsets[v + 1] = g.offsets[v] + list.size();
        g.adj.insert(g.adj.end(), list.begin(), list.end());
        std::sort(g.adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]), g.adj.end(),
                  [](const adjacency& a, const adjacency& b) { return a.w < b.w; });
    }
    g.global_edges = all.edges;
    return g;
}

/// Breadth-first levels from `root` (-1: unreached).
inline std::vector<std::int32_t> bfs_levels(const reference& g, std::uint32_t root) {
    std::vector<std::int32_t> level(g.n, -1);
    std::vector<std::uint32_t> queue{root};
    level[root] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
        const std::uint32_t u = queue[head];
        for (const adjacency& a : g.neighbours(u)) {
            if (level[a.target] >= 0) continue;
            level[a.target] = level[u] + 1;
            queue.push_back(a.target);
        }
    }
    return level;
}

/// Dijkstra with float distances and the kernel's additions fl(d(u) + w): the least fixed
/// point of d(v) = min over edges fl(d(u) + w), d(root) = 0 (+inf: unreached).
inline std::vector<float> dijkstra(const reference& g, std::uint32_t root) {
    std::vector<float> dist(g.n, inf);
    std::vector<char> done(g.n, 0);
    using item = std::pair<float, std::uint32_t>;
    std::priority_queue<item, std::vector<item>, std::greater<>> queue;
    dist[root] = 0.0f;
    queue.push({0.0f, root});
    while (!queue.empty()) {
        const auto [du, u] = queue.top();
        queue.pop();
        if (done[u] != 0) continue;
        done[u] = 1;
        for (const adjacency& a : g.neighbours(u)) {
            const float d = du + a.w;
            if (d < dist[a.target]) {
                dist[a.target] = d;
                queue.push({d, a.target});
            }
        }
    }
    return dist;
}

/// Undirected edges with both ends reached (`reached[v]`): half the degrees of reached vertices.
inline std::uint64_t component_edges(const reference& g, const std::vector<std::int32_t>& level) {
    std::uint64_t degrees = 0;
    for (std::uint32_t v = 0; v < g.n; ++v) {
        if (level[v] >= 0) degrees += g.degree(v);
    }
    return degrees / 2;
}

/// Graph500's root choice, sequentially: the first `count` distinct candidates of the spec's
/// root stream whose vertex has an edge.
inline std::vector<std::uint32_t> reference_roots(const reference& g, int count) {
    std::vector<std::uint32_t> roots;
    std::vector<char> seen(g.n, 0);
    for (std::uint64_t k = 0; roots.size() < static_cast<std::size_t>(count) && k < 64 * g.n; ++k) {
        const std::uint32_t c = am::graph::root_candidate(g.spec, k);
        if (seen[c] != 0 || g.degree(c) == 0) continue;
        seen[c] = 1;
        roots.push_back(c);
    }
    return roots;
}

/// A search result of all vertices, gathered on every rank.
struct global_result {
    std::vector<std::int64_t> pred;  ///< -2: no rank sent this vertex
    std::vector<float> dist;         ///< empty when the result has no distances
};

/// Gathers `r` (this rank's part of a search on `g`) from every rank onto every rank.
/// Collective. Uses its own message type, not the library's validator.
inline global_result gather(am::context& ctx, const csr_graph& g, const search_result& r) {
    struct record {
        std::uint32_t vertex;
        float dist;
        std::int64_t pred;
    };
    global_result out;
    const std::uint64_t n = g.part.n();
    out.pred.assign(n, -2);
    const bool with_dist = !r.dist.empty();
    // Every rank must agree whether distances travel: they do when any rank has them.
    am::epoch probe(ctx, {.depth = 0});
    const bool any_dist = probe.end(with_dist ? 1 : 0) > 0;
    if (any_dist) out.dist.assign(n, std::numeric_limits<float>::quiet_NaN());
    auto store = [&](const record& x) {
        if (x.vertex >= n) {
            ADD_FAILURE() << "gather: vertex " << x.vertex << " out of range";
            return;
        }
        out.pred[x.vertex] = x.pred;
        if (any_dist) out.dist[x.vertex] = x.dist;
    };
    am::message_type<record> msg(
        ctx, [&](const record& x) { store(x); }, "graph_test.gather");
    auto sender = am::coalesce(msg);
    {
        am::epoch ep(ctx, {.depth = 0});
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            const record x{g.first + v, r.dist.empty() ? 0.0f : r.dist[v], r.pred[v]};
            store(x);
            for (int dest = 0; dest < ctx.size(); ++dest) {
                if (dest != ctx.rank()) sender.send(x, dest);
            }
        }
        sender.flush();
        ep.end();
    }
    return out;
}

/// Tree depths from the predecessors (-1: unreached; -2: the chain does not reach a vertex
/// that is its own parent, i.e. a cycle, a value out of range or an unreached ancestor).
inline std::vector<std::int32_t> depths_from_pred(const std::vector<std::int64_t>& pred) {
    const std::size_t n = pred.size();
    std::vector<std::int32_t> depth(n, -3);  // -3: not computed yet
    std::vector<std::size_t> path;
    for (std::size_t v = 0; v < n; ++v) {
        if (depth[v] != -3) continue;
        path.clear();
        std::size_t x = v;
        std::int32_t base = -3;
        for (;;) {
            if (depth[x] != -3) {
                base = depth[x];
                break;
            }
            const std::int64_t p = pred[x];
            if (p == -1) {
                depth[x] = -1;
                base = path.empty() ? -1 : -2;
                break;
            }
            if (p < 0 || static_cast<std::uint64_t>(p) >= n || path.size() > n) {
                base = -2;
                path.push_back(x);
                break;
            }
            path.push_back(x);
            if (static_cast<std::size_t>(p) == x) {
                depth[x] = 0;
                path.pop_back();
                base = 0;
                break;
            }
            x = static_cast<std::size_t>(p);
        }
        for (auto it = path.rbegin(); it != path.rend(); ++it) {
            if (base < 0) {
                depth[*it] = -2;
            } else {
                depth[*it] = ++base;
            }
        }
    }
    return depth;
}

/// Counts failures of one per-vertex comparison and reports the first few (a broken kernel
/// would otherwise print thousands of lines per rank).
class mismatches {
  public:
    explicit mismatches(std::string what) : _what(std::move(what)) {}
    mismatches(const mismatches&) = delete;
    mismatches& operator=(const mismatches&) = delete;
    ~mismatches() {
        if (_count > shown) {
            ADD_FAILURE() << _what << ": " << _count << " mismatches in all (first " << shown
                          << " shown)";
        }
    }
    /// Records a failure unless `ok`; `detail` is called for the first few only.
    void check(bool ok, const std::function<std::string()>& detail) {
        if (ok) return;
        if (++_count <= shown) ADD_FAILURE() << _what << ": " << detail();
    }
    [[nodiscard]] std::uint64_t count() const noexcept { return _count; }

  private:
    static constexpr std::uint64_t shown = 5;
    std::string _what;
    std::uint64_t _count = 0;
};

/// The combinations the graph tests run on: threads at 1, 2, 3 and 4 ranks (3: not a power of
/// two), shm at 2, and with MPI, every message through MPI at 2 and 4 processes.
inline std::vector<am_test::spmd_param> graph_params(bool with_np4_mpi = true) {
    if (!with_np4_mpi) return am_test::exact_params({1, 2, 3, 4}, {2}, {2});
    return am_test::exact_params({1, 2, 3, 4}, {2}, {2, 4});
}

/// The combinations the tests of several handler threads per rank run on (with
/// `thread_multiple`): threads at 1 and 2 ranks, shm at 2, and MPI at 2 processes.
inline std::vector<am_test::spmd_param> thread_params() {
    return am_test::exact_params({1, 2}, {2}, {2});
}

/// Configures a context for several handler threads (kernel_options::threads > 1).
inline void thread_multiple(am::config& cfg) {
    cfg.thread_multiple = true;
}

/// A kernel's constructor refuses `threads` 0 and 65 naming `name` (e.g. "sssp_kernel") and
/// the rank, and 2 on a context without `thread_multiple`, naming that (collective).
template <class Kernel>
void check_thread_refusals(am::context& ctx, const std::string& name) {
    const csr_graph g = am::graph::build_csr(ctx, kronecker(6, 4));
    const auto refused = [&](int threads, const std::string& text) {
        try {
            Kernel k(ctx, g, am::graph::kernel_options{.threads = threads});
            ADD_FAILURE() << name << ": threads = " << threads << " was accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
        }
    };
    for (const int bad : {0, 65}) refused(bad, name + ": rank " + std::to_string(ctx.rank()));
    refused(2, "thread_multiple");
}

/// ", root R, N ranks × T threads": how a check names one search of a job.
inline std::string search_name(const am::context& ctx, std::uint32_t root, int threads) {
    return ", root " + std::to_string(root) + ", " + std::to_string(ctx.size()) + " ranks × " +
           std::to_string(threads) + " threads";
}

/// The rank function of check_thread_refusals<Kernel>(ctx, name).
template <class Kernel>
am_test::rank_fn thread_refusals_job(const std::string& name) {
    return [name](am::context& ctx) { check_thread_refusals<Kernel>(ctx, name); };
}

/// A smaller set for the more expensive or less transport-sensitive tests.
inline std::vector<am_test::spmd_param> graph_params_small() {
    return am_test::exact_params({1, 3}, {2}, {2});
}

}  // namespace graph_test
