// SPDX-License-Identifier: MIT
// The check of an incoming message, am::detail::check_incoming (src/core/incoming.hpp), field by
// field and bound by bound: each test puts a value just inside a bound (accepted) and just
// outside it (refused, for that reason). Messages and the signature table are heap arrays of
// exactly their size, so a read past either is an error under the address sanitizer.
#include "core/incoming.hpp"
#include "core/handler_table.hpp"
#include "core/wire.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

using am::category;
using am::detail::fixed_bytes;
using am::detail::incoming;
using am::detail::incoming_limits;
using am::detail::inline_payload;
using am::detail::long_trailer;
using am::detail::signature_of;
using am::detail::wire_header;

constexpr int me = 1;  // the source the transport reports
constexpr std::size_t max_medium = 100;
constexpr std::size_t segment_size = 4096;

constexpr auto short_am = static_cast<std::uint8_t>(category::short_am);
constexpr auto medium = static_cast<std::uint8_t>(category::medium);
constexpr auto long_am = static_cast<std::uint8_t>(category::long_am);

/// The handlers the tests know: index -> category and argument count.
enum : std::uint16_t { h_short0, h_short2, h_medium1, h_long1, h_long0, handler_count };

class check_incoming : public ::testing::Test {
  protected:
    check_incoming()
        : _sigs(new std::uint16_t[handler_count]{
              signature_of(category::short_am, 0), signature_of(category::short_am, 2),
              signature_of(category::medium, 1), signature_of(category::long_am, 1),
              signature_of(category::long_am, 0)}),
          _segment(segment_size) {
        lim = {handler_count, _sigs.get(), max_medium, std::span<std::byte>(_segment)};
    }

    /// A message: header, `nargs` argument slots, `extra` bytes.
    static std::vector<std::byte> message(std::uint16_t handler, std::uint8_t kind, unsigned nargs,
                                          std::size_t extra = 0, std::uint32_t source = me) {
        const wire_header h{handler, kind, static_cast<std::uint8_t>(nargs), source};
        std::vector<std::byte> m(fixed_bytes(nargs) + extra);
        std::memcpy(m.data(), &h, sizeof h);
        for (std::size_t i = sizeof h; i < m.size(); ++i) m[i] = static_cast<std::byte>(i);
        return m;
    }
    /// A long message with its trailer {offset, length}, and `inline_bytes` bytes after it.
    static std::vector<std::byte> long_message(std::uint16_t handler, std::uint8_t kind,
                                               unsigned nargs, std::uint64_t offset,
                                               std::uint64_t length, std::size_t inline_bytes = 0) {
        std::vector<std::byte> m = message(handler, kind, nargs, long_trailer + inline_bytes);
        const std::uint64_t trailer[2] = {offset, length};
        std::memcpy(m.data() + fixed_bytes(nargs), trailer, sizeof trailer);
        return m;
    }

    /// Checks `m` (exactly its bytes, in a heap block of that size) from `source`.
    const char* check(const std::vector<std::byte>& m, int source = me) {
        _copy.reset(new std::byte[m.size() == 0 ? 1 : m.size()]);
        if (!m.empty()) std::memcpy(_copy.get(), m.data(), m.size());
        out = incoming{};
        return am::detail::check_incoming(_copy.get(), m.size(), source, lim, out);
    }
    /// Whether `m` is refused for a reason that mentions `why`.
    ::testing::AssertionResult refused(const std::vector<std::byte>& m, const std::string& why,
                                       int source = me) {
        const char* reason = check(m, source);
        if (reason == nullptr) return ::testing::AssertionFailure() << "accepted";
        if (std::string(reason).find(why) == std::string::npos) {
            return ::testing::AssertionFailure()
                   << "refused for \"" << reason << "\", not \"" << why << "\"";
        }
        return ::testing::AssertionSuccess();
    }
    ::testing::AssertionResult accepted(const std::vector<std::byte>& m, int source = me) {
        const char* reason = check(m, source);
        if (reason != nullptr) return ::testing::AssertionFailure() << "refused: " << reason;
        return ::testing::AssertionSuccess();
    }
    const std::byte* msg() const { return _copy.get(); }
    std::byte* segment() { return _segment.data(); }

    incoming_limits lim;
    incoming out;

  private:
    std::unique_ptr<std::uint16_t[]> _sigs;
    std::vector<std::byte> _segment;
    std::unique_ptr<std::byte[]> _copy;
};

TEST_F(check_incoming, shorter_than_a_header) {
    const std::vector<std::byte> whole = message(h_short0, short_am, 0);
    ASSERT_EQ(whole.size(), sizeof(wire_header));
    for (std::size_t len = 0; len < sizeof(wire_header); ++len) {
        EXPECT_TRUE(refused(std::vector<std::byte>(whole.begin(), whole.begin() + len),
                            "shorter than a header"))
            << len << " bytes";
    }
    EXPECT_TRUE(accepted(whole));
}

TEST_F(check_incoming, handler_index_bounds) {
    EXPECT_TRUE(accepted(long_message(h_long0, long_am, 0, 0, 0)));  // the last entry
    // One past the last, with the signature that entry would have: refused without reading
    // the table past its end.
    EXPECT_TRUE(refused(message(handler_count, short_am, 0), "unknown handler"));
    EXPECT_TRUE(refused(message(0xffff, short_am, 0), "unknown handler"));
    lim.count = 0;
    EXPECT_TRUE(refused(message(h_short0, short_am, 0), "unknown handler"));
    // A table with fewer entries than the signatures array: its count is the bound.
    lim.count = h_long1;
    EXPECT_TRUE(refused(message(h_long1, long_am, 1, long_trailer), "unknown handler"));
    EXPECT_TRUE(accepted(message(h_medium1, medium, 1)));
}

TEST_F(check_incoming, category_must_match) {
    EXPECT_TRUE(refused(message(h_short0, medium, 0), "category"));
    EXPECT_TRUE(refused(message(h_short0, long_am, 0, long_trailer), "category"));
    EXPECT_TRUE(refused(message(h_medium1, short_am, 1), "category"));
    EXPECT_TRUE(refused(message(h_medium1, long_am, 1, long_trailer), "category"));
    EXPECT_TRUE(refused(message(h_long1, medium, 1, long_trailer), "category"));
    EXPECT_TRUE(refused(message(h_long1, 3, 1, long_trailer), "category"));  // no such category
    EXPECT_TRUE(refused(message(h_long1, long_am | 0x40, 1, long_trailer), "category"));
}

TEST_F(check_incoming, argument_count_must_match) {
    EXPECT_TRUE(accepted(message(h_short2, short_am, 2)));
    EXPECT_TRUE(refused(message(h_short2, short_am, 1), "argument count"));
    EXPECT_TRUE(refused(message(h_short2, short_am, 3), "argument count"));
    EXPECT_TRUE(refused(message(h_short0, short_am, 16), "argument count"));
    EXPECT_TRUE(refused(message(h_medium1, medium, 0), "argument count"));
    EXPECT_TRUE(refused(message(h_long1, long_am, 2, long_trailer), "argument count"));
}

TEST_F(check_incoming, source_must_be_the_sender) {
    EXPECT_TRUE(accepted(message(h_short0, short_am, 0, 0, me), me));
    EXPECT_TRUE(refused(message(h_short0, short_am, 0, 0, me + 1), "source"));
    EXPECT_TRUE(refused(message(h_short0, short_am, 0, 0, me - 1), "source"));
    EXPECT_TRUE(refused(message(h_short0, short_am, 0, 0, 0x80000001u), "source"));
    EXPECT_TRUE(accepted(message(h_short0, short_am, 0, 0, 7), 7));
    EXPECT_TRUE(refused(message(h_short0, short_am, 0, 0, 7), "source", 6));
}

TEST_F(check_incoming, short_message) {
    ASSERT_TRUE(accepted(message(h_short2, short_am, 2)));
    EXPECT_EQ(out.handler, h_short2);
    EXPECT_EQ(out.kind, category::short_am);
    EXPECT_EQ(out.payload, nullptr);
    EXPECT_EQ(out.length, 0u);
    EXPECT_EQ(out.inline_bytes, nullptr);
    EXPECT_TRUE(refused(message(h_short2, short_am, 2, 1), "short message with a payload"));
    EXPECT_TRUE(refused(message(h_short2, short_am, 2, 8), "short message with a payload"));
    // Arguments missing: shorter than its header and slots.
    std::vector<std::byte> cut = message(h_short2, short_am, 2);
    cut.resize(cut.size() - 1);
    EXPECT_TRUE(refused(cut, "short message"));
}

TEST_F(check_incoming, medium_payload_bounds) {
    const std::size_t fixed = fixed_bytes(1);
    ASSERT_TRUE(accepted(message(h_medium1, medium, 1, 0)));
    EXPECT_EQ(out.kind, category::medium);
    EXPECT_EQ(out.length, 0u);
    EXPECT_EQ(out.payload, msg() + fixed);

    ASSERT_TRUE(accepted(message(h_medium1, medium, 1, max_medium)));  // exactly max_medium
    EXPECT_EQ(out.handler, h_medium1);
    EXPECT_EQ(out.payload, msg() + fixed);
    EXPECT_EQ(out.length, max_medium);
    EXPECT_EQ(out.inline_bytes, nullptr);

    EXPECT_TRUE(refused(message(h_medium1, medium, 1, max_medium + 1), "max_medium"));
    std::vector<std::byte> cut = message(h_medium1, medium, 1);
    cut.resize(cut.size() - 1);  // its argument slot cut short
    EXPECT_TRUE(refused(cut, "medium"));
    lim.medium = 0;
    EXPECT_TRUE(accepted(message(h_medium1, medium, 1, 0)));
    EXPECT_TRUE(refused(message(h_medium1, medium, 1, 1), "max_medium"));
}

TEST_F(check_incoming, long_range_inside_segment) {
    ASSERT_TRUE(accepted(long_message(h_long1, long_am, 1, 100, 200)));
    EXPECT_EQ(out.handler, h_long1);
    EXPECT_EQ(out.kind, category::long_am);
    EXPECT_EQ(out.payload, segment() + 100);
    EXPECT_EQ(out.length, 200u);
    EXPECT_EQ(out.inline_bytes, nullptr);

    // Ending exactly at the segment's end, and one byte over.
    ASSERT_TRUE(accepted(long_message(h_long1, long_am, 1, segment_size - 200, 200)));
    EXPECT_EQ(out.payload + out.length, segment() + segment_size);
    EXPECT_TRUE(
        refused(long_message(h_long1, long_am, 1, segment_size - 199, 200), "outside the segment"));
    EXPECT_TRUE(accepted(long_message(h_long1, long_am, 1, 0, segment_size)));
    EXPECT_TRUE(
        refused(long_message(h_long1, long_am, 1, 0, segment_size + 1), "outside the segment"));
    // Empty payloads: anywhere up to the end, not past it.
    EXPECT_TRUE(accepted(long_message(h_long0, long_am, 0, segment_size, 0)));
    EXPECT_TRUE(
        refused(long_message(h_long0, long_am, 0, segment_size + 1, 0), "outside the segment"));
}

// offset + length wrapping around 2^64 would land inside the segment: refused.
TEST_F(check_incoming, long_offset_overflow) {
    constexpr std::uint64_t max = ~std::uint64_t{0};
    EXPECT_TRUE(refused(long_message(h_long1, long_am, 1, 16, max - 8), "outside the segment"));
    EXPECT_TRUE(refused(long_message(h_long1, long_am, 1, max, 1), "outside the segment"));
    EXPECT_TRUE(refused(long_message(h_long1, long_am, 1, max - 15, 32), "outside the segment"));
    EXPECT_TRUE(refused(long_message(h_long1, long_am, 1, 8, max), "outside the segment"));
}

TEST_F(check_incoming, long_message_length) {
    // The trailer cut short, and a byte after it (not inline): both refused.
    std::vector<std::byte> cut = long_message(h_long1, long_am, 1, 0, 8);
    cut.resize(cut.size() - 1);
    EXPECT_TRUE(refused(cut, "bad long length"));
    EXPECT_TRUE(refused(long_message(h_long1, long_am, 1, 0, 8, 1), "bad long length"));
    EXPECT_TRUE(refused(long_message(h_long1, long_am, 1, 0, 8, 8), "bad long length"));
    EXPECT_TRUE(refused(message(h_long0, long_am, 0), "bad long length"));
}

// A long payload that travelled inline (kind | inline_payload): accepted when exactly its
// bytes follow the trailer and its range is in the segment; the bytes to copy are named.
TEST_F(check_incoming, inline_long_valid) {
    const auto kind = static_cast<std::uint8_t>(long_am | inline_payload);
    ASSERT_TRUE(accepted(long_message(h_long1, kind, 1, 64, 10, 10)));
    EXPECT_EQ(out.handler, h_long1);
    EXPECT_EQ(out.kind, category::long_am);
    EXPECT_EQ(out.payload, segment() + 64);
    EXPECT_EQ(out.length, 10u);
    EXPECT_EQ(out.inline_bytes, msg() + fixed_bytes(1) + long_trailer);

    ASSERT_TRUE(accepted(long_message(h_long0, kind, 0, segment_size - 5, 5, 5)));
    EXPECT_EQ(out.inline_bytes, msg() + fixed_bytes(0) + long_trailer);
    ASSERT_TRUE(accepted(long_message(h_long0, kind, 0, 0, 0, 0)));
    EXPECT_EQ(out.length, 0u);
}

TEST_F(check_incoming, inline_long_length_mismatch) {
    const auto kind = static_cast<std::uint8_t>(long_am | inline_payload);
    EXPECT_TRUE(refused(long_message(h_long1, kind, 1, 64, 10, 9), "bad inline long length"));
    EXPECT_TRUE(refused(long_message(h_long1, kind, 1, 64, 10, 11), "bad inline long length"));
    EXPECT_TRUE(refused(long_message(h_long1, kind, 1, 64, 10, 0), "bad inline long length"));
    std::vector<std::byte> cut = long_message(h_long1, kind, 1, 64, 0);
    cut.resize(cut.size() - 1);  // the trailer cut short
    EXPECT_TRUE(refused(cut, "bad inline long message"));
    // Inline or not, the range must be in the segment.
    EXPECT_TRUE(
        refused(long_message(h_long0, kind, 0, segment_size - 4, 5, 5), "outside the segment"));
}

TEST_F(check_incoming, inline_flag_only_on_long_handlers) {
    EXPECT_TRUE(refused(message(h_short0, short_am | inline_payload, 0), "category"));
    EXPECT_TRUE(refused(message(h_medium1, medium | inline_payload, 1), "category"));
    // The flag on a long category, but the handler takes medium messages.
    EXPECT_TRUE(refused(long_message(h_medium1, long_am | inline_payload, 1, 0, 0), "category"));
    // A long handler, but the argument count differs.
    EXPECT_TRUE(refused(long_message(h_long1, long_am | inline_payload, 0, 0, 0), "category"));
    EXPECT_TRUE(
        refused(long_message(handler_count, long_am | inline_payload, 0, 0, 0), "unknown handler"));
}

}  // namespace
