// SPDX-License-Identifier: MIT
/// @file
/// `am::config`: job configuration. Every field has an environment-variable default.
#pragma once

#include <cstddef>
#include <string>

namespace am {

/// How ranks are realised.
enum class transport_kind {
    threads,  ///< ranks are threads of one process (the embedded default)
    shm,      ///< ranks are processes on one host, talking through POSIX shared memory
    mpi,      ///< ranks are the processes of an MPI job (mpirun, mpiexec, srun); needs am built
              ///< with MPI. Peers on the same node talk through shared memory (`node_size`).
    ucx,      ///< as mpi (started by an MPI launcher, bootstrapped and failing through MPI), but
              ///< peers off the node are reached through UCX: active messages, rendezvous, and
              ///< one-sided put/get/atomics on registered segments. Needs am built with UCX
              ///< (docs/transports.md says when to choose it over mpi).
};

/// The transport's name as `AM_TRANSPORT` spells it: "threads", "shm", "mpi" or "ucx".
[[nodiscard]] constexpr const char* to_string(transport_kind k) noexcept {
    switch (k) {
        case transport_kind::threads:
            return "threads";
        case transport_kind::shm:
            return "shm";
        case transport_kind::mpi:
            return "mpi";
        case transport_kind::ucx:
            return "ucx";
    }
    return "?";
}

/// How `put` and `get` reach a rank's segment.
enum class rma_path {
    automatic,  ///< copy directly when the target's segment is mapped here (threads, shm)
    am,         ///< always through active messages (the portable reference implementation)
};

/// Job configuration. `config::from_env()` reads the environment; a default-constructed
/// config is the documented default. Read by `am::run` once, before any rank starts.
struct config {
    /// Number of ranks (`AM_RANKS`, default 1). Ignored when launched by `amrun` and on the mpi
    /// transport, where the communicator's size is the rank count.
    int ranks = 1;
    /// Transport (`AM_TRANSPORT=threads|shm|mpi|ucx`). Default: mpi when the process was started
    /// by an MPI launcher (Open MPI, MPICH/Hydra, Slurm with PMI or PMIx), else threads.
    transport_kind transport = transport_kind::threads;
    /// Bytes of each ring: one ring per ordered pair of ranks and per lane (`AM_RING_BYTES`).
    /// 0 picks 256 KiB for up to 16 ranks and less beyond. Rounded up to a power of two,
    /// at least 1 KiB. The ring bounds `max_medium()`.
    std::size_t ring_bytes = 0;
    /// Bytes of each rank's registered segment, the target of long messages
    /// (`AM_SEGMENT_BYTES`, default 64 MiB). Pages are touched only when written.
    std::size_t segment_bytes = std::size_t{64} << 20;
    /// Largest medium payload wanted (`AM_MAX_MEDIUM`, default 64 KiB); the effective limit,
    /// `context::max_medium()`, is also bounded by the ring size.
    std::size_t max_medium = std::size_t{64} << 10;
    /// Largest single payload of `am::async`, a dist container's operation or a visit's
    /// arguments (`AM_MAX_PAYLOAD`, default 1 GiB): a call above it throws errc::too_large
    /// and sends nothing. Calls above `max_medium` travel in fragments.
    std::size_t max_payload = std::size_t{1} << 30;
    /// Run a progress thread per rank that services messages while the rank computes
    /// (`AM_PROGRESS_THREAD=1`, default off). Handlers then run on that thread too.
    bool progress_thread = false;
    /// How put/get travel (`AM_RMA=auto|am`, default auto). `am` forces the active-message
    /// implementation on every transport, e.g. to test or measure it.
    rma_path rma = rma_path::automatic;
    /// Largest message `send`/`isend` transfer eagerly (`AM_EAGER_BYTES`, default 8 KiB,
    /// bounded by `context::max_medium()`); larger ones use the three-phase protocol.
    std::size_t eager_bytes = std::size_t{8} << 10;
    /// mpi transport: the most ranks that count as one node (`AM_NODE_SIZE`, default 0 = no
    /// cap). Ranks of one node (same host, and within the cap, in rank order) reach each other
    /// through shared memory and other ranks through MPI. 1 sends everything through MPI.
    int node_size = 0;
    /// mpi transport: seconds a rank may go without a heartbeat datagram from a ring neighbour
    /// before that neighbour is declared lost and the job ends (`AM_HEARTBEAT`). `auto`
    /// (negative, the default): 5 s when the job spans more than one host, off on one host;
    /// `0` or `off`: off; a number of seconds in [1, 3600]: on with that timeout, also on one
    /// host. Heartbeats travel over UDP from a thread of their own (docs/transports.md).
    double heartbeat = -1;
    /// mpi transport: the network interface heartbeats use (`AM_HEARTBEAT_IF`, e.g. `eth1`;
    /// default empty: every IPv4 interface that is up, loopback only when there is no other).
    std::string heartbeat_if;
    /// Print per-rank statistics to stderr when the rank finishes (`AM_STATS=1`), with a line
    /// per typed-message epoch.
    bool print_stats = false;
    /// Write a trace of the whole run to this file (`AM_TRACE=path`; empty: no trace): the
    /// Chrome/Perfetto trace-event format, one track per rank and thread, written by rank 0
    /// when the job ends (docs/observability.md). Same as `context::trace_start` at the start
    /// and `trace_stop` at the end. When empty, am::run still reads `AM_TRACE` itself, also for
    /// a config built in code.
    std::string trace_path;
    /// Most trace events a rank records (`AM_TRACE_MAX_EVENTS`, a count >= 1 such as 500000 or
    /// 4M; 0, the default here: `AM_TRACE_MAX_EVENTS` when set, else 1 000 000). A rank keeps
    /// its first events up to the cap and counts the rest: the first one dropped prints a
    /// warning naming the rank and the cap, and the file's `otherData` says how many each rank
    /// dropped (docs/observability.md). Bounds the records held (40 bytes each) and the file.
    std::size_t trace_max_events = 0;
    /// Let several threads of a rank send and poll at once (`AM_THREAD_MULTIPLE=1`, default
    /// off): the core then serialises its own state internally, as with `progress_thread`, and
    /// coalescing layers keep one buffer set per sending thread. Costs a lock per core send.
    /// A handler that throws inside another thread's `poll()` fails the job, then the
    /// exception reaches that thread. Off, the context belongs to the rank's own thread:
    /// another thread's send, poll, wait, barrier or handler registration throws am::error
    /// (errc::bad_context) and does nothing (handlers on the progress thread may still send).
    bool thread_multiple = false;
    /// Seconds an `am::epoch` may take to end before every rank prints what it sent and
    /// handled per peer and per message type in that epoch and the job aborts
    /// (`AM_EPOCH_TIMEOUT`, default 0 = wait forever). Also how long `am::tam::run` waits in
    /// one of its collectives with nothing to do before it prints its counts and fails the job.
    double epoch_timeout = 0;
    /// Test-only fault injection on the threads and shm transports (`AM_FAULTS=seed`, default
    /// 0 = off; not under amrun or mpi): polls deliver late and reorder messages across peers
    /// (each peer's own order is kept).
    std::uint64_t faults = 0;
    /// Usable bytes of each stack of an optimistic handler (`AM_OAM_STACK_BYTES`, default
    /// 64 KiB, at least 16 KiB; rounded up to pages). A 1 MiB guard gap lies below each stack
    /// (docs/rpc.md: overflows, -fstack-clash-protection).
    std::size_t oam_stack_bytes = std::size_t{64} << 10;
    /// Most optimistic handlers (and RPCs, continuations) of one rank blocked at once
    /// (`AM_OAM_MAX_THREADS`, default 4096); one more fails with errc::too_large.
    std::size_t oam_max_threads = 4096;
    /// Seconds rank code may wait on an am::mutex, condition variable or future — or the end
    /// of a quiescence for blocked optimistic handlers — before the rank prints, once, what it
    /// waits in and which handlers are blocked there in what (`AM_OAM_HANG_SECONDS`, default
    /// 30; 0 = never). A diagnosis only: the wait goes on.
    double oam_hang_seconds = 30;

    /// The defaults above, overridden by the environment variables named above.
    /// Throws `am::error` naming the variable when one cannot be parsed.
    static config from_env();
};

/// True when this process was started by an MPI launcher (its environment says so).
[[nodiscard]] bool launched_by_mpi() noexcept;

}  // namespace am
