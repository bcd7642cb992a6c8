// SPDX-License-Identifier: MIT
/// @file
/// Machine helpers shared by the benchmarks: clock, core pinning, memcpy bandwidth, and a
/// results buffer in shared memory that forked ranks fill and the launcher reads.
#pragma once

#include "options.hpp"
#include "report.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace am::bench {

using bench_clock = std::chrono::steady_clock;

/// Seconds since `t0` (steady clock).
inline double seconds_since(bench_clock::time_point t0) {
    return std::chrono::duration<double>(bench_clock::now() - t0).count();
}

/// Cores this process may run on.
int usable_cores();

/// In a forked child: adds `env` ("NAME=value" each) to the environment and runs `argv`
/// (argv[0] a path, or a name looked up on PATH); if that fails, says so on stderr, naming
/// `who`, and exits with 127.
[[noreturn]] void exec_with_env(std::vector<std::string>& argv, const std::vector<std::string>& env,
                                const char* who);

/// Pins the calling thread to the `index`-th core it may run on (modulo their number).
/// Returns false (and says why on stderr) when the kernel refuses.
bool pin_to_core(int index);

/// Saves the calling thread's CPU mask and restores it on destruction (rank 0 of the threads
/// transport runs on the main thread, which later launches the MPI baseline).
class affinity_guard {
  public:
    affinity_guard();
    ~affinity_guard();
    affinity_guard(const affinity_guard&) = delete;
    affinity_guard& operator=(const affinity_guard&) = delete;

  private:
    cpu_set_t _saved;
    bool _ok;
};

/// A zero-filled, page-aligned buffer: the source of long messages and both sides of the
/// memcpy reference, so the two copy between equally aligned addresses.
class page_buffer {
  public:
    explicit page_buffer(std::size_t bytes = 0);
    ~page_buffer();
    page_buffer(const page_buffer&) = delete;
    page_buffer& operator=(const page_buffer&) = delete;

    /// Replaces the contents with `bytes` zero bytes.
    void reset(std::size_t bytes);
    [[nodiscard]] std::byte* data() const noexcept { return _p; }
    [[nodiscard]] std::size_t size() const noexcept { return _n; }

  private:
    std::byte* _p = nullptr;
    std::size_t _n = 0;
};

/// Single-core memcpy bandwidth (GB/s, 10^9 bytes/s) of `bytes`-sized copies between two
/// warm page-aligned buffers, one value per repetition: the reference of the long-message goal.
std::vector<double> memcpy_bandwidth(const options& o, std::size_t bytes);

/// Two cache lines for a raw ping-pong between two cores, in memory both can reach; start
/// zeroed. The reference floor of every latency here: one store seen by the other core.
struct hop_lines {
    alignas(64) std::atomic<std::uint64_t> ping;
    alignas(64) std::atomic<std::uint64_t> pong;
};

/// One side (0 or 1) of a cache-line ping-pong through `l`: `reps` repetitions of `iters`
/// round trips after a warm-up. Side 0 returns the one-way latency in µs per repetition;
/// side 1 returns nothing. Both sides must call it with the same arguments, once per `l`.
std::vector<double> cacheline_hop(hop_lines& l, int side, int reps, std::uint64_t iters);

/// The raw cache-line hop between the first two cores this process may use, from two threads
/// pinned to them (`cacheline_hop`, 20000 round trips per repetition): one-way µs per
/// repetition; empty when either thread could not be pinned (then neither spins). The
/// calling thread's CPU mask is restored.
std::vector<double> cores_hop(int reps);

/// Results written by whichever process runs rank 0 and read by the process that reports.
/// Lives in a MAP_SHARED anonymous mapping created before the ranks are forked.
class shared_results {
  public:
    explicit shared_results(std::size_t capacity = 4096);
    ~shared_results();
    shared_results(const shared_results&) = delete;
    shared_results& operator=(const shared_results&) = delete;

    void add(const result& r);
    [[nodiscard]] std::vector<result> take() const;
    /// Lines for `cacheline_hop` between ranks forked from this process.
    [[nodiscard]] hop_lines& hop() const noexcept { return _b->hop; }

  private:
    struct block {
        hop_lines hop;
        std::atomic<std::size_t> count;
        std::size_t capacity;
    };
    [[nodiscard]] result* items() const noexcept { return reinterpret_cast<result*>(_b + 1); }

    block* _b;
    std::size_t _bytes;
};

}  // namespace am::bench
