// SPDX-License-Identifier: MIT
// Test support for the window layer (include/am/window.hpp): the fixture and parameter lists,
// a deterministic random generator that every rank (thread or process) runs alike, random
// segment layouts, and the gather/scatter of the target's packed view written independently of
// the implementation, for the sequential references.
#pragma once

#include "support/expect.hpp"
#include "support/watchdog.hpp"

#include <am/window.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace am_test::win {

/// The window tests' jobs: threads at 1, 2, 4 and 16 ranks, shm at 1, 2 and 4; with MPI, mpi
/// at 2 and 4 ranks and mixed at 4 (every check runs inside the ranks, so mpi needs nothing
/// from the test process).
inline std::vector<spmd_param> window_params() {
    return make_params({1, 2, 4, 16}, {1, 2, 4});
}
/// Tests that need a second rank.
inline std::vector<spmd_param> window_multi_params() {
    return make_params({2, 4, 16}, {2, 4});
}

class window_test : public spmd_test {};

/// A random generator that gives the same sequence on every rank for the same seed.
struct rng {
    std::uint64_t state;
    std::uint64_t next() noexcept {
        state += 0x632be59bd9b4e019ull;
        return mix(state);
    }
    /// Uniform-enough in [0, n) (0 for n = 0).
    std::size_t below(std::size_t n) noexcept { return n == 0 ? 0 : next() % n; }
    /// In [lo, hi].
    std::size_t between(std::size_t lo, std::size_t hi) noexcept { return lo + below(hi - lo + 1); }
    bool percent(unsigned p) noexcept { return next() % 100 < p; }
};

/// The end of the furthest block of one segment (its true extent), in elements.
inline std::size_t blocks_end(const am::segment_layout& l) {
    std::size_t end = 0;
    for (const auto& b : l.blocks) end = std::max(end, b.offset + b.count);
    return end;
}

/// Elements of one segment, counted here.
inline std::size_t elements_of(const am::segment_layout& l) {
    std::size_t n = 0;
    for (const auto& b : l.blocks) n += b.count;
    return n;
}

/// Elements a buffer must hold for `n` segments under either reading of "span": the last
/// segment's true extent or a whole extent per segment.
inline std::size_t buffer_elements(const am::segment_layout& l, std::size_t n) {
    if (n == 0) return 0;
    return std::max((n - 1) * l.extent + blocks_end(l), n * l.extent);
}

/// The target's view of `n` segments of `src`: each segment's blocks one after another.
template <class T>
std::vector<T> pack(std::span<const T> src, const am::segment_layout& l, std::size_t n) {
    std::vector<T> out;
    for (std::size_t s = 0; s < n; ++s) {
        for (const auto& b : l.blocks) {
            for (std::size_t e = 0; e < b.count; ++e)
                out.push_back(src[s * l.extent + b.offset + e]);
        }
    }
    return out;
}

/// Writes packed segments back through layout `l` (the origin's output scatter).
template <class T>
void scatter(std::span<T> dst, const am::segment_layout& l, std::span<const T> packed,
             std::size_t n) {
    std::size_t i = 0;
    for (std::size_t s = 0; s < n; ++s) {
        for (const auto& b : l.blocks) {
            for (std::size_t e = 0; e < b.count; ++e)
                dst[s * l.extent + b.offset + e] = packed[i++];
        }
    }
}

/// A random layout of `lo`..`hi` (≤ 12) elements per segment: contiguous, strided (with and
/// without an explicit extent) or indexed (blocks in increasing order with the implicit extent,
/// or shuffled with an explicit one).
inline am::segment_layout random_layout(rng& r, std::size_t lo, std::size_t hi) {
    const std::size_t want = r.between(lo, hi);
    switch (r.below(3)) {
        case 0:
            return am::segment_layout::contiguous(want);
        case 1: {
            const std::size_t blocklen = r.between(1, 3);
            const std::size_t count = std::max<std::size_t>(1, want / blocklen);
            const std::size_t stride = blocklen + r.below(3);
            const std::size_t extent =
                r.percent(50) ? 0 : (count - 1) * stride + blocklen + r.below(3);
            return am::segment_layout::strided(count, blocklen, stride, extent);
        }
        default: {
            std::vector<am::segment_layout::block> blocks;
            std::size_t at = r.below(3), left = want;
            while (left > 0) {
                const std::size_t c = std::min(left, r.between(1, 4));
                blocks.push_back({at, c});
                at += c + r.below(3);
                left -= c;
            }
            if (r.percent(50)) return am::segment_layout::indexed(blocks);
            for (std::size_t i = blocks.size(); i > 1; --i)
                std::swap(blocks[i - 1], blocks[r.below(i)]);
            return am::segment_layout::indexed(blocks, at + r.below(3));
        }
    }
}

/// Every byte of every element of `v` from `seed`.
template <class T>
void fill_values(std::vector<T>& v, std::uint64_t seed) {
    static_assert(std::is_trivially_copyable_v<T>);
    for (std::size_t i = 0; i < v.size(); ++i) {
        unsigned char bytes[sizeof(T)];
        for (std::size_t b = 0; b < sizeof(T); b += 8) {
            const std::uint64_t x = mix(seed * 0x100000001b3ull + i * 0x10001ull + b);
            std::memcpy(bytes + b, &x, sizeof(T) - b < 8 ? sizeof(T) - b : 8);
        }
        std::memcpy(&v[i], bytes, sizeof(T));
    }
}

/// The element at `i` of a span of uint64 seen as a window's memory.
inline std::span<std::uint64_t> as_u64(std::span<std::byte> b) {
    return {reinterpret_cast<std::uint64_t*>(b.data()), b.size() / sizeof(std::uint64_t)};
}
inline std::span<std::uint32_t> as_u32(std::span<std::byte> b) {
    return {reinterpret_cast<std::uint32_t*>(b.data()), b.size() / sizeof(std::uint32_t)};
}

/// Index of the first byte where `got` differs from `want`, -1 when equal (a size difference
/// counts at the shorter size).
inline std::ptrdiff_t first_difference(std::span<const std::byte> got,
                                       std::span<const std::byte> want) {
    const std::size_t n = std::min(got.size(), want.size());
    for (std::size_t i = 0; i < n; ++i) {
        if (got[i] != want[i]) return static_cast<std::ptrdiff_t>(i);
    }
    return got.size() == want.size() ? -1 : static_cast<std::ptrdiff_t>(n);
}

/// The element type of most window tests, and their operation: uint64 persistent data, input
/// and output.
using u64 = std::uint64_t;
using op_t = am::window_op<u64, u64, u64>;
using am_test::expect_error;
using am_test::mix;
using am_test::watchdog;

/// x += every input element; each output element of a segment is x after the segment.
inline void running_sum(const am::window_args<u64, u64, u64>& a) {
    if (a.persistent.empty()) return;
    for (std::size_t i = 0; i < a.num_segments; ++i) {
        for (u64 v : a.in(i)) a.persistent[0] += v;
        for (u64& o : a.out(i)) o = a.persistent[0];
    }
}

/// "rank N", the way am::error messages name the calling rank.
inline std::string rank_name(int r) {
    return "rank " + std::to_string(r);
}

}  // namespace am_test::win

/// A window test whose whole body is a job: TEST_P(fixture, name) running `run(...)`'s
/// arguments (the job, and optionally a config tweak) and failing when any rank fails.
#define WINDOW_JOB_TEST(fixture, name, ...) \
    TEST_P(fixture, name) {                 \
        ASSERT_EQ(run(__VA_ARGS__), 0);     \
    }
