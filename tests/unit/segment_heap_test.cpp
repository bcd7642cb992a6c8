// SPDX-License-Identifier: MIT
// The segment heap (src/rma/segment_heap.hpp) against a model: the live blocks, from which the
// free gaps follow. The heap hands out blocks of 16-byte granules by first fit over free
// blocks ordered by offset, merging neighbours on release; so an allocation succeeds exactly
// when some gap has room at an aligned offset, and returns the first such offset.
#include "rma/segment_heap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <vector>

namespace {

using am::detail::segment_heap;

constexpr std::uint64_t granule = 16;

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) {
    return (v + a - 1) / a * a;
}

/// The blocks the heap should have handed out: offset -> bytes reserved (whole granules).
struct model {
    std::uint64_t usable;  // the capacity in whole granules
    std::map<std::uint64_t, std::uint64_t> live;

    [[nodiscard]] std::uint64_t used() const {
        std::uint64_t n = 0;
        for (const auto& [off, size] : live) n += size;
        return n;
    }
    /// Where first fit puts `bytes` aligned to `align`, if anywhere.
    [[nodiscard]] std::optional<std::uint64_t> first_fit(std::size_t bytes,
                                                         std::size_t align) const {
        const std::uint64_t need = round_up(bytes == 0 ? 1 : bytes, granule);
        const std::uint64_t a = std::max<std::uint64_t>(align, granule);
        std::uint64_t gap = 0;  // start of the current free gap
        const auto fits = [&](std::uint64_t begin,
                              std::uint64_t end) -> std::optional<std::uint64_t> {
            const std::uint64_t at = round_up(begin, a);
            if (at <= end && end - at >= need) return at;
            return std::nullopt;
        };
        for (const auto& [off, size] : live) {
            if (auto at = fits(gap, off)) return at;
            gap = off + size;
        }
        return fits(gap, usable);
    }
};

/// Allocates through the heap and checks the result against the model.
void allocate_checked(segment_heap& h, model& m, std::size_t bytes, std::size_t align) {
    const std::optional<std::uint64_t> expect = m.first_fit(bytes, align);
    const std::optional<std::uint64_t> got = h.allocate(bytes, align);
    ASSERT_EQ(got, expect) << "allocate(" << bytes << ", " << align << ")";
    if (!got) return;
    const std::uint64_t need = round_up(bytes == 0 ? 1 : bytes, granule);
    EXPECT_EQ(*got % std::max<std::uint64_t>(align, granule), 0u);
    EXPECT_LE(*got + need, h.capacity());
    // No overlap with the live blocks around it.
    const auto next = m.live.lower_bound(*got);
    if (next != m.live.end()) {
        EXPECT_LE(*got + need, next->first);
    }
    if (next != m.live.begin()) {
        const auto prev = std::prev(next);
        EXPECT_LE(prev->first + prev->second, *got);
    }
    m.live.emplace(*got, need);
}

TEST(segment_heap, fresh_heap_is_one_free_block) {
    segment_heap h(4096);
    EXPECT_EQ(h.capacity(), 4096u);
    EXPECT_EQ(h.free_bytes(), 4096u);
    EXPECT_EQ(h.allocate(4096, 16), std::optional<std::uint64_t>(0));
    EXPECT_EQ(h.free_bytes(), 0u);
    EXPECT_EQ(h.allocate(1, 16), std::nullopt);
}

// Capacity in whole granules: the bytes past the last granule are never handed out.
TEST(segment_heap, partial_granule_unused) {
    segment_heap h(100);
    EXPECT_EQ(h.free_bytes(), 96u);
    EXPECT_EQ(h.allocate(97, 16), std::nullopt);
    EXPECT_EQ(h.allocate(96, 16), std::optional<std::uint64_t>(0));

    segment_heap tiny(15);
    EXPECT_EQ(tiny.free_bytes(), 0u);
    EXPECT_EQ(tiny.allocate(1, 1), std::nullopt);

    segment_heap empty(0);
    EXPECT_EQ(empty.allocate(0, 16), std::nullopt);
}

// Sizes round up to granules; a zero-byte request still gets a block of its own.
TEST(segment_heap, sizes_round_to_granules) {
    segment_heap h(1024);
    const auto a = h.allocate(0, 1);
    const auto b = h.allocate(1, 1);
    const auto c = h.allocate(17, 8);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(*a, 0u);
    EXPECT_EQ(*b, 16u);
    EXPECT_EQ(*c, 32u);
    EXPECT_EQ(h.free_bytes(), 1024u - 64u);
}

// Sizes so large that rounding them up would wrap are refused, not handed out as tiny blocks.
TEST(segment_heap, huge_sizes_refused) {
    segment_heap h(1 << 20);
    EXPECT_EQ(h.allocate(SIZE_MAX, 16), std::nullopt);
    EXPECT_EQ(h.allocate(SIZE_MAX - 7, 16), std::nullopt);
    EXPECT_EQ(h.allocate((1 << 20) + 1, 16), std::nullopt);
    EXPECT_EQ(h.free_bytes(), std::size_t{1} << 20);
}

TEST(segment_heap, alignment_leaves_a_free_head) {
    segment_heap h(8192);
    ASSERT_EQ(h.allocate(16, 16), std::optional<std::uint64_t>(0));
    const auto big = h.allocate(100, 4096);
    ASSERT_EQ(big, std::optional<std::uint64_t>(4096));
    // The gap [16, 4096) before the aligned block is still free, and first fit uses it.
    EXPECT_EQ(h.allocate(32, 16), std::optional<std::uint64_t>(16));
    EXPECT_EQ(h.free_bytes(), 8192u - 16 - 112 - 32);
}

// Releasing what was not allocated is refused and changes nothing.
TEST(segment_heap, release_of_bad_offset_refused) {
    segment_heap h(4096);
    const auto a = h.allocate(64, 16);
    const auto b = h.allocate(64, 16);
    ASSERT_TRUE(a && b);
    const std::size_t free_before = h.free_bytes();
    EXPECT_FALSE(h.release(*a + 16)) << "inside a block";
    EXPECT_FALSE(h.release(*b + 64)) << "a free offset";
    EXPECT_FALSE(h.release(4096)) << "the end of the segment";
    EXPECT_FALSE(h.release(~std::uint64_t{0})) << "far outside";
    EXPECT_EQ(h.free_bytes(), free_before);
    EXPECT_TRUE(h.release(*a));
    EXPECT_FALSE(h.release(*a)) << "released twice";
    EXPECT_EQ(h.free_bytes(), free_before + 64);
    // The heap still works: the freed block is reused first.
    EXPECT_EQ(h.allocate(64, 16), a);
}

// Random allocations and releases with random sizes and alignments (fixed seed): every result
// is the model's first fit, no two live blocks overlap, everything is inside the segment, the
// free bytes add up; at the end, everything released, one block of the whole size fits again.
TEST(segment_heap, random_against_model) {
    for (const std::size_t cap : {std::size_t{4096}, std::size_t{65536} + 40}) {
        segment_heap h(cap);
        model m{cap / granule * granule, {}};
        std::mt19937_64 rng(777 + cap);
        std::size_t refused = 0;
        for (int step = 0; step < 20000; ++step) {
            if (m.live.empty() || rng() % 5 < 3) {
                const std::size_t bytes = rng() % 8 == 0 ? rng() % (cap / 4) : rng() % 200;
                const std::size_t align = std::size_t{1} << (rng() % 13);  // 1 .. 4096
                const std::size_t before = m.live.size();
                ASSERT_NO_FATAL_FAILURE(allocate_checked(h, m, bytes, align)) << "step " << step;
                if (m.live.size() == before) ++refused;
            } else {
                auto it = m.live.begin();
                std::advance(it, static_cast<std::ptrdiff_t>(rng() % m.live.size()));
                ASSERT_TRUE(h.release(it->first)) << "step " << step;
                m.live.erase(it);
            }
            ASSERT_EQ(h.free_bytes(), m.usable - m.used()) << "step " << step;
        }
        EXPECT_GT(refused, 100u) << "the heap was seldom full";
        // Release the rest in random order: the free blocks merge back into one.
        std::vector<std::uint64_t> rest;
        for (const auto& [off, size] : m.live) rest.push_back(off);
        std::shuffle(rest.begin(), rest.end(), rng);
        for (const std::uint64_t off : rest) ASSERT_TRUE(h.release(off));
        EXPECT_EQ(h.free_bytes(), m.usable);
        EXPECT_EQ(h.allocate(m.usable, 16), std::optional<std::uint64_t>(0));
    }
}

// Coalescing in every order of neighbours: release the middle block last, first, between.
TEST(segment_heap, neighbours_merge_on_release) {
    for (const auto& order : std::vector<std::vector<int>>{
             {0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}) {
        segment_heap h(48);
        std::uint64_t blocks[3];
        for (auto& b : blocks) {
            const auto at = h.allocate(16, 16);
            ASSERT_TRUE(at);
            b = *at;
        }
        for (const int k : order) ASSERT_TRUE(h.release(blocks[k]));
        EXPECT_EQ(h.allocate(48, 16), std::optional<std::uint64_t>(0))
            << "order " << order[0] << order[1] << order[2];
    }
}

// Two threads allocate and release at once (the rank and a progress thread may): no granule is
// ever in two live blocks.
TEST(segment_heap, concurrent_blocks_disjoint) {
    constexpr std::size_t cap = 1 << 16;
    segment_heap h(cap);
    std::vector<std::atomic<int>> owner(cap / granule);
    std::atomic<int> overlaps{0};
    const auto work = [&](int id) {
        std::mt19937_64 rng(static_cast<unsigned>(id));
        std::vector<std::pair<std::uint64_t, std::uint64_t>> mine;
        for (int step = 0; step < 5000; ++step) {
            if (mine.empty() || rng() % 2 == 0) {
                const std::size_t bytes = 1 + rng() % 512;
                const auto at = h.allocate(bytes, std::size_t{16} << (rng() % 3));
                if (!at) continue;
                const std::uint64_t end = *at + round_up(bytes, granule);
                for (std::uint64_t g = *at / granule; g < end / granule; ++g) {
                    int expected = 0;
                    if (!owner[g].compare_exchange_strong(expected, id)) ++overlaps;
                }
                mine.emplace_back(*at, end);
            } else {
                const auto [at, end] = mine.back();
                mine.pop_back();
                for (std::uint64_t g = at / granule; g < end / granule; ++g) owner[g].store(0);
                if (!h.release(at)) ++overlaps;
            }
        }
        for (const auto& [at, end] : mine) {
            for (std::uint64_t g = at / granule; g < end / granule; ++g) owner[g].store(0);
            if (!h.release(at)) ++overlaps;
        }
    };
    std::thread other(work, 2);
    work(1);
    other.join();
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(h.free_bytes(), cap);
}

}  // namespace
