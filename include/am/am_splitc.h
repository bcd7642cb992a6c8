/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C API of Split-C global memory: global pointers into the ranks' registered segments,
 * segment allocation, and PUT/GET (contiguous, strided, indexed), blocking or split-phase with
 * flags. It mirrors the C++ members of `am::context` (docs/splitc.md) over the same layer, so
 * C and C++ ranks of one program see the same memory and flags.
 *
 * Conventions are those of <am/am.h>: a function that can fail returns an `am_status_t`, and
 * on failure nothing was sent, copied or allocated; `am_last_error(ctx)` names the call, the
 * rank and the limit crossed (e.g. "am_splitc_put: rank 0: bytes [1048560, 1048592) are outside
 * rank 1's segment of 1048576 bytes"). No C++ exception leaves a function of this header.
 *
 * - Global memory: each rank's registered segment (`am_segment`, `AM_SEGMENT_BYTES`). A
 *   global pointer (`am_splitc_gptr_t`) names a rank and a byte offset in that rank's segment,
 *   so it means the same in every process and may travel in messages (two 8-byte arguments).
 * - Flags: a split-phase PUT counts one on a flag of the rank that receives the data, a GET on
 *   a flag of the calling rank, once per call when all of its data is in place. A PUT names its
 *   flag by identity: flags are numbered by their position among the rank's live flags (and
 *   the C++ `am::counter`s), and the target counts its own flag at the same position. So flags
 *   that serve as remote flags are created in the same order on every rank, like handlers,
 *   and must exist on the target when the data arrives (else the job goes down with a message
 *   naming the flag).
 * - Buffers: the source of a PUT may be reused when the call returns, blocking or not. The
 *   destination of a split-phase GET must stay valid until its flag has counted it.
 * - Completion: a blocking PUT returns when the data is in place at the target; a blocking GET
 *   when it is in the destination. Split-phase calls return at once (they never block) and
 *   report completion only through their flags. Operations are not ordered with each other.
 * - Checks: before anything is sent, the whole range (every row, every index) is checked
 *   against the target's segment (`AM_ERR_OUT_OF_SEGMENT`, naming the range, the target rank
 *   and the segment size; a range whose arithmetic overflows is outside too); a bad rank is
 *   `AM_ERR_BAD_RANK`, a null global pointer or buffer `AM_ERR_INVALID_ARGUMENT`.
 * - Handlers: the split-phase calls may be issued from request handlers (use
 *   `am_token_context` for the context); those that send a request (to another rank, or on
 *   the active-message path, `AM_RMA=am`) are refused in reply handlers
 *   (`AM_ERR_BAD_CONTEXT`). The blocking calls and `am_splitc_flag_wait` are refused in handlers
 *   (`AM_ERR_BAD_CONTEXT`), except in a remote function (RPC), which they block.
 * - Thread-safety: as a context (<am/am.h>): the rank's thread and its handlers. Flag values
 *   (`am_splitc_flag_value`, `am_splitc_flag_add`) may be read and updated from any thread.
 * - Remote atomics (`am_splitc_atomic_*`): one read-modify-write of an aligned 32- or 64-bit word
 *   of any rank's segment, atomic with respect to every other remote atomic on that word (C or
 *   C++, any rank, any path); see their section below and docs/splitc.md, "Remote atomics".
 *
 * Valid C11 and C++; self-contained.
 */
#ifndef AM_AM_SPLITC_H
#define AM_AM_SPLITC_H

#include <am/am.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- global pointers */

/// A pointer into the registered segment of rank `rank`, at byte `offset`: Split-C's global
/// pointer, a value type. Rank -1 is the null pointer. Arithmetic is in bytes
/// (`am_splitc_gptr_add`); the pointer never leaves its rank.
typedef struct am_splitc_global_ptr {
    int rank;         ///< the rank whose segment holds the object; -1 for null
    uint64_t offset;  ///< byte offset in that rank's segment
} am_splitc_gptr_t;

/// The global pointer to byte `offset` of `rank`'s segment. No check here: puts and gets
/// check the range against the target's segment.
static inline am_splitc_gptr_t am_splitc_gptr(int rank, uint64_t offset) AM_NOEXCEPT {
    am_splitc_gptr_t p;
    p.rank = rank;
    p.offset = offset;
    return p;
}

/// `p` moved by `bytes` (may be negative) within the same rank.
static inline am_splitc_gptr_t am_splitc_gptr_add(am_splitc_gptr_t p, int64_t bytes) AM_NOEXCEPT {
    p.offset += (uint64_t)bytes;
    return p;
}

/// Non-zero when `p` is the null global pointer.
static inline int am_splitc_gptr_is_null(am_splitc_gptr_t p) AM_NOEXCEPT {
    return p.rank < 0;
}

/* --------------------------------------------------------------------------- allocation */

/// Allocates `bytes` (0 allowed: a block of its own) in this rank's segment, aligned to
/// `align` (a power of two no larger than the segment, or 0; at least 16 bytes in any case),
/// not initialised, and stores its global pointer in `*out` (null on failure). First fit;
/// `AM_ERR_NO_MEMORY` names the segment size and the free bytes when no block fits. Local:
/// other ranks learn the pointer through `am_splitc_exchange` or messages. Thread-safe.
AM_NODISCARD am_status_t am_splitc_alloc(am_context_t* ctx, size_t bytes, size_t align,
                                         am_splitc_gptr_t* out) AM_NOEXCEPT;

/// Returns a block from `am_splitc_alloc` of this rank to the segment. It must no longer be the
/// target of any put or get. `AM_ERR_INVALID_ARGUMENT` when `p` is another rank's or not the
/// start of an allocated block.
AM_NODISCARD am_status_t am_splitc_free(am_context_t* ctx, am_splitc_gptr_t p) AM_NOEXCEPT;

/// Collective (an allgather): every rank contributes `mine` and receives all contributions,
/// indexed by rank, in `all` (`am_size(ctx)` entries). Polls while it waits. Not callable from
/// a handler (`AM_ERR_BAD_CONTEXT`).
AM_NODISCARD am_status_t am_splitc_exchange(am_context_t* ctx, am_splitc_gptr_t mine,
                                            am_splitc_gptr_t* all) AM_NOEXCEPT;

/// The address of the `bytes` at `p` in this process when `p`'s segment is mapped here (always
/// for this rank; for every rank on threads and shm unless `AM_RMA=am`), else NULL (also when
/// the range leaves the segment, `p` is null or its rank is out of range). Accesses through it
/// are ordinary memory accesses: synchronise with flags or barriers.
void* am_splitc_local(const am_context_t* ctx, am_splitc_gptr_t p, size_t bytes) AM_NOEXCEPT;

/// Stores in `*out` the global pointer of `addr`, whose `bytes` must lie in this rank's
/// segment (else `AM_ERR_OUT_OF_SEGMENT`).
AM_NODISCARD am_status_t am_splitc_to_global(am_context_t* ctx, const void* addr, size_t bytes,
                                             am_splitc_gptr_t* out) AM_NOEXCEPT;

/* -------------------------------------------------------------------------------- flags */

/// A Split-C flag: a completion counter with an identity other ranks' puts can name. Opaque;
/// created by `am_splitc_flag_create`, freed by `am_splitc_flag_free`. Distinct from
/// `am_counter_t`, which has no identity and serves handlers.
typedef struct am_splitc_flag am_splitc_flag_t;

/// Most flags (with the C++ `am::counter`s) a rank may have alive at once.
#define AM_SPLITC_MAX_FLAGS 4096u

/// Creates a flag at 0 on this rank and stores it in `*out` (NULL on failure). Its identity is
/// the lowest position free among the rank's live flags: create remote flags in the same order
/// on every rank. `AM_ERR_TOO_LARGE` when `AM_SPLITC_MAX_FLAGS` are alive.
AM_NODISCARD am_status_t am_splitc_flag_create(am_context_t* ctx,
                                               am_splitc_flag_t** out) AM_NOEXCEPT;

/// Frees a flag (NULL is ignored) and its position. No put, get or handler may still count
/// it: free remote flags only once every put naming them has been counted on every rank (e.g.
/// after a barrier that follows the last wait). Free every flag before the rank function
/// returns.
void am_splitc_flag_free(am_splitc_flag_t* flag) AM_NOEXCEPT;

/// The flag's count (acquire). 0 for NULL.
uint64_t am_splitc_flag_value(const am_splitc_flag_t* flag) AM_NOEXCEPT;

/// Adds `n` (release), as a handler would to report its own completion.
void am_splitc_flag_add(am_splitc_flag_t* flag, uint64_t n) AM_NOEXCEPT;

/// Sets the count back to 0. No operation that counts it may be in flight.
void am_splitc_flag_reset(am_splitc_flag_t* flag) AM_NOEXCEPT;

/// Polls the flag's context until the count reaches `n` (Split-C's sync), backing off while
/// nothing arrives. `AM_ERR_BAD_CONTEXT` from a handler (a remote function blocks instead),
/// `AM_ERR_ABORTED` when the job is going down.
AM_NODISCARD am_status_t am_splitc_flag_wait(am_splitc_flag_t* flag, uint64_t n) AM_NOEXCEPT;

/* ------------------------------------------------------------------------------ put/get */

/// Blocking PUT: copies `bytes` from `src` to `dst`; returns when they are in place at the
/// target. `src` may be NULL when `bytes` is 0.
AM_NODISCARD am_status_t am_splitc_put(am_context_t* ctx, am_splitc_gptr_t dst, const void* src,
                                       size_t bytes) AM_NOEXCEPT;

/// Split-phase PUT: starts the copy and returns. Then `flag` (a flag of this context, naming
/// its counterpart on `dst.rank`) counts one on the target, and `done` (a flag of this
/// context) counts one here, when the data is in place at the target. Either may be NULL, not
/// both (`AM_ERR_INVALID_ARGUMENT`: use `am_splitc_put` to block).
AM_NODISCARD am_status_t am_splitc_put_nb(am_context_t* ctx, am_splitc_gptr_t dst, const void* src,
                                          size_t bytes, am_splitc_flag_t* flag,
                                          am_splitc_flag_t* done) AM_NOEXCEPT;

/// Blocking GET: copies `bytes` from `src` to `dst`; returns when they are there.
AM_NODISCARD am_status_t am_splitc_get(am_context_t* ctx, void* dst, am_splitc_gptr_t src,
                                       size_t bytes) AM_NOEXCEPT;

/// Split-phase GET: starts the copy and returns; `flag` (of this context, required) counts
/// one when the data is in `dst`, which must stay valid until then.
AM_NODISCARD am_status_t am_splitc_get_nb(am_context_t* ctx, void* dst, am_splitc_gptr_t src,
                                          size_t bytes, am_splitc_flag_t* flag) AM_NOEXCEPT;

/// Strided (2-D block) PUT, blocking: `rows` rows of `width` bytes; row i goes from
/// `src + i * src_stride` to `dst + i * dst_stride` (strides in bytes, at least `width`
/// when `rows` > 1, else `AM_ERR_INVALID_ARGUMENT`). Nothing is copied when `width` or
/// `rows` is 0.
AM_NODISCARD am_status_t am_splitc_put_strided(am_context_t* ctx, am_splitc_gptr_t dst,
                                               size_t dst_stride, const void* src,
                                               size_t src_stride, size_t width,
                                               size_t rows) AM_NOEXCEPT;

/// Strided PUT, split-phase: as `am_splitc_put_strided`, completing as `am_splitc_put_nb` (once for
/// all rows).
AM_NODISCARD am_status_t am_splitc_put_strided_nb(am_context_t* ctx, am_splitc_gptr_t dst,
                                                  size_t dst_stride, const void* src,
                                                  size_t src_stride, size_t width, size_t rows,
                                                  am_splitc_flag_t* flag,
                                                  am_splitc_flag_t* done) AM_NOEXCEPT;

/// Strided GET, blocking: row i goes from `src + i * src_stride` to `dst + i * dst_stride`.
AM_NODISCARD am_status_t am_splitc_get_strided(am_context_t* ctx, void* dst, size_t dst_stride,
                                               am_splitc_gptr_t src, size_t src_stride,
                                               size_t width, size_t rows) AM_NOEXCEPT;

/// Strided GET, split-phase: as `am_splitc_get_strided`, completing as `am_splitc_get_nb`.
AM_NODISCARD am_status_t am_splitc_get_strided_nb(am_context_t* ctx, void* dst, size_t dst_stride,
                                                  am_splitc_gptr_t src, size_t src_stride,
                                                  size_t width, size_t rows,
                                                  am_splitc_flag_t* flag) AM_NOEXCEPT;

/// Indexed PUT (scatter), blocking: for i in [0, count), the element of `elem_bytes` at
/// `src + i * elem_bytes` goes to `base + index[i] * elem_bytes`. When an index repeats,
/// which of its elements lands there is unspecified. `index` is read before the call returns.
/// Nothing is copied when `count` or `elem_bytes` is 0 (`index` may then be NULL).
AM_NODISCARD am_status_t am_splitc_put_indexed(am_context_t* ctx, am_splitc_gptr_t base,
                                               const uint64_t* index, size_t count, const void* src,
                                               size_t elem_bytes) AM_NOEXCEPT;

/// Indexed PUT, split-phase: completing as `am_splitc_put_nb` (once for all elements).
AM_NODISCARD am_status_t am_splitc_put_indexed_nb(am_context_t* ctx, am_splitc_gptr_t base,
                                                  const uint64_t* index, size_t count,
                                                  const void* src, size_t elem_bytes,
                                                  am_splitc_flag_t* flag,
                                                  am_splitc_flag_t* done) AM_NOEXCEPT;

/// Indexed GET (gather), blocking: `dst + i * elem_bytes` gets the element at
/// `base + index[i] * elem_bytes`.
AM_NODISCARD am_status_t am_splitc_get_indexed(am_context_t* ctx, void* dst, am_splitc_gptr_t base,
                                               const uint64_t* index, size_t count,
                                               size_t elem_bytes) AM_NOEXCEPT;

/// Indexed GET, split-phase: completing as `am_splitc_get_nb`.
AM_NODISCARD am_status_t am_splitc_get_indexed_nb(am_context_t* ctx, void* dst,
                                                  am_splitc_gptr_t base, const uint64_t* index,
                                                  size_t count, size_t elem_bytes,
                                                  am_splitc_flag_t* flag) AM_NOEXCEPT;

/* ------------------------------------------------------------------------ remote atomics */

/// What a remote atomic does to the word `w` at its target with `operand` (and `compare`).
/// The values are those of `am::atomic_op`.
typedef enum am_splitc_atomic_op {
    AM_SPLITC_ATOMIC_ADD = 0,           ///< w = w + operand (integers wrap; double: IEEE)
    AM_SPLITC_ATOMIC_AND = 1,           ///< w = w & operand
    AM_SPLITC_ATOMIC_OR = 2,            ///< w = w | operand
    AM_SPLITC_ATOMIC_XOR = 3,           ///< w = w ^ operand
    AM_SPLITC_ATOMIC_SWAP = 4,          ///< w = operand
    AM_SPLITC_ATOMIC_COMPARE_SWAP = 5,  ///< if (w == compare) w = operand
    AM_SPLITC_ATOMIC_MIN = 6,           ///< w = min(w, operand), signed or unsigned by the call
    AM_SPLITC_ATOMIC_MAX = 7            ///< w = max(w, operand)
} am_splitc_atomic_op_t;

/// Blocking remote atomic on the `int32_t` at `p` (aligned to 4 bytes): applies `op` with
/// `operand` (`compare` is used by AM_SPLITC_ATOMIC_COMPARE_SWAP only) and returns when it is
/// done at the target, with the old value in `*old` (when `old` is not NULL). Executed with CPU
/// atomics when `p`'s segment is mapped here, else by the network (ucx) or a message to the
/// owner, which runs it with CPU atomics. Not from a handler (`AM_ERR_BAD_CONTEXT`, except in a
/// remote function). Errors, before anything is sent: a null pointer or unaligned offset, an
/// unknown op `AM_ERR_INVALID_ARGUMENT`; a bad rank `AM_ERR_BAD_RANK`; a word outside the segment
/// `AM_ERR_OUT_OF_SEGMENT`.
AM_NODISCARD am_status_t am_splitc_atomic_i32(am_context_t* ctx, am_splitc_gptr_t p,
                                              am_splitc_atomic_op_t op, int32_t operand,
                                              int32_t compare, int32_t* old) AM_NOEXCEPT;
/// As am_splitc_atomic_i32 on a `uint32_t` word (min and max compare unsigned).
AM_NODISCARD am_status_t am_splitc_atomic_u32(am_context_t* ctx, am_splitc_gptr_t p,
                                              am_splitc_atomic_op_t op, uint32_t operand,
                                              uint32_t compare, uint32_t* old) AM_NOEXCEPT;
/// As am_splitc_atomic_i32 on an `int64_t` word (aligned to 8 bytes).
AM_NODISCARD am_status_t am_splitc_atomic_i64(am_context_t* ctx, am_splitc_gptr_t p,
                                              am_splitc_atomic_op_t op, int64_t operand,
                                              int64_t compare, int64_t* old) AM_NOEXCEPT;
/// As am_splitc_atomic_i32 on a `uint64_t` word (aligned to 8 bytes).
AM_NODISCARD am_status_t am_splitc_atomic_u64(am_context_t* ctx, am_splitc_gptr_t p,
                                              am_splitc_atomic_op_t op, uint64_t operand,
                                              uint64_t compare, uint64_t* old) AM_NOEXCEPT;
/// As am_splitc_atomic_i32 on a `double` word (aligned to 8 bytes): only ADD, SWAP and
/// COMPARE_SWAP (which compares bit patterns); other ops are `AM_ERR_INVALID_ARGUMENT`.
AM_NODISCARD am_status_t am_splitc_atomic_f64(am_context_t* ctx, am_splitc_gptr_t p,
                                              am_splitc_atomic_op_t op, double operand,
                                              double compare, double* old) AM_NOEXCEPT;

/// Split-phase remote atomic: starts the operation of am_splitc_atomic_i32 and returns; once it
/// is done at the target the old value is written to `*old` (when not NULL; it must stay valid
/// until then) and `flag` (of this context, required) counts one here. Never blocks; may be
/// called from request handlers (from reply handlers only when no message is needed: a mapped
/// segment or the network).
AM_NODISCARD am_status_t am_splitc_atomic_i32_nb(am_context_t* ctx, am_splitc_gptr_t p,
                                                 am_splitc_atomic_op_t op, int32_t operand,
                                                 int32_t compare, int32_t* old,
                                                 am_splitc_flag_t* flag) AM_NOEXCEPT;
/// Split-phase am_splitc_atomic_u32.
AM_NODISCARD am_status_t am_splitc_atomic_u32_nb(am_context_t* ctx, am_splitc_gptr_t p,
                                                 am_splitc_atomic_op_t op, uint32_t operand,
                                                 uint32_t compare, uint32_t* old,
                                                 am_splitc_flag_t* flag) AM_NOEXCEPT;
/// Split-phase am_splitc_atomic_i64.
AM_NODISCARD am_status_t am_splitc_atomic_i64_nb(am_context_t* ctx, am_splitc_gptr_t p,
                                                 am_splitc_atomic_op_t op, int64_t operand,
                                                 int64_t compare, int64_t* old,
                                                 am_splitc_flag_t* flag) AM_NOEXCEPT;
/// Split-phase am_splitc_atomic_u64.
AM_NODISCARD am_status_t am_splitc_atomic_u64_nb(am_context_t* ctx, am_splitc_gptr_t p,
                                                 am_splitc_atomic_op_t op, uint64_t operand,
                                                 uint64_t compare, uint64_t* old,
                                                 am_splitc_flag_t* flag) AM_NOEXCEPT;
/// Split-phase am_splitc_atomic_f64.
AM_NODISCARD am_status_t am_splitc_atomic_f64_nb(am_context_t* ctx, am_splitc_gptr_t p,
                                                 am_splitc_atomic_op_t op, double operand,
                                                 double compare, double* old,
                                                 am_splitc_flag_t* flag) AM_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

#define AM_AM_SPLITC_H_DECLARED /* for am_deprecated.h */
#ifndef AM_NO_DEPRECATED
#include <am/am_deprecated.h>
#endif

#endif /* AM_AM_SPLITC_H */
