// SPDX-License-Identifier: MIT
// A single-producer single-consumer ring of variable-sized records in memory that both sides
// can address (one process's heap, or a POSIX shared-memory mapping). Positions are 64-bit
// byte counters that never wrap; the data area is a power of two. A record is an 8-byte
// header {u32 stride | skip bit, u32 length} followed by the message, padded to 8 bytes.
// A record never straddles the end of the data area: the producer writes a skip record instead.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace am::transport::ring {

/// The shared part of a ring: producer and consumer positions on their own cache lines.
struct ring_ctl {
    alignas(64) std::atomic<std::uint64_t> head;  // bytes published by the producer
    alignas(64) std::atomic<std::uint64_t> tail;  // bytes released by the consumer
};
static_assert(sizeof(ring_ctl) == 128);

inline constexpr std::uint32_t skip_bit = 0x80000000u;
inline constexpr std::size_t record_header = 8;

/// Largest message a ring of `capacity` bytes carries: a record plus the skip in front of it
/// must fit in an empty ring.
constexpr std::size_t max_message(std::size_t capacity) noexcept {
    return capacity / 2 - record_header;
}

/// The producer's view of one ring, private to the sending rank.
class producer {
public:
    producer() = default;
    producer(ring_ctl* ctl, std::byte* data, std::size_t capacity) noexcept
        : _ctl(ctl), _data(data), _mask(capacity - 1) {}

    /// Room for a message of `len` bytes, or nullptr. Must be followed by `commit(len)`.
    std::byte* reserve(std::size_t len) noexcept {
        const std::uint64_t stride = (len + record_header + 7) & ~std::uint64_t{7};
        const std::uint64_t pos = _head & _mask;
        const std::uint64_t to_end = _mask + 1 - pos;
        const std::uint64_t need = stride <= to_end ? stride : to_end + stride;
        if (_head + need - _cached_tail > _mask + 1) {
            _cached_tail = _ctl->tail.load(std::memory_order_acquire);
            if (_head + need - _cached_tail > _mask + 1) return nullptr;
        }
        if (stride > to_end) {  // pad to the end; the consumer skips it
            store_u32(_data + pos, static_cast<std::uint32_t>(to_end) | skip_bit);
            _head += to_end;
        }
        _stride = stride;
        return _data + (_head & _mask) + record_header;
    }

    /// Publishes the message written into the last `reserve`.
    void commit(std::size_t len) noexcept {
        std::byte* rec = _data + (_head & _mask);
        store_u32(rec, static_cast<std::uint32_t>(_stride));
        store_u32(rec + 4, static_cast<std::uint32_t>(len));
        _head += _stride;
        _ctl->head.store(_head, std::memory_order_release);
    }

private:
    static void store_u32(std::byte* p, std::uint32_t v) noexcept { std::memcpy(p, &v, 4); }

    ring_ctl* _ctl = nullptr;
    std::byte* _data = nullptr;
    std::uint64_t _mask = 0;
    std::uint64_t _head = 0;
    std::uint64_t _cached_tail = 0;
    std::uint64_t _stride = 0;
};

/// The consumer's view of one ring, private to the receiving rank.
class consumer {
public:
    consumer() = default;
    consumer(ring_ctl* ctl, std::byte* data, std::size_t capacity) noexcept
        : _ctl(ctl), _data(data), _mask(capacity - 1) {}

    /// True when the producer has published records not yet consumed.
    [[nodiscard]] bool ready() const noexcept {
        return _ctl->head.load(std::memory_order_acquire) != _tail;
    }

    /// Calls `fn(msg, len)` for every record published when called; each record is released
    /// after `fn` returns (or throws), so `msg` stays valid during the call. Returns the count.
    template <class Fn>
    std::size_t drain(Fn&& fn) {
        const std::uint64_t head = _ctl->head.load(std::memory_order_acquire);
        std::size_t n = 0;
        while (_tail != head) {
            std::byte* rec = _data + (_tail & _mask);
            std::uint32_t stride, len;
            std::memcpy(&stride, rec, 4);
            if (stride & skip_bit) {
                _tail += stride & ~skip_bit;
                continue;
            }
            std::memcpy(&len, rec + 4, 4);
            release_guard guard{this, stride};
            fn(rec + record_header, static_cast<std::size_t>(len));
            ++n;
        }
        _ctl->tail.store(_tail, std::memory_order_release);
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
