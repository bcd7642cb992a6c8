// SPDX-License-Identifier: MIT
// Direction-optimising level-synchronous BFS on the typed layer.
#include "bitmap.hpp"

#include <graph/graph.hpp>

#include <algorithm>

namespace am::graph {
struct bfs_kernel::state {
    context& ctx;
    const csr_graph& g;
    kernel_options opt;
    reductions red;
    search_result* out = nullptr;
    bitmap visited;                        // local vertices reached
    bitmap front;                          // global: the current frontier (bottom-up levels)
    std::vector<std::uint32_t> cur, next;  // local frontier queues
    std::uint64_t next_degrees = 0;        // Σ degree over `next`
    std::uint64_t reached_degrees = 0;     // Σ degree over reached vertices
    message_type<visit> visit_msg;
    coalesced<visit> visits;
    word_broadcast frontier_words;

    state(context& c, const csr_graph& graph, kernel_options o)
        : ctx(c),
          g(graph),
          opt(o),
          red(c),
          visited(graph.local_n),
          front(graph.part.n()),
          visit_msg(
              c, [this](const visit& v) { reach(v.vertex - g.first, v.parent); }, "bfs.visit"),
          visits(visit_msg),
          frontier_words(c, front, "bfs.frontier") {}

    void reach(std::uint32_t local, std::uint32_t parent) {
        if (visited.test_and_set(local)) return;
        out->pred[local] = parent;
        next.push_back(local);
        const std::uint64_t d = g.degree(local);
        next_degrees += d;
        reached_degrees += d;
    }

    void top_down() {
        epoch ep(ctx, {.depth = 0});
        for (const std::uint32_t u : cur) {
            const std::uint32_t parent = g.first + u;
            for (const adjacency& a : g.neighbours(u)) {
                const int dest = g.part.owner(a.target);
                if (dest == g.rank) {
                    reach(a.target - g.first, parent);
                } else {
                    visits.send(visit{a.target, parent}, dest);
                }
            }
        }
        visits.flush();
        ep.end();
        out->messages += ep.stats().messages_sent;
    }

    /// Every rank's frontier into `front`: this rank's words locally, the others by message.
    void exchange_frontier() {
        front.clear();
        const std::uint64_t base = g.first / 64;
        for (const std::uint32_t u : cur) front.set(std::uint64_t{g.first} + u);
        const std::uint64_t words = (std::uint64_t{g.local_n} + 63) / 64;
        epoch ep(ctx, {.depth = 0});
        for (std::uint64_t i = base; i < base + words; ++i) {
            if (front.words()[i] != 0) frontier_words.send(i);
        }
        ep.end();
        out->messages += ep.stats().messages_sent;
    }

    /// Every unreached local vertex looks for a parent in the frontier.
    void bottom_up() {
        exchange_frontier();
        const std::uint64_t* vis = visited.words();
        const std::uint64_t words = visited.word_count();
        for (std::uint64_t wi = 0; wi < words; ++wi) {
            std::uint64_t todo = ~vis[wi];
            while (todo != 0) {
                const std::uint64_t local = wi * 64 + static_cast<unsigned>(__builtin_ctzll(todo));
                todo &= todo - 1;
                if (local >= g.local_n) break;
                for (const adjacency& a : g.neighbours(static_cast<std::uint32_t>(local))) {
                    if (front.test(a.target)) {
                        reach(static_cast<std::uint32_t>(local), a.target);
                        break;
                    }
                }
            }
        }
    }

    void run(std::uint32_t root, search_result& result) {
        out = &result;
        result.pred.assign(g.local_n, -1);
        result.dist.clear();
        result.messages = 0;
        result.bottom_up_levels = 0;
        visited.clear();
        cur.clear();
        next.clear();
        next_degrees = reached_degrees = 0;
        std::uint64_t unexplored = red.sum(g.adj.size());  // m_u: edges to check
        if (g.owns(root)) {
            reach(root - g.first, root);
        }
        std::uint64_t frontier = 1, frontier_edges = red.sum(next_degrees);
        bool bottom = false;
        int levels = 0;
        const double n = static_cast<double>(g.part.n());
        while (frontier > 0) {
            if (opt.direction_optimizing) {
                if (!bottom && static_cast<double>(frontier_edges) >
                                   static_cast<double>(unexplored) / opt.alpha) {
                    bottom = true;
                } else if (bottom && static_cast<double>(frontier) < n / opt.beta) {
                    bottom = false;
                }
            }
            unexplored -= std::min(unexplored, frontier_edges);
            std::swap(cur, next);
            next.clear();
            next_degrees = 0;
            if (bottom) {
                bottom_up();
                ++result.bottom_up_levels;
            } else {
                top_down();
            }
            ++levels;
            frontier = red.sum(next.size());
            frontier_edges = red.sum(next_degrees);
        }
        result.levels = levels;
        result.edges = red.sum(reached_degrees) / 2;
    }
};

bfs_kernel::bfs_kernel(context& ctx, const csr_graph& g, kernel_options opt)
    : _s(std::make_unique<state>(ctx, g, opt)) {}
bfs_kernel::~bfs_kernel() = default;
void bfs_kernel::run(std::uint32_t root, search_result& out) {
    _s->run(root, out);
}

}  // namespace am::graph
