// SPDX-License-Identifier: MIT
// am-graph500: Graph500-style BFS, SSSP and exploration on am, and connected components and
// PageRank on the same graph, with validation.
//   am-graph500 --scale S --edgefactor E --kernel bfs|sssp|explore|cc|pagerank --roots R
//               --validate [--threads T]
// The whole-graph kernels (cc, pagerank) run once per root, ignoring it.
// Ranks and transport come from the environment (AM_TRANSPORT, AM_RANKS) or from mpirun;
// --ranks/--transport override them. Rank 0 prints Graph500 statistics and, with --json, one
// JSON line per kernel in the bench format. At SCALE >= 22 (or with --progress), when stderr is
// a terminal and without --quiet, rank 0 shows a progress line there (graph/progress.hpp): the
// phase, root i of n, the elapsed and the estimated remaining time.
#include <graph/graph.hpp>
#include <graph/progress.hpp>
#include <graph/statistics.hpp>

#include <am/am.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace am::graph;

struct options {
    graph_spec spec;
    std::vector<kernel_kind> kernels{kernel_kind::bfs};
    int roots = 64;
    bool validate = false;
    bool validate_after = false;  // validate once every timed search is done (results kept)
    bool json = false;
    bool quiet = false;
    bool progress = false;  // --progress: the progress line at any SCALE (on a terminal)
    kernel_options kopt;
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "am-graph500: %s\n"
                 "usage: am-graph500 [--scale S] [--edgefactor E] [--graph kronecker|er]\n"
                 "         [--kernel bfs|sssp|explore|cc|pagerank[,...]] [--roots R]\n"
                 "         [--delta D] [--no-bucket-fusion] [--no-direction-opt]\n"
                 "         [--damping D] [--tolerance T]\n"
                 "         [--seed X] [--validate] [--validate-after] [--json] [--quiet]\n"
                 "         [--threads T]\n"
                 "         [--progress]\n"
                 "         [--ranks N] [--transport threads|shm|mpi]\n",
                 why);
    std::exit(2);
}

kernel_kind parse_kernel(const std::string& k) {
    if (k == "bfs") return kernel_kind::bfs;
    if (k == "sssp") return kernel_kind::sssp;
    if (k == "explore") return kernel_kind::explore;
    if (k == "cc") return kernel_kind::cc;
    if (k == "pagerank") return kernel_kind::pagerank;
    usage(("unknown kernel '" + k + "'").c_str());
}

std::vector<kernel_kind> parse_kernels(const std::string& list) {
    std::vector<kernel_kind> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        out.push_back(parse_kernel(list.substr(start, comma - start)));
        start = comma + 1;
    }
    return out;
}

/// Reads option values from argv, exiting with the usage text on a bad one.
class arg_reader {
  public:
    arg_reader(int argc, char** argv) : _argc(argc), _argv(argv) {}
    [[nodiscard]] bool next() { return ++_i < _argc; }
    [[nodiscard]] std::string option() const { return _argv[_i]; }
    std::string text() {
        if (_i + 1 >= _argc) usage((option() + " needs a value").c_str());
        return _argv[++_i];
    }
    int integer() {
        const std::string o = option(), v = text();
        char* end = nullptr;
        const long long x = std::strtoll(v.c_str(), &end, 0);
        check_end(o, v, end);
        if (x < -(1LL << 31) || x >= (1LL << 31)) usage((o + ": out of range: " + v).c_str());
        return static_cast<int>(x);
    }
    std::uint64_t unsigned64() {
        const std::string o = option(), v = text();
        char* end = nullptr;
        const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
        check_end(o, v, end);
        if (v.find('-') != std::string::npos) usage((o + ": negative: " + v).c_str());
        return x;
    }
    float real() {
        const std::string o = option(), v = text();
        char* end = nullptr;
        const float x = std::strtof(v.c_str(), &end);
        check_end(o, v, end);
        return x;
    }

  private:
    static void check_end(const std::string& o, const std::string& v, const char* end) {
        if (end == v.c_str() || *end != '\0') usage((o + ": not a number: " + v).c_str());
    }
    int _argc;
    char** _argv;
    int _i = 0;
};

graph_kind parse_graph(const std::string& g) {
    if (g == "kronecker") return graph_kind::kronecker;
    if (g == "er") return graph_kind::erdos_renyi;
    usage(("unknown graph '" + g + "'").c_str());
}

am::transport_kind parse_transport(const std::string& t) {
    if (t == "threads") return am::transport_kind::threads;
    if (t == "shm") return am::transport_kind::shm;
    if (t == "mpi") return am::transport_kind::mpi;
    usage(("unknown transport '" + t + "'").c_str());
}

/// Applies one option; false if `a` is not an option of ours.
bool apply(const std::string& a, arg_reader& in, options& o, am::config& cfg) {
    if (a == "--scale")
        o.spec.scale = in.integer();
    else if (a == "--edgefactor")
        o.spec.edgefactor = in.integer();
    else if (a == "--seed")
        o.spec.seed = in.unsigned64();
    else if (a == "--roots")
        o.roots = in.integer();
    else if (a == "--kernel")
        o.kernels = parse_kernels(in.text());
    else if (a == "--delta")
        o.kopt.delta = in.real();
    else if (a == "--no-bucket-fusion")
        o.kopt.bucket_fusion = false;
    else if (a == "--no-direction-opt")
        o.kopt.direction_optimizing = false;
    else if (a == "--damping")
        o.kopt.damping = in.real();
    else if (a == "--tolerance")
        o.kopt.tolerance = in.real();
    else if (a == "--validate")
        o.validate = true;
    else if (a == "--validate-after")
        o.validate = o.validate_after = true;
    else if (a == "--json")
        o.json = true;
    else if (a == "--quiet")
        o.quiet = true;
    else if (a == "--threads")
        o.kopt.threads = in.integer();
    else if (a == "--progress")
        o.progress = true;
    else if (a == "--ranks")
        cfg.ranks = in.integer();
    else if (a == "--graph")
        o.spec.kind = parse_graph(in.text());
    else if (a == "--transport")
        cfg.transport = parse_transport(in.text());
    else
        return false;
    return true;
}

/// --threads T: handler threads per rank (BFS and SSSP); T > 1 turns on config::thread_multiple.
void check_threads(const options& o, am::config& cfg) {
    const int t = o.kopt.threads;
    if (t < 1 || t > 64) usage(("--threads " + std::to_string(t) + ": must be in [1, 64]").c_str());
    if (t == 1) return;
    for (const kernel_kind k : o.kernels) {
        if (k != kernel_kind::bfs && k != kernel_kind::sssp) {
            usage(("--threads " + std::to_string(t) + ": the " + to_string(k) +
                   " kernel runs one thread per rank (only bfs and sssp take --threads above 1)")
                      .c_str());
        }
    }
    cfg.thread_multiple = true;
}

options parse(int argc, char** argv, am::config& cfg) {
    options o;
    arg_reader in(argc, argv);
    while (in.next()) {
        const std::string a = in.option();
        if (!apply(a, in, o, cfg)) usage(("unknown option '" + a + "'").c_str());
    }
    if (o.roots < 1) usage("--roots must be at least 1");
    if (!(o.kopt.delta == 0 || o.kopt.delta >= 1e-6f) || !std::isfinite(o.kopt.delta)) {
        usage("--delta must be 0 (automatic) or at least 1e-6, and finite");
    }
    if (!(o.kopt.damping >= 0 && o.kopt.damping < 1)) usage("--damping must be in [0, 1)");
    if (!(o.kopt.tolerance > 0) || !std::isfinite(o.kopt.tolerance)) {
        usage("--tolerance must be positive and finite");
    }
    check_threads(o, cfg);
    try {
        check_spec(o.spec);
    } catch (const std::invalid_argument& e) {
        usage(e.what());
    }
    return o;
}

std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", x);
    return buf;
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// Peak resident memory of this process (VmHWM), bytes; 0 if unknown.
std::uint64_t peak_rss() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) << 10;
    }
    return 0;
}

using am::graph::stats::harmonic;
using am::graph::stats::print_summary;
using am::graph::stats::summarize;
using am::graph::stats::summary;

struct graph_info {
    double generation = 0;
    std::uint64_t csr_bytes_max = 0;  // the largest rank share
};

/// What the timed searches of one kernel measured.
struct figures {
    std::vector<double> times, edges, teps, levels;
    std::string extra_json;      // more fields for the JSON line, each starting with a comma
    int failed = 0;              // searches that failed validation (every rank knows)
    int checked_after = 0;       // --validate-after: searches validated after the timed ones
    std::uint64_t peak_rss = 0;  // the largest over ranks
};

/// Validates one search; prints the first error of this rank.
bool valid(validator& check, kernel_kind kind, std::uint32_t root, const search_result& r) {
    const validation v = check.run(kind, root, r);
    if (!v.ok() && !v.first_error.empty()) {
        std::fprintf(stderr, "am-graph500: %s from root %u failed validation: %s\n",
                     to_string(kind), root, v.first_error.c_str());
    }
    return v.ok();
}

/// A whole-graph kernel (cc, pagerank) run as a search: the root is ignored.
template <class Kernel>
struct whole_graph {
    Kernel& kernel;
    void run(std::uint32_t /*root*/, search_result& out) { kernel.run(out); }
};

/// One untimed warm-up, then a timed search (and its validation) per root (whole-graph
/// kernels: one timed run per root). With --validate-after every result is kept and
/// validated once the timed searches are done, so that no validation (which walks the whole
/// graph and gathers the result) runs between two of them and cools the caches.
template <class Kernel>
figures measure(am::context& ctx, const options& o, const std::vector<std::uint32_t>& roots,
                kernel_kind kind, Kernel& kernel, validator& check, progress_line& bar) {
    figures f;
    search_result r;
    std::vector<search_result> kept;
    kernel.run(roots.front(), r);
    // Room for every result, allocated and touched before the timed searches (copies of the
    // warm-up's): each search's result is swapped in, so nothing is copied or allocated
    // between two searches.
    if (o.validate_after) kept.assign(roots.size(), r);
    for (const std::uint32_t root : roots) {
        ctx.barrier();
        const double t0 = now();
        kernel.run(root, r);
        const double t = now() - t0;
        f.times.push_back(t);
        f.edges.push_back(static_cast<double>(r.edges));
        f.teps.push_back(static_cast<double>(r.edges) / t);
        f.levels.push_back(r.levels);
        if (o.validate_after) {
            std::swap(r, kept[f.times.size() - 1]);
        } else if (o.validate && !valid(check, kind, root, r)) {
            ++f.failed;
        }
        bar.step(f.times.size());
        if (!o.quiet && ctx.rank() == 0) {
            char line[160];
            std::snprintf(line, sizeof line,
                          "%s root %u: %.6f s, %llu edges, %d levels (%d bottom-up)\n",
                          to_string(kind), root, t, static_cast<unsigned long long>(r.edges),
                          r.levels, r.bottom_up_levels);
            bar.message(line);
        }
    }
    for (std::size_t i = 0; i < kept.size(); ++i) {
        if (!valid(check, kind, roots[i], kept[i])) ++f.failed;
        ++f.checked_after;
    }
    reductions red(ctx);
    f.peak_rss = ~red.min(~peak_rss());
    return f;
}

/// The Graph500 statistics block and, with --json, the bench line (rank 0).
void report(const options& o, const am::config& cfg, int ranks, kernel_kind kind, const figures& f,
            const graph_info& info) {
    const char* name = to_string(kind);
    const auto [hmean, hsd] = harmonic(f.teps);
    std::printf("%s NBFS: %zu\n", name, f.times.size());
    print_summary(name, "time", summarize(f.times));
    print_summary(name, "nedge", summarize(f.edges));
    const summary ts = summarize(f.teps);
    print_summary(name, "TEPS", ts);
    std::printf("%s harmonic_mean_TEPS: %.6g\n%s harmonic_stddev_TEPS: %.6g\n", name, hmean, name,
                hsd);
    const char* verdict = !o.validate ? "not run" : f.failed == 0 ? "passed" : "FAILED";
    if (o.validate_after) {
        std::printf("%s validation: %s (%d searches, after the timed ones)\n", name, verdict,
                    f.checked_after);
    } else {
        std::printf("%s validation: %s\n", name, verdict);
    }
    std::printf("%s peak_rss_bytes (largest rank process): %llu\n", name,
                static_cast<unsigned long long>(f.peak_rss));
    if (o.json) {
        std::printf(
            "{\"bench\":\"graph500\",\"system\":\"am\",\"transport\":\"%s\",\"ranks\":%d,"
            "\"op\":\"%s\",\"bytes\":0,\"metric\":\"teps\",\"median\":%.6g,\"min\":%.6g,"
            "\"max\":%.6g,\"reps\":%zu,\"scale\":%d,\"edgefactor\":%d,\"graph\":\"%s\","
            "\"harmonic_mean\":%.6g,\"validated\":%s,\"csr_bytes_per_rank\":%llu,"
            "\"peak_rss_bytes\":%llu,\"generation_s\":%.4f,\"levels\":%g%s,\"threads\":%d}\n",
            am::to_string(cfg.transport), ranks, name, ts.median, ts.min, ts.max, f.times.size(),
            o.spec.scale, o.spec.edgefactor,
            o.spec.kind == graph_kind::kronecker ? "kronecker" : "er", hmean,
            o.validate && f.failed == 0 ? "true" : "false",
            static_cast<unsigned long long>(info.csr_bytes_max),
            static_cast<unsigned long long>(f.peak_rss), info.generation,
            summarize(f.levels).median, f.extra_json.c_str(), o.kopt.threads);
    }
    std::fflush(stdout);
}

template <class Kernel>
int run_kernel(am::context& ctx, const options& o, const am::config& cfg,
               const std::vector<std::uint32_t>& roots, kernel_kind kind, Kernel& kernel,
               validator& check, const graph_info& info, progress_line& bar,
               const std::string& extra_json = {}) {
    figures f = measure(ctx, o, roots, kind, kernel, check, bar);
    f.extra_json = extra_json;
    if (ctx.rank() == 0) bar.above([&] { report(o, cfg, ctx.size(), kind, f, info); });
    return f.failed;
}

/// "bfs (kernel 1 of 2): roots searched and validated".
std::string kernel_phase(const options& o, std::size_t k) {
    std::string s = to_string(o.kernels[k]);
    if (o.kernels.size() > 1) {
        s += " (kernel " + std::to_string(k + 1) + " of " + std::to_string(o.kernels.size()) + ")";
    }
    return s + (o.validate ? ": roots searched and validated" : ": roots searched");
}

int rank_main(am::context& ctx, const options& o, const am::config& cfg) {
    progress_line bar(ctx.rank() == 0 && !o.quiet && (o.spec.scale >= 22 || o.progress));
    bar.phase("generate + build CSR", 0);
    const double t0 = now();
    const csr_graph g = build_csr(ctx, o.spec);
    graph_info info;
    info.generation = now() - t0;
    reductions red(ctx);
    info.csr_bytes_max = red.sum(g.bytes());  // summed, then the largest share below
    const std::uint64_t total_csr = info.csr_bytes_max;
    info.csr_bytes_max = ~red.min(~g.bytes());
    bar.phase("choose roots, prepare validation", 0);
    const std::vector<std::uint32_t> roots = choose_roots(ctx, g, o.roots);
    if (ctx.rank() == 0) {
        bar.above([&] {
            std::printf(
                "SCALE: %d\nedgefactor: %d\ngraph: %s\nNBFS: %zu\n"
                "graph_generation_and_construction: %.6g\nnum_ranks: %d\n"
                "edges (undirected, no self-loops): %llu\ncsr_bytes total: %llu, "
                "largest rank share: %llu\n",
                o.spec.scale, o.spec.edgefactor,
                o.spec.kind == graph_kind::kronecker ? "kronecker" : "erdos-renyi+cycle",
                roots.size(), info.generation, ctx.size(),
                static_cast<unsigned long long>(g.global_edges),
                static_cast<unsigned long long>(total_csr),
                static_cast<unsigned long long>(info.csr_bytes_max));
        });
    }
    if (roots.empty()) throw std::runtime_error("am-graph500: the graph has no edges");
    validator check(ctx, g, o.kopt);
    int failed = 0;
    for (std::size_t i = 0; i < o.kernels.size(); ++i) {
        const kernel_kind kind = o.kernels[i];
        bar.phase(kernel_phase(o, i), roots.size());
        if (kind == kernel_kind::bfs) {
            bfs_kernel k(ctx, g, o.kopt);
            failed += run_kernel(ctx, o, cfg, roots, kind, k, check, info, bar);
        } else if (kind == kernel_kind::sssp) {
            kernel_options kopt = o.kopt;
            std::string why = "--delta";
            if (kopt.delta == 0) {
                const delta_choice c = auto_delta(ctx, g);
                kopt.delta = c.delta;
                why = "automatic: " + number(auto_delta_factor) + " x mean weight " +
                      number(c.mean_weight) + " / mean degree " + number(c.mean_degree);
            }
            sssp_kernel k(ctx, g, kopt);
            const std::string delta = number(k.delta());
            if (ctx.rank() == 0) {
                bar.above(
                    [&] { std::printf("sssp delta: %s (%s)\n", delta.c_str(), why.c_str()); });
            }
            failed +=
                run_kernel(ctx, o, cfg, roots, kind, k, check, info, bar, ",\"delta\":" + delta);
        } else if (kind == kernel_kind::explore) {
            explore_kernel k(ctx, g);
            failed += run_kernel(ctx, o, cfg, roots, kind, k, check, info, bar);
        } else if (kind == kernel_kind::cc) {
            cc_kernel k(ctx, g);
            whole_graph<cc_kernel> w{k};
            failed += run_kernel(ctx, o, cfg, roots, kind, w, check, info, bar);
        } else {
            pagerank_kernel k(ctx, g, o.kopt);
            whole_graph<pagerank_kernel> w{k};
            failed += run_kernel(ctx, o, cfg, roots, kind, w, check, info, bar);
        }
    }
    if (red.sum(static_cast<std::uint64_t>(failed)) > 0) {
        throw std::runtime_error("am-graph500: validation failed");
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    am::config cfg;
    try {
        cfg = am::config::from_env();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am-graph500: %s\n", e.what());
        return 2;
    }
    const options o = parse(argc, argv, cfg);
    return am::run(cfg, [&](am::context& ctx) { (void)rank_main(ctx, o, cfg); });
}
