// SPDX-License-Identifier: MIT
// The mpi transport. Two parts behind one `transport`:
//  - node peers (same host, within AM_NODE_SIZE): a ring region in shared memory, the shm
//    transport's rings and segments, reached through a `ring_transport` over the node's ranks;
//  - other peers: MPI point-to-point on a private duplicate `_comm` of the job communicator.
//
// MPI protocol (all on `_comm`, received by pre-posted MPI_ANY_SOURCE/MPI_ANY_TAG receives,
// so messages from one peer are matched, and handled, in the order they were sent):
//   tag_msg + lane      a core message of at most `slot_bytes` (eager, into a posted slot)
//   tag_big + lane      announces a larger core message of `u64` bytes that follows on
//                       `_data` (a second duplicate, so no wildcard receive can take it)
//   tag_credit          `u32 lane, u32 count`: credits returned by the receiver
//   tag_fail            the reason the job fails; the receiver stops with it
// Credits: `credits_per_peer` core messages per (peer, lane) may be unconsumed at a receiver;
// the receiver returns them in batches of half. Requests and replies have separate credits,
// so replies always drain (the core's deadlock-freedom argument carries over).
#include "mpi_transport.hpp"

#include "../../util/backoff.hpp"
#include "../../util/maybe_lock.hpp"
#include "../ring/params.hpp"
#include "../ring/region.hpp"
#include "../shm/shm_region.hpp"

#include <am/error.hpp>

#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace am::transport::mpi {
namespace {

enum : int { tag_msg = 0, tag_big = 2, tag_credit = 4, tag_fail = 5 };
constexpr std::size_t slot_bytes = 8192 + 256;  // a core message up to 8 KiB of payload
constexpr int recv_slots = 64;
constexpr std::uint32_t credits_per_peer = 64;
constexpr std::size_t name_bytes = 64;
// Completed sends are collected once this many are in flight (or when buffers run out):
// every MPI call runs MPI's progress engine, so a poll makes one call when it can.
constexpr std::size_t sends_before_test = 16;

[[noreturn]] void fail_mpi(const char* call, int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    throw error(errc::system, std::string("am: mpi transport: ") + call +
                                  " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

void check(int code, const char* call) {
    if (code != MPI_SUCCESS) [[unlikely]]
        fail_mpi(call, code);
}

// -------------------------------------------------------------------------------- MPI setup

const char* level_name(int level) {
    switch (level) {
        case MPI_THREAD_SINGLE:
            return "MPI_THREAD_SINGLE";
        case MPI_THREAD_FUNNELED:
            return "MPI_THREAD_FUNNELED";
        case MPI_THREAD_SERIALIZED:
            return "MPI_THREAD_SERIALIZED";
        default:
            return "MPI_THREAD_MULTIPLE";
    }
}

extern "C" void finalize_at_exit() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

/// Initialises MPI when nobody has (and finalises it at exit then); checks the thread level:
/// MULTIPLE with a progress thread; otherwise any level, as long as the calling thread may
/// make the MPI calls (below SERIALIZED: it must be the thread that initialised MPI).
void ensure_initialized(bool progress_thread) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) {
        throw error(errc::invalid_argument,
                    "am::run: mpi transport: MPI has already been finalised in this process");
    }
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
        // Above MPI_THREAD_SINGLE, Open MPI 4 takes locks on every send and match (25-45 %
        // slower here): without a progress thread only the calling thread makes MPI calls.
        const int wanted = progress_thread ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
        check(MPI_Init_thread(nullptr, nullptr, wanted, &provided), "MPI_Init_thread");
        std::atexit(finalize_at_exit);
    } else {
        MPI_Query_thread(&provided);
    }
    if (progress_thread && provided < MPI_THREAD_MULTIPLE) {
        throw error(errc::invalid_argument,
                    std::string("am::run: mpi transport: MPI provides ") + level_name(provided) +
                        ", a progress thread (AM_PROGRESS_THREAD=1) needs MPI_THREAD_MULTIPLE; "
                        "initialise MPI with MPI_Init_thread at that level");
    }
    int is_main = 1;
    MPI_Is_thread_main(&is_main);
    if (provided < MPI_THREAD_SERIALIZED && !is_main) {
        throw error(errc::invalid_argument,
                    std::string("am::run: mpi transport: MPI provides ") + level_name(provided) +
                        ": call am::run from the thread that initialised MPI, or initialise "
                        "MPI with MPI_Init_thread at MPI_THREAD_SERIALIZED or above");
    }
}

// ------------------------------------------------------------------- tagged reductions

// Words of a collective's reduction: the minimum and the complemented maximum of the ranks'
// collective words, then the counters to sum.
constexpr std::size_t tagged_words = 2 + transport::max_reduce_words;

extern "C" void combine_tagged(void* in, void* inout, int* len, MPI_Datatype*) {
    const auto* a = static_cast<const std::uint64_t*>(in);
    auto* b = static_cast<std::uint64_t*>(inout);
    for (int e = 0; e < *len; ++e, a += tagged_words, b += tagged_words) {
        b[0] = a[0] < b[0] ? a[0] : b[0];
        b[1] = a[1] < b[1] ? a[1] : b[1];
        for (std::size_t i = 2; i < tagged_words; ++i) b[i] += a[i];
    }
}

// ---------------------------------------------------------------------------- node grouping

/// The ranks that share memory with this one, and the region they share.
struct node {
    std::vector<int> local_of;   // global rank -> index in the node, or -1
    std::vector<int> global_of;  // index in the node -> global rank
    int me = 0;                  // this rank's index in the node
    int host_size = 1;           // ranks of the communicator on this host
    std::unique_ptr<shm::shared_region> created;
    std::unique_ptr<shm::mapped_region> mapped;
    void* private_base = nullptr;  // a node of one: anonymous memory
    std::size_t private_bytes = 0;
    std::byte* base = nullptr;
    // One element of `tagged_words` counters and its operation (the collectives' reduction).
    MPI_Datatype tagged_type = MPI_DATATYPE_NULL;
    MPI_Op tagged_op = MPI_OP_NULL;

    node() = default;
    node(const node&) = delete;
    node& operator=(const node&) = delete;
    ~node() {
        if (private_base != nullptr) munmap(private_base, private_bytes);
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized) return;
        if (tagged_op != MPI_OP_NULL) MPI_Op_free(&tagged_op);
        if (tagged_type != MPI_DATATYPE_NULL) MPI_Type_free(&tagged_type);
    }
};

/// Groups the ranks of `comm` into nodes (same host, at most `cap` consecutive host ranks when
/// cap > 0) and maps the node's region. Collective over `comm`.
void make_node(MPI_Comm comm, const config& cfg, int rank, int size, node& nd) {
    check(MPI_Type_contiguous(static_cast<int>(tagged_words), MPI_UINT64_T, &nd.tagged_type),
          "MPI_Type_contiguous");
    check(MPI_Type_commit(&nd.tagged_type), "MPI_Type_commit");
    check(MPI_Op_create(&combine_tagged, 1, &nd.tagged_op), "MPI_Op_create");
    MPI_Comm host = MPI_COMM_NULL, group = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host),
          "MPI_Comm_split_type");
    int host_rank = 0;
    MPI_Comm_rank(host, &host_rank);
    MPI_Comm_size(host, &nd.host_size);
    const int color = cfg.node_size > 0 ? host_rank / cfg.node_size : 0;
    check(MPI_Comm_split(host, color, host_rank, &group), "MPI_Comm_split");
    MPI_Comm_free(&host);
    int n = 1;
    MPI_Comm_size(group, &n);
    MPI_Comm_rank(group, &nd.me);
    nd.global_of.assign(static_cast<std::size_t>(n), 0);
    check(MPI_Allgather(&rank, 1, MPI_INT, nd.global_of.data(), 1, MPI_INT, group),
          "MPI_Allgather");
    nd.local_of.assign(static_cast<std::size_t>(size), -1);
    for (int i = 0; i < n; ++i) nd.local_of[static_cast<std::size_t>(nd.global_of[i])] = i;

    config node_cfg = cfg;
    node_cfg.ranks = n;
    const ring::region_params p = ring::params_for(node_cfg);
    if (n == 1) {
        nd.private_bytes = ring::layout(p).total;
        nd.private_base = mmap(nullptr, nd.private_bytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (nd.private_base == MAP_FAILED) {
            nd.private_base = nullptr;
            MPI_Comm_free(&group);
            throw error(errc::system, "am::run: mpi transport: mmap of " +
                                          std::to_string(nd.private_bytes) + " bytes failed");
        }
        nd.base = static_cast<std::byte*>(nd.private_base);
        ring::initialize(nd.base, p);
        MPI_Comm_free(&group);
        return;
    }
    // The node's first rank creates the region; the others map it by name; once all have,
    // the name is removed, so nothing is left in /dev/shm whatever happens next.
    char name[name_bytes] = {};
    int ok = 1;
    if (nd.me == 0) {
        try {
            nd.created = std::make_unique<shm::shared_region>(p);
            std::snprintf(name, sizeof name, "%s", nd.created->name().c_str());
        } catch (const error&) {
            ok = 0;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, group);
    if (!ok) {
        MPI_Comm_free(&group);
        throw error(errc::system, "am::run: mpi transport: rank " +
                                      std::to_string(nd.global_of[0]) +
                                      " could not create the node's shared memory");
    }
    MPI_Bcast(name, static_cast<int>(name_bytes), MPI_CHAR, 0, group);
    if (nd.me != 0) nd.mapped = std::make_unique<shm::mapped_region>(name);
    MPI_Barrier(group);
    if (nd.created) nd.created->unlink();
    nd.base = nd.created ? nd.created->data() : nd.mapped->data();
    MPI_Comm_free(&group);
}

// -------------------------------------------------------------------------------- transport

using util::maybe_lock;  // locks only when a progress thread shares the transport

using buffer = std::unique_ptr<std::byte[]>;

/// Delivers node messages under their global source rank.
class node_sink final : public message_sink {
  public:
    node_sink(message_sink& inner, const std::vector<int>& global_of)
        : _inner(inner), _global_of(global_of) {}
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) override {
        _inner.deliver(_global_of[static_cast<std::size_t>(source)], lane, msg, len);
    }

  private:
    message_sink& _inner;
    const std::vector<int>& _global_of;
};

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
    void fail_job(std::string_view reason) noexcept override {
        const bool first = !job_failed();
        _ring.fail_job(reason);
        if (!first) return;
        try {
            const std::string text = failure_reason();
            std::unique_lock<std::mutex> lock;
            if (!lock_within(lock, std::chrono::milliseconds(200))) return;
            for (int r = 0; r < size(); ++r) {
                if (_node.local_of[static_cast<std::size_t>(r)] >= 0) continue;
                buffer b = take_buffer(text.size());
                std::memcpy(b.get(), text.data(), text.size());
                isend(std::move(b), text.size(), r, tag_fail, _comm);
            }
        } catch (...) {
            // The peers then learn of the failure from MPI_Abort.
        }
    }
    void mark_finished() noexcept override { _ring.mark_finished(); }

    /// The rank finished normally: drains the protocol with every peer and releases the MPI
    /// resources, so the communicators can be freed. Collective.
    void finish();
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
    bool file(int source, int tag, const std::byte* msg, std::size_t len, bool can_deliver,
              unsigned& lane);
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
    const std::thread::id _owner = std::this_thread::get_id();  // the thread of the job
};

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
    unsigned lane = 0;
    {
        maybe_lock lock(_mutex, _locking);
        if (!file(source, st.MPI_TAG, msg, len, sink != nullptr, lane)) {
            return st.MPI_TAG == tag_credit ? 1 : 0;  // credits are progress for a waiting send
        }
    }
    sink->deliver(source, lane, msg, len);
    return 1;
}

// Books a message that arrived from `source`. True when it is a core message to deliver now
// (on `lane`); large messages, and messages behind them, wait in the source's queue.
bool mpi_transport::file(int source, int tag, const std::byte* msg, std::size_t len,
                         bool can_deliver, unsigned& lane) {
    const auto src = static_cast<std::size_t>(source);
    ++_received[src];
    switch (tag) {
        case tag_msg:
        case tag_msg + 1: {
            lane = static_cast<unsigned>(tag - tag_msg);
            if (_held[src].empty() && can_deliver) {
                consumed(source, lane);
                return true;
            }
            held_msg h;
            h.bytes = std::make_unique<std::byte[]>(len == 0 ? 1 : len);
            std::memcpy(h.bytes.get(), msg, len);
            h.len = len;
            h.lane = lane;
            _held[src].push_back(std::move(h));
            ++_held_total;
            return false;
        }
        case tag_big:
        case tag_big + 1: {
            std::uint64_t n = 0;
            std::memcpy(&n, msg, 8);
            held_msg h;
            h.bytes = std::make_unique<std::byte[]>(n);
            h.len = static_cast<std::size_t>(n);
            h.lane = static_cast<unsigned>(tag - tag_big);
            check(MPI_Irecv(h.bytes.get(), static_cast<int>(n), MPI_BYTE, source, 0, _data, &h.req),
                  "MPI_Irecv");
            _held[src].push_back(std::move(h));
            ++_held_total;
            return false;
        }
        case tag_credit: {
            std::uint32_t w[2];
            std::memcpy(w, msg, sizeof w);
            if (w[0] < num_lanes) _credits[index(source, w[0])] += w[1];
            return false;
        }
        case tag_fail:
            _ring.fail_job(std::string_view(reinterpret_cast<const char*>(msg), len));
            return false;
        default:
            return false;
    }
}

// Messages from one source that arrived behind a large one leave in order once it is in.
std::size_t mpi_transport::drain_held(message_sink* sink) {
    std::size_t handled = 0;
    for (std::size_t s = 0; s < _held.size(); ++s) {
        for (;;) {
            held_msg h;
            {
                maybe_lock lock(_mutex, _locking);
                auto& q = _held[s];
                if (q.empty()) break;
                if (q.front().req != MPI_REQUEST_NULL) {
                    int done = 0;
                    check(MPI_Test(&q.front().req, &done, MPI_STATUS_IGNORE), "MPI_Test");
                    if (!done) break;
                }
                if (sink == nullptr) break;
                h = std::move(q.front());
                q.pop_front();
                --_held_total;
                consumed(static_cast<int>(s), h.lane);
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

void mpi_transport::end_job(int status, bool progress) noexcept {
    // Let the failure messages leave (and the peers print what happened), then end the job:
    // an MPI job cannot go on with a rank missing, and MPI_Abort is bounded.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (progress && std::chrono::steady_clock::now() < until) {
        try {
            std::unique_lock<std::mutex> lock;
            if (lock_within(lock, std::chrono::milliseconds(10))) {
                progress_sends();
                if (_sreq.empty()) break;
            }
        } catch (...) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::fflush(nullptr);
    MPI_Abort(_comm, status != 0 ? status : 1);
    std::_Exit(status != 0 ? status : 1);
}

void mpi_transport::exit_job(int status) noexcept {
    char reason[128];
    std::snprintf(reason, sizeof reason, "rank %d called exit(%d) before finishing am::run", rank(),
                  status);
    std::fprintf(stderr, "am: %s\n", reason);
    // Below MPI_THREAD_SERIALIZED (no lock) only the job's thread may call MPI; another
    // thread raises the node's flag and goes straight to MPI_Abort, which has to do.
    const bool may_call_mpi = _locking || std::this_thread::get_id() == _owner;
    if (may_call_mpi) {
        fail_job(reason);
    } else {
        _ring.fail_job(reason);
    }
    end_job(status, may_call_mpi);
}

// ------------------------------------------------------------ exit() while a job is open
//
// A rank that calls exit() while its job is open (in the rank function, in a handler, on any
// thread) leaves its peers waiting in am for it, and itself in MPI_Finalize at exit
// (`finalize_at_exit`, when am initialised MPI), which waits for them: the job would hang. A
// hook run by exit() fails the job instead, as a throw does. exit() ends the process and an
// exit handler cannot be withdrawn, so the hook is registered once per process and the record
// of open jobs it reads is process-wide: an MPI process is one rank, with one open job at a
// time (include/am/mpi.hpp; the list tolerates more). Constant-initialised and trivially
// destructible, the record outlives every exit handler.

/// An entry of the record: an open job of this process.
struct open_job {
    mpi_transport* tp = nullptr;
    pid_t pid = 0;
    open_job* next = nullptr;
};

std::mutex g_open_mutex;     // exit() may be called from any thread
open_job* g_open = nullptr;  // newest first
std::once_flag g_hook_once;

extern "C" void fail_open_job_at_exit(int status, void* /*unused*/) {
    // Held until the process ends: the job's thread cannot tear the transport down meanwhile.
    // Nobody holds it for long: a job opening or closing, or another exit() ending the job.
    std::lock_guard<std::mutex> lock(g_open_mutex);
    // A process forked by a rank inherits the record, not the job.
    if (g_open == nullptr || g_open->pid != getpid()) return;
    for (const open_job* j = g_open->next; j != nullptr; j = j->next) {
        j->tp->fail_job("another am job of its process was ended by exit()");
    }
    g_open->tp->exit_job(status);
}

/// Records `tp` as open (in `entry`, which outlives the record) until `record_closed`. The
/// hook is registered after MPI_Init and `finalize_at_exit` (exit handlers run in reverse
/// order of registration), so exit() runs it before them.
void record_open(open_job& entry, mpi_transport& tp) {
    std::call_once(g_hook_once, [] {
        if (on_exit(fail_open_job_at_exit, nullptr) != 0) {
            throw error(errc::system, "am::run: mpi transport: on_exit failed");
        }
    });
    std::lock_guard<std::mutex> lock(g_open_mutex);
    entry = open_job{&tp, getpid(), g_open};
    g_open = &entry;
}

void record_closed(open_job& entry) noexcept {
    std::lock_guard<std::mutex> lock(g_open_mutex);
    for (open_job** p = &g_open; *p != nullptr; p = &(*p)->next) {
        if (*p == &entry) {
            *p = entry.next;
            break;
        }
    }
    entry.tp = nullptr;
}

}  // namespace

// --------------------------------------------------------------------------------- the job

struct job::state {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm data = MPI_COMM_NULL;
    node nd;  // outlives the transport, which works in its region
    std::unique_ptr<mpi_transport> tp;
    open_job open;  // in the process's record from the transport's creation to `finish`

    state() = default;
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
        if (open.tp != nullptr) record_closed(open);
        tp.reset();
        if (data != MPI_COMM_NULL) MPI_Comm_free(&data);
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
};

job::job(MPI_Comm user, const config& cfg) : _s(std::make_unique<state>()) {
    const bool locking = cfg.progress_thread || cfg.thread_multiple;
    ensure_initialized(locking);
    check(MPI_Comm_dup(user, &_s->comm), "MPI_Comm_dup");
    check(MPI_Comm_dup(user, &_s->data), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(_s->comm, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(_s->data, MPI_ERRORS_ARE_FATAL);
    int rank = 0, size = 1;
    MPI_Comm_rank(_s->comm, &rank);
    MPI_Comm_size(_s->comm, &size);
    make_node(_s->comm, cfg, rank, size, _s->nd);
    _s->tp = std::make_unique<mpi_transport>(_s->comm, _s->data, rank, size, _s->nd, locking);
    record_open(_s->open, *_s->tp);
}

job::~job() = default;

transport& job::tp() noexcept {
    return *_s->tp;
}

void job::finish(int status) {
    if (!_s) return;
    if (status != 0 || _s->tp->job_failed()) _s->tp->abort_job(status);
    _s->tp->finish();
    record_closed(_s->open);  // exit() works as without am from here on
    _s.reset();               // the transport, the node's memory, then the communicators
}

int launch_on(MPI_Comm user, const config& cfg, const rank_body& body) {
    job j(user, cfg);
    const int status = body(j.tp());
    j.finish(status);
    return status;
}

int launch(const config& cfg, const rank_body& body) {
    return launch_on(MPI_COMM_WORLD, cfg, body);
}

}  // namespace am::transport::mpi
