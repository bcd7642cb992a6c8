// SPDX-License-Identifier: MIT
#include "context_impl.hpp"

#include "../util/backoff.hpp"
#include "../util/error.hpp"
#include "../util/maybe_lock.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace am::detail {
namespace {

class frame_scope {
  public:
    frame_scope(const context_impl* c, unsigned lane) noexcept : _saved(t_frame) {
        t_frame = frame_of(c, lane);
    }
    ~frame_scope() { t_frame = _saved; }
    frame_scope(const frame_scope&) = delete;
    frame_scope& operator=(const frame_scope&) = delete;

  private:
    std::uintptr_t _saved;
};

using util::maybe_lock;

constexpr unsigned lane_of(bool reply) {
    return reply ? 1u : 0u;
}

using util::fail;
using util::where;

// The context whose progress thread this is (set by progress_loop; names it in failures).
thread_local const context_impl* t_progress_of = nullptr;

}  // namespace

context_impl::context_impl(transport::transport& tp, const config& cfg)
    : _tp(tp),
      _ring(dynamic_cast<transport::ring::ring_transport*>(&tp)),
      _front(this),
      _rank(tp.rank()),
      _size(tp.size()),
      _own_segment(tp.segment(tp.rank())) {
    const std::size_t room = tp.max_message() - fixed_bytes(max_args);
    _max_medium = cfg.max_medium < room ? cfg.max_medium : room;
    _header_base = static_cast<std::uint64_t>(_rank) << 32;
    _locking = cfg.thread_multiple;
    _fast = _ring != nullptr && !cfg.progress_thread && !cfg.thread_multiple;
    update_slow_path();
    _saved_frame = t_frame;
    t_frame = frame_of(this, home_mark);
    // The progress thread is started by am::run once the model layers have registered their
    // handlers (start_progress_thread), so no message is dispatched before they exist.
}

context_impl::~context_impl() {
    stop_progress_thread();
    if (t_frame == frame_of(this, home_mark)) t_frame = _saved_frame;
}

// A single-threaded context (no thread_multiple, no progress thread) has no locks: a second
// thread sending or polling on it would corrupt its rings and queues, and messages would be
// lost ("dropped an invalid message") or the job would hang. Every entry point refuses such a
// thread before it touches anything: the short-send hot path folds the test into the check of
// the thread-local frame word it makes anyway (no added instruction; a miss takes the general
// path, which checks), and the general send path, poll(), the waits, barrier() and handler
// registration call check_thread. So release and debug builds check the same: the hot path
// pays nothing for it. The thread id settles a miss of the mark, which can also mean that
// another context made later on the same thread holds it.
void context_impl::check_thread_slow(const char* call) const {
    if (_locking || std::this_thread::get_id() == _home) return;
    fail(errc::bad_context, call, _rank,
         "called from a thread other than the rank's own (the one that created the context), "
         "and the context is single-threaded; to send, poll and wait from several threads of a "
         "rank set AM_THREAD_MULTIPLE=1 (config::thread_multiple)");
}

// ---------------------------------------------------------------------------------- sending

// The program's handlers sit after the library's own in the table: the message counts only
// the program's and gives the indices they occupy.
std::string context_impl::unregistered(std::uint32_t handler) const {
    const std::uint32_t count = _table.count();
    std::string what = "handler " + std::to_string(handler) + " is not registered (" +
                       std::to_string(count - _builtin) + " handlers";
    if (count > _builtin) {
        what += "; valid indices " + std::to_string(_builtin) + " to " + std::to_string(count - 1);
    }
    return what + ")";
}

void context_impl::validate(const send_desc& d, bool reply) const {
    const char* call = reply ? "am::token::reply" : "am::context::request";
    if (d.dest < 0 || d.dest >= _size) [[unlikely]] {
        fail(errc::bad_rank, call, _rank,
             "destination " + std::to_string(d.dest) + " out of range [0, " +
                 std::to_string(_size) + ")");
    }
    if (d.handler >= _sealed.load(std::memory_order_relaxed)) [[unlikely]] {
        if (d.handler < _table.count()) {
            fail(errc::bad_handler, call, _rank,
                 "handler " + std::to_string(d.handler) +
                     " is registered but not yet enabled: call barrier() on every rank after "
                     "registering handlers");
        }
        fail(errc::bad_handler, call, _rank, unregistered(d.handler));
    }
    const handler_cold& e = _table.cold(d.handler);
    if (e.kind != d.kind || e.nargs != d.nargs) [[unlikely]] {
        fail(errc::bad_handler, call, _rank,
             "handler " + std::to_string(d.handler) + " (" + e.name + ") takes " +
                 category_name(e.kind) + " messages with " + std::to_string(e.nargs) +
                 " arguments, not " + category_name(d.kind) + " with " + std::to_string(d.nargs));
    }
    if (!reply && in_reply_handler()) [[unlikely]] {
        fail(errc::bad_context, call, _rank,
             "called from a reply handler; reply handlers may not send requests");
    }
    if (d.kind == category::medium && d.len > _max_medium) [[unlikely]] {
        fail(errc::too_large, call, _rank,
             "medium payload of " + std::to_string(d.len) +
                 " bytes exceeds max_medium() = " + std::to_string(_max_medium));
    }
    if (d.kind == category::long_am) {
        const std::size_t seg = _own_segment.size();  // every rank's segment has this size
        if (d.offset > seg || d.len > seg - d.offset) [[unlikely]] {
            fail(errc::out_of_segment, call, _rank,
                 "long payload of " + std::to_string(d.len) + " bytes at offset " +
                     std::to_string(d.offset) + " lies outside rank " + std::to_string(d.dest) +
                     "'s segment of " + std::to_string(seg) + " bytes");
        }
        if (d.len != 0 && d.payload == nullptr) [[unlikely]] {
            fail(errc::invalid_argument, call, _rank, "null payload pointer");
        }
    }
}

std::size_t context_impl::message_bytes(const send_desc& d, bool inline_long) const noexcept {
    const std::size_t fixed = fixed_bytes(d.nargs);
    if (d.kind == category::medium) return fixed + d.len;
    if (d.kind == category::long_am) return fixed + long_trailer + (inline_long ? d.len : 0);
    return fixed;
}

void context_impl::write_message(std::byte* out, const send_desc& d,
                                 bool inline_long) const noexcept {
    const auto kind = static_cast<std::uint8_t>(static_cast<std::uint8_t>(d.kind) |
                                                (inline_long ? inline_payload : 0));
    const wire_header h{static_cast<std::uint16_t>(d.handler), kind, d.nargs,
                        static_cast<std::uint32_t>(_rank)};
    std::memcpy(out, &h, sizeof h);
    std::memcpy(out + sizeof h, d.args, 8 * static_cast<std::size_t>(d.nargs));
    std::byte* rest = out + fixed_bytes(d.nargs);
    if (d.kind == category::medium) {
        if (d.len != 0) std::memcpy(rest, d.payload, d.len);
    } else if (d.kind == category::long_am) {
        const std::uint64_t trailer[2] = {d.offset, d.len};
        std::memcpy(rest, trailer, sizeof trailer);
        if (inline_long && d.len != 0) std::memcpy(rest + long_trailer, d.payload, d.len);
    }
}

// A long payload goes straight into the target's segment when it is mapped here, before the
// header is published, so the handler sees it. Otherwise it travels inline (false).
bool context_impl::copy_long_payload(const send_desc& d) const {
    const std::span<std::byte> seg = _tp.segment(d.dest);
    if (seg.empty()) return false;
    if (d.len != 0) std::memcpy(seg.data() + d.offset, d.payload, d.len);
    return true;
}

bool context_impl::try_inject(const send_desc& d, std::size_t bytes, bool inline_long) {
    const unsigned lane = static_cast<unsigned>(d.ln);
    if (_pending_total != 0 &&
        _pending.contains(static_cast<std::size_t>(d.dest) * transport::num_lanes + lane)) {
        return false;  // keep per-(destination, lane) order behind the queued messages
    }
    std::byte* p = _tp.try_reserve(d.dest, lane, bytes);
    if (p == nullptr) return false;
    write_message(p, d, inline_long);
    _tp.commit(d.dest, lane, p, bytes);
    return true;
}

void context_impl::update_slow_path() noexcept {
    const std::uint64_t off = _fast ? 0 : std::uint64_t{1} << 62;
    _slow_path.store(off | _pending_total.load(std::memory_order_relaxed),
                     std::memory_order_relaxed);
}

void context_impl::enqueue(const send_desc& d, std::size_t bytes, bool inline_long) {
    pending_msg m;
    m.bytes.resize(bytes);
    write_message(m.bytes.data(), d, inline_long);
    _pending[static_cast<std::size_t>(d.dest) * transport::num_lanes + static_cast<unsigned>(d.ln)]
        .push_back(std::move(m));
    ++_pending_total;
    update_slow_path();
}

void context_impl::flush_pending() {
    maybe_lock lock(_send_mutex, _locking);
    for (auto it = _pending.begin(); it != _pending.end();) {
        const std::size_t q = it->first;
        auto& queue = it->second;
        const int dest = static_cast<int>(q / transport::num_lanes);
        const unsigned lane = static_cast<unsigned>(q % transport::num_lanes);
        while (!queue.empty()) {
            std::vector<std::byte>& bytes = queue.front().bytes;
            std::byte* p = _tp.try_reserve(dest, lane, bytes.size());
            if (p == nullptr) break;
            std::memcpy(p, bytes.data(), bytes.size());
            _tp.commit(dest, lane, p, bytes.size());
            queue.pop_front();
            --_pending_total;
        }
        it = queue.empty() ? _pending.erase(it) : std::next(it);
    }
    update_slow_path();
}

void context_impl::count_sent(const send_desc& d) noexcept {
    handler_counters& c = _table.counters(d.handler);
    bump(c.sent);
    bump(c.sent_bytes, d.len);
}

std::uint64_t context_impl::total_sent() const noexcept {
    std::uint64_t n = 0;
    for (std::uint32_t i = 0, e = _table.count(); i < e; ++i) {
        n += _table.counters(i).sent.load(std::memory_order_relaxed);
    }
    return n;
}

std::uint64_t context_impl::total_received() const noexcept {
    std::uint64_t n = 0;
    for (std::uint32_t i = 0, e = _table.count(); i < e; ++i) {
        n += _table.counters(i).received.load(std::memory_order_relaxed);
    }
    return n;
}

inline std::size_t context_impl::poll_locked() {
    if (_pending_total.load(std::memory_order_relaxed) != 0) flush_pending();
    // The ring transport is called directly so its scan and `deliver` inline.
    std::size_t n = _ring != nullptr ? _ring->poll_into(*this) : _tp.poll(*this);
    if (_deferred_ready.load(std::memory_order_relaxed)) [[unlikely]]
        n += run_deferred();
    return n;
}

std::size_t context_impl::run_deferred() {
    _deferred_ready.store(false, std::memory_order_relaxed);
    if (!_deferred_fn) return 0;
    frame_scope scope(this, 0);
    return _deferred_fn();
}

void context_impl::send(const send_desc& d, bool reply) {
    check_thread(reply ? "am::token::reply" : "am::context::request");
    validate(d, reply);
    const bool inline_long = d.kind == category::long_am && !copy_long_payload(d);
    const std::size_t bytes = message_bytes(d, inline_long);
    const bool from_handler = in_handler();
    {
        maybe_lock lock(_send_mutex, _locking);
        if (try_inject(d, bytes, inline_long)) [[likely]] {
            count_sent(d);
            if (!from_handler && !_locking) (void)poll_locked();  // every send also makes progress
            return;
        }
        bump(_stalls);
        if (from_handler) {  // handlers never block: park it for later progress
            enqueue(d, bytes, inline_long);
            bump(_queued);
            count_sent(d);
            return;
        }
    }
    unsigned backoff = 0;
    for (;;) {  // the rank's own thread waits for room, handling what arrives meanwhile
        if (poll() != 0) {
            backoff = 0;
        } else {
            util::backoff(backoff, _tp.spin_limit());
        }
        maybe_lock lock(_send_mutex, _locking);
        if (try_inject(d, bytes, inline_long)) {
            count_sent(d);
            return;
        }
    }
}

template <unsigned N, unsigned Lane>
void context_impl::send_short(int dest, std::uint32_t handler, const std::uint64_t* args) {
    // Everything the generic path checks, in the fewest instructions: a destination in range,
    // a sealed handler whose signature is short with N arguments, no request from a reply
    // handler; then straight into the ring when nothing is queued before this message.
    // A reply is only ever sent from a request handler (the token checked that). A request
    // comes from a request handler (frame: this context, lane 0) or from the rank's own thread
    // outside handlers (this context with `home_mark`); anything else (a reply handler, another
    // thread) takes the general path, which says what is wrong. One test covers both.
    const std::uintptr_t frame = Lane == 0 ? t_frame : 0;
    const bool ok = static_cast<unsigned>(dest) < static_cast<unsigned>(_size) &&
                    handler < _sealed.load(std::memory_order_relaxed) &&
                    _table.signature(handler) == signature_of(category::short_am, N) &&
                    (Lane != 0 || (frame & ~std::uintptr_t{home_mark}) == frame_of(this, 0)) &&
                    _slow_path.load(std::memory_order_relaxed) == 0;
    if (!ok) [[unlikely]]
        return send_short_slow(dest, Lane, handler, N, args);
    constexpr std::size_t bytes = fixed_bytes(N);
    transport::ring::producer& out = _ring->out(dest, Lane);
    std::byte* p = out.reserve(bytes);
    if (p == nullptr) [[unlikely]]
        return send_short_slow(dest, Lane, handler, N, args);
    const std::uint64_t header = _header_base | (std::uint64_t{N} << 24) | handler;
    std::memcpy(p, &header, 8);
    if constexpr (N != 0) std::memcpy(p + 8, args, 8 * N);
    out.commit(p, bytes);
    bump(_table.counters(handler).sent);
    if (Lane == 0 && frame != frame_of(this, 0)) poll_after_send();  // not from a handler
}

void context_impl::poll_after_send() {
    (void)_ring->poll_into(*this);  // every send from the rank's own code makes progress
}

template <unsigned N>
void context_impl::reply_short(token& t, std::uint32_t handler, const std::uint64_t* args) {
    if (!t.is_request() || t._replied) [[unlikely]] {
        const send_desc d{t.source(), lane::reply, category::short_am, N, handler, args, nullptr, 0,
                          0};
        return core_reply(t, d);  // reports the misuse
    }
    send_short<N, 1>(t.source(), handler, args);
    t._replied = true;
    bump(_replies);
}

template <unsigned N>
void core_request_short(context_impl* c, int dest, std::uint32_t handler,
                        const std::uint64_t* args) {
    c->send_short<N, 0>(dest, handler, args);
}

template <unsigned N>
void core_reply_short(token& t, std::uint32_t handler, const std::uint64_t* args) {
    t._ctx->reply_short<N>(t, handler, args);
}

#define AM_DETAIL_SHORT_INSTANTIATE(N)                                                            \
    template void core_request_short<N>(context_impl*, int, std::uint32_t, const std::uint64_t*); \
    template void core_reply_short<N>(token&, std::uint32_t, const std::uint64_t*);
AM_DETAIL_SHORT_INSTANTIATE(0)
AM_DETAIL_SHORT_INSTANTIATE(1)
AM_DETAIL_SHORT_INSTANTIATE(2)
AM_DETAIL_SHORT_INSTANTIATE(3)
AM_DETAIL_SHORT_INSTANTIATE(4)
AM_DETAIL_SHORT_INSTANTIATE(5)
AM_DETAIL_SHORT_INSTANTIATE(6)
AM_DETAIL_SHORT_INSTANTIATE(7)
AM_DETAIL_SHORT_INSTANTIATE(8)
AM_DETAIL_SHORT_INSTANTIATE(9)
AM_DETAIL_SHORT_INSTANTIATE(10)
AM_DETAIL_SHORT_INSTANTIATE(11)
AM_DETAIL_SHORT_INSTANTIATE(12)
AM_DETAIL_SHORT_INSTANTIATE(13)
AM_DETAIL_SHORT_INSTANTIATE(14)
AM_DETAIL_SHORT_INSTANTIATE(15)
AM_DETAIL_SHORT_INSTANTIATE(16)
#undef AM_DETAIL_SHORT_INSTANTIATE

void context_impl::send_short_slow(int dest, unsigned lane, std::uint32_t handler, unsigned nargs,
                                   const std::uint64_t* args) {
    send_desc d{dest,
                static_cast<detail::lane>(lane),
                category::short_am,
                static_cast<std::uint8_t>(nargs),
                handler,
                args,
                nullptr,
                0,
                0};
    send(d, lane == lane_of(true));
}

// -------------------------------------------------------------------------------- receiving

std::size_t context_impl::poll() {
    if (in_handler()) return 0;
    if (!_locking) {
        check_thread("am::context::poll");
        return poll_locked();
    }
    if (std::this_thread::get_id() == _home) return poll_shared();
    // Another thread of the rank (its progress thread, or the program's under
    // thread_multiple): a handler that throws here leaves its message unhandled and the
    // rank's epochs and waits unable to end, so it fails the job (every rank's waits then
    // throw errc::aborted) before the exception reaches the caller.
    try {
        return poll_shared();
    } catch (const std::exception& e) {
        if (!_tp.job_failed()) {
            const char* who = t_progress_of == this ? "progress thread" : "a polling thread";
            _tp.fail_job("rank " + std::to_string(_rank) + " (" + who + "): " + e.what());
        }
        throw;
    }
}

std::size_t context_impl::poll_shared() {
    std::size_t n = 0;
    {
        std::unique_lock lock(_poll_mutex, std::try_to_lock);
        if (lock.owns_lock()) {
            n = poll_locked();
        } else if (_tp.job_failed()) [[unlikely]] {
            // Another thread is polling: still report a failed job, as every poll does.
            throw error(errc::aborted,
                        "rank " + std::to_string(_rank) + ": job aborted: " + _tp.failure_reason());
        }
    }
    if (_work_ready.load(std::memory_order_acquire)) n += run_work();
    return n;
}

// Outside the poll lock: several threads of the rank may run work units at once.
std::size_t context_impl::run_work() {
    if (!_work_fn) return 0;
    std::shared_lock lock(_work_mutex);
    frame_scope scope(this, 0);
    return _work_fn();
}

void context_impl::reject(int source, const char* why) noexcept {
    bump(_bad);
    if (_bad.load(std::memory_order_relaxed) <= 10) {
        std::fprintf(stderr, "am: rank %d: dropped an invalid message from rank %d: %s\n", _rank,
                     source, why);
    }
}

void context_impl::deliver(int source, unsigned lane, std::byte* msg, std::size_t len) {
    const incoming_limits lim{_table.count(), _table.signatures(), _max_medium, _own_segment};
    incoming in;
    if (const char* why = check_incoming(msg, len, source, lim, in)) [[unlikely]]
        return reject(source, why);
    handler_counters& ctr = _table.counters(in.handler);
    if (in.kind != category::short_am) [[unlikely]] {
        // A long payload that travelled inline goes into the segment at its offset first.
        if (in.inline_bytes != nullptr && in.length != 0) {
            std::memcpy(in.payload, in.inline_bytes, in.length);
        }
        bump(ctr.received_bytes, in.length);
    }
    bump(ctr.received);
    token t(this, source, static_cast<detail::lane>(lane));
    frame_scope scope(this, lane);
    const handler_hot& h = _table.hot(in.handler);
    h.fn(h.obj, t, reinterpret_cast<const std::uint64_t*>(msg + sizeof(wire_header)), in.payload,
         in.length);
}

// ------------------------------------------------------------------------------ collectives

void context_impl::idle(unsigned& backoff) {
    util::backoff(backoff, _tp.spin_limit());
}

void context_impl::barrier() {
    if (in_handler()) {
        fail(errc::bad_context, "am::context::barrier", _rank, "called from a handler");
    }
    check_tables();
}

void context_impl::allgather(transport::coll kind, const void* in, void* out, std::size_t bytes,
                             const char* call) {
    if (in_handler()) fail(errc::bad_context, call, _rank, "called from a handler");
    if (bytes > _tp.max_gather_bytes()) {
        fail(errc::too_large, call, _rank,
             std::to_string(bytes) + " bytes per rank exceed the bootstrap limit of " +
                 std::to_string(_tp.max_gather_bytes()));
    }
    _tp.allgather(kind, in, out, bytes, [this] { return poll(); }, {});
}

void context_impl::allreduce_sum(transport::coll kind, const std::uint64_t* in, std::uint64_t* out,
                                 std::size_t n, const transport::idle_fn& idle, const char* call) {
    if (in_handler()) fail(errc::bad_context, call, _rank, "called from a handler");
    if (n > transport::transport::max_reduce_words) {
        fail(errc::too_large, call, _rank,
             std::to_string(n) + " words exceed the reduction limit of " +
                 std::to_string(transport::transport::max_reduce_words));
    }
    _tp.allreduce_sum(kind, in, out, n, idle);
}

void context_impl::check_tables() {
    struct digest {
        std::uint64_t count, hash;
    };
    const std::uint32_t n = _table.count();
    const digest mine{n, _table.digest(n)};
    std::vector<digest> all(static_cast<std::size_t>(_size));
    bool same = true;
    std::uint64_t most = 0;
    // Seal before any handler can run during the exchange: a peer that has seen the same
    // digests (this rank's among them) may already send with the new handlers, and a handler
    // run here (by this wait's polls or a progress thread) may answer with them. On a mismatch
    // the seal is taken back and the job fails with the report.
    const std::uint32_t before = _sealed.load(std::memory_order_relaxed);
    _sealed.store(n, std::memory_order_relaxed);
    auto check = [&] {
        for (const digest& d : all) {
            same = same && d.count == all[0].count && d.hash == all[0].hash;
            most = d.count > most ? d.count : most;
        }
        if (!same) _sealed.store(before, std::memory_order_relaxed);
    };
    _tp.allgather(
        transport::coll::handshake, &mine, all.data(), sizeof mine, [this] { return poll(); },
        check);
    if (!same) report_mismatch(static_cast<std::uint32_t>(most));
}

void context_impl::report_mismatch(std::uint32_t max_count) {
    constexpr std::size_t width = 240;  // of each printed entry
    for (std::uint32_t i = 0; i < max_count; ++i) {
        const std::vector<entry_label> labels = gather_labels(i);
        for (int r = 1; r < _size; ++r) {
            if (labels[r].digest == labels[0].digest) continue;
            // Entries count from the program's first handler; the library's own come first.
            const std::string entry = i >= _builtin ? "entry " + std::to_string(i - _builtin) +
                                                          " of the program's handlers (table "
                                                          "index " +
                                                          std::to_string(i) + ")"
                                                    : "library entry " + std::to_string(i);
            const auto [first, other] = around_difference(labels[0].text, labels[r].text, width);
            fail(errc::handler_mismatch, "am::context::barrier", _rank,
                 "handler tables differ at " + entry + ": rank 0 registered " + first + ", rank " +
                     std::to_string(r) + " registered " + other);
        }
    }
    fail(errc::handler_mismatch, "am::context::barrier", _rank, "handler tables differ");
}

// Collective. The labels travel in pieces that fit the transport's gather limit; past the
// first piece only when the entry differs somewhere, so a report can show where two labels
// differ however long their common part is.
std::vector<context_impl::entry_label> context_impl::gather_labels(std::uint32_t i) {
    constexpr std::size_t piece_bytes = 240, max_label = 16 * 1024;
    struct piece {
        std::uint64_t digest, length;
        char text[piece_bytes];
    };
    std::string mine = "(nothing)";
    std::uint64_t digest = 0;
    if (i < _table.count()) {
        mine = handler_label(_table.cold(i));
        digest = _table.cold(i).digest;
    }
    if (mine.size() > max_label) mine.resize(max_label);
    std::vector<piece> all(static_cast<std::size_t>(_size));
    std::vector<entry_label> labels(static_cast<std::size_t>(_size));
    std::uint64_t longest = 0;
    bool differ = false;
    for (std::size_t at = 0; at == 0 || (differ && at < longest); at += piece_bytes) {
        piece p{digest, mine.size(), {}};
        if (at < mine.size()) mine.copy(p.text, piece_bytes, at);
        _tp.allgather(transport::coll::handshake_report, &p, all.data(), sizeof p,
                      [this] { return poll(); }, {});
        for (std::size_t r = 0; r < all.size(); ++r) {
            labels[r].digest = all[r].digest;
            differ = differ || all[r].digest != all[0].digest;
            longest = std::max(longest, all[r].length);
            if (at < all[r].length) {
                labels[r].text.append(all[r].text,
                                      std::min<std::size_t>(piece_bytes, all[r].length - at));
            }
        }
    }
    return labels;
}

void context_impl::quiesce(transport::coll kind) {
    struct counts {
        std::uint64_t sent, received, pending;
    };
    std::uint64_t last_sent = ~0ull, last_received = ~0ull;
    std::vector<counts> all(static_cast<std::size_t>(_size));
    for (;;) {
        // Handle what has arrived and flush what is queued before counting: the allgather
        // below only polls while it waits, and the last rank to arrive (or a single rank)
        // does not wait at all.
        unsigned backoff = 0;
        for (;;) {
            const std::size_t handled = poll();
            if (handled == 0 && _pending_total.load() == 0) break;
            if (handled == 0) util::backoff(backoff, _tp.spin_limit());
        }
        const counts mine{total_sent(), total_received(), _pending_total.load()};
        _tp.allgather(kind, &mine, all.data(), sizeof mine, [this] { return poll(); }, {});
        counts sum{0, 0, 0};
        for (const counts& c : all) {
            sum.sent += c.sent, sum.received += c.received, sum.pending += c.pending;
        }
        // Two identical rounds in which everything sent was received: nothing is in flight and
        // no handler ran in between (Mattern's four-counter argument).
        if (sum.pending == 0 && sum.sent == sum.received && sum.sent == last_sent &&
            sum.received == last_received) {
            return;
        }
        last_sent = sum.sent;
        last_received = sum.received;
    }
}

// --------------------------------------------------------------------------- progress thread

void context_impl::start_progress_thread() {
    // Two threads per rank from now on: spin only if twice the ranks fit the cores.
    if (_tp.spin_limit() != 0) _tp.set_spin_limit(util::spin_rounds_for(2 * _size));
    _locking = true;
    _fast = false;
    update_slow_path();
    _progress = std::thread([this] { progress_loop(); });
}

void context_impl::stop_progress_thread() noexcept {
    if (!_progress.joinable()) return;
    _stop.store(true, std::memory_order_release);
    _progress.join();
}

void context_impl::progress_loop() noexcept {
    t_progress_of = this;
    unsigned backoff = 0;
    constexpr unsigned cap = util::yield_rounds + 40;  // sleep at most ~50 µs between polls
    while (!_stop.load(std::memory_order_acquire)) {
        try {
            if (poll() != 0) {
                backoff = 0;
            } else {
                util::backoff(backoff);
                if (backoff > cap) backoff = cap;
            }
        } catch (const std::exception&) {
            return;  // poll() has failed the job
        }
    }
}

// ---------------------------------------------------------------------------------- stats

void context_impl::attach_layer(const core::key& k, core::layer& l) {
    if (find_layer(k) != nullptr || _nlayers == core::max_layers) {
        fail(errc::invalid_argument, "am::core::attach", _rank,
             std::string("cannot attach the ") + k.name + " layer (" +
                 (_nlayers == core::max_layers
                      ? "all " + std::to_string(core::max_layers) + " layer slots are taken)"
                      : "attached already)"));
    }
    _layers[_nlayers++] = {&k, &l};
}

am::stats context_impl::snapshot() const {
    auto get = [](const std::atomic<std::uint64_t>& a) {
        return a.load(std::memory_order_relaxed);
    };
    am::stats s;
    s.rank = _rank;
    s.replies_sent = get(_replies);
    s.credit_stalls = get(_stalls);
    s.queued_from_handlers = get(_queued);
    s.bad_headers = get(_bad);
    s.library_handlers = _builtin;
    const std::uint32_t n = _table.count();
    for (std::uint32_t i = 0; i < n; ++i) {
        const handler_counters& c = _table.counters(i);
        handler_stats h{_table.cold(i).name, get(c.sent), get(c.sent_bytes), get(c.received),
                        get(c.received_bytes)};
        s.messages_sent += h.sent;
        s.bytes_sent += h.sent_bytes;
        s.messages_received += h.received;
        s.bytes_received += h.received_bytes;
        s.handlers.push_back(std::move(h));
    }
    return s;
}

}  // namespace am::detail
