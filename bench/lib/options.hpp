// SPDX-License-Identifier: MIT
/// @file
/// The one option parser of every benchmark in bench/ (am programs and the MPI baselines):
/// a table of `option_spec`s; the shared options (`parse_options`) are one table that each
/// program extends with its own, and programs with options of their own only (rpc, tam,
/// window, graph) hand `parse_args` their table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench {

/// Work per repetition, shared by the am programs and the MPI baseline so both measure the
/// same thing: `base` iterations up to `knee` bytes, scaled by knee/bytes above, at least `floor`.
struct work_plan {
    std::uint64_t base;
    std::size_t knee;
    std::uint64_t floor;
};
inline constexpr work_plan latency_plan{10000, 8192, 20};     ///< ping-pong round trips
inline constexpr work_plan bandwidth_plan{20000, 8192, 20};   ///< streamed large messages
inline constexpr work_plan flood_plan{200000, 1024, 200};     ///< streamed small messages
inline constexpr std::size_t bandwidth_min_bytes = 64 << 10;  ///< bandwidth from this size up

/// Command-line options shared by all benchmarks. A program ignores the ones it has no use for.
struct options {
    bool json = false;         ///< --json: JSON lines on stdout, the table on stderr
    int reps = 7;              ///< --reps N: timed repetitions per point (at least 5 advised)
    std::uint64_t iters = 0;   ///< --iters N: iterations per repetition (0: per-benchmark default)
    std::uint64_t warmup = 0;  ///< --warmup N: untimed iterations before the reps (0: iters/10)
    std::vector<std::size_t> sizes;     ///< --sizes a,b,c: explicit message sizes in bytes
    std::size_t min_bytes = 0;          ///< --min-bytes N: smallest size of the default sweep
    std::size_t max_bytes = 0;          ///< --max-bytes N: largest size of the default sweep
    std::vector<std::size_t> bw_sizes;  ///< --bw-sizes a,b: bandwidth sizes (MPI baseline)
    std::vector<std::string> ops;       ///< --ops short,medium,long: subset to run (empty: all)
    std::string transport = "shm";      ///< --transport threads|shm|mpi|ucx (the first of a list)
    /// --transport mpi,ucx: the am transports of an MPI job measured in turn in every round
    /// (am_pingpong, am_flood); one entry, `transport`, otherwise.
    std::vector<std::string> transports{"shm"};
    int ranks = 2;             ///< --ranks N (mpi: the processes mpirun starts)
    int pin = -1;              ///< --pin / --no-pin (-1: on when ranks <= cores)
    bool baseline = true;      ///< --no-baseline: skip the MPI and UCX runs
    bool ucx = true;           ///< --no-ucx: skip the UCX run (am_pingpong, am_flood)
    std::string ucx_perftest;  ///< --ucx-perftest PATH (empty: ucx_perftest on PATH)
    /// --ucx-tls LIST: UCX_TLS of the UCX baseline, and of the am ranks of the ucx transport
    /// that the benchmark starts itself.
    std::string ucx_tls = "sm,self";
    /// --ucx-tls A/B/...: UCX_TLS values of further UCX baseline runs after the first (B, ...).
    std::vector<std::string> ucx_tls_more;
    int rounds = 0;      ///< --rounds N: repeat the am run + MPI run pair (0: 1, demo 5)
    int window = 64;     ///< --window N: MPI_Isend window of the MPI flood/bandwidth
    bool touch = false;  ///< --touch (am_flood): medium handlers read their whole payload
    bool demo = false;   ///< --demo (am_pingpong): short human-readable am-vs-MPI run
    std::string mpirun;  ///< --mpirun PATH: launcher for the baseline
    std::string mode;    ///< first positional argument (mpi_baseline: pingpong|flood)
    std::string bench;   ///< --bench NAME: value of the "bench" key (mpi_baseline)
    std::string rma;     ///< --rma auto|am|both: put/get paths to measure (rma_lat, rma_bw)

    // The mpi transport (am_pingpong, am_flood).
    bool transport_given = false;  ///< --transport was on the command line
    int node_size = -1;            ///< --node-size N: `config::node_size` (-1: 1, all MPI)
    std::vector<int> peers;        ///< --peers a,b: the ranks rank 0 measures against
    /// --mpi-child (internal): this process is an am rank of a job that the benchmark started
    /// under mpirun; rank 0 prints its results as JSON lines for the benchmark to read.
    bool mpi_child = false;
    bool mpi_ok = false;            ///< the program supports --transport mpi and ucx (set by it)
    std::vector<std::string> args;  ///< argv[1..] as given (to start the program again)

    /// Whether to pin rank r to core r, after resolving the default.
    [[nodiscard]] bool pinned(int cores) const { return pin < 0 ? ranks <= cores : pin != 0; }
    /// True when `op` was selected by --ops (or --ops was not given).
    [[nodiscard]] bool wants(const std::string& op) const;
};

/// Whether am transport `t` ("mpi", "ucx") makes the am ranks an MPI job.
[[nodiscard]] inline bool mpi_job(std::string_view t) {
    return t == "mpi" || t == "ucx";
}

/// One command-line option: `--name ARG`, or a flag when `arg` is null, or the first
/// positional argument when `name` is empty; `help` for --help (lines after the first start
/// with a newline); `set` takes the value ("" for a flag) and throws std::invalid_argument,
/// saying what is wrong, when it is bad.
struct option_spec {
    std::string_view name;
    const char* arg;
    const char* help;
    std::function<void(const std::string& value)> set;
};

/// The parser: reads argv[1..] against `table` (the first entry of a name wins, so a program's
/// own entries before the shared ones override them). --help / -h prints `summary` and the
/// table and exits 0; an unknown option or a missing or bad value says why and exits 2.
/// Returns the names of the options given (for defaults that depend on what was given).
std::vector<std::string> parse_args(int argc, char** argv, std::string_view summary,
                                    std::span<const option_spec> table);

/// Parses the shared options, after the program's own `extra` ones (which take precedence);
/// same exits as `parse_args`.
options parse_options(int argc, char** argv, const char* summary,
                      std::span<const option_spec> extra = {});

/// Value readers for `option_spec::set`; they throw std::invalid_argument naming the option.
/// A count: decimal digits with an optional binary K, M or G suffix, at least `lo`.
std::uint64_t to_count(std::string_view flag, std::string_view text, std::uint64_t lo = 0);
/// A comma-separated list of counts, each in [lo, hi], at least one.
std::vector<std::uint64_t> to_counts(std::string_view flag, std::string_view text,
                                     std::uint64_t lo = 0, std::uint64_t hi = UINT64_MAX);
/// One of `choices` (returned as given).
std::string to_choice(std::string_view flag, std::string_view text,
                      std::initializer_list<std::string_view> choices);
/// A comma-separated list, every item one of `choices`.
std::vector<std::string> to_choices(std::string_view flag, std::string_view text,
                                    std::initializer_list<std::string_view> choices);

/// `option_spec::set` functions that store the value into `v` (a flag: `value`; a count or an
/// int: at least `lo`, read as `to_count` reads it, naming `flag` when it is bad).
using option_setter = std::function<void(const std::string& value)>;
option_setter store_flag(bool& v, bool value = true);
option_setter store_text(std::string& v);
option_setter store_count(std::uint64_t& v, std::string_view flag, std::uint64_t lo = 0);
option_setter store_int(int& v, std::string_view flag, int lo = 0);

/// Whether `flag` is among the arguments the program was started with.
[[nodiscard]] bool given(const options& o, std::string_view flag);

/// Message sizes for one operation: --sizes filtered to [lo, hi], otherwise powers of two from
/// max(lo, --min-bytes) to min(hi, --max-bytes), plus the upper bound if it is not one.
std::vector<std::size_t> sizes_for(const options& o, std::size_t lo, std::size_t hi);

/// Iterations per repetition for messages of `bytes`: `plan.base` (or --iters) up to
/// `plan.knee` bytes, then scaled by knee/bytes so large messages take about as long, but at
/// least `plan.floor` (or --iters, if smaller).
std::uint64_t iters_for(const options& o, const work_plan& plan, std::size_t bytes);

/// Untimed warm-up iterations before the repetitions of a point.
std::uint64_t warmup_for(const options& o, std::uint64_t iters);

/// A stream of one-sided operations in windows: `window` operations outstanding, then a wait
/// for all of them; `windows` per repetition.
struct window_plan {
    std::uint64_t window;
    std::uint64_t windows;
};

/// The windows for `ops` operations per repetition: --window operations per window (at most
/// `ops`), `ops` rounded up to whole windows. Shared by the am RMA programs and their MPI
/// baseline so both stream the same number of operations.
window_plan windows_for(const options& o, std::uint64_t ops);

/// "8,16,32" from a list of sizes (to forward options to a child process).
std::string join_sizes(const std::vector<std::size_t>& v);

/// The comma-separated items of `s` ("a,b,c" → {"a", "b", "c"}; "" → {}).
std::vector<std::string> split(std::string_view s);

}  // namespace am::bench
