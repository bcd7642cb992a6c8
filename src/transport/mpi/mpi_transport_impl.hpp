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

#include <atomic>
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
// A send's own poll (the core polls after every send from the rank's code) keeps the packs
// open, so that back-to-back sends share MPI messages, and polls MPI only every this many
// times: credits and arriving messages are still seen while a rank streams.
inline constexpr unsigned mpi_every_while_sending = 16;
// A collective step tests its receive this many rounds before it polls the rank as well.
inline constexpr unsigned coll_rounds_before_idle = 64;

/// What the MPI side of a rank has sent, for tests and diagnoses (`mpi_transport::counts`).
struct send_counts {
    std::uint64_t core_messages = 0;  // core messages sent in packs
    std::uint64_t packs = 0;          // MPI messages that carried them
    std::uint64_t large = 0;          // core messages announced and sent on `_data`
    std::uint64_t full_flushes = 0;   // packs sent because the next message did not fit
};

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
          _packs(static_cast<std::size_t>(size) * num_lanes),
          _held(static_cast<std::size_t>(size)),
          _sent(static_cast<std::size_t>(size), 0),
          _received(static_cast<std::size_t>(size), 0),
          _remote(nd.global_of.size() < static_cast<std::size_t>(size)),
          _mpi_every(nd.global_of.size() > 1 ? 4 : 1),
          _alone(nd.global_of.size() == 1) {
        ring::region(nd.base).info(nd.me).pid.store(getpid());
        set_spin_limit(util::spin_rounds_for(nd.host_size, /*bound_apart=*/true));
        _ring.set_spin_limit(spin_limit());
        _slots.reserve(recv_slots);
        _rreq.assign(recv_slots, MPI_REQUEST_NULL);
        _repost.reserve(recv_slots);
        // Persistent receives: restarting one (MPI_Start) does not build a request again.
        for (int i = 0; i < recv_slots; ++i) {
            _slots.push_back(std::make_unique<std::byte[]>(slot_bytes));
            check(MPI_Recv_init(_slots.back().get(), static_cast<int>(slot_bytes), MPI_BYTE,
                                MPI_ANY_SOURCE, MPI_ANY_TAG, _comm,
                                &_rreq[static_cast<std::size_t>(i)]),
                  "MPI_Recv_init");
            post(i);
        }
        init_collectives();
    }

    ~mpi_transport() override { release(); }
    mpi_transport(const mpi_transport&) = delete;
    mpi_transport& operator=(const mpi_transport&) = delete;

    std::size_t max_message() const noexcept override { return _ring.max_message(); }

    std::byte* try_reserve(int dest, unsigned lane, std::size_t bytes) override {
        const int l = _node.local_of[static_cast<std::size_t>(dest)];
        if (l >= 0) return _ring.try_reserve(l, lane, bytes);
        maybe_lock lock(_mutex, _locking);
        const std::size_t i = index(dest, lane);
        if (bytes > max_eager) [[unlikely]]
            return reserve_large(i, bytes);
        pack& p = _packs[i];
        if (p.buf && p.fill + record_header + bytes > slot_bytes) {
            ++_counts.full_flushes;
            send_pack(i);
        }
        if (!p.buf && !open_pack(i)) return nullptr;
        p.reserved = true;
        return p.buf.get() + p.fill + record_header;
    }

    void commit(int dest, unsigned lane, std::byte* msg, std::size_t bytes) override {
        const int l = _node.local_of[static_cast<std::size_t>(dest)];
        if (l >= 0) return _ring.commit(l, lane, msg, bytes);
        maybe_lock lock(_mutex, _locking);
        const std::size_t i = index(dest, lane);
        if (bytes > max_eager) [[unlikely]]
            return commit_large(i, bytes);
        pack& p = _packs[i];
        const std::uint32_t w[2] = {static_cast<std::uint32_t>(bytes), 0};
        std::memcpy(msg - record_header, w, sizeof w);
        p.fill += record_header + padded(bytes);
        ++p.count;
        p.reserved = false;
        ++_commits;
        if (p.flush_wanted) send_pack(i);  // a poll on another thread wanted it sent
    }

    // Packs are sent by every poll but a send's own: the core polls right after each send from
    // the rank's code, and a poll with no send since the previous one is a wait (or an explicit
    // poll), which must not find anything held. With a progress thread every poll sends them.
    std::size_t poll(message_sink& sink) override {
        if (job_failed()) [[unlikely]]
            throw_failed();
        // A send's own poll while the rank streams, on a node of this rank alone (whose rings
        // carry only its messages to itself): nothing to do but count until MPI's turn.
        if (_alone && _streaming && !_locking && _commits != _polled_at &&
            _tick + 1 < mpi_every_while_sending) {
            ++_tick;
            _polled_at = _commits;
            return 0;
        }
        node_sink local(sink, _node.global_of);
        std::size_t handled = _ring.poll(local);
        if (_remote) handled += poll_remote(sink);
        if (job_failed()) [[unlikely]]
            throw_failed();
        return handled;
    }

    /// Polls MPI every `n`-th poll only (at least 1): for a transport that reaches the remote
    /// peers another way (ucx) and needs MPI only for failures and collectives.
    void set_mpi_every(unsigned n) noexcept { _mpi_every = n > 0 ? n : 1; }

    std::span<std::byte> segment(int rank) noexcept override {
        const int l = _node.local_of[static_cast<std::size_t>(rank)];
        return l >= 0 ? _ring.segment(l) : std::span<std::byte>{};
    }

    void barrier(coll_kind kind, const idle_fn& idle) override {
        reduce(next_collective(kind, 0), nullptr, nullptr, 0, idle);
    }
    /// What this rank has sent through MPI so far.
    [[nodiscard]] send_counts counts() const noexcept { return _counts; }

    void allgather(coll_kind kind, const void* in, void* out, std::size_t bytes,
                   const idle_fn& idle, const done_fn& gathered) override {
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

    void allreduce_sum(coll_kind kind, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                       const idle_fn& idle) override {
        reduce(next_collective(kind, 0), in, out, n, idle);
    }

    bool job_failed() const noexcept override { return _ring.job_failed(); }
    std::string failure_reason() const override { return _ring.failure_reason(); }

    /// Marks the job failed here and on the node (shared region), and tells every other
    /// peer, best effort: the messages leave with later progress or while `abort_job` waits.
    void fail_job(std::string_view reason) noexcept override;
    void mark_finished() noexcept override { _ring.mark_finished(); }
    /// The liveness watchdog (liveness.hpp, another thread, which may not call MPI) failed
    /// the job: marks the node's region, which the rank's next poll or wait sees; that poll
    /// also tells the remote peers (`throw_failed`). Lock-free: the watchdog never blocks.
    void fail_from_watchdog(std::string_view reason) noexcept {
        _ring.fail_job(reason);
        _relay.store(true, std::memory_order_release);
    }

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
        bool credit = false;                 // the last message of its MPI message
        MPI_Request req = MPI_REQUEST_NULL;  // a large message still arriving on `_data`
    };
    /// The open pack to one (destination, lane).
    struct pack {
        buffer buf;                 // null: none open
        std::size_t fill = 0;       // bytes of committed records
        std::uint32_t count = 0;    // records
        bool reserved = false;      // a message is being written after them
        bool flush_wanted = false;  // send it at its commit (a poll found it reserved)
        std::size_t at = 0;         // its place in `_open`
    };
    /// The collectives' point-to-point steps (recursive doubling, mpi_transport.cpp).
    struct coll_step {
        int peer = -1;
        bool send = false, recv = false;
    };

    void reduce(coll_id id, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                const idle_fn& idle);

    static std::size_t index(int rank, unsigned lane) noexcept {
        return static_cast<std::size_t>(rank) * num_lanes + lane;
    }
    // Buffers of sends come back in batches (`progress_sends` once `sends_before_test` are in
    // flight): until then the pool grows instead of testing the sends on every take, which
    // cost a ping-pong an MPI_Testsome (~250 instructions) per message.
    buffer take_buffer(std::size_t bytes) {
        if (bytes <= slot_bytes) {
            if (_free.empty() && _sreq.size() >= sends_before_test) progress_sends();
            if (!_free.empty()) {
                buffer b = std::move(_free.back());
                _free.pop_back();
                return b;
            }
            bytes = slot_bytes;
        }
        return std::make_unique_for_overwrite<std::byte[]>(bytes);
    }
    void give_back(buffer b, std::size_t bytes) {
        if (bytes <= slot_bytes && _free.size() < 256) _free.push_back(std::move(b));
    }
    void isend(buffer b, std::size_t bytes, int dest, int tag, MPI_Comm comm);
    void progress_sends();
    void post(int slot) {
        check(MPI_Start(&_rreq[static_cast<std::size_t>(slot)]), "MPI_Start");
        _order.push_back(slot);
    }
    bool open_pack(std::size_t i) {
        if (_credits[i] == 0) return false;
        --_credits[i];
        pack& p = _packs[i];
        p.buf = take_buffer(slot_bytes);
        p.fill = 0;
        p.count = 0;
        p.flush_wanted = false;
        p.at = _open.size();
        _open.push_back(i);
        return true;
    }
    void send_pack(std::size_t i);
    /// Sends every open pack; with a progress thread, one being written is sent by its commit.
    void send_packs() {
        for (std::size_t k = _open.size(); k-- > 0;) {
            const std::size_t i = _open[k];
            if (_packs[i].reserved) [[unlikely]] {
                _packs[i].flush_wanted = true;
                continue;
            }
            send_pack(i);  // moves the last open pack (visited already) to k
        }
    }
    std::byte* reserve_large(std::size_t i, std::size_t bytes);
    void commit_large(std::size_t i, std::size_t bytes);
    std::size_t poll_remote(message_sink& sink);
    void init_collectives();
    void free_collectives() noexcept;
    void coll_send(const std::uint64_t* acc, std::size_t words, unsigned parity, std::size_t step);
    std::size_t coll_recv(std::uint64_t* acc, std::size_t words, unsigned parity, std::size_t step,
                          const idle_fn& idle);
    /// Handles what arrived; `flush`: sends the packs after each MPI message's handlers ran.
    std::size_t poll_mpi(message_sink* sink, bool flush = false);
    std::size_t take_slot(int slot, const MPI_Status& st, message_sink* sink, bool flush);
    /// What `file` made of an arrived message.
    struct filing {
        bool deliver = false;         // a core message to hand to the core now
        const char* error = nullptr;  // the message breaks the protocol: why
    };
    filing file(int source, const eager_message& m, bool can_deliver);
    void hold(std::size_t src, std::span<const std::byte> bytes, unsigned lane, bool credit);
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
    // Only on the failure path: the rank's own check of the region flag at every poll is the
    // one the watchdog's failure takes; nothing is added to the polls.
    [[noreturn]] void throw_failed() {
        if (_relay.exchange(false, std::memory_order_acquire)) [[unlikely]]
            tell_remote_peers(failure_reason());
        throw error(errc::aborted,
                    "rank " + std::to_string(rank()) + ": job aborted: " + failure_reason());
    }
    void release() noexcept;
    /// Sends `text` with tag_fail to every peer outside the node, best effort.
    void tell_remote_peers(const std::string& text) noexcept;
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
    buffer _reserved;                      // a large message being written
    std::vector<buffer> _free;
    std::vector<pack> _packs;        // [peer * lanes + lane]
    std::vector<std::size_t> _open;  // indices of open packs
    std::uint64_t _commits = 0;      // core messages committed to packs
    std::uint64_t _polled_at = 0;    // `_commits` at the end of the last poll
    bool _streaming = false;         // the last poll was a send's own
    send_counts _counts;

    std::vector<MPI_Request> _sreq;  // sends in flight and their buffers
    std::vector<buffer> _sbuf;
    std::vector<std::size_t> _slen;
    std::vector<int> _indices;  // MPI_Testsome's output

    std::vector<buffer> _slots;  // posted receives
    std::vector<MPI_Request> _rreq;
    std::deque<int> _order;                   // slots in the order they were posted
    std::vector<int> _repost;                 // slots taken, posted again by the next poll
    std::vector<std::deque<held_msg>> _held;  // per source: messages behind a large one
    std::size_t _held_total = 0;
    bool _finishing = false;                      // no more credits are returned
    std::vector<std::uint64_t> _sent, _received;  // MPI messages on `_comm`, per peer
    bool _remote;                                 // some peers are reached through MPI
    unsigned _mpi_every;                          // polls per MPI poll
    unsigned _tick = 0;
    bool _alone;                 // the node is this rank only
    std::uint64_t _largest = 0;  // announced large messages are at most this

    // Collectives: persistent receives per step and parity of the sequence number (a peer is
    // at most one collective ahead), sends per step and parity.
    std::vector<coll_step> _steps;
    std::vector<MPI_Request> _coll_rreq, _coll_sreq;    // [parity * steps + step]
    std::vector<std::uint64_t> _coll_rbuf, _coll_sbuf;  // tagged_words per request
    std::vector<std::size_t> _coll_restart;  // receives taken, started again by the next wait
    const std::thread::id _owner = std::this_thread::get_id();  // the thread of the job
    std::atomic<bool> _relay{false};  // the watchdog failed the job: tell the remote peers
};

}  // namespace am::transport::mpi
