// SPDX-License-Identifier: MIT
// omp_graph_ref: the shared-memory reference for am-graph500's BFS and SSSP (issue 37), written
// from the algorithms as the GAP benchmark suite (Beamer, Asanović, Patterson) describes them:
//   - BFS: direction-optimizing (Beamer et al., SC'12). Top-down steps claim vertices with a
//     compare-and-swap on the parent array and append them to a shared frontier queue through
//     per-thread buffers flushed in blocks; bottom-up steps let every unvisited vertex scan its
//     neighbours for one in the frontier bitmap, stopping at the first. Top-down → bottom-up
//     when the frontier's edges exceed the unexplored edges / α (15); back when the frontier
//     stops growing and holds fewer than N / β (18) vertices. BFS reads a target-only copy of
//     the adjacency (4 bytes an entry), as GAP's BFS runs on the unweighted graph.
//   - SSSP: Δ-stepping with thread-local bins and bucket fusion (GAP's sssp): distance and
//     parent in one 64-bit word lowered by compare-and-swap; a shared frontier holds the
//     current bucket; each thread relaxes its share of it (skipping stale entries) into its own
//     bins, relaxes its own entries of the current bucket at once while they are fewer than
//     1000 (fusion), then all agree on the smallest non-empty bin and copy it to the frontier.
// Same figures as am-graph500: the same generator (graph/generator.hpp), the CSR rule of
// build_csr (both directions, self-loops dropped, duplicates kept), choose_roots' roots, Δ by
// auto_delta's formula, one untimed warm-up from the first root, then per root the timed
// search with its edge count (Σ degree of the reached vertices / 2, summed inside the timed
// region), TEPS = edges / time, the harmonic mean over roots, and the same JSON line
// (system "omp", transport "openmp"). Validation runs outside the timed region; at
// SCALE ≤ 12 also against a sequential BFS / Dijkstra.
//   omp_graph_ref [--scale S] [--edgefactor E] [--roots R] [--kernel bfs,sssp] [--delta D]
//                 [--threads T] [--seed X] [--json] [--quiet] [--no-validate]
#include <graph/generator.hpp>

#include "graph/graph500_format.hpp"
#include "lib/options.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace {

namespace gen = am::graph;

constexpr std::uint32_t no_vertex = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t no_bin = std::numeric_limits<std::uint64_t>::max();
constexpr float infinity = std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------------------------
// The graph: build_csr's CSR on one node.

struct adjacency {
    std::uint32_t target;
    float w;
};

struct csr {
    std::uint64_t n = 0;
    std::vector<std::uint64_t> offsets;  // n + 1
    std::vector<adjacency> adj;          // SSSP
    std::vector<std::uint32_t> targets;  // BFS: adj's targets alone
    [[nodiscard]] std::uint64_t degree(std::uint64_t v) const noexcept {
        return offsets[v + 1] - offsets[v];
    }
};

/// Calls f(u, v, w) for both directions of every generated edge but self-loops, in parallel.
template <class F>
void for_each_direction(const gen::graph_spec& spec, F&& f) {
    const std::uint64_t m = gen::edge_count(spec);
#pragma omp parallel for schedule(static, 4096)
    for (std::uint64_t i = 0; i < m; ++i) {
        const gen::edge e = gen::make_edge(spec, i);
        if (e.u == e.v) continue;
        f(e.u, e.v, e.w);
        f(e.v, e.u, e.w);
    }
}

/// Sorts every list of `adj` by `less`, in parallel.
template <class Less>
void sort_lists(const csr& g, std::vector<adjacency>& adj, Less less) {
#pragma omp parallel for schedule(dynamic, 1024)
    for (std::uint64_t v = 0; v < g.n; ++v) {
        std::sort(adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                  adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]), less);
    }
}

/// Degree counting, prefix sums, placement at atomic cursors, then every list sorted by
/// (target, weight) so the CSR does not depend on the threads' interleaving; with
/// `weight_order` (--light-heavy) the SSSP lists are then sorted by weight.
csr build_csr(const gen::graph_spec& spec, bool weight_order) {
    csr g;
    g.n = gen::vertex_count(spec);
    g.offsets.assign(g.n + 1, 0);
    for_each_direction(spec, [&g](std::uint32_t u, std::uint32_t, float) {
        std::atomic_ref<std::uint64_t>(g.offsets[u]).fetch_add(1, std::memory_order_relaxed);
    });
    std::uint64_t sum = 0;
    for (std::uint64_t& o : g.offsets) sum += std::exchange(o, sum);
    g.adj.resize(sum);
    std::vector<std::uint64_t> cursor(g.offsets.begin(), g.offsets.end() - 1);
    for_each_direction(spec, [&](std::uint32_t u, std::uint32_t v, float w) {
        const std::uint64_t at =
            std::atomic_ref<std::uint64_t>(cursor[u]).fetch_add(1, std::memory_order_relaxed);
        g.adj[at] = adjacency{v, w};
    });
    sort_lists(g, g.adj, [](const adjacency& a, const adjacency& b) {
        return a.target != b.target ? a.target < b.target : a.w < b.w;
    });
    g.targets.resize(sum);
#pragma omp parallel for schedule(static)
    for (std::uint64_t e = 0; e < sum; ++e) g.targets[e] = g.adj[e].target;
    if (weight_order) {
        sort_lists(g, g.adj, [](const adjacency& a, const adjacency& b) {
            return a.w != b.w ? a.w < b.w : a.target < b.target;
        });
    }
    return g;
}

/// choose_roots' rule: the first `count` distinct root candidates with an edge.
std::vector<std::uint32_t> choose_roots(const gen::graph_spec& spec, const csr& g, int count) {
    std::uint64_t with_edges = 0;
    for (std::uint64_t v = 0; v < g.n; ++v) with_edges += g.degree(v) > 0 ? 1 : 0;
    const std::uint64_t wanted =
        std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(count, 0)), with_edges);
    const std::uint64_t tries = std::max<std::uint64_t>(64 * g.n, 1 << 20);
    std::vector<std::uint32_t> roots;
    for (std::uint64_t k = 0; k < tries && roots.size() < wanted; ++k) {
        const std::uint32_t c = gen::root_candidate(spec, k);
        if (std::find(roots.begin(), roots.end(), c) != roots.end()) continue;
        if (g.degree(c) > 0) roots.push_back(c);
    }
    return roots;
}

/// am's auto_delta: 5 × the mean edge weight / the mean degree of the vertices with edges.
float auto_delta(const csr& g) {
    double weights = 0, with_edges = 0;
#pragma omp parallel for reduction(+ : weights)
    for (std::uint64_t e = 0; e < g.adj.size(); ++e) weights += g.adj[e].w;
    for (std::uint64_t v = 0; v < g.n; ++v) with_edges += g.degree(v) > 0 ? 1 : 0;
    if (g.adj.empty()) return 1;
    const double entries = static_cast<double>(g.adj.size());
    const double mean_weight = weights / entries, mean_degree = entries / with_edges;
    return std::max(1e-6f, static_cast<float>(5 * mean_weight / mean_degree));
}

// ---------------------------------------------------------------------------------------------
// Shared pieces of the searches.

/// What a timed search reports.
struct search_stats {
    std::uint64_t edges = 0;  // Σ degree of the reached vertices / 2
    int levels = 0;           // BFS levels; SSSP bucket steps
    int bottom_up = 0;        // BFS levels run bottom-up; SSSP --light-heavy: heavy steps
    std::uint64_t scans = 0;  // SSSP: adjacency lists relaxed (a vertex's, once or more)
};

/// Appends to a shared array through a block-sized thread-local buffer.
class block_writer {
  public:
    block_writer(std::uint32_t* out, std::atomic<std::uint64_t>& tail) : _out(out), _tail(tail) {}
    ~block_writer() { flush(); }
    block_writer(const block_writer&) = delete;
    block_writer& operator=(const block_writer&) = delete;
    void push(std::uint32_t v) {
        _buf[_size++] = v;
        if (_size == _buf.size()) flush();
    }
    void flush() {
        if (_size == 0) return;
        const std::uint64_t at = _tail.fetch_add(_size, std::memory_order_relaxed);
        std::copy_n(_buf.begin(), _size, _out + at);
        _size = 0;
    }

  private:
    std::array<std::uint32_t, 1024> _buf;
    std::size_t _size = 0;
    std::uint32_t* _out;
    std::atomic<std::uint64_t>& _tail;
};

bool test_bit(const std::vector<std::uint64_t>& bits, std::uint64_t v) noexcept {
    return (bits[v >> 6] >> (v & 63)) & 1;
}

// ---------------------------------------------------------------------------------------------
// Direction-optimizing BFS.

class bfs_search {
  public:
    bfs_search(const csr& g, int alpha, int beta)
        : _g(g),
          _alpha(alpha),
          _beta(beta),
          _parent(g.n),
          _cur(g.n),
          _next(g.n),
          _front((g.n + 63) / 64),
          _awake((g.n + 63) / 64) {}

    search_stats run(std::uint32_t root) {
        reset();
        search_stats s;
        _parent[root] = root;
        _cur[0] = root;
        _cur_size = 1;
        std::uint64_t degrees = _g.degree(root), scout = degrees;
        std::uint64_t unexplored = _g.adj.size();
        while (_cur_size > 0) {
            if (static_cast<double>(scout) > static_cast<double>(unexplored) / _alpha) {
                bottom_up_phase(s, degrees);
                scout = 1;
            } else {
                unexplored -= std::min(unexplored, scout);
                scout = top_down_step();
                degrees += scout;
                ++s.levels;
            }
        }
        s.edges = degrees / 2;
        return s;
    }

    [[nodiscard]] std::vector<std::uint32_t>& parents() noexcept { return _parent; }

  private:
    void reset() {
        const std::uint64_t n = _g.n;
#pragma omp parallel for schedule(static)
        for (std::uint64_t v = 0; v < n; ++v) _parent[v] = no_vertex;
    }

    /// Claims `v` for `u` unless it has a parent already.
    bool claim(std::uint32_t v, std::uint32_t u) noexcept {
        std::atomic_ref<std::uint32_t> p(_parent[v]);
        std::uint32_t seen = p.load(std::memory_order_relaxed);
        return seen == no_vertex && p.compare_exchange_strong(seen, u, std::memory_order_relaxed);
    }

    /// Expands the frontier queue into the next; returns the degrees of the vertices reached.
    std::uint64_t top_down_step() {
        std::atomic<std::uint64_t> tail{0};
        std::uint64_t scout = 0;
        const std::uint64_t size = _cur_size;
#pragma omp parallel reduction(+ : scout)
        {
            block_writer out(_next.data(), tail);
#pragma omp for schedule(dynamic, 64) nowait
            for (std::uint64_t i = 0; i < size; ++i) {
                const std::uint32_t u = _cur[i];
                for (std::uint64_t e = _g.offsets[u]; e < _g.offsets[u + 1]; ++e) {
                    const std::uint32_t v = _g.targets[e];
                    if (!claim(v, u)) continue;
                    out.push(v);
                    scout += _g.degree(v);
                }
            }
        }
        _cur.swap(_next);
        _cur_size = tail.load();
        return scout;
    }

    /// Bottom-up steps while the frontier grows or is large, between queue ↔ bitmap
    /// conversions.
    void bottom_up_phase(search_stats& s, std::uint64_t& degrees) {
        queue_to_bitmap();
        std::uint64_t awake = _cur_size, before = 0;
        do {
            before = awake;
            awake = bottom_up_step(degrees);
            _front.swap(_awake);
            ++s.levels;
            ++s.bottom_up;
        } while (awake >= before || static_cast<double>(awake) > static_cast<double>(_g.n) / _beta);
        bitmap_to_queue();
    }

    /// Every unvisited vertex looks for a parent in `_front`; the ones found make `_awake`.
    /// A thread takes whole words of vertices, so it writes `_awake` without atomics.
    std::uint64_t bottom_up_step(std::uint64_t& degrees) {
        std::uint64_t awake = 0, found_degrees = 0;
        const std::uint64_t words = _awake.size();
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : awake, found_degrees)
        for (std::uint64_t w = 0; w < words; ++w) {
            std::uint64_t bits = 0;
            const std::uint64_t end = std::min(_g.n, (w + 1) * 64);
            for (std::uint64_t v = w * 64; v < end; ++v) {
                if (_parent[v] != no_vertex) continue;
                for (std::uint64_t e = _g.offsets[v]; e < _g.offsets[v + 1]; ++e) {
                    const std::uint32_t u = _g.targets[e];
                    if (!test_bit(_front, u)) continue;
                    _parent[v] = u;
                    bits |= std::uint64_t{1} << (v & 63);
                    ++awake;
                    found_degrees += _g.degree(v);
                    break;
                }
            }
            _awake[w] = bits;
        }
        degrees += found_degrees;
        return awake;
    }

    void queue_to_bitmap() {
        const std::uint64_t words = _front.size(), size = _cur_size;
#pragma omp parallel
        {
#pragma omp for schedule(static)
            for (std::uint64_t w = 0; w < words; ++w) _front[w] = 0;
#pragma omp for schedule(static)
            for (std::uint64_t i = 0; i < size; ++i) {
                const std::uint32_t v = _cur[i];
                std::atomic_ref<std::uint64_t>(_front[v >> 6])
                    .fetch_or(std::uint64_t{1} << (v & 63), std::memory_order_relaxed);
            }
        }
    }

    void bitmap_to_queue() {
        std::atomic<std::uint64_t> tail{0};
        const std::uint64_t words = _front.size();
#pragma omp parallel
        {
            block_writer out(_cur.data(), tail);
#pragma omp for schedule(dynamic, 64) nowait
            for (std::uint64_t w = 0; w < words; ++w) {
                for (std::uint64_t bits = _front[w]; bits != 0; bits &= bits - 1) {
                    out.push(static_cast<std::uint32_t>(w * 64 + std::countr_zero(bits)));
                }
            }
        }
        _cur_size = tail.load();
    }

    const csr& _g;
    double _alpha, _beta;
    std::vector<std::uint32_t> _parent;
    std::vector<std::uint32_t> _cur, _next;  // frontier queues
    std::uint64_t _cur_size = 0;
    std::vector<std::uint64_t> _front, _awake;  // frontier bitmaps of the bottom-up steps
};

// ---------------------------------------------------------------------------------------------
// Δ-stepping SSSP.

/// A label: the distance's bits above the parent (non-negative floats order as their bits).
std::uint64_t pack(float d, std::uint32_t parent) noexcept {
    return (std::uint64_t{std::bit_cast<std::uint32_t>(d)} << 32) | parent;
}
float dist_of(std::uint64_t label) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(label >> 32));
}
std::uint32_t parent_of(std::uint64_t label) noexcept {
    return static_cast<std::uint32_t>(label);
}

/// Lowers `target` to `value` if that is smaller.
void fetch_min(std::atomic<std::uint64_t>& target, std::uint64_t value) noexcept {
    std::uint64_t seen = target.load(std::memory_order_relaxed);
    while (value < seen && !target.compare_exchange_weak(seen, value)) {
    }
}

/// Bucket fusion: a thread relaxes its own entries of the current bucket at once while it
/// holds fewer than this (GAP's threshold).
constexpr std::size_t fuse_below = 1000;

/// Bins beyond this many mean a Δ far too small for the graph's distances.
constexpr std::uint64_t max_bins = std::uint64_t{1} << 24;

/// Variants of the SSSP beyond GAP's, off by default.
struct sssp_variant {
    bool dedupe = false;       // skip a repeated entry whose list was relaxed at that distance
    bool light_heavy = false;  // light edges in the bucket steps, heavy ones once per bucket
};

class sssp_search {
  public:
    /// With `v.light_heavy`, `g`'s lists must be sorted by weight.
    sssp_search(const csr& g, float delta, int threads, sssp_variant v)
        : _g(g),
          _delta(delta),
          _inv_delta(1.0f / delta),
          _variant(v),
          _labels(g.n),
          _scanned(g.n),
          _heavy_at(v.light_heavy ? g.n : 0),
          _light(v.light_heavy ? g.n : 0),
          _frontier(g.adj.size() + 1),
          _lanes(static_cast<std::size_t>(threads)) {
        if (v.light_heavy) count_light();
    }

    search_stats run(std::uint32_t root) {
        reset();
        _labels[root] = pack(0.0f, root);
        _frontier[0] = root;
        _step[0].bin.store(0);
        _step[0].tail.store(1);
        _step[1].bin.store(no_bin);
        _step[1].tail.store(0);
        search_stats s;
        int steps = 0;
#pragma omp parallel
        {
            const int mine = thread_steps();
#pragma omp master
            steps = mine;
        }
        s.levels = steps;
        for (lane& l : _lanes) s.scans += std::exchange(l.scans, 0);
        s.bottom_up = std::exchange(_lanes[0].heavy_steps, 0);
        s.edges = reached_degrees() / 2;
        return s;
    }

    [[nodiscard]] std::vector<std::uint64_t>& labels() noexcept {
        return _labels;
    }

  private:
    using bins = std::vector<std::vector<std::uint32_t>>;

    struct alignas(64) lane {
        bins bin;
        std::vector<std::uint32_t> fused;
        std::uint64_t scans = 0;
        std::vector<std::uint32_t> settled;  // light-heavy: scanned in the current bucket
        int heavy_steps = 0;                 // light-heavy: steps relaxing heavy edges
    };

    /// One bucket step's shared figures; two alternate so one barrier separates steps.
    struct alignas(64) step_slot {
        std::atomic<std::uint64_t> bin{no_bin};  // the bucket of the frontier
        std::atomic<std::uint64_t> tail{0};      // the frontier's size
    };

    void reset() {
        const std::uint64_t n = _g.n;
        const std::uint64_t unreached = pack(infinity, no_vertex);
        const bool heavy = _variant.light_heavy;
#pragma omp parallel for schedule(static)
        for (std::uint64_t v = 0; v < n; ++v) {
            _labels[v] = unreached;
            _scanned[v] = infinity;
            if (heavy) _heavy_at[v] = infinity;
        }
        for (lane& l : _lanes) {
            for (auto& b : l.bin) b.clear();
            l.settled.clear();
        }
    }

    [[nodiscard]] std::uint64_t bucket_of(float d) const noexcept {
        return static_cast<std::uint64_t>(d * _inv_delta);
    }

    [[nodiscard]] std::uint64_t load(std::uint32_t v) noexcept {
        return std::atomic_ref<std::uint64_t>(_labels[v]).load(std::memory_order_relaxed);
    }

    static void put(bins& b, std::uint64_t bucket, std::uint32_t v) {
        if (bucket >= b.size()) [[unlikely]] {
            if (bucket >= max_bins) {
                throw std::runtime_error(
                    "omp_graph_ref: sssp: more than 2^24 buckets; use a "
                    "larger --delta");
            }
            b.resize(bucket + 1);
        }
        b[bucket].push_back(v);
    }

    /// Light-heavy: the number of edges lighter than Δ of every list (a prefix: sorted).
    void count_light() {
#pragma omp parallel for schedule(dynamic, 1024)
        for (std::uint64_t v = 0; v < _g.n; ++v) {
            std::uint64_t e = _g.offsets[v];
            while (e < _g.offsets[v + 1] && _g.adj[e].w < _delta) ++e;
            _light[v] = static_cast<std::uint32_t>(e - _g.offsets[v]);
        }
    }

    /// Relaxes u's list from `du` in a bucket step: all of it (GAP), or with light-heavy its
    /// light edges, keeping u for the heavy step.
    void scan(std::uint32_t u, float du, lane& me) {
        ++me.scans;
        const std::uint64_t first = _g.offsets[u];
        if (!_variant.light_heavy) {
            relax(u, du, me.bin, first, _g.offsets[u + 1]);
            return;
        }
        relax(u, du, me.bin, first, first + _light[u]);
        me.settled.push_back(u);
    }

    /// Relaxes edges [begin, end) of u's list from distance `du`, putting every improved
    /// target in its bin.
    void relax(std::uint32_t u, float du, bins& b, std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t e = begin; e < end; ++e) {
            const adjacency a = _g.adj[e];
            const float d = du + a.w;
            std::atomic_ref<std::uint64_t> label(_labels[a.target]);
            std::uint64_t seen = label.load(std::memory_order_relaxed);
            while (d < dist_of(seen)) {
                if (label.compare_exchange_weak(seen, pack(d, u), std::memory_order_relaxed)) {
                    put(b, bucket_of(d), a.target);
                    break;
                }
            }
        }
    }

    /// This thread's part of the search; returns the bucket steps.
    int thread_steps() {
        lane& me = _lanes[static_cast<std::size_t>(omp_get_thread_num())];
        int step = 0;
        for (;; ++step) {
            step_slot& cur = _step[step & 1];
            step_slot& next = _step[(step + 1) & 1];
            const std::uint64_t b = cur.bin.load(std::memory_order_relaxed);
            if (b == no_bin) break;
            relax_frontier(me, b, cur.tail.load(std::memory_order_relaxed));
            fuse(me, b);
            propose(me, b, next);
#pragma omp barrier
#pragma omp single nowait
            {
                cur.bin.store(no_bin, std::memory_order_relaxed);
                cur.tail.store(0, std::memory_order_relaxed);
            }
            // Bucket b is empty everywhere: its distances are final.
            if (_variant.light_heavy && next.bin.load(std::memory_order_relaxed) != b) {
                heavy_step(me, b, next);
            }
            copy_to_frontier(me, next);
#pragma omp barrier
        }
        return step + me.heavy_steps;
    }

    /// Offers this thread's smallest non-empty bin from `b` on as the next bucket.
    static void propose(lane& me, std::uint64_t b, step_slot& next) {
        for (std::uint64_t k = b; k < me.bin.size(); ++k) {
            if (me.bin[k].empty()) continue;
            fetch_min(next.bin, k);
            return;
        }
    }

    /// Light-heavy, after bucket `b`: every thread relaxes the heavy edges of the vertices it
    /// scanned in b (once per final distance), then the next bucket is agreed again (b itself
    /// if rounding put a distance there).
    void heavy_step(lane& me, std::uint64_t b, step_slot& next) {
#pragma omp barrier
#pragma omp single
        next.bin.store(no_bin, std::memory_order_relaxed);
        for (const std::uint32_t u : me.settled) {
            const float du = dist_of(load(u));
            std::atomic_ref<float> at(_heavy_at[u]);
            if (at.load(std::memory_order_relaxed) == du) continue;
            at.store(du, std::memory_order_relaxed);
            relax(u, du, me.bin, _g.offsets[u] + _light[u], _g.offsets[u + 1]);
        }
        me.settled.clear();
        ++me.heavy_steps;
        propose(me, b, next);
#pragma omp barrier
    }

    /// Whether to relax u's list from `du` in bucket `b`: not when u has moved to an earlier
    /// bucket since the entry was made (it was relaxed there), nor, with --dedupe, when its
    /// list was relaxed from this very distance already (a repeated entry).
    bool should_scan(std::uint32_t u, float du, std::uint64_t b) noexcept {
        if (bucket_of(du) < b) return false;
        if (!_variant.dedupe) return true;
        std::atomic_ref<float> at(_scanned[u]);
        if (at.load(std::memory_order_relaxed) == du) return false;
        at.store(du, std::memory_order_relaxed);
        return true;
    }

    /// This thread's share of the frontier of bucket `b`; entries whose vertex has since
    /// moved to an earlier bucket are stale (it was relaxed there).
    void relax_frontier(lane& me, std::uint64_t b, std::uint64_t size) {
#pragma omp for schedule(dynamic, 64) nowait
        for (std::uint64_t i = 0; i < size; ++i) {
            const std::uint32_t u = _frontier[i];
            const float du = dist_of(load(u));
            if (should_scan(u, du, b)) scan(u, du, me);
        }
    }

    /// Bucket fusion: relaxes this thread's new entries of bucket `b` in the same step while
    /// they are few.
    void fuse(lane& me, std::uint64_t b) {
        while (b < me.bin.size() && !me.bin[b].empty() && me.bin[b].size() < fuse_below) {
            me.fused.clear();
            me.fused.swap(me.bin[b]);
            for (const std::uint32_t u : me.fused) {
                const float du = dist_of(load(u));
                if (should_scan(u, du, b)) scan(u, du, me);
            }
        }
    }

    /// Copies this thread's bin of the agreed next bucket into the shared frontier.
    void copy_to_frontier(lane& me, step_slot& next) {
        const std::uint64_t k = next.bin.load(std::memory_order_relaxed);
        if (k >= me.bin.size() || me.bin[k].empty()) return;
        std::vector<std::uint32_t>& mine = me.bin[k];
        const std::uint64_t at = next.tail.fetch_add(mine.size(), std::memory_order_relaxed);
        if (at + mine.size() > _frontier.size()) [[unlikely]] {
            // Not seen on Graph500 graphs: repeats in one bucket beyond the edge count.
            std::fprintf(stderr, "omp_graph_ref: sssp: a bucket of more than %zu entries\n",
                         _frontier.size());
            std::abort();
        }
        std::copy(mine.begin(), mine.end(), _frontier.begin() + static_cast<std::ptrdiff_t>(at));
        mine.clear();
    }

    std::uint64_t reached_degrees() const {
        std::uint64_t sum = 0;
        const std::uint64_t n = _g.n;
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (std::uint64_t v = 0; v < n; ++v) {
            if (parent_of(_labels[v]) != no_vertex) sum += _g.degree(v);
        }
        return sum;
    }

    const csr& _g;
    float _delta, _inv_delta;
    sssp_variant _variant;
    std::vector<std::uint64_t> _labels;
    std::vector<float> _scanned;        // --dedupe: the distance each list was last relaxed from
    std::vector<float> _heavy_at;       // light-heavy: the distance heavy edges were relaxed from
    std::vector<std::uint32_t> _light;  // light-heavy: edges lighter than Δ of every list
    std::vector<std::uint32_t> _frontier;  // the current bucket's entries (repeats possible)
    std::vector<lane> _lanes;              // [thread]
    std::array<step_slot, 2> _step;
};

// ---------------------------------------------------------------------------------------------
// Validation (outside the timed region).

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
verdict check_rules(
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
std::variant<std::vector<std::int64_t>, std::uint64_t> tree_depths(
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
std::vector<std::int64_t> sequential_bfs(const csr& g, std::uint32_t root) {
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
std::vector<float> sequential_dijkstra(const csr& g, std::uint32_t root) {
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

verdict validate_bfs(const csr& g, std::uint32_t root, const std::vector<std::uint32_t>& parent,
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

verdict validate_sssp(const csr& g, std::uint32_t root, const std::vector<std::uint64_t>& labels,
                      const search_stats& s, bool sequential) {
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
void corrupt(std::vector<std::uint32_t>& parent, std::uint32_t root) {
    for (std::uint64_t v = parent.size(); v-- > 0;) {
        if (v != root && parent[v] != no_vertex) {
            parent[v] = static_cast<std::uint32_t>(v);
            return;
        }
    }
}
void corrupt(std::vector<std::uint64_t>& labels, std::uint32_t root) {
    for (std::uint64_t v = labels.size(); v-- > 0;) {
        if (v != root && parent_of(labels[v]) != no_vertex) {
            labels[v] = pack(dist_of(labels[v]) / 2, parent_of(labels[v]));
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement and report, as am-graph500's.

struct options {
    gen::graph_spec spec;
    int roots = 64;
    std::vector<std::string> kernels{"bfs", "sssp"};
    float delta = 0;
    int threads = 0;  // 0: omp_get_max_threads()
    int alpha = 15;
    int beta = 18;
    bool json = false;
    bool quiet = false;
    bool validate = true;
    bool corrupt = false;
    sssp_variant sssp;
};

/// What the timed searches of one kernel measured.
struct figures {
    std::vector<double> times, edges, teps, levels;
    int failed = 0;
};

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void print_root(const char* name, std::uint32_t root, double t, const search_stats& s) {
    std::printf("%s root %u: %.6f s, %llu edges, ", name, root, t,
                static_cast<unsigned long long>(s.edges));
    if (std::string_view(name) == "bfs") {
        std::printf("%d levels (%d bottom-up)\n", s.levels, s.bottom_up);
    } else {
        std::printf("%d bucket steps (%d heavy), %llu list scans\n", s.levels, s.bottom_up,
                    static_cast<unsigned long long>(s.scans));
    }
}

/// One untimed warm-up from the first root, then per root a timed search and, outside the
/// timing, its validation. `result()` is the search's result (for --corrupt and `check`).
template <class Search, class Result, class Check>
figures measure(const options& o, const std::vector<std::uint32_t>& roots, const char* name,
                Search& search, Result&& result, Check&& check) {
    figures f;
    (void)search.run(roots.front());
    for (const std::uint32_t root : roots) {
        const double t0 = now();
        const search_stats s = search.run(root);
        const double t = now() - t0;
        f.times.push_back(t);
        f.edges.push_back(static_cast<double>(s.edges));
        f.teps.push_back(static_cast<double>(s.edges) / t);
        f.levels.push_back(s.levels);
        if (o.corrupt) corrupt(result(), root);
        if (o.validate) {
            if (const verdict v = check(root, s)) {
                std::fprintf(stderr,
                             "omp_graph_ref: %s from root %u failed validation: rule '%s' broken "
                             "at vertex %llu\n",
                             name, root, v->rule.c_str(),
                             static_cast<unsigned long long>(v->vertex));
                ++f.failed;
            }
        }
        if (!o.quiet) print_root(name, root, t, s);
    }
    return f;
}

struct summary {
    double min, q1, median, q3, max, mean, stddev;
};

summary summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto quantile = [&](double q) {
        const double pos = q * static_cast<double>(v.size() - 1);
        const auto lo = static_cast<std::size_t>(pos);
        const std::size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
    };
    double sum = 0, sq = 0;
    for (const double x : v) sum += x;
    const double mean = sum / static_cast<double>(v.size());
    for (const double x : v) sq += (x - mean) * (x - mean);
    const double sd = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0;
    return {v.front(), quantile(0.25), quantile(0.5), quantile(0.75), v.back(), mean, sd};
}

void print_summary(const char* kernel, const char* what, const summary& s) {
    std::printf(
        "%s min_%s: %.6g\n%s firstquartile_%s: %.6g\n%s median_%s: %.6g\n"
        "%s thirdquartile_%s: %.6g\n%s max_%s: %.6g\n%s mean_%s: %.6g\n"
        "%s stddev_%s: %.6g\n",
        kernel, what, s.min, kernel, what, s.q1, kernel, what, s.median, kernel, what, s.q3, kernel,
        what, s.max, kernel, what, s.mean, kernel, what, s.stddev);
}

/// Graph500's harmonic mean of the TEPS and its standard deviation.
std::pair<double, double> harmonic(const std::vector<double>& teps) {
    double inv = 0;
    for (const double t : teps) inv += 1 / t;
    const double n = static_cast<double>(teps.size());
    const double hmean = n / inv;
    double sq = 0;
    for (const double t : teps) sq += (1 / t - inv / n) * (1 / t - inv / n);
    return {hmean, n > 1 ? std::sqrt(sq) / (n - 1) * hmean * hmean : 0};
}

const char* graph_name(const gen::graph_spec& s) {
    return s.kind == gen::graph_kind::kronecker ? "kronecker" : "er";
}

/// am-graph500's JSON line (system "omp"), checked against graph500_format.hpp's parser.
std::string json_line(const options& o, const char* name, const figures& f, double hmean,
                      int threads, const std::string& extra) {
    const summary ts = summarize(f.teps);
    const am::bench::result base =
        am::bench::make_result("graph500", "omp", "openmp", 1, name, 0, "teps",
                               {ts.median, ts.min, ts.max, static_cast<int>(f.teps.size())});
    std::string line = am::bench::to_json(base);
    line.pop_back();
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  ",\"scale\":%d,\"edgefactor\":%d,\"graph\":\"%s\",\"harmonic_mean\":%.6g,"
                  "\"validated\":%s,\"levels\":%g%s,\"threads\":%d}",
                  o.spec.scale, o.spec.edgefactor, graph_name(o.spec), hmean,
                  o.validate && f.failed == 0 ? "true" : "false", summarize(f.levels).median,
                  extra.c_str(), threads);
    line += buf;
    if (!am::bench::graph500::parse(line)) {
        throw std::logic_error("omp_graph_ref: graph500_format.hpp cannot parse " + line);
    }
    return line;
}

void report(const options& o, const char* name, const figures& f, int threads,
            const std::string& extra_json) {
    const auto [hmean, hsd] = harmonic(f.teps);
    std::printf("%s NBFS: %zu\n", name, f.times.size());
    print_summary(name, "time", summarize(f.times));
    print_summary(name, "nedge", summarize(f.edges));
    print_summary(name, "TEPS", summarize(f.teps));
    std::printf("%s harmonic_mean_TEPS: %.6g\n%s harmonic_stddev_TEPS: %.6g\n", name, hmean, name,
                hsd);
    const char* outcome = !o.validate ? "not run" : f.failed == 0 ? "passed" : "FAILED";
    std::printf("%s validation: %s%s\n", name, outcome,
                o.validate && o.spec.scale <= 12 ? " (with the sequential cross-check)" : "");
    if (o.json) std::printf("%s\n", json_line(o, name, f, hmean, threads, extra_json).c_str());
    std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// Options and main.

[[noreturn]] void bad(const std::string& why) {
    throw std::invalid_argument(why);
}

float real_of(const char* flag, const std::string& text) {
    char* end = nullptr;
    const float x = std::strtof(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0') bad(std::string(flag) + ": bad number '" + text + "'");
    return x;
}

std::vector<am::bench::option_spec> option_table(options& o) {
    using namespace am::bench;
    return {
        {"--scale", "S", "2^S vertices (default 18)", store_int(o.spec.scale, "--scale", 1)},
        {"--edgefactor", "E", "edges per vertex (default 16)",
         store_int(o.spec.edgefactor, "--edgefactor", 1)},
        {"--roots", "R", "timed roots per kernel (default 64), after one untimed warm-up",
         store_int(o.roots, "--roots", 1)},
        {"--kernel", "K[,K]", "bfs, sssp (default both)",
         [&o](const std::string& v) {
             o.kernels = to_choices("--kernel", v, {"bfs", "sssp"});
         }},
        {"--delta", "D",
         "delta-stepping bucket width (default 0: am's automatic choice,\n"
         "5 x mean edge weight / mean degree of the vertices with edges)",
         [&o](const std::string& v) {
             o.delta = real_of("--delta", v);
             if (!(o.delta == 0 || o.delta >= 1e-6f) || !std::isfinite(o.delta)) {
                 bad("--delta must be 0 (automatic) or at least 1e-6, and finite");
             }
         }},
        {"--threads", "T", "OpenMP threads (default omp_get_max_threads())",
         store_int(o.threads, "--threads", 1)},
        {"--alpha", "A", "BFS: top-down -> bottom-up when frontier edges > unexplored / A (15)",
         store_int(o.alpha, "--alpha", 1)},
        {"--beta", "B", "BFS: bottom-up -> top-down when the frontier < N / B (18)",
         store_int(o.beta, "--beta", 1)},
        {"--graph", "G", "kronecker (default) or er",
         [&o](const std::string& v) {
             const std::string g = to_choice("--graph", v, {"kronecker", "er"});
             o.spec.kind = g == "er" ? gen::graph_kind::erdos_renyi : gen::graph_kind::kronecker;
         }},
        {"--seed", "X", "generator seed (default that of graph_spec)",
         store_count(o.spec.seed, "--seed")},
        {"--json", nullptr, "one JSON line per kernel on stdout (am-graph500's format)",
         store_flag(o.json)},
        {"--quiet", nullptr, "no line per root", store_flag(o.quiet)},
        {"--no-validate", nullptr,
         "skip the validation (on by default, outside the timed region;\n"
         "at SCALE <= 12 also against a sequential BFS / Dijkstra)",
         store_flag(o.validate, false)},
        {"--dedupe", nullptr,
         "SSSP, beyond GAP: skip a bucket entry whose vertex's list was relaxed\n"
         "from the same distance already (a repeat); off by default",
         store_flag(o.sssp.dedupe)},
        {"--light-heavy", nullptr,
         "SSSP, beyond GAP: lists sorted by weight, the edges lighter than delta\n"
         "relaxed in the bucket steps and the heavy ones once per vertex when its\n"
         "bucket is done (a step more per bucket); off by default",
         store_flag(o.sssp.light_heavy)},
        {"--corrupt", nullptr, "debug: damage every result before validation (must fail)",
         store_flag(o.corrupt)},
    };
}

constexpr const char* usage_text =
    "Shared-memory OpenMP reference for am-graph500's BFS and SSSP (GAP-style direction-\n"
    "optimizing BFS, delta-stepping SSSP) on the same graph and roots, with the same TEPS.";

options parse(int argc, char** argv) {
    options o;
    o.spec.scale = 18;
    (void)am::bench::parse_args(argc, argv, usage_text, option_table(o));
    try {
        gen::check_spec(o.spec);
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "omp_graph_ref: %s (try --help)\n", e.what());
        std::exit(2);
    }
    return o;
}

/// Runs one kernel over the roots; returns the number of failed validations.
int run_kernel(const options& o, const std::string& kernel, const csr& g,
               const std::vector<std::uint32_t>& roots, int threads) {
    const bool sequential = o.spec.scale <= 12;
    if (kernel == "bfs") {
        bfs_search search(g, o.alpha, o.beta);
        const figures f = measure(
            o, roots, "bfs", search, [&]() -> auto& { return search.parents(); },
            [&](std::uint32_t root, const search_stats& s) {
                return validate_bfs(g, root, search.parents(), s, sequential);
            });
        report(o, "bfs", f, threads, "");
        return f.failed;
    }
    const float delta = o.delta == 0 ? auto_delta(g) : o.delta;
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", static_cast<double>(delta));
    std::printf("sssp delta: %s (%s)\n", text, o.delta == 0 ? "automatic, as am's" : "--delta");
    sssp_search search(g, delta, threads, o.sssp);
    const figures f = measure(
        o, roots, "sssp", search, [&]() -> auto& { return search.labels(); },
        [&](std::uint32_t root, const search_stats& s) {
            return validate_sssp(g, root, search.labels(), s, sequential);
        });
    report(o, "sssp", f, threads,
           std::string(",\"delta\":") + text + (o.sssp.dedupe ? ",\"dedupe\":true" : "") +
               (o.sssp.light_heavy ? ",\"light_heavy\":true" : ""));
    return f.failed;
}

int run(const options& o) {
    if (o.threads > 0) omp_set_num_threads(o.threads);
    const int threads = omp_get_max_threads();
    const double t0 = now();
    const csr g = build_csr(o.spec, o.sssp.light_heavy);
    const double built = now() - t0;
    const std::vector<std::uint32_t> roots = choose_roots(o.spec, g, o.roots);
    std::printf(
        "SCALE: %d\nedgefactor: %d\ngraph: %s\nNBFS: %zu\n"
        "graph_generation_and_construction: %.6g\nthreads: %d\n"
        "edges (undirected, no self-loops): %llu\n",
        o.spec.scale, o.spec.edgefactor,
        o.spec.kind == gen::graph_kind::kronecker ? "kronecker" : "erdos-renyi+cycle", roots.size(),
        built, threads, static_cast<unsigned long long>(g.adj.size() / 2));
    if (roots.empty()) throw std::runtime_error("omp_graph_ref: the graph has no edges");
    int failed = 0;
    for (const std::string& k : o.kernels) failed += run_kernel(o, k, g, roots, threads);
    return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "omp_graph_ref: %s\n", e.what());
        return 1;
    }
}
