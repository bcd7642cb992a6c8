// SPDX-License-Identifier: MIT
// mpi_window_baseline: what an MPI user writes today for the window_bench operations without
// active messages, started by window_bench under mpirun in the same invocation:
//
//   mpirun -n R mpi_window_baseline --figure 3b --mode throughput --op search --ams 100000
//
// The target's window (MPI_Win_allocate, rank `target`) holds the persistent data: the search
// database (--db keys of 20 characters, sorted) or the absolute sum's array (100 ints per
// segment of the largest AM). Both operations only read it, so nothing is written back.
//
// system "mpi_rma", per AM: MPI_Win_lock(MPI_LOCK_SHARED, target), MPI_Get of the AM's whole
//   persistent range (search: the database; abssum: segments x 100 ints), MPI_Win_flush,
//   the kernel at the origin, MPI_Win_unlock. No MPI_Put: the operations do not update the
//   persistent data.
// system "mpi_twosided", per AM: the origin MPI_Isend's the packed input (segments x 20 chars,
//   or segments x 100 ints) after posting an MPI_Irecv for the output; a server loop at the
//   target MPI_Recv's any input, runs the kernel on its persistent data and MPI_Send's the
//   output back. Throughput runs keep up to --window AMs outstanding per origin.
// system "mpi_shm" (throughput only; asked for by Fig. 7): the window is
//   MPI_Win_allocate_shared'd and every origin runs the kernel directly on the target's
//   persistent data through the pointer MPI_Win_shared_query gives (loads in the node, no copy,
//   no message), inside one MPI_Win_fence epoch per repetition: what am's concurrent epochs do
//   on a mapped window. Needs every rank on one node (else the system is skipped, said on
//   stderr).
//
// --mode latency: origin 0, target 1, --iters AMs one after another, µs per AM.
// --mode throughput: target 0; origins 1..R-1 (--origins others) or 0..R-1 (--origins all,
//   the target's own AMs computed locally); --ams AMs in all per repetition, split evenly;
//   the AM i of an origin has --segments[i mod n] segments; AMs per second from a barrier
//   before the first AM to a barrier after the last output arrived, timed on rank 0.
// Outputs are checked as window_bench checks am's, after every repetition and outside the
// timing, on every origin: AM i writes its output into the buffer of its (segment kind, input
// set), and every such buffer that an AM wrote is compared with the kernel's output computed
// beforehand on the same data (8 input sets per segment kind). mpi_twosided, whose outstanding
// receives may not share a buffer, rotates over 8 x kinds buffers (a multiple of them, at least
// --window) in AM order, so the last AM of each buffer covers every (kind, set) as well.
#include "window_common.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench::window {
namespace {

constexpr int tag_am = 7;

struct setup {
    std::string figure, mode, op, origins, systems;
    std::vector<std::uint64_t> segments;
    std::uint64_t ams = 0, iters = 0, db = 0, window = 16;
    int reps = 5;
    int rank = 0, size = 1;
};

/// The data of one run: the target's persistent bytes, input sets per segment count.
class workload {
  public:
    static constexpr std::size_t sets = 8;

    explicit workload(const setup& s) : _s(s) {
        const std::size_t max_seg = *std::max_element(s.segments.begin(), s.segments.end());
        if (search()) {
            const std::vector<char> db = make_database(s.db);
            _persistent.assign(reinterpret_cast<const std::byte*>(db.data()),
                               reinterpret_cast<const std::byte*>(db.data() + db.size()));
        } else {
            const std::vector<std::int32_t> p = make_persistent_ints(max_seg);
            _persistent.resize(p.size() * sizeof(std::int32_t));
            std::memcpy(_persistent.data(), p.data(), _persistent.size());
        }
        for (std::uint64_t n : s.segments) {
            std::vector<std::vector<std::byte>> in, ref;
            for (std::size_t k = 0; k < sets; ++k) {
                in.push_back(make_input(k, n));
                ref.emplace_back(io_bytes(n));
                run(in.back().data(), _persistent.data(), ref.back().data(), n);
            }
            _inputs.push_back(std::move(in));
            _refs.push_back(std::move(ref));
        }
    }
    /// Segment kinds (the AMs cycle over them).
    [[nodiscard]] std::size_t kinds() const { return _s.segments.size(); }
    [[nodiscard]] bool search() const { return _s.op == "search"; }
    [[nodiscard]] const std::vector<std::byte>& persistent() const { return _persistent; }
    /// Persistent bytes an AM of `n` segments uses.
    [[nodiscard]] std::size_t persistent_bytes(std::size_t n) const {
        return search() ? _persistent.size() : n * abssum_ints * sizeof(std::int32_t);
    }
    [[nodiscard]] std::size_t io_bytes(std::size_t n) const { return n * segment_bytes(_s.op); }
    /// AM i: (segments, input).
    [[nodiscard]] std::pair<std::size_t, const std::byte*> am(std::uint64_t i) const {
        const std::size_t kind = i % _s.segments.size();
        return {_s.segments[kind], _inputs[kind][(i / _s.segments.size()) % sets].data()};
    }
    /// Runs the kernel over `n` segments with persistent bytes `p`.
    void run(const std::byte* in, const std::byte* p, std::byte* out, std::size_t n) const {
        if (search()) {
            search_kernel(reinterpret_cast<const char*>(in), reinterpret_cast<const char*>(p),
                          _s.db, reinterpret_cast<char*>(out), n);
        } else {
            abssum_kernel(reinterpret_cast<const std::int32_t*>(in),
                          reinterpret_cast<const std::int32_t*>(p),
                          reinterpret_cast<std::int32_t*>(out), n);
        }
    }
    /// Whether `out` is the output of AM i (compared with the output computed beforehand).
    [[nodiscard]] bool check(std::uint64_t i, const std::byte* out) const {
        const std::vector<std::byte>& ref = _refs[i % kinds()][(i / kinds()) % sets];
        return std::memcmp(ref.data(), out, ref.size()) == 0;
    }
    [[nodiscard]] double mean_input_bytes() const {
        double b = 0;
        for (std::uint64_t n : _s.segments) b += static_cast<double>(io_bytes(n));
        return b / static_cast<double>(_s.segments.size());
    }

  private:
    [[nodiscard]] std::vector<std::byte> make_input(std::size_t set, std::size_t n) const {
        std::vector<std::byte> b(io_bytes(n));
        if (search()) {
            const std::vector<char> q = make_queries(set, n, _s.db);
            std::memcpy(b.data(), q.data(), b.size());
        } else {
            const std::vector<std::int32_t> v = make_ints(set, n);
            std::memcpy(b.data(), v.data(), b.size());
        }
        return b;
    }
    const setup& _s;
    std::vector<std::byte> _persistent;
    std::vector<std::vector<std::vector<std::byte>>> _inputs;  // [segment kind][set]
    std::vector<std::vector<std::vector<std::byte>>> _refs;    // [segment kind][set]
};

/// An origin's output buffers: `count` buffers of the largest output, AM i writing into
/// buffer i mod count; `count` is a multiple of kinds x sets, so the buffers that the last AMs
/// wrote hold the output of every (kind, set) used.
class outputs {
  public:
    outputs(const workload& w, std::size_t at_least)
        : _w(w), _n(round_up(at_least, w.kinds() * workload::sets)) {
        std::size_t max_io = 0;
        for (std::size_t k = 0; k < w.kinds(); ++k)
            max_io = std::max(max_io, w.io_bytes(w.am(k).first));
        _buf.assign(_n, std::vector<std::byte>(max_io));
    }
    [[nodiscard]] std::size_t count() const { return _n; }
    std::byte* of(std::uint64_t i) { return _buf[i % _n].data(); }
    /// Zeroes every buffer (before a repetition, outside the timing).
    void clear() {
        for (auto& b : _buf) std::fill(b.begin(), b.end(), std::byte{0});
    }
    /// Fails the job when a buffer that one of AMs 0..`done`-1 wrote does not hold the output of
    /// the last AM that wrote it.
    void check(const char* system, std::uint64_t done) const {
        for (std::uint64_t i = done > _n ? done - _n : 0; i < done; ++i) {
            if (!_w.check(i, _buf[i % _n].data())) fail(system, i);
        }
    }

  private:
    static std::size_t round_up(std::size_t v, std::size_t m) {
        return (std::max<std::size_t>(v, 1) + m - 1) / m * m;
    }
    [[noreturn]] static void fail(const char* system, std::uint64_t i) {
        std::fprintf(stderr, "mpi_window_baseline: %s: WRONG OUTPUT of AM %llu\n", system,
                     static_cast<unsigned long long>(i));
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::abort();
    }
    const workload& _w;
    std::size_t _n;
    std::vector<std::vector<std::byte>> _buf;
};

/// One AM the mpi_rma way; the output in `out`.
void rma_am(const workload& w, MPI_Win win, int target, std::uint64_t i, std::byte* scratch,
            std::byte* out) {
    const auto [n, in] = w.am(i);
    const int pbytes = static_cast<int>(w.persistent_bytes(n));
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    MPI_Get(scratch, pbytes, MPI_BYTE, target, 0, pbytes, MPI_BYTE, win);
    MPI_Win_flush(target, win);
    w.run(in, scratch, out, n);
    MPI_Win_unlock(target, win);
}

/// The target's server loop: `count` AMs from any origin.
void serve(const workload& w, std::uint64_t count, std::vector<std::byte>& in,
           std::vector<std::byte>& out, const std::string& op) {
    const std::size_t seg = segment_bytes(op);
    for (std::uint64_t k = 0; k < count; ++k) {
        MPI_Status st;
        MPI_Recv(in.data(), static_cast<int>(in.size()), MPI_BYTE, MPI_ANY_SOURCE, tag_am,
                 MPI_COMM_WORLD, &st);
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        const std::size_t n = static_cast<std::size_t>(got) / seg;
        w.run(in.data(), w.persistent().data(), out.data(), n);
        MPI_Send(out.data(), got, MPI_BYTE, st.MPI_SOURCE, tag_am, MPI_COMM_WORLD);
    }
}

void report(const setup& s, const workload& w, const char* system, const char* metric,
            std::vector<double> v, std::uint64_t ams) {
    point_keys k;
    k.figure = s.figure;
    k.system = system;
    k.transport = "mpi";
    k.ranks = s.size;
    k.op = s.op;
    k.bytes = static_cast<std::uint64_t>(w.mean_input_bytes());
    k.metric = metric;
    k.segments = s.segments.front();
    k.ams = ams;
    json_line j = start_line(k, summarize3(std::move(v)));
    if (s.segments.size() > 1) {
        std::string list;
        for (std::uint64_t n : s.segments) {
            if (!list.empty()) list.push_back(',');
            list.append(std::to_string(n));
        }
        j.str("segments_cycle", list);
    }
    j.print();
}

// ------------------------------------------------------------------------------ latency

void latency(const setup& s, const workload& w, MPI_Win win, const std::string& system) {
    const std::size_t n = s.segments.front();
    std::vector<std::byte> scratch(w.persistent_bytes(n)), out(w.io_bytes(n)), in(w.io_bytes(n));
    outputs outs(w, 1);
    std::vector<double> per_rep;
    for (int r = -1; r < s.reps; ++r) {  // r = -1: warm-up
        const std::uint64_t iters = r < 0 ? std::max<std::uint64_t>(1, s.iters / 10) : s.iters;
        outs.clear();
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (system == "mpi_rma") {
            if (s.rank == 0) {
                for (std::uint64_t i = 0; i < iters; ++i) {
                    rma_am(w, win, 1, i, scratch.data(), outs.of(i));
                }
            }
        } else if (s.rank == 0) {
            for (std::uint64_t i = 0; i < iters; ++i) {
                const auto [nn, input] = w.am(i);
                MPI_Send(input, static_cast<int>(w.io_bytes(nn)), MPI_BYTE, 1, tag_am,
                         MPI_COMM_WORLD);
                MPI_Recv(outs.of(i), static_cast<int>(w.io_bytes(nn)), MPI_BYTE, 1, tag_am,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else if (s.rank == 1) {
            serve(w, iters, in, out, s.op);
        }
        const double t = MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (s.rank == 0) outs.check(system.c_str(), iters);
        if (r >= 0) per_rep.push_back(t / static_cast<double>(iters) * 1e6);
    }
    if (s.rank == 0) report(s, w, system.c_str(), "latency_us", per_rep, 1);
}

// ---------------------------------------------------------------------------- throughput

/// AMs of origin `rank` in one repetition of `total`.
std::uint64_t share(const setup& s, std::uint64_t total, int rank) {
    const int first = s.origins == "all" ? 0 : 1;
    const int origins = s.size - first;
    if (rank < first || origins <= 0) return 0;
    const std::uint64_t base = total / static_cast<std::uint64_t>(origins);
    const std::uint64_t extra = total % static_cast<std::uint64_t>(origins);
    return base + (static_cast<std::uint64_t>(rank - first) < extra ? 1 : 0);
}

/// An origin's AMs the mpi_twosided way, up to --window outstanding; outputs in `outs`, whose
/// buffers (at least --window of them) outnumber the outstanding AMs.
void twosided_origin(const setup& s, const workload& w, std::uint64_t mine, outputs& outs) {
    const std::size_t slots = std::max<std::uint64_t>(1, s.window);
    std::vector<MPI_Request> req(2 * slots, MPI_REQUEST_NULL);
    for (std::uint64_t i = 0; i < mine; ++i) {
        const std::size_t slot = i % slots;
        if (i >= slots) MPI_Waitall(2, &req[2 * slot], MPI_STATUSES_IGNORE);
        const auto [n, in] = w.am(i);
        const int bytes = static_cast<int>(w.io_bytes(n));
        MPI_Irecv(outs.of(i), bytes, MPI_BYTE, 0, tag_am, MPI_COMM_WORLD, &req[2 * slot]);
        MPI_Isend(in, bytes, MPI_BYTE, 0, tag_am, MPI_COMM_WORLD, &req[2 * slot + 1]);
    }
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
}

/// The shared-memory window of mpi_shm: every rank's persistent data, and the target's base
/// address in this process.
struct shm_window {
    MPI_Win win = MPI_WIN_NULL;
    const std::byte* target = nullptr;
};

/// One repetition of `total` AMs; rank 0's seconds. Outputs are checked after the timing.
double throughput_rep(const setup& s, const workload& w, MPI_Win win, const shm_window& shm,
                      const std::string& system, std::uint64_t total, outputs& outs) {
    const std::size_t max_n = *std::max_element(s.segments.begin(), s.segments.end());
    std::vector<std::byte> scratch(w.persistent_bytes(max_n)), out(w.io_bytes(max_n)),
        in(w.io_bytes(max_n));
    const std::uint64_t mine = share(s, total, s.rank);
    outs.clear();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (system == "mpi_rma") {
        for (std::uint64_t i = 0; i < mine; ++i) rma_am(w, win, 0, i, scratch.data(), outs.of(i));
    } else if (system == "mpi_shm") {
        MPI_Win_fence(0, shm.win);
        for (std::uint64_t i = 0; i < mine; ++i) {
            const auto [n, input] = w.am(i);
            w.run(input, shm.target, outs.of(i), n);
        }
        MPI_Win_fence(0, shm.win);
    } else if (s.rank == 0) {
        for (std::uint64_t i = 0; i < mine; ++i) {  // the target's own AMs (--origins all)
            const auto [n, input] = w.am(i);
            w.run(input, w.persistent().data(), outs.of(i), n);
        }
        std::uint64_t others = 0;
        for (int r = 1; r < s.size; ++r) others += share(s, total, r);
        serve(w, others, in, out, s.op);
    } else {
        twosided_origin(s, w, mine, outs);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t = MPI_Wtime() - t0;
    outs.check(system.c_str(), mine);
    return t;
}

void throughput(const setup& s, const workload& w, MPI_Win win, const shm_window& shm,
                const std::string& system) {
    std::vector<double> per_rep;
    outputs outs(w, system == "mpi_twosided" ? s.window : 1);
    (void)throughput_rep(s, w, win, shm, system, std::max<std::uint64_t>(1, s.ams / 10), outs);
    for (int r = 0; r < s.reps; ++r) {
        const double t = throughput_rep(s, w, win, shm, system, s.ams, outs);
        per_rep.push_back(static_cast<double>(s.ams) / t);
    }
    if (s.rank == 0) report(s, w, system.c_str(), "throughput_amps", per_rep, s.ams);
}

/// Makes the mpi_shm window (every rank's persistent data in shared memory) when every rank
/// is on this node; else says so on stderr (rank 0) and returns a null window.
shm_window make_shm_window(const setup& s, const workload& w) {
    shm_window shm;
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (node_size != s.size) {
        if (s.rank == 0) {
            std::fprintf(stderr,
                         "mpi_window_baseline: mpi_shm skipped: %d of %d ranks share "
                         "rank 0's node\n",
                         node_size, s.size);
        }
        return shm;
    }
    void* base = nullptr;
    const auto bytes = static_cast<MPI_Aint>(w.persistent().size());
    if (MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &shm.win) !=
        MPI_SUCCESS) {
        std::fprintf(stderr, "mpi_window_baseline: MPI_Win_allocate_shared failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::memcpy(base, w.persistent().data(), w.persistent().size());
    MPI_Win_fence(0, shm.win);  // every rank's data is in place before anyone reads it
    MPI_Aint size = 0;
    int disp = 0;
    void* target = nullptr;
    MPI_Win_shared_query(shm.win, 0, &size, &disp, &target);
    shm.target = static_cast<const std::byte*>(target);
    return shm;
}

int run(const setup& s) {
    const workload w(s);
    MPI_Win win = MPI_WIN_NULL;
    void* base = nullptr;
    const auto bytes = static_cast<MPI_Aint>(w.persistent().size());
    if (MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win) != MPI_SUCCESS) {
        std::fprintf(stderr, "mpi_window_baseline: MPI_Win_allocate failed\n");
        return 1;
    }
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, s.rank, 0, win);
    std::memcpy(base, w.persistent().data(), w.persistent().size());
    MPI_Win_unlock(s.rank, win);
    const bool want_shm = s.mode == "throughput" && s.systems.find("mpi_shm") != std::string::npos;
    shm_window shm;
    if (want_shm) shm = make_shm_window(s, w);
    MPI_Barrier(MPI_COMM_WORLD);
    for (const char* system : {"mpi_rma", "mpi_twosided", "mpi_shm"}) {
        if (s.systems.find(system) == std::string::npos) continue;
        if (s.mode == "latency") {
            if (std::string_view(system) != "mpi_shm") {
                latency(s, w, win, system);
            } else if (s.rank == 0) {
                std::fprintf(stderr, "mpi_window_baseline: mpi_shm has no latency mode\n");
            }
        } else if (std::string_view(system) != "mpi_shm" || shm.win != MPI_WIN_NULL) {
            throughput(s, w, win, shm, system);
        }
    }
    if (shm.win != MPI_WIN_NULL) MPI_Win_free(&shm.win);
    MPI_Win_free(&win);
    return 0;
}

}  // namespace
}  // namespace am::bench::window

int main(int argc, char** argv) {
    using namespace am::bench::window;
    MPI_Init(&argc, &argv);
    setup s;
    MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.size);
    const args a(argc, argv, "MPI baselines of window_bench (one figure's point per run).",
                 {"--figure", "--mode", "--op", "--origins", "--systems", "--segments", "--ams",
                  "--iters", "--db", "--window", "--reps"},
                 {});
    s.figure = a.get("--figure", "3a");
    s.mode = a.get("--mode", "latency");
    s.op = a.get("--op", "search");
    s.origins = a.get("--origins", "others");
    s.systems = a.get("--systems", "mpi_rma,mpi_twosided");
    s.segments = a.counts("--segments", {paper_segments});
    s.ams = a.count("--ams", 100000);
    s.iters = a.count("--iters", 1000);
    s.db = a.count("--db", 1024);
    s.window = a.count("--window", 16);
    s.reps = static_cast<int>(a.count("--reps", 5));
    const bool ok = (s.mode == "latency" && s.size == 2) ||
                    (s.mode == "throughput" && s.size >= (s.origins == "all" ? 1 : 2));
    if (!ok || (s.op != "search" && s.op != "abssum") || s.segments.empty() || s.db == 0 ||
        s.reps < 1 || s.iters == 0 || s.ams == 0) {
        if (s.rank == 0) {
            std::fprintf(stderr,
                         "mpi_window_baseline: bad setup (mode %s with %d ranks, op %s): latency "
                         "needs 2 ranks, throughput at least 2 (1 with --origins all)\n",
                         s.mode.c_str(), s.size, s.op.c_str());
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int status = run(s);
    MPI_Finalize();
    return status;
}
