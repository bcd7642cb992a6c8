// SPDX-License-Identifier: MIT
// The ucx transport's rank: a `transport` over this rank's mpi transport (`_inner`), with the
// peers off the node reached through one UCP worker. Sending: a core message is written into a
// buffer of its (peer, lane) and sent by `ucp_am_send_nbx` with the lane as the AM id and the
// source rank as a 4-byte header; UCP picks eager or rendezvous by size. Receiving: the AM
// callbacks queue what arrived per lane, in arrival order (a rendezvous message is fetched by
// `ucp_am_recv_data_nbx` and holds the messages behind it until it is in); `poll` delivers
// them outside the callbacks and outside the lock. One-sided: UCP put/get and atomics on the
// segments registered by `ucp_mem_map` (keys and addresses exchanged over MPI); a put's
// completion is its endpoint's next flush.
#include "ucx_transport.hpp"

#include "../../util/maybe_lock.hpp"
#include "../mpi/eager_format.hpp"

#include <am/error.hpp>

#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace am::transport::ucx {

namespace {

using util::maybe_lock;
// The pack format is the mpi transport's (eager_format.hpp): records of an 8-byte header (u32
// length, u32 zero) and the core message, each starting 8-aligned.
using mpi::check_pack;
using mpi::padded;
using mpi::record_at;
using mpi::record_header;
/// Bytes of a pack: core messages to one (peer, lane) written back to back travel as one UCP
/// active message of at most this size (a larger message travels alone).
constexpr std::size_t pack_bytes = mpi::slot_bytes;

/// Core messages in flight to one (peer, lane) before `try_reserve` refuses more (back-pressure
/// as the mpi transport's credits: what an unpolled peer can be sent stays bounded).
constexpr std::uint32_t sends_in_flight = 64;
/// A send buffer larger than this (a long payload inline) is not kept for the next message.
constexpr std::size_t keep_bytes = std::size_t{1} << 20;
/// A send's own poll while the rank streams polls UCX and the mpi job only every this many
/// times (as the mpi transport's `mpi_every_while_sending`).
constexpr unsigned progress_every_while_sending = 16;
/// Progress calls per poll at most, while each finds work.
constexpr int progress_rounds = 4;

[[noreturn]] void fail_call(int rank, const char* call, ucs_status_t st) {
    throw error(errc::system, "am::run: rank " + std::to_string(rank) + ": ucx transport: " + call +
                                  " failed: " + ucs_status_string(st));
}

void check(int rank, const char* call, ucs_status_t st) {
    if (st != UCS_OK) [[unlikely]]
        fail_call(rank, call, st);
}

void check_mpi(int rc, const char* call) {
    if (rc != MPI_SUCCESS)
        throw error(errc::system, std::string("am::run: ucx transport: ") + call);
}

/// Every rank's `bytes` (any length) in rank order.
std::vector<std::vector<std::byte>> allgather_blobs(MPI_Comm comm, const void* p, std::size_t n) {
    int size = 1;
    MPI_Comm_size(comm, &size);
    const int mine = static_cast<int>(n);
    std::vector<int> lens(static_cast<std::size_t>(size));
    check_mpi(MPI_Allgather(&mine, 1, MPI_INT, lens.data(), 1, MPI_INT, comm), "MPI_Allgather");
    std::vector<int> displs(static_cast<std::size_t>(size));
    int total = 0;
    for (std::size_t r = 0; r < lens.size(); ++r) {
        displs[r] = total;
        total += lens[r];
    }
    std::vector<std::byte> all(static_cast<std::size_t>(total));
    check_mpi(
        MPI_Allgatherv(p, mine, MPI_BYTE, all.data(), lens.data(), displs.data(), MPI_BYTE, comm),
        "MPI_Allgatherv");
    std::vector<std::vector<std::byte>> out(static_cast<std::size_t>(size));
    for (std::size_t r = 0; r < out.size(); ++r) {
        const auto* b = all.data() + displs[r];
        out[r].assign(b, b + lens[r]);
    }
    return out;
}

class ucx_transport;

/// A message being written or in flight: `data` holds it until UCP is done with it.
struct send_buf {
    ucx_transport* self = nullptr;
    std::size_t index = 0;  // the (peer, lane) it counts against
    std::size_t cap = 0;
    std::size_t fill = 0;  // bytes of records written
    std::unique_ptr<std::byte[]> data;
};

/// A message that arrived, in its lane's queue until delivered.
struct incoming {
    int source = 0;
    std::size_t len = 0;
    std::byte* data = nullptr;           // the message, once `ready`
    void* desc = nullptr;                // UCP's data (to release) or rendezvous descriptor
    std::unique_ptr<std::byte[]> owned;  // a copy, or the rendezvous' target
    std::size_t owned_cap = 0;
    bool ready = false;
    bool rndv = false;  // fetched by ucp_am_recv_data_nbx

    void reserve(std::size_t n) {
        if (owned_cap >= n) return;
        owned = std::make_unique<std::byte[]>(n);
        owned_cap = n;
    }
};

/// A one-sided operation until its `done` has run.
struct op_record {
    ucx_transport* self = nullptr;
    one_sided::op_done done = nullptr;
    void* arg = nullptr;
    std::uint64_t operand = 0;  // what UCP reads (the compare value for compare_swap)
    std::uint64_t result = 0;   // what it returns (in: the new value for compare_swap)
    unsigned bytes = 8;
};

struct lane_arg {
    ucx_transport* self;
    unsigned lane;
};

class ucx_transport final : public transport, public one_sided {
  public:
    ucx_transport(transport& inner, MPI_Comm comm, bool locking);
    ~ucx_transport() override { release(); }
    ucx_transport(const ucx_transport&) = delete;
    ucx_transport& operator=(const ucx_transport&) = delete;

    // --------------------------------------------------------------------------- messages
    std::size_t max_message() const noexcept override { return _inner.max_message(); }

    std::byte* try_reserve(int dest, unsigned lane, std::size_t bytes) override {
        if (!_remote[static_cast<std::size_t>(dest)]) return _inner.try_reserve(dest, lane, bytes);
        maybe_lock lock(_mutex, _locking);
        const std::size_t i = index(dest, lane);
        const std::size_t need = record_header + bytes;
        send_buf* b = _open[i].get();
        if (b != nullptr && b->fill != 0 &&
            (b->fill + need > pack_bytes || b->fill + need > b->cap)) {
            send_pack(i);  // full: the message opens the next pack
        }
        if (!_open[i]) {
            if (_in_flight[i] >= sends_in_flight) {  // a pack per credit, as mpi's
                progress();
                if (_in_flight[i] >= sends_in_flight) return nullptr;
            }
            _open[i] = take_buf(i, std::max(need, pack_bytes));
        }
        b = _open[i].get();
        if (b->cap < need) {  // an empty pack (fill 0), too small: a large message alone
            b->data = std::make_unique<std::byte[]>(std::max(need, pack_bytes));
            b->cap = std::max(need, pack_bytes);
        }
        return b->data.get() + b->fill + record_header;
    }

    void commit(int dest, unsigned lane, std::byte* msg, std::size_t bytes) override {
        if (!_remote[static_cast<std::size_t>(dest)]) return _inner.commit(dest, lane, msg, bytes);
        maybe_lock lock(_mutex, _locking);
        const std::size_t i = index(dest, lane);
        send_buf& b = *_open[i];
        const std::uint32_t head[2] = {static_cast<std::uint32_t>(bytes), 0};
        std::memcpy(b.data.get() + b.fill, head, sizeof head);
        const bool first = b.fill == 0;
        b.fill = std::min(padded(b.fill + record_header + bytes), b.cap);
        ++_commits;
        // With a progress thread every message leaves at once; a large one too.
        if (_locking || b.fill > pack_bytes) return send_pack(i);
        if (first) _packed.push_back(i);
    }

    // Packs are sent as the mpi transport sends them (src/transport/mpi/README.md): by every
    // poll but a send's own (the core polls right after each send from the rank's code), so
    // that messages written back to back share a pack while nothing is held across a wait;
    // the first send after a wait leaves at once.
    std::size_t poll(message_sink& sink) override {
        const bool own = !_locking && _commits != _polled_at;
        // A send's own poll while the rank streams: the packs stay open and nothing is polled
        // but every `progress_every_while_sending`-th time (credits and arrivals are still
        // seen), as the mpi transport does; a wait's poll does it all.
        if (own && _streaming && ++_own_polls < progress_every_while_sending) {
            _polled_at = _commits;
            return 0;
        }
        _own_polls = 0;
        const bool send_now = !own || !_streaming;
        _streaming = own;
        if (send_now) flush_packs();
        std::size_t n = _inner.poll(sink);
        if (_closed) return n;
        n += poll_ucx(sink);
        if (!own) flush_packs();  // what the handlers sent
        if (!_locking) _polled_at = _commits;
        if (_failed.load(std::memory_order_acquire)) [[unlikely]]
            raise_failure();
        return n;
    }

    // ---------------------------------------------------------------- the rest: the mpi job
    std::span<std::byte> segment(int rank) noexcept override { return _inner.segment(rank); }
    one_sided* remote_memory() noexcept override { return this; }
    void barrier(coll_kind kind, const idle_fn& idle) override {
        flush_packs();
        _inner.barrier(kind, idle);
    }
    void allgather(coll_kind kind, const void* in, void* out, std::size_t bytes,
                   const idle_fn& idle, const done_fn& gathered) override {
        flush_packs();
        _inner.allgather(kind, in, out, bytes, idle, gathered);
    }
    std::size_t max_gather_bytes() const noexcept override { return _inner.max_gather_bytes(); }
    void allreduce_sum(coll_kind kind, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                       const idle_fn& idle) override {
        flush_packs();
        _inner.allreduce_sum(kind, in, out, n, idle);
    }
    std::string collective_stragglers() const override { return _inner.collective_stragglers(); }
    bool job_failed() const noexcept override { return _inner.job_failed(); }
    std::string failure_reason() const override { return _inner.failure_reason(); }
    void fail_job(std::string_view reason) noexcept override { _inner.fail_job(reason); }
    void mark_finished() noexcept override { _inner.mark_finished(); }

    // -------------------------------------------------------------------------- one-sided
    bool reaches(int rank) const noexcept override {
        return rank >= 0 && rank < size() && _remote[static_cast<std::size_t>(rank)];
    }
    void put(int rank, std::uint64_t offset, const void* src, std::size_t len, op_done done,
             void* arg) override;
    void get(int rank, std::uint64_t offset, void* dst, std::size_t len, op_done done,
             void* arg) override;
    bool atomic(int rank, std::uint64_t offset, atomic_op op, unsigned bytes, std::uint64_t operand,
                std::uint64_t compare, op_done done, void* arg) override;

    /// The end of a healthy job (see `ucx::finish`).
    void finish();

    // UCP callbacks (static trampolines below).
    ucs_status_t arrived(unsigned lane, const void* header, std::size_t header_len, void* data,
                         std::size_t len, std::uint64_t attr);
    void sent(send_buf* b, ucs_status_t st);
    void completed(op_record* op, ucs_status_t st, const char* what);
    void lost(int peer, ucs_status_t st);

  private:
    std::size_t index(int dest, unsigned lane) const noexcept {
        return static_cast<std::size_t>(dest) * num_lanes + lane;
    }
    std::unique_ptr<send_buf> take_buf(std::size_t i, std::size_t bytes);
    void send_pack(std::size_t i);
    void flush_packs();
    unsigned progress();
    std::size_t poll_ucx(message_sink& sink);
    void start_rendezvous();
    void recycle_delivered();
    std::size_t deliver_pack(message_sink& sink, unsigned lane, const incoming& in);
    void flush_puts();
    ucp_ep_h endpoint(int rank, std::uint64_t offset, std::size_t len, const char* call) const;
    void record_failure(std::string text);
    [[noreturn]] void raise_failure();
    void setup_worker(MPI_Comm comm);
    void setup_memory(MPI_Comm comm);
    void connect(MPI_Comm comm);
    void release() noexcept;

    transport& _inner;
    MPI_Comm _comm;
    bool _locking;
    std::mutex _mutex;          // UCP and this state, when a progress thread shares the transport
    std::vector<char> _remote;  // by rank: reached through UCX (not on this rank's node)

    ucp_context_h _context = nullptr;
    ucp_worker_h _worker = nullptr;
    std::vector<ucp_ep_h> _eps;  // by rank; null for node peers
    ucp_mem_h _memh = nullptr;
    std::vector<ucp_rkey_h> _rkeys;     // by rank; null for node peers
    std::vector<std::uint64_t> _bases;  // segment addresses in their processes
    std::vector<std::uint64_t> _sizes;  // segment sizes
    std::array<lane_arg, num_lanes> _lane_args{};

    std::vector<std::unique_ptr<send_buf>> _open;   // by (peer, lane): the one being written
    std::vector<std::uint32_t> _in_flight;          // by (peer, lane)
    std::vector<std::unique_ptr<send_buf>> _spare;  // buffers whose sends completed
    std::vector<std::size_t> _packed;               // (peer, lane) whose pack holds records
    std::uint64_t _commits = 0;    // messages written (rank's thread only without a lock)
    std::uint64_t _polled_at = 0;  // `_commits` at the last poll
    bool _streaming = false;       // the last poll was a send's own
    unsigned _own_polls = 0;       // sends' own polls skipped since the last full one

    std::array<std::deque<std::unique_ptr<incoming>>, num_lanes> _in;      // arrived, in order
    std::size_t _rndv_waiting = 0;                                         // not yet started
    std::vector<std::pair<unsigned, std::unique_ptr<incoming>>> _deliver;  // poll's batch
    std::vector<std::unique_ptr<incoming>> _free_in;  // delivered records, for reuse

    struct done_call {
        op_done fn;
        void* arg;
        std::uint64_t value;
    };
    std::vector<done_call> _done;      // completed one-sided operations, run by the next poll
    std::vector<done_call> _done_run;  // the batch a poll runs
    std::vector<std::vector<op_record*>> _unflushed;  // puts by rank awaiting a flush
    std::size_t _puts_to_flush = 0;

    std::vector<std::vector<std::byte>> _packed_keys;    // set-up only: every rank's packed rkey
    std::vector<std::pair<ucx_transport*, int>> _peers;  // error handlers' arguments, by rank
    std::uint64_t _largest = 0;  // the largest pack a peer may send (one message: setup_memory)
    std::int32_t _header = 0;    // the AM header: this rank (UCP may read it after the call)

    std::string _failure;              // set by a callback (under the lock); raised by the poll
    std::atomic<bool> _failed{false};  // `_failure` is set: read by polls without the lock
    std::mutex _failure_mutex;         // `_failure` (callbacks hold `_mutex`, the poll not)
    bool _closing = false;
    bool _closed = false;
};

// -------------------------------------------------------------------------- trampolines

ucs_status_t on_am(void* arg, const void* header, std::size_t header_len, void* data,
                   std::size_t len, const ucp_am_recv_param_t* param) {
    auto* la = static_cast<lane_arg*>(arg);
    return la->self->arrived(la->lane, header, header_len, data, len, param->recv_attr);
}

void on_sent(void* request, ucs_status_t st, void* user) {
    auto* b = static_cast<send_buf*>(user);
    b->self->sent(b, st);
    ucp_request_free(request);
}

void on_fetched(void* request, ucs_status_t st, std::size_t /*len*/, void* user) {
    auto* in = static_cast<incoming*>(user);              // still in its lane's queue
    in->data = st == UCS_OK ? in->owned.get() : nullptr;  // null: the poll fails the job
    in->ready = true;
    ucp_request_free(request);
}

void on_op(void* request, ucs_status_t st, void* user) {
    auto* op = static_cast<op_record*>(user);
    op->self->completed(op, st, "a one-sided operation");
    ucp_request_free(request);
}

struct flush_record {
    ucx_transport* self;
    std::vector<op_record*> puts;
};

void on_flushed(void* request, ucs_status_t st, void* user) {
    auto* f = static_cast<flush_record*>(user);
    for (op_record* op : f->puts) f->self->completed(op, st, "a put");
    delete f;
    ucp_request_free(request);
}

void on_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t st) {
    auto* peer = static_cast<std::pair<ucx_transport*, int>*>(arg);
    peer->first->lost(peer->second, st);
}

// ----------------------------------------------------------------------------- set-up

ucx_transport::ucx_transport(transport& inner, MPI_Comm comm, bool locking)
    : transport(inner.rank(), inner.size()),
      _inner(inner),
      _comm(comm),
      _locking(locking),
      _remote(static_cast<std::size_t>(inner.size()), 0),
      _eps(static_cast<std::size_t>(inner.size()), nullptr),
      _rkeys(static_cast<std::size_t>(inner.size()), nullptr),
      _open(static_cast<std::size_t>(inner.size()) * num_lanes),
      _in_flight(static_cast<std::size_t>(inner.size()) * num_lanes, 0),
      _unflushed(static_cast<std::size_t>(inner.size())) {
    share_names_with(inner);
    _header = inner.rank();
    set_spin_limit(inner.spin_limit());
    for (int r = 0; r < size(); ++r)
        _remote[static_cast<std::size_t>(r)] = inner.segment(r).empty();
    try {
        setup_worker(comm);
        setup_memory(comm);
        connect(comm);
        check_mpi(MPI_Barrier(comm), "MPI_Barrier");
    } catch (...) {
        release();
        throw;
    }
}

void ucx_transport::setup_worker(MPI_Comm comm) {
    ucp_config_t* config = nullptr;
    check(rank(), "ucp_config_read", ucp_config_read(nullptr, nullptr, &config));
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    params.mt_workers_shared = 0;
    // Atomics by the CPU at the target, never by a NIC: the owner and its node peers apply
    // atomics to the same words with CPU instructions, which NIC atomics are not atomic with.
    check(rank(), "ucp_config_modify", ucp_config_modify(config, "ATOMIC_MODE", "cpu"));
    const ucs_status_t st = ucp_init(&params, config, &_context);
    ucp_config_release(config);
    check(rank(), "ucp_init", st);
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = _locking ? UCS_THREAD_MODE_SERIALIZED : UCS_THREAD_MODE_SINGLE;
    check(rank(), "ucp_worker_create", ucp_worker_create(_context, &wp, &_worker));
    for (unsigned lane = 0; lane < num_lanes; ++lane) {
        _lane_args[lane] = {this, lane};
        ucp_am_handler_param_t hp{};
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                        UCP_AM_HANDLER_PARAM_FIELD_ARG;
        hp.id = lane;
        hp.cb = on_am;
        hp.arg = &_lane_args[lane];
        check(rank(), "ucp_worker_set_am_recv_handler",
              ucp_worker_set_am_recv_handler(_worker, &hp));
    }
    (void)comm;
}

void ucx_transport::setup_memory(MPI_Comm comm) {
    const std::span<std::byte> seg = _inner.segment(rank());
    std::uint64_t mine[2] = {reinterpret_cast<std::uint64_t>(seg.data()), seg.size()};
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size()) * 2);
    check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm),
              "MPI_Allgather");
    // The largest pack: one message of the largest size a rank may send (a medium one, or a
    // long one with a whole segment inline), with its record header and padding.
    const std::uint64_t mine_largest = _inner.max_message() + seg.size() + record_header + 8;
    check_mpi(MPI_Allreduce(&mine_largest, &_largest, 1, MPI_UINT64_T, MPI_MAX, comm),
              "MPI_Allreduce");
    _largest = std::max<std::uint64_t>(_largest, pack_bytes);
    _bases.resize(static_cast<std::size_t>(size()));
    _sizes.resize(static_cast<std::size_t>(size()));
    for (std::size_t r = 0; r < _bases.size(); ++r) {
        _bases[r] = all[2 * r];
        _sizes[r] = all[2 * r + 1];
    }
    void* packed = nullptr;
    std::size_t packed_len = 0;
    if (!seg.empty()) {
        ucp_mem_map_params_t mp{};
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address = seg.data();
        mp.length = seg.size();
        check(rank(), "ucp_mem_map", ucp_mem_map(_context, &mp, &_memh));
        check(rank(), "ucp_rkey_pack", ucp_rkey_pack(_context, _memh, &packed, &packed_len));
    }
    const auto keys = allgather_blobs(comm, packed, packed_len);
    if (packed != nullptr) ucp_rkey_buffer_release(packed);
    _packed_keys = keys;
}

/// By rank: whether it runs on this host (MPI's shared-memory split of `comm`).
std::vector<char> same_host(MPI_Comm comm) {
    MPI_Comm host = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host),
              "MPI_Comm_split_type");
    int me = 0, size = 1, leader = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    leader = me;
    check_mpi(MPI_Bcast(&leader, 1, MPI_INT, 0, host), "MPI_Bcast");
    MPI_Comm_free(&host);
    std::vector<int> leaders(static_cast<std::size_t>(size));
    check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm),
              "MPI_Allgather");
    std::vector<char> out(leaders.size());
    for (std::size_t r = 0; r < out.size(); ++r) out[r] = leaders[r] == leader ? 1 : 0;
    return out;
}

void ucx_transport::connect(MPI_Comm comm) {
    // Peer-failure handling only toward other hosts: UCX's shared-memory transports do not
    // offer it, and asking for it sends a same-host peer over TCP (20x the latency). On one
    // host a lost rank is the MPI launcher's to report (it ends the job).
    const std::vector<char> local = same_host(comm);
    ucp_address_t* addr = nullptr;
    std::size_t addr_len = 0;
    check(rank(), "ucp_worker_get_address", ucp_worker_get_address(_worker, &addr, &addr_len));
    const auto addrs = allgather_blobs(comm, addr, addr_len);
    ucp_worker_release_address(_worker, addr);
    _peers.reserve(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) _peers.emplace_back(this, r);
    for (int r = 0; r < size(); ++r) {
        const auto i = static_cast<std::size_t>(r);
        if (!_remote[i]) continue;
        ucp_ep_params_t ep{};
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep.address = reinterpret_cast<const ucp_address_t*>(addrs[i].data());
        if (local[i] == 0) {
            ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
            ep.err_handler.cb = on_error;
            ep.err_handler.arg = &_peers[i];
        }
        check(rank(), "ucp_ep_create", ucp_ep_create(_worker, &ep, &_eps[i]));
        if (!_packed_keys[i].empty()) {
            check(rank(), "ucp_ep_rkey_unpack",
                  ucp_ep_rkey_unpack(_eps[i], _packed_keys[i].data(), &_rkeys[i]));
        }
    }
    _packed_keys.clear();
}

void ucx_transport::release() noexcept {
    for (auto& k : _rkeys) {
        if (k != nullptr) ucp_rkey_destroy(k);
        k = nullptr;
    }
    for (auto& ep : _eps) {
        if (ep == nullptr) continue;
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_EP_CLOSE_FLAG_FORCE;
        void* req = ucp_ep_close_nbx(ep, &p);
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(_worker);
            ucp_request_free(req);
        }
        ep = nullptr;
    }
    for (auto& q : _in) {
        for (auto& in : q) {
            if (in->desc != nullptr && !in->rndv && _worker != nullptr)
                ucp_am_data_release(_worker, in->desc);
        }
        q.clear();
    }
    if (_memh != nullptr) ucp_mem_unmap(_context, _memh);
    _memh = nullptr;
    if (_worker != nullptr) ucp_worker_destroy(_worker);
    _worker = nullptr;
    if (_context != nullptr) ucp_cleanup(_context);
    _context = nullptr;
    _closed = true;
}

// ----------------------------------------------------------------------------- sending

std::unique_ptr<send_buf> ucx_transport::take_buf(std::size_t i, std::size_t bytes) {
    std::unique_ptr<send_buf> b;
    if (!_spare.empty()) {
        b = std::move(_spare.back());
        _spare.pop_back();
    } else {
        b = std::make_unique<send_buf>();
        b->self = this;
    }
    b->index = i;
    b->fill = 0;
    if (b->cap < bytes) {
        b->data = std::make_unique<std::byte[]>(bytes);
        b->cap = bytes;
    }
    return b;
}

void ucx_transport::send_pack(std::size_t i) {
    send_buf* b = _open[i].get();
    if (b == nullptr || b->fill == 0) return;
    const auto dest = static_cast<std::size_t>(i / num_lanes);
    const auto lane = static_cast<unsigned>(i % num_lanes);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = on_sent;
    p.user_data = b;
    if (b->fill <= pack_bytes) {  // a pack of small messages: eager (over TCP UCX would
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;  // otherwise fetch an 8 KiB pack by
        p.flags = UCP_AM_SEND_FLAG_EAGER;           // rendezvous, a round trip more)
    }
    void* req =
        ucp_am_send_nbx(_eps[dest], lane, &_header, sizeof _header, b->data.get(), b->fill, &p);
    if (req == nullptr) {  // sent: the buffer serves the next pack
        b->fill = 0;
        if (b->cap > keep_bytes) _open[i].reset();  // but not a large message's memory
        return;
    }
    if (UCS_PTR_IS_ERR(req)) [[unlikely]]
        fail_call(rank(), "ucp_am_send_nbx", UCS_PTR_STATUS(req));
    ++_in_flight[i];
    (void)_open[i].release();  // UCP reads it until `sent`
}

void ucx_transport::flush_packs() {
    if (_packed.empty()) return;
    maybe_lock lock(_mutex, _locking);
    for (const std::size_t i : _packed) send_pack(i);
    _packed.clear();
}

void ucx_transport::sent(send_buf* b, ucs_status_t st) {
    std::unique_ptr<send_buf> owned(b);
    --_in_flight[b->index];
    if (st != UCS_OK && !_closing) {
        record_failure("rank " + std::to_string(rank()) + ": ucx transport: a message to rank " +
                       std::to_string(b->index / num_lanes) + " failed: " + ucs_status_string(st));
    }
    if (_spare.size() < 2 * sends_in_flight && b->cap <= keep_bytes)
        _spare.push_back(std::move(owned));
}

// --------------------------------------------------------------------------- receiving

ucs_status_t ucx_transport::arrived(unsigned lane, const void* header, std::size_t header_len,
                                    void* data, std::size_t len, std::uint64_t attr) {
    std::int32_t source = -1;
    if (header_len == sizeof source) std::memcpy(&source, header, sizeof source);
    if (source < 0 || source >= size() || !_remote[static_cast<std::size_t>(source)]) {
        record_failure("rank " + std::to_string(rank()) + ": malformed UCX message (a header of " +
                       std::to_string(header_len) + " bytes naming rank " + std::to_string(source) +
                       ", which is not a peer off this node)");
        return UCS_OK;
    }
    if (len > _largest) {
        record_failure("rank " + std::to_string(rank()) + ": malformed UCX message from rank " +
                       std::to_string(source) + " (lane " + std::to_string(lane) + ": " +
                       std::to_string(len) + " bytes, over the largest pack of the job, " +
                       std::to_string(_largest) + ")");
        return UCS_OK;
    }
    std::unique_ptr<incoming> in;
    if (!_free_in.empty()) {
        in = std::move(_free_in.back());
        _free_in.pop_back();
    } else {
        in = std::make_unique<incoming>();
    }
    in->source = source;
    in->len = len;
    ucs_status_t keep = UCS_OK;
    if ((attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) {
        in->rndv = true;
        in->desc = data;  // fetched by the poll (start_rendezvous)
        ++_rndv_waiting;
        keep = UCS_INPROGRESS;
    } else if ((attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0 &&
               reinterpret_cast<std::uintptr_t>(data) % 8 == 0) {
        in->data = static_cast<std::byte*>(data);  // UCP's buffer, released once delivered
        in->desc = data;
        in->ready = true;
        keep = UCS_INPROGRESS;
    } else {
        in->reserve(len);  // 8-aligned records, as the core wants
        std::memcpy(in->owned.get(), data, len);
        in->data = in->owned.get();
        in->ready = true;
    }
    _in[lane].push_back(std::move(in));
    return keep;
}

void ucx_transport::start_rendezvous() {
    for (auto& q : _in) {
        for (auto& in : q) {
            if (!in->rndv || in->desc == nullptr) continue;
            in->reserve(in->len);
            ucp_request_param_t p{};
            p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
            p.cb.recv_am = on_fetched;
            p.user_data = in.get();
            void* desc = in->desc;
            in->desc = nullptr;  // UCP's from here on
            --_rndv_waiting;
            void* req = ucp_am_recv_data_nbx(_worker, desc, in->owned.get(), in->len, &p);
            if (req == nullptr) {
                in->data = in->owned.get();
                in->ready = true;
            } else if (UCS_PTR_IS_ERR(req)) {
                in->ready = true;  // data stays null: the poll fails the job
            }
        }
    }
}

unsigned ucx_transport::progress() {
    unsigned events = 0;
    for (int k = 0; k < progress_rounds; ++k) {
        const unsigned e = ucp_worker_progress(_worker);
        if (e == 0) break;
        events += e;
    }
    return events;
}

std::size_t ucx_transport::poll_ucx(message_sink& sink) {
    // UCX's own events count as work, so that a waiting rank keeps spinning while it serves
    // what UCX runs in software at the target (atomics, puts between ranks of a host).
    std::size_t events = 0;
    {
        maybe_lock lock(_mutex, _locking);
        events = progress();
        if (_rndv_waiting > 0) start_rendezvous();
        if (_puts_to_flush > 0) flush_puts();
        _done_run.swap(_done);
        for (unsigned lane = num_lanes; lane-- > 0;) {  // replies first
            auto& q = _in[lane];
            while (!q.empty() && q.front()->ready) {
                _deliver.emplace_back(lane, std::move(q.front()));
                q.pop_front();
            }
        }
    }
    if (_done_run.empty() && _deliver.empty()) return events;
    std::size_t handled = events + _done_run.size();
    try {
        for (const done_call& d : _done_run) d.fn(d.arg, d.value);
        _done_run.clear();
        for (auto& [lane, in] : _deliver) {
            if (in->data == nullptr) {
                record_failure("rank " + std::to_string(rank()) +
                               ": ucx transport: the rendezvous of a message from rank " +
                               std::to_string(in->source) + " failed");
                break;
            }
            handled += deliver_pack(sink, lane, *in);
            if (_failed.load(std::memory_order_relaxed)) break;  // a malformed pack
        }
    } catch (...) {
        _done_run.clear();
        recycle_delivered();
        throw;
    }
    recycle_delivered();
    return handled;
}

// The core messages of a pack, in order, once the whole pack is checked (nothing a peer sends
// is trusted: a malformed pack fails the job naming the peer).
std::size_t ucx_transport::deliver_pack(message_sink& sink, unsigned lane, const incoming& in) {
    std::uint32_t count = 0;
    if (const char* bad = check_pack(in.data, in.len, count)) {
        record_failure("rank " + std::to_string(rank()) + ": malformed UCX message from rank " +
                       std::to_string(in.source) + " (lane " + std::to_string(lane) + ", " +
                       std::to_string(in.len) + " bytes: " + bad + ")");
        return 0;
    }
    const std::span<const std::byte> pack(in.data, in.len);
    std::size_t at = 0;
    for (std::uint32_t k = 0; k < count; ++k) {
        const mpi::pack_record r = record_at(pack, at);
        sink.deliver(in.source, lane, const_cast<std::byte*>(r.message.data()), r.message.size());
        at = r.next;
    }
    return count;
}

// UCP's buffers back to UCP, the records (and their small copies) kept for the next messages.
void ucx_transport::recycle_delivered() {
    constexpr std::size_t keep_records = 256, keep_copy = 4096;
    maybe_lock lock(_mutex, _locking);
    for (auto& [lane, in] : _deliver) {
        if (in->desc != nullptr) ucp_am_data_release(_worker, in->desc);
        if (_free_in.size() >= keep_records) continue;
        in->desc = nullptr;
        in->data = nullptr;
        in->ready = false;
        in->rndv = false;
        if (in->owned_cap > keep_copy) {
            in->owned.reset();
            in->owned_cap = 0;
        }
        _free_in.push_back(std::move(in));
    }
    _deliver.clear();
}

// ---------------------------------------------------------------------------- one-sided

ucp_ep_h ucx_transport::endpoint(int rank, std::uint64_t offset, std::size_t len,
                                 const char* call) const {
    if (!reaches(rank)) {
        throw error(errc::bad_rank, std::string("am::transport::ucx::") + call + ": rank " +
                                        std::to_string(this->rank()) + ": rank " +
                                        std::to_string(rank) + " is not a peer off this node");
    }
    const auto r = static_cast<std::size_t>(rank);
    if (_rkeys[r] == nullptr || offset > _sizes[r] || len > _sizes[r] - offset) {
        throw error(errc::out_of_segment,
                    std::string("am::transport::ucx::") + call + ": rank " +
                        std::to_string(this->rank()) + ": " + std::to_string(len) +
                        " bytes at offset " + std::to_string(offset) +
                        " are outside the segment of rank " + std::to_string(rank) + " (" +
                        std::to_string(_sizes[r]) + " bytes)");
    }
    return _eps[r];
}

void ucx_transport::put(int rank, std::uint64_t offset, const void* src, std::size_t len,
                        op_done done, void* arg) {
    maybe_lock lock(_mutex, _locking);
    const ucp_ep_h ep = endpoint(rank, offset, len, "put");
    const auto r = static_cast<std::size_t>(rank);
    ucp_request_param_t p{};  // no callback: the endpoint's flush completes it
    void* req = ucp_put_nbx(ep, src, len, _bases[r] + offset, _rkeys[r], &p);
    if (UCS_PTR_IS_ERR(req)) fail_call(this->rank(), "ucp_put_nbx", UCS_PTR_STATUS(req));
    if (req != nullptr) ucp_request_free(req);  // it completes in the background
    _unflushed[r].push_back(new op_record{this, done, arg, 0, 0, 8});
    ++_puts_to_flush;
}

void ucx_transport::flush_puts() {
    for (std::size_t r = 0; r < _unflushed.size(); ++r) {
        if (_unflushed[r].empty()) continue;
        auto* f = new flush_record{this, std::move(_unflushed[r])};
        _unflushed[r].clear();
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        p.cb.send = on_flushed;
        p.user_data = f;
        void* req = ucp_ep_flush_nbx(_eps[r], &p);
        if (req == nullptr || UCS_PTR_IS_ERR(req)) {
            const ucs_status_t st = req == nullptr ? UCS_OK : UCS_PTR_STATUS(req);
            for (op_record* op : f->puts) completed(op, st, "a put");
            delete f;
        }
    }
    _puts_to_flush = 0;
}

void ucx_transport::get(int rank, std::uint64_t offset, void* dst, std::size_t len, op_done done,
                        void* arg) {
    maybe_lock lock(_mutex, _locking);
    const ucp_ep_h ep = endpoint(rank, offset, len, "get");
    const auto r = static_cast<std::size_t>(rank);
    auto* op = new op_record{this, done, arg, 0, 0, 8};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = on_op;
    p.user_data = op;
    void* req = ucp_get_nbx(ep, dst, len, _bases[r] + offset, _rkeys[r], &p);
    if (req == nullptr || UCS_PTR_IS_ERR(req))
        completed(op, req == nullptr ? UCS_OK : UCS_PTR_STATUS(req), "a get");
}

bool ucx_transport::atomic(int rank, std::uint64_t offset, atomic_op op, unsigned bytes,
                           std::uint64_t operand, std::uint64_t compare, op_done done, void* arg) {
    ucp_atomic_op_t uop{};
    switch (op) {
        case atomic_op::add:
            uop = UCP_ATOMIC_OP_ADD;
            break;
        case atomic_op::bit_and:
            uop = UCP_ATOMIC_OP_AND;
            break;
        case atomic_op::bit_or:
            uop = UCP_ATOMIC_OP_OR;
            break;
        case atomic_op::bit_xor:
            uop = UCP_ATOMIC_OP_XOR;
            break;
        case atomic_op::swap:
            uop = UCP_ATOMIC_OP_SWAP;
            break;
        case atomic_op::compare_swap:
            uop = UCP_ATOMIC_OP_CSWAP;
            break;
        default:
            return false;  // min, max: run at the owner by message
    }
    if ((bytes != 4 && bytes != 8) || offset % bytes != 0) {
        throw error(errc::invalid_argument,
                    "am::transport::ucx::atomic: rank " + std::to_string(this->rank()) + ": " +
                        std::to_string(bytes) + "-byte word at offset " + std::to_string(offset) +
                        " (4 or 8 bytes, aligned to its size)");
    }
    maybe_lock lock(_mutex, _locking);
    const ucp_ep_h ep = endpoint(rank, offset, bytes, "atomic");
    const auto r = static_cast<std::size_t>(rank);
    const bool cswap = op == atomic_op::compare_swap;
    // UCP reads `operand` (for compare_swap: the value compared) and writes the old word into
    // `result` (for compare_swap it first reads the new value there).
    auto* rec =
        new op_record{this, done, arg, cswap ? compare : operand, cswap ? operand : 0, bytes};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    p.cb.send = on_op;
    p.user_data = rec;
    p.datatype = ucp_dt_make_contig(bytes);
    p.reply_buffer = &rec->result;  // little-endian: a 4-byte word is the low half
    void* req = ucp_atomic_op_nbx(ep, uop, &rec->operand, 1, _bases[r] + offset, _rkeys[r], &p);
    if (req == nullptr || UCS_PTR_IS_ERR(req))
        completed(rec, req == nullptr ? UCS_OK : UCS_PTR_STATUS(req), "an atomic");
    return true;
}

void ucx_transport::completed(op_record* op, ucs_status_t st, const char* what) {
    std::unique_ptr<op_record> owned(op);
    if (st != UCS_OK) {
        if (!_closing) {
            record_failure("rank " + std::to_string(rank()) + ": ucx transport: " + what +
                           " failed: " + ucs_status_string(st));
        }
        return;
    }
    const std::uint64_t value = op->bytes == 4 ? (op->result & 0xffffffffu) : op->result;
    _done.push_back({op->done, op->arg, value});
}

// ------------------------------------------------------------------------------ failures

void ucx_transport::lost(int peer, ucs_status_t st) {
    if (_closing) return;
    record_failure("rank " + std::to_string(rank()) +
                   ": ucx transport: lost the connection to rank " + std::to_string(peer) + " (" +
                   ucs_status_string(st) + "): its process or host is gone or unreachable");
}

void ucx_transport::record_failure(std::string text) {
    std::lock_guard lock(_failure_mutex);
    if (_failed.load(std::memory_order_relaxed)) return;
    _failure = std::move(text);
    _failed.store(true, std::memory_order_release);
}

void ucx_transport::raise_failure() {
    std::string text;
    {
        std::lock_guard lock(_failure_mutex);
        text = _failure;
    }
    _inner.fail_job(text);
    throw error(errc::aborted, text);
}

// ------------------------------------------------------------------------------ the end

void ucx_transport::finish() {
    flush_packs();  // nothing is left open after quiescence; harmless if something is
    std::unique_lock<std::mutex> lock(_mutex, std::defer_lock);
    if (_locking) lock.lock();
    // Every operation of this rank complete at its target, then no rank sends any more.
    if (_puts_to_flush > 0) flush_puts();
    ucp_request_param_t p{};
    void* req = ucp_worker_flush_nbx(_worker, &p);
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(_worker);
        ucp_request_free(req);
    }
    _closing = true;  // a peer closing its endpoints from here on is not a failure
    MPI_Request barrier = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibarrier(_comm, &barrier), "MPI_Ibarrier");
    for (int done = 0; done == 0;) {
        ucp_worker_progress(_worker);
        check_mpi(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done == 0 && _inner.job_failed()) [[unlikely]]
            throw error(errc::aborted, _inner.failure_reason());  // job::finish aborts it
    }
    release();
}

}  // namespace

std::unique_ptr<transport> make(transport& inner, MPI_Comm comm, bool locking) {
    return std::make_unique<ucx_transport>(inner, comm, locking);
}

void finish(transport& ucx) {
    static_cast<ucx_transport&>(ucx).finish();
}

}  // namespace am::transport::ucx
