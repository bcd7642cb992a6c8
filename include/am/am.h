/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C API of `am`: the core Active Messages runtime behind opaque handles and status codes.
 *
 * It mirrors the C++ core (`am/context.hpp`): one context per rank, handlers registered
 * collectively and named on the wire by an index, requests and replies in three categories
 * (short, medium, long), explicit polling progress and counters for completion.
 *
 * Names (docs/api.md): every layer's C API has its own header and prefix,
 * `am_<layer>_<verb>[_nb]`, types `am_<layer>_<name>_t`, callback types
 * `am_<layer>_<name>_fn_t`: <am/am_rpc.h> (`am_rpc_`), <am/am_splitc.h> (`am_splitc_`),
 * <am/am_msg.h> (`am_msg_`), <am/am_typed.h> (`am_typed_`). The core, this header, is the
 * one layer without a prefix: `am_<verb>` (`am_request_short`, `am_poll`, `am_barrier`),
 * `am_<name>_t` (`am_context_t`, `am_short_fn_t`). <am/mpix_am.h> follows MPI's naming
 * (`MPIX_`) instead. The names before this rule are kept for one release in
 * <am/am_deprecated.h>, which every C header includes unless `AM_NO_DEPRECATED` is defined;
 * for that release this header also includes <am/am_rpc.h> (RPC used to live here).
 *
 * Conventions, as for every function below unless it says otherwise:
 * - A function that can fail returns an `am_status_t`; `AM_OK` (0) is success. On failure
 *   nothing was sent or registered, messages accepted before the failing call are unaffected,
 *   and `am_last_error()` on the same context gives a message naming the call, the rank and
 *   the limit that was crossed.
 * - No C++ exception ever leaves a function of this header.
 * - Thread-safety: a context is used by the thread that runs its rank (the `rank_fn` of
 *   `am_run`) and by the handlers it runs. With a progress thread (`AM_PROGRESS_THREAD=1`)
 *   handlers also run on that thread; the calls they make through their token are safe.
 *   Counters (`am_counter_t`) may be updated from any thread.
 * - Buffers passed to a send are read (copied, or written to the target segment) before the
 *   send returns: the caller may reuse them at once. There is no local completion to wait for;
 *   remote completion is learnt from a reply or a counter updated by a handler.
 *
 * Valid C11 and C++; self-contained.
 */
#ifndef AM_AM_H
#define AM_AM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define AM_NOEXCEPT noexcept
#define AM_ALIGNAS(n) alignas(n)
#if __cplusplus >= 201703L
#define AM_NODISCARD [[nodiscard]]
#else
#define AM_NODISCARD
#endif
extern "C" {
#else
#define AM_NOEXCEPT
#define AM_ALIGNAS(n) _Alignas(n)
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L
#define AM_NODISCARD [[nodiscard]]
#else
#define AM_NODISCARD
#endif
#endif

/* ---------------------------------------------------------------------------------- types */

/// Status of a call. The values are those of the C++ `am::errc`, so a C++ `am::error` maps 1:1.
typedef enum am_status {
    AM_OK = 0,                        ///< success
    AM_ERR_BAD_RANK = 1,              ///< destination rank outside [0, am_size())
    AM_ERR_BAD_HANDLER = 2,           ///< handler not registered, not yet enabled by am_barrier(),
                                      ///< or of another category / argument count than the send
    AM_ERR_TOO_LARGE = 3,             ///< argument count or payload over a limit
    AM_ERR_BAD_REPLY = 4,             ///< second reply, or reply outside a request handler
    AM_ERR_BAD_CONTEXT = 5,           ///< call not allowed here (request from a reply handler,
                                      ///< wait or barrier in a handler)
    AM_ERR_OUT_OF_SEGMENT = 6,        ///< long payload outside the target's segment
    AM_ERR_HANDLER_MISMATCH = 7,      ///< ranks registered different handler tables
    AM_ERR_ABORTED = 8,               ///< the job is going down: a rank died or called am_abort()
    AM_ERR_SYSTEM = 9,                ///< an operating-system call failed (or memory ran out)
    AM_ERR_INVALID_ARGUMENT = 10,     ///< any other bad argument (null pointer, bad configuration)
    AM_ERR_NO_MEMORY = 11,            ///< the segment has no free block of the requested size
    AM_ERR_TIMEOUT = 12,              ///< an epoch did not end within AM_EPOCH_TIMEOUT (C++ only)
    AM_ERR_COLLECTIVE_MISMATCH = 13,  ///< ranks called different collectives at the same point
                                      ///< (e.g. am_barrier on one, the end of am_run on another)
    AM_ERR_REMOTE = 14,               ///< a remote function (RPC) failed; am_last_error says why
    AM_ERR_BROKEN_PROMISE = 15        ///< a future's producer went away without a result
} am_status_t;

/// One rank's endpoint, created by `am_run` and passed to the rank function. Opaque. Valid
/// until the rank function returns (and, for the handlers it registered, until the job ends).
typedef struct am_context am_context_t;

/// Handed to every handler: who sent the message and how to reply. Opaque. Valid only during
/// the handler call; never store it.
typedef struct am_token am_token_t;

/// A registered handler: its index in the handler table, the same on every rank that
/// registered the same handlers in the same order.
typedef uint32_t am_handler_t;

/// Never a valid handler.
#define AM_HANDLER_INVALID ((am_handler_t)UINT32_MAX)

/// Most 8-byte arguments a message of any category carries.
#define AM_MAX_ARGS 16u

/// Short handler: runs on arrival with the message's `nargs` arguments (`args` valid only
/// during the call). `user` is the pointer given at registration.
typedef void (*am_short_fn_t)(am_token_t* token, const uint64_t* args, unsigned nargs, void* user);

/// Medium handler: as a short handler plus the payload, which is valid only during the call
/// (copy what must outlive it). `payload` may be any alignment; `len` may be 0.
typedef void (*am_medium_fn_t)(am_token_t* token, const void* payload, size_t len,
                               const uint64_t* args, unsigned nargs, void* user);

/// Long handler: runs after the payload has been written into this rank's segment; `data`
/// points at it there (segment base + the sender's offset). The bytes stay in the segment
/// after the call; their meaning is up to the application.
typedef void (*am_long_fn_t)(am_token_t* token, void* data, size_t len, const uint64_t* args,
                             unsigned nargs, void* user);

/// The rank function of `am_run`.
typedef void (*am_rank_fn_t)(am_context_t* ctx, void* arg);

/* -------------------------------------------------------------------------------- the job */

/// SPMD entry point: runs `rank_fn(ctx, arg)` on every rank and returns the job's exit status,
/// 0 when every rank returned normally. The transport and rank count come from `amrun` or the
/// environment (`AM_TRANSPORT=threads|shm`, `AM_RANKS=N`, see `am::config`); with
/// `AM_TRANSPORT=shm` the calling process forks its ranks and waits for them (a rank's `arg`
/// is then a copy made by fork; flush stdio buffers before calling). After `rank_fn` returns
/// on every rank, every message sent has been handled before the contexts are destroyed.
/// A rank that calls `am_abort`, dies or exits early brings the job down: the failure is
/// printed naming the rank and the status is non-zero. `argc`/`argv` are reserved for
/// launcher options and may be 0/NULL.
int am_run(int argc, char** argv, am_rank_fn_t rank_fn, void* arg) AM_NOEXCEPT;

/// Brings the whole job down: every rank's next call returns `AM_ERR_ABORTED`, and `am_run`
/// returns non-zero, reporting `reason` (may be NULL). Returns `AM_ERR_ABORTED`; the rank
/// function should then return promptly. This is how a C rank reports a failure.
am_status_t am_abort(am_context_t* ctx, const char* reason) AM_NOEXCEPT;

/// This rank, in [0, am_size(ctx)); -1 when `ctx` is NULL.
int am_rank(const am_context_t* ctx) AM_NOEXCEPT;

/// Number of ranks in the job; 0 when `ctx` is NULL.
int am_size(const am_context_t* ctx) AM_NOEXCEPT;

/// Largest medium payload in bytes, the same on every rank (bounded by `AM_MAX_MEDIUM` and the
/// ring size); 0 when `ctx` is NULL.
size_t am_max_medium(const am_context_t* ctx) AM_NOEXCEPT;

/// This rank's registered segment, the target of long messages sent to it: returns its base
/// and stores its size in `*bytes` (when `bytes` is not NULL). Every rank's segment has the
/// same size (`AM_SEGMENT_BYTES`). It lives until the job ends. Long messages write it
/// without synchronisation with this rank: the application decides who owns which bytes
/// when. NULL (and size 0) when `ctx` is NULL.
void* am_segment(const am_context_t* ctx, size_t* bytes) AM_NOEXCEPT;

/// The message of the last failed call on `ctx` made by the calling thread (calls made by a
/// progress thread keep their own message); "" when none has failed. Successful calls do not
/// clear it. The string stays valid until the next failed call on `ctx` from the same
/// thread, and at most until the rank function returns.
const char* am_last_error(const am_context_t* ctx) AM_NOEXCEPT;

/// A static description of `status`, e.g. "AM_ERR_BAD_RANK: destination rank out of range".
const char* am_status_string(am_status_t status) AM_NOEXCEPT;

/* ----------------------------------------------------------------------- registration */

/// Registers `fn` as a short handler taking exactly `nargs` (≤ AM_MAX_ARGS) arguments and
/// stores its id in `*out`. Collective: every rank registers the same handlers in the same
/// order, then calls `am_barrier`, which checks the tables match and enables them for
/// sending. `user` is passed to every call of `fn`; the context does not own it. It must stay
/// valid while a message for this handler may still arrive: messages in flight when the rank
/// function returns are still handled (during the end-of-job quiescence), so state on the
/// rank function's stack needs the rank to wait first until it has received everything sent
/// to it. Not callable from a handler (`AM_ERR_BAD_CONTEXT`).
AM_NODISCARD am_status_t am_register_short(am_context_t* ctx, am_short_fn_t fn, unsigned nargs,
                                           void* user, am_handler_t* out) AM_NOEXCEPT;

/// Registers a medium handler; as `am_register_short`.
AM_NODISCARD am_status_t am_register_medium(am_context_t* ctx, am_medium_fn_t fn, unsigned nargs,
                                            void* user, am_handler_t* out) AM_NOEXCEPT;

/// Registers a long handler; as `am_register_short`.
AM_NODISCARD am_status_t am_register_long(am_context_t* ctx, am_long_fn_t fn, unsigned nargs,
                                          void* user, am_handler_t* out) AM_NOEXCEPT;

/// Collective: returns when every rank has called it, polling (and so running handlers)
/// while it waits. Enables the handlers registered since the previous barrier after checking
/// that every rank registered the same ones (else `AM_ERR_HANDLER_MISMATCH` naming both ranks
/// and the first differing entry). Not a quiescence point: messages in flight may still
/// arrive after it. Not callable from a handler (`AM_ERR_BAD_CONTEXT`).
AM_NODISCARD am_status_t am_barrier(am_context_t* ctx) AM_NOEXCEPT;

/// Collective: starts recording a trace of this rank for `am_trace_stop` to write to `path`
/// (the Chrome/Perfetto trace-event format, docs/observability.md); every rank passes the
/// same path. Rank 0 checks here that it can write the file: a path it cannot write returns
/// `AM_ERR_INVALID_ARGUMENT` on every rank (message naming the call, rank 0 and the path).
/// Tracing already on (e.g. `AM_TRACE`) returns `AM_ERR_BAD_CONTEXT`. From the rank's own
/// thread, not from a handler.
AM_NODISCARD am_status_t am_trace_start(am_context_t* ctx, const char* path) AM_NOEXCEPT;
/// Collective: stops recording and writes the trace (every rank's records go to rank 0 as
/// messages; rank 0 writes the file, which appears only complete: a job that fails leaves an
/// existing file at the path as it was). Does nothing when tracing is off. From the rank's own
/// thread, not from a handler, while no other thread of the rank is inside the library.
AM_NODISCARD am_status_t am_trace_stop(am_context_t* ctx) AM_NOEXCEPT;

/* ---------------------------------------------------------------------------- requests */

/// Sends a short request: handler `h` runs on rank `dest` with `args[0..nargs)`. `nargs` must
/// equal the handler's; `args` may be NULL when `nargs` is 0. Returns once the message is
/// handed to the transport; while there is no room it makes progress (runs handlers of
/// arrived messages). From inside a handler it never blocks: with no room the message is
/// queued and sent by later progress. Every send also polls. Requests from one rank to
/// another are handled in the order they were sent. Not callable from a reply handler
/// (`AM_ERR_BAD_CONTEXT`).
AM_NODISCARD am_status_t am_request_short(am_context_t* ctx, int dest, am_handler_t h,
                                          const uint64_t* args, unsigned nargs) AM_NOEXCEPT;

/// Sends a medium request: as `am_request_short`, with `len` ≤ `am_max_medium()` bytes of
/// `payload` (copied before return; NULL allowed when `len` is 0) handed to the handler.
AM_NODISCARD am_status_t am_request_medium(am_context_t* ctx, int dest, am_handler_t h,
                                           const void* payload, size_t len, const uint64_t* args,
                                           unsigned nargs) AM_NOEXCEPT;

/// Sends a long request: `len` bytes of `payload` are written at byte `dest_offset` of
/// `dest`'s segment, then the handler runs there with a pointer to them. `dest_offset + len`
/// must lie within the segment (`AM_ERR_OUT_OF_SEGMENT`). Any size. The source buffer may be
/// reused when the call returns. Otherwise as `am_request_short`.
AM_NODISCARD am_status_t am_request_long(am_context_t* ctx, int dest, am_handler_t h,
                                         const void* payload, size_t len, size_t dest_offset,
                                         const uint64_t* args, unsigned nargs) AM_NOEXCEPT;

/* ----------------------------------------------------------------------------- replies */

/// Replies to the request being handled with a short message to its sender. Only from a
/// request handler, at most once per request (else `AM_ERR_BAD_REPLY`). Replies travel on
/// their own lane with their own credits, so they always drain; a reply never blocks (with no
/// room it is queued for later progress). Reply handlers may not send requests or replies.
AM_NODISCARD am_status_t am_reply_short(am_token_t* token, am_handler_t h, const uint64_t* args,
                                        unsigned nargs) AM_NOEXCEPT;

/// Replies with a medium payload (copied before return; at most `am_max_medium()` bytes).
AM_NODISCARD am_status_t am_reply_medium(am_token_t* token, am_handler_t h, const void* payload,
                                         size_t len, const uint64_t* args,
                                         unsigned nargs) AM_NOEXCEPT;

/// Replies with a long payload written at `dest_offset` in the requester's segment.
AM_NODISCARD am_status_t am_reply_long(am_token_t* token, am_handler_t h, const void* payload,
                                       size_t len, size_t dest_offset, const uint64_t* args,
                                       unsigned nargs) AM_NOEXCEPT;

/// Rank that sent the message being handled; -1 when `token` is NULL.
int am_token_source(const am_token_t* token) AM_NOEXCEPT;

/// Non-zero in a request handler (which may reply once), 0 in a reply handler.
int am_token_is_request(const am_token_t* token) AM_NOEXCEPT;

/// The context of the rank running the handler: to send nested requests, read the rank, or
/// pass to `am_last_error` after a failed reply. NULL when `token` is NULL.
am_context_t* am_token_context(const am_token_t* token) AM_NOEXCEPT;

/* ---------------------------------------------------------------------------- progress */

/// Runs the handlers of arrived messages and flushes sends queued by handlers; stores the
/// number of messages handled in `*handled` (when not NULL). Inside a handler it does nothing
/// (handlers do not nest), and with a progress thread it may return at once while that thread
/// polls. `AM_ERR_ABORTED` once the job is going down (a rank failed or called `am_abort`).
AM_NODISCARD am_status_t am_poll(am_context_t* ctx, size_t* handled) AM_NOEXCEPT;

/// Completion counter: handlers `am_counter_add`, the rank `am_counter_wait`s for a count.
/// Initialise with `AM_COUNTER_INIT` or `am_counter_reset`. Access `_value` only through the
/// functions below, which are atomic and callable from any thread.
typedef struct am_counter {
    AM_ALIGNAS(8) uint64_t _value; /* private */
} am_counter_t;

/// Static initialiser of a counter at 0: `am_counter_t done = AM_COUNTER_INIT;`.
#define AM_COUNTER_INIT \
    { 0 }

/// Adds `n` (release): data written before it is visible to whoever sees the new count.
void am_counter_add(am_counter_t* counter, uint64_t n) AM_NOEXCEPT;

/// The current count (acquire).
uint64_t am_counter_value(const am_counter_t* counter) AM_NOEXCEPT;

/// Sets the count to 0. No message that adds to it may be in flight.
void am_counter_reset(am_counter_t* counter) AM_NOEXCEPT;

/// Polls `ctx` until the count reaches `n`, backing off (spin, yield, sleep) while nothing
/// arrives. Not callable from a handler (`AM_ERR_BAD_CONTEXT`), except from a remote function
/// (<am/am_rpc.h>), which it blocks until the count is reached; `AM_ERR_ABORTED` when another
/// rank has failed.
AM_NODISCARD am_status_t am_counter_wait(am_context_t* ctx, const am_counter_t* counter,
                                         uint64_t n) AM_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

/* Transition, for one release: the names before docs/api.md's rule, and RPC, which lived in
 * this header. Define AM_NO_DEPRECATED to see only the current names. */
#define AM_AM_H_DECLARED /* for am_deprecated.h */
#ifndef AM_NO_DEPRECATED
#include <am/am_deprecated.h>
#include <am/am_rpc.h>
#endif

#endif /* AM_AM_H */
