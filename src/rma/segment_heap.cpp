// SPDX-License-Identifier: MIT
#include "segment_heap.hpp"

#include "../util/assert.hpp"

namespace am::detail {
namespace {

constexpr std::uint64_t granule = 16;

constexpr std::uint64_t align_up(std::uint64_t v, std::uint64_t a) noexcept {
    return (v + a - 1) & ~(a - 1);
}

}  // namespace

segment_heap::segment_heap(std::size_t bytes) : _capacity(bytes) {
    if (bytes >= granule) _free.emplace(0, bytes & ~(granule - 1));
}

std::optional<std::uint64_t> segment_heap::allocate(std::size_t bytes, std::size_t align) {
    AM_ASSERT(align != 0 && (align & (align - 1)) == 0, "alignment is not a power of two");
    const std::uint64_t need = align_up(bytes == 0 ? 1 : bytes, granule);
    if (need < bytes) return std::nullopt;  // wrapped
    const std::uint64_t a = align < granule ? granule : align;
    std::scoped_lock lock(_mutex);
    for (auto it = _free.begin(); it != _free.end(); ++it) {
        const std::uint64_t start = align_up(it->first, a);
        const std::uint64_t end = it->first + it->second;
        if (start > end || end - start < need) continue;
        const std::uint64_t head = start - it->first;
        const std::uint64_t tail = end - start - need;
        const std::uint64_t block = it->first;
        AM_ASSERT(start % a == 0 && start % granule == 0, "block misaligned");
        AM_ASSERT(end <= _capacity, "free block outside the segment");
        _free.erase(it);
        if (head != 0) _free.emplace(block, head);
        if (tail != 0) _free.emplace(start + need, tail);
        const bool fresh = _used.emplace(start, need).second;
        AM_ASSERT(fresh, "allocated a block that is in use");
        return start;
    }
    return std::nullopt;
}

bool segment_heap::release(std::uint64_t offset) {
    std::scoped_lock lock(_mutex);
    const auto it = _used.find(offset);
    if (it == _used.end()) return false;
    const std::uint64_t size = it->second;
    _used.erase(it);
    insert_free(offset, size);
    return true;
}

void segment_heap::insert_free(std::uint64_t offset, std::uint64_t size) {
    AM_ASSERT(offset % granule == 0 && size % granule == 0 && size != 0, "block misaligned");
    AM_ASSERT(offset <= _capacity && size <= _capacity - offset, "block outside the segment");
    auto next = _free.lower_bound(offset);
    // The released block lies between two free blocks (or the segment's ends): a free block
    // overlapping it means the heap's books are wrong (a block freed twice, or handed out
    // while free).
    AM_ASSERT(next == _free.end() || offset + size <= next->first,
              "released block overlaps the next free block");
    AM_ASSERT(next == _free.begin() || std::prev(next)->first + std::prev(next)->second <= offset,
              "released block overlaps the previous free block");
    if (next != _free.end() && offset + size == next->first) {
        size += next->second;
        next = _free.erase(next);
    }
    if (next != _free.begin()) {
        const auto prev = std::prev(next);
        if (prev->first + prev->second == offset) {
            prev->second += size;
            return;
        }
    }
    _free.emplace(offset, size);
}

std::size_t segment_heap::free_bytes() const {
    std::scoped_lock lock(_mutex);
    std::size_t n = 0;
    for (const auto& [off, size] : _free) n += size;
    return n;
}

}  // namespace am::detail
