// SPDX-License-Identifier: MIT
// segment_layout: the blocks and extents of contiguous, strided and indexed layouts, their
// element counts, the span of n segments, and their conversion to bytes.
#include "window/window_support.hpp"

namespace {

using am::segment_layout;

std::vector<std::pair<std::size_t, std::size_t>> blocks_of(const segment_layout& l) {
    std::vector<std::pair<std::size_t, std::size_t>> v;
    for (const auto& b : l.blocks) v.emplace_back(b.offset, b.count);
    return v;
}

using blocks = std::vector<std::pair<std::size_t, std::size_t>>;

TEST(window_layout, contiguous) {
    const segment_layout l = segment_layout::contiguous(5);
    EXPECT_EQ(blocks_of(l), (blocks{{0, 5}}));
    EXPECT_EQ(l.extent, 5u);
    EXPECT_EQ(l.elements(), 5u);
    EXPECT_EQ(l.span_of(0), 0u);
    EXPECT_EQ(l.span_of(1), 5u);
    EXPECT_EQ(l.span_of(7), 35u);
}

TEST(window_layout, strided) {
    // 3 blocks of 2 elements, 5 apart: elements 0 1, 5 6, 10 11; extent 15.
    const segment_layout l = segment_layout::strided(3, 2, 5);
    EXPECT_EQ(blocks_of(l), (blocks{{0, 2}, {5, 2}, {10, 2}}));
    EXPECT_EQ(l.extent, 15u);
    EXPECT_EQ(l.elements(), 6u);
    EXPECT_EQ(l.span_of(0), 0u);
    // Segment i starts at 15·i; the last one's final element is at 15·(n-1) + 11.
    EXPECT_EQ(l.span_of(1), 12u);
    EXPECT_EQ(l.span_of(4), 57u);
    // An explicit extent (tighter than count × stride, and wider).
    const segment_layout tight = segment_layout::strided(3, 2, 5, 12);
    EXPECT_EQ(tight.extent, 12u);
    EXPECT_EQ(tight.span_of(2), 24u);
    const segment_layout wide = segment_layout::strided(2, 1, 2, 10);
    EXPECT_EQ(blocks_of(wide), (blocks{{0, 1}, {2, 1}}));
    EXPECT_EQ(wide.elements(), 2u);
    EXPECT_EQ(wide.span_of(3), 23u);
    // A stride equal to the block length is contiguous.
    const segment_layout dense = segment_layout::strided(4, 3, 3);
    EXPECT_EQ(dense.extent, 12u);
    EXPECT_EQ(dense.span_of(2), 24u);
}

TEST(window_layout, indexed) {
    const segment_layout l = segment_layout::indexed({{1, 2}, {4, 3}, {9, 1}});
    EXPECT_EQ(blocks_of(l), (blocks{{1, 2}, {4, 3}, {9, 1}}));
    EXPECT_EQ(l.extent, 10u) << "the end of the last block";
    EXPECT_EQ(l.elements(), 6u);
    EXPECT_EQ(l.span_of(0), 0u);
    EXPECT_EQ(l.span_of(1), 10u);
    EXPECT_EQ(l.span_of(3), 30u);
    // Blocks out of order with an explicit extent: packed in the order given.
    const segment_layout shuffled = segment_layout::indexed({{6, 2}, {0, 3}}, 11);
    EXPECT_EQ(blocks_of(shuffled), (blocks{{6, 2}, {0, 3}}));
    EXPECT_EQ(shuffled.extent, 11u);
    EXPECT_EQ(shuffled.elements(), 5u);
    EXPECT_EQ(shuffled.span_of(2), 19u);
}

TEST(window_layout, to_bytes) {
    const auto b = am::detail::to_bytes(segment_layout::strided(2, 3, 4), 8);
    ASSERT_EQ(b.blocks.size(), 2u);
    EXPECT_EQ(b.blocks[0].offset, 0u);
    EXPECT_EQ(b.blocks[0].count, 24u);
    EXPECT_EQ(b.blocks[1].offset, 32u);
    EXPECT_EQ(b.blocks[1].count, 24u);
    EXPECT_EQ(b.extent, 64u);
}

// The test's own packing agrees with the layouts' element counts and spans.
TEST(window_layout, random_layouts_agree_with_the_tests_packing) {
    am_test::win::rng r{42};
    for (int i = 0; i < 500; ++i) {
        const segment_layout l = am_test::win::random_layout(r, 1, 12);
        SCOPED_TRACE(i);
        EXPECT_EQ(l.elements(), am_test::win::elements_of(l));
        const std::size_t n = r.between(1, 5);
        EXPECT_EQ(l.span_of(n), (n - 1) * l.extent + am_test::win::blocks_end(l));
        EXPECT_GE(l.extent, l.blocks.empty() ? 0 : 1);
    }
}

}  // namespace
