/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C API of the distributed containers: the byte-string forms of <am/dist/map.hpp> and
 * <am/dist/set.hpp>. A C map is an `am::dist::map<std::string, std::string>`, a C set an
 * `am::dist::set<std::string>`, so C and C++ ranks of one program may share one container.
 *
 * Conventions are those of <am/am.h>: a function that can fail returns an `am_status_t`, and
 * `am_last_error(ctx)` names the call, the rank and the limit crossed. No C++ exception leaves
 * a function of this header.
 *
 * - Teams: a container lives on a team (<am/am_coll.h>), or on the job's world team when
 *   created with a NULL team. Every member creates it, in the same order as the team's other
 *   distributed containers (C or C++), and every member frees it: both are collective and
 *   blocking (a team barrier), and refused in handlers (`AM_ERR_BAD_CONTEXT`).
 * - Keys and values are byte strings of any length (0 included), compared byte for byte. Each
 *   key is kept by one member of the team (the owner, chosen by a hash of the key).
 * - Operations (`insert`, `insert_or_assign`, `erase`) are sent to the key's owner and return
 *   at once: their bytes are copied before the call returns, and the caller may reuse its
 *   buffers. They are coalesced per destination and run at the owner in the order each
 *   sender made them. A call may make progress (run handlers of arrived messages).
 * - Completion: `am_dist_map_barrier` / `am_dist_set_barrier` return once every operation on
 *   every container of the team sent before it, on any member, has run. Local reads
 *   (`for_all`, `local_size`) see the operations that completed; collective reads (`size`,
 *   `gather`) start with such a barrier. Every collective call (create, free, barrier, size,
 *   gather) is made by every member of the container's team, in the same order, and is
 *   refused in a handler (`AM_ERR_BAD_CONTEXT`, "called from a handler").
 * - Bad arguments (a NULL output pointer or callback, a NULL key or value with a non-zero
 *   length) return `AM_ERR_INVALID_ARGUMENT` with a message naming the call and the rank, and
 *   send nothing. A NULL container (or a NULL context to a create call) returns
 *   `AM_ERR_INVALID_ARGUMENT` only: there is no context to keep a message in.
 * - Thread-safety: a container is used by its rank's thread, one call at a time (as the rank's
 *   context). The local part is changed by the handlers that run the operations: with a
 *   progress thread (`AM_PROGRESS_THREAD=1`), read it (`for_all`, `local_size`) only after a
 *   barrier and while no operation for it is in flight.
 *
 * Valid C11 and C++; self-contained.
 */
#ifndef AM_AM_DIST_H
#define AM_AM_DIST_H

#include <am/am.h>
#include <am/am_coll.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A distributed map from byte strings to byte strings (opaque): made by `am_dist_map_create`,
/// freed by `am_dist_map_free`.
typedef struct am_dist_map am_dist_map_t;

/// A distributed set of byte strings (opaque): made by `am_dist_set_create`, freed by
/// `am_dist_set_free`.
typedef struct am_dist_set am_dist_set_t;

/// Called for one entry of a map: `key_len` bytes at `key`, `value_len` bytes at `value`
/// (either pointer may be anything when its length is 0). The bytes are valid only during the
/// call; copy what must outlive it. `user` is the pointer given to the call.
typedef void (*am_dist_map_entry_fn_t)(const void* key, size_t key_len, const void* value,
                                       size_t value_len, void* user);

/// Called for one key of a set: `key_len` bytes at `key`, valid only during the call.
typedef void (*am_dist_set_key_fn_t)(const void* key, size_t key_len, void* user);

/* ------------------------------------------------------------------------------------ map */

/// Collective over `team` (NULL: the job's world team; else a team of `ctx`'s rank): makes an
/// empty map and stores its handle in `*out`. Returns once every member has made it.
AM_NODISCARD am_status_t am_dist_map_create(am_context_t* ctx, am_coll_team_t* team,
                                            am_dist_map_t** out) AM_NOEXCEPT;

/// Collective: waits for the operations in flight (as `am_dist_map_barrier`), then frees this
/// member's part and the handle. The team handle given to create may be freed before. NULL
/// returns `AM_OK`. In a handler it returns `AM_ERR_BAD_CONTEXT` and keeps the handle;
/// otherwise the handle is freed whatever the status (a failed barrier: the job is going down).
AM_NODISCARD am_status_t am_dist_map_free(am_dist_map_t* map) AM_NOEXCEPT;

/// Inserts `key` with `value` at the key's owner unless the key is there already (the value
/// there is kept). Returns once the bytes are copied; completes at a barrier.
AM_NODISCARD am_status_t am_dist_map_insert(am_dist_map_t* map, const void* key, size_t key_len,
                                            const void* value, size_t value_len) AM_NOEXCEPT;

/// Sets `key` to `value` at the key's owner (replacing a value there). As `am_dist_map_insert`.
AM_NODISCARD am_status_t am_dist_map_insert_or_assign(am_dist_map_t* map, const void* key,
                                                      size_t key_len, const void* value,
                                                      size_t value_len) AM_NOEXCEPT;

/// Removes `key` at its owner (nothing when absent). As `am_dist_map_insert`.
AM_NODISCARD am_status_t am_dist_map_erase(am_dist_map_t* map, const void* key,
                                           size_t key_len) AM_NOEXCEPT;

/// Collective: returns once every operation on the team's containers sent before it (on any
/// member), and every one those sent, has run.
AM_NODISCARD am_status_t am_dist_map_barrier(am_dist_map_t* map) AM_NOEXCEPT;

/// Collective: the number of entries on the whole team into `*out`, after a barrier.
AM_NODISCARD am_status_t am_dist_map_size(am_dist_map_t* map, size_t* out) AM_NOEXCEPT;

/// The number of entries this rank keeps (local, no communication); 0 when `map` is NULL.
size_t am_dist_map_local_size(const am_dist_map_t* map) AM_NOEXCEPT;

/// Calls `fn(key, key_len, value, value_len, user)` for every entry this rank keeps, in no
/// particular order (local, no communication). `fn` must not call into the library on this
/// rank (a call may run arrived operations, which change the entries being visited): copy what
/// it needs and act after the call.
AM_NODISCARD am_status_t am_dist_map_for_all(am_dist_map_t* map, am_dist_map_entry_fn_t fn,
                                             void* user) AM_NOEXCEPT;

/// Collective: after a barrier, collects every entry of the team at team rank `root` and calls
/// `fn` there once per entry (by member, then as each member keeps them); nothing is called
/// elsewhere, where `fn` may be NULL. The entries are held by the library while `fn` runs,
/// which may call anything. `root` outside the team returns `AM_ERR_BAD_RANK`.
AM_NODISCARD am_status_t am_dist_map_gather(am_dist_map_t* map, int root, am_dist_map_entry_fn_t fn,
                                            void* user) AM_NOEXCEPT;

/* ------------------------------------------------------------------------------------ set */

/// Collective: makes an empty set; as `am_dist_map_create`.
AM_NODISCARD am_status_t am_dist_set_create(am_context_t* ctx, am_coll_team_t* team,
                                            am_dist_set_t** out) AM_NOEXCEPT;

/// Collective: frees the set; as `am_dist_map_free`.
AM_NODISCARD am_status_t am_dist_set_free(am_dist_set_t* set) AM_NOEXCEPT;

/// Adds `key` at its owner (nothing when there). Returns once the bytes are copied; completes
/// at a barrier.
AM_NODISCARD am_status_t am_dist_set_insert(am_dist_set_t* set, const void* key,
                                            size_t key_len) AM_NOEXCEPT;

/// Removes `key` at its owner (nothing when absent). As `am_dist_set_insert`.
AM_NODISCARD am_status_t am_dist_set_erase(am_dist_set_t* set, const void* key,
                                           size_t key_len) AM_NOEXCEPT;

/// Collective: as `am_dist_map_barrier` (the same barrier: it covers every container of the
/// team).
AM_NODISCARD am_status_t am_dist_set_barrier(am_dist_set_t* set) AM_NOEXCEPT;

/// Collective: the number of keys on the whole team into `*out`, after a barrier.
AM_NODISCARD am_status_t am_dist_set_size(am_dist_set_t* set, size_t* out) AM_NOEXCEPT;

/// The number of keys this rank keeps; 0 when `set` is NULL.
size_t am_dist_set_local_size(const am_dist_set_t* set) AM_NOEXCEPT;

/// Calls `fn(key, key_len, user)` for every key this rank keeps; as `am_dist_map_for_all`.
AM_NODISCARD am_status_t am_dist_set_for_all(am_dist_set_t* set, am_dist_set_key_fn_t fn,
                                             void* user) AM_NOEXCEPT;

/// Collective: every key of the team, at team rank `root`, passed to `fn` there; as
/// `am_dist_map_gather`.
AM_NODISCARD am_status_t am_dist_set_gather(am_dist_set_t* set, int root, am_dist_set_key_fn_t fn,
                                            void* user) AM_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* AM_AM_DIST_H */
