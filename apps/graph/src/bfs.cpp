// SPDX-License-Identifier: MIT
// Direction-optimising level-synchronous BFS on the typed layer.
#include "bitmap.hpp"
#include "crew.hpp"

#include <graph/graph.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace am::graph {
namespace {

constexpr std::size_t vertices_per_chunk = 64;  // top-down: frontier vertices a thread takes
constexpr std::size_t words_per_chunk = 16;     // bottom-up: 1024 local vertices

/// The CSR's targets without the weights, 4 bytes an entry (GAP runs its BFS on an
/// unweighted graph too): a search reads half the bytes of the weighted lists. Built once per
/// kernel, not per search.
struct target_lists {
    const csr_graph& g;
    std::vector<std::uint32_t> targets;

    explicit target_lists(const csr_graph& graph) : g(graph), targets(graph.adj.size()) {
        for (std::size_t i = 0; i < targets.size(); ++i) targets[i] = graph.adj[i].target;
    }
    [[nodiscard]] std::span<const std::uint32_t> of(std::uint32_t local) const noexcept {
        return {targets.data() + g.offsets[local], targets.data() + g.offsets[local + 1]};
    }
    [[nodiscard]] const std::uint32_t* first(std::uint64_t local) const noexcept {
        return targets.data() + g.offsets[local];
    }
};

/// Prefetches the adjacency of the unreached vertices `depth` ahead of a bottom-up
/// search, in the order it takes them: a cursor over the unreached bits of words
/// [first, end) (as they were when it passed; a prefetch is only a hint). At SCALE 20 the
/// first touch of each list was half of the kernel's time (the CSR does not fit the L3).
class lookahead {
  public:
    static constexpr int depth = 16;
    lookahead(const bitmap& visited, const csr_graph& g, const target_lists& lists,
              std::uint64_t first, std::uint64_t end)
        : _visited(visited), _g(g), _lists(lists), _word(first), _end(end) {
        if (_word < _end) _bits = ~_visited.words()[_word];
        for (int i = 0; i < depth; ++i) next();
    }
    /// Prefetches the list of the next unreached vertex.
    void next() noexcept {
        while (_bits == 0) {
            if (++_word >= _end) return;
            _bits = ~_visited.words()[_word];
        }
        const std::uint64_t v = _word * 64 + static_cast<unsigned>(__builtin_ctzll(_bits));
        _bits &= _bits - 1;
        if (v < _g.local_n) __builtin_prefetch(_lists.first(v));
    }

  private:
    const bitmap& _visited;
    const csr_graph& _g;
    const target_lists& _lists;
    std::uint64_t _word;
    const std::uint64_t _end;  // with threads, the chunk's end: others write beyond it
    std::uint64_t _bits = 0;
};

}  // namespace

struct bfs_kernel::state {
    context& ctx;
    const csr_graph& g;
    kernel_options opt;
    reductions red;
    search_result* out = nullptr;
    target_lists lists;
    std::uint64_t adjacency_total = 0;     // Σ over ranks of the adjacency entries
    bitmap visited;                        // local vertices reached
    bitmap front;                          // global: the current frontier (bottom-up levels)
    std::vector<std::uint32_t> cur, next;  // local frontier queues
    std::uint64_t next_degrees = 0;        // Σ degree over `next`
    std::uint64_t reached_degrees = 0;     // Σ degree over reached vertices
    std::unique_ptr<crew> workers;         // threads > 1 only
    // threads > 1: `visited` is claimed with atomic fetch_or while a level runs; the level's
    // new vertices are found afterwards as the bits not in `before`.
    const bool parallel;
    bitmap before;  // parallel: `visited` as the level began
    message_type<visit> visit_msg;
    coalesced<visit> visits;
    word_broadcast frontier_words;

    state(context& c, const csr_graph& graph, kernel_options o)
        : ctx(c),
          g(graph),
          opt(o),
          red(c),
          lists(graph),
          visited(graph.local_n),
          front(graph.part.n()),
          parallel(o.threads != 1),
          before(parallel ? graph.local_n : 0),
          visit_msg(
              c,
              [this](int, std::span<const visit> batch) {
                  // One branch per batch: the single-threaded loop stays as it was.
                  if (parallel) {
                      for (const visit& v : batch) claim(v.vertex - g.first, v.parent);
                  } else {
                      for (const visit& v : batch) reach(v.vertex - g.first, v.parent);
                  }
              },
              "bfs.visit"),
          visits(visit_msg),
          frontier_words(c, front, "bfs.frontier") {
        workers = make_crew(c, o.threads, "bfs_kernel");
        adjacency_total = red.sum(graph.adj.size());
    }

    void reach(std::uint32_t local, std::uint32_t parent) {
        if (visited.test_and_set(local)) return;
        out->pred[local] = parent;
        next.push_back(local);
        const std::uint64_t d = g.degree(local);
        next_degrees += d;
        reached_degrees += d;
    }

    /// Threads > 1: marks `local` reached from `parent` unless another thread (or an earlier
    /// level) did; only the thread that set the bit writes the predecessor.
    void claim(std::uint32_t local, std::uint32_t parent) {
        const std::uint64_t m = std::uint64_t{1} << (local & 63);
        std::atomic_ref<std::uint64_t> word(visited.words()[local >> 6]);
        if ((word.load(std::memory_order_relaxed) & m) != 0) return;  // no locked op then
        if ((word.fetch_or(m, std::memory_order_relaxed) & m) != 0) return;
        out->pred[local] = parent;
    }

    /// Visits the neighbours of frontier vertex `u`: local ones at once, others by message.
    template <bool Parallel>
    void expand(std::uint32_t u) {
        const std::uint32_t parent = g.first + u;
        for (const std::uint32_t target : lists.of(u)) {
            const int dest = g.part.owner(target);
            if (dest == g.rank) {
                if constexpr (Parallel) {
                    claim(target - g.first, parent);
                } else {
                    reach(target - g.first, parent);
                }
            } else {
                visits.send(visit{target, parent}, dest);
            }
        }
    }

    void top_down() {
        epoch ep(ctx, {.depth = 0});
        for (const std::uint32_t u : cur) expand<false>(u);
        visits.flush();
        ep.end();
        out->messages += ep.stats().messages_sent;
    }

    /// Every thread takes chunks of the frontier, sends through its own coalescing buffers
    /// and, once done, polls (runs visit handlers) until the epoch has ended.
    void top_down_parallel() {
        epoch ep(ctx, {.depth = 0});
        std::atomic<std::size_t> cursor{0};
        workers->run_then(
            [&](int) {
                for (;;) {
                    const std::size_t i = cursor.fetch_add(vertices_per_chunk);
                    if (i >= cur.size()) break;
                    const std::size_t end = std::min(i + vertices_per_chunk, cur.size());
                    for (std::size_t k = i; k < end; ++k) expand<true>(cur[k]);
                }
                visits.flush();  // this thread's buffers
            },
            [&] { ep.end(); });
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

    /// The unreached vertices of visited word `wi` look for a parent in the frontier;
    /// `found(local, parent)` for each that has one. `ahead` moves on a vertex for each.
    template <class Found>
    void search_parents(std::uint64_t wi, Found&& found, lookahead& ahead) {
        std::uint64_t todo = ~visited.words()[wi];
        while (todo != 0) {
            const std::uint64_t local = wi * 64 + static_cast<unsigned>(__builtin_ctzll(todo));
            todo &= todo - 1;
            if (local >= g.local_n) break;
            ahead.next();
            for (const std::uint32_t target : lists.of(static_cast<std::uint32_t>(local))) {
                if (front.test(target)) {
                    found(static_cast<std::uint32_t>(local), target);
                    break;
                }
            }
        }
    }

    /// Every unreached local vertex looks for a parent in the frontier.
    void bottom_up() {
        exchange_frontier();
        const std::uint64_t words = visited.word_count();
        lookahead ahead(visited, g, lists, 0, words);
        for (std::uint64_t wi = 0; wi < words; ++wi) {
            search_parents(
                wi, [this](std::uint32_t local, std::uint32_t parent) { reach(local, parent); },
                ahead);
        }
    }

    /// As `bottom_up`, the visited words split in chunks among the threads: a word is
    /// searched and written by one thread only, so it needs no atomics.
    void bottom_up_parallel() {
        exchange_frontier();
        const std::size_t words = visited.word_count();
        std::atomic<std::size_t> cursor{0};
        workers->run(
            [&](int) {
                for (;;) {
                    const std::size_t i = cursor.fetch_add(words_per_chunk);
                    if (i >= words) break;
                    const std::size_t end = std::min(i + words_per_chunk, words);
                    lookahead ahead(visited, g, lists, i, end);
                    for (std::size_t wi = i; wi < end; ++wi) {
                        std::uint64_t bits = 0;
                        search_parents(
                            wi,
                            [&](std::uint32_t local, std::uint32_t parent) {
                                out->pred[local] = parent;
                                bits |= std::uint64_t{1} << (local & 63);
                            },
                            ahead);
                        visited.words()[wi] |= bits;
                    }
                }
            },
            false);
    }

    /// Threads > 1, after a level: the vertices it reached (the bits set since it began) make
    /// the next frontier, in vertex order, with their degrees.
    void collect() {
        std::uint64_t* vis = visited.words();
        std::uint64_t* seen = before.words();
        for (std::size_t wi = 0; wi < visited.word_count(); ++wi) {
            std::uint64_t fresh = vis[wi] & ~seen[wi];
            seen[wi] = vis[wi];
            while (fresh != 0) {
                const auto local = static_cast<std::uint32_t>(
                    wi * 64 + static_cast<unsigned>(__builtin_ctzll(fresh)));
                fresh &= fresh - 1;
                next.push_back(local);
                next_degrees += g.degree(local);
            }
        }
        reached_degrees += next_degrees;
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
        std::uint64_t unexplored = adjacency_total;  // m_u: edges to check
        if (g.owns(root)) {
            reach(root - g.first, root);
        }
        if (parallel) before = visited;
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
            if (parallel) {
                bottom ? bottom_up_parallel() : top_down_parallel();
                collect();
            } else {
                bottom ? bottom_up() : top_down();
            }
            result.bottom_up_levels += bottom ? 1 : 0;
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
