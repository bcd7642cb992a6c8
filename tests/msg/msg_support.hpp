// SPDX-License-Identifier: MIT
// Test support for two-sided messages: deterministic payloads named by (source, destination,
// tag, sequence number) and a bounded wait for a request. Byte comparisons (AM_EXPECT_BYTES)
// are shared with the Split-C tests.
#pragma once

#include "rma/rma_support.hpp"
#include "support/expect.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace am_test {

/// Seed of message `seq` from `src` to `dst` with `tag`.
constexpr std::uint64_t msg_seed(int src, int dst, int tag, int seq = 0) noexcept {
    return mix((static_cast<std::uint64_t>(src) << 48) ^ (static_cast<std::uint64_t>(dst) << 32) ^
               (static_cast<std::uint64_t>(tag) << 16) ^ static_cast<std::uint64_t>(seq));
}

/// Polls `r` (through test()) until it completes or `limit` passes; true when it completed.
inline bool complete_within(am::request& r, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!r.test()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::yield();
    }
    return true;
}

/// Expects `r` to complete within `limit`; otherwise fails the test and brings the job down,
/// so that the sends and receives still waiting for it do not hang the test.
inline void require_complete(am::context& ctx, am::request& r, std::chrono::milliseconds limit,
                             const std::string& what) {
    if (complete_within(r, limit)) return;
    ADD_FAILURE() << what << " (rank " << ctx.rank() << ")";
    ctx.abort(what);
}

/// Whether every byte of `s` is `b`.
inline bool all_bytes(std::span<const std::byte> s, std::byte b) {
    for (std::byte x : s) {
        if (x != b) return false;
    }
    return true;
}

}  // namespace am_test
