// SPDX-License-Identifier: MIT
/// @file
/// The Split-C layer (src/rma): global memory, `global_ptr`, and put/get between local memory
/// and any rank's segment. Its calls are members of `am::context` (`ctx.put(...)`), declared
/// here in `am::splitc::context_api`, which `am::context` inherits; `am::context` and this
/// header include each other, so either one gives the whole API.
///
/// The registered segment of each rank is its global memory. `allocate` carves blocks out of
/// this rank's segment; `put` and `get` copy between local memory and any rank's segment.
/// Transports that map every segment (threads, shm) copy directly; otherwise (or with
/// `AM_RMA=am`) a put is a long request and a get a short request answered by the data,
/// exactly as in the Split-C paper. Ranges are checked against the target's segment before
/// anything is sent (errc::out_of_segment, naming the call, rank and segment size).
///
/// Flags (Split-C): a put increments `flag` on the rank that receives the data, a get on this
/// rank, once per call when all its data is in place. A put's `flag` names a counter by
/// identity: the target uses its own counter created at the same position, so counters used
/// as remote flags are created in the same order on every rank (like handlers) and must exist
/// on the target when the data arrives.
///
/// Completion and buffer lifetime: split-phase calls (with a flag) never block and may be
/// issued from handlers; the `src` of a put may be reused when the call returns; the `dst` of
/// a get must stay valid until its flag counts it. The calls without a flag block until the
/// data is in place (put: at the target) and are not callable from a handler.
///
/// Thread-safety: as the context's (the thread that runs the rank; with a progress thread the
/// calls are serialised internally).
#pragma once

#include <am/detail/splitc.hpp>
#include <am/global_ptr.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace am::splitc {

using am::global_ptr;

/// The Split-C calls of `am::context` (its base class; `Context` is `am::context`).
template <class Context>
class context_api {
  public:
    /// Allocates `n` objects of `T` in this rank's segment (aligned for `T`, at least 16
    /// bytes); not initialised. Throws `am::error` (errc::no_memory) naming the segment size
    /// when it is full. Local: other ranks learn the pointer through `exchange` or messages.
    template <class T>
    global_ptr<T> allocate(std::size_t n = 1) {
        constexpr std::size_t align = alignof(T) > 16 ? alignof(T) : 16;
        return global_ptr<T>(
            self().rank(), detail::rma_allocate(self(), am::detail::bytes_of(n, sizeof(T)), align));
    }
    /// Returns a block from `allocate` to this rank's segment. The memory must no longer be
    /// the target of any put or get.
    template <class T>
    void deallocate(global_ptr<T> p) {
        detail::rma_deallocate(self(), p.rank(), p.offset());
    }
    /// Collective: every rank contributes a pointer; returns them all, indexed by rank
    /// ("exchange of base addresses"). Polls while it waits.
    template <class T>
    std::vector<global_ptr<T>> exchange(global_ptr<T> mine) {
        return detail::exchange(self(), mine);
    }
    /// The address of `p`'s object in this process when its segment is mapped here (always
    /// for this rank; for every rank on threads and shm unless `AM_RMA=am`), else nullptr.
    /// Accesses through it are ordinary memory accesses: synchronise with flags or barriers.
    template <class T>
    [[nodiscard]] T* local(global_ptr<T> p) const noexcept {
        return static_cast<T*>(detail::rma_local(self(), p.rank(), p.offset(), sizeof(T)));
    }
    /// The global pointer of `p`, which must point into this rank's segment (else
    /// `am::error`, errc::out_of_segment).
    template <class T>
    [[nodiscard]] global_ptr<T> to_global(T* p) const {
        return global_ptr<T>(self().rank(), detail::rma_offset_of(self(), p, sizeof(T)));
    }

    /// Split-phase PUT: copies `n` objects from `src` to `dst`; then `flag` on `dst.rank()`
    /// counts one.
    template <class T>
    void put(global_ptr<T> dst, const T* src, std::size_t n, counter& flag) {
        detail::rma_put(self(), detail::contiguous(dst, src, n), &flag, nullptr,
                        "am::context::put");
    }
    /// As above; `done`, on this rank, counts one when the data is in place at the target.
    template <class T>
    void put(global_ptr<T> dst, const T* src, std::size_t n, counter& flag, counter& done) {
        detail::rma_put(self(), detail::contiguous(dst, src, n), &flag, &done, "am::context::put");
    }
    /// Blocking PUT: returns when the data is in place at the target.
    template <class T>
    void put(global_ptr<T> dst, const T* src, std::size_t n) {
        detail::rma_put(self(), detail::contiguous(dst, src, n), nullptr, nullptr,
                        "am::context::put");
    }
    /// Split-phase GET: copies `n` objects from `src` to `dst`; then `flag` (here) counts one.
    template <class T>
    void get(T* dst, global_ptr<T> src, std::size_t n, counter& flag) {
        detail::rma_get(self(), detail::contiguous(src, dst, n), &flag, "am::context::get");
    }
    /// Blocking GET.
    template <class T>
    void get(T* dst, global_ptr<T> src, std::size_t n) {
        detail::rma_get(self(), detail::contiguous(src, dst, n), nullptr, "am::context::get");
    }

    /// Strided (2-D block) PUT: `rows` rows of `width` objects; row i goes from
    /// `src + i * src_stride` to `dst + i * dst_stride` (strides in objects, ≥ width).
    template <class T>
    void put_strided(global_ptr<T> dst, std::size_t dst_stride, const T* src,
                     std::size_t src_stride, std::size_t width, std::size_t rows, counter& flag) {
        detail::rma_put(self(), detail::strided(dst, dst_stride, src, src_stride, width, rows),
                        &flag, nullptr, "am::context::put_strided");
    }
    /// Blocking strided PUT.
    template <class T>
    void put_strided(global_ptr<T> dst, std::size_t dst_stride, const T* src,
                     std::size_t src_stride, std::size_t width, std::size_t rows) {
        detail::rma_put(self(), detail::strided(dst, dst_stride, src, src_stride, width, rows),
                        nullptr, nullptr, "am::context::put_strided");
    }
    /// Strided (2-D block) GET: row i goes from `src + i * src_stride` to
    /// `dst + i * dst_stride`.
    template <class T>
    void get_strided(T* dst, std::size_t dst_stride, global_ptr<T> src, std::size_t src_stride,
                     std::size_t width, std::size_t rows, counter& flag) {
        detail::rma_get(self(), detail::strided(src, src_stride, dst, dst_stride, width, rows),
                        &flag, "am::context::get_strided");
    }
    /// Blocking strided GET.
    template <class T>
    void get_strided(T* dst, std::size_t dst_stride, global_ptr<T> src, std::size_t src_stride,
                     std::size_t width, std::size_t rows) {
        detail::rma_get(self(), detail::strided(src, src_stride, dst, dst_stride, width, rows),
                        nullptr, "am::context::get_strided");
    }

    /// Indexed PUT (scatter): `base[index[i]] = src[i]` for every i.
    template <class T>
    void put_indexed(global_ptr<T> base, std::span<const std::uint64_t> index, const T* src,
                     counter& flag) {
        detail::rma_put(self(), detail::indexed(base, index, src), &flag, nullptr,
                        "am::context::put_indexed");
    }
    /// Blocking indexed PUT.
    template <class T>
    void put_indexed(global_ptr<T> base, std::span<const std::uint64_t> index, const T* src) {
        detail::rma_put(self(), detail::indexed(base, index, src), nullptr, nullptr,
                        "am::context::put_indexed");
    }
    /// Indexed GET (gather): `dst[i] = base[index[i]]` for every i.
    template <class T>
    void get_indexed(T* dst, global_ptr<T> base, std::span<const std::uint64_t> index,
                     counter& flag) {
        detail::rma_get(self(), detail::indexed(base, index, dst), &flag,
                        "am::context::get_indexed");
    }
    /// Blocking indexed GET.
    template <class T>
    void get_indexed(T* dst, global_ptr<T> base, std::span<const std::uint64_t> index) {
        detail::rma_get(self(), detail::indexed(base, index, dst), nullptr,
                        "am::context::get_indexed");
    }

  protected:
    context_api() = default;

  private:
    Context& self() noexcept { return static_cast<Context&>(*this); }
    const Context& self() const noexcept { return static_cast<const Context&>(*this); }
};

}  // namespace am::splitc

#include <am/context.hpp>
