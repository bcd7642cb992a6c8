/* SPDX-License-Identifier: MIT */
/**
 * @file
 * The C API of tagged send and receive: two-sided messages built on active messages (the 1992
 * paper's send/receive), matched on source and tag. It mirrors the C++ `am::context::send`,
 * `recv`, `isend`, `irecv` and `am::request` over the same layer (docs/splitc.md, "send and
 * receive"), so C and C++ ranks of one program can talk to each other.
 *
 * Conventions are those of <am/am.h>: a function that can fail returns an `am_status_t`, and
 * `am_last_error(ctx)` names the call, the rank and the limit crossed. No C++ exception leaves
 * a function of this header.
 *
 * - Matching: a receive names a source rank or `AM_MSG_ANY_SOURCE` and a tag (≥ 0) or
 *   `AM_MSG_ANY_TAG`. Messages from one source are matched in the order they were sent (MPI's
 *   non-overtaking rule), whatever their sizes.
 * - Protocols: a message of at most `AM_EAGER_BYTES` (8 KiB by default, bounded by
 *   `am_max_medium`) travels with its request; when no receive is posted the receiver keeps a
 *   copy until one is. A larger one is sent in three phases (request to send, ready to receive,
 *   data written straight into the posted buffer), so its send completes only once a matching
 *   receive has been posted; like MPI's, a large send whose receive is never posted never
 *   completes.
 * - Too small a buffer: a matching message larger than the receive buffer fails that receive
 *   with `AM_ERR_TOO_LARGE`, whose message names both sizes. The message is not lost: it goes to
 *   the next matching receive already posted that is large enough, or waits for a later one.
 * - Buffers: the data of `am_msg_send` may be reused when it returns, that of `am_msg_send_nb`
 *   once its request is complete. The buffer of `am_msg_recv_nb` must stay valid until its
 *   request is complete or freed.
 * - Handlers: `am_msg_send_nb` and `am_msg_recv_nb` may be called from request handlers, as may
 *   `am_msg_test` (which then does not poll); the blocking calls (`am_msg_send`, `am_msg_recv`,
 *   `am_msg_wait`) are refused in handlers (`AM_ERR_BAD_CONTEXT`).
 * - Thread-safety: as a context (<am/am.h>); a request is used by its rank, one call at a time.
 *
 * Valid C11 and C++; self-contained.
 */
#ifndef AM_AM_MSG_H
#define AM_AM_MSG_H

#include <am/am.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Receive source that matches a message from any rank.
#define AM_MSG_ANY_SOURCE (-1)
/// Receive tag that matches any tag.
#define AM_MSG_ANY_TAG (-1)

/// What a completed operation got: for a receive the sending rank, the tag and the number of
/// bytes received; for a send the destination, the tag and the number of bytes sent.
typedef struct am_msg_status {
    int source;
    int tag;
    size_t bytes;
} am_msg_status_t;

/// Handle of a non-blocking `am_msg_send_nb` or `am_msg_recv_nb`. Opaque; freed by `am_msg_free`.
typedef struct am_msg_request am_msg_request_t;

/// Blocking send of `len` bytes of `data` (NULL allowed when `len` is 0) to rank `dest` with
/// tag `tag` (≥ 0, else `AM_ERR_INVALID_ARGUMENT`). Returns when `data` may be reused: at once
/// for an eager message, after the data has left for a large one (which waits for the matching
/// receive). `AM_ERR_BAD_RANK` for a bad `dest`.
AM_NODISCARD am_status_t am_msg_send(am_context_t* ctx, int dest, int tag, const void* data,
                                     size_t len) AM_NOEXCEPT;

/// Blocking receive of the first message from `source` with `tag` (or the wildcards) into
/// `buf` (`cap` bytes; NULL allowed when `cap` is 0); stores its source, tag and size in
/// `*status` (when not NULL). A matching message larger than `cap` fails with
/// `AM_ERR_TOO_LARGE` naming both sizes, and stays queued for a receive with a larger buffer.
AM_NODISCARD am_status_t am_msg_recv(am_context_t* ctx, int source, int tag, void* buf, size_t cap,
                                     am_msg_status_t* status) AM_NOEXCEPT;

/// Non-blocking send: as `am_msg_send`, and stores in `*out` a request (NULL on failure) that
/// completes when `data` may be reused; until then `data` must stay valid and unchanged. An
/// eager message is complete at once.
AM_NODISCARD am_status_t am_msg_send_nb(am_context_t* ctx, int dest, int tag, const void* data,
                                        size_t len, am_msg_request_t** out) AM_NOEXCEPT;

/// Non-blocking receive: posts a receive into `buf` (`cap` bytes) and stores in `*out` a
/// request (NULL on failure) that completes when the data is in `buf`.
AM_NODISCARD am_status_t am_msg_recv_nb(am_context_t* ctx, int source, int tag, void* buf,
                                        size_t cap, am_msg_request_t** out) AM_NOEXCEPT;

/// Polls once (not in a handler) and stores in `*done` 1 when the operation has completed,
/// else 0; when done, stores its status in `*status` (when not NULL). A receive whose matching
/// message was too large for its buffer completes with `AM_ERR_TOO_LARGE` (`*done` = 1): it
/// is over, and every later test or wait of the request returns the same status and message.
AM_NODISCARD am_status_t am_msg_test(am_msg_request_t* req, int* done,
                                     am_msg_status_t* status) AM_NOEXCEPT;

/// Polls until the operation completes and stores its status in `*status` (when not NULL).
/// Fails as `am_msg_test`; `AM_ERR_BAD_CONTEXT` from a handler, `AM_ERR_ABORTED` when the job
/// is going down.
AM_NODISCARD am_status_t am_msg_wait(am_msg_request_t* req, am_msg_status_t* status) AM_NOEXCEPT;

/// Frees a request (NULL is ignored). An incomplete receive that no message has matched yet is
/// withdrawn; any other incomplete operation is first waited for (polling), so no buffer is
/// used after its handle is gone. Free every request before the rank function returns. A
/// handler, which may not wait, frees only requests that are complete (an eager `am_msg_send_nb`'s
/// is at once) or receives nothing has matched; the layer cannot wait for any other there and
/// leaves its operation to finish unowned.
void am_msg_free(am_msg_request_t* req) AM_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

#define AM_AM_MSG_H_DECLARED /* for am_deprecated.h */
#ifndef AM_NO_DEPRECATED
#include <am/am_deprecated.h>
#endif

#endif /* AM_AM_MSG_H */
