// SPDX-License-Identifier: MIT
/// @file
/// `am::global_ptr<T>`: a pointer into one rank's registered segment (Split-C's global
/// pointer). It names a rank and a byte offset in that rank's segment, so it means the same
/// thing in every process of the job and may be sent in messages.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace am {

/// A typed pointer to memory in the registered segment of `rank()`, at byte `offset()`.
///
/// Obtained from `context::allocate`, `context::to_global` or another rank (e.g. through
/// `context::exchange` or a message), and dereferenced only through `put`/`get` or, when the
/// segment is mapped here, `context::local`. Pointer arithmetic moves in units of `T` and
/// never leaves the rank. A default-constructed pointer is null (rank -1).
///
/// Thread-safety: a value type; copies are independent.
template <class T>
class global_ptr {
    static_assert(std::is_trivially_copyable_v<T> || std::is_void_v<T>,
                  "am::global_ptr<T>: T must be trivially copyable: put and get copy bytes");

  public:
    using element_type = T;

    constexpr global_ptr() noexcept = default;
    /// The object at byte `offset` of `rank`'s segment. No check here: `put`/`get` check the
    /// range against the target's segment and throw `am::error` (errc::out_of_segment).
    constexpr global_ptr(int rank, std::uint64_t offset) noexcept : _rank(rank), _offset(offset) {}

    /// The rank whose segment holds the object; -1 for a null pointer.
    [[nodiscard]] constexpr int rank() const noexcept { return _rank; }
    /// Byte offset of the object in that rank's segment.
    [[nodiscard]] constexpr std::uint64_t offset() const noexcept { return _offset; }
    [[nodiscard]] constexpr bool is_null() const noexcept { return _rank < 0; }
    constexpr explicit operator bool() const noexcept { return !is_null(); }

    /// The same address seen as another type (like a `reinterpret_cast`).
    template <class U>
    [[nodiscard]] constexpr global_ptr<U> cast() const noexcept {
        return global_ptr<U>(_rank, _offset);
    }

    constexpr global_ptr& operator+=(std::ptrdiff_t n) noexcept {
        _offset += static_cast<std::uint64_t>(n * step());
        return *this;
    }
    constexpr global_ptr& operator-=(std::ptrdiff_t n) noexcept { return *this += -n; }
    constexpr global_ptr& operator++() noexcept { return *this += 1; }
    [[nodiscard]] friend constexpr global_ptr operator+(global_ptr p, std::ptrdiff_t n) noexcept {
        return p += n;
    }
    [[nodiscard]] friend constexpr global_ptr operator-(global_ptr p, std::ptrdiff_t n) noexcept {
        return p -= n;
    }
    /// Distance in elements between two pointers into the same rank's segment.
    [[nodiscard]] friend constexpr std::ptrdiff_t operator-(global_ptr a, global_ptr b) noexcept {
        return (static_cast<std::ptrdiff_t>(a._offset) - static_cast<std::ptrdiff_t>(b._offset)) /
               step();
    }
    [[nodiscard]] friend constexpr bool operator==(global_ptr, global_ptr) noexcept = default;
    [[nodiscard]] friend constexpr auto operator<=>(global_ptr, global_ptr) noexcept = default;

  private:
    static constexpr std::ptrdiff_t step() noexcept {
        if constexpr (std::is_void_v<T>) {
            return 1;
        } else {
            return static_cast<std::ptrdiff_t>(sizeof(T));
        }
    }

    int _rank = -1;
    std::uint64_t _offset = 0;
};

}  // namespace am
