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

/// What the table of handlers and the segment allow an incoming message to be, as plain
/// values (tests, fuzzing). check_incoming takes any type with these four members; the core
/// passes one that reads its own fields, so that each is loaded only where the check needs it.
struct incoming_limits {
    std::uint32_t count = 0;                    // handlers [0, count) exist
    const std::uint16_t* signatures = nullptr;  // their wire signatures (kind | nargs << 8)
    std::size_t medium = 0;                     // largest medium payload
    std::span<std::byte> seg;                   // where long payloads land

    [[nodiscard]] std::uint32_t handlers() const noexcept { return count; }
    [[nodiscard]] std::uint16_t signature(std::uint32_t i) const noexcept { return signatures[i]; }
    [[nodiscard]] std::size_t max_medium() const noexcept { return medium; }
    [[nodiscard]] std::span<std::byte> segment() const noexcept { return seg; }
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

/// check_plain's answer for a message whose signature differs from its handler's: it may
/// still be a long message whose payload travelled inline (check_inline_long decides).
inline constexpr const char* not_plain = "category or argument count differs from the handler's";

/// Checks a long message whose payload travelled inline (inline_payload in the category byte),
/// as check_incoming does. The rare case, kept out of the hot path.
template <class Limits>
[[gnu::cold]] const char* check_inline_long(const std::byte* msg, std::size_t len, int source,
                                            const Limits& lim, incoming& out) noexcept {
    wire_header h;
    std::memcpy(&h, msg, sizeof h);
    if (h.handler >= lim.handlers()) return "unknown handler index";
    const auto plain = static_cast<std::uint16_t>(static_cast<unsigned>(category::long_am) |
                                                  (unsigned{h.nargs} << 8));
    if (h.kind != (static_cast<unsigned>(category::long_am) | inline_payload) ||
        lim.signature(h.handler) != plain) {
        return not_plain;
    }
    if (h.source != static_cast<std::uint32_t>(source)) return "wrong source rank";
    const std::size_t fixed = fixed_bytes(h.nargs);
    if (len < fixed + long_trailer) return "bad inline long message";
    std::uint64_t trailer[2];
    std::memcpy(trailer, msg + fixed, sizeof trailer);
    const std::span<std::byte> segment = lim.segment();
    if (trailer[0] > segment.size() || trailer[1] > segment.size() - trailer[0]) {
        return "long payload outside the segment";
    }
    if (len != fixed + long_trailer + trailer[1]) return "bad inline long length";
    out.handler = h.handler;
    out.kind = category::long_am;
    out.payload = segment.data() + trailer[0];
    out.length = trailer[1];
    out.inline_bytes = msg + fixed + long_trailer;
    return nullptr;
}

/// The check of every message but the inline-long form, for the hot path: as check_incoming,
/// except that it answers `not_plain` where check_inline_long must decide.
template <class Limits>
[[gnu::always_inline]] inline const char* check_plain(const std::byte* msg, std::size_t len,
                                                      int source, const Limits& lim,
                                                      incoming& out) noexcept {
    std::uint64_t header;
    if (len < sizeof header) [[unlikely]]
        return "shorter than a header";
    std::memcpy(&header, msg, sizeof header);
    const auto handler = static_cast<std::uint32_t>(header & 0xffff);
    const auto sig = static_cast<std::uint16_t>(header >> 16);
    if (handler >= lim.handlers() || lim.signature(handler) != sig) [[unlikely]] {
        return handler >= lim.handlers() ? "unknown handler index" : not_plain;
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
    out.inline_bytes = nullptr;
    if (out.kind == category::medium) {
        if (len < fixed || len - fixed > lim.max_medium()) [[unlikely]] {
            return "medium payload over max_medium()";
        }
        out.payload = const_cast<std::byte*>(msg) + fixed;
        out.length = len - fixed;
        return nullptr;
    }
    if (len != fixed + long_trailer) [[unlikely]]
        return "bad long length";
    std::uint64_t trailer[2];
    std::memcpy(trailer, msg + fixed, sizeof trailer);
    const std::span<std::byte> segment = lim.segment();
    if (trailer[0] > segment.size() || trailer[1] > segment.size() - trailer[0]) [[unlikely]] {
        return "long payload outside the segment";
    }
    out.payload = segment.data() + trailer[0];
    out.length = trailer[1];
    return nullptr;
}

/// Checks the message `msg` of `len` bytes from rank `source`: header present, handler index
/// in the table, category and argument count equal to the handler's, source field equal to
/// the sender, length consistent with the category, medium payload ≤ max_medium, long range
/// inside the segment, and the same for the inline-long form. Returns null and fills `out`
/// when the message may be dispatched, else why it may not (a static string). `lim` is an
/// incoming_limits or any type with its four member functions. The core's dispatch makes
/// exactly these two calls (check_inline_long out of its hot path).
template <class Limits>
const char* check_incoming(const std::byte* msg, std::size_t len, int source, const Limits& lim,
                           incoming& out) noexcept {
    const char* why = check_plain(msg, len, source, lim, out);
    if (why == not_plain) why = check_inline_long(msg, len, source, lim, out);
    return why;
}

}  // namespace am::detail
