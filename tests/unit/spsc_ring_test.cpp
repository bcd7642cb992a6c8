// SPDX-License-Identifier: MIT
// The SPSC ring (src/transport/ring/spsc_ring.hpp) against a model: the positions of the
// records in flight. The ring has room for a record exactly when its padded stride and the next
// record's header word fit between the consumer's tail and a ring's worth past it; records come
// out in order with the bytes that went in; a record that starts near the end runs on into the
// pad; a record of up to `line_fill` bytes lies in one cache line. The data area starts filled
// with non-zero garbage (but for the first header word), so a consumer that took stale bytes
// for a header would fail every test.
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
    explicit test_ring(std::size_t cap)
        : capacity(cap), data(ring::data_bytes(cap), std::byte{0x5a}) {
        std::memset(data.data(), 0, ring::record_header);
    }
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

/// The model: records in flight and the positions they span.
struct ring_model {
    std::size_t capacity;
    std::deque<std::vector<std::byte>> records;
    std::uint64_t head = 0, tail = 0;

    [[nodiscard]] bool has_room(std::size_t len) const {
        return ring::next_position(head, len) + ring::record_header - tail <= capacity;
    }
    void push(std::vector<std::byte> m) {
        head = ring::next_position(head, m.size());
        records.push_back(std::move(m));
    }
    void pop() {
        tail = ring::next_position(tail, records.front().size());
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
    // Line padding: a record leaving fewer than line_fill (32) bytes in its line ends the line.
    EXPECT_EQ(ring::next_position(0, 16), 24u);     // 40 bytes left: no padding
    EXPECT_EQ(ring::next_position(24, 16), 64u);    // would leave 16: padded
    EXPECT_EQ(ring::next_position(24, 8), 64u);     // 40 would leave 24: padded
    EXPECT_EQ(ring::next_position(0, 56), 64u);     // exactly one line
    EXPECT_EQ(ring::next_position(8, 100), 128u);   // 120 would leave 8
    EXPECT_EQ(ring::next_position(960, 24), 992u);  // leaves exactly 32: no padding
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
    // The next record's header word is zero before this one is published (the garbage that
    // was there is gone), and the bytes after it are untouched.
    std::uint64_t next;
    std::memcpy(&next, r.data.data() + 24, 8);
    EXPECT_EQ(next, 0u);
    EXPECT_EQ(r.data[32], std::byte{0x5a});
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

// Full ring: reserve refuses exactly when the record (padded) and the next header word would
// not fit in a ring's worth past the tail, and accepts again as soon as the consumer releases
// enough.
TEST(spsc_ring, full_ring_refuses_exactly_at_capacity) {
    for (const std::size_t len : {std::size_t{0}, std::size_t{8}, std::size_t{24}, std::size_t{120},
                                  ring::max_message(1024)}) {
        test_ring r(1024);
        ring::producer p = r.producer();
        ring::consumer c = r.consumer();
        ring_model m{1024, {}, 0, 0};
        std::uint64_t seq = 0;
        while (m.has_room(len)) {
            ASSERT_TRUE(push(p, message(seq, len))) << "len " << len << " record " << seq;
            m.push(message(seq++, len));
        }
        EXPECT_GE(m.head + ring::stride_of(len) + 2 * ring::line_bytes, 1024u)
            << "len " << len << ": a ring's worth";
        EXPECT_EQ(p.reserve(len), nullptr) << "len " << len;
        // Records released one by one: room again exactly when the model says so.
        do {
            ASSERT_EQ(pop_all(c, 1).size(), 1u);
            m.pop();
            EXPECT_EQ(p.reserve(len) != nullptr, m.has_room(len)) << "len " << len;
        } while (!m.has_room(len));
        ASSERT_TRUE(push(p, message(seq, len))) << "len " << len;
        m.push(message(seq++, len));
        EXPECT_EQ(p.reserve(len) != nullptr, m.has_room(len)) << "len " << len;
        EXPECT_EQ(pop_all(c).size(), m.records.size());
    }
}

// Room counts the line padding and the next header word: with 928 bytes in flight in a ring of
// 1024, a record of stride 64 fits (it ends at 992, 32 bytes left in its line), one of stride 72
// does not (it would end at 1000 and be padded to 1024, leaving no room for the next header).
TEST(spsc_ring, room_counts_padding_and_next_header) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    std::uint64_t seq = 0;
    ASSERT_TRUE(push(p, message(seq++, ring::max_message(1024))));  // 512
    ASSERT_TRUE(push(p, message(seq++, 408)));                      // 416: 928 in flight
    EXPECT_EQ(r.ctl.head.load(), 928u);
    EXPECT_EQ(p.reserve(57), nullptr);
    EXPECT_NE(p.reserve(56), nullptr);
    ASSERT_TRUE(push(p, message(seq++, 56)));  // ends at 992
    EXPECT_EQ(r.ctl.head.load(), 992u);
    // Even an empty record would now be padded to 1024 and leave no room for the next header.
    EXPECT_EQ(p.reserve(0), nullptr);
    EXPECT_EQ(pop_all(c).size(), 3u);
    EXPECT_EQ(r.ctl.tail.load(), 992u);
    EXPECT_NE(p.reserve(0), nullptr);
}

// A record of up to line_fill bytes never straddles two cache lines, whatever came before it.
TEST(spsc_ring, small_records_lie_in_one_line) {
    test_ring r(4096);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20000; ++i) {
        const std::size_t len = rng() % 3 == 0 ? rng() % 200 : rng() % (ring::line_fill - 7);
        std::byte* at = p.reserve(len);
        if (at == nullptr) {
            pop_all(c);
            at = p.reserve(len);
        }
        ASSERT_NE(at, nullptr);
        const std::size_t start = r.offset_of(at) - ring::record_header;
        if (ring::stride_of(len) <= ring::line_fill) {
            ASSERT_LE(start % ring::line_bytes + ring::stride_of(len), ring::line_bytes)
                << "record " << i << " of " << len << " bytes at " << start;
        }
        p.commit(at, len);
    }
}

// A record that starts in the last line of the ring runs on into the pad: one contiguous
// message, no wrap; the next record starts at the ring offset past its logical end.
TEST(spsc_ring, record_near_the_end_runs_into_the_pad) {
    test_ring r(1024);
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    // Move both positions to 992, in the last line of the ring.
    ASSERT_TRUE(push(p, message(0, 504)));  // stride 512
    ASSERT_TRUE(push(p, message(1, 472)));  // stride 480: 992, 32 bytes left in the line
    ASSERT_EQ(pop_all(c).size(), 2u);
    ASSERT_EQ(r.ctl.tail.load(), 992u);

    const std::vector<std::byte> big = message(2, ring::max_message(1024));
    std::byte* at = p.reserve(big.size());
    ASSERT_NE(at, nullptr);
    EXPECT_EQ(r.offset_of(at), 1000u) << "the message starts after its header and runs on";
    std::memcpy(at, big.data(), big.size());
    p.commit(at, big.size());
    EXPECT_EQ(r.offset_of(at) + big.size(), 1504u);  // within the 1536 data bytes

    // The next record goes where the logical position wraps to: 992 + 512 - 1024 = 480.
    const std::vector<std::byte> next = message(3, 100);
    std::byte* at2 = p.reserve(next.size());
    ASSERT_NE(at2, nullptr);
    EXPECT_EQ(r.offset_of(at2), 480u + ring::record_header);
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
        ring_model m{cap, {}, 0, 0};
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
                ASSERT_EQ(push(p, msg), room) << "step " << step << " len " << len << " in flight "
                                              << m.head - m.tail << " of " << cap;
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
            ASSERT_EQ(r.ctl.head.load(), m.head);
            ASSERT_EQ(r.ctl.tail.load(), m.tail);
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
    test_ring r(1024);  // 15 records of 50 bytes (stride 64) and the next header word
    {
        ring::producer p = r.producer();
        ring::consumer c = r.consumer();
        for (std::uint64_t i = 0; i < 12; ++i) ASSERT_TRUE(push(p, message(i, 50)));
        ASSERT_EQ(pop_all(c, 8).size(), 8u);
    }
    ring::producer p = r.producer();
    ring::consumer c = r.consumer();
    for (std::uint64_t i = 12; i < 23; ++i) ASSERT_TRUE(push(p, message(i, 50)));
    EXPECT_EQ(p.reserve(50), nullptr) << "the new producer sees the records still in flight";
    const auto got = pop_all(c);
    ASSERT_EQ(got.size(), 15u);
    for (std::uint64_t i = 0; i < 15; ++i) EXPECT_EQ(got[i], message(8 + i, 50)) << i;
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
