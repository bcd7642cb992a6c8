// SPDX-License-Identifier: MIT
// context_impl: sending — validation, the short-message hot path, flow control (queues for
// messages that find no room) and the counters of what was sent.
#include "context_common.hpp"

#include "../util/assert.hpp"
#include "../util/maybe_lock.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <string>

namespace am::detail {

using util::maybe_lock;

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

// Long payloads to peers off the node on the ucx transport: a one-sided put straight into the
// target's segment (zero-copy where the network does it), waited for because the caller may
// reuse the source when the call returns, then a plain long message, which the receiver treats
// as one from a rank that maps its segment. Smaller payloads travel inline: one message costs
// less than a put, its completion and a message.
bool context_impl::put_long_payload(const send_desc& d) {
    constexpr std::size_t one_sided_long_bytes = std::size_t{32} << 10;
    if (d.len < one_sided_long_bytes) return false;
    transport::one_sided* os = _tp.remote_memory();
    if (os == nullptr || !os->reaches(d.dest) || in_handler()) return false;
    // Set by a poll, perhaps the progress thread's; owned by the waiter and the completion
    // together, so a wait that throws (the job failed) leaves the completion a live flag.
    struct flag {
        std::atomic<bool> done{false};
        std::atomic<int> owners{2};
        static void release(flag* f) noexcept {
            if (f->owners.fetch_sub(1, std::memory_order_acq_rel) == 1) delete f;
        }
    };
    auto* f = new flag;
    os->put(
        d.dest, d.offset, d.payload, d.len,
        [](void* arg, std::uint64_t) {
            auto* g = static_cast<flag*>(arg);
            g->done.store(true, std::memory_order_release);
            flag::release(g);
        },
        f);
    const std::unique_ptr<flag, void (*)(flag*)> mine(f, flag::release);
    unsigned backoff = 0;
    while (!f->done.load(std::memory_order_acquire)) poll_or_idle(backoff);
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
    // Bit 62: no fast path; bit 61: tracing (the general path records the send).
    const std::uint64_t off =
        (_fast ? 0 : std::uint64_t{1} << 62) | (trace() != nullptr ? std::uint64_t{1} << 61 : 0);
    const std::uint64_t pending = _pending_total.load(std::memory_order_relaxed);
    _slow_path.store(off | pending, std::memory_order_relaxed);
    _poll_slow.store(pending != 0 || trace() != nullptr, std::memory_order_relaxed);
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
            AM_ASSERT(_pending_total.load(std::memory_order_relaxed) != 0,
                      "a queued message is counted in _pending_total");
            --_pending_total;
        }
        it = queue.empty() ? _pending.erase(it) : std::next(it);
    }
    AM_ASSERT(!_pending.empty() || _pending_total.load(std::memory_order_relaxed) == 0,
              "no queue holds a message, so none is counted");
    update_slow_path();
}

void context_impl::count_sent(const send_desc& d) noexcept {
    handler_counters& c = _table.counters(d.handler);
    bump(c.sent);
    bump(c.sent_bytes, d.len);
    // Tracing: one test per send; the record is made out of line (context_trace.cpp).
    if (_trace.load(std::memory_order_relaxed) != nullptr) [[unlikely]]
        trace_sent(d);
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

void context_impl::send(const send_desc& d, bool reply) {
    check_thread(reply ? "am::token::reply" : "am::context::request");
    validate(d, reply);
    const bool inline_long =
        d.kind == category::long_am && !copy_long_payload(d) && !put_long_payload(d);
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
    send_blocked(d, bytes, inline_long);
}

// The short-message fast path on a transport other than the rings (mpi): send_short's checks
// passed, so straight to the transport's reserve and commit, skipping the general path's
// descriptor and validation. Out of line so that the ring path keeps its registers.
template <unsigned N, unsigned Lane>
void context_impl::send_short_other(int dest, std::uint32_t handler, const std::uint64_t* args,
                                    std::uintptr_t frame) {
    constexpr std::size_t bytes = fixed_bytes(N);
    std::byte* p = _tp.try_reserve(dest, Lane, bytes);
    if (p == nullptr) [[unlikely]]
        return send_short_slow(dest, Lane, handler, N, args);
    const std::uint64_t header = _header_base | (std::uint64_t{N} << 24) | handler;
    std::memcpy(p, &header, 8);
    if constexpr (N != 0) std::memcpy(p + 8, args, 8 * N);
    _tp.commit(dest, Lane, p, bytes);
    bump(_table.counters(handler).sent);
    if (Lane == 0 && frame != frame_of(this, 0)) (void)poll_locked();  // not from a handler
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
    if (_ring == nullptr) [[unlikely]]
        return send_short_other<N, Lane>(dest, handler, args, frame);
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

}  // namespace am::detail
