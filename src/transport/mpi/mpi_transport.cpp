// SPDX-License-Identifier: MIT
// The mpi transport proper. Two parts behind one `transport`:
//  - node peers (same host, within AM_NODE_SIZE): a ring region in shared memory, the shm
//    transport's rings and segments, reached through a `ring_transport` over the node's ranks;
//  - other peers: MPI point-to-point on a private duplicate `_comm` of the job communicator
//    (protocol and the check of what arrives: eager_format.hpp).
// Here: the collectives (point-to-point recursive doubling), sends (packs, MPI_Isend), the
// receiving path (posted slots, messages held behind large ones, credits) and the drain at the
// end of a job. Setting up is in setup.cpp and node.cpp, the job and its failures in launch.cpp.
#include "mpi_transport_impl.hpp"
#include "setup.hpp"

#include <string>
#include <vector>

namespace am::transport::mpi {

// Every collective is one allreduce of the same shape (up to `tagged_words` words): the minimum
// and the complemented maximum of the ranks' collective words, and the sums. Equal minimum and
// maximum: every rank made the same call. Otherwise every rank sees it in this same reduction,
// so all of them can gather the words and report which rank called what.
//
// The allreduce is recursive doubling over point-to-point messages on `_data` (tags from 1;
// large messages use tag 0), received by persistent receives per step and parity of the
// collective's number. MPI_Iallreduce polled with MPI_Test cost Open MPI ~9× an MPI_Barrier
// per reduction; these messages cost one MPI_Isend and the tests of one receive per step. With
// p not a power of two, the first 2(p - q) ranks fold pairwise into q (the largest power of
// two ≤ p) before the exchange and unfold after it.
void mpi_transport::init_collectives() {
    const int p = size(), me = rank();
    int q = 1, levels = 0;
    while (q * 2 <= p) q *= 2, ++levels;
    const int extra = p - q;
    const bool folded = me < 2 * extra;
    const bool leaves = folded && me % 2 == 0;  // sends to me + 1 and waits for the result
    _steps.assign(static_cast<std::size_t>(levels) + 2, coll_step{});
    if (folded) _steps.front() = {leaves ? me + 1 : me - 1, leaves, !leaves};
    const int mine = folded ? me / 2 : me - extra;
    for (int k = 0; k < levels && !leaves; ++k) {
        const int other = mine ^ (1 << k);
        _steps[static_cast<std::size_t>(k) + 1] = {other < extra ? 2 * other + 1 : other + extra,
                                                   true, true};
    }
    if (folded) _steps.back() = {leaves ? me + 1 : me - 1, !leaves, leaves};
    const std::size_t n = 2 * _steps.size();
    _coll_rreq.assign(n, MPI_REQUEST_NULL);
    _coll_sreq.assign(n, MPI_REQUEST_NULL);
    _coll_rbuf.assign(n * tagged_words, 0);
    _coll_sbuf.assign(n * tagged_words, 0);
    for (std::size_t k = 0; k < n; ++k) {
        const coll_step& st = _steps[k % _steps.size()];
        if (!st.recv) continue;
        check(MPI_Recv_init(&_coll_rbuf[k * tagged_words], static_cast<int>(tagged_words),
                            MPI_UINT64_T, st.peer, 1 + static_cast<int>(k), _data, &_coll_rreq[k]),
              "MPI_Recv_init");
        check(MPI_Start(&_coll_rreq[k]), "MPI_Start");
    }
}

void mpi_transport::coll_send(const std::uint64_t* acc, std::size_t words, unsigned parity,
                              std::size_t step) {
    const std::size_t k = parity * _steps.size() + step;
    maybe_lock lock(_mutex, _locking);
    // Sent two collectives ago, received by the peer since: complete, or completing at once.
    if (_coll_sreq[k] != MPI_REQUEST_NULL)
        check(MPI_Wait(&_coll_sreq[k], MPI_STATUS_IGNORE), "MPI_Wait");
    std::uint64_t* buf = &_coll_sbuf[k * tagged_words];
    std::memcpy(buf, acc, words * sizeof *acc);
    check(MPI_Isend(buf, static_cast<int>(words), MPI_UINT64_T, _steps[step].peer,
                    1 + static_cast<int>(k), _data, &_coll_sreq[k]),
          "MPI_Isend");
}

// Waits for the step's message, combining it into `acc` (or taking it: the unfolding step). The
// receive is tested on every round; the rank is polled every fourth round once the step is
// late (peers that need this rank's progress before they can join are served then).
std::size_t mpi_transport::coll_recv(std::uint64_t* acc, std::size_t words, unsigned parity,
                                     std::size_t step, const idle_fn& idle) {
    const std::size_t k = parity * _steps.size() + step;
    unsigned backoff = 0, rounds = 0;
    int count = 0;
    {
        // Receives taken by the last collective start while this step's message travels.
        maybe_lock lock(_mutex, _locking);
        for (const std::size_t r : _coll_restart) check(MPI_Start(&_coll_rreq[r]), "MPI_Start");
        _coll_restart.clear();
    }
    for (;;) {
        {
            maybe_lock lock(_mutex, _locking);
            int done = 0;
            MPI_Status st;
            check(MPI_Test(&_coll_rreq[k], &done, &st), "MPI_Test");
            if (done) {
                MPI_Get_count(&st, MPI_UINT64_T, &count);
                break;
            }
        }
        // The rank's poll only once the step is late: with every rank in the collective it
        // finds nothing and only delays seeing the message (an empty round of a
        // termination detector took 2× longer).
        if (idle && ++rounds > coll_rounds_before_idle && rounds % 4 == 0 && idle() != 0) {
            backoff = 0;
        }
        util::backoff(backoff, spin_limit());
    }
    const std::uint64_t* in = &_coll_rbuf[k * tagged_words];
    if (count < 2 || static_cast<std::size_t>(count) > tagged_words) [[unlikely]] {
        malformed(_steps[step].peer, "collective step of " + std::to_string(count) + " words");
    }
    const auto got = static_cast<std::size_t>(count);
    if (step + 1 == _steps.size()) {  // unfolding: the result
        std::memcpy(acc, in, got * sizeof *in);
    } else {
        acc[0] = in[0] < acc[0] ? in[0] : acc[0];
        acc[1] = in[1] < acc[1] ? in[1] : acc[1];
        for (std::size_t i = 2; i < got; ++i) acc[i] += in[i];
    }
    maybe_lock lock(_mutex, _locking);
    _coll_restart.push_back(k);  // for the collective after next: started by the next wait
    return got > words ? got : words;
}

void mpi_transport::reduce(coll_id id, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                           const idle_fn& idle) {
    {
        maybe_lock lock(_mutex, _locking);
        send_packs();  // a collective waits: nothing stays held
    }
    std::uint64_t acc[tagged_words] = {id.word, ~id.word};
    for (std::size_t i = 0; i < n; ++i) acc[2 + i] = in[i];
    std::size_t words = 2 + n;  // ranks may add different counts
    const unsigned parity = id.seq() & 1u;
    for (std::size_t s = 0; s < _steps.size(); ++s) {
        if (_steps[s].send) coll_send(acc, words, parity, s);
        if (_steps[s].recv) words = coll_recv(acc, words, parity, s, idle);
    }
    if (acc[0] == id.word && ~acc[1] == id.word) {
        for (std::size_t i = 0; i < n; ++i) out[i] = acc[2 + i];
        return;
    }
    std::vector<std::uint64_t> ids(static_cast<std::size_t>(size()));
    MPI_Request r = MPI_REQUEST_NULL;
    {
        maybe_lock lock(_mutex, _locking);
        check(MPI_Iallgather(&id.word, 1, MPI_UINT64_T, ids.data(), 1, MPI_UINT64_T, _comm, &r),
              "MPI_Iallgather");
    }
    wait(r, idle);
    collective_mismatch(id, ids);
}

void mpi_transport::free_collectives() noexcept {
    for (const std::size_t r : _coll_restart) MPI_Request_free(&_coll_rreq[r]);  // inactive
    _coll_restart.clear();
    for (MPI_Request& r : _coll_rreq) {
        if (r == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Request_free(&r);
    }
    for (MPI_Request& r : _coll_sreq) {
        if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
}

void mpi_transport::isend(buffer b, std::size_t bytes, int dest, int tag, MPI_Comm comm) {
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Isend(b.get(), static_cast<int>(bytes), MPI_BYTE, dest, tag, comm, &r), "MPI_Isend");
    if (comm == _comm) ++_sent[static_cast<std::size_t>(dest)];
    _sreq.push_back(r);
    _sbuf.push_back(std::move(b));
    _slen.push_back(bytes);
}

void mpi_transport::send_pack(std::size_t i) {
    pack& p = _packs[i];
    ++_counts.packs;
    _counts.core_messages += p.count;
    isend(std::move(p.buf), p.fill, static_cast<int>(i / num_lanes),
          tag_msg + static_cast<int>(i % num_lanes), _comm);
    const std::size_t last = _open.back();
    _open[p.at] = last;
    _packs[last].at = p.at;
    _open.pop_back();
    p.fill = 0;
    p.count = 0;
    p.flush_wanted = false;
}

// A message larger than a pack: the open pack to that (destination, lane) leaves first, then
// the announcement (one credit) and the data on `_data`.
std::byte* mpi_transport::reserve_large(std::size_t i, std::size_t bytes) {
    if (_packs[i].buf) send_pack(i);
    if (_credits[i] == 0) return nullptr;
    _reserved = take_buffer(bytes);
    return _reserved.get();
}

void mpi_transport::commit_large(std::size_t i, std::size_t bytes) {
    --_credits[i];
    ++_counts.large;
    const int dest = static_cast<int>(i / num_lanes);
    buffer head = take_buffer(8);
    const std::uint64_t n = bytes;
    std::memcpy(head.get(), &n, 8);
    isend(std::move(head), 8, dest, tag_big + static_cast<int>(i % num_lanes), _comm);
    isend(std::move(_reserved), bytes, dest, 0, _data);
}

// A send's own poll (commits since the last poll, no progress thread) keeps the packs open and
// polls MPI every `mpi_every_while_sending`-th time; every other poll sends the packs before
// polling MPI (a wait's first poll sends what the rank's code sent) and after it (what the
// handlers it ran sent). Node peers must not pay an MPI call on every poll either: MPI is polled
// every `_mpi_every`-th time when the node has peers.
std::size_t mpi_transport::poll_remote(message_sink& sink) {
    const bool own = !_locking && _commits != _polled_at;
    // The first send after a poll that was not a send's own leaves at once (a request that the
    // rank then waits for); sends that follow sends are packed.
    const bool send_now = !own || !_streaming;
    _streaming = own;
    if (send_now) {
        maybe_lock lock(_mutex, _locking);
        send_packs();
    }
    std::size_t handled = 0;
    if (++_tick >= (own ? mpi_every_while_sending : _mpi_every)) {
        _tick = 0;
        handled = poll_mpi(&sink, !own);
    }
    if (!own) {
        maybe_lock lock(_mutex, _locking);
        send_packs();
    }
    // Only without a progress thread (`own` is false with one): `_commits` is then written by
    // this thread alone, while with one the sending thread writes it under `_mutex`.
    if (!_locking) _polled_at = _commits;
    return handled;
}

void mpi_transport::progress_sends() {
    if (_sreq.empty()) return;
    int count = 0;
    _indices.resize(_sreq.size());
    check(MPI_Testsome(static_cast<int>(_sreq.size()), _sreq.data(), &count, _indices.data(),
                       MPI_STATUSES_IGNORE),
          "MPI_Testsome");
    if (count <= 0) return;
    std::size_t out = 0;
    for (std::size_t i = 0; i < _sreq.size(); ++i) {
        if (_sreq[i] == MPI_REQUEST_NULL) {
            give_back(std::move(_sbuf[i]), _slen[i]);
            continue;
        }
        _sreq[out] = _sreq[i];
        _sbuf[out] = std::move(_sbuf[i]);
        _slen[out] = _slen[i];
        ++out;
    }
    _sreq.resize(out);
    _sbuf.resize(out);
    _slen.resize(out);
}

// Handles posted receives in the order they were posted (the order their messages matched),
// then messages held behind large ones. The lock is never held while a handler runs. One MPI
// progress call per poll: after an MPI message whose core messages were delivered the poll
// returns rather than test the next slot (a test that finds nothing runs MPI's progress
// engine, which a ping-pong would pay before its next send); the slots taken are posted again
// at the start of the next poll, which a ping-pong reaches while its message travels.
std::size_t mpi_transport::poll_mpi(message_sink* sink, bool flush) {
    std::size_t handled = 0;
    {
        maybe_lock lock(_mutex, _locking);
        for (const int slot : _repost) post(slot);
        _repost.clear();
    }
    for (int budget = recv_slots; budget > 0 && handled == 0; --budget) {
        int slot = -1;
        MPI_Status st;
        {
            maybe_lock lock(_mutex, _locking);
            if (_sreq.size() >= sends_before_test) progress_sends();
            if (_order.empty()) break;
            int done = 0;
            check(MPI_Test(&_rreq[static_cast<std::size_t>(_order.front())], &done, &st),
                  "MPI_Test");
            if (!done) break;
            slot = _order.front();
            _order.pop_front();
        }
        handled += take_slot(slot, st, sink, flush);
    }
    if (_held_total != 0) handled += drain_held(sink);
    return handled;
}

std::size_t mpi_transport::take_slot(int slot, const MPI_Status& st, message_sink* sink,
                                     bool flush) {
    struct repost {  // the slot goes back to MPI whatever the handler does, at the next poll
        mpi_transport& t;
        int slot;
        ~repost() {
            maybe_lock lock(t._mutex, t._locking);
            t._repost.push_back(slot);  // capacity reserved: no allocation
        }
    } again{*this, slot};
    const int source = st.MPI_SOURCE;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    std::byte* msg = _slots[static_cast<std::size_t>(slot)].get();
    const auto len = static_cast<std::size_t>(count);
    eager_message m;
    const char* bad = parse_eager(st.MPI_TAG, msg, len, _largest, m);
    if (bad == nullptr) {
        maybe_lock lock(_mutex, _locking);
        const filing f = file(source, m, sink != nullptr);
        if (f.error == nullptr && !f.deliver) {
            return m.kind == eager_kind::credit ? 1 : 0;  // credits are progress for a waiting send
        }
        bad = f.error;
    }
    if (bad != nullptr) [[unlikely]]
        malformed(source, "tag " + std::to_string(st.MPI_TAG) + ", " + std::to_string(len) +
                              " bytes: " + bad);  // without the lock: fail_job takes it
    // The pack's core messages, in the order they were sent; its credit once all are handled.
    for (std::size_t at = 0; at < len;) {
        const pack_record r = record_at(m.bytes, at);
        sink->deliver(source, m.lane, msg + (r.message.data() - m.bytes.data()), r.message.size());
        at = r.next;
    }
    maybe_lock lock(_mutex, _locking);
    if (flush) send_packs();  // the handlers' replies leave before the slot is posted again
    consumed(source, m.lane);
    return m.count;
}

void mpi_transport::hold(std::size_t src, std::span<const std::byte> bytes, unsigned lane,
                         bool credit) {
    held_msg h;
    h.bytes = std::make_unique<std::byte[]>(bytes.empty() ? 1 : bytes.size());
    if (!bytes.empty()) std::memcpy(h.bytes.get(), bytes.data(), bytes.size());
    h.len = bytes.size();
    h.lane = lane;
    h.credit = credit;
    _held[src].push_back(std::move(h));
    ++_held_total;
}

// Books a message from `source` that passed parse_eager: a pack to deliver now, or one to hold
// (large messages, and messages behind them, wait in the source's queue; the last message of a
// pack carries its credit); credits; a failure. Its `error` says why the message breaks the
// protocol after all.
mpi_transport::filing mpi_transport::file(int source, const eager_message& m, bool can_deliver) {
    const auto src = static_cast<std::size_t>(source);
    ++_received[src];
    switch (m.kind) {
        case eager_kind::message: {
            if (_held[src].empty() && can_deliver) return {true, nullptr};
            for (std::size_t at = 0; at < m.bytes.size();) {
                const pack_record r = record_at(m.bytes, at);
                at = r.next;
                hold(src, r.message, m.lane, at >= m.bytes.size());
            }
            return {};
        }
        case eager_kind::big: {
            held_msg h;
            h.bytes = std::make_unique<std::byte[]>(static_cast<std::size_t>(m.big_bytes));
            h.len = static_cast<std::size_t>(m.big_bytes);
            h.lane = m.lane;
            h.credit = true;
            // parse_eager keeps the count within an int; drain_held checks what arrived.
            check(MPI_Irecv(h.bytes.get(), static_cast<int>(h.len), MPI_BYTE, source, 0, _data,
                            &h.req),
                  "MPI_Irecv");
            _held[src].push_back(std::move(h));
            ++_held_total;
            return {};
        }
        case eager_kind::credit: {
            std::uint32_t& c = _credits[index(source, m.lane)];
            // A receiver returns at most what it was lent: never more than credits_per_peer.
            if (m.credits > credits_per_peer - c) return {false, "more credits returned than lent"};
            c += m.credits;
            return {};
        }
        case eager_kind::fail:
            _ring.fail_job(
                std::string_view(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size()));
            return {};
    }
    return {};
}

// Messages from one source that arrived behind a large one leave in order once it is in.
std::size_t mpi_transport::drain_held(message_sink* sink) {
    std::size_t handled = 0;
    for (std::size_t s = 0; s < _held.size(); ++s) {
        for (;;) {
            held_msg h;
            int arrived = -1;    // a large message that is in: its size
            bool wrong = false;  // ... which is not the size announced
            {
                maybe_lock lock(_mutex, _locking);
                auto& q = _held[s];
                if (q.empty()) break;
                if (q.front().req != MPI_REQUEST_NULL) {
                    int done = 0;
                    MPI_Status st;
                    check(MPI_Test(&q.front().req, &done, &st), "MPI_Test");
                    if (!done) break;
                    MPI_Get_count(&st, MPI_BYTE, &arrived);
                }
                // Longer than announced: MPI_ERR_TRUNCATE, fatal on `_data`; shorter: below.
                wrong = arrived >= 0 && static_cast<std::size_t>(arrived) != q.front().len;
                if (sink == nullptr && !wrong) break;
                h = std::move(q.front());
                q.pop_front();
                --_held_total;
                if (!wrong && h.credit) consumed(static_cast<int>(s), h.lane);
            }
            if (wrong) [[unlikely]] {
                malformed(static_cast<int>(s), "large message of " + std::to_string(arrived) +
                                                   " bytes, " + std::to_string(h.len) +
                                                   " announced");
            }
            sink->deliver(static_cast<int>(s), h.lane, h.bytes.get(), h.len);
            ++handled;
        }
    }
    return handled;
}

// The core messages of an MPI message were handed to the core: its credit goes back in batches
// of half.
void mpi_transport::consumed(int source, unsigned lane) {
    std::uint32_t& c = _consumed[index(source, lane)];
    if (++c < credits_per_peer / 2 || _finishing) return;
    buffer b = take_buffer(8);
    const std::uint32_t w[2] = {lane, c};
    std::memcpy(b.get(), w, sizeof w);
    c = 0;
    isend(std::move(b), sizeof w, source, tag_credit, _comm);
}

void mpi_transport::finish() {
    // Every core message has been handled (am::run quiesced). What may still travel are
    // credit returns: stop making new ones, learn how many messages each peer sent here,
    // and take them all before the receives are withdrawn.
    {
        maybe_lock lock(_mutex, _locking);
        send_packs();
        _finishing = true;
    }
    std::vector<std::uint64_t> expected(_sent.size(), 0);
    MPI_Request r = MPI_REQUEST_NULL;
    // On `_data`, not `_comm`: MPICH 4.0.2's MPI_Ialltoall sends a message to its own rank that
    // a wildcard receive on the same communicator takes (`_comm` has those; `_data`'s receives
    // name a peer, never this rank).
    check(MPI_Ialltoall(_sent.data(), 1, MPI_UINT64_T, expected.data(), 1, MPI_UINT64_T, _data, &r),
          "MPI_Ialltoall");
    // A peer lost meanwhile (liveness.hpp) fails the job: the drain ends with it.
    wait(r, [this] {
        if (job_failed()) [[unlikely]]
            throw_failed();
        return poll_mpi(nullptr);
    });
    unsigned backoff = 0;
    for (;;) {
        if (job_failed()) [[unlikely]]
            throw_failed();
        bool all = true;
        for (std::size_t s = 0; s < expected.size(); ++s) all = all && _received[s] >= expected[s];
        if (all) break;
        if (poll_mpi(nullptr) == 0) util::backoff(backoff, spin_limit());
    }
    release();
}

void mpi_transport::release() noexcept {
    for (const int slot : _order) {  // the active receives
        MPI_Request& r = _rreq[static_cast<std::size_t>(slot)];
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    _order.clear();
    _repost.clear();  // inactive
    for (MPI_Request& r : _rreq) {
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    }
    free_collectives();
    for (auto& q : _held) {
        for (held_msg& h : q) {
            if (h.req == MPI_REQUEST_NULL) continue;
            MPI_Cancel(&h.req);
            MPI_Wait(&h.req, MPI_STATUS_IGNORE);
        }
        q.clear();
    }
    if (!_sreq.empty()) {
        MPI_Waitall(static_cast<int>(_sreq.size()), _sreq.data(), MPI_STATUSES_IGNORE);
        _sreq.clear();
        _sbuf.clear();
        _slen.clear();
    }
}

}  // namespace am::transport::mpi
