// SPDX-License-Identifier: MIT
// Over 500 lines on purpose: the whole baseline in one program, read beside apps/graph.
/// @file
/// The Parallel BGL baseline of the Graph500 kernels of apps/graph (`am-graph500`): the same
/// graph (apps/graph/include/graph/generator.hpp, each MPI process generating its part of the
/// edges), the same roots and the same counting of traversed edges, with PBGL's distributed
/// adjacency_list, its level-synchronised breadth_first_search (distributed queue) and its
/// delta_stepping_shortest_paths. Prints one JSON line per kernel with system "pbgl".
///
///   mpirun -n 2 pbgl_baseline --scale 18 --kernel bfs,sssp --json
///
/// Every root's result is validated (untimed) as Graph500 does: d(root) = 0, no edge joins a
/// reached and an unreached vertex, no edge can shorten a distance, and every reached vertex
/// but the root has a neighbour through which its distance is attained. --check also compares
/// the distances with a sequential BFS / Dijkstra on rank 0 (small scales: the smoke test).
#include "common/options.hpp"
#include "graph500_format.hpp"

#include <graph/generator.hpp>

// PBGL: use_mpi.hpp must come first.
#include <boost/graph/use_mpi.hpp>
//
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/distributed/adjacency_list.hpp>
#include <boost/graph/distributed/delta_stepping_shortest_paths.hpp>
#include <boost/graph/distributed/mpi_process_group.hpp>
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
using level_t = std::uint32_t;

constexpr level_t unreached_level = std::numeric_limits<level_t>::max();
constexpr float unreached_dist = std::numeric_limits<float>::max();

struct options {
    gen::graph_spec spec;
    std::vector<std::string> kernels = {"bfs"};
    int roots = 64;
    float delta = 0.1f;
    bool json = false;
    bool check = false;
    bool verbose = false;
};

const char* const usage_text =
    "usage: mpirun -n P pbgl_baseline [options]\n"
    "Graph500 BFS and SSSP (delta-stepping) with the Parallel BGL on the graph of\n"
    "apps/graph/include/graph/generator.hpp: the baseline of am-graph500.\n"
    "  --scale S            2^S vertices (default 18)\n"
    "  --edgefactor E       edges per vertex (default 16)\n"
    "  --kernel K[,K]       bfs, sssp or bfs,sssp (default bfs)\n"
    "  --roots R            timed roots per kernel (default 64), after one untimed warm-up\n"
    "  --delta D            delta-stepping bucket width (default 0.1)\n"
    "  --graph G            kronecker (default) or er\n"
    "  --seed X             generator seed (default that of graph_spec)\n"
    "  --json               JSON lines on stdout (rank 0)\n"
    "  --check              also compare the distances with a sequential BFS/Dijkstra on\n"
    "                       rank 0 (small scales)\n"
    "  --verbose            one line per root on stderr: seconds, traversed edges\n";

[[noreturn]] void usage_error(const std::string& msg) {
    std::fprintf(stderr, "pbgl_baseline: %s (try --help)\n", msg.c_str());
    std::exit(2);
}

long long number_of(const std::string& flag, const char* text) {
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 0);
    if (end == text || *end != '\0') usage_error(flag + ": bad number '" + text + "'");
    return v;
}

void set_option(options& o, const std::string& flag, const char* value) {
    if (flag == "--scale") {
        o.spec.scale = static_cast<int>(number_of(flag, value));
    } else if (flag == "--edgefactor") {
        o.spec.edgefactor = static_cast<int>(number_of(flag, value));
    } else if (flag == "--roots") {
        o.roots = static_cast<int>(number_of(flag, value));
        if (o.roots < 1) usage_error("--roots must be at least 1");
    } else if (flag == "--seed") {
        o.spec.seed = static_cast<std::uint64_t>(number_of(flag, value));
    } else if (flag == "--delta") {
        o.delta = std::strtof(value, nullptr);
        if (!(o.delta > 0)) usage_error("--delta must be positive");
    } else if (flag == "--graph") {
        const std::string g = value;
        if (g != "kronecker" && g != "er") usage_error("--graph: kronecker or er");
        o.spec.kind = g == "er" ? gen::graph_kind::erdos_renyi : gen::graph_kind::kronecker;
    } else if (flag == "--kernel") {
        o.kernels = am::bench::split(value);
        for (const std::string& k : o.kernels) {
            if (k != "bfs" && k != "sssp") usage_error("--kernel: bfs or sssp, not '" + k + "'");
        }
    } else {
        usage_error("unknown option " + flag);
    }
}

options parse(int argc, char** argv) {
    options o;
    o.spec.scale = 18;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help") {
            std::fputs(usage_text, stdout);
            std::exit(0);
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--check") {
            o.check = true;
        } else if (a == "--verbose") {
            o.verbose = true;
        } else if (i + 1 < argc) {
            set_option(o, a, argv[++i]);
        } else {
            usage_error(a + " needs a value (or is unknown)");
        }
    }
    try {
        gen::check_spec(o.spec);
    } catch (const std::invalid_argument& e) {
        usage_error(e.what());
    }
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
    } else {
        static_assert(std::is_same_v<T, std::uint32_t>);
        return MPI_UINT32_T;
    }
}

/// Every process's local values, in global vertex order, on every process.
template <class T>
std::vector<T> gather_global(const graph_t& g, const std::vector<T>& local, const job& j,
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
    for (std::uint64_t v = n * j.rank / j.size; v < n * (j.rank + 1) / j.size; ++v) {
        if (v != root && Rule::reached(d[v]) && !attained.test(v)) {
            fail("vertex " + std::to_string(v) + " has no neighbour attaining its distance");
        }
    }
    int ok = out.ok ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &out.traversed, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (ok == 0 && out.ok) out.why = "another process found an error";
    out.ok = ok != 0;
    return out;
}

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

/// One kernel on one graph: warm-up, the timed roots, validation, the result line.
class kernel_bench {
  public:
    kernel_bench(const options& o, const job& j, graph_t& g, const std::vector<gen::edge>& part,
                 const csr* reference)
        : _o(o), _j(j), _g(g), _part(part), _ref(reference) {}

    /// Runs `kernel` from every root; false when a result was wrong.
    bool run(const std::string& kernel, const std::vector<std::uint32_t>& roots) {
        return kernel == "bfs" ? run_with<bfs_rule, level_t>(kernel, roots)
                               : run_with<sssp_rule, float>(kernel, roots);
    }

  private:
    template <class T>
    double once(std::uint32_t root, std::vector<T>& local) {
        if constexpr (std::is_same_v<T, level_t>) {
            return run_bfs(_g, root, local);
        } else {
            return run_sssp(_g, root, _o.delta, local);
        }
    }

    template <class Rule, class T>
    bool run_with(const std::string& kernel, const std::vector<std::uint32_t>& roots) {
        const std::uint64_t n = gen::vertex_count(_o.spec);
        std::vector<T> local;
        (void)once(roots.front(), local);  // warm-up, untimed
        std::vector<double> teps;
        bool ok = true;
        for (const std::uint32_t root : roots) {
            const double secs = once(root, local);
            const std::vector<T> d = gather_global(_g, local, _j, n);
            const validation v = validate<Rule>(d, root, _part, _j);
            if (!v.ok) {
                std::fprintf(stderr, "pbgl_baseline: %s from root %u: VALIDATION FAILED: %s\n",
                             kernel.c_str(), root, v.why.c_str());
                ok = false;
            }
            if (_ref != nullptr && !check(kernel, root, d)) ok = false;
            teps.push_back(static_cast<double>(v.traversed) / secs);
            if (_o.verbose && _j.rank == 0) {
                std::fprintf(stderr, "pbgl %s root %u: %.6f s, %llu edges\n", kernel.c_str(), root,
                             secs, static_cast<unsigned long long>(v.traversed));
            }
        }
        report(kernel, teps, ok);
        return ok;
    }

    template <class T>
    bool check(const std::string& kernel, std::uint32_t root, const std::vector<T>& d) {
        if (_j.rank != 0) return true;
        std::string diff;
        if constexpr (std::is_same_v<T, level_t>) {
            diff = compare(d, sequential_bfs(*_ref, root));
        } else {
            diff = compare(d, sequential_dijkstra(*_ref, root));
        }
        if (diff.empty()) return true;
        std::fprintf(stderr, "pbgl_baseline: %s from root %u: CHECK FAILED: %s\n", kernel.c_str(),
                     root, diff.c_str());
        return false;
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
    graph_t& _g;
    const std::vector<gen::edge>& _part;
    const csr* _ref;
};

/// Rank 0: the construction time, as a line of its own (not part of any TEPS figure).
void report_construction(const options& o, const job& j, double secs, std::uint64_t edges) {
    if (j.rank != 0) return;
    if (o.json) {
        const auto r = am::bench::make_result("graph500", "pbgl", "mpi", j.size, "construct", 0,
                                              "seconds", {secs, secs, secs, 1});
        std::printf("%s\n", am::bench::to_json(r).c_str());
    }
    std::fprintf(o.json ? stderr : stdout,
                 "pbgl construct scale %d edgefactor %d %s: %llu vertices, %llu edges without "
                 "self-loops, built in %.3f s (untimed)\n",
                 o.spec.scale, o.spec.edgefactor,
                 o.spec.kind == gen::graph_kind::kronecker ? "kronecker" : "er",
                 static_cast<unsigned long long>(gen::vertex_count(o.spec)),
                 static_cast<unsigned long long>(edges), secs);
    std::fflush(nullptr);
}

int run(const options& o, const job& j) {
    const std::vector<gen::edge> part = generate_part(o.spec, j);
    std::uint64_t edges = part.size();
    MPI_Allreduce(MPI_IN_PLACE, &edges, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    std::unique_ptr<graph_t> g;
    const double build_secs = timed([&] { g = build_graph(o.spec, part); });
    report_construction(o, j, build_secs, edges);

    const std::vector<std::uint32_t> roots = pick_roots(o.spec, part, o.roots);
    if (roots.empty()) throw std::runtime_error("no vertex has an edge");
    if (roots.size() < static_cast<std::size_t>(o.roots) && j.rank == 0) {
        std::fprintf(stderr, "pbgl_baseline: only %zu roots have an edge\n", roots.size());
    }
    std::unique_ptr<csr> reference;
    if (o.check && j.rank == 0) reference = std::make_unique<csr>(sequential_graph(o.spec));

    kernel_bench bench(o, j, *g, part, reference.get());
    bool ok = true;
    for (const std::string& k : o.kernels) ok = bench.run(k, roots) && ok;
    if (o.check && ok && j.rank == 0) {
        std::printf(
            "pbgl_baseline: sanity check passed: %zu roots per kernel, distances equal to "
            "a sequential BFS/Dijkstra and validated\n",
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
