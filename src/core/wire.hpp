// SPDX-License-Identifier: MIT
// The core's message format inside a transport message:
//   [wire_header 8 B][nargs × 8 B arguments][medium: payload | long: u64 offset, u64 length]
#pragma once

#include <cstddef>
#include <cstdint>

namespace am::detail {

struct wire_header {
    std::uint16_t handler;
    std::uint8_t kind;
    std::uint8_t nargs;
    std::uint32_t source;
};
static_assert(sizeof(wire_header) == 8);

inline constexpr std::size_t long_trailer = 16;

constexpr std::size_t fixed_bytes(unsigned nargs) noexcept {
    return sizeof(wire_header) + 8 * static_cast<std::size_t>(nargs);
}

}  // namespace am::detail
