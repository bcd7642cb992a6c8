/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C API of collectives and teams: the byte-level forms of <am/coll.hpp> (docs/collectives.md)
 * over the same layer, so C and C++ ranks of one program run the same collectives.
 *
 * Conventions are those of <am/am.h>: a function that can fail returns an `am_status_t`, and
 * `am_last_error(ctx)` names the call, the rank and the limit crossed. No C++ exception leaves
 * a function of this header.
 *
 * - Teams: `am_coll_team_world` gives the job's team; `am_coll_team_split` makes new teams of
 *   the members that pass the same color (≥ 0), numbered by (key, rank); a member passing
 *   `AM_COLL_UNDEFINED` gets NULL. Every team from these calls is freed by `am_coll_team_free`
 *   (the world handle too; the world team itself lives with the context).
 * - Matching: every member of a team makes the same collective calls on it in the same order.
 *   Different calls, roots, operators, element types or sizes fail the job
 *   (`AM_ERR_COLLECTIVE_MISMATCH` on the rank that sees it in its call, `AM_ERR_ABORTED`
 *   elsewhere) naming the team, both ranks and both calls.
 * - Reductions combine `count` elements of `type` with `op` element-wise, in rank order.
 *   `am_coll_allreduce_fn` takes a user function instead (the same on every rank).
 * - Buffers: every call is blocking and copies what it needs; `out` may alias `in`. Calls are
 *   refused in plain handlers (`AM_ERR_BAD_CONTEXT`); an RPC's function (an optimistic handler)
 *   blocks in them as a thread.
 * - A NULL team returns `AM_ERR_INVALID_ARGUMENT` (there is no context to keep a message in).
 * - Thread-safety: a team is used by its rank, one call at a time.
 *
 * Valid C11 and C++; self-contained.
 */
#ifndef AM_AM_COLL_H
#define AM_AM_COLL_H

#include <am/am.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The color of a member that joins no new team in `am_coll_team_split`.
#define AM_COLL_UNDEFINED (-1)

/// A team (opaque): freed by `am_coll_team_free`.
typedef struct am_coll_team am_coll_team_t;

/// Element types of the reductions.
typedef enum am_coll_type {
    AM_COLL_INT32 = 0,
    AM_COLL_INT64 = 1,
    AM_COLL_UINT32 = 2,
    AM_COLL_UINT64 = 3,
    AM_COLL_FLOAT = 4,
    AM_COLL_DOUBLE = 5
} am_coll_type_t;

/// Built-in operators (bitwise ones on integer types only, else `AM_ERR_INVALID_ARGUMENT`).
typedef enum am_coll_op {
    AM_COLL_SUM = 0,
    AM_COLL_PROD = 1,
    AM_COLL_MIN = 2,
    AM_COLL_MAX = 3,
    AM_COLL_BAND = 4,
    AM_COLL_BOR = 5,
    AM_COLL_BXOR = 6,
    AM_COLL_LAND = 7,
    AM_COLL_LOR = 8
} am_coll_op_t;

/// A user operator: `inout[i] = op(in[i], inout[i])` for `count` elements of `elem_bytes`
/// each, where `in` holds the values of lower ranks than `inout` (MPI_User_function's order).
typedef void (*am_coll_op_fn_t)(const void* in, void* inout, size_t count, size_t elem_bytes,
                                void* user);

/// The job's team into `*out`.
AM_NODISCARD am_status_t am_coll_team_world(am_context_t* ctx, am_coll_team_t** out) AM_NOEXCEPT;
/// Collective over `parent`: the new team of the members with the same `color` into `*out`
/// (NULL for `AM_COLL_UNDEFINED`).
AM_NODISCARD am_status_t am_coll_team_split(am_coll_team_t* parent, int color, int key,
                                            am_coll_team_t** out) AM_NOEXCEPT;
/// Frees the handle (NULL is fine).
void am_coll_team_free(am_coll_team_t* team) AM_NOEXCEPT;
/// This rank's number in the team, and the team's size.
int am_coll_team_rank(const am_coll_team_t* team) AM_NOEXCEPT;
int am_coll_team_size(const am_coll_team_t* team) AM_NOEXCEPT;
/// The job rank of member `team_rank`, or -1 when out of range.
int am_coll_team_world_rank(const am_coll_team_t* team, int team_rank) AM_NOEXCEPT;

/// Returns once every member has called it.
AM_NODISCARD am_status_t am_coll_barrier(am_coll_team_t* team) AM_NOEXCEPT;
/// `bytes` of `root`'s `buf` into every member's `buf` (the same `bytes` everywhere).
AM_NODISCARD am_status_t am_coll_broadcast(am_coll_team_t* team, void* buf, size_t bytes,
                                           int root) AM_NOEXCEPT;
/// `out[i]` = op over members of `in[i]`, written at `root` only (`out` may be NULL elsewhere).
AM_NODISCARD am_status_t am_coll_reduce(am_coll_team_t* team, const void* in, void* out,
                                        size_t count, am_coll_type_t type, am_coll_op_t op,
                                        int root) AM_NOEXCEPT;
/// As `am_coll_reduce`, the result on every member.
AM_NODISCARD am_status_t am_coll_allreduce(am_coll_team_t* team, const void* in, void* out,
                                           size_t count, am_coll_type_t type,
                                           am_coll_op_t op) AM_NOEXCEPT;
/// As `am_coll_allreduce` with a user operator on elements of `elem_bytes`.
/// `count · elem_bytes` must not overflow (`AM_ERR_TOO_LARGE`).
AM_NODISCARD am_status_t am_coll_allreduce_fn(am_coll_team_t* team, const void* in, void* out,
                                              size_t count, size_t elem_bytes, am_coll_op_fn_t fn,
                                              void* user) AM_NOEXCEPT;
/// `out[i]` = op over members 0 … rank of `in[i]`.
AM_NODISCARD am_status_t am_coll_inclusive_scan(am_coll_team_t* team, const void* in, void* out,
                                                size_t count, am_coll_type_t type,
                                                am_coll_op_t op) AM_NOEXCEPT;
/// `out[i]` = op over members 0 … rank-1 of `in[i]`; `out` is left as it is on member 0.
AM_NODISCARD am_status_t am_coll_exclusive_scan(am_coll_team_t* team, const void* in, void* out,
                                                size_t count, am_coll_type_t type,
                                                am_coll_op_t op) AM_NOEXCEPT;
/// Every member's `bytes` of `in`, in rank order, into `out` (size × bytes) at `root`.
AM_NODISCARD am_status_t am_coll_gather(am_coll_team_t* team, const void* in, size_t bytes,
                                        void* out, int root) AM_NOEXCEPT;
/// As `am_coll_gather`, into every member's `out`.
AM_NODISCARD am_status_t am_coll_allgather(am_coll_team_t* team, const void* in, size_t bytes,
                                           void* out) AM_NOEXCEPT;
/// Block j (`bytes` at in + j·bytes) to member j; block i of `out` from member i.
AM_NODISCARD am_status_t am_coll_alltoall(am_coll_team_t* team, const void* in, size_t bytes,
                                          void* out) AM_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* AM_AM_COLL_H */
