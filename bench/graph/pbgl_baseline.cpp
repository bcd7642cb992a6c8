// SPDX-License-Identifier: MIT
// Over 500 lines on purpose: the whole baseline in one program, read beside apps/graph.
/// @file
/// The Parallel BGL baseline of the Graph500 kernels of apps/graph (`am-graph500`): the same
/// graph (apps/graph/include/graph/generator.hpp, each MPI process generating its part of the
/// edges), the same roots and the same counting of traversed edges, with PBGL's distributed
/// adjacency_list, its level-synchronised breadth_first_search (distributed queue), its
/// delta_stepping_shortest_paths, its connected_components and its page_rank. Prints one JSON
/// line per kernel with system "pbgl".
///
///   mpirun -n 2 pbgl_baseline --scale 18 --kernel bfs,sssp,cc,pagerank --json
///
/// Every root's result is validated (untimed) as Graph500 does: d(root) = 0, no edge joins a
/// reached and an unreached vertex, no edge can shorten a distance, and every reached vertex
/// but the root has a neighbour through which its distance is attained. --check also compares
/// the distances with a sequential BFS / Dijkstra on rank 0 (small scales: the smoke test).
///
/// The whole-graph kernels run once per root, ignoring it, as am-graph500 runs them:
///  - cc: PBGL's connected_components (local components, then parent pointers hooked across
///    processes and doubled), on an undirectedS graph of its own (its first stage runs BGL's
///    sequential connected_components, which requires undirected_tag, on each process's
///    local subgraph). Its result is a representative vertex per vertex, and the number of
///    components (connected_components with a dummy_property_map: roots counted); the
///    components are not renumbered 0..c−1, as am's are not (PBGL's renumbering,
///    number_components_from_parents with a component map, searches the vector of roots
///    found so far for every vertex: vertices × components on a process, and every isolated
///    vertex is a component). TEPS: the graph's edges / time, as am's.
///    Validated: labels equal across every edge, every label labels itself, and as many
///    labels as PBGL counted components; --check: the same partition as a union-find.
///  - pagerank: PBGL's page_rank (push along out-edges; contributions to another process's
///    vertex summed in ghost cells and sent at the step's synchronisation), on the directedS
///    graph with both directions stored (out-degree = am's degree, multi-edges kept). PBGL's
///    map is r' = (1−d) + d·Σ r(u)/deg(u), from r = 1/n: scores are not normalised and a
///    vertex without edges keeps 1−d and passes nothing on (am's kernel spreads the score of
///    vertices without edges evenly and its scores sum to 1; on this graph, whose dangling
///    vertices are isolated, both maps have the same fixed point up to a factor). It runs
///    --iterations N steps (n_iterations), or without it until the L1 change of a step,
///    relative to the total, is below --tolerance (am's rule; one allreduce per step).
///    TEPS: edges × iterations / time, as am's. Validated: equal within 1e-9 to the same map
///    applied N times from 1/n by the processes over their generated edges (an n-vector
///    allreduce a step, untimed), scores ≥ 1−d and finite, and one more step changes them by
///    at most d^N times the first step's change (the map is a d-contraction in L1); --check:
///    equal within 1e-9 to a sequential power iteration of the same map and count on rank 0,
///    and the distance of the normalised scores to am's definition printed.
#include "graph500_format.hpp"
#include "lib/options.hpp"

#include <graph/generator.hpp>

// PBGL: use_mpi.hpp must come first.
#include <boost/graph/use_mpi.hpp>
//
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/distributed/adjacency_list.hpp>
#include <boost/graph/distributed/connected_components.hpp>
#include <boost/graph/distributed/delta_stepping_shortest_paths.hpp>
#include <boost/graph/distributed/mpi_process_group.hpp>
#include <boost/graph/distributed/page_rank.hpp>
#include <boost/graph/iteration_macros.hpp>
#include <boost/graph/visitors.hpp>
#include <boost/mpi/environment.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

namespace gen = am::graph;
namespace pbgl = boost::graph::distributed;
namespace g500 = am::bench::graph500;

using graph_t =
    boost::adjacency_list<boost::vecS, boost::distributedS<pbgl::mpi_process_group, boost::vecS>,
                          boost::directedS, boost::no_property,
                          boost::property<boost::edge_weight_t, float>>;
using vertex_t = boost::graph_traits<graph_t>::vertex_descriptor;
/// Connected components: PBGL's needs an undirected graph (see the file comment).
using ugraph_t =
    boost::adjacency_list<boost::vecS, boost::distributedS<pbgl::mpi_process_group, boost::vecS>,
                          boost::undirectedS>;
using uvertex_t = boost::graph_traits<ugraph_t>::vertex_descriptor;
using level_t = std::uint32_t;

constexpr level_t unreached_level = std::numeric_limits<level_t>::max();
constexpr float unreached_dist = std::numeric_limits<float>::max();

struct options {
    gen::graph_spec spec;
    std::vector<std::string> kernels = {"bfs"};
    int roots = 64;
    float delta = 0.1f;
    double damping = 0.85;    ///< PageRank
    double tolerance = 1e-6;  ///< PageRank without --iterations: relative L1 change
    int iterations = 0;       ///< PageRank: a fixed number of steps (0: until the tolerance)
    int max_iterations = 200;
    bool json = false;
    bool check = false;
    bool verbose = false;
};

const char* const usage_text =
    "Run as mpirun -n P pbgl_baseline [options].\n"
    "Graph500 BFS, SSSP (delta-stepping), connected components and PageRank with the\n"
    "Parallel BGL on the graph of apps/graph/include/graph/generator.hpp: the baseline of\n"
    "am-graph500.";

[[noreturn]] void bad(const std::string& msg) {
    throw std::invalid_argument(msg);
}

long long number_of(const char* flag, const std::string& text) {
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 0);
    if (end == text.c_str() || *end != '\0') bad(std::string(flag) + ": bad number '" + text + "'");
    return v;
}

double real_of(const char* flag, const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0') bad(std::string(flag) + ": bad number '" + text + "'");
    return v;
}

// The options, bound to `o`.
std::vector<am::bench::option_spec> option_table(options& o) {
    return {
        {"--scale", "S", "2^S vertices (default 18)",
         [&o](const std::string& v) { o.spec.scale = static_cast<int>(number_of("--scale", v)); }},
        {"--edgefactor", "E", "edges per vertex (default 16)",
         [&o](const std::string& v) {
             o.spec.edgefactor = static_cast<int>(number_of("--edgefactor", v));
         }},
        {"--kernel", "K[,K]", "bfs, sssp, cc, pagerank (default bfs)",
         [&o](const std::string& v) {
             o.kernels = am::bench::to_choices("--kernel", v, {"bfs", "sssp", "cc", "pagerank"});
         }},
        {"--roots", "R",
         "timed roots per kernel (default 64), after one untimed warm-up;\n"
         "cc and pagerank run once per root, ignoring it",
         [&o](const std::string& v) {
             o.roots = static_cast<int>(number_of("--roots", v));
             if (o.roots < 1) bad("--roots must be at least 1");
         }},
        {"--delta", "D", "delta-stepping bucket width (default 0.1)",
         [&o](const std::string& v) {
             o.delta = static_cast<float>(real_of("--delta", v));
             if (!(o.delta > 0)) bad("--delta must be positive");
         }},
        {"--damping", "D", "PageRank damping factor (default 0.85)",
         [&o](const std::string& v) {
             o.damping = real_of("--damping", v);
             if (!(o.damping >= 0 && o.damping < 1)) bad("--damping must be in [0, 1)");
         }},
        {"--iterations", "N", "PageRank: exactly N steps (graph500_bench passes am's count)",
         [&o](const std::string& v) {
             o.iterations = static_cast<int>(number_of("--iterations", v));
             if (o.iterations < 1) bad("--iterations must be at least 1");
         }},
        {"--tolerance", "T",
         "PageRank without --iterations: stop when a step's L1 change,\n"
         "relative to the total, is below T (default 1e-6; at most 200)",
         [&o](const std::string& v) {
             o.tolerance = real_of("--tolerance", v);
             if (!(o.tolerance > 0) || !std::isfinite(o.tolerance)) {
                 bad("--tolerance must be positive and finite");
             }
         }},
        {"--graph", "G", "kronecker (default) or er",
         [&o](const std::string& v) {
             const std::string g = am::bench::to_choice("--graph", v, {"kronecker", "er"});
             o.spec.kind = g == "er" ? gen::graph_kind::erdos_renyi : gen::graph_kind::kronecker;
         }},
        {"--seed", "X", "generator seed (default that of graph_spec)",
         [&o](const std::string& v) {
             o.spec.seed = static_cast<std::uint64_t>(number_of("--seed", v));
         }},
        {"--json", nullptr, "JSON lines on stdout (rank 0)", am::bench::store_flag(o.json)},
        {"--check", nullptr,
         "also compare with a sequential reference on rank 0 (small scales):\n"
         "BFS, Dijkstra, union-find, power iteration",
         am::bench::store_flag(o.check)},
        {"--verbose", nullptr, "one line per root on stderr: seconds, traversed edges",
         am::bench::store_flag(o.verbose)},
    };
}

options parse(int argc, char** argv) {
    options o;
    o.spec.scale = 18;
    (void)am::bench::parse_args(argc, argv, usage_text, option_table(o));
    am::bench::graph500::check_spec_or_exit(o.spec, "pbgl_baseline");
    return o;
}

/// The MPI job: this process's rank and the number of processes.
struct job {
    int rank = 0;
    int size = 1;
};

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// A bitmap of the vertices, OR-reduced over the job.
class vertex_bits {
  public:
    explicit vertex_bits(std::uint64_t n) : _w((n + 63) / 64, 0) {}
    void set(std::uint64_t v) { _w[v / 64] |= std::uint64_t{1} << (v % 64); }
    [[nodiscard]] bool test(std::uint64_t v) const { return ((_w[v / 64] >> (v % 64)) & 1) != 0; }
    void reduce_or() {
        MPI_Allreduce(MPI_IN_PLACE, _w.data(), static_cast<int>(_w.size()), MPI_UINT64_T, MPI_BOR,
                      MPI_COMM_WORLD);
    }

  private:
    std::vector<std::uint64_t> _w;
};

/// This process's part of the generated edges, self-loops dropped.
std::vector<gen::edge> generate_part(const gen::graph_spec& s, const job& j) {
    const std::uint64_t first = gen::part_begin(s, j.rank, j.size);
    const std::uint64_t last = gen::part_begin(s, j.rank + 1, j.size);
    std::vector<gen::edge> part;
    part.reserve(last - first);
    for (std::uint64_t i = first; i < last; ++i) {
        const gen::edge e = gen::make_edge(s, i);
        if (e.u != e.v) part.push_back(e);
    }
    return part;
}

/// PBGL's distributed construction: every process adds the edges it generated, in both
/// directions; an edge whose source another process owns is sent to it, and the graph is
/// complete after the process group's synchronisation.
std::unique_ptr<graph_t> build_graph(const gen::graph_spec& s, const std::vector<gen::edge>& part) {
    auto g = std::make_unique<graph_t>(gen::vertex_count(s), pbgl::mpi_process_group());
    using weight_t = graph_t::edge_property_type;
    for (const gen::edge& e : part) {
        const vertex_t u = vertex(e.u, *g);
        const vertex_t v = vertex(e.v, *g);
        add_edge(u, v, weight_t(e.w), *g);
        add_edge(v, u, weight_t(e.w), *g);
    }
    synchronize(g->process_group());
    return g;
}

/// The same edges in PBGL's undirected graph (for connected components): each added once.
std::unique_ptr<ugraph_t> build_undirected_graph(const gen::graph_spec& s,
                                                 const std::vector<gen::edge>& part) {
    auto g = std::make_unique<ugraph_t>(gen::vertex_count(s), pbgl::mpi_process_group());
    for (const gen::edge& e : part) add_edge(vertex(e.u, *g), vertex(e.v, *g), *g);
    synchronize(g->process_group());
    return g;
}

/// The first `count` distinct root candidates whose vertex has an edge (self-loops dropped).
std::vector<std::uint32_t> pick_roots(const gen::graph_spec& s, const std::vector<gen::edge>& part,
                                      int count) {
    const std::uint64_t n = gen::vertex_count(s);
    vertex_bits has_edge(n);
    for (const gen::edge& e : part) {
        has_edge.set(e.u);
        has_edge.set(e.v);
    }
    has_edge.reduce_or();
    std::vector<std::uint32_t> roots;
    vertex_bits taken(n);
    for (std::uint64_t k = 0; roots.size() < static_cast<std::size_t>(count) && k < 64 * n; ++k) {
        const std::uint32_t c = gen::root_candidate(s, k);
        if (!has_edge.test(c) || taken.test(c)) continue;
        taken.set(c);
        roots.push_back(c);
    }
    return roots;
}

template <class T>
MPI_Datatype mpi_type() {
    if constexpr (std::is_same_v<T, float>) {
        return MPI_FLOAT;
    } else if constexpr (std::is_same_v<T, double>) {
        return MPI_DOUBLE;
    } else {
        static_assert(std::is_same_v<T, std::uint32_t>);
        return MPI_UINT32_T;
    }
}

/// Every process's local values, in global vertex order, on every process.
template <class T, class Graph>
std::vector<T> gather_global(const Graph& g, const std::vector<T>& local, const job& j,
                             std::uint64_t n) {
    std::vector<int> counts(static_cast<std::size_t>(j.size));
    const int mine = static_cast<int>(local.size());
    MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> displs(counts.size(), 0);
    for (std::size_t p = 1; p < counts.size(); ++p) displs[p] = displs[p - 1] + counts[p - 1];
    std::vector<T> all(static_cast<std::size_t>(displs.back() + counts.back()));
    MPI_Allgatherv(local.data(), mine, mpi_type<T>(), all.data(), counts.data(), displs.data(),
                   mpi_type<T>(), MPI_COMM_WORLD);
    std::vector<T> global(n);
    const auto& dist = g.distribution();
    for (std::uint64_t v = 0; v < n; ++v) {
        const auto owner = static_cast<std::size_t>(dist(v));
        global[v] = all[static_cast<std::size_t>(displs[owner]) + dist.local(v)];
    }
    return global;
}

/// Rank 0's time between two barriers around `kernel`.
double timed(const std::function<void()>& kernel) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    kernel();
    MPI_Barrier(MPI_COMM_WORLD);
    return now() - t0;
}

/// PBGL's distributed BFS from `root` (its default distributed queue and color map); the
/// level of every local vertex in `level`. Returns the seconds it took.
double run_bfs(graph_t& g, std::uint32_t root, std::vector<level_t>& level) {
    level.assign(num_vertices(g), unreached_level);
    auto dist = boost::make_iterator_property_map(level.begin(), get(boost::vertex_index, g));
    // A target may be discovered from several processes in one level: the smallest level wins.
    set_property_map_role(boost::vertex_distance, dist);
    const vertex_t s = vertex(root, g);
    if (s.owner == process_id(g.process_group())) put(dist, s, 0);
    const double secs = timed([&] {
        boost::breadth_first_search(g, s,
                                    boost::visitor(boost::make_bfs_visitor(
                                        boost::record_distances(dist, boost::on_tree_edge()))));
    });
    synchronize(dist);
    return secs;
}

/// PBGL's delta-stepping from `root`; the distance of every local vertex in `distance`.
double run_sssp(graph_t& g, std::uint32_t root, float delta, std::vector<float>& distance) {
    distance.assign(num_vertices(g), unreached_dist);
    std::vector<vertex_t> pred(num_vertices(g));
    auto index = get(boost::vertex_index, g);
    auto dist = boost::make_iterator_property_map(distance.begin(), index);
    auto pred_map = boost::make_iterator_property_map(pred.begin(), index);
    const vertex_t s = vertex(root, g);
    const double secs = timed([&] {
        pbgl::delta_stepping_shortest_paths(g, s, pred_map, dist, get(boost::edge_weight, g),
                                            delta);
    });
    synchronize(dist);
    return secs;
}

/// PBGL's connected components (a representative per vertex and the number of components,
/// see the file comment): in `label` the global id of every local vertex's representative,
/// in `components` their number. Returns the seconds it took.
double run_cc(const ugraph_t& g, std::vector<std::uint32_t>& label, std::uint64_t& components) {
    std::vector<uvertex_t> parent(num_vertices(g));
    auto p = boost::make_iterator_property_map(parent.begin(), get(boost::vertex_index, g));
    int count = 0;
    const double secs =
        timed([&] { count = pbgl::connected_components(g, boost::dummy_property_map(), p); });
    const auto& dist = g.distribution();
    label.resize(parent.size());
    for (std::size_t v = 0; v < parent.size(); ++v) {
        label[v] = static_cast<std::uint32_t>(dist.global(parent[v].owner, parent[v].local));
    }
    components = static_cast<std::uint64_t>(count);
    return secs;
}

/// page_rank's stopping rule without --iterations: am's rule, the L1 change of a step relative
/// to the total (am's scores sum to 1) below the tolerance, or the iteration limit. Called
/// before every step with the current scores; counts the steps taken.
class until_converged {
  public:
    struct progress {
        double tolerance;
        int max_iterations;
        std::vector<double> previous;  // by local vertex
        int iterations = -1;           // -1 before the first call
    };

    explicit until_converged(progress& p) : _p(&p) {}

    template <class RankMap>
    bool operator()(const RankMap& rank, const graph_t& g) {
        double sums[2] = {0, 0};  // change, total
        std::size_t i = 0;
        BGL_FORALL_VERTICES(v, g, graph_t) {
            const double x = get(rank, v);
            sums[0] += std::fabs(x - _p->previous[i]);
            sums[1] += x;
            _p->previous[i++] = x;
        }
        if (++_p->iterations == 0) return false;
        MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        return sums[0] < _p->tolerance * sums[1] || _p->iterations >= _p->max_iterations;
    }

  private:
    progress* _p;
};

/// PBGL's page_rank (see the file comment): the score of every local vertex in `score`, the
/// steps taken in `iterations`. Returns the seconds it took.
double run_pagerank(const graph_t& g, const options& o, std::uint64_t n, std::vector<double>& score,
                    int& iterations) {
    score.assign(num_vertices(g), 0.0);
    std::vector<double> other(num_vertices(g), 0.0);
    auto index = get(boost::vertex_index, g);
    auto rank = boost::make_iterator_property_map(score.begin(), index);
    auto rank2 = boost::make_iterator_property_map(other.begin(), index);
    if (o.iterations > 0) {
        iterations = o.iterations;
        return timed([&] {
            pbgl::page_rank(g, rank, boost::graph::n_iterations(o.iterations), o.damping, n, rank2);
        });
    }
    until_converged::progress p{o.tolerance, o.max_iterations,
                                std::vector<double>(num_vertices(g), 0.0)};
    const double secs =
        timed([&] { pbgl::page_rank(g, rank, until_converged(p), o.damping, n, rank2); });
    iterations = p.iterations;
    return secs;
}

/// How a kernel's distances relate across an edge: BFS levels or weighted distances.
struct bfs_rule {
    static bool reached(level_t d) { return d != unreached_level; }
    /// Neither end can be improved through the edge.
    static bool consistent(level_t a, level_t b, float) { return a <= b + 1 && b <= a + 1; }
    /// `b` is attained through the edge from `a`.
    static bool tight(level_t a, level_t b, float) { return b == a + 1; }
};

struct sssp_rule {
    static bool reached(float d) { return d != unreached_dist; }
    static float slack(float d) { return 1e-6f * (1.0f + d); }
    static bool consistent(float a, float b, float w) {
        return b <= a + w + slack(b) && a <= b + w + slack(a);
    }
    static bool tight(float a, float b, float w) { return std::fabs(a + w - b) <= slack(b); }
};

/// The outcome of validating one root's result (the same on every process).
struct validation {
    bool ok = true;
    std::uint64_t traversed = 0;  ///< generated non-self-loop edges with both ends reached
    std::string why;              ///< the first failure seen by this process
};

/// This process's share of the vertices, for checks that every vertex needs once.
std::pair<std::uint64_t, std::uint64_t> my_vertices(std::uint64_t n, const job& j) {
    return {n * static_cast<std::uint64_t>(j.rank) / static_cast<std::uint64_t>(j.size),
            n * static_cast<std::uint64_t>(j.rank + 1) / static_cast<std::uint64_t>(j.size)};
}

/// Every process's `ok`, and this process's reason or a placeholder. Collective.
validation agree(validation out) {
    int ok = out.ok ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok == 0 && out.ok) out.why = "another process found an error";
    out.ok = ok != 0;
    return out;
}

/// Graph500-style validation of `d` (global, on every process) over this process's edges,
/// and the count of traversed edges. Collective.
template <class Rule, class T>
validation validate(const std::vector<T>& d, std::uint32_t root, const std::vector<gen::edge>& part,
                    const job& j) {
    validation out;
    auto fail = [&out](std::string why) {
        if (out.ok) out.why = std::move(why);
        out.ok = false;
    };
    const std::uint64_t n = d.size();
    vertex_bits attained(n);
    for (const gen::edge& e : part) {
        const T du = d[e.u], dv = d[e.v];
        if (Rule::reached(du) != Rule::reached(dv)) {
            fail("edge " + std::to_string(e.u) + "-" + std::to_string(e.v) +
                 " joins a reached and an unreached vertex");
        } else if (Rule::reached(du)) {
            ++out.traversed;
            if (!Rule::consistent(du, dv, e.w)) {
                fail("edge " + std::to_string(e.u) + "-" + std::to_string(e.v) +
                     " would shorten a distance");
            }
            if (Rule::tight(du, dv, e.w)) attained.set(e.v);
            if (Rule::tight(dv, du, e.w)) attained.set(e.u);
        }
    }
    attained.reduce_or();
    if (d[root] != T{0}) fail("the root's distance is not 0");
    const auto [first, last] = my_vertices(n, j);
    for (std::uint64_t v = first; v < last; ++v) {
        if (v != root && Rule::reached(d[v]) && !attained.test(v)) {
            fail("vertex " + std::to_string(v) + " has no neighbour attaining its distance");
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &out.traversed, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return agree(out);
}

/// Connected components (`label` global, on every process): every edge joins equal labels,
/// every label labels itself (so a component's label is one of its vertices), and there are
/// as many labels as PBGL counted components. Collective.
validation validate_cc(const std::vector<std::uint32_t>& label, std::uint64_t components,
                       const std::vector<gen::edge>& part, const job& j) {
    validation out;
    auto fail = [&out](std::string why) {
        if (out.ok) out.why = std::move(why);
        out.ok = false;
    };
    for (const gen::edge& e : part) {
        if (label[e.u] != label[e.v]) {
            fail("edge " + std::to_string(e.u) + "-" + std::to_string(e.v) + " joins labels " +
                 std::to_string(label[e.u]) + " and " + std::to_string(label[e.v]));
        }
    }
    const auto [first, last] = my_vertices(label.size(), j);
    std::uint64_t labels = 0;
    for (std::uint64_t v = first; v < last; ++v) {
        if (label[v] >= label.size() || label[label[v]] != label[v]) {
            fail("vertex " + std::to_string(v) + "'s label " + std::to_string(label[v]) +
                 " does not label itself");
        } else if (label[v] == v) {
            ++labels;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &labels, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (labels != components) {
        fail(std::to_string(labels) + " labels but PBGL counted " + std::to_string(components) +
             " components");
    }
    return agree(out);
}

/// PBGL's PageRank map r' = (1−d) + d·Σ r(u)/deg(u) over the edges, both directions, applied
/// by every process to its generated edges and summed over the job: the validation of PBGL's
/// scores. Built once per graph; collective.
class pagerank_map {
  public:
    pagerank_map(const std::vector<gen::edge>& part, std::uint64_t n, double damping)
        : _part(part), _degree(n, 0), _d(damping) {
        for (const gen::edge& e : part) {
            ++_degree[e.u];
            ++_degree[e.v];
        }
        MPI_Allreduce(MPI_IN_PLACE, _degree.data(), static_cast<int>(n), MPI_UINT32_T, MPI_SUM,
                      MPI_COMM_WORLD);
        const std::vector<double> start(n, 1.0 / static_cast<double>(n));
        _first_change = change(start);
    }

    /// T(r), on every process. Collective.
    [[nodiscard]] std::vector<double> step(const std::vector<double>& r) const {
        std::vector<double> next(r.size(), 0.0);
        for (const gen::edge& e : _part) {
            next[e.v] += _d * r[e.u] / _degree[e.u];
            next[e.u] += _d * r[e.v] / _degree[e.v];
        }
        MPI_Allreduce(MPI_IN_PLACE, next.data(), static_cast<int>(next.size()), MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD);
        for (double& x : next) x += 1 - _d;
        return next;
    }

    /// Σ|T(r) − r| over all vertices. Collective.
    [[nodiscard]] double change(const std::vector<double>& r) const {
        const std::vector<double> next = step(r);
        double sum = 0;
        for (std::size_t v = 0; v < r.size(); ++v) sum += std::fabs(next[v] - r[v]);
        return sum;
    }

    /// `r` (global, on every process) after `steps` steps from 1/n: equal within 1e-9 to the
    /// map applied `steps` times here, every score finite and at least 1−d, and one more step
    /// changes them by at most d^steps times the first step's change. `relative` gets that
    /// change over the total. Collective.
    [[nodiscard]] validation validate(const std::vector<double>& r, int steps, const job& j,
                                      double& relative) {
        if (steps != _replayed_steps) {
            _replayed.assign(r.size(), 1.0 / static_cast<double>(r.size()));
            for (int k = 0; k < steps; ++k) _replayed = step(_replayed);
            _replayed_steps = steps;
        }
        validation out;
        const auto [first, last] = my_vertices(r.size(), j);
        for (std::uint64_t v = first; v < last && out.ok; ++v) {
            if (!std::isfinite(r[v]) || r[v] < (1 - _d) * (1 - 1e-12)) {
                out.ok = false;
                out.why = "vertex " + std::to_string(v) + " has score " + std::to_string(r[v]);
            } else if (!(std::fabs(r[v] - _replayed[v]) <= 1e-9 * _replayed[v])) {
                out.ok = false;
                out.why = "vertex " + std::to_string(v) + ": PBGL " + std::to_string(r[v]) +
                          ", the map applied " + std::to_string(steps) + " times " +
                          std::to_string(_replayed[v]);
            }
        }
        double total = 0;
        for (const double x : r) total += x;
        const double c = change(r);
        relative = c / total;
        const double bound = std::pow(_d, steps) * _first_change * (1 + 1e-6) + 1e-12 * total;
        if (out.ok && !(c <= bound)) {
            out.ok = false;
            out.why = "one more step changes the scores by " + std::to_string(c) + " (L1), above " +
                      std::to_string(bound) + " = d^" + std::to_string(steps) +
                      " x the first step's change";
        }
        return agree(out);
    }

  private:
    const std::vector<gen::edge>& _part;
    std::vector<std::uint32_t> _degree;  // both directions, multi-edges kept
    double _d;
    double _first_change = 0;
    std::vector<double> _replayed;  // the map applied _replayed_steps times from 1/n
    int _replayed_steps = -1;
};

/// The whole graph on one process, both directions, for the sequential reference.
struct csr {
    std::vector<std::uint64_t> offsets;
    std::vector<std::uint32_t> targets;
    std::vector<float> weights;
};

csr sequential_graph(const gen::graph_spec& s) {
    const std::uint64_t n = gen::vertex_count(s), m = gen::edge_count(s);
    csr c;
    c.offsets.assign(n + 1, 0);
    for (std::uint64_t i = 0; i < m; ++i) {
        const gen::edge e = gen::make_edge(s, i);
        if (e.u == e.v) continue;
        ++c.offsets[e.u + 1];
        ++c.offsets[e.v + 1];
    }
    for (std::uint64_t v = 0; v < n; ++v) c.offsets[v + 1] += c.offsets[v];
    std::vector<std::uint64_t> fill(c.offsets.begin(), c.offsets.end() - 1);
    c.targets.resize(c.offsets[n]);
    c.weights.resize(c.offsets[n]);
    for (std::uint64_t i = 0; i < m; ++i) {
        const gen::edge e = gen::make_edge(s, i);
        if (e.u == e.v) continue;
        c.targets[fill[e.u]] = e.v;
        c.weights[fill[e.u]++] = e.w;
        c.targets[fill[e.v]] = e.u;
        c.weights[fill[e.v]++] = e.w;
    }
    return c;
}

std::vector<level_t> sequential_bfs(const csr& c, std::uint32_t root) {
    std::vector<level_t> level(c.offsets.size() - 1, unreached_level);
    std::queue<std::uint32_t> q;
    level[root] = 0;
    q.push(root);
    while (!q.empty()) {
        const std::uint32_t u = q.front();
        q.pop();
        for (std::uint64_t k = c.offsets[u]; k < c.offsets[u + 1]; ++k) {
            const std::uint32_t v = c.targets[k];
            if (level[v] != unreached_level) continue;
            level[v] = level[u] + 1;
            q.push(v);
        }
    }
    return level;
}

std::vector<float> sequential_dijkstra(const csr& c, std::uint32_t root) {
    std::vector<float> dist(c.offsets.size() - 1, unreached_dist);
    using item = std::pair<float, std::uint32_t>;
    std::priority_queue<item, std::vector<item>, std::greater<>> q;
    dist[root] = 0;
    q.emplace(0.0f, root);
    while (!q.empty()) {
        const auto [d, u] = q.top();
        q.pop();
        if (d > dist[u]) continue;
        for (std::uint64_t k = c.offsets[u]; k < c.offsets[u + 1]; ++k) {
            const std::uint32_t v = c.targets[k];
            const float x = d + c.weights[k];
            if (x < dist[v]) {
                dist[v] = x;
                q.emplace(x, v);
            }
        }
    }
    return dist;
}

/// Union-find's components of the sequential graph compared with PBGL's labels: the same
/// partition of the vertices. The first difference, or empty.
std::string compare_components(const csr& c, const std::vector<std::uint32_t>& label) {
    const std::size_t n = c.offsets.size() - 1;
    std::vector<std::uint32_t> parent(n);
    for (std::size_t v = 0; v < n; ++v) parent[v] = static_cast<std::uint32_t>(v);
    auto find = [&parent](std::uint32_t v) {
        while (parent[v] != v) v = parent[v] = parent[parent[v]];
        return v;
    };
    for (std::uint32_t u = 0; u < n; ++u) {
        for (std::uint64_t k = c.offsets[u]; k < c.offsets[u + 1]; ++k) {
            const std::uint32_t a = find(u), b = find(c.targets[k]);
            if (a != b) parent[std::max(a, b)] = std::min(a, b);
        }
    }
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> label_of_root(n, none), root_of_label(n, none);
    for (std::uint32_t v = 0; v < n; ++v) {
        const std::uint32_t r = find(v), l = label[v];
        if (label_of_root[r] == none) label_of_root[r] = l;
        if (root_of_label[l] == none) root_of_label[l] = r;
        if (label_of_root[r] != l) {
            return "vertex " + std::to_string(v) + ": PBGL splits the component of " +
                   std::to_string(r);
        }
        if (root_of_label[l] != r) {
            return "vertex " + std::to_string(v) + ": PBGL's label " + std::to_string(l) +
                   " joins the components of " + std::to_string(root_of_label[l]) + " and " +
                   std::to_string(r);
        }
    }
    return {};
}

/// A sequential power iteration. PBGL's map (`normalised` false): r' = (1−d) + d·Σ r/deg,
/// exactly `steps` steps. am's map (`normalised` true): r' = (1−d)/n + d·(dangling)/n +
/// d·Σ r/deg, until the L1 change is below `tolerance` or after `steps` steps. Both from 1/n.
/// `taken` gets the number of steps.
std::vector<double> sequential_pagerank(const csr& c, double d, bool normalised, int steps,
                                        double tolerance, int& taken) {
    const std::size_t n = c.offsets.size() - 1;
    const auto nd = static_cast<double>(n);
    std::vector<double> r(n, 1.0 / nd), next(n);
    for (taken = 0; taken < steps;) {
        double dangling = 0;
        for (std::size_t v = 0; v < n; ++v) {
            if (c.offsets[v + 1] == c.offsets[v]) dangling += r[v];
        }
        const double base = normalised ? (1 - d) / nd + d * dangling / nd : 1 - d;
        std::fill(next.begin(), next.end(), base);
        for (std::size_t u = 0; u < n; ++u) {
            const auto degree = static_cast<double>(c.offsets[u + 1] - c.offsets[u]);
            for (std::uint64_t i = c.offsets[u]; i < c.offsets[u + 1]; ++i) {
                next[c.targets[i]] += d * r[u] / degree;
            }
        }
        double change = 0;
        for (std::size_t v = 0; v < n; ++v) change += std::fabs(next[v] - r[v]);
        r.swap(next);
        ++taken;
        if (normalised && change < tolerance) break;
    }
    return r;
}

/// Compares PBGL's distances with the sequential ones; the first difference, or empty.
template <class T>
std::string compare(const std::vector<T>& got, const std::vector<T>& want) {
    for (std::size_t v = 0; v < want.size(); ++v) {
        const bool same =
            std::is_integral_v<T>
                ? got[v] == want[v]
                : got[v] == want[v] || std::fabs(static_cast<double>(got[v]) - want[v]) <=
                                           1e-5 * (1.0 + static_cast<double>(want[v]));
        if (!same) {
            return "vertex " + std::to_string(v) + ": PBGL " + std::to_string(got[v]) +
                   ", sequential " + std::to_string(want[v]);
        }
    }
    return {};
}

/// PBGL's graphs of the generated edges: the directed one (both directions stored: BFS,
/// SSSP, PageRank) and the undirected one (connected components), each built when a kernel
/// needs it.
struct graphs {
    std::unique_ptr<graph_t> directed;
    std::unique_ptr<ugraph_t> undirected;
    std::uint64_t edges = 0;  ///< generated edges without self-loops (am's global_edges)
};

/// One timed run of a kernel: what its TEPS figure counts.
struct one_run {
    double secs = 0;
    std::uint64_t edges = 0;
    bool ok = true;
    std::string note;  ///< for --verbose
};

/// One kernel on one graph: warm-up, the timed roots, validation, the result line.
class kernel_bench {
  public:
    kernel_bench(const options& o, const job& j, const graphs& g,
                 const std::vector<gen::edge>& part, const csr* reference)
        : _o(o), _j(j), _g(g), _part(part), _ref(reference), _n(gen::vertex_count(o.spec)) {}

    /// Runs `kernel` from every root (cc, pagerank: once per root); false when a result was
    /// wrong.
    bool run(const std::string& kernel, const std::vector<std::uint32_t>& roots) {
        if (kernel == "bfs") return search<bfs_rule, level_t>(kernel, roots);
        if (kernel == "sssp") return search<sssp_rule, float>(kernel, roots);
        if (kernel == "cc") {
            return measure(kernel, roots, [this](std::uint32_t, bool check) { return cc(check); });
        }
        pagerank_map map(_part, _n, _o.damping);
        return measure(kernel, roots,
                       [&](std::uint32_t, bool check) { return pagerank(map, check); });
    }

  private:
    /// One untimed, unchecked warm-up, then `once(root, true)` per root; the result line.
    template <class Once>
    bool measure(const std::string& kernel, const std::vector<std::uint32_t>& roots, Once once) {
        (void)once(roots.front(), false);
        std::vector<double> teps;
        bool ok = true;
        for (const std::uint32_t root : roots) {
            const one_run r = once(root, true);
            ok = r.ok && ok;
            teps.push_back(static_cast<double>(r.edges) / r.secs);
            if (_o.verbose && _j.rank == 0) {
                std::fprintf(stderr, "pbgl %s root %u: %.6f s, %llu edges%s\n", kernel.c_str(),
                             root, r.secs, static_cast<unsigned long long>(r.edges),
                             r.note.c_str());
            }
        }
        report(kernel, teps, ok);
        return ok;
    }

    /// False (and the reason on stderr, rank 0 only for a shared reason) when `v` failed.
    bool passed(const std::string& kernel, const std::string& where, const validation& v) const {
        if (!v.ok && (_j.rank == 0 || v.why != "another process found an error")) {
            std::fprintf(stderr, "pbgl_baseline: %s%s: VALIDATION FAILED: %s\n", kernel.c_str(),
                         where.c_str(), v.why.c_str());
        }
        return v.ok;
    }

    /// False (and the difference on stderr) when the sequential reference differs.
    static bool checked(const std::string& kernel, const std::string& where,
                        const std::string& diff) {
        if (diff.empty()) return true;
        std::fprintf(stderr, "pbgl_baseline: %s%s: CHECK FAILED: %s\n", kernel.c_str(),
                     where.c_str(), diff.c_str());
        return false;
    }

    template <class Rule, class T>
    bool search(const std::string& kernel, const std::vector<std::uint32_t>& roots) {
        std::vector<T> local;
        return measure(kernel, roots, [&](std::uint32_t root, bool check) {
            one_run r;
            if constexpr (std::is_same_v<T, level_t>) {
                r.secs = run_bfs(*_g.directed, root, local);
            } else {
                r.secs = run_sssp(*_g.directed, root, _o.delta, local);
            }
            if (!check) return r;
            const std::vector<T> d = gather_global(*_g.directed, local, _j, _n);
            const validation v = validate<Rule>(d, root, _part, _j);
            const std::string where = " from root " + std::to_string(root);
            r.ok = passed(kernel, where, v);
            r.edges = v.traversed;
            if (_ref != nullptr && _j.rank == 0) {
                std::string diff;
                if constexpr (std::is_same_v<T, level_t>) {
                    diff = compare(d, sequential_bfs(*_ref, root));
                } else {
                    diff = compare(d, sequential_dijkstra(*_ref, root));
                }
                r.ok = checked(kernel, where, diff) && r.ok;
            }
            return r;
        });
    }

    one_run cc(bool check) {
        std::vector<std::uint32_t> local;
        std::uint64_t components = 0;
        one_run r;
        r.secs = run_cc(*_g.undirected, local, components);
        r.edges = _g.edges;
        r.note = ", " + std::to_string(components) + " components";
        if (!check) return r;
        const std::vector<std::uint32_t> label = gather_global(*_g.undirected, local, _j, _n);
        r.ok = passed("cc", "", validate_cc(label, components, _part, _j));
        if (_ref != nullptr && _j.rank == 0) {
            r.ok = checked("cc", "", compare_components(*_ref, label)) && r.ok;
        }
        return r;
    }

    one_run pagerank(pagerank_map& map, bool check) {
        std::vector<double> local;
        int iterations = 0;
        one_run r;
        r.secs = run_pagerank(*_g.directed, _o, _n, local, iterations);
        r.edges = _g.edges * static_cast<std::uint64_t>(iterations);
        if (!check) return r;
        const std::vector<double> score = gather_global(*_g.directed, local, _j, _n);
        double relative = 0;
        r.ok = passed("pagerank", "", map.validate(score, iterations, _j, relative));
        char note[120];
        std::snprintf(note, sizeof note, ", %d iterations, relative L1 change of one more %.3g",
                      iterations, relative);
        r.note = note;
        if (_ref != nullptr && _j.rank == 0) {
            r.ok = checked("pagerank", "", compare_pagerank(score, iterations)) && r.ok;
        }
        return r;
    }

    /// --check: PBGL's scores against a sequential power iteration of the same map and count;
    /// prints how far its normalised scores are from am's definition (run to am's tolerance).
    [[nodiscard]] std::string compare_pagerank(const std::vector<double>& score,
                                               int iterations) const {
        int taken = 0;
        const std::vector<double> same =
            sequential_pagerank(*_ref, _o.damping, false, iterations, 0, taken);
        for (std::size_t v = 0; v < same.size(); ++v) {
            if (!(std::fabs(score[v] - same[v]) <= 1e-9 * same[v])) {
                return "vertex " + std::to_string(v) + ": PBGL " + std::to_string(score[v]) +
                       ", sequential " + std::to_string(same[v]);
            }
        }
        const std::vector<double> am_def =
            sequential_pagerank(*_ref, _o.damping, true, _o.max_iterations, _o.tolerance, taken);
        double total = 0, distance = 0;
        for (const double x : score) total += x;
        for (std::size_t v = 0; v < am_def.size(); ++v) {
            distance += std::fabs(score[v] / total - am_def[v]);
        }
        std::fprintf(stderr,
                     "pbgl_baseline: pagerank: %d iterations; the normalised scores are %.3g "
                     "(L1) from am's definition run to tolerance %g (%d iterations)\n",
                     iterations, distance, _o.tolerance, taken);
        return {};
    }

    void report(const std::string& kernel, const std::vector<double>& teps, bool ok) const {
        if (_j.rank != 0) return;
        g500::teps_line t;
        t.base = am::bench::make_result("graph500", "pbgl", "mpi", _j.size, kernel, 0, "teps",
                                        am::bench::summarize(teps));
        t.scale = _o.spec.scale;
        t.edgefactor = _o.spec.edgefactor;
        t.harmonic_mean = g500::harmonic_mean(teps);
        t.validated = ok;
        if (_o.json) std::printf("%s\n", g500::to_json(t).c_str());
        std::fprintf(_o.json ? stderr : stdout,
                     "pbgl %-4s scale %d edgefactor %d, %d ranks, %zu roots: harmonic mean %.4g "
                     "TEPS (median %.4g, min %.4g, max %.4g)%s\n",
                     kernel.c_str(), t.scale, t.edgefactor, _j.size, teps.size(), t.harmonic_mean,
                     t.base.median, t.base.min, t.base.max, ok ? "" : " INVALID");
        std::fflush(nullptr);
    }

    const options& _o;
    const job& _j;
    const graphs& _g;
    const std::vector<gen::edge>& _part;
    const csr* _ref;
    std::uint64_t _n;
};

/// Rank 0: the construction time, as a line of its own (not part of any TEPS figure); `op`
/// "construct" (the directed graph) or "construct_undirected".
void report_construction(const options& o, const job& j, const char* op, double secs,
                         std::uint64_t edges) {
    if (j.rank != 0) return;
    if (o.json) {
        const auto r = am::bench::make_result("graph500", "pbgl", "mpi", j.size, op, 0, "seconds",
                                              {secs, secs, secs, 1});
        std::printf("%s\n", am::bench::to_json(r).c_str());
    }
    std::fprintf(o.json ? stderr : stdout,
                 "pbgl %s scale %d edgefactor %d %s: %llu vertices, %llu edges without "
                 "self-loops, built in %.3f s (untimed)\n",
                 op, o.spec.scale, o.spec.edgefactor,
                 o.spec.kind == gen::graph_kind::kronecker ? "kronecker" : "er",
                 static_cast<unsigned long long>(gen::vertex_count(o.spec)),
                 static_cast<unsigned long long>(edges), secs);
    std::fflush(nullptr);
}

bool wants(const options& o, const char* kernel) {
    return std::find(o.kernels.begin(), o.kernels.end(), kernel) != o.kernels.end();
}

int run(const options& o, const job& j) {
    const std::vector<gen::edge> part = generate_part(o.spec, j);
    graphs g;
    g.edges = part.size();
    MPI_Allreduce(MPI_IN_PLACE, &g.edges, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (wants(o, "bfs") || wants(o, "sssp") || wants(o, "pagerank")) {
        const double secs = timed([&] { g.directed = build_graph(o.spec, part); });
        report_construction(o, j, "construct", secs, g.edges);
    }
    if (wants(o, "cc")) {
        const double secs = timed([&] { g.undirected = build_undirected_graph(o.spec, part); });
        report_construction(o, j, "construct_undirected", secs, g.edges);
    }

    const std::vector<std::uint32_t> roots = pick_roots(o.spec, part, o.roots);
    if (roots.empty()) throw std::runtime_error("no vertex has an edge");
    if (roots.size() < static_cast<std::size_t>(o.roots) && j.rank == 0) {
        std::fprintf(stderr, "pbgl_baseline: only %zu roots have an edge\n", roots.size());
    }
    std::unique_ptr<csr> reference;
    if (o.check && j.rank == 0) reference = std::make_unique<csr>(sequential_graph(o.spec));

    kernel_bench bench(o, j, g, part, reference.get());
    bool ok = true;
    for (const std::string& k : o.kernels) ok = bench.run(k, roots) && ok;
    if (o.check && ok && j.rank == 0) {
        std::printf(
            "pbgl_baseline: sanity check passed: %zu roots per kernel, results equal to a "
            "sequential BFS/Dijkstra/union-find/power iteration and validated\n",
            roots.size());
    }
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    boost::mpi::environment env(argc, argv);
    job j;
    MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &j.size);
    try {
        const int status = run(o, j);
        int worst = status;
        MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        return worst;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pbgl_baseline: rank %d: %s\n", j.rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return 1;
}
