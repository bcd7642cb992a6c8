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
//
// --mode latency: origin 0, target 1, --iters AMs one after another, µs per AM.
// --mode throughput: target 0; origins 1..R-1 (--origins others) or 0..R-1 (--origins all,
//   the target's own AMs computed locally); --ams AMs in all per repetition, split evenly;
//   the AM i of an origin has --segments[i mod n] segments; AMs per second from a barrier
//   before the first AM to a barrier after the last output arrived, timed on rank 0.
// Outputs are checked against the kernel run locally on the same data after every repetition.
#include "window_common.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
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
            std::vector<std::vector<std::byte>> in;
            for (std::size_t k = 0; k < sets; ++k) in.push_back(make_input(k, n));
            _inputs.push_back(std::move(in));
        }
    }
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
    /// Whether `out` is the output of AM i.
    [[nodiscard]] bool check(std::uint64_t i, const std::byte* out) const {
        const auto [n, in] = am(i);
        std::vector<std::byte> ref(io_bytes(n));
        run(in, _persistent.data(), ref.data(), n);
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
};

void fail_check(const char* system, std::uint64_t i) {
    std::fprintf(stderr, "mpi_window_baseline: %s: WRONG OUTPUT of AM %llu\n", system,
                 static_cast<unsigned long long>(i));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

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
    std::vector<double> per_rep;
    for (int r = -1; r < s.reps; ++r) {  // r = -1: warm-up
        const std::uint64_t iters = r < 0 ? std::max<std::uint64_t>(1, s.iters / 10) : s.iters;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (system == "mpi_rma") {
            if (s.rank == 0) {
                for (std::uint64_t i = 0; i < iters; ++i) {
                    rma_am(w, win, 1, i, scratch.data(), out.data());
                }
            }
        } else if (s.rank == 0) {
            for (std::uint64_t i = 0; i < iters; ++i) {
                const auto [nn, input] = w.am(i);
                MPI_Send(input, static_cast<int>(w.io_bytes(nn)), MPI_BYTE, 1, tag_am,
                         MPI_COMM_WORLD);
                MPI_Recv(out.data(), static_cast<int>(out.size()), MPI_BYTE, 1, tag_am,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else if (s.rank == 1) {
            serve(w, iters, in, out, s.op);
        }
        const double t = MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (s.rank == 0 && !w.check(iters - 1, out.data())) fail_check(system.c_str(), iters - 1);
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

void twosided_origin(const setup& s, const workload& w, std::uint64_t mine) {
    const std::size_t max_io = w.io_bytes(*std::max_element(s.segments.begin(), s.segments.end()));
    const std::size_t slots = std::max<std::uint64_t>(1, s.window);
    std::vector<std::vector<std::byte>> out(slots, std::vector<std::byte>(max_io));
    std::vector<MPI_Request> req(2 * slots, MPI_REQUEST_NULL);
    std::vector<std::uint64_t> am_of(slots, 0);
    for (std::uint64_t i = 0; i < mine; ++i) {
        const std::size_t slot = i % slots;
        if (i >= slots) {
            MPI_Waitall(2, &req[2 * slot], MPI_STATUSES_IGNORE);
            if (!w.check(am_of[slot], out[slot].data())) fail_check("mpi_twosided", am_of[slot]);
        }
        const auto [n, in] = w.am(i);
        const int bytes = static_cast<int>(w.io_bytes(n));
        am_of[slot] = i;
        MPI_Irecv(out[slot].data(), bytes, MPI_BYTE, 0, tag_am, MPI_COMM_WORLD, &req[2 * slot]);
        MPI_Isend(in, bytes, MPI_BYTE, 0, tag_am, MPI_COMM_WORLD, &req[2 * slot + 1]);
    }
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
}

/// One repetition of `total` AMs; rank 0's seconds.
double throughput_rep(const setup& s, const workload& w, MPI_Win win, const std::string& system,
                      std::uint64_t total) {
    const std::size_t max_n = *std::max_element(s.segments.begin(), s.segments.end());
    std::vector<std::byte> scratch(w.persistent_bytes(max_n)), out(w.io_bytes(max_n)),
        in(w.io_bytes(max_n));
    const std::uint64_t mine = share(s, total, s.rank);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (system == "mpi_rma") {
        for (std::uint64_t i = 0; i < mine; ++i) {
            rma_am(w, win, 0, i, scratch.data(), out.data());
            if (i + 1 == mine && !w.check(i, out.data())) fail_check("mpi_rma", i);
        }
    } else if (s.rank == 0) {
        for (std::uint64_t i = 0; i < mine; ++i) {  // the target's own AMs (--origins all)
            const auto [n, input] = w.am(i);
            w.run(input, w.persistent().data(), out.data(), n);
        }
        std::uint64_t others = 0;
        for (int r = 1; r < s.size; ++r) others += share(s, total, r);
        serve(w, others, in, out, s.op);
    } else {
        twosided_origin(s, w, mine);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

void throughput(const setup& s, const workload& w, MPI_Win win, const std::string& system) {
    std::vector<double> per_rep;
    (void)throughput_rep(s, w, win, system, std::max<std::uint64_t>(1, s.ams / 10));
    for (int r = 0; r < s.reps; ++r) {
        const double t = throughput_rep(s, w, win, system, s.ams);
        per_rep.push_back(static_cast<double>(s.ams) / t);
    }
    if (s.rank == 0) report(s, w, system.c_str(), "throughput_amps", per_rep, s.ams);
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
    MPI_Barrier(MPI_COMM_WORLD);
    for (const char* system : {"mpi_rma", "mpi_twosided"}) {
        if (s.systems.find(system) == std::string::npos) continue;
        if (s.mode == "latency") {
            latency(s, w, win, system);
        } else {
            throughput(s, w, win, system);
        }
    }
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
    const args a(argc, argv, {});
    a.only({"--figure", "--mode", "--op", "--origins", "--systems", "--segments", "--ams",
            "--iters", "--db", "--window", "--reps"});
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
