// SPDX-License-Identifier: MIT
// The internal transport interface. The core (src/core) talks to every transport through it;
// transports never call into the core except through `message_sink`.
#pragma once

#if !defined(AM_INTERNAL_TRANSPORT)
#error \
    "src/transport is private to the transports, the core and the runtime; a layer uses <am/core/layer.hpp> (docs/layers.md)"
#endif

#include <am/atomic_op.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace am::transport {

/// Lanes: requests and replies have separate buffers ("credits"), so replies always drain.
inline constexpr unsigned num_lanes = 2;

/// Receives messages from `transport::poll`. `msg` is valid only during the call.
class message_sink {
  public:
    virtual void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) = 0;

  protected:
    ~message_sink() = default;
};

/// What a bootstrap collective is for: the part of the library that starts it (`layer`) and
/// that part's own number for the call (`id`). The n-th collective of every rank must be the
/// same operation: each carries its kind, its size and the rank's sequence number, and a rank
/// that meets a different one fails the job naming the ranks and both calls (`errc::
/// collective_mismatch`) instead of matching it. The transport knows only its own kinds
/// (`transport_layer`); the parts above number themselves and name their kinds in the rank's
/// `coll_names` (src/core/context_impl.hpp says how the numbers are given out).
struct coll_kind {
    std::uint8_t layer;  // < 16
    std::uint8_t id;     // < 16
    friend bool operator==(coll_kind, coll_kind) = default;
};

/// The transport's own kinds.
inline constexpr std::uint8_t transport_layer = 0;
namespace coll {
inline constexpr coll_kind barrier{transport_layer, 1};       // a transport barrier
inline constexpr coll_kind start_of_run{transport_layer, 2};  // a launched rank joins
}  // namespace coll

/// How the errors name one kind of collective.
struct coll_name {
    std::string call;    // the call as the program sees it, e.g. "am::context::barrier"
    std::string did;     // what ranks in it did, after "rank 3"; empty: " called " + call
    bool sized = false;  // its size is bytes per rank, worth naming (" of 8 bytes per rank")
};

/// The names of the collective kinds a rank knows, for the errors: one per rank (ranks may
/// be threads), filled by each part of the library before it starts a collective.
class coll_names {
  public:
    coll_names();  // with the transport's own kinds
    /// Names `kind` (replacing its name, if any). Throws std::logic_error when `kind` is out
    /// of range.
    void add(coll_kind kind, coll_name name);
    /// The call of `kind` ("am::context::barrier"), or a description of an unknown kind.
    [[nodiscard]] std::string call(coll_kind kind) const;
    /// What the ranks in collective `kind` of `size` did, after "rank 3" (" called ...").
    [[nodiscard]] std::string did(coll_kind kind, std::uint32_t size) const;
    /// The error text for ranks whose collectives do not match: `ids[r]` is rank r's word
    /// (`coll_id`). Groups the ranks by call, e.g. "collectives do not match at collective #7:
    /// rank 0 called am::context::quiesce while ranks 1-3 returned from the rank function
    /// (the quiescence at the end of am::run)".
    [[nodiscard]] std::string describe_mismatch(const std::vector<std::uint64_t>& ids) const;

  private:
    std::map<std::uint8_t, coll_name> _names;  // by the kind's byte in `coll_id`
};

/// The calling thread works for rank `rank` (a rank's progress thread): if it calls exit()
/// while a threads job of this process runs, the job fails naming that rank
/// (src/transport/threads). For the thread's life; harmless on other transports.
void set_thread_rank(int rank) noexcept;

/// A collective as a 64-bit word: sequence number (32 bits), kind (layer and id, 4 bits each)
/// and size per rank (24 bits: bytes of an allgather; 0 where ranks may contribute different
/// sizes). Equal words: the same call.
struct coll_id {
    std::uint64_t word;
    static constexpr std::uint8_t byte_of(coll_kind kind) noexcept {
        return static_cast<std::uint8_t>((kind.layer & 0xfu) << 4 | (kind.id & 0xfu));
    }
    static coll_id make(std::uint32_t seq, coll_kind kind, std::uint32_t size) noexcept {
        return {std::uint64_t{seq} << 32 | std::uint64_t{byte_of(kind)} << 24 | (size & 0xffffffu)};
    }
    [[nodiscard]] std::uint32_t seq() const noexcept {
        return static_cast<std::uint32_t>(word >> 32);
    }
    [[nodiscard]] coll_kind kind() const noexcept {
        return {static_cast<std::uint8_t>((word >> 28) & 0xfu),
                static_cast<std::uint8_t>((word >> 24) & 0xfu)};
    }
    [[nodiscard]] std::uint32_t size() const noexcept { return word & 0xffffffu; }
};

/// Called while a blocking bootstrap collective waits, so the rank keeps handling messages.
/// Returns how many it handled: the wait backs off only while nothing arrives.
using idle_fn = std::function<std::size_t()>;
/// Called once when a collective's result is complete.
using done_fn = std::function<void()>;

/// One-sided access to the registered segments of peers this rank cannot map, through the
/// network and without the peer's CPU (ucx: UCP put/get and atomics on memory registered when
/// the job starts). Calls follow the transport's locking (any thread when it locks); `done`
/// runs exactly once, from inside a later `poll` of this rank (never from the starting call),
/// with the old value of the word for a fetching atomic (0 otherwise).
class one_sided {
  public:
    using op_done = void (*)(void* arg, std::uint64_t value);

    /// True when `rank`'s segment can be reached by this interface.
    [[nodiscard]] virtual bool reaches(int rank) const noexcept = 0;
    /// Copies `len` bytes from `src` to byte `offset` of `rank`'s segment. `src` must stay
    /// unchanged until `done`, which runs once the bytes are visible in the target's segment.
    virtual void put(int rank, std::uint64_t offset, const void* src, std::size_t len, op_done done,
                     void* arg) = 0;
    /// Copies `len` bytes from byte `offset` of `rank`'s segment to `dst`; `done` runs once they
    /// are there.
    virtual void get(int rank, std::uint64_t offset, void* dst, std::size_t len, op_done done,
                     void* arg) = 0;
    /// Applies `op` with `operand` (and `compare`, for compare_swap) to the `bytes`-wide (4 or
    /// 8) unsigned integer at `offset` of `rank`'s segment (aligned to `bytes`), atomically with
    /// respect to every other atomic of this interface on that word. Returns false and starts
    /// nothing when the network does not do `op` (min, max): the caller then runs it at the
    /// owner by message. The value `done` gets is the old word.
    virtual bool atomic(int rank, std::uint64_t offset, atomic_op op, unsigned bytes,
                        std::uint64_t operand, std::uint64_t compare, op_done done, void* arg) = 0;

  protected:
    ~one_sided() = default;
};

/// What the core needs from a transport. One object per rank.
class transport {
  public:
    virtual ~transport() = default;

    [[nodiscard]] int rank() const noexcept { return _rank; }
    [[nodiscard]] int size() const noexcept { return _size; }
    /// Rounds a wait spins before it yields (`util::backoff`): 0 when this host runs more
    /// ranks than it has usable cores.
    [[nodiscard]] unsigned spin_limit() const noexcept { return _spin; }
    void set_spin_limit(unsigned spin) noexcept { _spin = spin; }

    /// Largest message (header + arguments + medium payload) `try_reserve` accepts.
    [[nodiscard]] virtual std::size_t max_message() const noexcept = 0;

    /// Reserves `bytes` of outgoing buffer to `dest` on `lane`, or returns nullptr when there is
    /// no room now (back-pressure: retry after progress). The caller writes the message there
    /// and calls `commit` with the same `bytes` before the next reserve on that (dest, lane).
    [[nodiscard]] virtual std::byte* try_reserve(int dest, unsigned lane, std::size_t bytes) = 0;
    virtual void commit(int dest, unsigned lane, std::byte* msg, std::size_t bytes) = 0;

    /// Delivers arrived messages (replies first) to `sink`; returns how many.
    virtual std::size_t poll(message_sink& sink) = 0;

    /// The registered segment of `rank` mapped into this process (own segment included), or an
    /// empty span when this transport cannot write it directly.
    [[nodiscard]] virtual std::span<std::byte> segment(int rank) noexcept = 0;
    /// One-sided network access to the segments `segment` does not map, or null when this
    /// transport has none (every transport but ucx).
    [[nodiscard]] virtual one_sided* remote_memory() noexcept { return nullptr; }

    /// Bootstrap collectives: block until every rank has joined, calling `idle` while waiting.
    /// `kind` says which operation this is; when the ranks' collectives differ (kind or size),
    /// every rank throws am::error(errc::collective_mismatch) naming the ranks and their calls
    /// (and fails the job) instead of matching them.
    virtual void barrier(coll_kind kind, const idle_fn& idle) = 0;
    /// Every rank contributes `bytes` (≤ `max_gather_bytes()`); `out` receives size()×bytes.
    /// `gathered`, when given, runs once `out` is complete, before the call returns.
    virtual void allgather(coll_kind kind, const void* in, void* out, std::size_t bytes,
                           const idle_fn& idle, const done_fn& gathered) = 0;
    [[nodiscard]] virtual std::size_t max_gather_bytes() const noexcept = 0;
    /// Element-wise sum of `n` counters over all ranks (n ≤ `max_reduce_words`) into `out`,
    /// calling `idle` while it waits. The default gathers and adds; transports override it
    /// with something cheaper (one barrier over shared slots, MPI_Iallreduce).
    virtual void allreduce_sum(coll_kind kind, const std::uint64_t* in, std::uint64_t* out,
                               std::size_t n, const idle_fn& idle);
    static constexpr std::size_t max_reduce_words = 32;
    /// While this rank waits in a collective: which ranks have not joined it yet, e.g. "rank
    /// 3 has not joined am::context::barrier (collective #12)"; empty when not known (over MPI) or
    /// when no collective is in progress. For diagnoses of a hang.
    [[nodiscard]] virtual std::string collective_stragglers() const { return {}; }
    /// The names of this rank's collective kinds (the parts above the transport add theirs).
    [[nodiscard]] coll_names& collective_names() noexcept { return *_names; }
    [[nodiscard]] const coll_names& collective_names() const noexcept { return *_names; }

    /// Non-empty once the job is going down (another rank failed or aborted): the reason.
    [[nodiscard]] virtual bool job_failed() const noexcept = 0;
    [[nodiscard]] virtual std::string failure_reason() const = 0;
    /// Marks the job failed with `reason` (first reason wins) so every rank stops.
    virtual void fail_job(std::string_view reason) noexcept = 0;
    /// This rank has finished `am::run` normally (a launcher then treats its exit as clean).
    virtual void mark_finished() noexcept = 0;

  protected:
    transport(int rank, int size) : _rank(rank), _size(size) {}

    /// The word of this rank's next collective (numbered from 1).
    coll_id next_collective(coll_kind kind, std::uint32_t size) noexcept {
        return coll_id::make(++_coll_seq, kind, size);
    }
    /// Throws am::error(collective_mismatch) after failing the job, naming the ranks and
    /// calls of `ids`, from the point of view of this rank's call `mine`.
    [[noreturn]] void collective_mismatch(coll_id mine, const std::vector<std::uint64_t>& ids);
    /// A transport that runs its collectives through `other` (ucx over its mpi job) names
    /// them with `other`'s names, which the parts above then fill.
    void share_names_with(transport& other) noexcept { _names = &other.collective_names(); }

  private:
    int _rank;
    int _size;
    unsigned _spin = 256;
    std::uint32_t _coll_seq = 0;
    coll_names _coll_names;
    coll_names* _names = &_coll_names;  // `_coll_names`, or those of the transport shared
};

}  // namespace am::transport
