// SPDX-License-Identifier: MIT
// context_impl: tracing — the traced dispatch, start and stop, and the gathering of every
// rank's records to rank 0, which writes the file (docs/observability.md).
#include "context_common.hpp"

#include "../util/backoff.hpp"
#include "../util/maybe_lock.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace am::detail {

// The poll while tracing: each delivery goes through this sink, which times it and records a
// handler run when the handler's counter moved (a rejected message runs nothing). The untraced
// poll pays one test of `_trace` per poll and nothing per message.
struct context_impl::traced_sink final : transport::message_sink {
    context_impl& c;
    tracer* t;
    traced_sink(context_impl& ctx, tracer* tr) : c(ctx), t(tr) {}
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) override {
        wire_header h{};
        if (len >= sizeof h) std::memcpy(&h, msg, sizeof h);
        if (h.handler >= c._table.count()) return c.deliver_inline(source, lane, msg, len);
        handler_counters& ctr = c._table.counters(h.handler);
        const std::uint64_t runs = ctr.received.load(std::memory_order_relaxed);
        const std::uint64_t bytes = ctr.received_bytes.load(std::memory_order_relaxed);
        const std::uint64_t start = trace_now();
        struct at_end {  // records also a handler that throws
            traced_sink& s;
            handler_counters& ctr;
            std::uint64_t runs, bytes, start;
            std::uint32_t handler;
            int source;
            ~at_end() {
                if (ctr.received.load(std::memory_order_relaxed) == runs) return;  // rejected
                trace_record(s.t, trace_kind::handler, start, trace_now(), handler,
                             static_cast<std::uint64_t>(source),
                             ctr.received_bytes.load(std::memory_order_relaxed) - bytes);
            }
        } end{*this, ctr, runs, bytes, start, h.handler, source};
        c.deliver_inline(source, lane, msg, len);
    }
};

void context_impl::trace_sent(const send_desc& d) const noexcept {
    tracer* t = trace();
    if (t == nullptr) return;  // re-read: the hot path keeps no register for the pointer
    const std::uint64_t now = trace_now();
    trace_record(t, trace_kind::send, now, now, d.handler, static_cast<std::uint64_t>(d.dest),
                 d.len);
}

std::size_t context_impl::poll_traced() {
    if (_pending_total.load(std::memory_order_relaxed) != 0) flush_pending();
    traced_sink sink(*this, trace());
    std::size_t n = _ring != nullptr ? _ring->poll_into(sink) : _tp.poll(sink);
    if (_deferred_ready.load(std::memory_order_relaxed)) [[unlikely]]
        n += run_deferred();
    return n;
}

void context_impl::register_trace_handler() {
    _trace_handler = add_handler(
        handler_desc{category::medium, 1, &trace_chunk, this, nullptr, "am::trace::chunk"});
}

// Rank 0 during trace_stop: a piece of rank t.source()'s events at byte offset args[0].
void context_impl::trace_chunk(void* obj, token& t, const std::uint64_t* args, std::byte* payload,
                               std::size_t len) {
    auto* self = static_cast<context_impl*>(obj);
    const auto src = static_cast<std::size_t>(t.source());
    if (self->_rank != 0 || src >= self->_trace_inbox.size()) return;  // not gathering
    std::string& text = self->_trace_inbox[src];
    if (text.size() < args[0] + len) text.resize(args[0] + len);
    std::memcpy(text.data() + args[0], payload, len);
    self->_trace_got[src].fetch_add(len, std::memory_order_release);
}

void context_impl::trace_start(std::string_view path, const char* call) {
    check_thread(call);
    if (in_handler()) fail(errc::bad_context, call, _rank, "called from a handler");
    if (trace() != nullptr) {
        fail(errc::bad_context, call, _rank,
             "tracing is already on (to " + _trace_path + "); call trace_stop first");
    }
    if (_trace_handler == ~0u) {
        fail(errc::bad_context, call, _rank, "this context cannot trace (create it with am::run)");
    }
    _trace_path = std::string(path);
    // Rank 0 opens the file now, so that a path it cannot write fails here on every rank and
    // not after the work, when the trace is written.
    // Rank 0's clock now is the trace's time zero on every rank: ranks on one host share the
    // clock; across hosts their clocks are not aligned (docs/observability.md).
    struct opening {
        std::int64_t err;
        std::uint64_t now;
    } mine{0, trace_now()};
    if (_rank == 0) {
        _trace_file = _trace_path.empty() ? nullptr : std::fopen(_trace_path.c_str(), "w");
        if (_trace_file == nullptr) mine.err = _trace_path.empty() ? EINVAL : errno;
    }
    std::vector<opening> all(static_cast<std::size_t>(_size));
    _tp.allgather(transport::coll::trace, &mine, all.data(), sizeof mine, [this] { return poll(); },
                  {});
    if (all[0].err != 0) {
        fail(errc::invalid_argument, call, _rank,
             "rank 0 cannot write the trace file '" + _trace_path +
                 "': " + std::strerror(static_cast<int>(all[0].err)));
    }
    _trace_base = all[0].now;
    _trace_owner = std::make_unique<tracer>(_rank, _home, _trace_base);
    exclusive([&] {
        util::maybe_lock lock(_send_mutex, _locking);
        _trace.store(_trace_owner.get(), std::memory_order_relaxed);
        access::set_trace(_front, _trace_owner.get());
        update_slow_path();
    });
    // Returns once every rank records: a message sent after this call is traced where it runs.
    std::uint64_t on = 1;
    std::vector<std::uint64_t> ons(static_cast<std::size_t>(_size));
    _tp.allgather(transport::coll::trace, &on, ons.data(), sizeof on, [this] { return poll(); },
                  {});
}

void context_impl::trace_stop(const char* call) {
    check_thread(call);
    if (in_handler()) fail(errc::bad_context, call, _rank, "called from a handler");
    tracer* t = trace();
    if (t == nullptr) return;
    // No handler runs and no send records on another thread while the pointer goes.
    exclusive([&] {
        util::maybe_lock lock(_send_mutex, _locking);
        _trace.store(nullptr, std::memory_order_relaxed);
        access::set_trace(_front, nullptr);
        update_slow_path();
    });
    const std::string mine =
        t->events_json([this](std::uint32_t i) { return _table.cold(i).name; });
    trace_gather(mine, call);
}

// Every rank's events travel to rank 0 as medium messages (any transport; no shared file
// system), their sizes first so that rank 0 knows when it has everything.
void context_impl::trace_gather(const std::string& mine, const char* call) {
    if (_rank == 0) {  // before the collective: pieces may arrive while it polls
        _trace_inbox.assign(static_cast<std::size_t>(_size), std::string());
        _trace_got =
            std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(_size));
    }
    const std::uint64_t size = mine.size();
    std::vector<std::uint64_t> sizes(static_cast<std::size_t>(_size));
    _tp.allgather(transport::coll::trace, &size, sizes.data(), sizeof size,
                  [this] { return poll(); }, {});
    if (_rank != 0) {
        for (std::uint64_t at = 0; at < size; at += _max_medium) {
            const std::size_t len = std::min<std::size_t>(_max_medium, size - at);
            const send_desc d{0,
                              lane::request,
                              category::medium,
                              1,
                              _trace_handler,
                              &at,
                              reinterpret_cast<const std::byte*>(mine.data() + at),
                              len,
                              0};
            send(d, false);
        }
        return;
    }
    _trace_inbox[0] = mine;
    _trace_got[0].store(size, std::memory_order_relaxed);
    unsigned backoff = 0;
    for (std::size_t r = 1; r < sizes.size(); ++r) {
        while (_trace_got[r].load(std::memory_order_acquire) < sizes[r]) {
            if (poll() != 0) {
                backoff = 0;
            } else {
                util::backoff(backoff, _tp.spin_limit());
            }
        }
    }
    std::FILE* f = _trace_file;
    _trace_file = nullptr;
    std::string head =
        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"ranks\":" + std::to_string(_size) +
        ",\"clock_base_ns\":" + std::to_string(_trace_base) + "},\"traceEvents\":[\n";
    bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
    for (std::size_t r = 0; r < _trace_inbox.size(); ++r) {
        std::string& text = _trace_inbox[r];
        // Each event ends with ",\n": the last one of the file without the comma.
        if (r + 1 == _trace_inbox.size() && text.size() >= 2) text.resize(text.size() - 2);
        ok = ok && std::fwrite(text.data(), 1, text.size(), f) == text.size();
        std::string().swap(text);
    }
    ok = ok && std::fputs("\n]}\n", f) >= 0;
    ok = (std::fclose(f) == 0) && ok;
    _trace_inbox.clear();
    if (!ok) {
        fail(errc::invalid_argument, call, _rank,
             "could not write the trace file '" + _trace_path + "': " + std::strerror(errno));
    }
}

}  // namespace am::detail
