// SPDX-License-Identifier: MIT
/// @file
/// Graph500 on am beside its baselines, in one invocation and one sitting: for each of
/// --rounds rounds, the cache-line hop between the two cores first (this VM's vCPUs move: a
/// hop of ~0.06 µs is the "near" state, 0.15-0.4 µs "far"), then for each kernel am-graph500
/// in each --am-shape (ranks x threads per rank: 2x1 is 2 shm ranks, 1x2 one rank with 2
/// handler threads), then each --baseline that has the kernel: `omp_graph_ref` (the
/// shared-memory reference: OpenMP direction-optimizing BFS and delta-stepping, 2 threads;
/// bfs and sssp) and `mpirun -n 2 pbgl_baseline` (the Parallel BGL; all four kernels). Every
/// system runs on the same graph and roots and validates every root. Prints every JSON line
/// they print, one hop line per round (system "cacheline", op "hop"), and at the end, per
/// kernel, am shape and baseline, one line with the median over the rounds of each system's
/// harmonic-mean TEPS and their ratio (system "am/omp" or "am/pbgl", metric "teps_ratio":
/// median = ratio of the medians; min and max the ratio's range, am's min over the
/// baseline's max and am's max over its min: report.hpp's ratio_of), with the rounds' median
/// hop; when the rounds saw both hop states, one such line per state too ("hop_state").
/// PageRank: PBGL runs as many iterations as am's run of the same round took (am stops on its
/// tolerance; PBGL's page_rank takes a count), read from the "levels" of am-graph500's JSON
/// line; the ratio line then also has "iterations".
/// Exit status 0, 1 when a run failed or was not validated, 3 when a system is missing.
#include "graph500_format.hpp"
#include "lib/options.hpp"
#include "lib/sys.hpp"

#include <graph/generator.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#ifndef AM_GRAPH500_AM
#define AM_GRAPH500_AM ""
#endif
#ifndef AM_GRAPH500_PBGL
#define AM_GRAPH500_PBGL ""
#endif
#ifndef AM_GRAPH500_OMP
#define AM_GRAPH500_OMP ""
#endif
#ifndef AM_BENCH_MPIEXEC
#define AM_BENCH_MPIEXEC "mpirun"
#endif

namespace {

namespace g500 = am::bench::graph500;

struct options {
    int scale = 18;
    int edgefactor = 16;
    int roots = 64;
    int rounds = 3;
    int threads = 2;  // the OpenMP reference's threads
    std::vector<std::string> kernels = {"bfs", "sssp"};
    std::vector<std::string> shapes = {"2x1", "1x2"};  // am: ranks x threads per rank
    std::vector<std::string> baselines = {"omp", "omp-refined", "pbgl"};  // each its kernels
    std::string delta = "0";  // 0: automatic (am and the reference, one formula); PBGL 0.05
    std::string damping = "0.85";
    std::string tolerance = "1e-6";
    std::string graph = "kronecker";
    std::string seed = std::to_string(am::graph::graph_spec{}.seed);
    std::string am = AM_GRAPH500_AM;
    std::string pbgl = AM_GRAPH500_PBGL;
    std::string omp = AM_GRAPH500_OMP;
    std::string mpirun = AM_BENCH_MPIEXEC;
    bool top_down = false;  // am's BFS without direction optimisation (PBGL's algorithm)
    bool hop = true;
    bool validate_between = false;  // Graph500's order: each search validated before the next
};

const char* const usage_text =
    "Graph500 BFS, SSSP, connected components and PageRank on am (am-graph500: 2 shm ranks,\n"
    "and 1 rank x 2 threads) beside the OpenMP shared-memory reference (omp_graph_ref, 2\n"
    "threads: bfs, sssp) and the Parallel BGL (mpirun -n 2 pbgl_baseline) on the same graph\n"
    "and roots, alternating runs, the cache-line hop measured before each round. Prints every\n"
    "JSON line of each, then per kernel, am shape and baseline the median harmonic-mean TEPS\n"
    "of each and their ratio. cc and pagerank run once per root; PBGL's PageRank runs as many\n"
    "iterations as am's took in the same round.";

// The options, bound to `o`.
std::vector<am::bench::option_spec> option_table(options& o, bool& quick) {
    return {
        {"--scale", "S", "2^S vertices (default 18)", am::bench::store_int(o.scale, "--scale", 1)},
        {"--edgefactor", "E", "edges per vertex (default 16)",
         am::bench::store_int(o.edgefactor, "--edgefactor", 1)},
        {"--roots", "R", "timed roots per kernel and run (default 64)",
         am::bench::store_int(o.roots, "--roots", 1)},
        {"--rounds", "K", "rounds of (am runs, baseline runs) per kernel (default 3)",
         am::bench::store_int(o.rounds, "--rounds", 1)},
        {"--kernel", "K[,K]", "bfs, sssp, cc, pagerank (default bfs,sssp)",
         [&o](const std::string& v) {
             o.kernels = am::bench::to_choices("--kernel", v, {"bfs", "sssp", "cc", "pagerank"});
         }},
        {"--delta", "D",
         "SSSP delta-stepping bucket width (default 0: am's automatic choice, which the "
         "reference computes alike; PBGL then gets am's choice of the round, 0.05 without one)",
         am::bench::store_text(o.delta)},
        {"--am-shape", "RxT[,RxT]", "am's ranks x threads per rank (default 2x1,1x2)",
         [&o](const std::string& v) {
             o.shapes = am::bench::to_choices("--am-shape", v, {"2x1", "1x2", "1x1"});
         }},
        {"--baseline", "B[,B]",
         "omp (GAP's algorithms), omp-refined (SSSP with --dedupe --light-heavy), pbgl "
         "(default all three; 'none' for am alone)",
         [&o](const std::string& v) {
             o.baselines = v == "none" ? std::vector<std::string>{}
                                       : am::bench::to_choices("--baseline", v,
                                                               {"omp", "omp-refined", "pbgl"});
         }},
        {"--threads", "T", "the OpenMP reference's threads (default 2)",
         am::bench::store_int(o.threads, "--threads", 1)},
        {"--no-hop", nullptr, "do not measure the cache-line hop before each round",
         am::bench::store_flag(o.hop, false)},
        {"--validate-between", nullptr,
         "am and the OpenMP reference validate each search before the next (Graph500's order; "
         "the validation cools the caches of the next search); default: every result is kept "
         "and validated after the timed searches (--validate-after)",
         am::bench::store_flag(o.validate_between)},
        {"--damping", "D", "PageRank damping factor (default 0.85)",
         am::bench::store_text(o.damping)},
        {"--tolerance", "T", "am's PageRank stopping rule: L1 change below T (default 1e-6)",
         am::bench::store_text(o.tolerance)},
        {"--graph", "G", "kronecker (default) or er", am::bench::store_text(o.graph)},
        {"--seed", "X", "generator seed (default that of graph_spec)",
         am::bench::store_text(o.seed)},
        {"--top-down", nullptr, "am's BFS top-down only (--no-direction-opt), as PBGL's BFS is",
         am::bench::store_flag(o.top_down)},
        {"--quick", nullptr, "smoke run: scale 10, 4 roots, 1 round (unless given)",
         [&quick](const std::string&) { quick = true; }},
        {"--json", nullptr, "accepted for uniformity: the output is always JSON lines",
         [](const std::string&) {}},
        {"--am", "PATH", "am-graph500 (default: where the build puts it)",
         am::bench::store_text(o.am)},
        {"--pbgl", "PATH", "pbgl_baseline (default: where the build puts it)",
         am::bench::store_text(o.pbgl)},
        {"--omp", "PATH", "omp_graph_ref (default: where the build puts it)",
         am::bench::store_text(o.omp)},
        {"--mpirun", "PATH", "MPI launcher of the PBGL baseline", am::bench::store_text(o.mpirun)},
    };
}

options parse(int argc, char** argv) {
    options o;
    bool quick = false;
    const std::vector<std::string> given =
        am::bench::parse_args(argc, argv, usage_text, option_table(o, quick));
    auto was_given = [&](const char* f) {
        return std::find(given.begin(), given.end(), f) != given.end();
    };
    if (quick) {
        if (!was_given("--scale")) o.scale = 10;
        if (!was_given("--roots")) o.roots = 4;
        if (!was_given("--rounds")) o.rounds = 1;
    }
    return o;
}

bool executable(const std::string& p) {
    return !p.empty() && access(p.c_str(), X_OK) == 0;
}

/// Runs `argv` with `env` ("NAME=value") added; copies the JSON lines of its stdout to ours
/// (other lines to stderr) and returns the Graph500 lines among them; its stderr passes
/// through. `status` is its exit status (-1 when it could not run or was killed).
std::vector<g500::teps_line> run_child(std::vector<std::string> argv,
                                       const std::vector<std::string>& env, int& status) {
    std::fflush(nullptr);
    int fds[2];
    if (pipe(fds) != 0) {
        std::perror("graph500_bench: pipe");
        status = -1;
        return {};
    }
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        if (geteuid() == 0) {  // Open MPI refuses root unless told twice
            setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
            setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        }
        am::bench::exec_with_env(argv, env, "graph500_bench");
    }
    close(fds[1]);
    std::vector<g500::teps_line> lines;
    std::FILE* in = fdopen(fds[0], "r");
    char buf[4096];
    while (in != nullptr && std::fgets(buf, sizeof buf, in) != nullptr) {
        const bool json = buf[0] == '{';
        std::fputs(buf, json ? stdout : stderr);
        std::fflush(json ? stdout : stderr);
        if (auto t = g500::parse(buf)) lines.push_back(*t);
    }
    if (in != nullptr) std::fclose(in);
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) < 0) {
        status = -1;
    } else {
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    }
    return lines;
}

/// The options of one system's run of `kernel`: am-graph500 and pbgl_baseline take the
/// Graph500 ones; the OpenMP reference has bfs and sssp only (no PageRank options). `delta`:
/// PBGL needs a number, so "0" (automatic) becomes am's choice of this round.
std::vector<std::string> graph_args(const options& o, const std::string& system,
                                    const std::string& kernel, const std::string& delta) {
    std::vector<std::string> a = {"--scale",      std::to_string(o.scale),
                                  "--edgefactor", std::to_string(o.edgefactor),
                                  "--kernel",     kernel,
                                  "--roots",      std::to_string(o.roots),
                                  "--delta",      delta,
                                  "--seed",       o.seed,
                                  "--json"};
    a.insert(a.end(), {"--graph", o.graph});
    if (!system.starts_with("omp")) {
        a.insert(a.end(), {"--damping", o.damping, "--tolerance", o.tolerance});
    }
    return a;
}

/// One round's figure of one system: its harmonic-mean TEPS and the round's cache-line hop.
struct sample {
    double teps = 0;
    double hop_us = 0;  // 0: not measured
};

/// Figures by (kernel, system label: "am 2x1", "am 1x2", "omp", "pbgl").
using series = std::map<std::pair<std::string, std::string>, std::vector<sample>>;

/// Runs one system once for `kernel`; adds its harmonic mean to `out` and returns its line
/// (nullopt on failure, said on stderr).
std::optional<g500::teps_line> run_system(const std::string& system, std::vector<std::string> argv,
                                          const std::vector<std::string>& env,
                                          const std::string& kernel, double hop_us, series& out) {
    int status = 0;
    const std::vector<g500::teps_line> lines = run_child(std::move(argv), env, status);
    for (const g500::teps_line& t : lines) {
        if (t.base.op != kernel) continue;
        if (!t.validated) {
            std::fprintf(stderr, "graph500_bench: %s %s: result NOT VALIDATED\n", system.c_str(),
                         kernel.c_str());
            return std::nullopt;
        }
        if (status == 0) {
            out[{kernel, system}].push_back({t.harmonic_mean, hop_us});
            return t;
        }
    }
    std::fprintf(stderr, "graph500_bench: %s %s failed (exit status %d, %zu Graph500 lines)\n",
                 system.c_str(), kernel.c_str(), status, lines.size());
    return std::nullopt;
}

/// A hop below `near_hop_us` is the "near" vCPU state, one at or above `far_hop_us` "far"
/// (0.15–0.4 µs on this VM), one between them "middle" (docs/graph.md).
constexpr double near_hop_us = 0.1;
constexpr double far_hop_us = 0.15;

const char* hop_state(double hop_us) {
    if (hop_us <= 0) return "unmeasured";
    return hop_us < near_hop_us ? "near" : hop_us < far_hop_us ? "middle" : "far";
}

/// The TEPS of the samples taken in hop state `state` (all of them when empty).
std::vector<double> teps_in(const std::vector<sample>& v, const std::string& state) {
    std::vector<double> out;
    for (const sample& s : v) {
        if (state.empty() || state == hop_state(s.hop_us)) out.push_back(s.teps);
    }
    return out;
}

double median_hop(const std::vector<sample>& v, const std::string& state) {
    std::vector<double> h;
    for (const sample& s : v) {
        if (s.hop_us > 0 && (state.empty() || state == hop_state(s.hop_us))) h.push_back(s.hop_us);
    }
    return h.empty() ? 0 : am::bench::summarize(std::move(h)).median;
}

/// What a ratio line compares: am in one shape against one baseline, on one kernel.
struct comparison {
    std::string kernel, shape, baseline;
    int iterations = 0;  // PageRank against PBGL: the count both ran
};

/// One ratio line: each system's median harmonic mean over the rounds in hop state `state`
/// (all rounds when empty) and their ratio.
void print_ratio(const options& o, const comparison& c, const std::vector<sample>& am_runs,
                 const std::vector<sample>& base_runs, const std::string& state) {
    const auto a = am::bench::summarize(teps_in(am_runs, state));
    const auto p = am::bench::summarize(teps_in(base_runs, state));
    if (a.reps == 0 || p.reps == 0 || p.median <= 0 || p.min <= 0 || p.max <= 0) return;
    const int ranks = c.shape[0] - '0', threads = c.shape[2] - '0';
    // min-max: the range of the ratio (am's min over the baseline's max, and its max over
    // the baseline's min).
    const am::bench::summary ratio = am::bench::ratio_of(a, p);
    const std::string system = "am/" + c.baseline;
    std::string s = am::bench::to_json(
        am::bench::make_result("graph500", system, "shm", ranks, c.kernel, 0, "teps_ratio", ratio));
    s.pop_back();
    const double hop = median_hop(am_runs, state);
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  ",\"scale\":%d,\"edgefactor\":%d,\"roots\":%d,\"threads\":%d,"
                  "\"am_harmonic_mean\":%.6g,\"%s_harmonic_mean\":%.6g,\"hop_us\":%.4g,"
                  "\"hop_state\":\"%s\"",
                  o.scale, o.edgefactor, o.roots, threads, a.median, c.baseline.c_str(), p.median,
                  hop, state.empty() ? "all" : state.c_str());
    std::string extra;
    if (c.iterations > 0) extra = ",\"iterations\":" + std::to_string(c.iterations);
    std::printf("%s%s%s}\n", s.c_str(), buf, extra.c_str());
    std::fprintf(stderr,
                 "graph500 %-4s scale %d edgefactor %d, %d roots, %d rounds (hop %s, median "
                 "%.3g us): am %s %.4g TEPS, %s %.4g TEPS (harmonic means, median of rounds): "
                 "%s %.3g\n",
                 c.kernel.c_str(), o.scale, o.edgefactor, o.roots, ratio.reps,
                 state.empty() ? "all" : state.c_str(), hop, c.shape.c_str(), a.median,
                 c.baseline.c_str(), p.median, system.c_str(), ratio.median);
    std::fflush(nullptr);
}

/// The ratio lines of one comparison: over all rounds, and per hop state when the rounds
/// saw more than one.
void print_ratios(const options& o, const comparison& c, const series& runs) {
    const auto am_it = runs.find({c.kernel, "am " + c.shape});
    const auto base_it = runs.find({c.kernel, c.baseline});
    if (am_it == runs.end() || base_it == runs.end()) return;
    print_ratio(o, c, am_it->second, base_it->second, "");
    std::vector<const char*> seen;
    for (const char* state : {"near", "middle", "far"}) {
        if (!teps_in(am_it->second, state).empty()) seen.push_back(state);
    }
    if (seen.size() < 2) return;
    for (const char* state : seen) print_ratio(o, c, am_it->second, base_it->second, state);
}

/// The cache-line hop between the two cores now, printed as a JSON line; 0 when it could not
/// be measured.
double measure_hop(const options& o) {
    if (!o.hop || am::bench::usable_cores() < 2) return 0;
    const std::vector<double> v = am::bench::cores_hop(5);
    if (v.empty()) return 0;
    const am::bench::summary s = am::bench::summarize(v);
    std::printf("%s\n", am::bench::to_json(am::bench::make_result("graph500", "cacheline", "shm", 2,
                                                                  "hop", 8, "latency_us", s))
                            .c_str());
    std::fprintf(stderr, "graph500_bench: cache-line hop %.3g us (%s)\n", s.median,
                 hop_state(s.median));
    std::fflush(nullptr);
    return s.median;
}

/// Where each system's program is, and whether it is there.
struct programs {
    const options& o;
    [[nodiscard]] const std::string& path(const std::string& system) const {
        return system.starts_with("omp") ? o.omp : system == "pbgl" ? o.pbgl : o.am;
    }
    [[nodiscard]] bool have(const std::string& system) const { return executable(path(system)); }
};

/// PageRank: the iterations am's run of this round took (its JSON line's "levels"), which
/// PBGL's run then takes; 0 when unknown (PBGL runs to the tolerance).
int pagerank_steps(const std::optional<g500::teps_line>& am_line, int& before) {
    const int steps = am_line ? static_cast<int>(std::lround(am_line->levels)) : 0;
    if (steps > 0 && before > 0 && before != steps) {
        std::fprintf(stderr,
                     "graph500_bench: am's pagerank took %d iterations in this round, %d "
                     "before\n",
                     steps, before);
    }
    if (steps > 0) {
        before = steps;
        std::fprintf(stderr,
                     "graph500_bench: PBGL's pagerank runs %d iterations, as many as am's "
                     "took\n",
                     steps);
    } else {
        std::fprintf(stderr,
                     "graph500_bench: am's pagerank iterations unknown: PBGL's runs to "
                     "the tolerance\n");
    }
    return steps;
}

/// The command of one baseline's run.
std::vector<std::string> baseline_command(const options& o, const std::string& baseline,
                                          const std::vector<std::string>& args, int steps) {
    std::vector<std::string> cmd;
    if (baseline == "omp" || baseline == "omp-refined") {
        cmd = {o.omp, "--threads", std::to_string(o.threads)};
        if (!o.validate_between) cmd.push_back("--validate-after");
        // The two refinements am's SSSP has too (omp_graph_ref --help).
        if (baseline == "omp-refined") cmd.insert(cmd.end(), {"--dedupe", "--light-heavy"});
    } else {
        // mpirun binds PBGL's processes to cores when there are two (am-graph500 does not pin
        // its ranks; docs/graph.md says so beside the figures).
        cmd = {o.mpirun, "-n", "2", "--map-by", "core"};
        if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
            cmd.insert(cmd.end(), {"--bind-to", "core"});
        } else {
            cmd.insert(cmd.end(), {"--bind-to", "none", "--oversubscribe"});
        }
        cmd.push_back(o.pbgl);
    }
    cmd.insert(cmd.end(), args.begin(), args.end());
    if (steps > 0) cmd.insert(cmd.end(), {"--iterations", std::to_string(steps)});
    return cmd;
}

/// Whether `baseline` runs `kernel` on this graph.
bool runs_kernel(const std::string& baseline, const std::string& kernel) {
    if (baseline == "pbgl") return true;
    if (baseline == "omp-refined") return kernel == "sssp";  // its options change SSSP only
    return kernel == "bfs" || kernel == "sssp";
}

/// One round of one kernel: am in each shape, then each baseline that has the kernel.
bool run_round(const options& o, const programs& have, const std::string& k, double hop,
               series& runs, std::map<std::string, int>& iterations) {
    bool ok = true;
    std::optional<g500::teps_line> first_am;
    for (const std::string& shape : o.shapes) {
        if (!have.have("am")) break;
        if (shape[2] != '1' && k != "bfs" && k != "sssp") {  // threads: bfs and sssp only
            std::fprintf(stderr,
                         "graph500_bench: am %s skipped for %s (--threads > 1 runs bfs "
                         "and sssp only)\n",
                         shape.c_str(), k.c_str());
            continue;
        }
        std::vector<std::string> cmd = {o.am,
                                        o.validate_between ? "--validate" : "--validate-after",
                                        "--threads", shape.substr(2)};
        if (o.top_down) cmd.push_back("--no-direction-opt");
        const std::vector<std::string> args = graph_args(o, "am", k, o.delta);
        cmd.insert(cmd.end(), args.begin(), args.end());
        const auto line =
            run_system("am " + shape, cmd, {"AM_TRANSPORT=shm", "AM_RANKS=" + shape.substr(0, 1)},
                       k, hop, runs);
        ok = line.has_value() && ok;
        if (!first_am) first_am = line;
    }
    for (const std::string& b : o.baselines) {
        if (!have.have(b) || !runs_kernel(b, k)) continue;
        const int steps =
            b == "pbgl" && k == "pagerank" ? pagerank_steps(first_am, iterations[k]) : 0;
        std::string delta = o.delta;
        if (b == "pbgl" && std::strtod(delta.c_str(), nullptr) <= 0) {
            const double chosen = first_am ? first_am->delta : 0;
            char text[32];
            std::snprintf(text, sizeof text, "%.9g", chosen);
            delta = chosen > 0 ? text : "0.05";
        }
        const auto cmd = baseline_command(o, b, graph_args(o, b, k, delta), steps);
        ok = run_system(b, cmd, {}, k, hop, runs).has_value() && ok;
    }
    return ok;
}

/// Says on stderr which programs are missing; true when all are there.
bool report_missing(const options& o, const programs& have) {
    bool all = true;
    if (!have.have("am")) {
        std::fprintf(stderr,
                     "graph500_bench: NO AM RUN: am-graph500 not found at '%s' (build the "
                     "am-graph500 target, or give --am)\n",
                     o.am.c_str());
        all = false;
    }
    for (const std::string& b : o.baselines) {
        if (have.have(b)) continue;
        all = false;
        std::fprintf(stderr,
                     b == "pbgl"
                         ? "graph500_bench: NO PBGL BASELINE: pbgl_baseline not found at '%s' (it "
                           "is built when CMake finds Boost.MPI and Boost.Graph.Parallel; or give "
                           "--pbgl)\n"
                         : "graph500_bench: NO OMP BASELINE: omp_graph_ref not found at '%s' (it "
                           "is built when CMake finds OpenMP; or give --omp)\n",
                     have.path(b).c_str());
    }
    return all;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    const programs have{o};
    const bool all = report_missing(o, have);
    series runs;
    std::map<std::string, int> iterations;  // PageRank: am's count, PBGL's --iterations
    bool ok = true;
    for (int round = 0; round < o.rounds; ++round) {
        const double hop = measure_hop(o);
        for (const std::string& k : o.kernels)
            ok = run_round(o, have, k, hop, runs, iterations) && ok;
    }
    for (const std::string& k : o.kernels) {
        for (const std::string& shape : o.shapes) {
            for (const std::string& b : o.baselines) {
                print_ratios(o, {k, shape, b, b == "pbgl" ? iterations[k] : 0}, runs);
            }
        }
    }
    if (!ok) return 1;
    return all ? 0 : 3;
}
