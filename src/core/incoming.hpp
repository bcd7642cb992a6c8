// SPDX-License-Identifier: MIT
// The check of an incoming message before its handler runs: the pure part of dispatch
// (context_impl::deliver), kept apart so that it is unit-tested (tests/unit) and fuzzed
// (fuzz/) on its own. Nothing here touches the rank's state.
#pragma once

#include "wire.hpp"

#include <am/handler.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace am::detail {

/// What the table of handlers and the segment allow an incoming message to be.
struct incoming_limits {
    std::uint32_t handlers = 0;                 // entries [0, handlers) exist
    const std::uint16_t* signatures = nullptr;  // their wire signatures (kind | nargs << 8)
    std::size_t max_medium = 0;                 // largest medium payload
    std::span<std::byte> segment;               // where long payloads land
};

/// A message that passed the check.
struct incoming {
    std::uint32_t handler = 0;
    category kind = category::short_am;
    std::byte* payload = nullptr;  // medium: in the message; long: in the segment
    std::size_t length = 0;
    // A long message whose payload travelled inline (inline_payload): the bytes to copy to
    // `payload` before the handler runs; null otherwise.
    const std::byte* inline_bytes = nullptr;
};

/// Checks the message `msg` of `len` bytes from rank `source`: header present, handler index
/// in the table, category and argument count equal to the handler's, source field equal to
/// the sender, length consistent with the category, medium payload ≤ max_medium, long range
/// inside the segment. Returns null and fills `out` when the message may be dispatched, else
/// why it may not (a static string).
[[gnu::always_inline]] inline const char* check_incoming(const std::byte* msg, std::size_t len,
                                                         int source, const incoming_limits& lim,
                                                         incoming& out) noexcept {
    std::uint64_t header;
    if (len < sizeof header) [[unlikely]]
        return "shorter than a header";
    std::memcpy(&header, msg, sizeof header);
    const auto handler = static_cast<std::uint32_t>(header & 0xffff);
    auto sig = static_cast<std::uint16_t>(header >> 16);
    bool inline_long = false;
    if (handler >= lim.handlers || lim.signatures[handler] != sig) [[unlikely]] {
        if (handler >= lim.handlers) return "unknown handler index";
        const auto plain = static_cast<std::uint16_t>(sig & ~std::uint16_t{inline_payload});
        if ((sig & 0xff) != (static_cast<unsigned>(category::long_am) | inline_payload) ||
            lim.signatures[handler] != plain) {
            return "category or argument count differs from the handler's";
        }
        inline_long = true;
        sig = plain;
    }
    if (static_cast<std::uint32_t>(header >> 32) != static_cast<std::uint32_t>(source))
        [[unlikely]] {
        return "wrong source rank";
    }
    const std::size_t fixed = fixed_bytes(sig >> 8);
    out.handler = handler;
    out.kind = static_cast<category>(sig & 0xff);
    if (out.kind == category::short_am) [[likely]] {
        if (len != fixed) [[unlikely]]
            return "short message with a payload";
        out.payload = nullptr;
        out.length = 0;
        out.inline_bytes = nullptr;
        return nullptr;
    }
    if (out.kind == category::medium) {
        if (len < fixed || len - fixed > lim.max_medium) [[unlikely]] {
            return "medium payload over max_medium()";
        }
        out.payload = const_cast<std::byte*>(msg) + fixed;
        out.length = len - fixed;
        out.inline_bytes = nullptr;
        return nullptr;
    }
    if (len < fixed + long_trailer) [[unlikely]]
        return inline_long ? "bad inline long message" : "bad long length";
    std::uint64_t trailer[2];
    std::memcpy(trailer, msg + fixed, sizeof trailer);
    if (trailer[0] > lim.segment.size() || trailer[1] > lim.segment.size() - trailer[0])
        [[unlikely]] {
        return "long payload outside the segment";
    }
    if (len != fixed + long_trailer + (inline_long ? trailer[1] : 0)) [[unlikely]]
        return inline_long ? "bad inline long length" : "bad long length";
    out.payload = lim.segment.data() + trailer[0];
    out.length = trailer[1];
    out.inline_bytes = inline_long ? msg + fixed + long_trailer : nullptr;
    return nullptr;
}

}  // namespace am::detail
