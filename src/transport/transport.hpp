// SPDX-License-Identifier: MIT
// The internal transport interface. The core (src/core) talks to every transport through it;
// transports never call into the core except through `message_sink`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

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

/// Called while a blocking bootstrap collective waits, so the rank keeps handling messages.
/// Returns how many it handled: the wait backs off only while nothing arrives.
using idle_fn = std::function<std::size_t()>;
/// Called once when a collective's result is complete.
using done_fn = std::function<void()>;

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

    /// Bootstrap collectives: block until every rank has joined, calling `idle` while waiting.
    virtual void barrier(const idle_fn& idle) = 0;
    /// Every rank contributes `bytes` (≤ `max_gather_bytes()`); `out` receives size()×bytes.
    /// `gathered`, when given, runs once `out` is complete, before the call returns.
    virtual void allgather(const void* in, void* out, std::size_t bytes, const idle_fn& idle,
                           const done_fn& gathered) = 0;
    [[nodiscard]] virtual std::size_t max_gather_bytes() const noexcept = 0;
    /// Element-wise sum of `n` counters over all ranks (n ≤ `max_reduce_words`) into `out`,
    /// calling `idle` while it waits. The default gathers and adds; transports override it
    /// with something cheaper (one barrier over shared slots, MPI_Iallreduce).
    virtual void allreduce_sum(const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                               const idle_fn& idle);
    static constexpr std::size_t max_reduce_words = 32;

    /// Non-empty once the job is going down (another rank failed or aborted): the reason.
    [[nodiscard]] virtual bool job_failed() const noexcept = 0;
    [[nodiscard]] virtual std::string failure_reason() const = 0;
    /// Marks the job failed with `reason` (first reason wins) so every rank stops.
    virtual void fail_job(std::string_view reason) noexcept = 0;
    /// This rank has finished `am::run` normally (a launcher then treats its exit as clean).
    virtual void mark_finished() noexcept = 0;

  protected:
    transport(int rank, int size) : _rank(rank), _size(size) {}

  private:
    int _rank;
    int _size;
    unsigned _spin = 256;
};

}  // namespace am::transport
