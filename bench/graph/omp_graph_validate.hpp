// SPDX-License-Identifier: MIT
/// @file
/// omp_graph_ref's validation of a BFS or SSSP result (outside the timed region): the
/// Graph500 rules, at small scales also against a sequential BFS / Dijkstra, and the damage
/// that --corrupt does to show that the rules catch it. Header-only, included by
/// omp_graph_ref.cpp alone.
#pragma once

#include "omp_graph_search.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace am::bench::omp_graph {

/// The first rule a result breaks, and where.
struct failure {
    std::string rule;
    std::uint64_t vertex;
};
using verdict = std::optional<failure>;

/// The smallest vertex for which `ok` is false (no_bin if none), in parallel.
template <class Ok>
std::uint64_t first_violation(std::uint64_t n, Ok&& ok) {
    std::uint64_t bad = no_bin;
#pragma omp parallel for schedule(dynamic, 1024) reduction(min : bad)
    for (std::uint64_t v = 0; v < n; ++v) {
        if (v < bad && !ok(v)) bad = v;
    }
    return bad;
}

/// Checks the rules in order; the first broken one wins.
inline verdict check_rules(
    std::uint64_t n,
    std::initializer_list<std::pair<const char*, std::function<bool(std::uint64_t)>>> rules) {
    for (const auto& [rule, ok] : rules) {
        const std::uint64_t v = first_violation(n, ok);
        if (v != no_bin) return failure{rule, v};
    }
    return std::nullopt;
}

/// Depth of every reached vertex in the parent tree (-1: unreached), or the vertex whose
/// parent chain does not end at the root (an unreached parent or a cycle).
inline std::variant<std::vector<std::int64_t>, std::uint64_t> tree_depths(
    std::uint32_t root, const std::function<std::uint32_t(std::uint64_t)>& parent,
    std::uint64_t n) {
    std::vector<std::int64_t> depth(n, -1);
    depth[root] = 0;
    std::vector<std::uint64_t> chain;
    for (std::uint64_t v = 0; v < n; ++v) {
        if (parent(v) == no_vertex || depth[v] >= 0) continue;
        chain.clear();
        std::uint64_t x = v;
        while (depth[x] < 0) {
            const std::uint32_t p = parent(x);
            if (p == no_vertex || p >= n || chain.size() > n) return v;
            chain.push_back(x);
            x = p;
        }
        for (std::int64_t d = depth[x]; !chain.empty(); chain.pop_back()) depth[chain.back()] = ++d;
    }
    return depth;
}

/// Levels of a sequential BFS from `root` (-1: unreached).
inline std::vector<std::int64_t> sequential_bfs(const csr& g, std::uint32_t root) {
    std::vector<std::int64_t> level(g.n, -1);
    std::vector<std::uint32_t> queue{root};
    level[root] = 0;
    for (std::size_t i = 0; i < queue.size(); ++i) {
        const std::uint32_t u = queue[i];
        for (std::uint64_t e = g.offsets[u]; e < g.offsets[u + 1]; ++e) {
            const std::uint32_t v = g.targets[e];
            if (level[v] >= 0) continue;
            level[v] = level[u] + 1;
            queue.push_back(v);
        }
    }
    return level;
}

/// Distances of a sequential Dijkstra from `root`, summed in float as the searches sum them.
inline std::vector<float> sequential_dijkstra(const csr& g, std::uint32_t root) {
    std::vector<float> dist(g.n, infinity);
    using entry = std::pair<float, std::uint32_t>;
    std::priority_queue<entry, std::vector<entry>, std::greater<>> heap;
    dist[root] = 0;
    heap.emplace(0.0f, root);
    while (!heap.empty()) {
        const auto [d, u] = heap.top();
        heap.pop();
        if (d > dist[u]) continue;
        for (std::uint64_t e = g.offsets[u]; e < g.offsets[u + 1]; ++e) {
            const adjacency a = g.adj[e];
            const float nd = d + a.w;
            if (!(nd < dist[a.target])) continue;
            dist[a.target] = nd;
            heap.emplace(nd, a.target);
        }
    }
    return dist;
}

/// Σ degree of the vertices `reached` / 2.
template <class Reached>
std::uint64_t reached_edges(const csr& g, Reached&& reached) {
    std::uint64_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (std::uint64_t v = 0; v < g.n; ++v) sum += reached(v) ? g.degree(v) : 0;
    return sum / 2;
}

inline verdict validate_bfs(const csr& g, std::uint32_t root, std::span<const std::uint32_t> parent,
                            const search_stats& s, bool sequential) {
    if (parent[root] != root) return failure{"the root is its own parent", root};
    auto tree = tree_depths(
        root, [&](std::uint64_t v) { return parent[v]; }, g.n);
    if (const auto* bad = std::get_if<std::uint64_t>(&tree)) {
        return failure{"every parent chain ends at the root", *bad};
    }
    const std::vector<std::int64_t>& depth = std::get<0>(tree);
    auto neighbours = [&](std::uint64_t v) {
        return std::span(g.targets).subspan(g.offsets[v], g.degree(v));
    };
    const std::vector<std::int64_t> levels =
        sequential ? sequential_bfs(g, root) : std::vector<std::int64_t>{};
    verdict v = check_rules(
        g.n, {{"a parent is a neighbour one level up",
               [&](std::uint64_t x) {
                   if (depth[x] <= 0) return true;
                   const std::uint32_t p = parent[x];
                   const auto adj = neighbours(x);
                   return depth[p] == depth[x] - 1 &&
                          std::find(adj.begin(), adj.end(), p) != adj.end();
               }},
              {"the neighbours of a reached vertex are reached, at most one level apart",
               [&](std::uint64_t x) {
                   if (depth[x] < 0) return true;
                   for (const std::uint32_t y : neighbours(x)) {
                       if (depth[y] < 0 || std::abs(depth[y] - depth[x]) > 1) return false;
                   }
                   return true;
               }},
              {"the levels of a sequential BFS",
               [&](std::uint64_t x) { return levels.empty() || levels[x] == depth[x]; }}});
    if (v) return v;
    if (reached_edges(g, [&](std::uint64_t x) { return depth[x] >= 0; }) != s.edges) {
        return failure{"the reached vertices' edges are the TEPS edge count", root};
    }
    return std::nullopt;
}

inline verdict validate_sssp(const csr& g, std::uint32_t root,
                             std::span<const std::uint64_t> labels, const search_stats& s,
                             bool sequential) {
    auto dist = [&](std::uint64_t v) { return dist_of(labels[v]); };
    auto parent = [&](std::uint64_t v) { return parent_of(labels[v]); };
    if (dist(root) != 0 || parent(root) != root) {
        return failure{"the root is at distance 0, its own parent", root};
    }
    if (const std::uint64_t bad = first_violation(
            g.n,
            [&](std::uint64_t v) { return (parent(v) == no_vertex) == (dist(v) == infinity); });
        bad != no_bin) {
        return failure{"a vertex has a parent if and only if its distance is finite", bad};
    }
    auto tree = tree_depths(root, parent, g.n);
    if (const auto* bad = std::get_if<std::uint64_t>(&tree)) {
        return failure{"every parent chain ends at the root", *bad};
    }
    auto edges = [&](std::uint64_t v) {
        return std::span(g.adj).subspan(g.offsets[v], g.degree(v));
    };
    const std::vector<float> exact =
        sequential ? sequential_dijkstra(g, root) : std::vector<float>{};
    verdict v =
        check_rules(g.n, {{"every edge (u, v, w) from a reached u has dist(v) <= dist(u) + w",
                           [&](std::uint64_t u) {
                               if (parent(u) == no_vertex) return true;
                               for (const adjacency& a : edges(u)) {
                                   if (!(dist(a.target) <= dist(u) + a.w)) return false;
                               }
                               return true;
                           }},
                          {"a parent p of v has an edge (p, v, w) with dist(v) == dist(p) + w",
                           [&](std::uint64_t x) {
                               if (x == root || parent(x) == no_vertex) return true;
                               const std::uint32_t p = parent(x);
                               for (const adjacency& a : edges(x)) {
                                   if (a.target == p && dist(x) == dist(p) + a.w) return true;
                               }
                               return false;
                           }},
                          {"the distances of a sequential Dijkstra",
                           [&](std::uint64_t x) { return exact.empty() || exact[x] == dist(x); }}});
    if (v) return v;
    if (reached_edges(g, [&](std::uint64_t x) { return parent(x) != no_vertex; }) != s.edges) {
        return failure{"the reached vertices' edges are the TEPS edge count", root};
    }
    return std::nullopt;
}

/// --corrupt: damages the result of a search the way a bug would (the last reached vertex
/// but the root: a BFS parent pointing to itself, an SSSP distance halved).
inline void corrupt(std::span<std::uint32_t> parent, std::uint32_t root) {
    for (std::uint64_t v = parent.size(); v-- > 0;) {
        if (v != root && parent[v] != no_vertex) {
            parent[v] = static_cast<std::uint32_t>(v);
            return;
        }
    }
}
inline void corrupt(std::span<std::uint64_t> labels, std::uint32_t root) {
    for (std::uint64_t v = labels.size(); v-- > 0;) {
        if (v != root && parent_of(labels[v]) != no_vertex) {
            labels[v] = pack(dist_of(labels[v]) / 2, parent_of(labels[v]));
            return;
        }
    }
}

}  // namespace am::bench::omp_graph
