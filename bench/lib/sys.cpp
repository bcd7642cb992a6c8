// SPDX-License-Identifier: MIT
#include "sys.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>

namespace am::bench {

int usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    const int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

bool pin_to_core(int index) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    const int n = CPU_COUNT(&allowed);
    if (n <= 0) return false;
    int want = index % n, cpu = 0;
    for (; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &allowed) && want-- == 0) break;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        std::perror("bench: sched_setaffinity");
        return false;
    }
    return true;
}

affinity_guard::affinity_guard() {
    CPU_ZERO(&_saved);
    _ok = sched_getaffinity(0, sizeof _saved, &_saved) == 0;
}

affinity_guard::~affinity_guard() {
    if (_ok) sched_setaffinity(0, sizeof _saved, &_saved);
}

page_buffer::page_buffer(std::size_t bytes) {
    reset(bytes);
}

void page_buffer::reset(std::size_t bytes) {
    constexpr std::size_t page = 4096;
    std::free(_p);
    _p = nullptr;
    _n = bytes;
    const std::size_t rounded = (bytes + page - 1) / page * page;
    if (rounded == 0) return;
    _p = static_cast<std::byte*>(std::aligned_alloc(page, rounded));
    if (_p == nullptr) throw std::bad_alloc();
    std::memset(_p, 0, rounded);
}

page_buffer::~page_buffer() {
    std::free(_p);
}

std::vector<double> memcpy_bandwidth(const options& o, std::size_t bytes) {
    page_buffer src(bytes), dst(bytes);
    std::memset(src.data(), 1, bytes);
    // As many copies as the long-message stream sends messages of this size.
    const std::uint64_t iters = iters_for(o, bandwidth_plan, bytes);
    auto copy = [&](std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i) {
            std::memcpy(dst.data(), src.data(), bytes);
            // Keeps the compiler from merging or dropping the copies.
            asm volatile("" : : "r"(dst.data()) : "memory");
        }
    };
    copy(warmup_for(o, iters));
    std::vector<double> v;
    for (int r = 0; r < o.reps; ++r) {
        const auto t0 = bench_clock::now();
        copy(iters);
        const double s = seconds_since(t0);
        v.push_back(static_cast<double>(bytes) * static_cast<double>(iters) / s / 1e9);
    }
    return v;
}

std::vector<double> cacheline_hop(hop_lines& l, int side, int reps, std::uint64_t iters) {
    std::uint64_t next = 1;
    auto rounds = [&](std::uint64_t n) {
        for (std::uint64_t end = next + n; next < end; ++next) {
            if (side == 0) {
                l.ping.store(next, std::memory_order_release);
                while (l.pong.load(std::memory_order_acquire) != next) {
                }
            } else {
                while (l.ping.load(std::memory_order_acquire) != next) {
                }
                l.pong.store(next, std::memory_order_release);
            }
        }
    };
    rounds(iters / 10 + 1);
    std::vector<double> v;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = bench_clock::now();
        rounds(iters);
        v.push_back(seconds_since(t0) * 1e6 / static_cast<double>(iters) / 2);
    }
    if (side != 0) v.clear();
    return v;
}

std::vector<double> cores_hop(int reps) {
    auto lines = std::make_unique<hop_lines>();
    std::atomic<int> arrived{0};
    std::atomic<bool> unpinned{false};
    auto side = [&](int core) {
        if (!pin_to_core(core)) unpinned.store(true);
        arrived.fetch_add(1);
        while (arrived.load() < 2) {
        }
        std::vector<double> v;
        if (!unpinned.load()) v = cacheline_hop(*lines, core, reps, 20000);
        return v;
    };
    std::thread other([&] { side(1); });
    std::vector<double> v;
    {
        affinity_guard keep_mask;
        v = side(0);
    }
    other.join();
    return v;
}

shared_results::shared_results(std::size_t capacity)
    : _bytes(sizeof(block) + capacity * sizeof(result)) {
    void* p = mmap(nullptr, _bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("bench: mmap of the results buffer failed");
    _b = new (p) block{};
    _b->capacity = capacity;
}

shared_results::~shared_results() {
    munmap(_b, _bytes);
}

void shared_results::add(const result& r) {
    const std::size_t i = _b->count.load(std::memory_order_relaxed);
    if (i >= _b->capacity) return;
    std::memcpy(static_cast<void*>(items() + i), &r, sizeof r);
    _b->count.store(i + 1, std::memory_order_release);
}

std::vector<result> shared_results::take() const {
    const std::size_t n = _b->count.load(std::memory_order_acquire);
    return std::vector<result>(items(), items() + n);
}

void exec_with_env(std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const char* who) {
    for (const std::string& e : env) {
        const std::size_t eq = e.find('=');
        setenv(e.substr(0, eq).c_str(), eq == std::string::npos ? "" : e.c_str() + eq + 1, 1);
    }
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "%s: cannot run %s: %s\n", who, args[0], std::strerror(errno));
    _exit(127);
}

}  // namespace am::bench
