// SPDX-License-Identifier: MIT
// The job region shared by all ranks of a ring-based transport (threads, shm): a header with
// the job state and bootstrap-collective words, one gather slot per rank, one ring per ordered
// pair of ranks and lane, and every rank's segment. The memory comes from the transport (heap
// mapping for threads, POSIX shared memory for shm); it must start zero-filled.
#pragma once

#include "../../util/assert.hpp"
#include "../../util/zeroed_array.hpp"
#include "../transport.hpp"
#include "cross_process.hpp"
#include "spsc_ring.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace am::transport::ring {

/// Where a rank is in its life, as seen by launchers and peers.
enum class rank_state : std::uint32_t {
    none = 0,
    attached = 1,
    finished = 2,
    failed = 3,
    exited = 4,  // set by the shm launcher: the process exited cleanly after its last am::run
};

struct rank_info {
    std::atomic<std::uint32_t> state;
    std::atomic<std::int32_t> pid;
    // The rank's collectives as `coll_id` words, alternating by sequence number: written before
    // the rank enters the barrier, read by every rank after it, and again only two collectives
    // later, by when every rank has passed the barrier in between.
    std::atomic<std::uint64_t> coll[2];
};

/// Sizes chosen before the region exists.
struct region_params {
    int ranks = 1;
    std::size_t ring_bytes = 0;     // power of two
    std::size_t segment_bytes = 0;  // multiple of the page size
};

inline constexpr std::uint64_t region_magic = 0x616d2d7265676e32ull;  // "am-regn2"
/// Each rank's gather slot: the first `gather_bytes` serve allgather, the rest holds the two
/// alternating slots of `allreduce_sum`.
inline constexpr std::size_t gather_bytes = 512;
inline constexpr std::size_t reduce_slot_bytes = 256;
inline constexpr std::size_t gather_slot_bytes = gather_bytes + 2 * reduce_slot_bytes;
inline constexpr std::size_t reason_bytes = 1024;
/// Seconds a launcher gives the ranks to stop once the job has failed: shm then kills the
/// ranks still running, threads ends the process.
inline constexpr int stop_grace_seconds = 3;

/// Sizes and offsets of a region's parts, in bytes from its start. The parts come in this
/// order and do not overlap: the header (`region_header`), one `rank_info` per rank, one gather
/// slot per rank (`gather_slot_bytes`), one announce area per rank (its count on a 64-byte line
/// of its own, then `num_lanes` × ranks entries), one ring per ordered pair of ranks and lane
/// (a `ring_ctl`, then the ring's `data_bytes(ring_bytes)`, in `ring(src, dst, lane)` order) and
/// one segment per rank. Every part starts on a 64-byte line, the rings and the segments on a
/// page; `total` is where the last segment ends.
struct region_layout {
    std::uint32_t ranks;
    std::uint32_t reserved;
    std::uint64_t ring_bytes;
    std::uint64_t segment_bytes;
    std::uint64_t ranks_off, gather_off, announce_off, rings_off, segments_off, total;

    friend bool operator==(const region_layout&, const region_layout&) = default;
};

/// A rank's announcements: the rings other ranks (and it) have started to send on, so its
/// polls scan only those. `entries[k]` is the k-th ring's index in the receiver's scan order
/// plus 1 (0: claimed by `count` but not written yet).
struct announce_area {
    std::atomic<std::uint32_t>* count;
    std::atomic<std::uint32_t>* entries;  // num_lanes × ranks
};

struct region_header {
    std::uint64_t magic;
    region_layout l;
    alignas(64) std::atomic<std::uint32_t> failed;
    std::atomic<std::uint32_t> reason_claimed;
    char reason[reason_bytes];
    alignas(64) std::atomic<std::uint32_t> barrier_count;
    alignas(64) std::atomic<std::uint32_t> barrier_generation;
};

/// Computes the layout of a region for `p`; `total` is the bytes to allocate.
region_layout layout(const region_params& p);

/// Writes the header into fresh, zero-filled memory of at least `layout(p).total` bytes.
void initialize(std::byte* base, const region_params& p);

/// Access to a region that has been initialised (by this or another process).
class region {
  public:
    explicit region(std::byte* base);

    [[nodiscard]] region_header& header() const noexcept { return *_hdr; }
    [[nodiscard]] int ranks() const noexcept { return static_cast<int>(_hdr->l.ranks); }
    [[nodiscard]] rank_info& info(int rank) const noexcept;
    [[nodiscard]] std::byte* gather_slot(int rank) const noexcept;
    [[nodiscard]] announce_area announcements(int rank) const noexcept;
    [[nodiscard]] ring_ctl* ring(int src, int dst, unsigned lane) const noexcept;
    [[nodiscard]] std::byte* ring_data(int src, int dst, unsigned lane) const noexcept;
    [[nodiscard]] std::byte* segment(int rank) const noexcept;

    /// Records the first failure reason and raises the failed flag (async-signal-safe).
    void fail(std::string_view reason) const noexcept;
    [[nodiscard]] bool failed() const noexcept {
        return _hdr->failed.load(std::memory_order_acquire) != 0;
    }
    [[nodiscard]] std::string reason() const;

  private:
    /// The `bytes` bytes at offset `off` of the region, which they must lie inside.
    [[nodiscard]] std::byte* at(std::uint64_t off, std::uint64_t bytes) const noexcept;

    std::byte* _base;
    region_header* _hdr;
};

/// The transport over a region: both threads and shm ranks use it.
class ring_transport final : public transport {
  public:
    ring_transport(std::byte* base, int rank);

    std::size_t max_message() const noexcept override { return _max_message; }
    std::byte* try_reserve(int dest, unsigned lane, std::size_t bytes) override {
        producer& p = _out[out_index(dest, lane)];
        std::byte* msg = p.reserve(bytes);
        if (msg == nullptr && !p.attached()) [[unlikely]] {
            attach(dest, lane);
            msg = p.reserve(bytes);
        }
        return msg;
    }
    void commit(int dest, unsigned lane, std::byte* msg, std::size_t bytes) override {
        _order.publish();
        _out[out_index(dest, lane)].commit(msg, bytes);
    }
    /// The producer of the ring to `dest` on `lane`, for callers that inline the ring. Not
    /// attached before the first `try_reserve` to that ring: its `reserve` returns nullptr.
    [[nodiscard]] producer& out(int dest, unsigned lane) noexcept {
        _order.publish();
        return _out[out_index(dest, lane)];
    }
    std::size_t poll(message_sink& sink) override { return poll_into(sink); }

    /// `poll` for a known sink type, so its `deliver` can be inlined into the ring loop.
    template <class Sink>
    std::size_t poll_into(Sink& sink) {
        if (_region.failed()) [[unlikely]]
            throw_failed();
        if (_faults != 0) [[unlikely]]
            return poll_with_faults(sink);
        // Only the rings some rank has sent on are scanned (announced to this rank), reply
        // rings first: replies free the peers' request credits and never wait on anything.
        // The scan stays small; only a ring with records pays for draining.
        if (_announced.count->load(std::memory_order_relaxed) != _absorbed) [[unlikely]]
            absorb();
        std::size_t handled = 0;
        for (in_ring *r = _in.data(), *e = r + _in.size(); r != e; ++r) {
            if (r->c.ready()) [[unlikely]]
                handled += drain_ring(sink, *r);
        }
        return handled;
    }
    std::span<std::byte> segment(int rank) noexcept override;
    void barrier(coll_kind kind, const idle_fn& idle) override;
    void allgather(coll_kind kind, const void* in, void* out, std::size_t bytes,
                   const idle_fn& idle, const done_fn& gathered) override;
    std::size_t max_gather_bytes() const noexcept override { return gather_bytes; }
    void allreduce_sum(coll_kind kind, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                       const idle_fn& idle) override;
    std::string collective_stragglers() const override;
    bool job_failed() const noexcept override { return _region.failed(); }
    std::string failure_reason() const override { return _region.reason(); }
    void fail_job(std::string_view reason) noexcept override { _region.fail(reason); }
    void mark_finished() noexcept override;

    /// Fault injection for tests (`config::faults`): polls then deliver late and out of order
    /// across peers. 0 turns it off.
    void set_faults(std::uint64_t seed) noexcept { _faults = seed == 0 ? 0 : seed | 1; }
    /// The ranks are processes (shm): tell ThreadSanitizer about the order that runs through
    /// the other processes (cross_process.hpp). Nothing without TSan.
    void ranks_are_processes() noexcept { _order.enable(); }

  private:
    /// Index of the producer to `dest` on `lane` in `_out` (the core checked `dest`).
    [[nodiscard]] std::size_t out_index(int dest, unsigned lane) const noexcept {
        AM_ASSERT(static_cast<unsigned>(dest) < static_cast<unsigned>(size()) && lane < num_lanes,
                  "ring to a destination or lane out of range");
        return static_cast<std::size_t>(dest) * num_lanes + lane;
    }
    // With faults on, a poll delivers nothing a quarter of the time (and yields the CPU), and
    // otherwise visits the rings from a random start, skipping each with probability 1/2 and
    // taking at most a few records from each: messages from different peers arrive late and
    // reordered; each ring stays FIFO, as the transport promises.
    template <class Sink>
    [[gnu::noinline]] std::size_t poll_with_faults(Sink& sink) {
        const auto next = [this] {
            _faults ^= _faults << 13, _faults ^= _faults >> 7, _faults ^= _faults << 17;
            return _faults;
        };
        if (next() % 4 == 0) {
            std::this_thread::yield();
            return 0;
        }
        if (_announced.count->load(std::memory_order_relaxed) != _absorbed) absorb();
        const std::size_t e = _in.size();
        if (e == 0) return 0;
        const std::size_t start = next() % e;
        std::size_t handled = 0;
        for (std::size_t k = 0; k < e; ++k) {
            in_ring& r = _in[(start + k) % e];
            if (!r.c.ready() || next() % 2 == 0) continue;
            _order.observe();
            const int src = r.src;
            const unsigned lane = r.lane;
            handled += r.c.drain(
                [&](std::byte* msg, std::size_t len) { sink.deliver(src, lane, msg, len); },
                1 + next() % 4);
        }
        return handled;
    }
    /// An incoming ring this rank scans: its consumer, source and lane, and its place in the
    /// scan order (reply lanes first, then by source).
    struct in_ring {
        consumer c;
        int src;
        unsigned lane;
        unsigned order;
    };
    // A sink with `deliver_inline` (the core) has it inlined into the drain loop.
    template <class Sink>
    [[gnu::noinline]] std::size_t drain_ring(Sink& sink, in_ring& r) {
        _order.observe();
        const int src = r.src;
        const unsigned lane = r.lane;
        return r.c.drain([&](std::byte * msg, std::size_t len) __attribute__((always_inline)) {
            if constexpr (requires { sink.deliver_inline(src, lane, msg, len); }) {
                sink.deliver_inline(src, lane, msg, len);
            } else {
                sink.deliver(src, lane, msg, len);
            }
        });
    }
    /// Attaches the producer of the ring to `dest` on `lane` and announces the ring to `dest`
    /// (once per ring, also across the runs a region serves).
    void attach(int dest, unsigned lane);
    /// Adds the rings announced to this rank since the last call to the scan.
    [[gnu::noinline]] void absorb();
    [[noreturn]] void throw_failed() const;
    /// Enters this rank's next collective: publishes its word, passes the barrier, then checks
    /// that every rank's word is the same (else fails the job naming the calls).
    void join(coll_kind kind, std::uint32_t bytes, const idle_fn& idle);
    /// Waits until every rank has arrived (the barrier without the check).
    void wait_all(const idle_fn& idle);
    /// Fails the job when a rank this collective waits for has exited (shm launcher): it can
    /// never join, e.g. it made fewer am::run calls than the others.
    void check_departed() const;

    region _region;
    coll_id _joining{0};  // the collective this rank waits in, 0 outside one
    std::size_t _max_message;
    util::zeroed_array<producer> _out;  // [dest * lanes + lane]; memory only for those used
    std::vector<in_ring> _in;           // the announced rings, in scan order
    announce_area _announced;           // this rank's announcements
    std::uint32_t _absorbed = 0;        // how many of them are in `_in`
    unsigned _reduce_parity = 0;        // which of the two reduce slots the next reduction uses
    std::uint64_t _faults = 0;          // xorshift state; 0 when fault injection is off
    cross_process_order _order;         // for TSan when ranks are processes
};

}  // namespace am::transport::ring
