// SPDX-License-Identifier: MIT
// What the Split-C layer's sources (rma_layer.cpp, rma_am.cpp) share: the record format of
// packed puts and vector gets, and small helpers.
#pragma once

#include "rma_layer.hpp"

#include "../util/error.hpp"

#include <cstring>
#include <vector>

namespace am::detail::rma_internal {

// A packed put carries records of {u64 offset, u32 length} followed by the bytes; a vector get
// request carries the records alone.
constexpr std::size_t record_bytes = 12;
constexpr std::uint64_t flag_mask = 0xffffffffu;

using util::fail;

inline std::uint64_t to_wire(const void* p) noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

inline void put_record(std::vector<std::byte>& out, std::uint64_t offset, std::uint32_t len) {
    std::byte rec[record_bytes];
    std::memcpy(rec, &offset, 8);
    std::memcpy(rec + 8, &len, 4);
    out.insert(out.end(), rec, rec + record_bytes);
}

inline void get_record(const std::byte* p, std::uint64_t& offset, std::uint32_t& len) noexcept {
    std::memcpy(&offset, p, 8);
    std::memcpy(&len, p + 8, 4);
}

inline std::uint64_t remote_offset(const rma_shape& s, std::size_t i) noexcept {
    return s.index != nullptr ? s.offset + s.index[i] * s.width : s.offset + i * s.remote_stride;
}

inline std::byte* local_block(const rma_shape& s, std::size_t i) noexcept {
    return s.local + i * s.local_stride;
}

}  // namespace am::detail::rma_internal
