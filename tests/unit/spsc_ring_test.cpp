// SPDX-License-Identifier: MIT
// The SPSC ring (src/transport/ring/spsc_ring.hpp) against a model: a queue of the records in
// flight. The ring has room for a record exactly when the strides of the records in flight
// plus its own fit in the capacity; records come out in order with the bytes that went in;
// a record that starts near the end runs on into the pad.
#include "transport/ring/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

namespace ring = am::transport::ring;

/// A ring in heap memory of exactly its data bytes (ring plus pad), so that a record running
/// past the pad is an out-of-bounds write for the address sanitizer.
struct test_ring {
    explicit test_ring(std::size_t cap) : capacity(cap), data(ring::data_bytes(cap)) {}
    ring::producer producer() { return {&ctl, data.data(), capacity}; }
    ring::consumer consumer() { return {&ctl, data.data(), capacity}; }
    std::size_t offset_of(const std::byte* p) const {
        return static_cast<std::size_t>(p - data.data());
    }

    std::size_t capacity;
    ring::ring_ctl ctl{};
    std::vector<std::byte> data;
};

std::byte pattern(std::uint64_t seq, std::size_t i) {
    return static_cast<std::byte>(seq * 131 + i * 7 + 1);
}

/// The message `seq` of `len` bytes: a recognisable pattern.
std::vector<std::byte> message(std::uint64_t seq, std::size_t len) {
    std::vector<std::byte> m(len);
    for (std::size_t i = 0; i < len; ++i) m[i] = pattern(seq, i);
    return m;
}

/// Writes `m` into the ring; false when it has no room.
bool push(ring::producer& p, const std::vector<std::byte>& m) {
    std::byte* at = p.reserve(m.size());
    if (at == nullptr) return false;
    if (!m.empty()) std::memcpy(at, m.data(), m.size());
    p.commit(at, m.size());
    return true;
}

std::vector<std::vector<std::byte>> pop_all(ring::consumer& c, std::size_t limit = SIZE_MAX) {
    std::vector<std::vector<std::byte>> out;
    c.drain([&](std::byte* msg, std::size_t len) { out.emplace_back(msg, msg + len); }, limit);
    return out;
}

/// The model: records in flight and the ring bytes they hold.
struct model {
    std::size_t capacity;
    std::deque<std::vector<std::byte>> records;
    std::uint64_t held = 0;

    [[nodiscard]] bool has_room(std::size_t len) const {
        return held + ring::stride_of(len) <= capacity;
    }
    void push(std::vector<std::byte> m) {
        held += ring::stride_of(m.size());
        records.push_back(std::move(m));
    }
    void pop() {
        held -= ring::stride_of(records.front().size());
        records.pop_front();
    }
};

TEST(spsc_ring, sizes) {
    EXPECT_EQ(ring::data_bytes(1024), 1536u);
    EXPECT_EQ(ring::max_message(1024), 504u);
    EXPECT_EQ(ring::stride_of(0), 8u);
    EXPECT_EQ(ring::stride_of(1), 16u);
    EXPECT_EQ(ring::stride_of(8), 16u);
    EXPECT_EQ(ring::stride_of(9), 24u);
    // The largest message's record is exactly the pad.
    EXPECT_EQ(ring::stride_of(ring::max_message(1024)), 512u);
}

TEST(spsc_ring, empty_ring_is_not_ready) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    EXPECT_TRUE(p.attached());
    EXPECT_FALSE(c.ready());
    EXPECT_EQ(c.drain([](std::byte*, std::size_t) { FAIL() << "record in an empty ring"; }), 0u);
    // Reserved but not committed: still nothing to read.
    ASSERT_NE(p.reserve(16), nullptr);
    EXPECT_FALSE(c.ready());
}

TEST(spsc_ring, record_header_is_stride_and_length) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ASSERT_TRUE(push(p, message(1, 13)));
    std::uint32_t words[2];
    std::memcpy(words, r.data.data(), 8);
    EXPECT_EQ(words[0], 24u);
    EXPECT_EQ(words[1], 13u);
    EXPECT_EQ(r.ctl.head.load(), 24u);
    EXPECT_EQ(r.ctl.tail.load(), 0u);
}

TEST(spsc_ring, zero_length_records) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(push(p, {}));
    std::size_t seen = 0;
    EXPECT_EQ(c.drain([&](std::byte*, std::size_t len) {
        EXPECT_EQ(len, 0u);
        ++seen;
    }),
              3u);
    EXPECT_EQ(seen, 3u);
    EXPECT_EQ(r.ctl.tail.load(), 24u);
}

// Full ring: reserve refuses exactly when the records in flight and the new one would exceed
// the capacity, and accepts again as soon as the consumer releases enough.
TEST(spsc_ring, full_ring_refuses_exactly_at_capacity) {
    for (const std::size_t len : {std::size_t{0}, std::size_t{8}, std::size_t{24}, std::size_t{120},
                                  ring::max_message(1024)}) {
        test_ring r(1024);
        ring::producer p = r.producer();
        ring::consumer c = r.consumer();
        const std::size_t fit = 1024 / ring::stride_of(len);
        std::uint64_t seq = 0;
        for (std::size_t i = 0; i < fit; ++i) {
            ASSERT_TRUE(push(p, message(seq++, len))) << "len " << len << " record " << i;
        }
        EXPECT_EQ(p.reserve(len), nullptr) << "len " << len;
        // What is left over (less than a stride) takes an empty record if it has 8 bytes.
        EXPECT_EQ(p.reserve(0) != nullptr, 1024 - fit * ring::stride_of(len) >= 8) << len;
        // One record released: room for exactly one more of the same size.
        ASSERT_EQ(pop_all(c, 1).size(), 1u);
        ASSERT_TRUE(push(p, message(seq++, len))) << "len " << len;
        EXPECT_EQ(p.reserve(len), nullptr) << "len " << len;
        EXPECT_EQ(pop_all(c).size(), fit);
    }
}

// Room is counted in strides: a ring holding capacity - 16 bytes takes a record of stride 16
// (length 1..8) but not one of stride 24.
TEST(spsc_ring, room_is_counted_in_strides) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    std::uint64_t seq = 0;
    ASSERT_TRUE(push(p, message(seq++, ring::max_message(1024))));  // 512
    ASSERT_TRUE(push(p, message(seq++, 488)));                      // 496: 1008 held
    EXPECT_EQ(p.reserve(9), nullptr);
    EXPECT_NE(p.reserve(8), nullptr);
    ASSERT_TRUE(push(p, message(seq++, 1)));  // 1024 held
    EXPECT_EQ(p.reserve(0), nullptr);
    EXPECT_EQ(pop_all(c).size(), 3u);
    EXPECT_EQ(r.ctl.head.load(), 1024u);
    EXPECT_EQ(r.ctl.tail.load(), 1024u);
}

// A record that starts in the last bytes of the ring runs on into the pad: one contiguous
// message, no wrap; the next record starts at the ring offset past its logical end.
TEST(spsc_ring, record_near_the_end_runs_into_the_pad) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    // Move both positions to 1016: the last 8-byte slot of the ring.
    ASSERT_TRUE(push(p, message(0, 504)));  // stride 512
    ASSERT_TRUE(push(p, message(1, 496)));  // stride 504
    ASSERT_EQ(pop_all(c).size(), 2u);
    ASSERT_EQ(r.ctl.tail.load(), 1016u);

    const std::vector<std::byte> big = message(2, ring::max_message(1024));
    std::byte* at = p.reserve(big.size());
    ASSERT_NE(at, nullptr);
    EXPECT_EQ(r.offset_of(at), 1024u) << "the message starts right after its header, in the pad";
    std::memcpy(at, big.data(), big.size());
    p.commit(at, big.size());
    EXPECT_EQ(r.offset_of(at) + big.size(), 1528u);  // within the 1536 data bytes

    // The next record goes where the logical position wraps to: 1016 + 512 - 1024 = 504.
    const std::vector<std::byte> next = message(3, 100);
    std::byte* at2 = p.reserve(next.size());
    ASSERT_NE(at2, nullptr);
    EXPECT_EQ(r.offset_of(at2), 504u + ring::record_header);
    std::memcpy(at2, next.data(), next.size());
    p.commit(at2, next.size());

    const auto got = pop_all(c);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], big);
    EXPECT_EQ(got[1], next);
}

// Positions go around the ring many times; every record comes out whole and in order.
TEST(spsc_ring, wraps_around_many_times) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    std::uint64_t seq = 0, expected = 0;
    for (int round = 0; round < 2000; ++round) {
        const std::size_t len = 40 + static_cast<std::size_t>(round % 7) * 53;  // strides vary
        ASSERT_TRUE(push(p, message(seq, len)));
        ++seq;
        c.drain([&](std::byte* msg, std::size_t l) {
            EXPECT_EQ(std::vector<std::byte>(msg, msg + l), message(expected, l));
            ++expected;
        });
    }
    EXPECT_EQ(expected, seq);
    EXPECT_GT(r.ctl.head.load(), 100u * 1024u);
    EXPECT_EQ(r.ctl.head.load(), r.ctl.tail.load());
}

// Random record sizes and random drains against the model (fixed seed): reserve succeeds
// exactly when the model has room, records come out in order with their bytes.
TEST(spsc_ring, random_sizes_against_model) {
    for (const std::size_t cap : {std::size_t{1024}, std::size_t{4096}}) {
        test_ring r(cap);
        ring::producer p = r.producer();
        ring::consumer c = r.consumer();
        model m{cap, {}, 0};
        std::mt19937_64 rng(12345 + cap);
        const std::size_t max = ring::max_message(cap);
        std::uint64_t seq = 0;
        std::size_t refused = 0, pushed = 0;
        for (int step = 0; step < 100000; ++step) {
            if (rng() % 3 != 0) {
                // Mostly small messages, sometimes up to the largest.
                const std::size_t len = rng() % 4 == 0 ? rng() % (max + 1) : rng() % 64;
                std::vector<std::byte> msg = message(seq++, len);
                const bool room = m.has_room(len);
                ASSERT_EQ(push(p, msg), room)
                    << "step " << step << " len " << len << " held " << m.held << " of " << cap;
                if (room) {
                    m.push(std::move(msg));
                    ++pushed;
                } else {
                    ++refused;
                }
            } else {
                const std::size_t limit = rng() % 5;  // 0 .. 4 records
                const std::size_t n = c.drain(
                    [&](std::byte* msg, std::size_t len) {
                        ASSERT_FALSE(m.records.empty());
                        ASSERT_EQ(std::vector<std::byte>(msg, msg + len), m.records.front())
                            << "step " << step;
                        m.pop();
                    },
                    limit);
                EXPECT_LE(n, limit);
            }
            ASSERT_EQ(c.ready(), !m.records.empty());
            ASSERT_EQ(r.ctl.head.load() - r.ctl.tail.load(), m.held);
        }
        EXPECT_GT(refused, 1000u) << "the ring was seldom full";
        EXPECT_GT(pushed, 10000u);
        while (!m.records.empty()) {
            ASSERT_EQ(pop_all(c, 1).front(), m.records.front());
            m.pop();
        }
    }
}

// A record is released even when the callback throws: the next drain sees the next record.
TEST(spsc_ring, record_released_when_callback_throws) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    ASSERT_TRUE(push(p, message(0, 10)));
    ASSERT_TRUE(push(p, message(1, 20)));
    EXPECT_THROW(c.drain([](std::byte*, std::size_t) { throw std::runtime_error("handler"); }),
                 std::runtime_error);
    const auto rest = pop_all(c);
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0], message(1, 20));
}

// Views start at the ring's shared positions: new views over a used ring carry on.
TEST(spsc_ring, new_views_carry_on_at_shared_positions) {
    test_ring r(1024);  // 16 records of 50 bytes (stride 64)
    {
        ring::producer p = r.producer();
        ring::consumer c = r.consumer();
        for (std::uint64_t i = 0; i < 12; ++i) ASSERT_TRUE(push(p, message(i, 50)));
        ASSERT_EQ(pop_all(c, 8).size(), 8u);
    }
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    for (std::uint64_t i = 12; i < 24; ++i) ASSERT_TRUE(push(p, message(i, 50)));
    EXPECT_EQ(p.reserve(50), nullptr) << "the new producer sees the records still in flight";
    const auto got = pop_all(c);
    ASSERT_EQ(got.size(), 16u);
    for (std::uint64_t i = 0; i < 16; ++i) EXPECT_EQ(got[i], message(8 + i, 50)) << i;
}

TEST(spsc_ring, unattached_producer_reserves_nothing) {
    ring::producer p;
    EXPECT_FALSE(p.attached());
    EXPECT_EQ(p.reserve(0), nullptr);
    EXPECT_EQ(p.reserve(100), nullptr);
}

// The length of message `seq` in the two-thread run: known to both sides.
std::size_t length_of(std::uint64_t seq, std::size_t max) {
    std::uint64_t x = seq * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return x % 8 == 0 ? static_cast<std::size_t>(x >> 8) % (max + 1)
                      : static_cast<std::size_t>(x >> 8) % 48;
}

// One producer thread, one consumer thread, a small ring that is full most of the time:
// every record arrives once, in order, with its bytes.
TEST(spsc_ring, two_threads_keep_order_and_contents) {
    constexpr std::size_t cap = 2048;
    constexpr std::uint64_t count = 200000;
    test_ring r(cap);
    const std::size_t max = ring::max_message(cap);
    std::thread producer([&] {
        ring::producer p = r.producer();
        for (std::uint64_t seq = 0; seq < count; ++seq) {
            const std::size_t len = length_of(seq, max);
            std::byte* at;
            while ((at = p.reserve(len)) == nullptr) std::this_thread::yield();
            for (std::size_t i = 0; i < len; ++i) at[i] = pattern(seq, i);
            p.commit(at, len);
        }
    });
    ring::consumer c = r.consumer();
    std::uint64_t next = 0;
    std::size_t bad = 0;
    while (next < count) {
        if (!c.ready()) {
            std::this_thread::yield();
            continue;
        }
        c.drain([&](std::byte* msg, std::size_t len) {
            if (len != length_of(next, max)) ++bad;
            for (std::size_t i = 0; i < len && bad == 0; ++i) {
                if (msg[i] != pattern(next, i)) ++bad;
            }
            ++next;
        });
    }
    producer.join();
    EXPECT_EQ(bad, 0u) << "record " << next - 1 << " has the wrong length or bytes";
    EXPECT_EQ(next, count);
    EXPECT_FALSE(c.ready());
}

}  // namespace
