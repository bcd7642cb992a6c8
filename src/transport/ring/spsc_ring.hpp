// SPDX-License-Identifier: MIT
// A single-producer single-consumer ring of variable-sized records in memory that both sides
// can address (one process's heap, or a POSIX shared-memory mapping). Positions are 64-bit
// byte counters that never wrap; the data area is a power of two `capacity` followed by a pad
// of `capacity / 2` bytes. A record is an 8-byte header {u32 stride, u32 length} and the
// message, padded to 8 bytes; it starts at `position & mask` and, when it starts near the end,
// simply runs on into the pad. So a record is always contiguous and neither side ever handles
// a wrap: the logical bytes it covers past the end are the start of the ring, which the next
// record's position skips over. A view starts at the ring's shared positions, not at 0: a ring
// outlives its views when one region serves several `am::run` calls of a process (shm under
// amrun), and the next run's views carry on where the last run's stopped.
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

/// Bytes of data area (ring plus pad) for a ring of `capacity`.
constexpr std::size_t data_bytes(std::size_t capacity) noexcept {
    return capacity + capacity / 2;
}

/// Largest message a ring of `capacity` bytes carries: its record must fit in the pad.
constexpr std::size_t max_message(std::size_t capacity) noexcept {
    return capacity / 2 - record_header;
}

constexpr std::uint64_t stride_of(std::size_t len) noexcept {
    return (len + record_header + 7) & ~std::uint64_t{7};
}

/// A ring's capacity is a power of two, and large enough for a pad that holds a record.
constexpr bool valid_capacity(std::size_t capacity) noexcept {
    return capacity >= 4 * record_header && (capacity & (capacity - 1)) == 0 &&
           capacity <= (std::size_t{1} << 32);
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
        AM_ASSERT(valid_capacity(capacity), "ring capacity is not a power of two");
        AM_ASSERT(_cached_tail <= _head && _head - _cached_tail <= _capacity,
                  "ring positions: tail > head or more than a ring's worth in flight");
    }

    /// Attached to a ring (a view of all-zero bytes is not, and reserves nothing).
    [[nodiscard]] bool attached() const noexcept { return _ctl != nullptr; }

    /// Room for a message of `len` ≤ max_message bytes, or nullptr when the ring is full (or
    /// the view is not attached).
    /// Must be followed by `commit(msg, len)` with the same length.
    std::byte* reserve(std::size_t len) noexcept {
        const std::uint64_t end = _head + stride_of(len);
        if (end - _cached_tail > _capacity) [[unlikely]] {
            if (_ctl == nullptr) return nullptr;  // all-zero view: not attached to its ring yet
            _cached_tail = _ctl->tail.load(std::memory_order_acquire);
            if (end - _cached_tail > _capacity) return nullptr;
        }
        // Attached from here on (an unattached view has no room for any record).
        AM_ASSERT(len <= ring::max_message(_capacity), "record longer than the pad");
        AM_ASSERT(_cached_tail <= _head && end - _cached_tail <= _capacity,
                  "ring positions: tail > head or more than a ring's worth in flight");
        AM_ASSERT((_head & (_capacity - 1)) + stride_of(len) <= data_bytes(_capacity),
                  "record runs past the pad");
        return _data + (_head & (_capacity - 1)) + record_header;
    }

    /// Publishes the message written at `msg` (returned by the last `reserve`).
    void commit(std::byte* msg, std::size_t len) noexcept {
        const std::uint64_t stride = stride_of(len);
        AM_ASSERT(msg == _data + (_head & (_capacity - 1)) + record_header,
                  "commit of a message the last reserve did not return");
        AM_ASSERT(_head + stride - _cached_tail <= _capacity,
                  "commit of more bytes than the last reserve made room for");
        const std::uint64_t word = stride | (static_cast<std::uint64_t>(len) << 32);
        std::memcpy(msg - record_header, &word, 8);  // {u32 stride, u32 length}, little-endian
        _head += stride;
        _ctl->head.store(_head, std::memory_order_release);
    }

  private:
    ring_ctl* _ctl = nullptr;
    std::byte* _data = nullptr;
    std::uint64_t _capacity = 0;
    std::uint64_t _head = 0;
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
          _tail(ctl->tail.load(std::memory_order_relaxed)) {
        AM_ASSERT(valid_capacity(capacity), "ring capacity is not a power of two");
    }

    /// True when the producer has published records not yet consumed.
    [[nodiscard]] bool ready() const noexcept {
        return _ctl->head.load(std::memory_order_acquire) != _tail;
    }

    /// Calls `fn(msg, len)` for every record published when called (at most `limit`); each
    /// record is released after `fn` returns (or throws), so `msg` stays valid during the call.
    /// Returns the count.
    template <class Fn>
    std::size_t drain(Fn&& fn, std::size_t limit = SIZE_MAX) {
        const std::uint64_t head = _ctl->head.load(std::memory_order_acquire);
        AM_ASSERT(_tail <= head && head - _tail <= _mask + 1,
                  "ring positions: tail > head or more than a ring's worth in flight");
        std::size_t n = 0;
        while (_tail != head && n < limit) {
            std::byte* rec = _data + (_tail & _mask);
            std::uint64_t word;
            std::memcpy(&word, rec, 8);
            const auto stride = static_cast<std::uint32_t>(word);
            const auto len = static_cast<std::size_t>(word >> 32);
            AM_ASSERT(len <= ring::max_message(_mask + 1) && stride == stride_of(len),
                      "record header: stride and length do not match");
            AM_ASSERT(stride <= head - _tail, "record runs past the published head");
            const std::uint64_t at = _tail;
            release_guard guard{this, stride};
            fn(rec + record_header, len);
            // Released in order, each once: nothing moved the tail during `fn` (a drain of this
            // ring nested in it would have).
            AM_ASSERT(_tail == at, "ring record released out of order");
            ++n;
        }
        return n;
    }

  private:
    struct release_guard {
        consumer* c;
        std::uint32_t stride;
        ~release_guard() {
            c->_tail += stride;
            c->_ctl->tail.store(c->_tail, std::memory_order_release);
        }
    };

    ring_ctl* _ctl = nullptr;
    std::byte* _data = nullptr;
    std::uint64_t _mask = 0;
    std::uint64_t _tail = 0;
};

}  // namespace am::transport::ring
