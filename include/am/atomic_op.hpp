// SPDX-License-Identifier: MIT
/// @file
/// `am::atomic_op`: the read-modify-write operations of remote atomics on global pointers
/// (`am::context::atomic_*`, <am/splitc.hpp>; `am_atomic_*`, <am/am_splitc.h>). Self-contained.
#pragma once

#include <cstdint>

namespace am {

/// What a remote atomic does to the word `w` at its target with operand `v` (and `c` for
/// compare_swap). Every operation can also return the old value of `w` (fetching).
enum class atomic_op : std::uint8_t {
    add,           ///< w = w + v (integers wrap; floats: IEEE addition)
    bit_and,       ///< w = w & v
    bit_or,        ///< w = w | v
    bit_xor,       ///< w = w ^ v
    swap,          ///< w = v
    compare_swap,  ///< if (w == c) w = v
    min,           ///< w = min(w, v) (signed or unsigned as the pointer's type)
    max,           ///< w = max(w, v)
};

/// The operation's name as the errors and traces spell it ("fetch_add" is `add` fetching).
[[nodiscard]] constexpr const char* to_string(atomic_op op) noexcept {
    switch (op) {
        case atomic_op::add:
            return "add";
        case atomic_op::bit_and:
            return "and";
        case atomic_op::bit_or:
            return "or";
        case atomic_op::bit_xor:
            return "xor";
        case atomic_op::swap:
            return "swap";
        case atomic_op::compare_swap:
            return "compare_swap";
        case atomic_op::min:
            return "min";
        case atomic_op::max:
            return "max";
    }
    return "?";
}

}  // namespace am
