// SPDX-License-Identifier: MIT
// The mpi transport proper. Two parts behind one `transport`:
//  - node peers (same host, within AM_NODE_SIZE): a ring region in shared memory, the shm
//    transport's rings and segments, reached through a `ring_transport` over the node's ranks;
//  - other peers: MPI point-to-point on a private duplicate `_comm` of the job communicator
//    (protocol and the check of what arrives: eager_format.hpp).
// Here: the collectives (one MPI_Iallreduce each), sends (MPI_Isend of eager buffers), the
// receiving path (posted slots, messages held behind large ones, credits) and the drain at the
// end of a job. Setting up is in setup.cpp and node.cpp, the job and its failures in launch.cpp.
#include "mpi_transport_impl.hpp"
#include "setup.hpp"

#include <string>
#include <vector>

namespace am::transport::mpi {

// Every collective is one MPI_Iallreduce of the same shape (one `tagged_words` element): the
// minimum and maximum of the ranks' collective words, and the sums. Equal minimum and maximum:
// every rank made the same call. Otherwise every rank sees it in this same reduction, so all
// of them can gather the words and report which rank called what.
void mpi_transport::reduce(coll_id id, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                           const idle_fn& idle) {
    std::uint64_t mine[tagged_words] = {id.word, ~id.word};
    std::uint64_t all[tagged_words];
    for (std::size_t i = 0; i < n; ++i) mine[2 + i] = in[i];
    MPI_Request r = MPI_REQUEST_NULL;
    {
        maybe_lock lock(_mutex, _locking);
        check(MPI_Iallreduce(mine, all, 1, _node.tagged_type, _node.tagged_op, _comm, &r),
              "MPI_Iallreduce");
    }
    wait(r, idle);
    if (all[0] == id.word && ~all[1] == id.word) {
        for (std::size_t i = 0; i < n; ++i) out[i] = all[2 + i];
        return;
    }
    std::vector<std::uint64_t> ids(static_cast<std::size_t>(size()));
    {
        maybe_lock lock(_mutex, _locking);
        check(MPI_Iallgather(&id.word, 1, MPI_UINT64_T, ids.data(), 1, MPI_UINT64_T, _comm, &r),
              "MPI_Iallgather");
    }
    wait(r, idle);
    collective_mismatch(id, ids);
}

void mpi_transport::isend(buffer b, std::size_t bytes, int dest, int tag, MPI_Comm comm) {
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Isend(b.get(), static_cast<int>(bytes), MPI_BYTE, dest, tag, comm, &r), "MPI_Isend");
    if (comm == _comm) ++_sent[static_cast<std::size_t>(dest)];
    _sreq.push_back(r);
    _sbuf.push_back(std::move(b));
    _slen.push_back(bytes);
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
// then messages held behind large ones. The lock is never held while a handler runs.
std::size_t mpi_transport::poll_mpi(message_sink* sink) {
    std::size_t handled = 0;
    for (int budget = recv_slots; budget > 0; --budget) {
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
        handled += take_slot(slot, st, sink);
    }
    if (_held_total != 0) handled += drain_held(sink);
    return handled;
}

std::size_t mpi_transport::take_slot(int slot, const MPI_Status& st, message_sink* sink) {
    struct repost {  // the slot goes back to MPI whatever the handler does
        mpi_transport& t;
        int slot;
        ~repost() {
            maybe_lock lock(t._mutex, t._locking);
            t.post(slot);
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
    sink->deliver(source, m.lane, msg, len);
    return 1;
}

// Books a message from `source` that passed parse_eager: a core message to deliver now, or one
// to hold (large messages, and messages behind them, wait in the source's queue); credits; a
// failure. Its `error` says why the message breaks the protocol after all.
mpi_transport::filing mpi_transport::file(int source, const eager_message& m, bool can_deliver) {
    const auto src = static_cast<std::size_t>(source);
    ++_received[src];
    switch (m.kind) {
        case eager_kind::message: {
            if (_held[src].empty() && can_deliver) {
                consumed(source, m.lane);
                return {true, nullptr};
            }
            const std::size_t len = m.bytes.size();
            held_msg h;
            h.bytes = std::make_unique<std::byte[]>(len == 0 ? 1 : len);
            if (len != 0) std::memcpy(h.bytes.get(), m.bytes.data(), len);
            h.len = len;
            h.lane = m.lane;
            _held[src].push_back(std::move(h));
            ++_held_total;
            return {};
        }
        case eager_kind::big: {
            held_msg h;
            h.bytes = std::make_unique<std::byte[]>(static_cast<std::size_t>(m.big_bytes));
            h.len = static_cast<std::size_t>(m.big_bytes);
            h.lane = m.lane;
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
                if (!wrong) consumed(static_cast<int>(s), h.lane);
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

// A core message was handed to the core: its credit goes back in batches of half.
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
        _finishing = true;
    }
    std::vector<std::uint64_t> expected(_sent.size(), 0);
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ialltoall(_sent.data(), 1, MPI_UINT64_T, expected.data(), 1, MPI_UINT64_T, _comm, &r),
          "MPI_Ialltoall");
    wait(r, [this] { return poll_mpi(nullptr); });
    unsigned backoff = 0;
    for (;;) {
        bool all = true;
        for (std::size_t s = 0; s < expected.size(); ++s) all = all && _received[s] >= expected[s];
        if (all) break;
        if (poll_mpi(nullptr) == 0) util::backoff(backoff, spin_limit());
    }
    release();
}

void mpi_transport::release() noexcept {
    for (MPI_Request& r : _rreq) {
        if (r == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    _order.clear();
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
