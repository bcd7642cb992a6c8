// SPDX-License-Identifier: MIT
// Global memory (Split-C): global_ptr values, allocation in the registered segment, exchange
// of base addresses, local() and to_global().
#include "rma/rma_support.hpp"

#include <algorithm>
#include <random>

namespace {

using am_test::rma_test;

// ------------------------------------------------------------------------ global_ptr values

struct triple {
    std::uint64_t a, b, c;
};

TEST(global_ptr, value_semantics) {
    constexpr am::global_ptr<triple> null;
    static_assert(null.is_null() && !null && null.rank() == -1 && null.offset() == 0);
    constexpr am::global_ptr<triple> p(3, 48);
    static_assert(!p.is_null() && static_cast<bool>(p));
    static_assert((p + 2).offset() == 48 + 2 * sizeof(triple) && (p + 2).rank() == 3);
    static_assert((p + 2) - p == 2 && p - (p + 5) == -5);
    static_assert((p + 3 - 1).offset() == 48 + 2 * sizeof(triple));
    static_assert(p.cast<std::byte>().offset() == 48 && (p.cast<std::byte>() + 1).offset() == 49);
    static_assert(p.cast<void>() + 7 == am::global_ptr<void>(3, 55));
    static_assert(p < p + 1 && p == am::global_ptr<triple>(3, 48));
    static_assert(am::global_ptr<triple>(2, 4096) < p, "ordered by rank first");

    am::global_ptr<triple> q = p;
    ++q;
    EXPECT_EQ(q.offset(), 48 + sizeof(triple));
    q -= 1;
    EXPECT_EQ(q, p);
    q += 10;
    EXPECT_EQ(q - p, 10);
    EXPECT_EQ(q.rank(), 3);
}

// ------------------------------------------------------------------------------- allocation

class segment : public rma_test {};

struct alignas(64) wide {
    std::byte bytes[64];
};

struct block {
    std::uint64_t offset, bytes;
    std::size_t align;
};

// Blocks of several types and sizes: aligned (to at least 16 bytes), inside the segment,
// disjoint; local() of an own pointer is the segment address; to_global() inverts it.
AM_RMA_TEST(segment, allocate_local_to_global) {
    const int me = ctx.rank();
    const std::span<std::byte> seg = ctx.segment();
    std::vector<block> blocks;
    auto record = [&]<class T>(am::global_ptr<T> p, std::size_t n) {
        EXPECT_EQ(p.rank(), me);
        const std::size_t align = alignof(T) > 16 ? alignof(T) : 16;
        blocks.push_back({p.offset(), n * sizeof(T), align});
        T* local = ctx.local(p);
        ASSERT_NE(local, nullptr);
        EXPECT_EQ(reinterpret_cast<std::byte*>(local), seg.data() + p.offset());
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(local) % align, 0u);
        EXPECT_EQ(ctx.to_global(local), p);
        if (n > 1) {
            EXPECT_EQ(ctx.to_global(local + (n - 1)), p + static_cast<std::ptrdiff_t>(n - 1));
        }
    };
    for (int round = 0; round < 3; ++round) {
        record(ctx.allocate<char>(), 1);
        record(ctx.allocate<std::byte>(3), 3);
        record(ctx.allocate<double>(5), 5);
        record(ctx.allocate<triple>(7), 7);
        record(ctx.allocate<wide>(2), 2);
        record(ctx.allocate<std::byte>(100000), 100000);
    }
    std::ranges::sort(blocks, {}, &block::offset);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        EXPECT_EQ(blocks[i].offset % blocks[i].align, 0u) << "block " << i;
        EXPECT_LE(blocks[i].offset + blocks[i].bytes, seg.size()) << "block " << i;
        if (i > 0) {
            EXPECT_GE(blocks[i].offset, blocks[i - 1].offset + blocks[i - 1].bytes)
                << "blocks " << i - 1 << " and " << i << " overlap";
        }
    }
    // Whole-segment conversions: first and last byte.
    EXPECT_EQ(ctx.to_global(seg.data()), am::global_ptr<std::byte>(me, 0));
    EXPECT_EQ(ctx.to_global(seg.data() + seg.size() - 1),
              am::global_ptr<std::byte>(me, seg.size() - 1));
    EXPECT_EQ(ctx.to_global(reinterpret_cast<std::uint64_t*>(seg.data() + seg.size() - 8)),
              am::global_ptr<std::uint64_t>(me, seg.size() - 8));
    // Not mapped anywhere: a null pointer.
    EXPECT_EQ(ctx.local(am::global_ptr<int>{}), nullptr);
}

// Every rank allocates, writes a pattern through local(), and exchanges its pointer. With the
// automatic path every rank sees the block of every rank that shares its memory through
// local() (threads and shm map all segments; mpi those of the ranks of its node); otherwise
// (another node, or AM_RMA=am) local() of another rank's pointer is null (docs/splitc.md) and
// a blocking get reads the block instead.
AM_RMA_TEST(segment, exchange_and_peer_local) {
    const int n = ctx.size(), me = ctx.rank();
    const std::size_t len = 1000 + 37 * static_cast<std::size_t>(me % 8);  // differs per rank
    (void)ctx.allocate<std::byte>(48);  // so that the blocks of interest need not sit at 0
    const auto mine = ctx.allocate<std::byte>(len);
    am_test::fill_pattern({ctx.local(mine), len}, 7000 + static_cast<std::uint64_t>(me));
    const auto counts = ctx.allocate<std::uint64_t>();
    *ctx.local(counts) = len;
    const std::vector<am::global_ptr<std::byte>> all = ctx.exchange(mine);
    const std::vector<am::global_ptr<std::uint64_t>> lens = ctx.exchange(counts);
    ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
    ASSERT_EQ(lens.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(all[static_cast<std::size_t>(me)], mine);
    ctx.barrier();
    for (int r = 0; r < n; ++r) {
        const auto p = all[static_cast<std::size_t>(r)];
        const auto q = lens[static_cast<std::size_t>(r)];
        EXPECT_EQ(p.rank(), r);
        EXPECT_EQ(q.rank(), r);
        const std::size_t want_len = 1000 + 37 * static_cast<std::size_t>(r % 8);
        const auto want = am_test::pattern(want_len, 7000 + static_cast<std::uint64_t>(r));
        if (r == me || (path == am::rma_path::automatic && am_test::same_node(me, r))) {
            const std::byte* at = ctx.local(p);
            const std::uint64_t* their_len = ctx.local(q);
            ASSERT_NE(at, nullptr) << "rank " << r << "'s segment is not mapped here";
            ASSERT_NE(their_len, nullptr);
            EXPECT_EQ(*their_len, want_len);
            AM_EXPECT_BYTES(std::span(at, want_len), want)
                << " in rank " << r << "'s block seen from rank " << me;
        } else {
            EXPECT_EQ(ctx.local(p), nullptr) << "local() of rank " << r << " from rank " << me
                                             << " with AM_RMA=" << am_test::rma_path_name(path)
                                             << " (on another node, or through messages)";
            std::uint64_t their_len = 0;
            ctx.get(&their_len, q, 1);
            EXPECT_EQ(their_len, want_len);
            std::vector<std::byte> got(want_len);
            ctx.get(got.data(), p, want_len);
            AM_EXPECT_BYTES(got, want) << " in rank " << r << "'s block read from rank " << me;
        }
    }
    // A null pointer is exchanged as null.
    const auto nulls =
        ctx.exchange(me % 2 == 0 ? am::global_ptr<double>{} : ctx.allocate<double>());
    for (int r = 0; r < n; ++r) {
        EXPECT_EQ(nulls[static_cast<std::size_t>(r)].is_null(), r % 2 == 0) << "rank " << r;
    }
    ctx.barrier();  // nobody reads this rank's memory any more
}

// Deallocated memory is reused: allocating 60% of the segment ten times only works when each
// block went back.
AM_RMA_TEST(segment, deallocate_reuses) {
    const std::size_t big = ctx.segment().size() / 10 * 6;
    for (int i = 0; i < 10; ++i) {
        const auto p = ctx.allocate<std::byte>(big);
        ASSERT_EQ(p.rank(), ctx.rank());
        ctx.local(p)[big - 1] = std::byte{1};
        ctx.deallocate(p);
    }
}

// Free neighbours merge: fill the segment with small blocks, release them in a shuffled order,
// and the space they covered is one block again.
AM_RMA_TEST(segment, deallocate_merges) {
    const std::size_t blk = ctx.segment().size() / 64;
    std::vector<am::global_ptr<std::byte>> blocks;
    for (;;) {
        try {
            blocks.push_back(ctx.allocate<std::byte>(blk));
        } catch (const am::error& e) {
            EXPECT_EQ(e.code(), am::errc::no_memory) << e.what();
            break;
        }
        ASSERT_LE(blocks.size(), 64u) << "more blocks than fit in the segment";
    }
    ASSERT_GE(blocks.size(), 32u) << "less than half the segment is allocatable";
    std::mt19937_64 rng(static_cast<std::uint64_t>(ctx.rank()));
    std::ranges::shuffle(blocks, rng);
    for (const auto& p : blocks) ctx.deallocate(p);
    const auto whole = ctx.allocate<std::byte>(blocks.size() * blk);
    EXPECT_EQ(whole.rank(), ctx.rank());
    ctx.deallocate(whole);
}

AM_INSTANTIATE(segment, am_test::all_params());

}  // namespace
