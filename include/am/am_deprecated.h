/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C names from before docs/api.md's naming rule, kept for one release as forwarders to
 * the current ones: static inline functions and typedefs marked deprecated (GCC and Clang
 * warn at each use, naming the replacement), plain macros for constants (a macro cannot
 * warn). Behaviour, thread-safety, buffer lifetime and completion are those of the function
 * each forwards to. docs/api.md, "Deprecated names", has the table old -> new.
 *
 * Not included directly: every C header of `am` includes it at its end unless
 * `AM_NO_DEPRECATED` is defined, and each section below appears once the header that
 * declares its replacements is complete (so the file has no include guard of its own).
 * Only source compatibility is kept: the old names are no longer symbols of the library.
 *
 * Not renamed, so not here: the core's `am_<verb>` names (the unprefixed layer), the
 * `am_msg_test/wait/free` and `am_typed_*` functions, and <am/mpix_am.h> (MPI's naming).
 * Renamed struct tags (`struct am_global_ptr`, `struct am_flag`, `struct am_epoch_stats`,
 * `struct am_future`) have no forwarder: use the typedefs.
 *
 * Valid C11 and C++.
 */

#ifndef AM_DEPRECATED_USE
#if defined(__GNUC__) || defined(__clang__)
/// Marks a forwarder deprecated, naming its replacement in the compiler's warning.
#define AM_DEPRECATED_USE(replacement) \
    __attribute__((deprecated("use " #replacement " (docs/api.md, deprecated names)")))
#else
#define AM_DEPRECATED_USE(replacement)
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------- <am/am.h> */
/* The core: callback types without `_t`. */

#if defined(AM_AM_H_DECLARED) && !defined(AM_DEPRECATED_AM_H)
#define AM_DEPRECATED_AM_H

typedef am_rank_fn_t am_rank_fn AM_DEPRECATED_USE(am_rank_fn_t);
typedef am_long_fn_t am_long_fn AM_DEPRECATED_USE(am_long_fn_t);
typedef am_medium_fn_t am_medium_fn AM_DEPRECATED_USE(am_medium_fn_t);
typedef am_short_fn_t am_short_fn AM_DEPRECATED_USE(am_short_fn_t);

#endif /* AM_AM_H */

/* ------------------------------------------------------------------------- <am/am_rpc.h> */
/* RPC: futures without the `rpc` prefix, callback type without `_t`. */

#if defined(AM_AM_RPC_H_DECLARED) && !defined(AM_DEPRECATED_AM_RPC_H)
#define AM_DEPRECATED_AM_RPC_H

typedef am_rpc_future_t am_future_t AM_DEPRECATED_USE(am_rpc_future_t);
typedef am_rpc_fn_t am_rpc_fn AM_DEPRECATED_USE(am_rpc_fn_t);

AM_NODISCARD AM_DEPRECATED_USE(am_rpc_future_test) static inline am_status_t
    am_future_test(am_rpc_future_t* future, int* ready) AM_NOEXCEPT {
    return am_rpc_future_test(future, ready);
}

AM_NODISCARD AM_DEPRECATED_USE(am_rpc_future_wait) static inline am_status_t
    am_future_wait(am_rpc_future_t* future) AM_NOEXCEPT {
    return am_rpc_future_wait(future);
}

AM_NODISCARD AM_DEPRECATED_USE(am_rpc_future_get) static inline am_status_t
    am_future_get(am_rpc_future_t* future, void* buf, size_t cap, size_t* len) AM_NOEXCEPT {
    return am_rpc_future_get(future, buf, cap, len);
}

AM_DEPRECATED_USE(am_rpc_future_free)
static inline void am_future_free(am_rpc_future_t* future) AM_NOEXCEPT {
    am_rpc_future_free(future);
}

#endif /* AM_AM_RPC_H */

/* ------------------------------------------------------------------------- <am/am_msg.h> */
/* Send and receive: MPI-style names without the `msg` prefix. */

#if defined(AM_AM_MSG_H_DECLARED) && !defined(AM_DEPRECATED_AM_MSG_H)
#define AM_DEPRECATED_AM_MSG_H

AM_NODISCARD AM_DEPRECATED_USE(am_msg_send_nb) static inline am_status_t
    am_isend(am_context_t* ctx, int dest, int tag, const void* data, size_t len,
             am_msg_request_t** out) AM_NOEXCEPT {
    return am_msg_send_nb(ctx, dest, tag, data, len, out);
}

AM_NODISCARD AM_DEPRECATED_USE(am_msg_recv_nb) static inline am_status_t
    am_irecv(am_context_t* ctx, int source, int tag, void* buf, size_t cap,
             am_msg_request_t** out) AM_NOEXCEPT {
    return am_msg_recv_nb(ctx, source, tag, buf, cap, out);
}

AM_NODISCARD AM_DEPRECATED_USE(am_msg_send) static inline am_status_t
    am_send(am_context_t* ctx, int dest, int tag, const void* data, size_t len) AM_NOEXCEPT {
    return am_msg_send(ctx, dest, tag, data, len);
}

AM_NODISCARD AM_DEPRECATED_USE(am_msg_recv) static inline am_status_t
    am_recv(am_context_t* ctx, int source, int tag, void* buf, size_t cap,
            am_msg_status_t* status) AM_NOEXCEPT {
    return am_msg_recv(ctx, source, tag, buf, cap, status);
}

#define AM_ANY_SOURCE AM_MSG_ANY_SOURCE /* macros cannot warn */

#define AM_ANY_TAG AM_MSG_ANY_TAG /* macros cannot warn */

#endif /* AM_AM_MSG_H */

/* ---------------------------------------------------------------------- <am/am_splitc.h> */
/* Split-C global memory: names without the `splitc` prefix. */

#if defined(AM_AM_SPLITC_H_DECLARED) && !defined(AM_DEPRECATED_AM_SPLITC_H)
#define AM_DEPRECATED_AM_SPLITC_H

typedef am_splitc_flag_t am_flag_t AM_DEPRECATED_USE(am_splitc_flag_t);
typedef am_splitc_gptr_t am_gptr_t AM_DEPRECATED_USE(am_splitc_gptr_t);

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_put) static inline am_status_t
    am_put(am_context_t* ctx, am_splitc_gptr_t dst, const void* src, size_t bytes) AM_NOEXCEPT {
    return am_splitc_put(ctx, dst, src, bytes);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_put_nb) static inline am_status_t
    am_put_nb(am_context_t* ctx, am_splitc_gptr_t dst, const void* src, size_t bytes,
              am_splitc_flag_t* flag, am_splitc_flag_t* done) AM_NOEXCEPT {
    return am_splitc_put_nb(ctx, dst, src, bytes, flag, done);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_put_strided) static inline am_status_t
    am_put_strided(am_context_t* ctx, am_splitc_gptr_t dst, size_t dst_stride, const void* src,
                   size_t src_stride, size_t width, size_t rows) AM_NOEXCEPT {
    return am_splitc_put_strided(ctx, dst, dst_stride, src, src_stride, width, rows);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_put_strided_nb) static inline am_status_t
    am_put_strided_nb(am_context_t* ctx, am_splitc_gptr_t dst, size_t dst_stride, const void* src,
                      size_t src_stride, size_t width, size_t rows, am_splitc_flag_t* flag,
                      am_splitc_flag_t* done) AM_NOEXCEPT {
    return am_splitc_put_strided_nb(ctx, dst, dst_stride, src, src_stride, width, rows, flag, done);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_put_indexed) static inline am_status_t
    am_put_indexed(am_context_t* ctx, am_splitc_gptr_t base, const uint64_t* index, size_t count,
                   const void* src, size_t elem_bytes) AM_NOEXCEPT {
    return am_splitc_put_indexed(ctx, base, index, count, src, elem_bytes);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_put_indexed_nb) static inline am_status_t
    am_put_indexed_nb(am_context_t* ctx, am_splitc_gptr_t base, const uint64_t* index, size_t count,
                      const void* src, size_t elem_bytes, am_splitc_flag_t* flag,
                      am_splitc_flag_t* done) AM_NOEXCEPT {
    return am_splitc_put_indexed_nb(ctx, base, index, count, src, elem_bytes, flag, done);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_get) static inline am_status_t
    am_get(am_context_t* ctx, void* dst, am_splitc_gptr_t src, size_t bytes) AM_NOEXCEPT {
    return am_splitc_get(ctx, dst, src, bytes);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_get_nb) static inline am_status_t
    am_get_nb(am_context_t* ctx, void* dst, am_splitc_gptr_t src, size_t bytes,
              am_splitc_flag_t* flag) AM_NOEXCEPT {
    return am_splitc_get_nb(ctx, dst, src, bytes, flag);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_get_strided) static inline am_status_t
    am_get_strided(am_context_t* ctx, void* dst, size_t dst_stride, am_splitc_gptr_t src,
                   size_t src_stride, size_t width, size_t rows) AM_NOEXCEPT {
    return am_splitc_get_strided(ctx, dst, dst_stride, src, src_stride, width, rows);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_get_strided_nb) static inline am_status_t
    am_get_strided_nb(am_context_t* ctx, void* dst, size_t dst_stride, am_splitc_gptr_t src,
                      size_t src_stride, size_t width, size_t rows,
                      am_splitc_flag_t* flag) AM_NOEXCEPT {
    return am_splitc_get_strided_nb(ctx, dst, dst_stride, src, src_stride, width, rows, flag);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_get_indexed) static inline am_status_t
    am_get_indexed(am_context_t* ctx, void* dst, am_splitc_gptr_t base, const uint64_t* index,
                   size_t count, size_t elem_bytes) AM_NOEXCEPT {
    return am_splitc_get_indexed(ctx, dst, base, index, count, elem_bytes);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_get_indexed_nb) static inline am_status_t
    am_get_indexed_nb(am_context_t* ctx, void* dst, am_splitc_gptr_t base, const uint64_t* index,
                      size_t count, size_t elem_bytes, am_splitc_flag_t* flag) AM_NOEXCEPT {
    return am_splitc_get_indexed_nb(ctx, dst, base, index, count, elem_bytes, flag);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_alloc) static inline am_status_t
    am_allocate(am_context_t* ctx, size_t bytes, size_t align, am_splitc_gptr_t* out) AM_NOEXCEPT {
    return am_splitc_alloc(ctx, bytes, align, out);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_free) static inline am_status_t
    am_deallocate(am_context_t* ctx, am_splitc_gptr_t p) AM_NOEXCEPT {
    return am_splitc_free(ctx, p);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_exchange) static inline am_status_t
    am_exchange(am_context_t* ctx, am_splitc_gptr_t mine, am_splitc_gptr_t* all) AM_NOEXCEPT {
    return am_splitc_exchange(ctx, mine, all);
}

AM_DEPRECATED_USE(am_splitc_local)
static inline void* am_local(const am_context_t* ctx, am_splitc_gptr_t p,
                             size_t bytes) AM_NOEXCEPT {
    return am_splitc_local(ctx, p, bytes);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_to_global) static inline am_status_t
    am_to_global(am_context_t* ctx, const void* addr, size_t bytes,
                 am_splitc_gptr_t* out) AM_NOEXCEPT {
    return am_splitc_to_global(ctx, addr, bytes, out);
}

AM_DEPRECATED_USE(am_splitc_gptr)
static inline am_splitc_gptr_t am_gptr(int rank, uint64_t offset) AM_NOEXCEPT {
    return am_splitc_gptr(rank, offset);
}

AM_DEPRECATED_USE(am_splitc_gptr_add)
static inline am_splitc_gptr_t am_gptr_add(am_splitc_gptr_t p, int64_t bytes) AM_NOEXCEPT {
    return am_splitc_gptr_add(p, bytes);
}

AM_DEPRECATED_USE(am_splitc_gptr_is_null)
static inline int am_gptr_is_null(am_splitc_gptr_t p) AM_NOEXCEPT {
    return am_splitc_gptr_is_null(p);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_flag_create) static inline am_status_t
    am_flag_create(am_context_t* ctx, am_splitc_flag_t** out) AM_NOEXCEPT {
    return am_splitc_flag_create(ctx, out);
}

AM_DEPRECATED_USE(am_splitc_flag_free)
static inline void am_flag_free(am_splitc_flag_t* flag) AM_NOEXCEPT {
    am_splitc_flag_free(flag);
}

AM_DEPRECATED_USE(am_splitc_flag_value)
static inline uint64_t am_flag_value(const am_splitc_flag_t* flag) AM_NOEXCEPT {
    return am_splitc_flag_value(flag);
}

AM_DEPRECATED_USE(am_splitc_flag_add)
static inline void am_flag_add(am_splitc_flag_t* flag, uint64_t n) AM_NOEXCEPT {
    am_splitc_flag_add(flag, n);
}

AM_DEPRECATED_USE(am_splitc_flag_reset)
static inline void am_flag_reset(am_splitc_flag_t* flag) AM_NOEXCEPT {
    am_splitc_flag_reset(flag);
}

AM_NODISCARD AM_DEPRECATED_USE(am_splitc_flag_wait) static inline am_status_t
    am_flag_wait(am_splitc_flag_t* flag, uint64_t n) AM_NOEXCEPT {
    return am_splitc_flag_wait(flag, n);
}

#define AM_MAX_FLAGS AM_SPLITC_MAX_FLAGS /* macros cannot warn */

#endif /* AM_AM_SPLITC_H */

/* ----------------------------------------------------------------------- <am/am_typed.h> */
/* The typed layer: epochs and the combine callback without the `typed` prefix. */

#if defined(AM_AM_TYPED_H_DECLARED) && !defined(AM_DEPRECATED_AM_TYPED_H)
#define AM_DEPRECATED_AM_TYPED_H

typedef am_typed_epoch_stats_t am_epoch_stats_t AM_DEPRECATED_USE(am_typed_epoch_stats_t);
typedef am_typed_combine_fn_t am_combine_fn AM_DEPRECATED_USE(am_typed_combine_fn_t);
typedef am_typed_fn_t am_typed_fn AM_DEPRECATED_USE(am_typed_fn_t);

AM_NODISCARD AM_DEPRECATED_USE(am_typed_epoch_begin) static inline am_status_t
    am_epoch_begin(am_context_t* ctx, int depth) AM_NOEXCEPT {
    return am_typed_epoch_begin(ctx, depth);
}

AM_NODISCARD AM_DEPRECATED_USE(am_typed_epoch_end) static inline am_status_t
    am_epoch_end(am_context_t* ctx, uint64_t value, uint64_t* sum,
                 am_typed_epoch_stats_t* stats) AM_NOEXCEPT {
    return am_typed_epoch_end(ctx, value, sum, stats);
}

#endif /* AM_AM_TYPED_H */

#ifdef __cplusplus
}  // extern "C"
#endif
