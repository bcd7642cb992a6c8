// SPDX-License-Identifier: MIT
// A single-producer single-consumer ring of variable-sized records in memory that both sides
// can address (one process's heap, or a POSIX shared-memory mapping).
//
// Positions are 64-bit byte counters that never wrap; the data area is a power of two
// `capacity` followed by a pad of `capacity / 2` bytes. A record is an 8-byte header word
// {u32 stride, u32 length} and the message, padded to 8 bytes; it starts at `position & mask`
// and, when it starts near the end, simply runs on into the pad. So a record is always
// contiguous and neither side ever handles a wrap: the logical bytes it covers past the end are
// the start of the ring, which the next record's position skips over.
//
// One cache line per small message. The consumer polls the header word of the next record
// itself, not a counter of the producer's: a non-zero word is a published record, and the
// header, the core's wire header and a short message's arguments share one 64-byte line, so a
// small message moves exactly one line from producer to consumer. For that:
// - the producer zeroes the word where the next record will start before it publishes a
//   record (release store of the header word), so the consumer never mistakes stale bytes of an
//   earlier lap for a header; that word is counted in the room a record needs;
// - a record is padded to the end of its line when fewer than `line_fill` bytes would be left
//   there, so records of up to `line_fill` bytes (a short message with up to two arguments)
//   never straddle two lines;
// - the consumer publishes its tail once per drain (and every quarter ring within a long
//   one), not once per record; the producer reads it only when its cached copy says full.
// `ring_ctl::head` is still written by the producer (on its own line, which the consumer does
// not read on the fast path): new views start there, and checked builds compare against it.
//
// A view starts at the ring's shared positions, not at 0: a ring outlives its views when one
// region serves several `am::run` calls of a process (shm under amrun), and the next run's views
// carry on where the last run's stopped.
#pragma once

#include "../../util/assert.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace am::transport::ring {

/// The shared part of a ring: producer and consumer positions on their own cache lines.
struct ring_ctl {
    alignas(64) std::atomic<std::uint64_t> head;  // bytes published by the producer
    // Non-zero once the producer has announced the ring to its consumer (region.hpp): a rank
    // scans only the rings announced to it. Written once, on the producer's line.
    std::atomic<std::uint32_t> announced;
    alignas(64) std::atomic<std::uint64_t> tail;  // bytes released by the consumer
};
static_assert(sizeof(ring_ctl) == 128);

inline constexpr std::size_t record_header = 8;
inline constexpr std::size_t line_bytes = 64;
/// A record ending with fewer than this many bytes left in its line is padded to the line's end.
inline constexpr std::size_t line_fill = 32;

/// Bytes of data area (ring plus pad) for a ring of `capacity`.
constexpr std::size_t data_bytes(std::size_t capacity) noexcept {
    return capacity + capacity / 2;
}

/// Largest message a ring of `capacity` bytes carries: its record must fit in the pad.
constexpr std::size_t max_message(std::size_t capacity) noexcept {
    return capacity / 2 - record_header;
}

/// Bytes a message of `len` bytes and its header occupy, before line padding.
constexpr std::uint64_t stride_of(std::size_t len) noexcept {
    return (len + record_header + 7) & ~std::uint64_t{7};
}

/// Where the record after one of `len` bytes at position `at` starts: past its stride, and at
/// the next line when fewer than `line_fill` bytes would be left in this one.
constexpr std::uint64_t next_position(std::uint64_t at, std::size_t len) noexcept {
    const std::uint64_t end = at + stride_of(len);
    const std::uint64_t left = (0 - end) & (line_bytes - 1);
    return left < line_fill ? end + left : end;
}

/// A ring's capacity is a power of two of at least 1 KiB (lines and a pad that holds a record).
constexpr bool valid_capacity(std::size_t capacity) noexcept {
    return capacity >= 1024 && (capacity & (capacity - 1)) == 0 &&
           capacity <= (std::size_t{1} << 32);
}

/// Within a drain, the consumer gives room back every this many bytes: often enough that a
/// producer waiting for room refills while large records are consumed, rarely enough that a
/// stream of small records does not move the tail's line for each.
constexpr std::uint64_t publish_bytes(std::size_t capacity) noexcept {
    return capacity / 4 < 4096 ? capacity / 4 : 4096;
}

/// The header word at `p`, shared between producer and consumer.
inline std::atomic_ref<std::uint64_t> header_at(std::byte* p) noexcept {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(p));
}

/// The producer's view of one ring, private to the sending rank.
class producer {
  public:
    producer() = default;
    /// Starts at the published head: only this rank's producers ever wrote it.
    producer(ring_ctl* ctl, std::byte* data, std::size_t capacity) noexcept
        : _ctl(ctl),
          _data(data),
          _capacity(capacity),
          _head(ctl->head.load(std::memory_order_relaxed)),
          _cached_tail(ctl->tail.load(std::memory_order_acquire)) {
        AM_ASSERT(valid_capacity(capacity), "ring capacity is not a power of two of 1 KiB or more");
        AM_ASSERT(_cached_tail <= _head && _head - _cached_tail <= _capacity,
                  "ring positions: tail > head or more than a ring's worth in flight");
    }

    /// Attached to a ring (a view of all-zero bytes is not, and reserves nothing).
    [[nodiscard]] bool attached() const noexcept { return _ctl != nullptr; }

    /// Room for a message of `len` ≤ max_message bytes, or nullptr when the ring is full (or
    /// the view is not attached). A record needs its padded stride plus the next header word.
    /// Must be followed by `commit(msg, len)` with the same length.
    std::byte* reserve(std::size_t len) noexcept {
        const std::uint64_t next = next_position(_head, len);
        if (next + record_header - _cached_tail > _capacity) [[unlikely]] {
            if (_ctl == nullptr) return nullptr;  // all-zero view: not attached to its ring yet
            _cached_tail = _ctl->tail.load(std::memory_order_acquire);
            if (next + record_header - _cached_tail > _capacity) return nullptr;
        }
        _next = next;
        // Attached from here on (an unattached view has no room for any record).
        AM_ASSERT(len <= ring::max_message(_capacity), "record longer than the pad");
        AM_ASSERT(_cached_tail <= _head, "ring positions: tail > head");
        AM_ASSERT((_head & (_capacity - 1)) + stride_of(len) <= data_bytes(_capacity),
                  "record runs past the pad");
        return _data + (_head & (_capacity - 1)) + record_header;
    }

    /// Publishes the message written at `msg` (returned by the last `reserve`, for `len`
    /// bytes): zeroes the next record's header word, then releases this record's header word.
    void commit(std::byte* msg, std::size_t len) noexcept {
        const std::uint64_t next = _next;
        AM_ASSERT(msg == _data + (_head & (_capacity - 1)) + record_header,
                  "commit of a message the last reserve did not return");
        AM_ASSERT(next == next_position(_head, len), "commit of another length than reserved");
        AM_ASSERT(next + record_header - _cached_tail <= _capacity,
                  "commit of more bytes than the last reserve made room for");
        header_at(_data + (next & (_capacity - 1))).store(0, std::memory_order_relaxed);
        _ctl->head.store(next, std::memory_order_relaxed);
        const std::uint64_t word = (next - _head) | (static_cast<std::uint64_t>(len) << 32);
        header_at(msg - record_header).store(word, std::memory_order_release);
        _head = next;
    }

  private:
    ring_ctl* _ctl = nullptr;
    std::byte* _data = nullptr;
    std::uint64_t _capacity = 0;
    std::uint64_t _head = 0;
    std::uint64_t _next = 0;  // where the record after the reserved one starts
    std::uint64_t _cached_tail = 0;
};

/// The consumer's view of one ring, private to the receiving rank.
class consumer {
  public:
    consumer() = default;
    /// Starts at the released tail: only this rank's consumers ever wrote it.
    consumer(ring_ctl* ctl, std::byte* data, std::size_t capacity) noexcept
        : _ctl(ctl),
          _data(data),
          _mask(capacity - 1),
          _tail(ctl->tail.load(std::memory_order_relaxed)),
          _published(_tail),
          _publish_at(_tail + publish_bytes(capacity)) {
        AM_ASSERT(valid_capacity(capacity), "ring capacity is not a power of two of 1 KiB or more");
    }

    /// True when the producer has published records not yet consumed.
    [[nodiscard]] bool ready() const noexcept {
        return header_at(_data + (_tail & _mask)).load(std::memory_order_acquire) != 0;
    }

    /// Calls `fn(msg, len)` for every record published when called (at most `limit`); each
    /// record is consumed after `fn` returns (or throws), so `msg` stays valid during the call.
    /// Returns the count. The room is given back to the producer before this returns.
    template <class Fn>
    std::size_t drain(Fn&& fn, std::size_t limit) {
        publish_guard publish{this};
        std::size_t n = 0;
        while (n < limit && consume_one(fn)) ++n;
        return n;
    }
    /// `drain` without a limit: the loop of the hot path.
    template <class Fn>
    std::size_t drain(Fn&& fn) {
        publish_guard publish{this};
        std::size_t n = 0;
        while (consume_one(fn)) ++n;
        return n;
    }

  private:
    /// Consumes the record at the tail, if one is published: `fn`, then the tail moves past it
    /// (also when `fn` throws); room goes back to the producer every quarter ring.
    template <class Fn>
    [[gnu::always_inline]] bool consume_one(Fn& fn) {
        std::byte* rec = _data + (_tail & _mask);
        const std::uint64_t word = header_at(rec).load(std::memory_order_acquire);
        if (word == 0) return false;
        const auto stride = static_cast<std::uint32_t>(word);
        const auto len = static_cast<std::size_t>(word >> 32);
        AM_ASSERT(
            len <= ring::max_message(_mask + 1) && _tail + stride == next_position(_tail, len),
            "record header: stride and length do not match");
        AM_ASSERT(_tail + stride <= _ctl->head.load(std::memory_order_acquire),
                  "record runs past the published head");
        [[maybe_unused]] const std::uint64_t at = _tail;
        {
            advance_guard advance{this, stride};
            fn(rec + record_header, len);
            // Consumed in order, each once: nothing moved the tail during `fn` (a drain of this
            // ring nested in it would have).
            AM_ASSERT(_tail == at, "ring record consumed out of order");
        }
        if (_tail >= _publish_at) [[unlikely]]
            publish_tail();
        return true;
    }

    struct advance_guard {
        consumer* c;
        std::uint32_t stride;
        ~advance_guard() { c->_tail += stride; }
    };
    struct publish_guard {
        consumer* c;
        ~publish_guard() {
            if (c->_tail != c->_published) c->publish_tail();
        }
    };
    void publish_tail() noexcept {
        _published = _tail;
        _publish_at = _tail + publish_bytes(_mask + 1);
        _ctl->tail.store(_tail, std::memory_order_release);
    }

    ring_ctl* _ctl = nullptr;
    std::byte* _data = nullptr;
    std::uint64_t _mask = 0;
    std::uint64_t _tail = 0;
    std::uint64_t _published = 0;   // the tail the producer has been given
    std::uint64_t _publish_at = 0;  // publish within a drain once the tail reaches this
};

}  // namespace am::transport::ring
