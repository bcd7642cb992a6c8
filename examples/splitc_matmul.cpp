// SPDX-License-Identifier: MIT
// Split-C matrix multiply (von Eicken et al. 1992, §2.3, Fig. 4 and Fig. 5):
// C (N x M) += A (N x R) * B (R x M), every matrix split in blocks of columns across the ranks.
// Each rank GETs one column of A after another, starting with its own first column, into a
// double buffer (the GET of the next column is in flight while the current one is used) and
// adds the rank-1 update V * B[j][k] to each of its own columns k of C (a DAXPY per column).
// --depth D generalises the double buffer to D column buffers, D - 1 GETs in flight, for GETs
// whose latency a double buffer does not hide. On the 2-core machine it gains little (a couple
// of points with AM_RMA=am at the default size, nothing on the direct path): a GET there is
// mostly a copy made by one of the two cores that also compute, which no depth overlaps
// (docs/performance.md).
//
// It prints, like Fig. 5, the fraction of the compute-only rate reached: the same kernel on
// the same sizes with every column of A local (no GET), run on the same ranks in the same
// invocation, and JSON lines in the format of bench/ (median, min, max over --reps).
//   AM_TRANSPORT=shm AM_RANKS=2 ./splitc_matmul                (shm, 2 processes)
//   amrun -n 2 ./splitc_matmul --sweep                         (columns per rank 1..32)
//   AM_RMA=am AM_RANKS=4 ./splitc_matmul --check --n 67 --r 24 (GETs as active messages)
#include <am/am.hpp>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr const char* usage_text =
    "usage: splitc_matmul [options]\n"
    "  --n N                rows of A and C (default 1024; one GET moves N doubles)\n"
    "  --r R                columns of A, rows of B (default 2048; a multiple of the ranks)\n"
    "  --m M                columns of B and C (a multiple of the ranks)\n"
    "  --cols-per-rank K    columns of B and C per rank, the paper's m: M = K * ranks\n"
    "                       (default 4; --m wins when both are given)\n"
    "  --reps N             timed repetitions per point (default 21)\n"
    "  --poll-every K       poll after every K DAXPY columns, so GETs from other ranks are\n"
    "                       served while computing (default 1; 0: only while waiting)\n"
    "  --depth D            column buffers for GETs, D - 1 GETs in flight (default 2: the\n"
    "                       double buffer of Fig. 4)\n"
    "  --sweep              columns per rank 1,2,4,8,16,32 with N*R*M constant (Fig. 5)\n"
    "  --check              verify C against a reference multiply; exit non-zero on mismatch\n"
    "  --pin | --no-pin     pin rank r to core r (default: on when ranks <= cores)\n"
    "Environment: AM_TRANSPORT, AM_RANKS, AM_RMA=auto|am, AM_SEGMENT_BYTES (A's columns\n"
    "live in the registered segment: R/P * N * 8 bytes per rank).\n";

struct options {
    std::size_t n = 1024;
    std::size_t r = 2048;
    std::size_t m = 0;              // 0: cols_per_rank * ranks
    std::size_t cols_per_rank = 4;  // the paper's m
    int reps = 21;
    std::size_t poll_every = 1;  // DAXPY columns between polls (0: poll only while waiting)
    std::size_t depth = 2;       // column buffers for GETs (2: the double buffer of Fig. 4)
    bool sweep = false;
    bool check = false;
    int pin = -1;  // -1: on when every rank has a core
};

bool parse_size(const char* s, std::size_t& out, bool zero_ok = false) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (end == s || *end != '\0' || (v == 0 && !zero_ok) || s[0] == '-') return false;
    out = static_cast<std::size_t>(v);
    return true;
}

// Returns false, after saying why, on a malformed command line.
bool parse_options(int argc, char** argv, options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        std::size_t* target = a == "--n"               ? &o.n
                              : a == "--r"             ? &o.r
                              : a == "--m"             ? &o.m
                              : a == "--cols-per-rank" ? &o.cols_per_rank
                              : a == "--depth"         ? &o.depth
                                                       : nullptr;
        std::size_t reps = 0;
        if (target != nullptr || a == "--reps") {
            if (value == nullptr || !parse_size(value, target ? *target : reps)) {
                std::fprintf(stderr, "splitc_matmul: %s takes a positive integer\n", a.c_str());
                return false;
            }
            if (target == nullptr) o.reps = static_cast<int>(std::min<std::size_t>(reps, 100000));
            if (target == &o.depth && (o.depth < 2 || o.depth > 64)) {
                std::fprintf(stderr, "splitc_matmul: --depth takes 2 .. 64\n");
                return false;
            }
            ++i;
        } else if (a == "--poll-every") {
            if (value == nullptr || !parse_size(value, o.poll_every, true)) {
                std::fprintf(stderr, "splitc_matmul: %s takes an integer >= 0\n", a.c_str());
                return false;
            }
            ++i;
        } else if (a == "--sweep") {
            o.sweep = true;
        } else if (a == "--check") {
            o.check = true;
        } else if (a == "--pin" || a == "--no-pin") {
            o.pin = a == "--pin" ? 1 : 0;
        } else {
            std::fprintf(stderr, "splitc_matmul: unknown option %s\n", a.c_str());
            return false;
        }
    }
    return true;
}

// ------------------------------------------------------------------------------ the problem

/// Global sizes and the share of one rank.
struct shape {
    std::size_t n, r, m;  // C is n x m, A n x r, B r x m
    std::size_t ranks;
    [[nodiscard]] std::size_t rp() const { return r / ranks; }  // columns of A per rank
    [[nodiscard]] std::size_t mp() const { return m / ranks; }  // columns of B and C per rank
    [[nodiscard]] double flops() const {
        return 2.0 * static_cast<double>(n) * static_cast<double>(r) * static_cast<double>(m);
    }
};

// Small integers, so every sum of products is exact and --check compares with ==.
double a_value(std::size_t i, std::size_t j) {
    return static_cast<double>((i + 2 * j) % 7) - 3.0;
}
double b_value(std::size_t j, std::size_t k) {
    return static_cast<double>((3 * j + k) % 5) - 2.0;
}

struct free_deleter {
    void operator()(double* p) const noexcept { std::free(p); }
};
using buffer = std::unique_ptr<double[], free_deleter>;

// Zeroed, cache-line aligned: the kernel sees the same alignment in both runs.
buffer make_buffer(std::size_t n) {
    const std::size_t bytes = std::max<std::size_t>((n * sizeof(double) + 63) / 64 * 64, 64);
    auto* p = static_cast<double*>(std::aligned_alloc(64, bytes));
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return buffer(p);
}

/// One rank's part of the matrices (the arrays of Fig. 4).
struct rank_data {
    am::global_ptr<double> mine;            // A[R/P][N]: this rank's columns of A, in its segment
    std::vector<am::global_ptr<double>> a;  // every rank's `mine`, indexed by rank
    double* a_here = nullptr;               // `mine` as a local pointer
    buffer b;                               // B[M/P][R]: this rank's columns of B, every row
    buffer c;                               // C[M/P][N]: this rank's columns of C
    buffer c_compute;                       // C of the compute-only run
    am::global_ptr<double> buffers;         // the column buffers for GETs (V0, V1 of Fig. 4)
    std::vector<double*> v;                 // `depth` of them, cache-line aligned
};

// The buffers live in the segment, not on the heap as in Fig. 4: a GET into the segment may be
// answered by one long reply that writes the data in place instead of a medium reply copied
// out of the ring (AM_RMA=am). Cache-line aligned, like the heap buffers.
void allocate_buffers(am::context& ctx, const shape& s, std::size_t depth, rank_data& d) {
    const std::size_t stride = (s.n + 7) / 8 * 8;
    d.buffers = ctx.allocate<double>(depth * stride + 8);
    auto at = reinterpret_cast<std::uintptr_t>(ctx.local(d.buffers));
    auto* first = reinterpret_cast<double*>((at + 63) / 64 * 64);
    for (std::size_t i = 0; i < depth; ++i) d.v.push_back(first + i * stride);
}

// Collective: allocates and fills this rank's blocks and exchanges the pointers to A.
rank_data set_up(am::context& ctx, const shape& s, std::size_t depth) {
    const std::size_t p = static_cast<std::size_t>(ctx.rank());
    const std::size_t need = (s.rp() + depth) * (s.n + 8) * sizeof(double);
    if (need + 4096 > ctx.segment().size()) {
        throw std::runtime_error("splitc_matmul: A needs " + std::to_string(need >> 10) +
                                 " KiB per rank but the segment holds " +
                                 std::to_string(ctx.segment().size() >> 10) +
                                 " KiB: raise AM_SEGMENT_BYTES or lower --n/--r");
    }
    rank_data d;
    d.mine = ctx.allocate<double>(s.rp() * s.n);
    d.a_here = ctx.local(d.mine);
    for (std::size_t jj = 0; jj < s.rp(); ++jj) {
        for (std::size_t i = 0; i < s.n; ++i) d.a_here[jj * s.n + i] = a_value(i, p * s.rp() + jj);
    }
    d.b = make_buffer(s.mp() * s.r);
    for (std::size_t kk = 0; kk < s.mp(); ++kk) {
        for (std::size_t j = 0; j < s.r; ++j) d.b[kk * s.r + j] = b_value(j, p * s.mp() + kk);
    }
    d.c = make_buffer(s.mp() * s.n);
    d.c_compute = make_buffer(s.mp() * s.n);
    allocate_buffers(ctx, s, depth, d);
    d.a = ctx.exchange(d.mine);  // polls: the other ranks' columns are written once it returns
    return d;
}

// ------------------------------------------------------------------------------- the kernel

// y += alpha * x. Not inlined, so both runs execute the very same (vectorised) code.
[[gnu::noinline]] void daxpy(std::size_t n, double alpha, const double* __restrict x,
                             double* __restrict y) {
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// C[k] += V * B[k][j] for every own column k; `between(k)` runs after column k (the
// distributed run polls there, so requests from other ranks are served while it computes).
template <class Between>
void rank1_update(const shape& s, const double* v, std::size_t j, const double* b, double* c,
                  Between&& between) {
    for (std::size_t k = 0; k < s.mp(); ++k) {
        daxpy(s.n, b[k * s.r + j], v, c + k * s.n);
        between(k);
    }
}

/// How a rank makes progress. It waits for a flag with a pure busy poll (the paper's
/// `while(!check(1, &flag));`) when every rank has a core, else with `counter::wait`, which
/// backs off; and it polls after every `poll_every` DAXPY columns while it computes.
struct progress {
    am::context* ctx;
    bool busy;
    std::size_t poll_every;
    void between_columns(std::size_t k) const {
        if (poll_every != 0 && (k + 1) % poll_every == 0) ctx->poll();
    }
    void wait(am::counter& flag, std::uint64_t count) const {
        if (!busy) {
            flag.wait(count);
            return;
        }
        while (!flag.test(count)) ctx->poll();
    }
};

/// The GETs in flight: column dj (counted from the rank's first) goes to buffer dj % depth,
/// whose own flag counts it, so a buffer's flag at its issued count means its column is in.
/// Counters persist across repetitions; `issued` keeps their counts.
struct get_ring {
    std::vector<std::unique_ptr<am::counter>> flags;
    std::vector<std::uint64_t> issued;
    get_ring(am::context& ctx, std::size_t depth) : issued(depth, 0) {
        for (std::size_t i = 0; i < depth; ++i) flags.push_back(std::make_unique<am::counter>(ctx));
    }
    [[nodiscard]] std::size_t depth() const { return flags.size(); }
};

// Fig. 4: the distributed multiply. With depth 2 it is the paper's loop: wait for column j,
// GET column j + 1 into the other buffer, compute with column j.
void multiply_split_c(am::context& ctx, const shape& s, rank_data& d, get_ring& ring,
                      const progress& prog) {
    const std::size_t rp = s.rp();
    const std::size_t j0 = static_cast<std::size_t>(ctx.rank()) * rp;  // own columns first
    const std::size_t depth = ring.depth();
    auto issue = [&](std::size_t dj) {  // GET column j0 + dj into its buffer
        const std::size_t j = (j0 + dj) % s.r;
        const std::size_t b = dj % depth;
        ctx.get(d.v[b], d.a[j / rp] + static_cast<std::ptrdiff_t>(j % rp * s.n), s.n,
                *ring.flags[b]);
        ++ring.issued[b];
    };
    for (std::size_t dj = 0; dj + 1 < depth && dj < s.r; ++dj) issue(dj);
    for (std::size_t dj = 0; dj < s.r; ++dj) {
        const std::size_t b = dj % depth;
        prog.wait(*ring.flags[b], ring.issued[b]);        // the GET of column j0 + dj is complete
        if (dj + depth - 1 < s.r) issue(dj + depth - 1);  // into the buffer freed last step
        rank1_update(s, d.v[b], (j0 + dj) % s.r, d.b.get(), d.c.get(),
                     [&](std::size_t k) { prog.between_columns(k); });
    }
}

// The compute-only reference: the same updates, V cycling through this rank's own columns.
void multiply_local(const shape& s, rank_data& d, std::size_t j0) {
    for (std::size_t dj = 0; dj < s.r; ++dj) {
        const double* v = d.a_here + (dj % s.rp()) * s.n;
        rank1_update(s, v, (j0 + dj) % s.r, d.b.get(), d.c_compute.get(), [](std::size_t) {});
    }
}

// Mismatches between this rank's columns of C and C = A * B computed straightforwardly.
std::size_t count_mismatches(const am::context& ctx, const shape& s, const rank_data& d) {
    std::size_t bad = 0;
    for (std::size_t kk = 0; kk < s.mp(); ++kk) {
        const std::size_t k = static_cast<std::size_t>(ctx.rank()) * s.mp() + kk;
        for (std::size_t i = 0; i < s.n; ++i) {
            double want = 0;
            for (std::size_t j = 0; j < s.r; ++j) want += a_value(i, j) * b_value(j, k);
            const double got = d.c[kk * s.n + i];
            if (got != want && bad++ < 5) {
                std::fprintf(stderr, "splitc_matmul: rank %d: C[%zu][%zu] = %g, want %g\n",
                             ctx.rank(), i, k, got, want);
            }
        }
    }
    return bad;
}

// ----------------------------------------------------------------------------- measurement

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Per-repetition times of one point, as rank 0 saw them (each ends with a barrier, so it is
/// the time of the slowest rank).
struct samples {
    std::vector<double> split_c, compute;
};

// Runs `body` between two barriers and returns the time rank 0 saw.
template <class Body>
double timed(am::context& ctx, Body&& body) {
    ctx.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    body();
    ctx.barrier();
    return seconds_since(t0);
}

// One repetition of both runs, in alternating order so neither always comes first. Each run
// starts from a zeroed C, written just before it.
samples measure(am::context& ctx, const options& o, const shape& s, rank_data& d,
                const progress& prog) {
    get_ring ring(ctx, o.depth);
    const std::size_t j0 = static_cast<std::size_t>(ctx.rank()) * s.rp();
    auto split_c = [&] {
        std::fill_n(d.c.get(), s.mp() * s.n, 0.0);
        return timed(ctx, [&] { multiply_split_c(ctx, s, d, ring, prog); });
    };
    auto compute = [&] {
        std::fill_n(d.c_compute.get(), s.mp() * s.n, 0.0);
        return timed(ctx, [&] { multiply_local(s, d, j0); });
    };
    samples out;
    for (int rep = -1; rep < o.reps; ++rep) {  // rep -1 warms caches and pages up
        double t_split = 0, t_compute = 0;
        if (rep % 2 == 0) {
            t_split = split_c();
            t_compute = compute();
        } else {
            t_compute = compute();
            t_split = split_c();
        }
        if (o.check && count_mismatches(ctx, s, d) != 0) {
            ctx.abort("splitc_matmul: rank " + std::to_string(ctx.rank()) +
                      ": C differs from the reference multiply");
        }
        if (rep >= 0) {
            out.split_c.push_back(t_split);
            out.compute.push_back(t_compute);
        }
    }
    return out;
}

struct summary {
    double median, min, max;
};

summary summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double med = n % 2 != 0 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return {med, v.front(), v.back()};
}

// ---------------------------------------------------------------------------------- output

std::string transport_name() {
    if (std::getenv("AM_SHM_NAME") != nullptr) return "shm";  // started by amrun
    return am::to_string(am::config::from_env().transport);
}

std::string rma_name() {
    return am::config::from_env().rma == am::rma_path::am ? "am" : "auto";
}

void print_json(const char* system, const std::string& op, const shape& s, const char* metric,
                const summary& v, int reps) {
    std::printf(
        "{\"bench\":\"splitc_matmul\",\"system\":\"%s\",\"transport\":\"%s\",\"ranks\":%zu,"
        "\"op\":\"%s\",\"bytes\":%zu,\"metric\":\"%s\",\"median\":%.6g,\"min\":%.6g,"
        "\"max\":%.6g,\"reps\":%d}\n",
        system, transport_name().c_str(), s.ranks, op.c_str(), s.n * sizeof(double), metric,
        v.median, v.min, v.max, reps);
}

void print_header(const shape& s) {
    std::printf("Split-C matrix multiply: %zu ranks, transport %s, AM_RMA=%s\n", s.ranks,
                transport_name().c_str(), rma_name().c_str());
    std::printf("%9s %6s %7s %6s %10s %10s %11s %11s %12s %10s\n", "cols/rank", "N", "R", "M",
                "GET bytes", "split-c ms", "compute ms", "split GF/s", "compute GF/s", "% compute");
}

// Rank 0: one row of the Fig. 5 table and the JSON lines of the point.
void report(const options& o, const shape& s, const samples& t) {
    std::vector<double> split_rate, compute_rate, fraction;
    for (std::size_t i = 0; i < t.split_c.size(); ++i) {
        split_rate.push_back(s.flops() / t.split_c[i] / 1e9);
        compute_rate.push_back(s.flops() / t.compute[i] / 1e9);
        fraction.push_back(t.compute[i] / t.split_c[i]);  // same work: rate ratio = time ratio
    }
    const summary sp = summarize(split_rate), cp = summarize(compute_rate);
    const summary fr = summarize(fraction);
    std::printf("%9zu %6zu %7zu %6zu %10zu %10.3f %11.3f %11.3f %12.3f %9.1f%%\n", s.mp(), s.n, s.r,
                s.m, s.n * sizeof(double), summarize(t.split_c).median * 1e3,
                summarize(t.compute).median * 1e3, sp.median, cp.median, fr.median * 100);
    const std::string op = "matmul_m" + std::to_string(s.mp()) + "_" + rma_name();
    print_json("am", op, s, "gflops", sp, o.reps);
    print_json("compute_only", op, s, "gflops", cp, o.reps);
    print_json("am/compute_only", op, s, "fraction", fr, o.reps);
    std::fflush(stdout);
}

// ---------------------------------------------------------------------------------- driver

// The points to run: one, or the Fig. 5 sweep with N*R*M (the work) held constant.
std::vector<shape> points(const options& o, std::size_t ranks) {
    const std::size_t cols = o.m != 0 ? o.m / ranks : o.cols_per_rank;
    if (!o.sweep) return {shape{o.n, o.r, o.m != 0 ? o.m : cols * ranks, ranks}};
    std::vector<shape> out;
    const std::size_t work = o.r * cols;  // R * (M / P)
    for (std::size_t k : {1, 2, 4, 8, 16, 32}) {
        const std::size_t r = std::max(work / k / ranks, std::size_t{1}) * ranks;
        out.push_back(shape{o.n, r, k * ranks, ranks});
    }
    return out;
}

void validate(const shape& s) {
    if (s.r % s.ranks != 0 || s.m % s.ranks != 0 || s.m == 0) {
        throw std::invalid_argument("splitc_matmul: R (" + std::to_string(s.r) + ") and M (" +
                                    std::to_string(s.m) + ") must be positive multiples of the " +
                                    std::to_string(s.ranks) + " ranks");
    }
}

// Pins the calling rank to the `index`-th core it may run on (modulo their number).
void pin_to_core(int index) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int want = index % std::max(CPU_COUNT(&allowed), 1);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed) || want-- != 0) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) std::perror("splitc_matmul: pin");
        return;
    }
}

int usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return std::max(CPU_COUNT(&set), 1);
}

void run_rank(am::context& ctx, const options& o) {
    // Busy polling only on a core of its own: a pinned rank. Otherwise (e.g. several jobs
    // sharing the cores under ctest -j) a spinning rank could starve the peer it waits for.
    const bool pinned = o.pin < 0 ? ctx.size() <= usable_cores() : o.pin != 0;
    if (pinned) pin_to_core(ctx.rank());
    const progress prog{&ctx, pinned, o.poll_every};
    const std::vector<shape> all = points(o, static_cast<std::size_t>(ctx.size()));
    for (const shape& s : all) validate(s);
    if (ctx.rank() == 0) print_header(all.front());
    for (const shape& s : all) {
        rank_data d = set_up(ctx, s, o.depth);
        const samples t = measure(ctx, o, s, d, prog);
        if (ctx.rank() == 0) report(o, s, t);
        ctx.barrier();  // nobody reads A any more
        ctx.deallocate(d.buffers);
        ctx.deallocate(d.mine);
    }
    if (o.check && ctx.rank() == 0) std::printf("check: C matches the reference multiply\n");
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
        std::fputs(usage_text, stdout);
        return 0;
    }
    if (!parse_options(argc, argv, o)) {
        std::fputs(usage_text, stderr);
        return 2;
    }
    return am::run(argc, argv, [&](am::context& ctx) { run_rank(ctx, o); });
}
