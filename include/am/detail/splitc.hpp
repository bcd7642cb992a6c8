// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/splitc.hpp>, not part of the API: a put or get as a shape in bytes and the
/// entry points of the Split-C layer, implemented in src/rma.
#pragma once

#include <am/global_ptr.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
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
