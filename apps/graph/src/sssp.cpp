// SPDX-License-Identifier: MIT
// Δ-stepping single-source shortest paths on the typed layer.
#include "bitmap.hpp"

#include <graph/graph.hpp>

#include <algorithm>
#include <limits>

namespace am::graph {
namespace {

struct relax {
    std::uint32_t vertex;
    std::uint32_t parent;
    float dist;
};

constexpr std::uint64_t no_bucket = std::numeric_limits<std::uint64_t>::max();

}  // namespace

struct sssp_kernel::state {
    context& ctx;
    const csr_graph& g;
    kernel_options opt;
    float inv_delta;
    reductions red;
    search_result* out = nullptr;
    std::vector<std::vector<std::uint32_t>> buckets;
    std::vector<std::uint32_t> settled;  // vertices removed from the current bucket
    bitmap in_settled;
    bitmap done_in_round;  // processed in the current light round
    std::uint64_t reached_degrees = 0;
    message_type<relax> relax_msg;
    coalesced<relax> relaxes;

    state(context& c, const csr_graph& graph, kernel_options o)
        : ctx(c),
          g(graph),
          opt(o),
          inv_delta(1.0f / o.delta),
          red(c),
          in_settled(graph.local_n),
          done_in_round(graph.local_n),
          relax_msg(
              c, [this](const relax& r) { improve(r.vertex - g.first, r.dist, r.parent); },
              "sssp.relax"),
          relaxes(relax_msg) {}

    [[nodiscard]] std::uint64_t bucket_of(float d) const noexcept {
        return static_cast<std::uint64_t>(d * inv_delta);
    }

    void improve(std::uint32_t local, float d, std::uint32_t parent) {
        float& cur = out->dist[local];
        if (!(d < cur)) return;
        if (out->pred[local] < 0) reached_degrees += g.degree(local);
        cur = d;
        out->pred[local] = parent;
        const std::uint64_t b = bucket_of(d);
        if (b >= buckets.size()) buckets.resize(b + 1);
        buckets[b].push_back(local);
    }

    void relax_edge(const adjacency& a, float du, std::uint32_t parent) {
        const float d = du + a.w;
        const int dest = g.part.owner(a.target);
        if (dest == g.rank) {
            improve(a.target - g.first, d, parent);
        } else {
            relaxes.send(relax{a.target, parent, d}, dest);
        }
    }

    /// First heavy edge of `local`'s list (lists are sorted by weight).
    [[nodiscard]] std::uint64_t heavy_begin(std::uint32_t local) const noexcept {
        const auto list = g.neighbours(local);
        const auto it = std::partition_point(list.begin(), list.end(),
                                             [&](const adjacency& a) { return a.w < opt.delta; });
        return static_cast<std::uint64_t>(it - list.begin());
    }

    /// One round of light-edge relaxations from the vertices now in bucket `b`.
    void light_round(std::uint64_t b) {
        std::vector<std::uint32_t> round;
        round.swap(buckets[b]);
        epoch ep(ctx, {.depth = 0});
        for (const std::uint32_t u : round) {
            const float du = out->dist[u];
            if (bucket_of(du) != b || done_in_round.test_and_set(u)) continue;
            if (!in_settled.test_and_set(u)) settled.push_back(u);
            const std::uint32_t parent = g.first + u;
            for (const adjacency& a : g.neighbours(u)) {
                if (!(a.w < opt.delta)) break;
                relax_edge(a, du, parent);
            }
        }
        relaxes.flush();
        ep.end();
        out->messages += ep.stats().messages_sent;
        for (const std::uint32_t u : round) done_in_round.words()[u >> 6] = 0;
    }

    void heavy_round() {
        epoch ep(ctx, {.depth = 0});
        for (const std::uint32_t u : settled) {
            const float du = out->dist[u];
            const std::uint32_t parent = g.first + u;
            const auto list = g.neighbours(u);
            for (std::uint64_t i = heavy_begin(u); i < list.size(); ++i) {
                relax_edge(list[i], du, parent);
            }
            in_settled.words()[u >> 6] = 0;
        }
        relaxes.flush();
        ep.end();
        out->messages += ep.stats().messages_sent;
        settled.clear();
    }

    [[nodiscard]] std::uint64_t next_bucket(std::uint64_t after) const noexcept {
        for (std::uint64_t b = after; b < buckets.size(); ++b) {
            if (!buckets[b].empty()) return b;
        }
        return no_bucket;
    }

    void run(std::uint32_t root, search_result& result) {
        out = &result;
        result.pred.assign(g.local_n, -1);
        result.dist.assign(g.local_n, std::numeric_limits<float>::infinity());
        result.messages = 0;
        result.bottom_up_levels = 0;
        for (auto& b : buckets) b.clear();
        reached_degrees = 0;
        if (g.owns(root)) improve(root - g.first, 0.0f, root);
        int rounds = 0;
        for (std::uint64_t b = red.min(next_bucket(0)); b != no_bucket;
             b = red.min(next_bucket(b + 1))) {
            while (red.sum(b < buckets.size() ? buckets[b].size() : 0) > 0) {
                if (b >= buckets.size()) buckets.resize(b + 1);
                light_round(b);
                ++rounds;
            }
            heavy_round();
            ++rounds;
        }
        result.levels = rounds;
        result.edges = red.sum(reached_degrees) / 2;
    }
};

sssp_kernel::sssp_kernel(context& ctx, const csr_graph& g, kernel_options opt)
    : _s(std::make_unique<state>(ctx, g, opt)) {}
sssp_kernel::~sssp_kernel() = default;
void sssp_kernel::run(std::uint32_t root, search_result& out) {
    _s->run(root, out);
}

}  // namespace am::graph
