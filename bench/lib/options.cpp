// SPDX-License-Identifier: MIT
#include "options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace am::bench {
namespace {

[[noreturn]] void die(const char* prog, const std::string& msg) {
    std::fprintf(stderr, "%s: %s (try --help)\n", prog, msg.c_str());
    std::exit(2);
}

[[noreturn]] void bad(std::string_view flag, const std::string& what) {
    throw std::invalid_argument(std::string(flag) + ": " + what);
}

std::vector<std::size_t> to_sizes(std::string_view flag, std::string_view s) {
    std::vector<std::size_t> v;
    for (const std::string& item : split(s)) v.push_back(to_count(flag, item));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

int to_int(std::string_view flag, std::string_view text, std::uint64_t lo) {
    const std::uint64_t v = to_count(flag, text, lo);
    if (v > 0x7fffffff) bad(flag, "too large");
    return static_cast<int>(v);
}

void print_help(const char* prog, std::string_view summary, std::span<const option_spec> table) {
    std::printf("usage: %s [options]\n%.*s\n", prog, static_cast<int>(summary.size()),
                summary.data());
    // A table without help texts (window's) is described by its summary alone.
    const bool described = std::any_of(table.begin(), table.end(),
                                       [](const option_spec& s) { return *s.help != '\0'; });
    if (!described) return;
    std::printf("options:\n");
    for (const option_spec& s : table) {
        std::string left = s.name.empty() ? std::string(s.arg) : std::string(s.name);
        if (!s.name.empty() && s.arg != nullptr) left += std::string(" ") + s.arg;
        std::printf("  %-22s ", left.c_str());
        for (const char* h = s.help; *h != '\0'; ++h) {
            std::fputc(*h, stdout);
            if (*h == '\n') std::printf("  %-22s ", "");
        }
        std::fputc('\n', stdout);
    }
}

const option_spec* find(std::span<const option_spec> table, std::string_view name) {
    for (const option_spec& s : table) {
        if (s.name == name) return &s;
    }
    return nullptr;
}

// The shared table, bound to `o`.
std::vector<option_spec> shared_table(options& o) {
    return {
        {"--json", nullptr, "JSON lines on stdout (one object per result); table on stderr",
         store_flag(o.json)},
        {"--reps", "N", "timed repetitions per point; median/min/max over them (default 7)",
         store_int(o.reps, "--reps", 1)},
        {"--iters", "N", "iterations per repetition for small messages; fewer for large ones",
         store_count(o.iters, "--iters", 1)},
        {"--warmup", "N", "untimed iterations before the repetitions (default iters/10)",
         store_count(o.warmup, "--warmup")},
        {"--sizes", "a,b,...", "message sizes in bytes (suffixes K, M: 64K, 1M)",
         [&o](const std::string& v) { o.sizes = to_sizes("--sizes", v); }},
        {"--bw-sizes", "a,b,...", "bandwidth sizes (MPI baseline)",
         [&o](const std::string& v) { o.bw_sizes = to_sizes("--bw-sizes", v); }},
        {"--min-bytes", "N", "smallest size of the default power-of-two sweep",
         store_count(o.min_bytes, "--min-bytes")},
        {"--max-bytes", "N", "largest size of the default power-of-two sweep",
         store_count(o.max_bytes, "--max-bytes")},
        {"--ops", "a,b,...", "only these operations (short, medium, long: long brings memcpy)",
         [&o](const std::string& v) { o.ops = split(v); }},
        {"--transport", "T",
         "am transport: shm (default), threads, mpi or ucx (am_pingpong, am_flood: the am\n"
         "ranks are an MPI job, started with mpirun by the program itself unless it was\n"
         "started by mpirun; mpi is the default then; ucx: peers off the node through UCX);\n"
         "a list of mpi and ucx (e.g. ucx,mpi) measures each in turn in every round",
         [&o](const std::string& v) {
             o.transports = to_choices("--transport", v, {"shm", "threads", "mpi", "ucx"});
             const bool mpi_jobs = std::all_of(o.transports.begin(), o.transports.end(),
                                               [](const std::string& t) { return mpi_job(t); });
             if (o.transports.empty() || (o.transports.size() > 1 && !mpi_jobs)) {
                 throw std::invalid_argument(
                     "--transport: one transport, or a list of mpi "
                     "and ucx, not '" +
                     v + "'");
             }
             o.transport = o.transports.front();
             o.transport_given = true;
         }},
        {"--ranks", "N",
         "am ranks (default 2; the benchmark runs between ranks 0 and 1);\n"
         "mpi: the processes mpirun starts (ignored under the user's mpirun)",
         store_int(o.ranks, "--ranks", 1)},
        {"--node-size", "N",
         "mpi: ranks per node (AM_NODE_SIZE): 1 (default) sends everything through MPI, 0\n"
         "lets ranks on one host share memory, N > 1 groups ranks 0..N-1, N..2N-1, ... into\n"
         "nodes (\"mixed\": shared memory within a node, MPI between nodes)",
         store_int(o.node_size, "--node-size", 0)},
        {"--peers", "a,b,...",
         "am_pingpong, am_flood: ranks that rank 0 measures against, in turn\n"
         "(default 1; mixed mpi: 1 and the first rank of the next node)",
         [&o](const std::string& v) {
             o.peers.clear();
             for (const std::string& p : split(v)) o.peers.push_back(to_int("--peers", p, 0));
         }},
        {"--pin", nullptr, "pin rank r to core r (default: on when ranks <= cores)",
         [&o](const std::string&) { o.pin = 1; }},
        {"--no-pin", nullptr, "do not pin the ranks", [&o](const std::string&) { o.pin = 0; }},
        {"--no-baseline", nullptr, "do not run the MPI baseline (nor the UCX one)",
         store_flag(o.baseline, false)},
        {"--no-ucx", nullptr, "am_pingpong, am_flood: do not run the UCX baseline",
         store_flag(o.ucx, false)},
        {"--ucx-perftest", "PATH",
         "am_pingpong, am_flood: UCX's ucx_perftest for the UCX baseline\n"
         "(default: ucx_perftest on PATH; skipped with a note when absent)",
         store_text(o.ucx_perftest)},
        {"--ucx-tls", "LIST",
         "am_pingpong, am_flood: UCX_TLS of the UCX baseline and of the am ranks of\n"
         "--transport ucx that the program starts (default sm,self; tcp,self: UCX over TCP);\n"
         "A/B/...: the am ranks and the first baseline run use A, further baseline runs B, ...",
         [&o](const std::string& v) {
             std::vector<std::string> all;
             for (std::size_t from = 0, to = 0; to != std::string::npos; from = to + 1) {
                 to = v.find('/', from);
                 all.push_back(v.substr(from, to == std::string::npos ? to : to - from));
                 if (all.back().empty()) throw std::invalid_argument("--ucx-tls: empty UCX_TLS");
             }
             o.ucx_tls = all.front();
             o.ucx_tls_more.assign(all.begin() + 1, all.end());
         }},
        {"--rounds", "N",
         "repeat (am run, MPI run) N times, alternating, and pool them: median of the\n"
         "per-round medians, min of minima, max of maxima; ratios are taken within each\n"
         "round (default 1; 5 with --demo)",
         store_int(o.rounds, "--rounds", 1)},
        {"--window", "N",
         "MPI_Isend window of the MPI flood and bandwidth runs (default 64);\n"
         "outstanding operations per window in rma_bw and sendrecv_pingpong",
         store_int(o.window, "--window", 1)},
        {"--rma", "P",
         "rma_lat, rma_bw: put/get path to measure: auto (direct copies where the segment\n"
         "is mapped), am (active messages only) or both (default)",
         [&o](const std::string& v) {
             o.rma = to_choice("--rma", v, {"auto", "am", "both"});
         }},
        {"--mpirun", "PATH", "launcher of the MPI baseline (default: the one found at build time)",
         store_text(o.mpirun)},
        {"--bench", "NAME", "value of the \"bench\" key (MPI baselines)", store_text(o.bench)},
        {"--touch", nullptr,
         "am_flood: medium handlers read every payload byte (as a consumer would;\n"
         "MPI_Recv copies it in any case); default: the payload is not read",
         store_flag(o.touch)},
        {"--demo", nullptr, "am_pingpong: short am-vs-MPI latency comparison for the README",
         store_flag(o.demo)},
        {"--mpi-child", nullptr,
         "internal: marks the am ranks an am benchmark started under mpirun",
         store_flag(o.mpi_child)},
        {"", "MODE", "MPI baselines: what to measure", store_text(o.mode)},
    };
}

}  // namespace

bool options::wants(const std::string& op) const {
    return ops.empty() || std::find(ops.begin(), ops.end(), op) != ops.end();
}

std::vector<std::string> parse_args(int argc, char** argv, std::string_view summary,
                                    std::span<const option_spec> table) {
    const char* prog = argc > 0 ? argv[0] : "bench";
    bool positional_taken = false;
    std::vector<std::string> seen;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            print_help(prog, summary, table);
            std::exit(0);
        }
        const bool positional = !a.starts_with("-") && !positional_taken;
        const option_spec* s = find(table, positional ? std::string_view{} : a);
        if (s == nullptr) die(prog, "unknown option '" + a + "'");
        std::string value;
        if (positional) {
            value = a;
            positional_taken = true;
        } else if (s->arg != nullptr) {
            if (i + 1 >= argc) die(prog, a + " needs a value");
            value = argv[++i];
        }
        try {
            s->set(value);
        } catch (const std::invalid_argument& e) {
            die(prog, e.what());
        }
        if (!positional) seen.push_back(a);
    }
    return seen;
}

options parse_options(int argc, char** argv, const char* summary,
                      std::span<const option_spec> extra) {
    options o;
    for (int i = 1; i < argc; ++i) o.args.emplace_back(argv[i]);
    std::vector<option_spec> table(extra.begin(), extra.end());
    for (option_spec& s : shared_table(o)) table.push_back(std::move(s));
    (void)parse_args(argc, argv, summary, table);
    return o;
}

std::uint64_t to_count(std::string_view flag, std::string_view text, std::uint64_t lo) {
    std::string_view s = text;
    std::uint64_t mult = 1;
    if (!s.empty()) {
        const char last = s.back();
        if (last == 'K' || last == 'k') mult = std::uint64_t{1} << 10;
        if (last == 'M' || last == 'm') mult = std::uint64_t{1} << 20;
        if (last == 'G' || last == 'g') mult = std::uint64_t{1} << 30;
        if (mult != 1) s.remove_suffix(1);
    }
    if (s.empty()) bad(flag, "needs a number");
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') bad(flag, "bad number '" + std::string(text) + "'");
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    v *= mult;
    if (v < lo) bad(flag, "needs a number >= " + std::to_string(lo));
    return v;
}

std::vector<std::uint64_t> to_counts(std::string_view flag, std::string_view text, std::uint64_t lo,
                                     std::uint64_t hi) {
    std::vector<std::uint64_t> v;
    for (const std::string& item : split(text)) {
        v.push_back(to_count(flag, item, lo));
        if (v.back() > hi) {
            bad(flag, "values in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        }
    }
    if (v.empty()) bad(flag, "needs a list");
    return v;
}

std::string to_choice(std::string_view flag, std::string_view text,
                      std::initializer_list<std::string_view> choices) {
    std::string all;
    for (std::string_view c : choices) {
        if (c == text) return std::string(text);
        all += all.empty() ? "" : ", ";
        all += c;
    }
    bad(flag, "one of " + all + ", not '" + std::string(text) + "'");
}

std::vector<std::string> to_choices(std::string_view flag, std::string_view text,
                                    std::initializer_list<std::string_view> choices) {
    std::vector<std::string> v;
    for (const std::string& item : split(text)) v.push_back(to_choice(flag, item, choices));
    return v;
}

option_setter store_flag(bool& v, bool value) {
    return [&v, value](const std::string&) { v = value; };
}

option_setter store_text(std::string& v) {
    return [&v](const std::string& x) { v = x; };
}

option_setter store_count(std::uint64_t& v, std::string_view flag, std::uint64_t lo) {
    return [&v, flag, lo](const std::string& x) { v = to_count(flag, x, lo); };
}

option_setter store_int(int& v, std::string_view flag, int lo) {
    return [&v, flag, lo](const std::string& x) {
        v = to_int(flag, x, static_cast<std::uint64_t>(lo));
    };
}

bool given(const options& o, std::string_view flag) {
    return std::find(o.args.begin(), o.args.end(), flag) != o.args.end();
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
