// SPDX-License-Identifier: MIT
// The mpi transport's rank: node peers through the node's rings, every other peer through MPI
// point-to-point on `_comm` (protocol: eager_format.hpp). The sending and receiving paths and
// the collectives are in mpi_transport.cpp; the failure paths in launch.cpp.
#pragma once

#include "../../util/backoff.hpp"
#include "../../util/maybe_lock.hpp"
#include "../ring/region.hpp"
#include "check.hpp"
#include "eager_format.hpp"
#include "node.hpp"

#include <am/error.hpp>

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace am::transport::mpi {

inline constexpr int recv_slots = 64;
// Completed sends are collected once this many are in flight (or when buffers run out):
// every MPI call runs MPI's progress engine, so a poll makes one call when it can.
inline constexpr std::size_t sends_before_test = 16;

using util::maybe_lock;  // locks only when a progress thread shares the transport

using buffer = std::unique_ptr<std::byte[]>;

class mpi_transport final : public transport {
  public:
    mpi_transport(MPI_Comm comm, MPI_Comm data, int rank, int size, node& nd, bool locking)
        : transport(rank, size),
          _comm(comm),
          _data(data),
          _node(nd),
          _ring(nd.base, nd.me),
          _locking(locking),
          _credits(static_cast<std::size_t>(size) * num_lanes, credits_per_peer),
          _consumed(static_cast<std::size_t>(size) * num_lanes, 0),
          _held(static_cast<std::size_t>(size)),
          _sent(static_cast<std::size_t>(size), 0),
          _received(static_cast<std::size_t>(size), 0),
          _remote(nd.global_of.size() < static_cast<std::size_t>(size)),
          _mpi_every(nd.global_of.size() > 1 ? 4 : 1) {
        ring::region(nd.base).info(nd.me).pid.store(getpid());
        set_spin_limit(util::spin_rounds_for(nd.host_size));
        _ring.set_spin_limit(spin_limit());
        _slots.reserve(recv_slots);
        _rreq.assign(recv_slots, MPI_REQUEST_NULL);
        for (int i = 0; i < recv_slots; ++i) {
            _slots.push_back(std::make_unique<std::byte[]>(slot_bytes));
            post(i);
        }
    }

    ~mpi_transport() override { release(); }
    mpi_transport(const mpi_transport&) = delete;
    mpi_transport& operator=(const mpi_transport&) = delete;

    std::size_t max_message() const noexcept override { return _ring.max_message(); }

    std::byte* try_reserve(int dest, unsigned lane, std::size_t bytes) override {
        const int l = _node.local_of[static_cast<std::size_t>(dest)];
        if (l >= 0) return _ring.try_reserve(l, lane, bytes);
        maybe_lock lock(_mutex, _locking);
        if (_credits[index(dest, lane)] == 0) return nullptr;
        _reserved = take_buffer(bytes);
        return _reserved.get();
    }

    void commit(int dest, unsigned lane, std::byte* msg, std::size_t bytes) override {
        const int l = _node.local_of[static_cast<std::size_t>(dest)];
        if (l >= 0) return _ring.commit(l, lane, msg, bytes);
        maybe_lock lock(_mutex, _locking);
        --_credits[index(dest, lane)];
        if (bytes <= slot_bytes) {
            isend(std::move(_reserved), bytes, dest, tag_msg + static_cast<int>(lane), _comm);
            return;
        }
        buffer head = take_buffer(8);
        const std::uint64_t n = bytes;
        std::memcpy(head.get(), &n, 8);
        isend(std::move(head), 8, dest, tag_big + static_cast<int>(lane), _comm);
        isend(std::move(_reserved), bytes, dest, 0, _data);
    }

    std::size_t poll(message_sink& sink) override {
        if (job_failed()) [[unlikely]]
            throw_failed();
        node_sink local(sink, _node.global_of);
        std::size_t handled = _ring.poll(local);
        // Node peers must not pay an MPI call on every poll: MPI is polled every
        // `_mpi_every`-th time when the node has peers, every time when it has none.
        if (_remote && ++_tick >= _mpi_every) {
            _tick = 0;
            handled += poll_mpi(&sink);
        }
        if (job_failed()) [[unlikely]]
            throw_failed();
        return handled;
    }

    std::span<std::byte> segment(int rank) noexcept override {
        const int l = _node.local_of[static_cast<std::size_t>(rank)];
        return l >= 0 ? _ring.segment(l) : std::span<std::byte>{};
    }

    void barrier(coll kind, const idle_fn& idle) override {
        reduce(next_collective(kind, 0), nullptr, nullptr, 0, idle);
    }

    void allgather(coll kind, const void* in, void* out, std::size_t bytes, const idle_fn& idle,
                   const done_fn& gathered) override {
        // The tagged reduction first: only ranks that agree on the call and its size go on to
        // the MPI_Iallgather, so MPI never matches two different collectives.
        reduce(next_collective(kind, static_cast<std::uint32_t>(bytes)), nullptr, nullptr, 0, idle);
        MPI_Request r = MPI_REQUEST_NULL;
        {
            maybe_lock lock(_mutex, _locking);
            check(MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out,
                                 static_cast<int>(bytes), MPI_BYTE, _comm, &r),
                  "MPI_Iallgather");
        }
        wait(r, idle);
        if (gathered) gathered();
    }
    std::size_t max_gather_bytes() const noexcept override { return std::size_t{1} << 20; }

    void allreduce_sum(coll kind, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                       const idle_fn& idle) override {
        reduce(next_collective(kind, 0), in, out, n, idle);
    }

    bool job_failed() const noexcept override { return _ring.job_failed(); }
    std::string failure_reason() const override { return _ring.failure_reason(); }

    /// Marks the job failed here and on the node (shared region), and tells every other
    /// peer, best effort: the messages leave with later progress or while `abort_job` waits.
    void fail_job(std::string_view reason) noexcept override;
    void mark_finished() noexcept override { _ring.mark_finished(); }

    /// The rank finished normally: drains the protocol with every peer and releases the MPI
    /// resources, so the communicators can be freed. Collective.
    void finish();
    /// Announced large messages may be up to `bytes`, the largest message a rank of the job
    /// may send (set by the job once the ranks agreed on it; see `job::job`).
    void set_largest_message(std::uint64_t bytes) noexcept { _largest = bytes; }
    /// The job failed: lets the failure messages leave, then aborts the MPI job.
    [[noreturn]] void abort_job(int status) { end_job(status, true); }
    /// exit(`status`) was called in this process while the job is open (by any thread): says
    /// so on stderr, fails the job and aborts it. Bounded: waits for no lock for long.
    [[noreturn]] void exit_job(int status) noexcept;

  private:
    struct held_msg {
        buffer bytes;
        std::size_t len = 0;
        unsigned lane = 0;
        MPI_Request req = MPI_REQUEST_NULL;  // a large message still arriving on `_data`
    };

    void reduce(coll_id id, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                const idle_fn& idle);

    static std::size_t index(int rank, unsigned lane) noexcept {
        return static_cast<std::size_t>(rank) * num_lanes + lane;
    }
    buffer take_buffer(std::size_t bytes) {
        if (bytes <= slot_bytes) {
            if (_free.empty()) progress_sends();
            if (!_free.empty()) {
                buffer b = std::move(_free.back());
                _free.pop_back();
                return b;
            }
            bytes = slot_bytes;
        }
        return std::make_unique<std::byte[]>(bytes);
    }
    void give_back(buffer b, std::size_t bytes) {
        if (bytes <= slot_bytes && _free.size() < 256) _free.push_back(std::move(b));
    }
    void isend(buffer b, std::size_t bytes, int dest, int tag, MPI_Comm comm);
    void progress_sends();
    void post(int slot) {
        check(MPI_Irecv(_slots[static_cast<std::size_t>(slot)].get(), static_cast<int>(slot_bytes),
                        MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, _comm,
                        &_rreq[static_cast<std::size_t>(slot)]),
              "MPI_Irecv");
        _order.push_back(slot);
    }
    std::size_t poll_mpi(message_sink* sink);
    std::size_t take_slot(int slot, const MPI_Status& st, message_sink* sink);
    /// What `file` made of an arrived message.
    struct filing {
        bool deliver = false;         // a core message to hand to the core now
        const char* error = nullptr;  // the message breaks the protocol: why
    };
    filing file(int source, const eager_message& m, bool can_deliver);
    [[noreturn]] void malformed(int source, const std::string& what);
    std::size_t drain_held(message_sink* sink);
    void consumed(int source, unsigned lane);
    void wait(MPI_Request& r, const idle_fn& idle) {
        unsigned backoff = 0;
        for (;;) {
            int done = 0;
            {
                // Every MPI call of a rank is made under `_mutex` when a progress thread runs:
                // MPI may complete this request from that thread, and the lock orders its
                // writes into the result before this thread reads it.
                maybe_lock lock(_mutex, _locking);
                check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
            }
            if (done) return;
            if (idle && idle() != 0) backoff = 0;
            util::backoff(backoff, spin_limit());
        }
    }
    [[noreturn]] void throw_failed() const {
        throw error(errc::aborted,
                    "rank " + std::to_string(rank()) + ": job aborted: " + failure_reason());
    }
    void release() noexcept;
    [[noreturn]] void end_job(int status, bool progress) noexcept;
    /// For the failure paths: takes `_mutex` when it is shared, waiting at most `limit` for it
    /// (a thread of the rank holds it around MPI calls, which may not return once the job has
    /// failed); false when it could not be taken.
    bool lock_within(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds limit) {
        if (!_locking) return true;
        lock = std::unique_lock<std::mutex>(_mutex, std::defer_lock);
        const auto until = std::chrono::steady_clock::now() + limit;
        while (!lock.try_lock()) {
            if (std::chrono::steady_clock::now() >= until) return false;
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        return true;
    }

    MPI_Comm _comm;
    MPI_Comm _data;
    node& _node;
    ring::ring_transport _ring;
    bool _locking;
    std::mutex _mutex;  // the MPI side's state, when a progress thread shares the transport

    std::vector<std::uint32_t> _credits;   // [peer * lanes + lane]: sends allowed now
    std::vector<std::uint32_t> _consumed;  // [peer * lanes + lane]: not yet returned
    buffer _reserved;
    std::vector<buffer> _free;

    std::vector<MPI_Request> _sreq;  // sends in flight and their buffers
    std::vector<buffer> _sbuf;
    std::vector<std::size_t> _slen;
    std::vector<int> _indices;  // MPI_Testsome's output

    std::vector<buffer> _slots;  // posted receives
    std::vector<MPI_Request> _rreq;
    std::deque<int> _order;                   // slots in the order they were posted
    std::vector<std::deque<held_msg>> _held;  // per source: messages behind a large one
    std::size_t _held_total = 0;
    bool _finishing = false;                      // no more credits are returned
    std::vector<std::uint64_t> _sent, _received;  // MPI messages on `_comm`, per peer
    bool _remote;                                 // some peers are reached through MPI
    unsigned _mpi_every;                          // polls per MPI poll
    unsigned _tick = 0;
    std::uint64_t _largest = 0;  // announced large messages are at most this
    const std::thread::id _owner = std::this_thread::get_id();  // the thread of the job
};

}  // namespace am::transport::mpi
