// SPDX-License-Identifier: MIT
/// @file
/// Graph500 on am beside the Parallel BGL, in one invocation: for each kernel (bfs, sssp, cc,
/// pagerank) and
/// each of --rounds rounds, runs `am-graph500` (2 shm ranks: AM_TRANSPORT=shm AM_RANKS=2)
/// and then `mpirun -n 2 pbgl_baseline` on the same graph and roots, prints every JSON line
/// both print, and at the end, per kernel, one line with the median over the rounds of each
/// system's harmonic-mean TEPS and their ratio (system "am/pbgl", metric "teps_ratio":
/// median = ratio of the medians; min and max the ratio's range, am's min over PBGL's max and
/// am's max over PBGL's min: report.hpp's ratio_of).
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
    std::vector<std::string> kernels = {"bfs", "sssp"};
    std::string delta = "0.1";
    std::string damping = "0.85";
    std::string tolerance = "1e-6";
    std::string graph = "kronecker";
    std::string seed = std::to_string(am::graph::graph_spec{}.seed);
    std::string am = AM_GRAPH500_AM;
    std::string pbgl = AM_GRAPH500_PBGL;
    std::string mpirun = AM_BENCH_MPIEXEC;
    bool top_down = false;  // am's BFS without direction optimisation (PBGL's algorithm)
};

const char* const usage_text =
    "Graph500 BFS, SSSP, connected components and PageRank on am (am-graph500, 2 shm\n"
    "ranks) beside the Parallel BGL (mpirun -n 2 pbgl_baseline) on the same graph and\n"
    "roots, alternating runs. Prints every JSON line of both, then per kernel the median\n"
    "harmonic-mean TEPS of each and am/pbgl. cc and pagerank run once per root; PBGL's\n"
    "PageRank runs as many iterations as am's took in the same round.";

// The options, bound to `o`.
std::vector<am::bench::option_spec> option_table(options& o, bool& quick) {
    return {
        {"--scale", "S", "2^S vertices (default 18)", am::bench::store_int(o.scale, "--scale", 1)},
        {"--edgefactor", "E", "edges per vertex (default 16)",
         am::bench::store_int(o.edgefactor, "--edgefactor", 1)},
        {"--roots", "R", "timed roots per kernel and run (default 64)",
         am::bench::store_int(o.roots, "--roots", 1)},
        {"--rounds", "K", "(am run, PBGL run) pairs per kernel (default 3)",
         am::bench::store_int(o.rounds, "--rounds", 1)},
        {"--kernel", "K[,K]", "bfs, sssp, cc, pagerank (default bfs,sssp)",
         [&o](const std::string& v) {
             o.kernels = am::bench::to_choices("--kernel", v, {"bfs", "sssp", "cc", "pagerank"});
         }},
        {"--delta", "D", "SSSP delta-stepping bucket width (default 0.1)",
         am::bench::store_text(o.delta)},
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

/// The options both programs take, for one kernel.
std::vector<std::string> graph_args(const options& o, const std::string& kernel) {
    return {"--scale",      std::to_string(o.scale),
            "--edgefactor", std::to_string(o.edgefactor),
            "--kernel",     kernel,
            "--roots",      std::to_string(o.roots),
            "--delta",      o.delta,
            "--damping",    o.damping,
            "--tolerance",  o.tolerance,
            "--graph",      o.graph,
            "--seed",       o.seed,
            "--json"};
}

/// The harmonic-mean TEPS of one system and kernel, one per round.
using series = std::map<std::string, std::vector<double>>;  // key: kernel

/// Runs one system once for `kernel`; adds its harmonic mean to `out` and sets `levels` to
/// its line's (0 when it has none). False on failure.
bool run_system(const std::string& system, std::vector<std::string> argv,
                const std::vector<std::string>& env, const std::string& kernel, series& out,
                double& levels) {
    int status = 0;
    levels = 0;
    const std::vector<g500::teps_line> lines = run_child(std::move(argv), env, status);
    for (const g500::teps_line& t : lines) {
        if (t.base.op != kernel) continue;
        if (!t.validated) {
            std::fprintf(stderr, "graph500_bench: %s %s: result NOT VALIDATED\n", system.c_str(),
                         kernel.c_str());
            return false;
        }
        if (status == 0) {
            out[kernel].push_back(t.harmonic_mean);
            levels = t.levels;
            return true;
        }
    }
    std::fprintf(stderr, "graph500_bench: %s %s failed (exit status %d, %zu Graph500 lines)\n",
                 system.c_str(), kernel.c_str(), status, lines.size());
    return false;
}

double median_of(std::vector<double> v) {
    return am::bench::summarize(std::move(v)).median;
}

/// The final line of a kernel: each system's median harmonic mean and their ratio (PageRank:
/// and the iterations both ran, when am's count was known).
void print_ratio(const options& o, const std::string& kernel, const std::vector<double>& am,
                 const std::vector<double>& pbgl, int iterations) {
    const auto a = am::bench::summarize(am), p = am::bench::summarize(pbgl);
    if (a.reps == 0 || p.reps == 0 || p.median <= 0 || p.min <= 0 || p.max <= 0) return;
    // min-max: the range of the ratio (am's min over PBGL's max, am's max over PBGL's min).
    const am::bench::summary ratio = am::bench::ratio_of(a, p);
    std::string s = am::bench::to_json(
        am::bench::make_result("graph500", "am/pbgl", "shm", 2, kernel, 0, "teps_ratio", ratio));
    s.pop_back();
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  ",\"scale\":%d,\"edgefactor\":%d,\"roots\":%d,\"am_harmonic_mean\":%.6g,"
                  "\"pbgl_harmonic_mean\":%.6g",
                  o.scale, o.edgefactor, o.roots, median_of(am), median_of(pbgl));
    std::string extra;
    if (iterations > 0) extra = ",\"iterations\":" + std::to_string(iterations);
    std::printf("%s%s%s}\n", s.c_str(), buf, extra.c_str());
    std::fprintf(stderr,
                 "graph500 %-4s scale %d edgefactor %d, %d roots, %d rounds: am %.4g TEPS, pbgl "
                 "%.4g TEPS (harmonic means, median of rounds): am/pbgl %.3g\n",
                 kernel.c_str(), o.scale, o.edgefactor, o.roots, ratio.reps, median_of(am),
                 median_of(pbgl), ratio.median);
    std::fflush(nullptr);
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    const bool have_am = executable(o.am);
    const bool have_pbgl = executable(o.pbgl);
    if (!have_am) {
        std::fprintf(stderr,
                     "graph500_bench: NO AM RUN: am-graph500 not found at '%s' (build the "
                     "am-graph500 target, or give --am)\n",
                     o.am.c_str());
    }
    if (!have_pbgl) {
        std::fprintf(stderr,
                     "graph500_bench: NO PBGL BASELINE: pbgl_baseline not found at '%s' (it is "
                     "built when CMake finds Boost.MPI and Boost.Graph.Parallel; or give "
                     "--pbgl)\n",
                     o.pbgl.c_str());
    }
    series am, pbgl;
    std::map<std::string, int> iterations;  // PageRank: am's count, PBGL's --iterations
    bool ok = true;
    for (int round = 0; round < o.rounds; ++round) {
        for (const std::string& k : o.kernels) {
            const std::vector<std::string> args = graph_args(o, k);
            double am_levels = 0;
            if (have_am) {
                std::vector<std::string> cmd = {o.am, "--validate"};
                if (o.top_down) cmd.push_back("--no-direction-opt");
                cmd.insert(cmd.end(), args.begin(), args.end());
                ok = run_system("am", cmd, {"AM_TRANSPORT=shm", "AM_RANKS=2"}, k, am, am_levels) &&
                     ok;
            }
            int steps = 0;
            if (k == "pagerank") {
                steps = static_cast<int>(std::lround(am_levels));
                if (steps > 0 && iterations[k] > 0 && iterations[k] != steps) {
                    std::fprintf(stderr,
                                 "graph500_bench: am's pagerank took %d iterations in this "
                                 "round, %d before\n",
                                 steps, iterations[k]);
                }
                if (steps > 0) {
                    iterations[k] = steps;
                    std::fprintf(stderr,
                                 "graph500_bench: PBGL's pagerank runs %d iterations, as many as "
                                 "am's took\n",
                                 steps);
                } else {
                    std::fprintf(stderr,
                                 "graph500_bench: am's pagerank iterations unknown: PBGL's runs "
                                 "to the tolerance\n");
                }
            }
            if (have_pbgl) {
                // mpirun binds PBGL's processes to cores when there are two (am-graph500
                // does not pin its ranks; docs/graph.md says so beside the figures).
                std::vector<std::string> cmd = {o.mpirun, "-n", "2", "--map-by", "core"};
                if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
                    cmd.insert(cmd.end(), {"--bind-to", "core"});
                } else {
                    cmd.insert(cmd.end(), {"--bind-to", "none", "--oversubscribe"});
                }
                cmd.push_back(o.pbgl);
                cmd.insert(cmd.end(), args.begin(), args.end());
                if (steps > 0) cmd.insert(cmd.end(), {"--iterations", std::to_string(steps)});
                double pbgl_levels = 0;
                ok = run_system("pbgl", cmd, {}, k, pbgl, pbgl_levels) && ok;
            }
        }
    }
    for (const std::string& k : o.kernels) print_ratio(o, k, am[k], pbgl[k], iterations[k]);
    if (!ok) return 1;
    return have_am && have_pbgl ? 0 : 3;
}
