// SPDX-License-Identifier: MIT
// Δ-stepping single-source shortest paths on the typed layer.
#include "bitmap.hpp"

#include <graph/graph.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

namespace am::graph {
namespace {

std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

struct relax {
    std::uint32_t vertex;
    std::uint32_t parent;
    float dist;
};

constexpr std::uint64_t no_bucket = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t no_label_bucket = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t no_parent = std::numeric_limits<std::uint32_t>::max();

/// A vertex's tentative distance and parent side by side (one cache miss per relaxation),
/// with the weight of its lightest edge: a light round skips a vertex whose lightest edge
/// leaves the bucket without touching its adjacency.
struct label {
    float dist;
    std::uint32_t parent;
    float lightest;
    std::uint32_t bucket;  // the bucket it was last put in (stale entries elsewhere are skipped)
};

/// How many relaxations ahead the relaxation loops prefetch the target's label.
constexpr std::size_t prefetch_distance = 16;

/// Bucket fusion relaxes what landed in the current bucket during a light round in the same
/// round only while it is smaller than this: a small remainder would otherwise cost a whole
/// round (two epochs) for little work, while a large one is relaxed better after the round,
/// when more of its distances have settled (fewer repeated relaxations).
constexpr std::size_t fuse_below = 1024;

}  // namespace

struct sssp_kernel::state {
    context& ctx;
    const csr_graph& g;
    kernel_options opt;
    float inv_delta;
    reductions red;
    search_result* out = nullptr;
    std::vector<label> labels;
    std::uint64_t floor_bucket = 0;  // improvements go to this bucket or a later one
    std::vector<std::vector<std::uint32_t>> buckets;
    std::vector<std::uint32_t> settled;  // vertices removed from the current bucket
    bitmap in_settled;
    bitmap done_in_round;              // relaxed at its current distance in the current light round
    std::vector<std::uint32_t> round;  // the part of the bucket being relaxed
    std::vector<std::uint32_t> touched;    // vertices whose done_in_round bit is set
    bitmap final_global;                   // global: vertices of completed buckets (final)
    std::vector<std::uint8_t> word_dirty;  // local words of final_global changed this bucket
    std::vector<std::uint64_t> dirty_words;
    message_type<relax> relax_msg;
    coalesced<relax> relaxes;
    word_broadcast final_words;

    state(context& c, const csr_graph& graph, kernel_options o)
        : ctx(c),
          g(graph),
          opt(o),
          inv_delta(1.0f / o.delta),
          red(c),
          in_settled(graph.local_n),
          done_in_round(graph.local_n),
          final_global(graph.part.n()),
          word_dirty((std::uint64_t{graph.local_n} + 63) / 64, 0),
          relax_msg(
              c, [this](int, std::span<const relax> batch) { receive(batch); }, "sssp.relax"),
          relaxes(relax_msg),
          final_words(c, final_global, "sssp.final") {}

    [[noreturn]] void bucket_overflow(float d) const {
        throw std::invalid_argument("sssp_kernel: rank " + std::to_string(g.rank) + ": distance " +
                                    number(d) + " / delta " + number(opt.delta) +
                                    " exceeds 2^32 buckets; use a larger delta");
    }

    [[nodiscard]] std::uint64_t bucket_of(float d) const noexcept {
        return static_cast<std::uint64_t>(d * inv_delta);
    }

    void improve(std::uint32_t local, float d, std::uint32_t parent) {
        label& l = labels[local];
        if (!(d < l.dist)) return;
        l.dist = d;
        l.parent = parent;
        // Never below the bucket being processed: rounding in d·(1/Δ) may put a distance
        // reached by a heavy edge back into the bucket whose heavy round is running.
        const std::uint64_t b = std::max(bucket_of(d), floor_bucket);
        if (b >= no_label_bucket) [[unlikely]]
            bucket_overflow(d);
        l.bucket = static_cast<std::uint32_t>(b);
        // A vertex improved again during a (fused) light round is relaxed again.
        if (b == floor_bucket) done_in_round.reset(local);
        if (b >= buckets.size()) buckets.resize(b + 1);
        buckets[b].push_back(local);
    }

    void receive(std::span<const relax> batch) {
        const std::size_t n = batch.size();
        for (std::size_t i = 0; i < n; ++i) {
            if (i + prefetch_distance < n) {
                __builtin_prefetch(&labels[batch[i + prefetch_distance].vertex - g.first], 1);
            }
            improve(batch[i].vertex - g.first, batch[i].dist, batch[i].parent);
        }
    }

    /// Relaxes edges [begin, end) of `u`'s list.
    void relax_edges(std::uint32_t u, float du, std::uint64_t begin, std::uint64_t end) {
        const adjacency* list = g.adj.data() + g.offsets[u];
        const std::uint32_t parent = g.first + u;
        // In blocks: first the entries whose target is not final, without a branch (most
        // are final, at random, which a branch would mispredict), then those.
        constexpr std::uint64_t block = 64;
        std::uint32_t open[block];
        for (std::uint64_t start = begin; start < end; start += block) {
            const std::uint64_t stop = std::min(end, start + block);
            std::uint32_t n = 0;
            for (std::uint64_t i = start; i < stop; ++i) {
                open[n] = static_cast<std::uint32_t>(i);
                n += final_global.test(list[i].target) ? 0U : 1U;
            }
            // Then split into local and remote targets, again without a branch.
            std::uint32_t local[block], remote[block];
            std::uint32_t nl = 0, nr = 0;
            for (std::uint32_t k = 0; k < n; ++k) {
                const bool mine = g.owns(list[open[k]].target);
                local[nl] = remote[nr] = open[k];
                nl += mine ? 1U : 0U;
                nr += mine ? 0U : 1U;
            }
            for (std::uint32_t k = 0; k < nl; ++k) {
                if (k + prefetch_distance < nl) {
                    __builtin_prefetch(&labels[list[local[k + prefetch_distance]].target - g.first],
                                       1);
                }
                const adjacency& a = list[local[k]];
                improve(a.target - g.first, du + a.w, parent);
            }
            for (std::uint32_t k = 0; k < nr; ++k) {
                const adjacency& a = list[remote[k]];
                relaxes.send(relax{a.target, parent, du + a.w}, g.part.owner(a.target));
            }
        }
    }

    /// First edge of `local`'s list (sorted by weight) with weight ≥ `limit`. A linear scan:
    /// the prefix is short (weights below Δ) and read in order, where a binary search would
    /// wait for a cache miss at every step.
    [[nodiscard]] std::uint64_t split(std::uint32_t local, float limit) const noexcept {
        const adjacency* list = g.adj.data() + g.offsets[local];
        const std::uint64_t n = g.degree(local);
        std::uint64_t i = 0;
        while (i < n && list[i].w < limit) ++i;
        return i;
    }

    /// Prefetches what processing vertex list[i + k] will read: its offsets and label 2k
    /// ahead, its adjacency k ahead (the lists are visited in bucket order, i.e. at random).
    void prefetch_vertex(const std::vector<std::uint32_t>& list, std::size_t i) const noexcept {
        constexpr std::size_t k = 8;
        if (i + 2 * k < list.size()) {
            __builtin_prefetch(&g.offsets[list[i + 2 * k]]);
            __builtin_prefetch(&labels[list[i + 2 * k]]);
        }
        if (i + k < list.size()) __builtin_prefetch(g.adj.data() + g.offsets[list[i + k]]);
    }

    /// Upper end of bucket b's distances.
    [[nodiscard]] float bucket_end(std::uint64_t b) const noexcept {
        return static_cast<float>(b + 1) * opt.delta;
    }

    /// Relaxes the inner short edges of the vertices in `round` that are still in bucket `b`
    /// and not relaxed at their current distance yet.
    void relax_light(std::uint64_t b) {
        for (std::size_t i = 0; i < round.size(); ++i) {
            prefetch_vertex(round, i);
            const std::uint32_t u = round[i];
            const float du = labels[u].dist;
            if (labels[u].bucket != b || done_in_round.test_and_set(u)) continue;
            touched.push_back(u);
            if (!in_settled.test_and_set(u)) settled.push_back(u);
            // Inner short edges only (w < end of the bucket − d(u)); the outer ones are
            // relaxed once with u's final distance in the heavy round, which splits the list
            // with the same comparison.
            const float limit = bucket_end(b) - du;
            if (!(labels[u].lightest < limit)) continue;
            relax_edges(u, du, 0, split(u, limit));
        }
    }

    /// One round of light-edge relaxations from the vertices now in bucket `b`, fused: what
    /// lands in bucket `b` meanwhile (local improvements, and relaxations from other ranks
    /// handled during sends) is relaxed in the same round while it is small (`fuse_below`).
    void light_round(std::uint64_t b) {
        floor_bucket = b;
        epoch ep(ctx, {.depth = 0});
        do {
            round.clear();
            round.swap(buckets[b]);
            relax_light(b);
        } while (opt.bucket_fusion && !buckets[b].empty() && buckets[b].size() < fuse_below);
        relaxes.flush();
        ep.end();
        out->messages += ep.stats().messages_sent;
        for (const std::uint32_t u : touched) done_in_round.words()[u >> 6] = 0;
        touched.clear();
    }

    /// Marks the bucket's vertices final and sends the changed bitmap words to every rank.
    void publish_final() {
        for (const std::uint32_t u : settled) {
            const std::uint64_t v = std::uint64_t{g.first} + u;
            final_global.set(v);
            const std::uint64_t w = u >> 6;
            if (word_dirty[w] == 0) {
                word_dirty[w] = 1;
                dirty_words.push_back((g.first >> 6) + w);
            }
        }
        for (const std::uint64_t w : dirty_words) {
            final_words.send(w);
            word_dirty[w - (g.first >> 6)] = 0;
        }
        dirty_words.clear();
    }

    /// Relaxes the outer short and heavy edges of the bucket's vertices, whose distances are
    /// final now.
    void heavy_round(std::uint64_t b) {
        floor_bucket = b + 1;
        epoch ep(ctx, {.depth = 0});
        publish_final();
        for (std::size_t i = 0; i < settled.size(); ++i) {
            prefetch_vertex(settled, i);
            const std::uint32_t u = settled[i];
            const float du = labels[u].dist;
            relax_edges(u, du, split(u, bucket_end(b) - du), g.degree(u));
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
        if (labels.size() != g.local_n) {
            labels.resize(g.local_n);
            for (std::uint32_t v = 0; v < g.local_n; ++v) {
                labels[v].lightest = g.degree(v) > 0 ? g.adj[g.offsets[v]].w
                                                     : std::numeric_limits<float>::infinity();
            }
        }
        for (label& l : labels) {
            l.dist = std::numeric_limits<float>::infinity();
            l.parent = no_parent;
        }
        result.messages = 0;
        result.bottom_up_levels = 0;
        for (auto& b : buckets) b.clear();
        final_global.clear();
        floor_bucket = 0;
        if (g.owns(root)) improve(root - g.first, 0.0f, root);
        int rounds = 0;
        for (std::uint64_t b = red.min(next_bucket(0)); b != no_bucket;
             b = red.min(next_bucket(b + 1))) {
            while (red.sum(b < buckets.size() ? buckets[b].size() : 0) > 0) {
                if (b >= buckets.size()) buckets.resize(b + 1);
                light_round(b);
                ++rounds;
            }
            heavy_round(b);
            ++rounds;
        }
        result.levels = rounds;
        result.pred.resize(g.local_n);
        result.dist.resize(g.local_n);
        std::uint64_t reached_degrees = 0;
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            const label& l = labels[v];
            result.dist[v] = l.dist;
            result.pred[v] = l.parent == no_parent ? -1 : static_cast<std::int64_t>(l.parent);
            if (l.parent != no_parent) reached_degrees += g.degree(v);
        }
        result.edges = red.sum(reached_degrees) / 2;
    }
};

delta_choice auto_delta(context& ctx, const csr_graph& g) {
    double sums[3] = {0, 0, 0};  // weights, adjacency entries, vertices with edges
    for (const adjacency& a : g.adj) sums[0] += a.w;
    sums[1] = static_cast<double>(g.adj.size());
    for (std::uint32_t v = 0; v < g.local_n; ++v) sums[2] += g.degree(v) > 0 ? 1 : 0;
    reductions(ctx).sum(sums);
    delta_choice c;
    if (sums[1] == 0) {
        c.delta = 1;  // no edges: any Δ
        return c;
    }
    c.mean_weight = sums[0] / sums[1];
    c.mean_degree = sums[1] / sums[2];
    c.delta =
        std::max(1e-6f, static_cast<float>(auto_delta_factor * c.mean_weight / c.mean_degree));
    return c;
}

sssp_kernel::sssp_kernel(context& ctx, const csr_graph& g, kernel_options opt) {
    if (!(opt.delta == 0 || opt.delta >= 1e-6f) || !std::isfinite(opt.delta)) {
        throw std::invalid_argument("sssp_kernel: rank " + std::to_string(ctx.rank()) + ": delta " +
                                    number(opt.delta) + " outside [1e-6, inf) (0: automatic)");
    }
    if (opt.delta == 0) opt.delta = auto_delta(ctx, g).delta;
    _s = std::make_unique<state>(ctx, g, opt);
}
float sssp_kernel::delta() const noexcept {
    return _s->opt.delta;
}
sssp_kernel::~sssp_kernel() = default;
void sssp_kernel::run(std::uint32_t root, search_result& out) {
    _s->run(root, out);
}

}  // namespace am::graph
