// SPDX-License-Identifier: MIT
/// @file
/// Distributed graphs and Graph500 kernels on `am`'s typed layer (AM++ §4): a 1-D
/// partitioned CSR built from the generators of `graph/generator.hpp`, level-synchronous
/// direction-optimising BFS, Δ-stepping SSSP, graph exploration with nested messages, and
/// validation by the Graph500 rules.
///
/// Every function taking a `context` is collective: all ranks call it with the same
/// arguments, from the rank's own thread. Objects hold per-rank state and are not thread-safe.
#pragma once

#include <graph/generator.hpp>

#include <am/coll.hpp>
#include <am/context.hpp>
#include <am/typed.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace am::graph {

/// Block partition of [0, n) over `ranks`: rank r owns [r·chunk, (r+1)·chunk) ∩ [0, n), with
/// `chunk` a multiple of 64 (a bitmap word never straddles two ranks).
class partition {
  public:
    partition() = default;
    partition(std::uint64_t n, int ranks);
    /// Owner of vertex `v` (< n): one multiply, no division.
    [[nodiscard]] int owner(std::uint32_t v) const noexcept {
        return static_cast<int>((static_cast<detail::u128>(_magic) * v) >> 64);
    }
    [[nodiscard]] std::uint32_t first(int rank) const noexcept;
    [[nodiscard]] std::uint32_t count(int rank) const noexcept;
    [[nodiscard]] std::uint64_t chunk() const noexcept { return _chunk; }
    [[nodiscard]] std::uint64_t n() const noexcept { return _n; }

  private:
    std::uint64_t _n = 0;
    std::uint64_t _chunk = 1;
    std::uint64_t _magic = 0;  // ⌊2^64 / chunk⌋ + 1: exact quotients for 32-bit v
    int _ranks = 1;
};

/// One adjacency entry: the neighbour's global id and the edge's weight.
struct adjacency {
    std::uint32_t target;
    float w;
};

/// This rank's share of an undirected graph: the adjacency (both directions of every edge,
/// self-loops dropped, duplicates kept) of the vertices it owns, each list sorted by weight.
struct csr_graph {
    graph_spec spec;
    partition part;
    int rank = 0;
    std::uint32_t first = 0;             ///< global id of local vertex 0
    std::uint32_t local_n = 0;           ///< vertices owned here
    std::vector<std::uint64_t> offsets;  ///< local_n + 1 entries into `adj`
    std::vector<adjacency> adj;
    std::uint64_t global_edges = 0;  ///< undirected edges (no self-loops) in the graph

    [[nodiscard]] std::span<const adjacency> neighbours(std::uint32_t local) const noexcept {
        return {adj.data() + offsets[local], adj.data() + offsets[local + 1]};
    }
    [[nodiscard]] std::uint64_t degree(std::uint32_t local) const noexcept {
        return offsets[local + 1] - offsets[local];
    }
    [[nodiscard]] bool owns(std::uint32_t v) const noexcept { return v - first < local_n; }
    /// Bytes of this rank's CSR (offsets and adjacency).
    [[nodiscard]] std::uint64_t bytes() const noexcept {
        return offsets.size() * sizeof(std::uint64_t) + adj.size() * sizeof(adjacency);
    }
};

/// Generates the graph of `spec` (each rank its share of the edges) and builds the CSR:
/// the edges are generated twice, once to count degrees and once to place them, so no edge
/// list is ever stored. Collective. Throws std::invalid_argument for a bad spec.
csr_graph build_csr(context& ctx, const graph_spec& spec);

/// Roots as Graph500 chooses search keys: the first `count` distinct candidates of the
/// spec's root stream whose vertex has an edge (all such vertices when fewer have one).
/// Collective; the same list on every rank.
std::vector<std::uint32_t> choose_roots(context& ctx, const csr_graph& g, int count);

/// Sum and minimum over ranks (collective): am::coll's allreduce on the world team, O(log P)
/// rounds of one message per rank.
class reductions {
  public:
    explicit reductions(context& ctx);
    /// The sum of every rank's `v` (wrapping modulo 2^64).
    std::uint64_t sum(std::uint64_t v);
    /// The smallest of every rank's `v`.
    std::uint64_t min(std::uint64_t v);
    /// Replaces each `v[i]` by its sum over ranks, combined in rank order, so every rank gets
    /// the same bits; the same `v.size()` everywhere.
    void sum(std::span<double> v);

  private:
    coll::team _world;
};

/// Result of one search: per local vertex the predecessor (global id; the root's is itself,
/// −1 unreached) and, for SSSP, the distance (+∞ unreached). Connected components fill
/// `pred` with a spanning forest (each tree's root is its own parent) and `component`;
/// PageRank fills `score` only.
struct search_result {
    std::vector<std::int64_t> pred;
    std::vector<float> dist;               ///< SSSP only
    std::vector<std::uint32_t> component;  ///< CC: the smallest vertex id of the component
    std::vector<double> score;             ///< PageRank: the vertex's rank (they sum to 1)
    std::uint64_t edges = 0;               ///< undirected edges in the reached component (global)
    int levels = 0;              ///< BFS levels / SSSP rounds / CC rounds / PageRank iterations / 0
    int bottom_up_levels = 0;    ///< BFS levels run bottom-up
    std::uint64_t messages = 0;  ///< typed messages this rank sent
};

/// Options of the kernels.
struct kernel_options {
    float delta = 0;                   ///< Δ of Δ-stepping; 0: chosen by `auto_delta`
    bool bucket_fusion = true;         ///< SSSP: relax what lands in the bucket in the same round
    bool direction_optimizing = true;  ///< BFS: switch to bottom-up steps on large frontiers
    double alpha = 14;                 ///< BFS: top-down → bottom-up when m_f > m_u / α
    double beta = 24;                  ///< BFS: bottom-up → top-down when n_f < n / β
    double damping = 0.85;             ///< PageRank: the damping factor d
    double tolerance = 1e-6;           ///< PageRank: stop when Σ|score change| < tolerance
    int max_iterations = 200;          ///< PageRank: stop after this many iterations
    /// BFS and SSSP: threads per rank, 1 to 64 (AM++ §4.3.1). Above 1 the kernel starts
    /// `threads − 1` worker threads for its lifetime; they and the rank's thread split each
    /// level's or round's work and run the message handlers, so the context must have
    /// `config::thread_multiple`. The other kernels take 1 only.
    int threads = 1;
};

/// Level-synchronous BFS: one epoch per level (depth 0: handlers send nothing). Top-down
/// levels send (vertex, parent) to the owner through a coalescing layer; bottom-up levels
/// exchange the frontier bitmap and search parents locally (Beamer's direction optimisation).
///
/// With `kernel_options::threads` T > 1, T − 1 worker threads (started by the constructor,
/// joined by the destructor) help the rank's thread inside `run`: a top-down level's frontier
/// is split in chunks that every thread takes in turn, sending visits through the shared
/// coalescing layer, and every thread polls so that visit handlers run on all of them; a
/// bottom-up level splits the unreached local vertices. Outside `run` the workers wait
/// without polling, so the program's other handlers stay on the rank's thread.
class bfs_kernel {
  public:
    /// Collective. Throws std::invalid_argument naming the rank for `threads` outside [1, 64],
    /// or above 1 on a context without `config::thread_multiple`.
    bfs_kernel(context& ctx, const csr_graph& g, kernel_options opt = {});
    ~bfs_kernel();
    bfs_kernel(const bfs_kernel&) = delete;
    bfs_kernel& operator=(const bfs_kernel&) = delete;
    /// Searches from global vertex `root`; collective. Fills `out.pred` (local_n entries),
    /// `edges`, `levels`, `bottom_up_levels` and `messages`.
    void run(std::uint32_t root, search_result& out);

  private:
    struct state;
    std::unique_ptr<state> _s;
};

/// Δ chosen from the graph: `auto_delta_factor` × the mean edge weight / the mean degree of
/// the vertices that have edges (Meyer & Sanders: Δ = Θ(1/d) for weights uniform in [0, 1]);
/// the factor was measured on Kronecker graphs, edgefactor 16, SCALE 18 and 20 (docs/graph.md).
/// Collective (two sums over ranks); at least 1e-6.
struct delta_choice {
    float delta = 0;
    double mean_weight = 0;
    double mean_degree = 0;
};
inline constexpr double auto_delta_factor = 5;
delta_choice auto_delta(context& ctx, const csr_graph& g);

/// Δ-stepping SSSP (Meyer & Sanders), one epoch per light-edge round and one per bucket's
/// heavy edges; relaxations to other ranks go through a coalescing layer.
///
/// With `kernel_options::threads` T > 1, T − 1 worker threads (started by the constructor,
/// joined by the destructor) help the rank's thread inside `run`. Each thread owns a slice
/// of the rank's vertices (starting at multiples of 512) and alone reads and writes their
/// distances, buckets and bitmaps, relaxing from its own vertices only; a relaxation of another
/// thread's vertex goes to that thread in chunks of 256 (through a mailbox, during the round)
/// as a message to another rank would. Relaxation handlers run on every thread and hand over
/// likewise. During `run` no thread outside the kernel's may poll the context: a relaxation
/// handler on one throws std::logic_error. Outside `run` the workers do not poll.
class sssp_kernel {
  public:
    /// Collective. Δ = `opt.delta`, or `auto_delta` when it is 0. Throws
    /// std::invalid_argument naming the rank for Δ < 1e-6 (other than 0) or not finite, for a
    /// heaviest edge over 2^20 − 3 times Δ (the ring of bucket queues), for `threads` outside
    /// [1, 64], or above 1 on a context without `config::thread_multiple`.
    sssp_kernel(context& ctx, const csr_graph& g, kernel_options opt = {});
    /// The Δ in use.
    [[nodiscard]] float delta() const noexcept;
    ~sssp_kernel();
    sssp_kernel(const sssp_kernel&) = delete;
    sssp_kernel& operator=(const sssp_kernel&) = delete;
    /// Shortest paths from global vertex `root`; collective. Fills `out.pred` and `out.dist`
    /// (local_n entries each), `edges`, `levels` (light and heavy rounds) and `messages`.
    void run(std::uint32_t root, search_result& out);

  private:
    struct state;
    std::unique_ptr<state> _s;
};

/// Graph exploration (AM++ §4.2): a visit's handler marks the vertex, explores its local
/// part depth-first and sends visits to remote neighbours from inside the handler — one
/// epoch for the whole search, ended by the general termination detector.
class explore_kernel {
  public:
    explore_kernel(context& ctx, const csr_graph& g);
    ~explore_kernel();
    explore_kernel(const explore_kernel&) = delete;
    explore_kernel& operator=(const explore_kernel&) = delete;
    /// Explores the component of global vertex `root`; collective. Fills `out.pred`
    /// (local_n entries, a spanning tree of the component), `edges` and `messages`.
    void run(std::uint32_t root, search_result& out);

  private:
    struct state;
    std::unique_ptr<state> _s;
};

/// Connected components by minimum-label propagation: every vertex starts with its own id,
/// and each round (one epoch) the vertices whose label dropped offer it to their neighbours;
/// offers to another rank are combined at the source per target vertex (`reduce_by_key`
/// with min) and coalesced. Ends when a round changes no label; the label is then the
/// smallest vertex id of the component, and `pred` records from which neighbour each vertex
/// took its final label (a spanning forest rooted at the labels, which validation walks).
class cc_kernel {
  public:
    cc_kernel(context& ctx, const csr_graph& g);
    ~cc_kernel();
    cc_kernel(const cc_kernel&) = delete;
    cc_kernel& operator=(const cc_kernel&) = delete;
    /// Labels every vertex; collective. Fills `out.component` and `out.pred` (local_n entries
    /// each), `edges` (every edge of the graph), `levels` (rounds) and `messages`.
    void run(search_result& out);

  private:
    struct state;
    std::unique_ptr<state> _s;
};

/// PageRank by power iteration, pushing: each iteration (one epoch) every vertex sends
/// d·score/degree along each edge; contributions to another rank's vertex are summed at the
/// source (`reduce_by_key` with +) and coalesced. Vertices without edges spread their score
/// evenly (a sum over ranks). Stops when the L1 change of an iteration is below
/// `kernel_options::tolerance`, or after `max_iterations`.
class pagerank_kernel {
  public:
    /// Collective. Throws std::invalid_argument naming the rank for a damping outside [0, 1),
    /// a tolerance ≤ 0 or max_iterations < 1.
    pagerank_kernel(context& ctx, const csr_graph& g, kernel_options opt = {});
    ~pagerank_kernel();
    pagerank_kernel(const pagerank_kernel&) = delete;
    pagerank_kernel& operator=(const pagerank_kernel&) = delete;
    /// Ranks every vertex; collective. Fills `out.score` (local_n entries), `edges` (edges of
    /// the graph × iterations), `levels` (iterations) and `messages`.
    void run(search_result& out);

  private:
    struct state;
    std::unique_ptr<state> _s;
};

/// What validation checks, by kernel.
enum class kernel_kind { bfs, sssp, explore, cc, pagerank };

/// The kernel's name as the CLI and the JSON lines spell it: "bfs", "sssp", "explore".
constexpr const char* to_string(kernel_kind k) noexcept {
    switch (k) {
        case kernel_kind::bfs:
            return "bfs";
        case kernel_kind::sssp:
            return "sssp";
        case kernel_kind::explore:
            return "explore";
        case kernel_kind::cc:
            return "cc";
        case kernel_kind::pagerank:
            return "pagerank";
    }
    return "?";
}

/// Outcome of a validation: `errors` over all ranks, the first few described.
struct validation {
    std::uint64_t errors = 0;
    std::uint64_t edges = 0;  ///< undirected edges in the component, recounted
    std::string first_error;  ///< this rank's first error, empty if none
    [[nodiscard]] bool ok() const noexcept { return errors == 0; }
};

/// Validates searches by the Graph500 rules: predecessors in range, forming a tree to the
/// root (no cycle, root its own parent at distance 0); every reached vertex's parent edge
/// exists with d(v) = d(parent) + w (w = 1 for BFS levels); no edge joins a reached and an
/// unreached vertex; for every edge |d(u) − d(v)| ≤ w (BFS: levels differ by at most 1);
/// the kernel's edge count equals the recount. `run` is collective and gathers the
/// predecessors (and distances) of all vertices on every rank (untimed, 12 bytes per vertex).
///
/// Connected components (`root` unused): every vertex is labelled; `pred` is a forest without
/// cycles whose roots are their own label, each parent edge exists and joins equal labels, so
/// a label is a vertex of the component it names; every edge joins equal labels, so a
/// component has one label; and no vertex's label exceeds its id, so the label is the
/// component's smallest id. PageRank (`root` unused): scores are positive, sum to 1 within
/// 1e-6, and are a fixed point of the PageRank map within the kernel's tolerance, recomputed
/// here from every vertex's gathered score (16 bytes per vertex).
class validator {
  public:
    /// Collective. PageRank's check uses `opt`'s damping and tolerance.
    validator(context& ctx, const csr_graph& g, kernel_options opt = {});
    ~validator();
    validator(const validator&) = delete;
    validator& operator=(const validator&) = delete;
    /// Checks `r`, the result of a `kind` search from `root`; collective. The returned
    /// error count is global (the same on every rank); `first_error` is this rank's.
    validation run(kernel_kind kind, std::uint32_t root, const search_result& r);

  private:
    struct state;
    std::unique_ptr<state> _s;
};

}  // namespace am::graph
