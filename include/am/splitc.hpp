// SPDX-License-Identifier: MIT
/// @file
/// The Split-C layer (src/rma): global memory, `global_ptr`, and put/get between local memory
/// and any rank's segment. Its calls are members of `am::context` (`ctx.put(...)`), declared
/// here in `am::splitc::context_api`, which `am::context` inherits; `am::context` and this
/// header include each other, so either one gives the whole API.
///
/// The registered segment of each rank is its global memory. `allocate` carves blocks out of
/// this rank's segment; `put` and `get` copy between local memory and any rank's segment.
/// Transports that map every segment (threads, shm) copy directly; ranks the transport reaches
/// by its one-sided network (ucx) are read and written by it; otherwise (or with `AM_RMA=am`) a
/// put is a long request and a get a short request answered by the data, exactly as in the
/// Split-C paper. Ranges are checked against the target's segment before
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
/// Remote atomics (`fetch_add`, `compare_swap`, `atomic`, ...): a read-modify-write of one
/// aligned word of `int32_t`, `uint32_t`, `int64_t`, `uint64_t` (every `am::atomic_op`), or
/// `float` / `double` (add, swap, compare_swap; compare_swap compares bit patterns), atomic with
/// respect to every other remote atomic on that word from any rank. Executed with CPU atomics on
/// a mapped segment (threads, shm, node peers; not with `AM_RMA=am`), with network atomics
/// where the transport has them (ucx; min, max and float add go by message), else by a message
/// run at the owner with CPU atomics, which replies with the old value. Blocking forms return
/// once the operation is done at the target (with the old value when fetching); split-phase
/// forms count `flag` here, or make their future ready, then. Not ordered with puts, gets or
/// other atomics (use flags). Bad input (null, unaligned, outside the segment, bad rank, an op
/// the type does not have) throws `am::error` naming the call, rank and limit before anything
/// is sent. The blocking forms are not callable from handlers; the split-phase ones are, from
/// request handlers. Details: docs/splitc.md, "Remote atomics".
///
/// Thread-safety: as the context's (the thread that runs the rank; with a progress thread the
/// calls are serialised internally).
#pragma once

#include <am/atomic_op.hpp>
#include <am/detail/splitc.hpp>
#include <am/global_ptr.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

// Declared here, defined in <am/future.hpp> (which includes this header through <am/oam.hpp>):
// what atomic_async needs when it is called.
namespace am {
template <class T>
class future;
namespace detail {
template <class T>
class future_state;
template <class T>
class state_ref;
struct oam_sched;
oam_sched* oam_of(context& ctx, const char* call);
}  // namespace detail
}  // namespace am

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

    // ------------------------------------------------------------------- remote atomics
    // `T` is int32_t, uint32_t, int64_t, uint64_t, float or double; `p` is aligned to
    // sizeof(T). See the file comment for paths, completion and errors.

    /// Blocking: applies `op` with `operand` to the word at `p` and returns its old value.
    /// For compare_swap use the overload with `compare`. Not from a handler.
    template <class T>
    T atomic(global_ptr<T> p, atomic_op op, std::type_identity_t<T> operand) {
        return atomic_run(p, op, operand, T{}, "am::context::atomic");
    }
    /// Blocking: as above; for compare_swap, the word becomes `operand` only if it equals
    /// `compare` (other ops ignore `compare`). Returns the old value.
    template <class T>
    T atomic(global_ptr<T> p, atomic_op op, std::type_identity_t<T> operand,
             std::type_identity_t<T> compare) {
        return atomic_run(p, op, operand, compare, "am::context::atomic");
    }
    /// Split-phase, not fetching: starts `op` and returns; `flag` (here) counts one once it
    /// is done at the target. From request handlers too.
    template <class T>
    void atomic(global_ptr<T> p, atomic_op op, std::type_identity_t<T> operand, counter& flag) {
        atomic_flag(p, op, operand, T{}, flag, "am::context::atomic");
    }
    /// Split-phase compare_swap (or any op, `compare` ignored unless compare_swap).
    template <class T>
    void atomic(global_ptr<T> p, atomic_op op, std::type_identity_t<T> operand,
                std::type_identity_t<T> compare, counter& flag) {
        atomic_flag(p, op, operand, compare, flag, "am::context::atomic");
    }
    /// Split-phase, fetching: starts `op` and returns a future of the old value, ready once
    /// the op is done at the target (at once on a mapped segment). A call needs
    /// <am/future.hpp> included (this header only declares am::future, as <am/am.hpp> includes
    /// both) and a context made by am::run (the future's continuations are optimistic handlers).
    template <class T>
    future<T> atomic_async(global_ptr<T> p, atomic_op op, std::type_identity_t<T> operand,
                           std::type_identity_t<T> compare = T{}) {
        // One reference for the future, one for the completion, which sets the value.
        const char* call = "am::context::atomic_async";
        am::detail::state_ref<T> st(
            new am::detail::future_state<T>(am::detail::oam_of(self(), call)));
        detail::atomic_completion done;
        done.done = [](void* arg, std::uint64_t old) {
            auto* s = static_cast<am::detail::future_state<T>*>(arg);
            (void)s->set_value(detail::from_word<T>(old));
            s->unref();
        };
        done.arg = st.get();
        st->ref();
        try {
            (void)detail::rma_atomic(self(), atomic_of(p, op, operand, compare), &done, call);
        } catch (...) {
            st->unref();
            throw;
        }
        return future<T>(std::move(st));
    }

    /// Blocking `w += v`; returns the old value (integers wrap; floats: IEEE addition).
    template <class T>
    T fetch_add(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_run(p, atomic_op::add, v, T{}, "am::context::fetch_add");
    }
    /// Blocking `w &= v`; returns the old value.
    template <std::integral T>
    T fetch_and(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_run(p, atomic_op::bit_and, v, T{}, "am::context::fetch_and");
    }
    /// Blocking `w |= v`; returns the old value.
    template <std::integral T>
    T fetch_or(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_run(p, atomic_op::bit_or, v, T{}, "am::context::fetch_or");
    }
    /// Blocking `w ^= v`; returns the old value.
    template <std::integral T>
    T fetch_xor(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_run(p, atomic_op::bit_xor, v, T{}, "am::context::fetch_xor");
    }
    /// Blocking `w = min(w, v)`; returns the old value.
    template <std::integral T>
    T fetch_min(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_run(p, atomic_op::min, v, T{}, "am::context::fetch_min");
    }
    /// Blocking `w = max(w, v)`; returns the old value.
    template <std::integral T>
    T fetch_max(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_run(p, atomic_op::max, v, T{}, "am::context::fetch_max");
    }
    /// Blocking `w = v`; returns the old value.
    template <class T>
    T swap(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_run(p, atomic_op::swap, v, T{}, "am::context::swap");
    }
    /// Blocking: `w = desired` if `w == expected`; returns the old value (equal to `expected`
    /// when the swap happened). Floats compare bit patterns.
    template <class T>
    T compare_swap(global_ptr<T> p, std::type_identity_t<T> expected,
                   std::type_identity_t<T> desired) {
        return atomic_run(p, atomic_op::compare_swap, desired, expected,
                          "am::context::compare_swap");
    }
    /// Blocking `w += v`, returning once done at the target.
    template <class T>
    void atomic_add(global_ptr<T> p, std::type_identity_t<T> v) {
        (void)atomic_run(p, atomic_op::add, v, T{}, "am::context::atomic_add");
    }
    /// Blocking `w &= v`.
    template <std::integral T>
    void atomic_and(global_ptr<T> p, std::type_identity_t<T> v) {
        (void)atomic_run(p, atomic_op::bit_and, v, T{}, "am::context::atomic_and");
    }
    /// Blocking `w |= v`.
    template <std::integral T>
    void atomic_or(global_ptr<T> p, std::type_identity_t<T> v) {
        (void)atomic_run(p, atomic_op::bit_or, v, T{}, "am::context::atomic_or");
    }
    /// Blocking `w ^= v`.
    template <std::integral T>
    void atomic_xor(global_ptr<T> p, std::type_identity_t<T> v) {
        (void)atomic_run(p, atomic_op::bit_xor, v, T{}, "am::context::atomic_xor");
    }
    /// Blocking `w = min(w, v)`.
    template <std::integral T>
    void atomic_min(global_ptr<T> p, std::type_identity_t<T> v) {
        (void)atomic_run(p, atomic_op::min, v, T{}, "am::context::atomic_min");
    }
    /// Blocking `w = max(w, v)`.
    template <std::integral T>
    void atomic_max(global_ptr<T> p, std::type_identity_t<T> v) {
        (void)atomic_run(p, atomic_op::max, v, T{}, "am::context::atomic_max");
    }
    /// Split-phase `w += v`: `flag` (here) counts one once done at the target.
    template <class T>
    void atomic_add(global_ptr<T> p, std::type_identity_t<T> v, counter& flag) {
        atomic_flag(p, atomic_op::add, v, T{}, flag, "am::context::atomic_add");
    }
    /// Split-phase `w &= v`.
    template <std::integral T>
    void atomic_and(global_ptr<T> p, std::type_identity_t<T> v, counter& flag) {
        atomic_flag(p, atomic_op::bit_and, v, T{}, flag, "am::context::atomic_and");
    }
    /// Split-phase `w |= v`.
    template <std::integral T>
    void atomic_or(global_ptr<T> p, std::type_identity_t<T> v, counter& flag) {
        atomic_flag(p, atomic_op::bit_or, v, T{}, flag, "am::context::atomic_or");
    }
    /// Split-phase `w ^= v`.
    template <std::integral T>
    void atomic_xor(global_ptr<T> p, std::type_identity_t<T> v, counter& flag) {
        atomic_flag(p, atomic_op::bit_xor, v, T{}, flag, "am::context::atomic_xor");
    }
    /// Split-phase `w = min(w, v)`.
    template <std::integral T>
    void atomic_min(global_ptr<T> p, std::type_identity_t<T> v, counter& flag) {
        atomic_flag(p, atomic_op::min, v, T{}, flag, "am::context::atomic_min");
    }
    /// Split-phase `w = max(w, v)`.
    template <std::integral T>
    void atomic_max(global_ptr<T> p, std::type_identity_t<T> v, counter& flag) {
        atomic_flag(p, atomic_op::max, v, T{}, flag, "am::context::atomic_max");
    }
    /// Split-phase fetch_add: a future of the old value.
    template <class T>
    future<T> fetch_add_async(global_ptr<T> p, std::type_identity_t<T> v) {
        return atomic_async(p, atomic_op::add, v);
    }

  protected:
    context_api() = default;

  private:
    template <class T>
    static detail::atomic_args atomic_of(global_ptr<T> p, atomic_op op, T operand, T compare) {
        return detail::atomic_args{p.rank(),
                                   p.offset(),
                                   op,
                                   detail::atomic_type_of<T>(),
                                   detail::to_word(operand),
                                   detail::to_word(compare)};
    }
    template <class T>
    T atomic_run(global_ptr<T> p, atomic_op op, T operand, T compare, const char* call) {
        return detail::from_word<T>(
            detail::rma_atomic(self(), atomic_of(p, op, operand, compare), nullptr, call));
    }
    template <class T>
    void atomic_flag(global_ptr<T> p, atomic_op op, T operand, T compare, counter& flag,
                     const char* call) {
        const detail::atomic_completion done{&flag};
        (void)detail::rma_atomic(self(), atomic_of(p, op, operand, compare), &done, call);
    }

    Context& self() noexcept { return static_cast<Context&>(*this); }
    const Context& self() const noexcept { return static_cast<const Context&>(*this); }
};

}  // namespace am::splitc

#include <am/context.hpp>
