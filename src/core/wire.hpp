// SPDX-License-Identifier: MIT
// The core's message format inside a transport message:
//   [wire_header 8 B][nargs × 8 B arguments][medium: payload | long: u64 offset, u64 length
//                                                            [payload, when sent inline]]
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
/// Set in `wire_header::kind` of a long message whose payload follows the trailer, for a
/// target whose segment this rank cannot write (the mpi transport's remote peers). The
/// receiving core copies it into its segment before the handler runs.
inline constexpr std::uint8_t inline_payload = 0x80;

constexpr std::size_t fixed_bytes(unsigned nargs) noexcept {
    return sizeof(wire_header) + 8 * static_cast<std::size_t>(nargs);
}

}  // namespace am::detail
