/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C API of the typed layer (AM++, C++ `<am/typed.hpp>`): message types whose handler runs
 * on a batch of fixed-size items, per-destination coalescing, duplicate elimination, key/value
 * combining, and epochs that end only when every message sent in them — including messages
 * sent by handlers, to any depth — has been handled on every rank.
 *
 * ```c
 * am_typed_t* visits;
 * am_typed_create(ctx, sizeof(struct visit), on_visits, &state, "visit", &visits); // collective
 * am_typed_layer_t* out;
 * am_typed_coalesce(visits, 0, &out);
 * am_typed_epoch_begin(ctx, -1);                             // collective
 * am_typed_layer_send(out, &(struct visit){v, 1}, owner(v));
 * am_typed_epoch_end(ctx, 0, NULL, NULL);  // every visit, nested ones too, has been handled
 * ```
 *
 * A C message type is the same thing as a C++ `am::message_type<T>` with `sizeof(T)` =
 * `item_size`: it is registered, sent, counted and delivered by the same code, so C and C++
 * message types mix in one epoch.
 *
 * Conventions (those of am/am.h): a function that can fail returns an `am_status_t`; on
 * failure nothing was sent, held or created, messages accepted before are unaffected, and
 * `am_last_error(ctx)` names the call, the rank and the limit crossed.
 *
 * Thread-safety: message types and epochs follow the C++ layer: a rank's thread and the
 * handlers it runs use them; with `thread_multiple` or a progress thread several threads may
 * send through one message type. A coalescing, dedup or combining layer (`am_typed_layer_t`)
 * is used by the rank's thread and the handlers run on it only: creating one with
 * `thread_multiple` or a progress thread fails with AM_ERR_BAD_CONTEXT.
 *
 * Valid C11 and C++; self-contained (includes am/am.h).
 */
#ifndef AM_AM_TYPED_H
#define AM_AM_TYPED_H

#include <am/am.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------------------------- message types */

/// A message type: items of a fixed size sent to ranks where a handler runs on them. Opaque.
/// Owned by the library: valid until the job ends (no free).
typedef struct am_typed am_typed_t;

/// A message type's handler: runs on `count` items (`count` ≥ 1) that rank `source` sent,
/// `items` pointing at the first, items `item_size` bytes apart. `items` is aligned to 8 bytes
/// (so a struct of alignment ≤ 8 whose size is `item_size` may be read in place) and valid
/// only during the call: copy what must outlive it. Items sent one by one may arrive in one
/// batch, and one send's items may be split over several calls (coalescing). Runs on the
/// thread that polls (the rank's thread, or the progress thread); it may send typed messages
/// (nested sends, counted by the epoch) through any message type or layer of this rank, but
/// may not begin or end an epoch. `ctx` is the rank's context; `user` the pointer given at
/// creation.
typedef void (*am_typed_fn_t)(am_context_t* ctx, int source, const void* items, size_t count,
                              void* user);

/// Creates a message type whose items are `item_size` bytes (1 ≤ item_size ≤ max_medium),
/// handled by `fn(…, user)`. Collective: every rank creates the same types (name, item size)
/// in the same order, from the rank's thread outside handlers and epochs; the call ends with
/// a barrier, which fails with AM_ERR_HANDLER_MISMATCH on every rank when a rank created
/// another name or size at this point. `name` (may be NULL: "am_typed") appears in errors.
/// Items are copied byte-wise: they must not hold pointers that matter on another rank.
AM_NODISCARD am_status_t am_typed_create(am_context_t* ctx, size_t item_size, am_typed_fn_t fn,
                                         void* user, const char* name,
                                         am_typed_t** out) AM_NOEXCEPT;

/// Sends `count` items (`count * item_size` bytes at `items`, any alignment) to `dest` as one
/// core message, without coalescing; `count` may be 0 (sends nothing). Inside an epoch or from
/// a handler (AM_ERR_BAD_CONTEXT otherwise, or deeper than the epoch's declared depth);
/// AM_ERR_BAD_RANK for a bad `dest`; AM_ERR_TOO_LARGE beyond `am_typed_max_batch()` items.
/// The items are copied before it returns. Makes progress; from a handler it never blocks.
AM_NODISCARD am_status_t am_typed_send(am_typed_t* type, const void* items, size_t count,
                                       int dest) AM_NOEXCEPT;

/// The most items one core message of `type` carries (max_medium / item_size); 0 for NULL.
size_t am_typed_max_batch(const am_typed_t* type) AM_NOEXCEPT;

/// The item size `type` was created with; 0 for NULL.
size_t am_typed_item_size(const am_typed_t* type) AM_NOEXCEPT;

/// The context `type` belongs to (NULL for NULL).
am_context_t* am_typed_context(const am_typed_t* type) AM_NOEXCEPT;

/* ---------------------------------------------------- coalescing, dedup, key/value combining */

/// A sending layer over a message type: coalescing, duplicate elimination or combining, each
/// sending one item at a time. Opaque; owned by the caller (`am_typed_layer_free`). Layers
/// stack: dedup or combining over a coalescing layer, or straight over the message type. The
/// epoch's end sends what every layer holds (combining first, then coalescing), also what
/// handlers add while it ends. Not thread-safe (see the file's comment).
typedef struct am_typed_layer am_typed_layer_t;

/// Combines `item` into `acc` (both `item_size` bytes, same key, 8-aligned; `acc` is the
/// held item and writable): e.g. keeps the smaller value. `user` as given at creation. Must
/// not send or call into the library.
typedef void (*am_typed_combine_fn_t)(void* acc, const void* item, void* user);

/// Per-destination coalescing over `type` (AM++ §3.2.1): items to one destination are
/// appended to its buffer of `bytes` bytes (0: the C++ default, 16 KiB, less beyond 256
/// ranks), sent as one message when it is full, on `am_typed_layer_flush` and at the end of
/// the epoch. AM_ERR_TOO_LARGE when `bytes` holds no item or exceeds max_medium.
AM_NODISCARD am_status_t am_typed_coalesce(am_typed_t* type, size_t bytes,
                                           am_typed_layer_t** out) AM_NOEXCEPT;

/// Duplicate elimination at the source (AM++ §3.2.3), for idempotent messages: an item whose
/// bytes equal an item already sent to the same destination is dropped (counted by
/// `am_typed_layer_count`). Exact while the cache holds fewer than `max_entries` pairs (0:
/// 2^20), then the cache is emptied and starts again. Kept across epochs. Sends to `next`
/// (a coalescing layer of `type`), or straight to `type` when `next` is NULL.
AM_NODISCARD am_status_t am_typed_dedup(am_typed_t* type, am_typed_layer_t* next,
                                        size_t max_entries, am_typed_layer_t** out) AM_NOEXCEPT;

/// Key/value combining at the source (AM++ §3.2.3): the key is bytes
/// [key_offset, key_offset + key_size) of an item; an item for a destination that already
/// holds an item with the same key (in the same epoch and nesting level) is folded into it
/// with `combine(held, item, user)`, so one item per key and destination leaves. Held items are
/// sent when the cache reaches `max_entries` (0: 2^20), on `am_typed_layer_flush` and before
/// the epoch ends. Sends to `next` (a coalescing layer of `type`) or straight to `type`.
AM_NODISCARD am_status_t am_typed_reduce(am_typed_t* type, am_typed_layer_t* next,
                                         size_t key_offset, size_t key_size,
                                         am_typed_combine_fn_t combine, void* user,
                                         size_t max_entries, am_typed_layer_t** out) AM_NOEXCEPT;

/// Sends one item (`item_size` bytes at `item`, any alignment, copied before it returns)
/// through `layer` to `dest`. Same errors as `am_typed_send` (checked also for an item a dedup
/// layer drops); on error the layer holds nothing new.
AM_NODISCARD am_status_t am_typed_layer_send(am_typed_layer_t* layer, const void* item,
                                             int dest) AM_NOEXCEPT;

/// Sends everything `layer` holds (combining: its held items; coalescing: every buffer),
/// inside an epoch or from a handler.
AM_NODISCARD am_status_t am_typed_layer_flush(am_typed_layer_t* layer) AM_NOEXCEPT;

/// Dedup: items dropped so far; combining: items folded into another so far; coalescing: 0.
uint64_t am_typed_layer_count(const am_typed_layer_t* layer) AM_NOEXCEPT;

/// Destroys `layer` (NULL: nothing). Call it outside handlers, once no layer stacked on it is
/// left, and while an epoch is open if it may still hold items (they are sent then);
/// otherwise held items are lost and reported on stderr.
void am_typed_layer_free(am_typed_layer_t* layer) AM_NOEXCEPT;

/* --------------------------------------------------------------------------------- epochs */

/// One rank's statistics of an epoch (C++ `am::epoch_stats`).
typedef struct am_typed_epoch_stats {
    uint64_t epoch;             ///< the epoch's number on this rank (1, 2, ...)
    uint64_t messages_sent;     ///< typed messages this rank sent (after dedup and combining)
    uint64_t messages_handled;  ///< typed messages of the epoch handled on this rank
    uint64_t batches_sent;      ///< core messages that carried them
    uint64_t bytes_sent;        ///< payload bytes of those core messages
    uint64_t dedup_hits;        ///< items dropped by dedup layers
    uint64_t combined;          ///< items folded into another by combining layers
    uint64_t waves;             ///< reduction rounds of the termination detector
    double seconds;             ///< from the epoch's start to its end on this rank
} am_typed_epoch_stats_t;

/// Begins an epoch (AM++ §3.3). Collective, one epoch at a time, from the rank's thread
/// outside handlers. `depth` -1: handlers may send to any depth; d ≥ 0 (at most 6): a promise
/// that messages nest at most d deep (0: handlers send nothing), which lets the epoch end in
/// one reduction round; a deeper send fails with AM_ERR_BAD_CONTEXT. AM_ERR_BAD_CONTEXT when
/// an epoch is open or in a handler.
AM_NODISCARD am_status_t am_typed_epoch_begin(am_context_t* ctx, int depth) AM_NOEXCEPT;

/// Ends the open epoch: collective. Flushes every layer, handles arriving messages and
/// returns when every typed message sent in the epoch, nested ones too, has been handled on
/// every rank. `*sum` (may be NULL) receives the sum of `value` over all ranks, `*stats` (may
/// be NULL) this rank's statistics. AM_ERR_BAD_CONTEXT without an open epoch or in a handler
/// (the epoch then stays open); AM_ERR_ABORTED or AM_ERR_TIMEOUT when the job goes down (the
/// epoch is then closed).
AM_NODISCARD am_status_t am_typed_epoch_end(am_context_t* ctx, uint64_t value, uint64_t* sum,
                                            am_typed_epoch_stats_t* stats) AM_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

#define AM_AM_TYPED_H_DECLARED /* for am_deprecated.h */
#ifndef AM_NO_DEPRECATED
#include <am/am_deprecated.h>
#endif

#endif /* AM_AM_TYPED_H */
