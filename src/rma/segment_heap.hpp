// SPDX-License-Identifier: MIT
// The allocator of one rank's registered segment: first fit over a free list ordered by
// offset, neighbours merged on release. Offsets, not addresses, so the same block has the
// same name in every process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace am::detail {

class segment_heap {
  public:
    explicit segment_heap(std::size_t bytes);

    /// Offset of a new block of at least `bytes` (≥ 1) aligned to `align` (a power of two),
    /// or nothing when no free block is large enough.
    std::optional<std::uint64_t> allocate(std::size_t bytes, std::size_t align);
    /// Releases the block at `offset`; false when no block starts there.
    bool release(std::uint64_t offset);
    [[nodiscard]] std::size_t capacity() const noexcept { return _capacity; }
    /// Bytes in free blocks (for diagnostics and tests).
    [[nodiscard]] std::size_t free_bytes() const;

  private:
    void insert_free(std::uint64_t offset, std::uint64_t size);

    std::size_t _capacity;
    mutable std::mutex _mutex;  // the rank's thread and a progress thread may both allocate
    std::map<std::uint64_t, std::uint64_t> _free;  // offset -> size
    std::map<std::uint64_t, std::uint64_t> _used;  // offset -> size (from the block's start)
};

}  // namespace am::detail
