// SPDX-License-Identifier: MIT
// Test support: run an SPMD lambda on N ranks of a transport and turn failures inside ranks
// into a non-zero job status, so that shm ranks (forked children, whose GoogleTest results
// never reach the parent) still fail the test.
#pragma once

#include <am/am.hpp>

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
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
};

inline const char* transport_name(am::transport_kind k) {
    return k == am::transport_kind::threads ? "threads" : "shm";
}

inline std::ostream& operator<<(std::ostream& os, const spmd_param& p) {
    return os << transport_name(p.transport) << " np" << p.ranks;
}

/// GoogleTest parameter name "threads_np4"; tests/cmake/am_discover.cmake maps it onto the
/// CTest name am.<layer>.<test>.threads.np4.
inline std::string param_name(const ::testing::TestParamInfo<spmd_param>& info) {
    return std::string(transport_name(info.param.transport)) + "_np" +
           std::to_string(info.param.ranks);
}

inline std::vector<spmd_param> make_params(std::initializer_list<int> threads_nps,
                                           std::initializer_list<int> shm_nps) {
    std::vector<spmd_param> v;
    for (int n : threads_nps) v.push_back({am::transport_kind::threads, n});
    for (int n : shm_nps) v.push_back({am::transport_kind::shm, n});
    return v;
}

/// Every semantic test: both transports at 1, 2 and 4 ranks, threads also at 64.
inline std::vector<spmd_param> all_params() {
    return make_params({1, 2, 4, 64}, {1, 2, 4});
}
/// Tests that need at least two ranks.
inline std::vector<spmd_param> multi_rank_params() {
    return make_params({2, 4, 64}, {2, 4});
}

/// The tests' default configuration: small segments at large rank counts.
inline am::config make_config(am::transport_kind tp, int ranks) {
    am::config cfg;
    cfg.ranks = ranks;
    cfg.transport = tp;
    cfg.segment_bytes = ranks > 16 ? (std::size_t{1} << 20) : (std::size_t{8} << 20);
    return cfg;
}

using rank_fn = std::function<void(am::context&)>;
using tweak_fn = std::function<void(am::config&)>;

/// Runs `fn` on `ranks` ranks of `tp` (after `tweak` adjusted the configuration) and returns
/// the job status of am::run. A rank whose GoogleTest expectations failed throws after `fn`
/// returns, so the status is non-zero: assert `spmd(...) == 0`.
inline int spmd(am::transport_kind tp, int ranks, const rank_fn& fn, const tweak_fn& tweak = {}) {
    am::config cfg = make_config(tp, ranks);
    if (tweak) tweak(cfg);
    return am::run(cfg, [&fn](am::context& ctx) {
        fn(ctx);
        if (::testing::Test::HasFailure()) {
            throw std::runtime_error("am_test: rank " + std::to_string(ctx.rank()) +
                                     ": a GoogleTest expectation failed on this rank");
        }
    });
}

/// Fixture of the parameterised semantic tests.
class spmd_test : public ::testing::TestWithParam<spmd_param> {
  protected:
    [[nodiscard]] am::transport_kind transport() const { return GetParam().transport; }
    [[nodiscard]] int ranks() const { return GetParam().ranks; }
    [[nodiscard]] bool is_shm() const { return transport() == am::transport_kind::shm; }
    int run(const rank_fn& fn, const tweak_fn& tweak = {}) const {
        return spmd(transport(), ranks(), fn, tweak);
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

/// The /dev/shm path of the shm job region mapped by this process ("" when none): read
/// from /proc/self/maps inside a shm rank, to check afterwards that exactly it is gone.
inline std::string mapped_region_path() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        const auto at = line.find("/dev/shm/am-");
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
