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
// (system "omp", transport "openmp"). Its "levels" are BFS levels as am's, but for SSSP the
// bucket steps (am counts its light and heavy rounds). Validation runs outside the timed
// region; at SCALE ≤ 12 also against a sequential BFS / Dijkstra.
// Two SSSP variants beyond GAP, off by default (the default is GAP's algorithm): --dedupe
// skips a bucket entry whose list was already relaxed from the same distance, --light-heavy
// relaxes the edges lighter than Δ in the bucket steps and the heavy ones once per vertex
// when its bucket is done (Meyer & Sanders; am's SSSP does both).
// The graph and searches are in omp_graph_search.hpp, the validation in
// omp_graph_validate.hpp; this file measures and reports.
//   omp_graph_ref [--scale S] [--edgefactor E] [--graph kronecker|er] [--roots R]
//                 [--kernel bfs,sssp] [--delta D] [--threads T] [--alpha A] [--beta B]
//                 [--dedupe] [--light-heavy] [--seed X] [--json] [--quiet] [--no-validate]
#include "graph/graph500_format.hpp"
#include "graph/omp_graph_search.hpp"
#include "graph/omp_graph_validate.hpp"
#include "lib/options.hpp"

#include <graph/statistics.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace am::bench::omp_graph;

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
    bool validate_after = false;
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

/// Validates one search's result; says what failed.
template <class Check, class Array>
bool passes(const char* name, std::uint32_t root, const search_stats& s, const Array& result,
            Check& check) {
    const verdict v = check(root, s, result);
    if (!v) return true;
    std::fprintf(stderr,
                 "omp_graph_ref: %s from root %u failed validation: rule '%s' broken at vertex "
                 "%llu\n",
                 name, root, v->rule.c_str(), static_cast<unsigned long long>(v->vertex));
    return false;
}

/// One untimed warm-up from the first root, then per root a timed search and, outside the
/// timing, its validation (with --validate-after, of every kept result once all the timed
/// searches are done, as am-graph500 --validate-after). `result()` is the search's result
/// (for --corrupt and `check`).
template <class Search, class Result, class Check>
figures measure(const options& o, const std::vector<std::uint32_t>& roots, const char* name,
                Search& search, Result&& result, Check&& check) {
    figures f;
    using array = std::remove_cvref_t<decltype(result())>;
    std::vector<std::pair<search_stats, array>> kept;
    (void)search.run(roots.front());
    // Room for every result before the timed searches; each is swapped in (nothing is copied
    // or allocated between two searches), as am-graph500 does.
    if (o.validate && o.validate_after) kept.assign(roots.size(), {search_stats{}, result()});
    for (const std::uint32_t root : roots) {
        const double t0 = now();
        const search_stats s = search.run(root);
        const double t = now() - t0;
        f.times.push_back(t);
        f.edges.push_back(static_cast<double>(s.edges));
        f.teps.push_back(static_cast<double>(s.edges) / t);
        f.levels.push_back(s.levels);
        if (o.corrupt) corrupt(result(), root);
        if (o.validate && o.validate_after) {
            kept[f.times.size() - 1].first = s;
            std::swap(kept[f.times.size() - 1].second, result());
        } else if (o.validate && !passes(name, root, s, result(), check)) {
            ++f.failed;
        }
        if (!o.quiet) print_root(name, root, t, s);
    }
    for (std::size_t i = 0; i < kept.size(); ++i) {
        if (!passes(name, roots[i], kept[i].first, kept[i].second, check)) ++f.failed;
    }
    return f;
}

using am::graph::stats::harmonic;
using am::graph::stats::print_summary;
using am::graph::stats::summarize;
using am::graph::stats::summary;

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

/// As am-graph500 reads --seed (strtoull, base 0).
std::uint64_t seed_of(const std::string& text) {
    char* end = nullptr;
    const unsigned long long x = std::strtoull(text.c_str(), &end, 0);
    if (end == text.c_str() || *end != '\0' || text.find('-') != std::string::npos) {
        bad("--seed: bad number '" + text + "'");
    }
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
        {"--seed", "X",
         "generator seed, decimal or 0x hex as am-graph500 reads it (default\n"
         "that of graph_spec)",
         [&o](const std::string& v) { o.spec.seed = seed_of(v); }},
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
        {"--validate-after", nullptr,
         "validate every result once all the timed searches are done (they are kept), so no "
         "validation runs between two of them (am-graph500 --validate-after)",
         store_flag(o.validate_after)},
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
    am::bench::graph500::check_spec_or_exit(o.spec, "omp_graph_ref");
    if (o.validate_after && !o.validate) {
        std::fprintf(stderr,
                     "omp_graph_ref: --validate-after and --no-validate exclude each other "
                     "(try --help)\n");
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
            [&](std::uint32_t root, const search_stats& s, const auto& parents) {
                return validate_bfs(g, root, parents, s, sequential);
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
        [&](std::uint32_t root, const search_stats& s, const auto& labels) {
            return validate_sssp(g, root, labels, s, sequential);
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
