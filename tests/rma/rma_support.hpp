// SPDX-License-Identifier: MIT
// Test support for the Split-C layer: a fixture that runs each test body once per put/get path
// (`am::rma_path::automatic`, direct copies on threads and shm, and `am::rma_path::am`, the
// reference implementation on active messages), and byte comparisons that report the first
// difference instead of one failure per byte.
#pragma once

#include "support/expect.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace am_test {

inline const char* rma_path_name(am::rma_path p) {
    return p == am::rma_path::am ? "am" : "auto";
}

/// Body of a Split-C test: runs on every rank, told which path the job uses.
using rma_fn = std::function<void(am::context&, am::rma_path)>;

/// Fixture of the Split-C tests. Segments are 16 MiB up to 16 ranks (room for transfers of
/// ~300 KiB from and to every rank at once) and 1 MiB beyond.
class rma_test : public spmd_test {
  protected:
    int run_on(am::rma_path path, const rma_fn& fn, const tweak_fn& tweak = {}) const {
        return spmd(
            GetParam(), [&](am::context& ctx) { fn(ctx, path); },
            [&](am::config& cfg) {
                cfg.rma = path;
                if (cfg.ranks <= 16) cfg.segment_bytes = std::size_t{16} << 20;
                if (tweak) tweak(cfg);
            });
    }
};

/// Index of the first byte where `got` differs from `want`, or -1 when they are equal
/// (a size difference counts as a difference at the shorter size).
inline std::ptrdiff_t first_difference(std::span<const std::byte> got,
                                       std::span<const std::byte> want) {
    const std::size_t n = got.size() < want.size() ? got.size() : want.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (got[i] != want[i]) return static_cast<std::ptrdiff_t>(i);
    }
    return got.size() == want.size() ? -1 : static_cast<std::ptrdiff_t>(n);
}

/// The bytes of a contiguous range (vector, span, array) for first_difference().
template <class R>
std::span<const std::byte> bytes_of(const R& r) {
    return std::as_bytes(std::span(r));
}

/// "rank N:", the way am::error messages name the calling rank.
inline std::string rank_prefix(const am::context& ctx) {
    return "rank " + std::to_string(ctx.rank()) + ":";
}

}  // namespace am_test

/// Expects the bytes of `got` to equal those of `want` (contiguous ranges), naming the first
/// difference.
#define AM_EXPECT_BYTES(got, want)                                                              \
    EXPECT_EQ(::am_test::first_difference(::am_test::bytes_of(got), ::am_test::bytes_of(want)), \
              -1)                                                                               \
        << "first differing byte of " << ::am_test::bytes_of(got).size() << " vs "              \
        << ::am_test::bytes_of(want).size()

/// Defines the body of a Split-C test once and registers it twice in `fixture` (derived from
/// am_test::rma_test): as `<name>_auto` and `<name>_am`, so CTest names carry the path
/// (am.rma.<fixture>_<name>_am.<transport>.np<N>). The body sees `ctx` and `path`.
#define AM_RMA_TEST(fixture, name)                                        \
    void fixture##_##name(am::context& ctx, am::rma_path path);           \
    TEST_P(fixture, name##_auto) {                                        \
        ASSERT_EQ(run_on(am::rma_path::automatic, &fixture##_##name), 0); \
    }                                                                     \
    TEST_P(fixture, name##_am) {                                          \
        ASSERT_EQ(run_on(am::rma_path::am, &fixture##_##name), 0);        \
    }                                                                     \
    void fixture##_##name(am::context& ctx, [[maybe_unused]] am::rma_path path)
