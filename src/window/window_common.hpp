// SPDX-License-Identifier: MIT
// Small pieces of the window layer: the wire header of a unit, a first-fit range allocator for
// staging buffers, and gathering/scattering segments by their byte layouts.
#pragma once

#include <am/window.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>

namespace am::detail {

inline constexpr std::size_t stage_align = 16;

inline std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
}

constexpr std::size_t round_up(std::size_t n, std::size_t a) noexcept {
    return (n + a - 1) / a * a;
}

/// The window whose operation the calling thread is running (re-entry is refused).
inline thread_local const void* t_running_window = nullptr;

/// Unit flags on the wire.
inline constexpr std::uint32_t unit_concurrent = 1;  // run at once, no order, no serialisation
inline constexpr std::uint32_t unit_user = 2;        // staged in the attached buffer

/// What a unit message says besides its input bytes: travels in the message's 13 argument words
/// (so the payload is the input itself, sent from the origin's buffer when it is contiguous).
struct unit_header {
    std::uint64_t window;
    std::uint64_t seq;      // the origin's order of ordered units to this target (not concurrent)
    std::uint64_t token;    // the origin's unit, echoed in the output messages
    std::uint64_t staging;  // offset of the unit's staging area in the internal/attached buffer
    std::uint64_t persistent_disp, persistent_bytes;
    std::uint64_t in_seg, out_seg;  // packed bytes of one segment
    std::uint64_t num_segments, segment_offset;
    std::uint64_t tag;
    std::uint64_t chunk_off;  // bytes of the unit's input before this chunk
    std::uint32_t op, flags;
};
inline constexpr std::size_t unit_words = 13;
static_assert(sizeof(unit_header) == unit_words * 8);

/// First-fit allocator of [0, capacity) in stage_align units; all sizes rounded up.
class range_alloc {
  public:
    explicit range_alloc(std::size_t capacity = 0) { reset(capacity); }
    void reset(std::size_t capacity) {
        _capacity = capacity;
        _free.clear();
        _used = 0;
        if (capacity > 0) _free.emplace(0, capacity);
    }
    [[nodiscard]] std::size_t capacity() const noexcept { return _capacity; }
    [[nodiscard]] std::size_t used() const noexcept { return _used; }
    std::optional<std::size_t> allocate(std::size_t bytes) {
        bytes = round_up(bytes == 0 ? 1 : bytes, stage_align);
        for (auto it = _free.begin(); it != _free.end(); ++it) {
            if (it->second < bytes) continue;
            const std::size_t off = it->first, left = it->second - bytes;
            _free.erase(it);
            if (left > 0) _free.emplace(off + bytes, left);
            _used += bytes;
            return off;
        }
        return std::nullopt;
    }
    void release(std::size_t off, std::size_t bytes) {
        bytes = round_up(bytes == 0 ? 1 : bytes, stage_align);
        _used -= bytes;
        auto it = _free.emplace(off, bytes).first;
        auto next = std::next(it);
        if (next != _free.end() && it->first + it->second == next->first) {
            it->second += next->second;
            _free.erase(next);
        }
        if (it != _free.begin()) {
            auto prev = std::prev(it);
            if (prev->first + prev->second == it->first) {
                prev->second += it->second;
                _free.erase(it);
            }
        }
    }

  private:
    std::size_t _capacity = 0, _used = 0;
    std::map<std::size_t, std::size_t> _free;  // offset -> bytes
};

/// Bytes one segment packs to.
inline std::size_t packed_bytes(const byte_layout& l) noexcept {
    std::size_t n = 0;
    for (const auto& b : l.blocks) n += b.count;
    return n;
}

/// Packs segments [first, first + n) of `base` (laid out by `l`) into `out`.
inline void gather(const byte_layout& l, const std::byte* base, std::size_t first, std::size_t n,
                   std::byte* out) {
    for (std::size_t s = first; s < first + n; ++s) {
        const std::byte* seg = base + s * l.extent;
        for (const auto& b : l.blocks) {
            std::memcpy(out, seg + b.offset, b.count);
            out += b.count;
        }
    }
}

/// Scatters `len` packed bytes starting at packed offset `off` of segment `seg` into `base`.
inline void scatter(const byte_layout& l, std::size_t seg_bytes, std::byte* base, std::size_t seg,
                    std::size_t off, const std::byte* src, std::size_t len) {
    if (seg_bytes == 0) return;
    seg += off / seg_bytes;
    off %= seg_bytes;
    while (len > 0) {
        std::byte* segp = base + seg * l.extent;
        std::size_t pos = 0;
        for (const auto& b : l.blocks) {
            if (len == 0) break;
            if (off >= pos + b.count) {
                pos += b.count;
                continue;
            }
            const std::size_t in_block = off - pos;
            const std::size_t n = std::min(b.count - in_block, len);
            std::memcpy(segp + b.offset + in_block, src, n);
            src += n, len -= n, off += n, pos += b.count;
        }
        ++seg, off = 0;
    }
}

}  // namespace am::detail
