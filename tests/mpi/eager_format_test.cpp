// SPDX-License-Identifier: MIT
// The mpi transport's reading of an arrived eager message (src/transport/mpi/eager_format.hpp):
// packs of several core messages are accepted with their records in order, and refused whole
// when any record is malformed; the fixed-size messages keep their limits.
#include "transport/mpi/eager_format.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace mpi = am::transport::mpi;

namespace {

/// A pack of records of the given lengths (record i filled with byte i + 1), each padded.
std::vector<std::byte> make_pack(const std::vector<std::uint32_t>& lens) {
    std::vector<std::byte> p;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        const std::uint32_t w[2] = {lens[i], 0};
        const std::size_t at = p.size();
        p.resize(at + mpi::record_header + mpi::padded(lens[i]), std::byte{0});
        std::memcpy(p.data() + at, w, sizeof w);
        std::memset(p.data() + at + mpi::record_header, static_cast<int>(i + 1), lens[i]);
    }
    return p;
}

const char* parse(int tag, const std::vector<std::byte>& p, mpi::eager_message& m) {
    return mpi::parse_eager(tag, p.data(), p.size(), 1 << 20, m);
}

TEST(mpi_eager, pack_of_mixed_sizes_is_read_in_order) {
    const std::vector<std::uint32_t> lens = {16, 0, 3, 8, 1000, 17};
    const std::vector<std::byte> p = make_pack(lens);
    mpi::eager_message m;
    ASSERT_EQ(parse(mpi::tag_msg + 1, p, m), nullptr);
    EXPECT_EQ(m.kind, mpi::eager_kind::message);
    EXPECT_EQ(m.lane, 1u);
    ASSERT_EQ(m.count, lens.size());
    std::size_t at = 0;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        const mpi::pack_record r = mpi::record_at(m.bytes, at);
        ASSERT_EQ(r.message.size(), lens[i]) << "record " << i;
        for (const std::byte b : r.message) ASSERT_EQ(b, static_cast<std::byte>(i + 1));
        at = r.next;
    }
    EXPECT_EQ(at, p.size());
}

TEST(mpi_eager, full_pack_and_last_padding_cut_are_accepted) {
    mpi::eager_message m;
    EXPECT_EQ(parse(mpi::tag_msg, make_pack({mpi::max_eager}), m), nullptr);
    EXPECT_EQ(m.count, 1u);
    std::vector<std::byte> p = make_pack({8, 5});
    p.resize(p.size() - 3);  // the last record's padding
    EXPECT_EQ(parse(mpi::tag_msg, p, m), nullptr);
    EXPECT_EQ(m.count, 2u);
}

TEST(mpi_eager, malformed_packs_are_refused) {
    mpi::eager_message m;
    EXPECT_STREQ(parse(mpi::tag_msg, {}, m), "empty pack");
    std::vector<std::byte> p = make_pack({16, 100});
    p.resize(p.size() - 100);  // the second record's bytes are missing
    EXPECT_STREQ(parse(mpi::tag_msg, p, m), "pack record longer than the pack");
    p = make_pack({16, 8});
    p.resize(p.size() - 12);  // the second header cut off
    EXPECT_STREQ(parse(mpi::tag_msg, p, m), "pack record header cut off");
    p = make_pack({16, 8});
    p[mpi::record_header + 16 + 4] = std::byte{1};  // the second header's reserved word
    EXPECT_STREQ(parse(mpi::tag_msg, p, m), "pack record header with a non-zero reserved word");
    p = make_pack({mpi::max_eager});
    p.push_back(std::byte{0});
    EXPECT_STREQ(parse(mpi::tag_msg, p, m), "longer than a receive slot");
}

TEST(mpi_eager, announcements_and_credits_keep_their_limits) {
    mpi::eager_message m;
    std::uint64_t n = mpi::max_eager;
    std::vector<std::byte> b(8);
    std::memcpy(b.data(), &n, 8);
    EXPECT_STREQ(parse(mpi::tag_big, b, m), "announced large message fits a pack");
    n = mpi::max_eager + 1;
    std::memcpy(b.data(), &n, 8);
    EXPECT_EQ(parse(mpi::tag_big + 1, b, m), nullptr);
    EXPECT_EQ(m.big_bytes, n);
    const std::uint32_t w[2] = {1, mpi::credits_per_peer + 1};
    std::memcpy(b.data(), w, 8);
    EXPECT_STREQ(parse(mpi::tag_credit, b, m), "credit return out of range");
    EXPECT_STREQ(parse(6, b, m), "unknown tag");
}

}  // namespace
