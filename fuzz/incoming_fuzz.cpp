// SPDX-License-Identifier: MIT
// Fuzz target: the core's check of an incoming message, am::detail::check_incoming
// (src/core/incoming.hpp). The input describes the receiving rank, then the message:
//
//   byte 0              handlers in the table: b % (max_handlers + 1)
//   2 bytes per handler its signature: kind b % 3, argument count b % (max_args + 1)
//   1 byte              max_medium: b * 32
//   2 bytes             segment size: u16 % (max_segment + 1)
//   1 byte              the sender's rank
//   the rest            the message
//
// The message and the segment are heap blocks of exactly their size, so AddressSanitizer
// catches any read or write outside them. When the check accepts a message, the target
// asserts what check_incoming promises (payload inside the message or the segment, length
// consistent with the category, handler in the table, signature equal to the handler's,
// source field equal to the sender) and then uses the result as context_impl::deliver does
// (copies an inline long payload into the segment, reads a medium payload), so a wrong
// "valid" answer crashes.
#include "core/incoming.hpp"
#include "core/wire.hpp"
#include "fuzz_check.hpp"

#include <am/handler.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

namespace {

constexpr std::size_t max_handlers = 4;
constexpr std::size_t max_segment = 4096;

struct reader {
    const std::uint8_t* p;
    std::size_t left;
    bool take(std::size_t n, const std::uint8_t*& out) {
        if (left < n) return false;
        out = p;
        p += n;
        left -= n;
        return true;
    }
};

void check_accepted(const std::byte* msg, std::size_t len, int source,
                    const am::detail::incoming_limits& lim, const am::detail::incoming& in) {
    using am::detail::fixed_bytes;
    using am::detail::inline_payload;
    using am::detail::long_trailer;
    FUZZ_CHECK(len >= sizeof(am::detail::wire_header));
    std::uint64_t header = 0;
    std::memcpy(&header, msg, sizeof header);
    FUZZ_CHECK((header & 0xffff) == in.handler);
    FUZZ_CHECK(in.handler < lim.count);
    FUZZ_CHECK((header >> 32) == static_cast<std::uint32_t>(source));
    const auto sig = static_cast<std::uint16_t>(header >> 16);
    const std::uint16_t want = lim.signatures[in.handler];
    const bool inline_long = sig != want;
    if (inline_long) {
        FUZZ_CHECK((sig & 0xff) == (static_cast<unsigned>(am::category::long_am) | inline_payload));
        FUZZ_CHECK(static_cast<std::uint16_t>(sig & ~std::uint16_t{inline_payload}) == want);
    }
    FUZZ_CHECK(static_cast<unsigned>(in.kind) == (want & 0xffu));
    const std::size_t fixed = fixed_bytes(want >> 8);
    FUZZ_CHECK(len >= fixed);  // the arguments the handler reads are in the message
    switch (in.kind) {
        case am::category::short_am:
            FUZZ_CHECK(!inline_long);
            FUZZ_CHECK(len == fixed && in.payload == nullptr && in.length == 0);
            FUZZ_CHECK(in.inline_bytes == nullptr);
            return;
        case am::category::medium: {
            FUZZ_CHECK(!inline_long);
            FUZZ_CHECK(in.payload == msg + fixed && in.length == len - fixed);
            FUZZ_CHECK(in.length <= lim.medium && in.inline_bytes == nullptr);
            // The handler reads the payload (memcpy: checked by AddressSanitizer).
            auto copy = std::make_unique<std::byte[]>(in.length);
            if (in.length != 0) std::memcpy(copy.get(), in.payload, in.length);
            return;
        }
        case am::category::long_am: {
            FUZZ_CHECK(len >= fixed + long_trailer);
            std::uint64_t trailer[2];
            std::memcpy(trailer, msg + fixed, sizeof trailer);
            FUZZ_CHECK(in.payload == lim.seg.data() + trailer[0]);
            FUZZ_CHECK(in.length == trailer[1]);
            FUZZ_CHECK(trailer[0] <= lim.seg.size());
            FUZZ_CHECK(in.length <= lim.seg.size() - trailer[0]);
            if (inline_long) {
                FUZZ_CHECK(in.inline_bytes == msg + fixed + long_trailer);
                FUZZ_CHECK(len == fixed + long_trailer + in.length);
                if (in.length != 0) std::memcpy(in.payload, in.inline_bytes, in.length);
            } else {
                FUZZ_CHECK(in.inline_bytes == nullptr && len == fixed + long_trailer);
                if (in.length != 0) std::memset(in.payload, 0x5a, in.length);  // as a put does
            }
            return;
        }
    }
    FUZZ_FAIL("accepted a message of no known category");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    reader r{data, size};
    const std::uint8_t* b = nullptr;
    if (!r.take(1, b)) return 0;
    const std::size_t handlers = b[0] % (max_handlers + 1);
    std::uint16_t signatures[max_handlers] = {};
    for (std::size_t h = 0; h < handlers; ++h) {
        if (!r.take(2, b)) return 0;
        const unsigned kind = b[0] % 3u, nargs = b[1] % (am::max_args + 1);
        signatures[h] = static_cast<std::uint16_t>(kind | nargs << 8);
    }
    if (!r.take(4, b)) return 0;
    const std::size_t max_medium = std::size_t{b[0]} * 32;
    const std::size_t segment_bytes =
        (std::size_t{b[1]} | std::size_t{b[2]} << 8) % (max_segment + 1);
    const int source = b[3];

    // Exactly sized copies: one byte past either is outside a heap block.
    const std::size_t len = r.left;
    auto msg = std::make_unique<std::byte[]>(len);
    if (len != 0) std::memcpy(msg.get(), r.p, len);
    auto segment = std::make_unique<std::byte[]>(segment_bytes);

    const am::detail::incoming_limits lim{static_cast<std::uint32_t>(handlers), signatures,
                                          max_medium,
                                          std::span<std::byte>(segment.get(), segment_bytes)};
    am::detail::incoming in;
    const char* why = am::detail::check_incoming(msg.get(), len, source, lim, in);
    if (why == nullptr) {
        check_accepted(msg.get(), len, source, lim, in);
    } else {
        FUZZ_CHECK(why[0] != '\0');
    }
    return 0;
}
