// SPDX-License-Identifier: MIT
// The mpi transport's messages on its private communicator `_comm`, and the pure check of one
// that arrived in a posted receive (an eager slot). No MPI here, no transport state: the
// receiver's reading of the bytes is unit-testable and fuzzed (fuzz/mpi_eager_fuzz.cpp).
//
// Messages (received by pre-posted MPI_ANY_SOURCE/MPI_ANY_TAG receives of `slot_bytes`, so
// messages from one peer are matched, and handled, in the order they were sent):
//   tag_msg + lane      a pack: one or more core messages of that lane to one destination,
//                       each a record `u32 len, u32 0` + `len` bytes, padded to 8 bytes
//                       (`record_header`, `padded`); the message is exactly its records
//   tag_big + lane      announces a larger core message of `u64` bytes that follows on
//                       `_data` (a second duplicate, so no wildcard receive can take it)
//   tag_credit          `u32 lane, u32 count`: credits returned by the receiver
//   tag_fail            the reason the job fails; the receiver stops with it
// Credits: `credits_per_peer` MPI messages (packs and announcements) per (peer, lane) may be
// unconsumed at a receiver; the receiver returns them in batches of half once it handed every
// core message of a pack to the core. Requests and replies have separate credits, so replies
// always drain (the core's deadlock-freedom argument carries over). A credit per MPI message,
// not per core message, keeps the memory an unpolled rank can be sent (at most
// 2 × credits_per_peer slots per peer) what it was before packing.
#pragma once

#include "../transport.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace am::transport::mpi {

enum : int { tag_msg = 0, tag_big = 2, tag_credit = 4, tag_fail = 5 };
inline constexpr std::size_t slot_bytes = 8192 + 256;  // a pack: 8 KiB of payload and headers
inline constexpr std::uint32_t credits_per_peer = 64;
/// Before each core message of a pack: its length and a zero word.
inline constexpr std::size_t record_header = 8;
/// The largest core message sent in a pack; larger ones are announced (`tag_big`).
inline constexpr std::size_t max_eager = slot_bytes - record_header;

/// A record's bytes rounded up to the 8-byte alignment of the next record.
constexpr std::size_t padded(std::size_t len) noexcept {
    return (len + 7) & ~std::size_t{7};
}

/// What an eager message is.
enum class eager_kind : std::uint8_t {
    message,  ///< a pack of `count` core messages on `lane`, its records in `bytes`
    big,      ///< announces a core message of `big_bytes` on `lane`, arriving on `_data`
    credit,   ///< `credits` returned for `lane`
    fail,     ///< the job failed: `bytes` is the reason
};

/// An eager message that passed the check.
struct eager_message {
    eager_kind kind = eager_kind::message;
    unsigned lane = 0;                 // message, big, credit: < num_lanes
    std::span<const std::byte> bytes;  // message, fail: inside the received buffer
    std::uint64_t big_bytes = 0;       // big: in (max_eager, largest]
    std::uint32_t credits = 0;         // credit: in [1, credits_per_peer]
    std::uint32_t count = 0;           // message: records in the pack, ≥ 1
};

/// The record at `offset` of a pack that passed `parse_eager`: its core message, and the offset
/// of the next record (`bytes.size()` after the last).
struct pack_record {
    std::span<const std::byte> message;
    std::size_t next = 0;
};
[[nodiscard]] inline pack_record record_at(std::span<const std::byte> pack,
                                           std::size_t offset) noexcept {
    std::uint32_t len = 0;
    std::memcpy(&len, pack.data() + offset, sizeof len);
    const std::size_t start = offset + record_header;
    const std::size_t end = start + padded(len);
    return {pack.subspan(start, len), end < pack.size() ? end : pack.size()};
}

/// Checks a pack's records: each header inside the message with its zero word, each message
/// inside it, the last one ending it (its padding may be cut: the sender sends the padded
/// length, but nothing depends on it). Returns null and the number of records, or why not.
[[nodiscard]] inline const char* check_pack(const std::byte* msg, std::size_t len,
                                            std::uint32_t& count) noexcept {
    if (len == 0) return "empty pack";
    count = 0;
    std::size_t at = 0;
    while (at < len) {
        if (len - at < record_header) return "pack record header cut off";
        std::uint32_t w[2];
        std::memcpy(w, msg + at, sizeof w);
        if (w[1] != 0) return "pack record header with a non-zero reserved word";
        if (w[0] > len - at - record_header) return "pack record longer than the pack";
        at += record_header + w[0];
        ++count;
        at = padded(at) < len ? padded(at) : len;  // every record starts 8-aligned
    }
    return nullptr;
}

/// Checks the eager message of `len` bytes at `msg` that arrived with `tag`: length within a
/// slot, a known tag, a pack made exactly of records (`check_pack`), and for the fixed-size
/// messages their exact size and field ranges (a large message is larger than `max_eager` and
/// at most `largest`, the largest message any rank of the job may send, and INT_MAX, an MPI
/// count; a credit names a lane and returns 1 to `credits_per_peer`). The contents of a core
/// message are the core's to check (src/core/incoming.hpp). Returns null and fills `out` when
/// the message may be acted on, else why it may not (a static string).
[[nodiscard]] inline const char* parse_eager(int tag, const std::byte* msg, std::size_t len,
                                             std::uint64_t largest, eager_message& out) noexcept {
    if (len > slot_bytes) return "longer than a receive slot";
    switch (tag) {
        case tag_msg:
        case tag_msg + 1: {
            std::uint32_t count = 0;
            if (const char* bad = check_pack(msg, len, count)) return bad;
            out = eager_message{eager_kind::message,
                                static_cast<unsigned>(tag - tag_msg),
                                std::span<const std::byte>(msg, len),
                                0,
                                0,
                                count};
            return nullptr;
        }
        case tag_big:
        case tag_big + 1: {
            std::uint64_t n = 0;
            if (len != sizeof n) return "large-message announcement is not 8 bytes";
            std::memcpy(&n, msg, sizeof n);
            if (n <= max_eager) return "announced large message fits a pack";
            // The data arrives with one receive of an int count.
            if (n > largest || n > static_cast<std::uint64_t>(INT_MAX)) {
                return "announced large message over the largest message of the job";
            }
            out = eager_message{eager_kind::big, static_cast<unsigned>(tag - tag_big), {}, n, 0, 0};
            return nullptr;
        }
        case tag_credit: {
            std::uint32_t w[2];
            if (len != sizeof w) return "credit return is not 8 bytes";
            std::memcpy(w, msg, sizeof w);
            if (w[0] >= num_lanes) return "credit return for an unknown lane";
            if (w[1] == 0 || w[1] > credits_per_peer) return "credit return out of range";
            out = eager_message{eager_kind::credit, w[0], {}, 0, w[1], 0};
            return nullptr;
        }
        case tag_fail:
            out = eager_message{eager_kind::fail, 0, std::span<const std::byte>(msg, len), 0, 0, 0};
            return nullptr;
        default:
            return "unknown tag";
    }
}

}  // namespace am::transport::mpi
