/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C API of remote procedure calls: byte payloads in, byte results out, futures as handles.
 *
 * Over the C++ `am::rpc` (<am/rpc.hpp>):
 * `am_rpc_call` runs a registered C function on another rank with a copy of the argument
 * bytes and returns a future (`am_rpc_future_t`) of the result bytes the function gives with
 * `am_rpc_reply_set`; `am_rpc_call_ff` is fire-and-forget.
 *
 * A remote function runs as an *optimistic handler* on its target (<am/oam.hpp>): at once,
 * inside one of the target's polls, on a stack of its own. Unlike a handler it may block: on
 * a future (e.g. `am_rpc_future_get` of a nested `am_rpc_call`) or `am_counter_wait`. Then it
 * becomes a user-level thread, the poller carries on with other messages, and the function
 * resumes in a later poll of its rank once what it waits for is ready. Calls from one rank to
 * another start in the order they were sent; one that blocks does not hold back later ones.
 * Collectives (`am_barrier`) and registration are not allowed in a remote function.
 *
 * Limits: arguments and result travel in one medium message each, at most
 * `am_rpc_max_bytes()` bytes (`AM_ERR_TOO_LARGE` beyond). At most `AM_OAM_MAX_THREADS`
 * remote functions of a rank may be blocked at once: the blocking call
 * (`am_rpc_future_get`, ...) of one more returns `AM_ERR_TOO_LARGE` naming the limit, without
 * waiting. Each runs on a stack of `AM_OAM_STACK_BYTES` (an overflow ends the job with a
 * message).
 *
 * Conventions are those of <am/am.h> (status codes, `am_last_error` naming the call, the rank
 * and the limit crossed, no C++ exception leaving a function). For one release <am/am.h>
 * still includes this header (RPC used to be a section of it, docs/api.md); include it
 * yourself: with `AM_NO_DEPRECATED` <am/am.h> does not.
 *
 * Valid C11 and C++; self-contained (includes am/am.h).
 */
#ifndef AM_AM_RPC_H
#define AM_AM_RPC_H

#include <am/am.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A registered remote function: the same on every rank that registered the same functions
/// in the same order.
typedef uint32_t am_rpc_t;

/// Never a valid remote function.
#define AM_RPC_INVALID ((am_rpc_t)UINT32_MAX)

/// The result of one `am_rpc_call`, ready once the remote function's answer has been handled
/// on the calling rank. Opaque; created by `am_rpc_call`, freed by `am_rpc_future_free`.
///
/// Thread-safety: use a future from the rank that made it (its rank function, handlers and
/// remote functions), one call at a time.
typedef struct am_rpc_future am_rpc_future_t;

/// The answer of the remote function being run. Opaque. Valid only during the call of the
/// remote function it was passed to (including while that function is blocked); never store
/// it.
typedef struct am_rpc_reply am_rpc_reply_t;

/// A remote function: runs on the target rank, `ctx` being that rank's context, with the
/// `len` argument bytes the caller (`source`) sent. `args` is valid only during the call
/// (copy what must outlive it), has no particular alignment, and may be NULL when `len` is
/// 0. It answers through `reply`: `am_rpc_reply_set` (result bytes) or `am_rpc_reply_error`;
/// returning without either gives a result of 0 bytes. `user` is the pointer given at
/// registration. It may send requests and calls, and block (see above).
typedef void (*am_rpc_fn_t)(am_context_t* ctx, int source, const void* args, size_t len,
                            am_rpc_reply_t* reply, void* user);

/// Registers `fn` as a remote function and stores its id in `*id_out`. Collective, like
/// `am_register_short` (whose rules it shares; remote functions and handlers are numbered
/// together): every rank registers the same functions in the same order, then calls
/// `am_barrier`, which enables them. The handshake of `am_barrier` checks that the ranks
/// registered remote functions at the same positions, not that they are the same C
/// functions. `user` must stay valid while a call may still arrive (until the end of the
/// job when other ranks may still call). Not callable from a handler or remote function
/// (`AM_ERR_BAD_CONTEXT`).
AM_NODISCARD am_status_t am_rpc_register(am_context_t* ctx, am_rpc_fn_t fn, void* user,
                                         am_rpc_t* id_out) AM_NOEXCEPT;

/// Largest argument or result, in bytes, of a remote function: `am_max_medium()` less the
/// few bytes of a call's framing. The same on every rank; 0 when `ctx` is NULL.
size_t am_rpc_max_bytes(const am_context_t* ctx) AM_NOEXCEPT;

/// Calls remote function `id` on rank `rank` (which may be the calling rank) with `len`
/// bytes of `args` (copied before return; NULL allowed when `len` is 0), and stores in
/// `*out` a new future of its result (NULL on failure; free it with `am_rpc_future_free`).
/// Returns once the call is handed to the transport, like `am_request_medium` (whose
/// blocking and ordering rules it shares); callable from rank code, request handlers and
/// remote functions (not from a reply handler: `AM_ERR_BAD_CONTEXT`). Errors:
/// `AM_ERR_BAD_HANDLER` when `id` was not returned by `am_rpc_register` on this rank or not
/// yet enabled by `am_barrier`, `AM_ERR_BAD_RANK`, `AM_ERR_TOO_LARGE` (`len` over
/// `am_rpc_max_bytes()`), `AM_ERR_INVALID_ARGUMENT` (null pointer).
AM_NODISCARD am_status_t am_rpc_call(am_context_t* ctx, int rank, am_rpc_t id, const void* args,
                                     size_t len, am_rpc_future_t** out) AM_NOEXCEPT;

/// As `am_rpc_call` without a result: nothing comes back. A result the function sets is
/// dropped. An `am_rpc_reply_error` there, having nobody to tell, aborts the job as
/// `am_abort` would: every rank's next call returns `AM_ERR_ABORTED` with a message naming
/// the function, the rank it ran on, the caller and the message, and `am_run` fails.
AM_NODISCARD am_status_t am_rpc_call_ff(am_context_t* ctx, int rank, am_rpc_t id, const void* args,
                                        size_t len) AM_NOEXCEPT;

/// Sets the result of the call being run to `len` bytes of `data` (copied before return;
/// NULL allowed when `len` is 0). At most once per call, and not after `am_rpc_reply_error`
/// (`AM_ERR_BAD_REPLY`, the first answer stands); `AM_ERR_TOO_LARGE` when `len` exceeds
/// `am_rpc_max_bytes()` (nothing is set). The result travels when the function returns.
/// Errors are recorded on the context of the rank running the function.
AM_NODISCARD am_status_t am_rpc_reply_set(am_rpc_reply_t* reply, const void* data,
                                          size_t len) AM_NOEXCEPT;

/// Makes the call being run fail: the caller's `am_rpc_future_get` returns `AM_ERR_REMOTE` and
/// its `am_last_error` reads "am_rpc_future_get: rank <caller>: <function> on rank <target>
/// (called by rank <caller>) failed: <message>" (`message` is copied; NULL reads "(no
/// message)"), where <function> is "remote function <symbol>" when the program exports the
/// symbol, else "C remote function <program>+<offset>". At most one answer per call, as for
/// `am_rpc_reply_set`.
AM_NODISCARD am_status_t am_rpc_reply_error(am_rpc_reply_t* reply, const char* message) AM_NOEXCEPT;

/// Stores in `*ready` 1 when the future's result (or failure) is there, so that
/// `am_rpc_future_get` will not wait, else 0. Never blocks. When not ready and called from rank
/// code it polls the future's rank once, so a loop of tests makes progress; in a handler or a
/// remote function it does not poll (there, wait with `am_rpc_future_wait` or `am_rpc_future_get`).
AM_NODISCARD am_status_t am_rpc_future_test(am_rpc_future_t* future, int* ready) AM_NOEXCEPT;

/// Waits until the future is ready, without taking the result; a result that is a failure
/// is reported by `am_rpc_future_get`, not here. In rank code it polls the rank; in a remote
/// function it blocks that function (which resumes once the result is there); in a plain
/// handler it fails with `AM_ERR_BAD_CONTEXT` unless the future is ready. `AM_ERR_ABORTED`
/// when the job is going down.
AM_NODISCARD am_status_t am_rpc_future_wait(am_rpc_future_t* future) AM_NOEXCEPT;

/// Waits as `am_rpc_future_wait`, then copies the result into `buf` (`cap` bytes) and stores its
/// length in `*len` (when `len` is not NULL). When the result is larger than `cap`, it
/// returns `AM_ERR_TOO_LARGE`, stores the length needed in `*len` and copies nothing: the
/// result is kept, ask again with a larger buffer (`buf` may be NULL when `cap` is 0, to learn
/// the length). The result stays in the future until `am_rpc_future_free`: every get returns the
/// same bytes. When the call failed it returns, every time and with `*len` = 0,
/// `AM_ERR_REMOTE` (the remote function called `am_rpc_reply_error`, or its call could not be
/// completed there) or the status the runtime gave the call (`AM_ERR_BROKEN_PROMISE`: it was
/// dropped without a result); `am_last_error` of the future's context says why.
AM_NODISCARD am_status_t am_rpc_future_get(am_rpc_future_t* future, void* buf, size_t cap,
                                           size_t* len) AM_NOEXCEPT;

/// Frees a future, ready or not (NULL is ignored). The call itself goes on: the remote
/// function still runs, and its result is dropped when it arrives.
void am_rpc_future_free(am_rpc_future_t* future) AM_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

#define AM_AM_RPC_H_DECLARED /* for am_deprecated.h */
#ifndef AM_NO_DEPRECATED
#include <am/am_deprecated.h>
#endif

#endif /* AM_AM_RPC_H */
