// SPDX-License-Identifier: MIT
// The distributed CSR: partition, two-pass construction from the generator, roots, reductions.
#include <graph/graph.hpp>

#include <am/error.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace am::graph {

partition::partition(std::uint64_t n, int ranks) : _n(n), _ranks(ranks) {
    const std::uint64_t per = (n + static_cast<std::uint64_t>(ranks) - 1) / ranks;
    _chunk = std::max<std::uint64_t>(64, (per + 63) / 64 * 64);
    _magic = std::numeric_limits<std::uint64_t>::max() / _chunk + 1;
}

std::uint32_t partition::first(int rank) const noexcept {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(_n, _chunk * rank));
}

std::uint32_t partition::count(int rank) const noexcept {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(_n, _chunk * (rank + 1)) -
                                      first(rank));
}

namespace {

struct placed {
    std::uint32_t u;
    std::uint32_t v;
    float w;
};

/// Calls f(u, v, w) for both directions of every non-self-loop edge this rank generates.
template <class F>
void for_each_generated(const graph_spec& s, int rank, int ranks, F&& f) {
    const std::uint64_t end = part_begin(s, rank + 1, ranks);
    for (std::uint64_t i = part_begin(s, rank, ranks); i < end; ++i) {
        const edge e = make_edge(s, i);
        if (e.u == e.v) continue;
        f(e.u, e.v, e.w);
        f(e.v, e.u, e.w);
    }
}

void count_degrees(context& ctx, csr_graph& g) {
    auto& deg = g.offsets;
    message_type<std::uint32_t> msg(
        ctx, [&](const std::uint32_t& v) { ++deg[v - g.first]; }, "graph.degree");
    auto out = coalesce(msg);
    epoch ep(ctx, {.depth = 0});
    for_each_generated(g.spec, ctx.rank(), ctx.size(), [&](std::uint32_t u, std::uint32_t, float) {
        const int dest = g.part.owner(u);
        if (dest == g.rank) {
            ++deg[u - g.first];
        } else {
            out.send(u, dest);
        }
    });
    out.flush();
    ep.end();
}

/// Turns degrees into starting offsets: offsets[v] = start of v, offsets[local_n] = total.
void degrees_to_starts(csr_graph& g) {
    std::uint64_t sum = 0;
    for (auto& o : g.offsets) {
        const std::uint64_t d = o;
        o = sum;
        sum += d;
    }
}

/// Places every edge at its source's cursor (offsets[u]++): afterwards offsets[v] is the end
/// of v's list, which shifting right by one turns back into starts.
void place_edges(context& ctx, csr_graph& g) {
    auto place = [&g](std::uint32_t u, std::uint32_t v, float w) {
        g.adj[g.offsets[u - g.first]++] = adjacency{v, w};
    };
    message_type<placed> msg(
        ctx, [&](const placed& p) { place(p.u, p.v, p.w); }, "graph.edge");
    auto out = coalesce(msg);
    epoch ep(ctx, {.depth = 0});
    for_each_generated(g.spec, ctx.rank(), ctx.size(),
                       [&](std::uint32_t u, std::uint32_t v, float w) {
                           const int dest = g.part.owner(u);
                           if (dest == g.rank) {
                               place(u, v, w);
                           } else {
                               out.send(placed{u, v, w}, dest);
                           }
                       });
    out.flush();
    ep.end();
    for (std::uint32_t i = g.local_n; i > 0; --i) g.offsets[i] = g.offsets[i - 1];
    g.offsets[0] = 0;
}

void sort_by_weight(csr_graph& g) {
    for (std::uint32_t v = 0; v < g.local_n; ++v) {
        std::sort(g.adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                  g.adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]),
                  [](const adjacency& a, const adjacency& b) { return a.w < b.w; });
    }
}

}  // namespace

csr_graph build_csr(context& ctx, const graph_spec& spec) {
    check_spec(spec);
    csr_graph g;
    g.spec = spec;
    g.part = partition(vertex_count(spec), ctx.size());
    g.rank = ctx.rank();
    g.first = g.part.first(g.rank);
    g.local_n = g.part.count(g.rank);
    g.offsets.assign(std::size_t{g.local_n} + 1, 0);
    count_degrees(ctx, g);
    degrees_to_starts(g);
    g.adj.resize(g.offsets[g.local_n]);
    place_edges(ctx, g);
    sort_by_weight(g);
    reductions red(ctx);
    g.global_edges = red.sum(g.adj.size()) / 2;
    return g;
}

std::vector<std::uint32_t> choose_roots(context& ctx, const csr_graph& g, int count) {
    reductions red(ctx);
    std::vector<std::uint32_t> roots;
    const std::uint64_t n = vertex_count(g.spec);
    const std::uint64_t tries = std::max<std::uint64_t>(64 * n, 1 << 20);
    // Each candidate costs a collective: when fewer vertices than `count` have an edge, stop
    // once all of them are found instead of drawing all `tries` candidates.
    std::uint64_t with_edges = 0;
    for (std::uint32_t v = 0; v < g.local_n; ++v) with_edges += g.degree(v) > 0 ? 1 : 0;
    const std::uint64_t wanted = std::min<std::uint64_t>(
        static_cast<std::uint64_t>(std::max(count, 0)), red.sum(with_edges));
    for (std::uint64_t k = 0; k < tries && roots.size() < wanted; ++k) {
        const std::uint32_t c = root_candidate(g.spec, k);
        if (std::find(roots.begin(), roots.end(), c) != roots.end()) continue;
        const std::uint64_t mine = g.owns(c) && g.degree(c - g.first) > 0 ? 1 : 0;
        if (red.sum(mine) > 0) roots.push_back(c);
    }
    return roots;
}

reductions::reductions(context& ctx) : _world(coll::world(ctx)) {}

std::uint64_t reductions::sum(std::uint64_t v) {
    return coll::allreduce(_world, v, coll::sum{});
}

std::uint64_t reductions::min(std::uint64_t v) {
    return coll::allreduce(_world, v, coll::min{});
}

void reductions::sum(std::span<double> v) {
    coll::allreduce(_world, std::span<const double>(v), v, coll::sum{});
}

}  // namespace am::graph
