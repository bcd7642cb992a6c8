// SPDX-License-Identifier: MIT
/// @file
/// Typed handler handles: a handler's C++ signature decides its message category and its
/// argument list at compile time (the machinery is in <am/detail/handler.hpp>).
///
/// Thread-safety: handles are trivially copyable values, usable from any thread of the rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

namespace am {

class token;

/// Message categories of the 1992 paper and GASNet.
enum class category : std::uint8_t {
    short_am = 0,  ///< arguments only
    medium = 1,    ///< arguments + a payload of at most `context::max_medium()` bytes
    long_am = 2,   ///< arguments + a payload written into the target's segment before dispatch
};

/// Most arguments (8-byte slots) a message of any category carries.
inline constexpr unsigned max_args = 16;

/// A registered handler, named on the wire by `index`. `Args` are the handler's trailing
/// argument types (after the token and, for medium and long handlers, the payload span).
/// Obtained from `context::handler`; valid on every rank that registered the same table.
/// Copyable, trivially; comparing handles of different contexts is meaningless.
template <category C, class... Args>
struct handler {
    std::uint32_t index = UINT32_MAX;  ///< position in the collectively built handler table
    static constexpr category kind = C;
    static constexpr unsigned nargs = sizeof...(Args);
};

/// View any contiguous range of trivially copyable values as the byte span that medium and
/// long sends take: `ctx.request(dest, h, am::bytes(vec), …)`.
template <class Range>
std::span<const std::byte> bytes(const Range& r) {
    return std::as_bytes(std::span(r));
}

/// View a contiguous range of trivially copyable values as a writable byte span, e.g. the
/// buffer of `ctx.recv(source, tag, am::writable_bytes(vec))`.
template <class Range>
std::span<std::byte> writable_bytes(Range& r) {
    return std::as_writable_bytes(std::span(r));
}

}  // namespace am

#include <am/detail/handler.hpp>
