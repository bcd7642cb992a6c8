/* SPDX-License-Identifier: MIT */
/**
 * @file
 * MPIX_AM: the generalized, MPI-interoperable active messages of "MPI-Interoperable Generalized
 * Active Messages" (section IV), as the paper's C interface over the program's own MPI windows.
 * docs/mpix_am.md explains the model, the datatype rules and what differs from the paper.
 *
 * Link the CMake target `am::mpix_am` (library `libam_mpix.a`, before MPI on the link line; it
 * needs am built with MPI). It works with Open MPI and MPICH through the MPI profiling
 * interface: it defines MPI_Win_create, MPI_Win_allocate, MPI_Win_free, MPI_Win_fence,
 * MPI_Win_lock, MPI_Win_unlock, MPI_Win_lock_all, MPI_Win_unlock_all, MPI_Win_flush,
 * MPI_Win_flush_all, MPI_Win_flush_local, MPI_Win_flush_local_all and MPI_Finalize, each doing
 * the AM part and then calling the PMPI_ function. Another PMPI tool that defines the same
 * functions cannot be linked into the same program.
 *
 * Model. A window created with MPI_Win_create or MPI_Win_allocate on a communicator congruent
 * to MPI_COMM_WORLD is also an AM window (other windows are plain MPI windows; the MPIX calls
 * refuse them with MPI_ERR_WIN). The first such window opens an `am` job on MPI_COMM_WORLD
 * (collective; `am` communicates on its own duplicate), which MPI_Finalize closes. An
 * operation is a user function (MPIX_Am_user_function) made into an MPI_Op with
 * MPIX_Am_op_create and registered collectively on a window with MPIX_Am_win_op_register. An
 * AM (MPIX_Am) runs the operation on `num_segments` segments of input at `target_rank`, over
 * the target's persistent buffer (a range of its window), and returns `num_segments` output
 * segments to the origin.
 *
 * Completion. AMs complete at the end of the access epoch they were issued in, by the
 * program's own synchronisation calls: MPI_Win_fence (collective: every AM issued by any
 * process since the previous fence, AMs to this process included, has run when it returns),
 * MPI_Win_unlock / MPI_Win_unlock_all / MPI_Win_flush / MPI_Win_flush_all (this process's AMs
 * to that target / all targets; the flush_local forms complete them entirely too). Then the
 * origin's output buffer holds every output and the target's window every update, visible to
 * the target's own loads after its matching synchronisation (the fence, or a later barrier).
 * The origin's input and output buffers must stay valid and unmodified until completion. An
 * AM outside an access epoch (no fence epoch open, no lock on the target) is an error
 * (MPI_ERR_RMA_SYNC). Post/start/complete/wait epochs carry no AMs.
 *
 * Progress. When MPI was initialised with MPI_THREAD_MULTIPLE, a progress thread runs AMs at
 * the target while it computes (the paper's asynchronous class); user functions then run on
 * that thread. Otherwise AMs progress only inside the MPIX calls and the wrapped MPI_Win_*
 * calls of each process (the paper's NO-ASYNC class): a passive-target AM (lock/unlock) waits
 * until the target enters one of them (MPI_Win_free, for instance, waits for the other
 * processes' lock epochs on that window). The environment variable AM_PROGRESS_THREAD=0/1
 * overrides the choice. With MPICH, whose passive-target calls progress only while the target
 * is inside MPI, every am message goes through MPI (no shared-memory mapping between processes,
 * hence no origin-side runs).
 *
 * Ordering and concurrency. The info key `am_ordering` at window creation ("none" or a
 * comma-separated subset of "sameop", "diffop", "sameam"; default all three) and the assertion
 * MPIX_MODE_CONCURRENT_AM at MPI_Win_fence, MPI_Win_lock or MPI_Win_lock_all have the paper's
 * meaning (section IV-E). AMs are unordered relative to MPI_Put, MPI_Get and MPI_Accumulate;
 * AMs and such operations on non-overlapping ranges in one epoch are both correct. Under
 * MPIX_MODE_CONCURRENT_AM the origin may run the operation itself on the target's window when
 * that window is mapped in its process (windows of MPI_Win_allocate, between processes of one
 * host), since the operation is equivalent on every process.
 *
 * Thread-safety. MPIX calls on one window follow MPI's rules for the thread level MPI provides
 * (with MPI_THREAD_MULTIPLE any thread may call; each call is then atomic). User functions
 * must not call MPI or MPIX functions (paper, section IV-F) and must not block.
 *
 * Errors. Every function returns MPI_SUCCESS or an MPI error class: it prints the reason on
 * stderr ("MPIX_Am: rank R: ..." naming the call and the limit) and invokes the window's error
 * handler (MPI_COMM_WORLD's when no window is involved) with that class, so the default,
 * MPI_ERRORS_ARE_FATAL, ends the job; set MPI_ERRORS_RETURN on the window to get the class
 * back. A failed call issues nothing; AMs issued before it are unaffected.
 */
#ifndef AM_MPIX_AM_H
#define AM_MPIX_AM_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Assertion bit for MPI_Win_fence, MPI_Win_lock and MPI_Win_lock_all (the paper's
 * MPIX_MODE_CONCURRENT_AM): the AMs of the epoch it starts may run concurrently with each other,
 * at the target or at the origin; the operation must then be safe against concurrent runs.
 * Removed from the assertion before the call reaches MPI. Its value collides with no
 * MPI_MODE_* of Open MPI (1..16) or MPICH (1024..16384).
 */
#define MPIX_MODE_CONCURRENT_AM (1 << 20)

/**
 * An AM's user function (the paper's Fig. 1), run once per pipeline unit of `num_segments`
 * segments starting at segment `segment_offset` of the AM:
 *   input_addr: the unit's input, `num_segments` segments of `input_segment_count` elements of
 *     `input_segment_datatype` each, packed; read-only, valid during the call only.
 *   persistent_addr: the AM's range of the target's window, `persistent_count` elements of
 *     `persistent_datatype`; the function may update it.
 *   output_addr: the unit's output, `num_segments` segments of `output_segment_count` elements
 *     of `output_segment_datatype`, packed; to be written, valid during the call only.
 * The datatypes are the target datatypes the origin gave MPIX_Am (predefined types).
 * Runs on the target's progress thread or inside one of its MPI/MPIX calls, or at the origin
 * (MPIX_MODE_CONCURRENT_AM); must not call MPI or MPIX, block, or keep the buffers' addresses.
 */
typedef void MPIX_Am_user_function(void* input_addr, int input_segment_count,
                                   MPI_Datatype input_segment_datatype, void* persistent_addr,
                                   int persistent_count, MPI_Datatype persistent_datatype,
                                   void* output_addr, int output_segment_count,
                                   MPI_Datatype output_segment_datatype, int num_segments,
                                   int segment_offset);

/**
 * Makes an MPI_Op that stands for `fn` (local). The op is for MPIX_Am only: used in a
 * reduction it aborts the job with a message saying so. Free it with MPIX_Am_op_free (after
 * the windows it is registered on are freed, or at least after its last AM completed).
 * Returns MPI_ERR_ARG when `fn` or `op` is NULL.
 */
int MPIX_Am_op_create(MPIX_Am_user_function* fn, MPI_Op* op);

/** Frees an op made by MPIX_Am_op_create and sets `*op` to MPI_OP_NULL (MPI_ERR_OP if it was
 * not made by MPIX_Am_op_create). */
int MPIX_Am_op_free(MPI_Op* op);

/**
 * Collective over the window's processes: registers `op` on `win` so that MPIX_Am may use it
 * there. Every process registers functionally equivalent functions in the same order; the
 * call checks that each registered the same function (the same module and offset in it, so
 * the same function of the same program) and fails with MPI_ERR_OP naming both otherwise.
 * Registering an op twice on a window is a no-op. Synchronising: no process returns before every
 * process has registered the op (so AMs may use it at once); call it as an MPI_COMM_WORLD
 * collective (in the same order as the program's other collectives on it).
 */
int MPIX_Am_win_op_register(MPI_Op op, MPI_Win win);

/**
 * The AM trigger (the paper's Fig. 2). Runs `am_op` at `target_rank` on `num_segments`
 * segments. Segment i of the input is `origin_input_segment_count` elements of
 * `origin_input_segment_datatype` at origin_input_addr + i × (count × extent); its type
 * signature must be N × that of `target_input_segment_datatype` for some N ≥ 0, which the user
 * function gets as input_segment_count (likewise the output with M). Target datatypes and
 * `target_persistent_datatype` must be predefined, non-pair types (MPI_BYTE accepts any origin
 * signature, as bytes). The persistent buffer starts `target_persistent_disp` × the target's
 * disp_unit bytes into its window and spans `target_persistent_count` elements; it must lie in
 * the window (MPI_ERR_RMA_RANGE otherwise).
 * Returns at once (nonblocking); the AM completes at the end of the epoch (see the file
 * comment). Errors: MPI_ERR_WIN (not an AM window), MPI_ERR_OP (op not registered on `win`),
 * MPI_ERR_TYPE (signatures, non-predefined target types), MPI_ERR_COUNT, MPI_ERR_RANK,
 * MPI_ERR_RMA_RANGE, MPI_ERR_RMA_SYNC (outside an epoch), MPI_ERR_ARG.
 */
int MPIX_Am(const void* origin_input_addr, int origin_input_segment_count,
            MPI_Datatype origin_input_segment_datatype, void* origin_output_addr,
            int origin_output_segment_count, MPI_Datatype origin_output_segment_datatype,
            int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
            MPI_Aint target_persistent_disp, int target_persistent_count,
            MPI_Datatype target_persistent_datatype, MPI_Datatype target_output_segment_datatype,
            MPI_Op am_op, MPI_Win win);

/**
 * Hands `size` bytes at `buffer` to the window for staging the AMs that arrive here from any
 * origin once their internal buffers are in use (paper IV-D; prototype modelled on
 * MPI_Buffer_attach). The runtime uses it from 16-byte alignment. One buffer at a time per
 * window (MPI_ERR_BUFFER for a second one, MPI_ERR_ARG for a NULL or empty one). The buffer
 * belongs to the window until detached.
 */
int MPIX_Am_win_buffer_attach(MPI_Win win, void* buffer, MPI_Aint size);

/**
 * Takes the attached buffer back once every AM staged in it has run (progresses AMs until
 * then); later AMs wait for internal buffers. Sets `*buffer` and `*size` to what was attached
 * (NULL and 0 when nothing was). Prototype modelled on MPI_Buffer_detach.
 */
int MPIX_Am_win_buffer_detach(MPI_Win win, void** buffer, MPI_Aint* size);

#ifdef __cplusplus
}
#endif

#endif /* AM_MPIX_AM_H */
