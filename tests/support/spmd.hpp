// SPDX-License-Identifier: MIT
// Test support: run an SPMD lambda on N ranks of a transport and turn failures inside ranks
// into a non-zero job status, so that shm ranks (forked children, whose GoogleTest results
// never reach the parent) still fail the test.
//
// On the mpi transport (only when am was built with MPI, AM_HAVE_MPI) the test binary itself is
// started N times by mpiexec (tests/cmake/am_discover.cmake does that for the parameters named
// "mpi_npN" and "mpimix_npN"): every process runs the same GoogleTest test, and its am::run
// runs the rank of this process only. A test then sees only what its own rank did: boards in
// `shared` memory and process-local tallies hold one rank's part (see visible_ranks()).
#pragma once

#include <am/am.hpp>

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <ostream>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace am_test {

/// One (transport, rank count) combination a semantic test runs on.
struct spmd_param {
    am::transport_kind transport;
    int ranks;
    /// mpi only: config::node_size, how many consecutive ranks share memory (1: every message
    /// goes through MPI; 2: pairs of ranks use shared memory between them, MPI otherwise).
    int node_size = 0;
};

/// True for the transports whose ranks are the processes of an MPI job (mpi, ucx).
inline bool is_mpi(am::transport_kind k) {
    return k == am::transport_kind::mpi || k == am::transport_kind::ucx;
}

/// The transport's name as `AM_TRANSPORT` spells it.
inline const char* transport_name(am::transport_kind k) {
    return am::to_string(k);
}

/// The transport part of a parameter name: "threads", "shm"; on mpi "mpi" when every message
/// goes through MPI (node_size 1), "mpimix" when some ranks share memory (node_size > 1) and
/// "mpishm" when all ranks of a host do (node_size 0).
/// On ucx likewise "ucx" (every message through UCX) and "ucxmix".
inline std::string variant_name(const spmd_param& p) {
    if (!is_mpi(p.transport)) return transport_name(p.transport);
    const std::string base = transport_name(p.transport);
    if (p.node_size == 1) return base;
    return base + (p.node_size == 0 ? "shm" : "mix");
}

inline std::ostream& operator<<(std::ostream& os, const spmd_param& p) {
    os << transport_name(p.transport) << " np" << p.ranks;
    if (is_mpi(p.transport)) os << " node_size " << p.node_size;
    return os;
}

/// GoogleTest parameter name "threads_np4", "mpi_np4", "mpimix_np4"; tests/cmake/am_discover.cmake
/// maps it onto the CTest name am.<layer>.<test>.threads.np4 (mpi ones run under mpiexec -n 4).
inline std::string param_name(const ::testing::TestParamInfo<spmd_param>& info) {
    return variant_name(info.param) + "_np" + std::to_string(info.param.ranks);
}

/// The MPI variants a semantic test gets besides threads and shm: every message through MPI
/// at 2 and 4 ranks, and mixed (pairs of ranks in shared memory, MPI between pairs) at 4, taken
/// from the shm rank counts of the test (the same job shapes, processes instead of forks).
/// Nothing without MPI, so the binaries list no mpi tests then.
inline void add_mpi_params([[maybe_unused]] std::vector<spmd_param>& v,
                           [[maybe_unused]] std::initializer_list<int> shm_nps) {
#ifdef AM_HAVE_MPI
    for (int n : shm_nps) {
        if (n == 2 || n == 4) v.push_back({am::transport_kind::mpi, n, 1});
    }
    for (int n : shm_nps) {
        if (n == 4) v.push_back({am::transport_kind::mpi, n, 2});
    }
#endif
#ifdef AM_HAVE_UCX
    // ucx: every message through UCX at 2 ranks, and mixed (pairs in shared memory) at 4.
    for (int n : shm_nps) {
        if (n == 2) v.push_back({am::transport_kind::ucx, n, 1});
    }
    for (int n : shm_nps) {
        if (n == 4) v.push_back({am::transport_kind::ucx, n, 2});
    }
#endif
}

inline std::vector<spmd_param> make_params(std::initializer_list<int> threads_nps,
                                           std::initializer_list<int> shm_nps) {
    std::vector<spmd_param> v;
    for (int n : threads_nps) v.push_back({am::transport_kind::threads, n});
    for (int n : shm_nps) v.push_back({am::transport_kind::shm, n});
    add_mpi_params(v, shm_nps);
    return v;
}

/// Threads at `threads_nps` ranks, shm at `shm_nps` and, with MPI, mpi (every message through
/// MPI) at `mpi_nps` processes: for tests whose job shapes are chosen one by one.
inline std::vector<spmd_param> exact_params(std::initializer_list<int> threads_nps,
                                            std::initializer_list<int> shm_nps,
                                            [[maybe_unused]] std::initializer_list<int> mpi_nps) {
    std::vector<spmd_param> v;
    for (int n : threads_nps) v.push_back({am::transport_kind::threads, n});
    for (int n : shm_nps) v.push_back({am::transport_kind::shm, n});
#ifdef AM_HAVE_MPI
    for (int n : mpi_nps) v.push_back({am::transport_kind::mpi, n, 1});
#endif
    return v;
}

/// Every semantic test: both transports at 1, 2 and 4 ranks, threads also at 64; with MPI,
/// mpi at 2 and 4 ranks and mixed at 4.
inline std::vector<spmd_param> all_params() {
    return make_params({1, 2, 4, 64}, {1, 2, 4});
}
/// Tests that need at least two ranks.
inline std::vector<spmd_param> multi_rank_params() {
    return make_params({2, 4, 64}, {2, 4});
}

/// `params` without the mpi ones: for tests that need to see every rank from the test process
/// (each use says why).
inline std::vector<spmd_param> without_mpi(std::vector<spmd_param> params) {
    std::erase_if(params, [](const spmd_param& p) { return is_mpi(p.transport); });
    return params;
}

/// The job of the spmd() call running now (or last) in this process.
inline spmd_param& current_job() {
    static spmd_param job{am::transport_kind::threads, 1};
    return job;
}

/// Whether ranks `a` and `b` of the current job share memory, so that each maps the other's
/// segment (context::local() of its pointers is non-null on the automatic put/get path):
/// always on threads and shm; on mpi, ranks in the same group of node_size consecutive ranks
/// (the tests run every MPI job on one host, so node_size 0 means all of them).
inline bool same_node(int a, int b) {
    const spmd_param& job = current_job();
    if (!is_mpi(job.transport) || job.node_size == 0) return true;
    return a / job.node_size == b / job.node_size;
}

/// Whether rank `a` reaches rank `b`'s segment through the one-sided network of the current
/// job's transport (ucx, between ranks of different nodes): put, get and atomics then travel
/// without active messages.
inline bool one_sided(int a, int b) {
    return current_job().transport == am::transport_kind::ucx && !same_node(a, b);
}

/// The rank count of the MPI job this process belongs to, from the launcher's environment
/// (0 when not launched by an MPI launcher or the launcher does not say).
inline int launched_mpi_size() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
        if (const char* s = std::getenv(v)) return std::atoi(s);
    }
    return 0;
}

/// The tests' default configuration: small segments at large rank counts.
inline am::config make_config(const spmd_param& p) {
    am::config cfg;
    cfg.ranks = p.ranks;
    cfg.transport = p.transport;
    cfg.node_size = p.node_size;
    cfg.segment_bytes = p.ranks > 16 ? (std::size_t{1} << 20) : (std::size_t{8} << 20);
    return cfg;
}
inline am::config make_config(am::transport_kind tp, int ranks) {
    return make_config(spmd_param{tp, ranks});
}

using rank_fn = std::function<void(am::context&)>;
using tweak_fn = std::function<void(am::config&)>;

/// The ranks that ran in this process during the last spmd() job on mpi (one: this process's).
inline std::vector<int>& mpi_ranks_here() {
    static std::vector<int> ranks;
    return ranks;
}

/// Runs `fn` on the ranks of job `p` (after `tweak` adjusted the configuration) and returns the
/// job status of am::run. A rank whose GoogleTest expectations failed throws after `fn`
/// returns, so the status is non-zero: assert `spmd(...) == 0`. On mpi this process runs one
/// rank, and must have been started by an MPI launcher with `p.ranks` processes.
inline int spmd(const spmd_param& p, const rank_fn& fn, const tweak_fn& tweak = {}) {
    current_job() = p;
    am::config cfg = make_config(p);
    if (tweak) tweak(cfg);
    if (is_mpi(p.transport)) {
        mpi_ranks_here().clear();
        const int launched = launched_mpi_size();
        if (!am::launched_by_mpi() || (launched != 0 && launched != p.ranks)) {
            const std::string how = am::launched_by_mpi()
                                        ? "in an MPI job of " + std::to_string(launched)
                                        : std::string("without an MPI launcher");
            ADD_FAILURE() << "an mpi test of " << p.ranks << " ranks runs as " << p.ranks
                          << " processes started by mpiexec (its CTest test does that), "
                          << "not " << how;
            return -1;
        }
    }
    return am::run(cfg, [&fn, &p](am::context& ctx) {
        if (is_mpi(p.transport)) {
            mpi_ranks_here().push_back(ctx.rank());
            EXPECT_EQ(ctx.size(), p.ranks) << "the MPI job has the wrong size";
        }
        fn(ctx);
        if (::testing::Test::HasFailure()) {
            throw std::runtime_error("am_test: rank " + std::to_string(ctx.rank()) +
                                     ": a GoogleTest expectation failed on this rank");
        }
    });
}
inline int spmd(am::transport_kind tp, int ranks, const rank_fn& fn, const tweak_fn& tweak = {}) {
    return spmd(spmd_param{tp, ranks}, fn, tweak);
}

/// Fixture of the parameterised semantic tests.
class spmd_test : public ::testing::TestWithParam<spmd_param> {
  protected:
    [[nodiscard]] am::transport_kind transport() const { return GetParam().transport; }
    [[nodiscard]] int ranks() const { return GetParam().ranks; }
    [[nodiscard]] bool is_shm() const { return transport() == am::transport_kind::shm; }
    [[nodiscard]] bool is_mpi() const { return am_test::is_mpi(transport()); }
    int run(const rank_fn& fn, const tweak_fn& tweak = {}) const {
        return spmd(GetParam(), fn, tweak);
    }
    /// The ranks whose effects this process can see after run() returned (boards in `shared`
    /// memory, stderr): all of them on threads and shm, this process's own rank on mpi.
    [[nodiscard]] std::vector<int> visible_ranks() const {
        if (is_mpi()) return mpi_ranks_here();
        std::vector<int> all(static_cast<std::size_t>(ranks()));
        for (int r = 0; r < ranks(); ++r) all[static_cast<std::size_t>(r)] = r;
        return all;
    }
};

/// Memory shared between the test process and the ranks of either transport (an anonymous
/// shared mapping survives fork), for results the parent must see: a T constructed in place.
template <class T>
class shared {
  public:
    shared() {
        void* p =
            mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("am_test: mmap of a shared board failed");
        _p = new (p) T();
    }
    ~shared() {
        _p->~T();
        munmap(_p, sizeof(T));
    }
    shared(const shared&) = delete;
    shared& operator=(const shared&) = delete;
    T* operator->() const noexcept { return _p; }
    T& operator*() const noexcept { return *_p; }

  private:
    T* _p;
};

/// Names of the am-* objects in /dev/shm.
inline std::set<std::string> shm_entries() {
    std::set<std::string> s;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("am-", 0) == 0) s.insert(name);
    }
    return s;
}

/// am-* entries present now and not in `before`, after letting entries of jobs that other
/// tests run concurrently disappear (a job's name is unlinked once all its ranks attached).
inline std::set<std::string> new_shm_entries(
    const std::set<std::string>& before,
    std::chrono::milliseconds patience = std::chrono::milliseconds(3000)) {
    const auto until = std::chrono::steady_clock::now() + patience;
    for (;;) {
        std::set<std::string> extra;
        for (const std::string& n : shm_entries()) {
            if (before.count(n) == 0) extra.insert(n);
        }
        if (extra.empty() || std::chrono::steady_clock::now() >= until) return extra;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

/// The path of the shm job region mapped by this process, as /proc/self/maps shows it ("" when
/// none): "/memfd:am-…" for a region without a name, "/dev/shm/am-…" for a named one. Read
/// inside a shm rank, to check afterwards that the job region never had a name, or that
/// exactly it is gone.
inline std::string mapped_region_path() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        auto at = line.find("/dev/shm/am-");
        if (at == std::string::npos) at = line.find("/memfd:am-");
        if (at == std::string::npos) continue;
        std::string path = line.substr(at);
        if (const auto sp = path.find(' '); sp != std::string::npos) path.resize(sp);
        return path;
    }
    return {};
}

/// A fixed-size C string that can live in a `shared` board.
template <std::size_t N>
struct fixed_string {
    char text[N] = {};
    void set(const std::string& s) {
        const std::size_t n = s.size() < N - 1 ? s.size() : N - 1;
        std::memcpy(text, s.data(), n);
        text[n] = '\0';
    }
    [[nodiscard]] std::string str() const { return std::string(text, strnlen(text, N)); }
};

/// A 64-bit mix (splitmix64 finaliser): deterministic test data and checksums.
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Fills `out` with bytes derived from `seed`.
inline void fill_pattern(std::span<std::byte> out, std::uint64_t seed) noexcept {
    std::uint64_t s = mix(seed);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if ((i & 7) == 0) s = mix(s + i);
        out[i] = static_cast<std::byte>(s >> ((i & 7) * 8));
    }
}

inline std::vector<std::byte> pattern(std::size_t n, std::uint64_t seed) {
    std::vector<std::byte> v(n);
    fill_pattern(v, seed);
    return v;
}

/// Order-sensitive checksum of a byte range (FNV-1a 64).
inline std::uint64_t checksum(std::span<const std::byte> data) noexcept {
    std::uint64_t h = 1469598103934665603ull;
    for (std::byte b : data) h = (h ^ static_cast<unsigned char>(b)) * 1099511628211ull;
    return h;
}

/// Whether `s` contains `part` (for messages of am::error::what()).
inline bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace am_test

/// Instantiates a spmd_test-derived fixture over a parameter list with readable names.
#define AM_INSTANTIATE(fixture, params) \
    INSTANTIATE_TEST_SUITE_P(am, fixture, ::testing::ValuesIn(params), ::am_test::param_name)
