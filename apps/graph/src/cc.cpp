// SPDX-License-Identifier: MIT
// Connected components by minimum-label propagation on the typed layer, with offers to other
// ranks combined at the source (reduce_by_key with min) and coalesced.
#include "bitmap.hpp"

#include <graph/graph.hpp>

namespace am::graph {
namespace {

/// A label offered to a vertex, and the neighbour offering it.
struct offer_value {
    std::uint32_t label;
    std::uint32_t parent;
};

/// The message: `key` is the target vertex (global id).
struct offer {
    std::uint32_t key;
    offer_value value;
};

/// Keeps the smaller label of two offers to one vertex.
struct smaller_label {
    offer_value operator()(const offer_value& held, const offer_value& added) const noexcept {
        return added.label < held.label ? added : held;
    }
};

}  // namespace

struct cc_kernel::state {
    context& ctx;
    const csr_graph& g;
    reductions red;
    search_result* out = nullptr;
    std::vector<std::uint32_t> label;      // the smallest id seen so far, by local vertex
    std::vector<std::uint32_t> cur, next;  // local vertices whose label dropped
    bitmap in_next;
    message_type<offer> offer_msg;
    coalesced<offer> offers;
    reducer<coalesced<offer>, smaller_label, direct_mapped_cache> combined;

    state(context& c, const csr_graph& graph)
        : ctx(c),
          g(graph),
          red(c),
          in_next(graph.local_n),
          offer_msg(
              c, [this](int, std::span<const offer> batch) { receive(batch); }, "cc.offer"),
          offers(offer_msg),
          combined(reduce_by_key(offers, smaller_label{}, direct_mapped_cache{})) {}

    void lower(std::uint32_t local, std::uint32_t l, std::uint32_t parent) {
        if (!(l < label[local])) return;
        label[local] = l;
        out->pred[local] = parent;
        if (!in_next.test_and_set(local)) next.push_back(local);
    }

    void receive(std::span<const offer> batch) {
        for (const offer& o : batch) lower(o.key - g.first, o.value.label, o.value.parent);
    }

    /// Offers the label of every vertex in `cur` to its neighbours: one epoch.
    void round() {
        epoch ep(ctx, {.depth = 0});
        for (const std::uint32_t u : cur) {
            const std::uint32_t l = label[u];
            const std::uint32_t from = g.first + u;
            for (const adjacency& a : g.neighbours(u)) {
                // A label never exceeds its vertex's id: a target ≤ l cannot take l.
                if (a.target <= l) continue;
                const int dest = g.part.owner(a.target);
                if (dest == g.rank) {
                    lower(a.target - g.first, l, from);
                } else {
                    combined.send(offer{a.target, offer_value{l, from}}, dest);
                }
            }
        }
        combined.flush();
        offers.flush();
        ep.end();
        out->messages += ep.stats().messages_sent;
    }

    void run(search_result& result) {
        out = &result;
        result.pred.resize(g.local_n);
        result.dist.clear();
        result.score.clear();
        result.messages = 0;
        result.bottom_up_levels = 0;
        label.resize(g.local_n);
        cur.clear();
        next.clear();
        in_next.clear();
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            label[v] = g.first + v;
            result.pred[v] = g.first + v;
            cur.push_back(v);
        }
        int rounds = 0;
        while (red.sum(cur.size()) > 0) {
            round();
            ++rounds;
            cur.swap(next);
            for (const std::uint32_t u : cur) in_next.words()[u >> 6] = 0;
            next.clear();
        }
        result.component.assign(label.begin(), label.end());
        result.levels = rounds;
        result.edges = g.global_edges;
    }
};

cc_kernel::cc_kernel(context& ctx, const csr_graph& g) : _s(std::make_unique<state>(ctx, g)) {}
cc_kernel::~cc_kernel() = default;
void cc_kernel::run(search_result& out) {
    _s->run(out);
}

}  // namespace am::graph
