// SPDX-License-Identifier: MIT
#include "options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace am::bench {
namespace {

const char* const usage_text = R"(
options (shared by every program in bench/):
  --json               JSON lines on stdout (one object per result); table on stderr
  --reps N             timed repetitions per point; median/min/max over them (default 7)
  --iters N            iterations per repetition for small messages; scaled down for large ones
  --warmup N           untimed iterations before the repetitions (default iters/10)
  --sizes a,b,...      message sizes in bytes (suffixes K, M: 64K, 1M)
  --min-bytes N        smallest size of the default power-of-two sweep
  --max-bytes N        largest size of the default power-of-two sweep
  --ops a,b,...        only these operations: short, medium, long (long brings memcpy)
  --transport T        am transport: shm (default), threads, or mpi (am_pingpong, am_flood:
                       the am ranks are an MPI job, started with mpirun by the program
                       itself unless it was itself started by mpirun; default when started
                       by mpirun)
  --ranks N            am ranks (default 2; the benchmark runs between ranks 0 and 1);
                       mpi: the processes mpirun starts (ignored under the user's mpirun)
  --node-size N        mpi: ranks per node (AM_NODE_SIZE): 1 (default) sends everything
                       through MPI, 0 lets ranks on one host share memory, N > 1 groups
                       ranks 0..N-1, N..2N-1, ... into nodes ("mixed": shared memory within
                       a node, MPI between nodes)
  --peers a,b,...      am_pingpong, am_flood: ranks that rank 0 measures against, in turn
                       (default 1; mixed mpi: 1 and the first rank of the next node)
  --pin | --no-pin     pin rank r to core r (default: on when ranks <= cores)
  --no-baseline        do not run the MPI baseline (nor the UCX one)
  --no-ucx             am_pingpong, am_flood: do not run the UCX baseline
  --ucx-perftest PATH  am_pingpong, am_flood: UCX's ucx_perftest for the UCX baseline
                       (default: ucx_perftest on PATH; skipped with a note when absent)
  --rounds N           repeat (am run, MPI run) N times, alternating, and pool them: median
                       of the per-round medians, min of minima, max of maxima; ratios are
                       taken within each round (default 1; 5 with --demo)
  --window N           MPI_Isend window of the MPI flood and bandwidth runs (default 64);
                       outstanding operations per window in rma_bw and sendrecv_pingpong
  --rma P              rma_lat, rma_bw: put/get path to measure: auto (direct copies where
                       the segment is mapped), am (active messages only) or both (default)
  --mpirun PATH        launcher of the MPI baseline (default: the one found at build time)
  --touch              am_flood: medium handlers read every payload byte (as a consumer would;
                       MPI_Recv copies it in any case); default: the payload is not read
  --demo               am_pingpong: short am-vs-MPI latency comparison for the README
  --mpi-child          internal: marks the am ranks an am benchmark started under mpirun
  --help               this text
)";

[[noreturn]] void die(const char* prog, const std::string& msg) {
    std::fprintf(stderr, "%s: %s (try --help)\n", prog, msg.c_str());
    std::exit(2);
}

std::size_t parse_size(const char* prog, std::string_view s) {
    if (s.empty()) die(prog, "empty size");
    std::size_t mult = 1;
    const char last = s.back();
    if (last == 'K' || last == 'k') mult = std::size_t{1} << 10;
    if (last == 'M' || last == 'm') mult = std::size_t{1} << 20;
    if (last == 'G' || last == 'g') mult = std::size_t{1} << 30;
    if (mult != 1) s.remove_suffix(1);
    std::size_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') die(prog, "bad size '" + std::string(s) + "'");
        v = v * 10 + static_cast<std::size_t>(c - '0');
    }
    return v * mult;
}

std::vector<std::size_t> parse_sizes(const char* prog, std::string_view s) {
    std::vector<std::size_t> v;
    for (const std::string& item : split(s)) v.push_back(parse_size(prog, item));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

long parse_int(const char* prog, const char* flag, const char* text, long lo) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < lo) {
        die(prog, std::string(flag) + " needs an integer >= " + std::to_string(lo));
    }
    return v;
}

}  // namespace

bool options::wants(const std::string& op) const {
    return ops.empty() || std::find(ops.begin(), ops.end(), op) != ops.end();
}

options parse_options(int argc, char** argv, const char* summary) {
    const char* prog = argc > 0 ? argv[0] : "bench";
    options o;
    for (int i = 1; i < argc; ++i) o.args.emplace_back(argv[i]);
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) die(prog, std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            std::printf("usage: %s [options]\n%s\n%s", prog, summary, usage_text);
            std::exit(0);
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--reps") {
            o.reps = static_cast<int>(parse_int(prog, "--reps", value(), 1));
        } else if (a == "--iters") {
            o.iters = static_cast<std::uint64_t>(parse_int(prog, "--iters", value(), 1));
        } else if (a == "--warmup") {
            o.warmup = static_cast<std::uint64_t>(parse_int(prog, "--warmup", value(), 0));
        } else if (a == "--sizes") {
            o.sizes = parse_sizes(prog, value());
        } else if (a == "--bw-sizes") {
            o.bw_sizes = parse_sizes(prog, value());
        } else if (a == "--min-bytes") {
            o.min_bytes = parse_size(prog, value());
        } else if (a == "--max-bytes") {
            o.max_bytes = parse_size(prog, value());
        } else if (a == "--ops") {
            o.ops = split(value());
        } else if (a == "--transport") {
            o.transport = value();
            o.transport_given = true;
            if (o.transport != "shm" && o.transport != "threads" && o.transport != "mpi") {
                die(prog, "--transport must be shm, threads or mpi");
            }
        } else if (a == "--ranks") {
            o.ranks = static_cast<int>(parse_int(prog, "--ranks", value(), 1));
        } else if (a == "--node-size") {
            o.node_size = static_cast<int>(parse_int(prog, "--node-size", value(), 0));
        } else if (a == "--peers") {
            o.peers.clear();
            for (const std::string& item : split(value())) {
                o.peers.push_back(static_cast<int>(parse_int(prog, "--peers", item.c_str(), 0)));
            }
        } else if (a == "--mpi-child") {
            o.mpi_child = true;
        } else if (a == "--pin") {
            o.pin = 1;
        } else if (a == "--no-pin") {
            o.pin = 0;
        } else if (a == "--no-baseline") {
            o.baseline = false;
        } else if (a == "--no-ucx") {
            o.ucx = false;
        } else if (a == "--ucx-perftest") {
            o.ucx_perftest = value();
        } else if (a == "--rounds") {
            o.rounds = static_cast<int>(parse_int(prog, "--rounds", value(), 1));
        } else if (a == "--window") {
            o.window = static_cast<int>(parse_int(prog, "--window", value(), 1));
        } else if (a == "--mpirun") {
            o.mpirun = value();
        } else if (a == "--bench") {
            o.bench = value();
        } else if (a == "--rma") {
            o.rma = value();
            if (o.rma != "auto" && o.rma != "am" && o.rma != "both") {
                die(prog, "--rma must be auto, am or both");
            }
        } else if (a == "--touch") {
            o.touch = true;
        } else if (a == "--demo") {
            o.demo = true;
        } else if (!a.empty() && a[0] != '-' && o.mode.empty()) {
            o.mode = a;
        } else {
            die(prog, "unknown option '" + std::string(a) + "'");
        }
    }
    return o;
}

std::vector<std::size_t> sizes_for(const options& o, std::size_t lo, std::size_t hi) {
    std::vector<std::size_t> v;
    if (!o.sizes.empty()) {
        for (std::size_t s : o.sizes) {
            if (s >= lo && s <= hi) v.push_back(s);
        }
        return v;
    }
    const std::size_t from = std::max(lo, o.min_bytes);
    const std::size_t to = o.max_bytes != 0 ? std::min(hi, o.max_bytes) : hi;
    std::size_t s = 1;
    while (s < from) s <<= 1;
    for (; s <= to; s <<= 1) v.push_back(s);
    if (from <= to && (v.empty() || v.back() != to) && o.max_bytes == 0) v.push_back(to);
    return v;
}

std::uint64_t iters_for(const options& o, const work_plan& plan, std::size_t bytes) {
    const std::uint64_t n = o.iters != 0 ? o.iters : plan.base;
    if (bytes <= plan.knee) return n;
    const std::uint64_t scaled = n * plan.knee / bytes;
    return std::max(scaled, std::min(plan.floor, n));
}

std::uint64_t warmup_for(const options& o, std::uint64_t iters) {
    if (o.warmup != 0) return o.warmup;
    return std::max<std::uint64_t>(iters / 10, std::min<std::uint64_t>(iters, 10));
}

window_plan windows_for(const options& o, std::uint64_t ops) {
    const std::uint64_t w = std::max<std::uint64_t>(
        1, std::min<std::uint64_t>(static_cast<std::uint64_t>(o.window), ops));
    return {w, (ops + w - 1) / w};
}

std::vector<std::string> split(std::string_view s) {
    std::vector<std::string> out;
    while (!s.empty()) {
        const std::size_t comma = s.find(',');
        out.emplace_back(s.substr(0, comma));
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    return out;
}

std::string join_sizes(const std::vector<std::size_t>& v) {
    std::string s;
    for (std::size_t x : v) {
        if (!s.empty()) s += ',';
        s += std::to_string(x);
    }
    return s;
}

}  // namespace am::bench
