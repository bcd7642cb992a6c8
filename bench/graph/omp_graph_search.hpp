// SPDX-License-Identifier: MIT
/// @file
/// omp_graph_ref's graph and searches (see omp_graph_ref.cpp): am-graph500's CSR built with
/// OpenMP, its roots and automatic Δ, the direction-optimizing BFS and the Δ-stepping SSSP.
/// Header-only, included by omp_graph_ref.cpp alone; needs OpenMP, not am.
#pragma once

#include <graph/generator.hpp>

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace am::bench::omp_graph {

namespace gen = am::graph;

/// No parent (unreached); no bucket.
constexpr std::uint32_t no_vertex = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t no_bin = std::numeric_limits<std::uint64_t>::max();
constexpr float infinity = std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------------------------
// The graph: build_csr's CSR on one node.

/// An allocator that leaves trivial elements uninitialised: the parallel loop that first
/// writes a large array then places its pages (first touch), spread over the NUMA nodes as
/// GAP's parallel initialisation spreads them, not all on the node of the allocating thread.
template <class T>
struct first_touch_allocator : std::allocator<T> {
    static_assert(std::is_trivially_default_constructible_v<T>);
    first_touch_allocator() noexcept = default;
    template <class U>
    first_touch_allocator(const first_touch_allocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

/// A large array of a search or of the graph, placed by its first parallel writer.
template <class T>
using big_array = std::vector<T, first_touch_allocator<T>>;

/// `n` copies of `value`, written by all the threads (static schedule).
template <class T>
big_array<T> parallel_filled(std::uint64_t n, T value) {
    big_array<T> a(n);
#pragma omp parallel for schedule(static)
    for (std::uint64_t i = 0; i < n; ++i) a[i] = value;
    return a;
}

/// One entry of a list: as am's CSR, a target and the edge's weight.
struct adjacency {
    std::uint32_t target;
    float w;
};

/// The CSR of the whole graph: both directions of every edge, self-loops dropped,
/// duplicates kept (build_csr's rule in apps/graph/src/csr.cpp).
struct csr {
    std::uint64_t n = 0;
    big_array<std::uint64_t> offsets;  // n + 1
    big_array<adjacency> adj;          // SSSP
    big_array<std::uint32_t> targets;  // BFS: adj's targets alone
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
void sort_lists(const csr& g, big_array<adjacency>& adj, Less less) {
#pragma omp parallel for schedule(dynamic, 1024)
    for (std::uint64_t v = 0; v < g.n; ++v) {
        std::sort(adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                  adj.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]), less);
    }
}

/// Degree counting, prefix sums, placement at atomic cursors, then every list sorted by
/// (target, weight) so the CSR does not depend on the threads' interleaving; with
/// `weight_order` (--light-heavy) the SSSP lists are then sorted by weight.
inline csr build_csr(const gen::graph_spec& spec, bool weight_order) {
    csr g;
    g.n = gen::vertex_count(spec);
    g.offsets = parallel_filled<std::uint64_t>(g.n + 1, 0);
    for_each_direction(spec, [&g](std::uint32_t u, std::uint32_t, float) {
        std::atomic_ref<std::uint64_t>(g.offsets[u]).fetch_add(1, std::memory_order_relaxed);
    });
    std::uint64_t sum = 0;
    for (std::uint64_t& o : g.offsets) sum += std::exchange(o, sum);
    g.adj = parallel_filled(sum, adjacency{0, 0});
    big_array<std::uint64_t> cursor(g.offsets.begin(), g.offsets.end() - 1);
    for_each_direction(spec, [&](std::uint32_t u, std::uint32_t v, float w) {
        const std::uint64_t at =
            std::atomic_ref<std::uint64_t>(cursor[u]).fetch_add(1, std::memory_order_relaxed);
        g.adj[at] = adjacency{v, w};
    });
    sort_lists(g, g.adj, [](const adjacency& a, const adjacency& b) {
        return a.target != b.target ? a.target < b.target : a.w < b.w;
    });
    g.targets = big_array<std::uint32_t>(sum);
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
inline std::vector<std::uint32_t> choose_roots(const gen::graph_spec& spec, const csr& g,
                                               int count) {
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
/// The sum of the weights is exact in double (k / 2^24 each, fewer than 2^29 entries), so
/// it does not depend on the order of summation.
inline float auto_delta(const csr& g) {
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

inline bool test_bit(const big_array<std::uint64_t>& bits, std::uint64_t v) noexcept {
    return (bits[v >> 6] >> (v & 63)) & 1;
}

// ---------------------------------------------------------------------------------------------
// Direction-optimizing BFS.

/// Direction-optimizing BFS; `run` returns its figures, `parents()` its tree. Not
/// thread-safe: runs one search at a time, on all the OpenMP threads.
class bfs_search {
  public:
    bfs_search(const csr& g, int alpha, int beta)
        : _g(g),
          _alpha(alpha),
          _beta(beta),
          _parent(parallel_filled(g.n, no_vertex)),
          _cur(parallel_filled<std::uint32_t>(g.n, 0)),
          _next(parallel_filled<std::uint32_t>(g.n, 0)),
          _front(parallel_filled<std::uint64_t>((g.n + 63) / 64, 0)),
          _awake(parallel_filled<std::uint64_t>((g.n + 63) / 64, 0)) {}

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

    [[nodiscard]] big_array<std::uint32_t>& parents() noexcept { return _parent; }

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
    big_array<std::uint32_t> _parent;
    big_array<std::uint32_t> _cur, _next;  // frontier queues
    std::uint64_t _cur_size = 0;
    big_array<std::uint64_t> _front, _awake;  // frontier bitmaps of the bottom-up steps
};

// ---------------------------------------------------------------------------------------------
// Δ-stepping SSSP.

/// A label: the distance's bits above the parent (non-negative floats order as their bits).
inline std::uint64_t pack(float d, std::uint32_t parent) noexcept {
    return (std::uint64_t{std::bit_cast<std::uint32_t>(d)} << 32) | parent;
}
inline float dist_of(std::uint64_t label) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(label >> 32));
}
inline std::uint32_t parent_of(std::uint64_t label) noexcept {
    return static_cast<std::uint32_t>(label);
}

/// Lowers `target` to `value` if that is smaller.
inline void fetch_min(std::atomic<std::uint64_t>& target, std::uint64_t value) noexcept {
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

/// Δ-stepping SSSP; `run` returns its figures, `labels()` the distances and parents (`pack`).
/// Not thread-safe: runs one search at a time, on all the OpenMP threads.
class sssp_search {
  public:
    /// With `v.light_heavy`, `g`'s lists must be sorted by weight.
    sssp_search(const csr& g, float delta, int threads, sssp_variant v)
        : _g(g),
          _delta(delta),
          _inv_delta(1.0f / delta),
          _variant(v),
          _labels(parallel_filled(g.n, pack(infinity, no_vertex))),
          _scanned(parallel_filled(g.n, infinity)),
          _heavy_at(parallel_filled(v.light_heavy ? g.n : 0, infinity)),
          _light(v.light_heavy ? g.n : 0),
          _frontier(parallel_filled<std::uint32_t>(g.adj.size() + 1, 0)),
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

    [[nodiscard]] big_array<std::uint64_t>& labels() noexcept {
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
    big_array<std::uint64_t> _labels;
    big_array<float> _scanned;           // --dedupe: the distance each list was last relaxed from
    big_array<float> _heavy_at;          // light-heavy: the distance heavy edges were relaxed from
    big_array<std::uint32_t> _light;     // light-heavy: edges lighter than Δ of every list
    big_array<std::uint32_t> _frontier;  // the current bucket's entries (repeats possible)
    std::vector<lane> _lanes;            // [thread]
    std::array<step_slot, 2> _step;
};

}  // namespace am::bench::omp_graph
