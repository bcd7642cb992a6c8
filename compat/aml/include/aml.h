/* SPDX-License-Identifier: MIT */
/**
 * @file
 * AML, the tiny active-message library of the Graph500 MPI reference code, implemented on
 * `am` (docs/aml.md). Programs written for AML compile against this header unchanged and link
 * against `am_aml` (CMake target `am::aml`). Usable from C and C++.
 *
 * Model: every process of `MPI_COMM_WORLD` is one AML node (`aml_my_pe()` of `aml_n_pes()`).
 * `aml_send` appends a message to a per-destination buffer; full buffers, and all of them at
 * `aml_barrier`, travel as one `am` medium message and the receiver runs one handler per
 * message. After `aml_barrier` every message sent before it, by any rank, has been handled.
 *
 * Threads: one thread per process makes every AML call (the thread that called `aml_init`).
 * Handlers run inside `aml_send`, `aml_barrier`, `aml_register_handler` and `aml_finalize` of
 * that thread, never concurrently with the program.
 *
 * Errors: misuse (a type outside 0..255 or without a handler, a node outside
 * 0..aml_n_pes()-1, a payload over AML_MAX_PAYLOAD bytes, a collective called from a handler)
 * prints a message naming the call, the rank and the limit on stderr and brings the whole MPI
 * job down (MPI_Abort). So does the failure of any rank.
 */
#ifndef AM_COMPAT_AML_H
#define AM_COMPAT_AML_H

#include <mpi.h>

/** Largest payload of one `aml_send`, in bytes. */
#define AML_MAX_PAYLOAD 32768
/** Handler ids are in [0, AML_MAX_HANDLERS). */
#define AML_MAX_HANDLERS 256

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Initialises MPI (`MPI_Init`, unless the program already did) and opens an `am` job on
 * `MPI_COMM_WORLD`. Collective. Call once, before any other AML call. Returns 0, or the error
 * code of `MPI_Init`; a failure to set up `am` is printed and ends the job.
 */
int aml_init(int* argc, char*** argv);

/**
 * Collective: `aml_barrier`, then closes the `am` job, then `MPI_Barrier` and `MPI_Finalize`
 * on `MPI_COMM_WORLD` (also when the program initialised MPI itself: AML replaces
 * `MPI_Finalize`). No AML or MPI call may follow.
 */
void aml_finalize(void);

/**
 * Collective: returns when every message sent with `aml_send` before the call, by any rank,
 * has been handled — including the messages that handlers send, to any depth. Not callable
 * from a handler.
 */
void aml_barrier(void);

/**
 * Collective: makes `f` the handler of messages of type `n` (0 <= n < AML_MAX_HANDLERS) on
 * every rank; `f` may be NULL to remove it. Starts a new phase: it first completes every
 * message sent before it (as `aml_barrier`), so those reach the previous handler, and no rank
 * sends with the new one before all have installed it. Not callable from a handler.
 *
 * The handler gets the sender's rank in `MPI_COMM_WORLD`, the payload (8-byte aligned; valid
 * only during the call; treat it as read-only) and its length. It may call `aml_send`
 * (to any rank, itself included), `aml_my_pe` and `aml_n_pes`, nothing else of AML.
 */
void aml_register_handler(void (*f)(int from, void* data, int nbytes), int n);

/**
 * Sends `length` bytes (0 <= length <= AML_MAX_PAYLOAD) from `src` to the handler of `type`
 * on rank `node`. The payload is copied before the call returns, so `src` may be reused at
 * once. To this rank the handler runs before the call returns; to another, the message may
 * wait in a buffer until the next `aml_barrier` (it is coalesced with the other messages to
 * that rank). Handlers of arrived messages may run inside the call. Callable from handlers.
 */
void aml_send(void* src, int type, int length, int node);

/** This process's rank in `MPI_COMM_WORLD`. */
int aml_my_pe(void);
/** The number of processes in `MPI_COMM_WORLD`. */
int aml_n_pes(void);

#ifdef __cplusplus
}
#endif

#define my_pe aml_my_pe
#define num_pes aml_n_pes

/** Wall-clock seconds (`MPI_Wtime`). */
#define aml_time() MPI_Wtime()
/** In-place sum / minimum / maximum of the 8-byte integer at `p` over `MPI_COMM_WORLD`
 *  (a plain `MPI_Allreduce`: call it between phases, when no rank is sending). */
#define aml_long_allsum(p) MPI_Allreduce(MPI_IN_PLACE, (p), 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD)
#define aml_long_allmin(p) MPI_Allreduce(MPI_IN_PLACE, (p), 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD)
#define aml_long_allmax(p) MPI_Allreduce(MPI_IN_PLACE, (p), 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD)

#endif /* AM_COMPAT_AML_H */
