// SPDX-License-Identifier: MIT
// Graph exploration with nested messages in a single epoch (AM++ §4.2).
#include "bitmap.hpp"

#include <graph/graph.hpp>

namespace am::graph {
struct explore_kernel::state {
    context& ctx;
    const csr_graph& g;
    reductions red;
    search_result* out = nullptr;
    bitmap visited;
    bitmap sent;  // global: remote vertices this rank already sent a visit to
    std::vector<std::uint32_t> stack;
    std::uint64_t reached_degrees = 0;
    message_type<visit> visit_msg;
    coalesced<visit> visits;

    state(context& c, const csr_graph& graph)
        : ctx(c),
          g(graph),
          red(c),
          visited(graph.local_n),
          sent(graph.part.n()),
          visit_msg(
              c, [this](const visit& v) { explore(v.vertex - g.first, v.parent); },
              "explore.visit"),
          visits(visit_msg) {}

    void mark(std::uint32_t local, std::uint32_t parent) {
        visited.set(local);
        out->pred[local] = parent;
        reached_degrees += g.degree(local);
        stack.push_back(local);
    }

    /// Reaches `local` from `parent`, then everything reachable from it through local vertices;
    /// remote neighbours get a visit, sent from inside this handler (nested).
    void explore(std::uint32_t local, std::uint32_t parent) {
        if (visited.test(local)) return;
        const std::size_t base = stack.size();  // a nested handler may run inside a send
        mark(local, parent);
        while (stack.size() > base) {
            const std::uint32_t u = stack.back();
            stack.pop_back();
            const std::uint32_t from = g.first + u;
            for (const adjacency& a : g.neighbours(u)) {
                const int dest = g.part.owner(a.target);
                if (dest != g.rank) {
                    // Visits are idempotent: one per remote vertex and search is enough, and
                    // keeps what handlers send (and park when rings are full) bounded.
                    if (!sent.test_and_set(a.target)) visits.send(visit{a.target, from}, dest);
                } else if (!visited.test(a.target - g.first)) {
                    mark(a.target - g.first, from);
                }
            }
        }
    }

    void run(std::uint32_t root, search_result& result) {
        out = &result;
        result.pred.assign(g.local_n, -1);
        result.dist.clear();
        result.bottom_up_levels = 0;
        visited.clear();
        sent.clear();
        stack.clear();
        reached_degrees = 0;
        {
            epoch ep(ctx);
            if (g.owns(root)) explore(root - g.first, root);
            ep.end();
            result.messages = ep.stats().messages_sent;
        }
        result.levels = 0;
        result.edges = red.sum(reached_degrees) / 2;
    }
};

explore_kernel::explore_kernel(context& ctx, const csr_graph& g)
    : _s(std::make_unique<state>(ctx, g)) {}
explore_kernel::~explore_kernel() = default;
void explore_kernel::run(std::uint32_t root, search_result& out) {
    _s->run(root, out);
}

}  // namespace am::graph
