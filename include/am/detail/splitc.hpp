// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/splitc.hpp>, not part of the API: a put or get as a shape in bytes and the
/// entry points of the Split-C layer, implemented in src/rma.
#pragma once

#include <am/atomic_op.hpp>
#include <am/global_ptr.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace am {

class context;
class counter;

namespace detail {
/// `n * size`, or SIZE_MAX when that overflows: no range check can then pass, so an
/// overflowing count is refused instead of wrapping into a small, valid-looking size.
constexpr std::size_t bytes_of(std::size_t n, std::size_t size) noexcept {
    std::size_t bytes = 0;
    return __builtin_mul_overflow(n, size, &bytes) ? SIZE_MAX : bytes;
}
}  // namespace detail

namespace splitc::detail {

/// A put or get in bytes: `rows` blocks of `width` bytes. Remote block i starts at
/// `offset + i * remote_stride` (or at `offset + index[i] * width` when `index` is set); local
/// block i at `local + i * local_stride`.
struct rma_shape {
    int rank;
    std::uint64_t offset;
    std::size_t remote_stride;
    std::byte* local;
    std::size_t local_stride;
    std::size_t width;
    std::size_t rows;
    const std::uint64_t* index = nullptr;
};

// The entry points of the layer (src/rma/rma_layer.cpp). `call` names the API call in errors.
void rma_put(context& c, const rma_shape& s, counter* flag, counter* done, const char* call);
void rma_get(context& c, const rma_shape& s, counter* flag, const char* call);
std::uint64_t rma_allocate(context& c, std::size_t bytes, std::size_t align);
void rma_deallocate(context& c, int rank, std::uint64_t offset);
void rma_exchange(context& c, const void* in, void* out, std::size_t bytes);
void* rma_local(const context& c, int rank, std::uint64_t offset, std::size_t bytes) noexcept;
std::uint64_t rma_offset_of(const context& c, const void* p, std::size_t bytes);

/// The types a remote atomic works on, as the wire and the layer name them.
enum class atomic_type : std::uint8_t { i32, u32, i64, u64, f32, f64 };

/// True for the types of remote atomics: 32- and 64-bit integers, float and double.
template <class T>
inline constexpr bool is_atomic_type =
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
constexpr atomic_type atomic_type_of() noexcept {
    static_assert(is_atomic_type<T>,
                  "am: remote atomics work on int32_t, uint32_t, int64_t, uint64_t, float, double");
    if constexpr (std::is_same_v<T, std::int32_t>) return atomic_type::i32;
    if constexpr (std::is_same_v<T, std::uint32_t>) return atomic_type::u32;
    if constexpr (std::is_same_v<T, std::int64_t>) return atomic_type::i64;
    if constexpr (std::is_same_v<T, std::uint64_t>) return atomic_type::u64;
    if constexpr (std::is_same_v<T, float>) return atomic_type::f32;
    return atomic_type::f64;
}

/// A value as the word the layer carries (its bits, zero-extended).
template <class T>
constexpr std::uint64_t to_word(T v) noexcept {
    if constexpr (sizeof(T) == 4) {
        return std::bit_cast<std::uint32_t>(v);
    } else {
        return std::bit_cast<std::uint64_t>(v);
    }
}
/// The value whose bits are the low `sizeof(T)` bytes of `w`.
template <class T>
constexpr T from_word(std::uint64_t w) noexcept {
    if constexpr (sizeof(T) == 4) {
        return std::bit_cast<T>(static_cast<std::uint32_t>(w));
    } else {
        return std::bit_cast<T>(w);
    }
}

/// One remote atomic: `op` on the `type` word at byte `offset` of `rank`'s segment.
struct atomic_args {
    int rank;
    std::uint64_t offset;
    atomic_op op;
    atomic_type type;
    std::uint64_t operand;
    std::uint64_t compare;
};

/// How a split-phase atomic completes, once the operation has been done at the target, in this
/// order: the old value's bytes (the type's width) to `result`, `done(arg, old)`, `flag` counts
/// one. Any of them may be null.
struct atomic_completion {
    counter* flag = nullptr;
    void* result = nullptr;
    void (*done)(void* arg, std::uint64_t old) = nullptr;
    void* arg = nullptr;
};

/// Runs the atomic `a`; `split` null: blocks and returns the old word; else returns 0 at once
/// and completes through `split` (at once on a mapped segment, else from a later poll).
/// Throws am::error before anything is sent when `a` is not valid.
std::uint64_t rma_atomic(context& c, const atomic_args& a, const atomic_completion* split,
                         const char* call);

template <class T>
std::byte* as_bytes(const T* p) noexcept {
    return const_cast<std::byte*>(reinterpret_cast<const std::byte*>(p));
}

template <class T>
rma_shape contiguous(global_ptr<T> p, const T* local, std::size_t n) noexcept {
    const std::size_t bytes = am::detail::bytes_of(n, sizeof(T));
    return rma_shape{p.rank(), p.offset(), bytes, as_bytes(local), bytes, bytes, n == 0 ? 0u : 1u};
}

template <class T>
rma_shape strided(global_ptr<T> remote, std::size_t remote_stride, const T* local,
                  std::size_t local_stride, std::size_t width, std::size_t rows) noexcept {
    using am::detail::bytes_of;
    return rma_shape{remote.rank(),
                     remote.offset(),
                     bytes_of(remote_stride, sizeof(T)),
                     as_bytes(local),
                     bytes_of(local_stride, sizeof(T)),
                     bytes_of(width, sizeof(T)),
                     width == 0 ? 0 : rows};
}

template <class T>
rma_shape indexed(global_ptr<T> base, std::span<const std::uint64_t> index,
                  const T* local) noexcept {
    return rma_shape{base.rank(), base.offset(), sizeof(T),    as_bytes(local),
                     sizeof(T),   sizeof(T),     index.size(), index.data()};
}

/// `exchange`: every rank's pointer, through the layer's byte exchange.
template <class T, class Context>
std::vector<global_ptr<T>> exchange(Context& c, global_ptr<T> mine) {
    struct wire {
        std::int64_t rank;
        std::uint64_t offset;
    };
    const wire in{mine.rank(), mine.offset()};
    std::vector<wire> all(static_cast<std::size_t>(c.size()));
    rma_exchange(c, &in, all.data(), sizeof(wire));
    std::vector<global_ptr<T>> out;
    out.reserve(all.size());
    for (const wire& w : all) out.emplace_back(static_cast<int>(w.rank), w.offset);
    return out;
}

}  // namespace splitc::detail

}  // namespace am
