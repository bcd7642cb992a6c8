// SPDX-License-Identifier: MIT
// The mpi transport's messages on its private communicator `_comm`, and the pure check of one
// that arrived in a posted receive (an eager slot). No MPI here, no transport state: the
// receiver's reading of the bytes is unit-testable and fuzzed (fuzz/mpi_eager_fuzz.cpp).
//
// Messages (received by pre-posted MPI_ANY_SOURCE/MPI_ANY_TAG receives of `slot_bytes`, so
// messages from one peer are matched, and handled, in the order they were sent):
//   tag_msg + lane      a core message of at most `slot_bytes` (eager, into a posted slot)
//   tag_big + lane      announces a larger core message of `u64` bytes that follows on
//                       `_data` (a second duplicate, so no wildcard receive can take it)
//   tag_credit          `u32 lane, u32 count`: credits returned by the receiver
//   tag_fail            the reason the job fails; the receiver stops with it
// Credits: `credits_per_peer` core messages per (peer, lane) may be unconsumed at a receiver;
// the receiver returns them in batches of half. Requests and replies have separate credits,
// so replies always drain (the core's deadlock-freedom argument carries over).
#pragma once

#include "../transport.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace am::transport::mpi {

enum : int { tag_msg = 0, tag_big = 2, tag_credit = 4, tag_fail = 5 };
inline constexpr std::size_t slot_bytes = 8192 + 256;  // a core message up to 8 KiB of payload
inline constexpr std::uint32_t credits_per_peer = 64;

/// What an eager message is.
enum class eager_kind : std::uint8_t {
    message,  ///< a core message: `bytes`, on `lane`
    big,      ///< announces a core message of `big_bytes` on `lane`, arriving on `_data`
    credit,   ///< `credits` returned for `lane`
    fail,     ///< the job failed: `bytes` is the reason
};

/// An eager message that passed the check.
struct eager_message {
    eager_kind kind = eager_kind::message;
    unsigned lane = 0;                 // message, big, credit: < num_lanes
    std::span<const std::byte> bytes;  // message, fail: inside the received buffer
    std::uint64_t big_bytes = 0;       // big: in (slot_bytes, largest]
    std::uint32_t credits = 0;         // credit: in [1, credits_per_peer]
};

/// Checks the eager message of `len` bytes at `msg` that arrived with `tag`: length within a
/// slot, a known tag, and for the fixed-size messages their exact size and field ranges (a
/// large message is larger than a slot and at most `largest`, the largest message any rank of
/// the job may send, and INT_MAX, an MPI count; a credit names a lane and returns 1 to
/// `credits_per_peer`). There is no batching: one MPI message, one core message. The contents
/// of a core message are the core's to check (src/core/incoming.hpp). Returns null and fills
/// `out` when the message may be acted on, else why it may not (a static string).
[[nodiscard]] inline const char* parse_eager(int tag, const std::byte* msg, std::size_t len,
                                             std::uint64_t largest, eager_message& out) noexcept {
    if (len > slot_bytes) return "longer than a receive slot";
    switch (tag) {
        case tag_msg:
        case tag_msg + 1:
            out = eager_message{eager_kind::message, static_cast<unsigned>(tag - tag_msg),
                                std::span<const std::byte>(msg, len), 0, 0};
            return nullptr;
        case tag_big:
        case tag_big + 1: {
            std::uint64_t n = 0;
            if (len != sizeof n) return "large-message announcement is not 8 bytes";
            std::memcpy(&n, msg, sizeof n);
            if (n <= slot_bytes) return "announced large message fits a receive slot";
            // The data arrives with one receive of an int count.
            if (n > largest || n > static_cast<std::uint64_t>(INT_MAX)) {
                return "announced large message over the largest message of the job";
            }
            out = eager_message{eager_kind::big, static_cast<unsigned>(tag - tag_big), {}, n, 0};
            return nullptr;
        }
        case tag_credit: {
            std::uint32_t w[2];
            if (len != sizeof w) return "credit return is not 8 bytes";
            std::memcpy(w, msg, sizeof w);
            if (w[0] >= num_lanes) return "credit return for an unknown lane";
            if (w[1] == 0 || w[1] > credits_per_peer) return "credit return out of range";
            out = eager_message{eager_kind::credit, w[0], {}, 0, w[1]};
            return nullptr;
        }
        case tag_fail:
            out = eager_message{eager_kind::fail, 0, std::span<const std::byte>(msg, len), 0, 0};
            return nullptr;
        default:
            return "unknown tag";
    }
}

}  // namespace am::transport::mpi
