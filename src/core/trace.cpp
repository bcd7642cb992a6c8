// SPDX-License-Identifier: MIT
// The tracer: binary records per thread while the program runs (at most a cap per rank), JSON a
// piece at a time at the end.
#include "trace.hpp"

#include "context_common.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <utility>

namespace am::detail {
namespace {

// Tracers are told apart by a number never reused (an address can be, once one is freed).
std::atomic<std::uint64_t> next_serial{1};

// The calling thread's buffer in the tracer it last recorded into: one compare on a hit. A
// thread that goes back to a tracer after recording into another gets a second track there.
struct trace_cache {
    std::uint64_t serial = 0;
    void* buf = nullptr;
};
thread_local trace_cache t_trace_cache;

const char* kind_name(trace_kind k) noexcept {
    switch (k) {
        case trace_kind::handler:
            return "handler";
        case trace_kind::send:
            return "send";
        case trace_kind::wait:
            return "wait";
        case trace_kind::epoch:
        case trace_kind::round:
            return "epoch";
        case trace_kind::put:
        case trace_kind::get:
            return "rma";
        case trace_kind::rpc:
            return "rpc";
        case trace_kind::oam_run:
        case trace_kind::oam_promote:
            return "oam";
        case trace_kind::window_am:
        case trace_kind::window_fence:
            return "window";
        case trace_kind::tam_quantum:
        case trace_kind::tam_wave:
            return "tam";
    }
    return "other";
}

const char* cause_name(std::uint32_t c) noexcept {
    switch (static_cast<trace_cause>(c)) {
        case trace_cause::credits:
            return "credits";
        case trace_cause::barrier:
            return "barrier";
        case trace_cause::quiesce:
            return "quiesce";
        case trace_cause::epoch_end:
            return "epoch end";
        case trace_cause::reply:
            return "reply";
        case trace_cause::future:
            return "future";
    }
    return "other";
}

void append_escaped(std::string& out, const std::string& s) {
    for (const char ch : s) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (static_cast<unsigned char>(ch) < 0x20) {
            char u[8];
            std::snprintf(u, sizeof u, "\\u%04x", static_cast<unsigned>(ch));
            out += u;
        } else {
            out += ch;
        }
    }
}

// Microseconds with nanosecond digits, as the format counts time (negative only for a clock
// of another host that lags rank 0's).
void append_us(std::string& out, const char* key, std::int64_t ns) {
    char b[64];
    const std::uint64_t mag =
        ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    std::snprintf(b, sizeof b, ",\"%s\":%s%" PRIu64 ".%03" PRIu64, key, ns < 0 ? "-" : "",
                  mag / 1000, mag % 1000);
    out += b;
}

}  // namespace

std::uint64_t trace_now() noexcept {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
}

void trace_record(tracer* t, trace_kind k, std::uint64_t start, std::uint64_t end, std::uint32_t a,
                  std::uint64_t b, std::uint64_t c) noexcept {
    t->record(trace_rec{start, end, k, a, b, c});
}

void trace_span::finish() noexcept {
    trace_record(_t, _k, _start, trace_now(), _a, _b, _c);
}

tracer::tracer(int rank, std::thread::id home, std::uint64_t base, std::size_t max_events)
    : _rank(rank),
      _home(home),
      _base(base),
      _serial(next_serial.fetch_add(1, std::memory_order_relaxed)),
      _max(max_events) {}

tracer::thread_buf* tracer::add_buffer() {
    std::lock_guard lock(_mutex);
    thread_buf& b = _bufs.emplace_back();
    b.tid = _rank * 1000 + static_cast<int>(_bufs.size());  // unique in the file; never 0
    if (std::this_thread::get_id() == _home) {
        b.name = "rank " + std::to_string(_rank);
    } else if (t_progress_of != nullptr) {
        b.name = "rank " + std::to_string(_rank) + " progress";
    } else {
        b.name = "rank " + std::to_string(_rank) + " thread " + std::to_string(_bufs.size() - 1);
    }
    b.recs.reserve(std::min<std::size_t>(4096, _max));
    return &b;
}

// Over the cap: the first records of the rank are kept, later ones counted. The warning comes
// when it happens, once, so that a job that fails later still said it.
void tracer::drop() noexcept {
    _dropped.fetch_add(1, std::memory_order_relaxed);
    if (_warned.exchange(true, std::memory_order_relaxed)) return;
    std::fprintf(stderr,
                 "am: warning: rank %d: the trace reached its cap of %zu events per rank "
                 "(AM_TRACE_MAX_EVENTS, config::trace_max_events); this rank's later events are "
                 "dropped, and the file's otherData says how many\n",
                 _rank, _max);
}

void tracer::record(const trace_rec& r) noexcept {
    // One counter for all threads of the rank: the cap is per rank.
    if (_taken.fetch_add(1, std::memory_order_relaxed) >= _max) [[unlikely]] {
        return drop();
    }
    trace_cache& c = t_trace_cache;
    thread_buf* b = static_cast<thread_buf*>(c.buf);
    if (c.serial != _serial) [[unlikely]] {
        try {
            b = add_buffer();
        } catch (...) {
            _overflow.store(true, std::memory_order_relaxed);
            _dropped.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        c.serial = _serial;
        c.buf = b;
    }
    try {
        b->recs.push_back(r);
    } catch (...) {
        // Out of memory: the record is dropped, the program goes on.
        _overflow.store(true, std::memory_order_relaxed);
        _dropped.fetch_add(1, std::memory_order_relaxed);
    }
}

tracer::json_cursor::json_cursor(const tracer& t,
                                 std::function<std::string(std::uint32_t)> handler_name)
    : _t(t), _handler_name(std::move(handler_name)), _pid(std::to_string(t._rank)) {}

const std::string& tracer::json_cursor::name_of(std::uint32_t i) {
    if (_names.size() <= i) _names.resize(i + 1);
    if (_names[i].empty()) {
        std::string n;
        append_escaped(n, _handler_name(i));
        _names[i] = n.empty() ? "handler " + std::to_string(i) : n;
    }
    return _names[i];
}

bool tracer::json_cursor::fill(std::string& out, std::size_t want) {
    if (_done) return true;
    std::lock_guard lock(_t._mutex);
    if (!_started) {
        _started = true;
        out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + _pid +
               ",\"args\":{\"name\":\"rank " + _pid + "\"}},\n";
        out += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + _pid +
               ",\"args\":{\"sort_index\":" + _pid + "}},\n";
    }
    while (out.size() < want && _buf < _t._bufs.size()) {
        const thread_buf& b = _t._bufs[_buf];
        const std::string tid = std::to_string(b.tid);
        if (!_named) {
            _named = true;
            out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + _pid + ",\"tid\":" + tid +
                   ",\"args\":{\"name\":\"";
            append_escaped(out, b.name);
            out += "\"}},\n";
        }
        for (; _rec < b.recs.size() && out.size() < want; ++_rec) {
            append_record(out, b.recs[_rec], tid);
        }
        if (_rec == b.recs.size()) ++_buf, _rec = 0, _named = false;
    }
    if (_buf < _t._bufs.size()) return false;
    // Every event ends with ",\n", the last one without: it was appended by this call.
    if (out.size() >= 2) out.resize(out.size() - 2);
    _done = true;
    if (_t._overflow.load(std::memory_order_relaxed)) {
        std::fprintf(stderr, "am: rank %d: the trace dropped records (out of memory)\n", _t._rank);
    }
    return true;
}

void tracer::json_cursor::append_record(std::string& out, const trace_rec& r,
                                        const std::string& tid) {
    const std::string& pid = _pid;
    const std::size_t line = out.size();
    out += "{\"name\":\"";
    std::string args;
    switch (r.kind) {
        case trace_kind::handler:
            out += name_of(r.a);
            args = "\"handler\":" + std::to_string(r.a) + ",\"source\":" + std::to_string(r.b) +
                   ",\"bytes\":" + std::to_string(r.c);
            break;
        case trace_kind::send:
            out += "send " + name_of(r.a);
            args = "\"handler\":" + std::to_string(r.a) + ",\"dest\":" + std::to_string(r.b) +
                   ",\"bytes\":" + std::to_string(r.c);
            break;
        case trace_kind::wait:
            out += std::string("wait: ") + cause_name(r.a);
            args = std::string("\"cause\":\"") + cause_name(r.a) + "\"";
            break;
        case trace_kind::epoch:
            out += "epoch " + std::to_string(r.a);
            args = "\"epoch\":" + std::to_string(r.a) + ",\"rounds\":" + std::to_string(r.b) +
                   ",\"sent\":" + std::to_string(r.c);
            break;
        case trace_kind::round:
            out += "detector round";
            args = "\"epoch\":" + std::to_string(r.a) + ",\"round\":" + std::to_string(r.b);
            break;
        case trace_kind::put:
        case trace_kind::get:
            out += r.kind == trace_kind::put ? "put" : "get";
            args = "\"rank\":" + std::to_string(r.b) + ",\"bytes\":" + std::to_string(r.c);
            break;
        case trace_kind::rpc:
            out += "rpc";
            args = "\"dest\":" + std::to_string(r.b);
            break;
        case trace_kind::oam_run:
        case trace_kind::oam_promote: {
            // r.c: a name the optimistic-handler layer keeps for the process's life.
            const char* n = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(r.c));
            std::string esc;
            append_escaped(esc, n != nullptr ? n : "optimistic handler");
            out += r.kind == trace_kind::oam_promote ? "became a thread: " + esc : esc;
            args = "\"source\":" + std::to_string(r.b);
            if (r.kind == trace_kind::oam_run) {
                args += std::string(",\"blocked\":") + (r.a != 0 ? "true" : "false");
            }
            break;
        }
        case trace_kind::window_am:
            out += "window AM";
            args = "\"window\":" + std::to_string(r.a) + ",\"segments\":" + std::to_string(r.b) +
                   ",\"bytes\":" + std::to_string(r.c);
            break;
        case trace_kind::window_fence:
            out += "window fence";
            args = "\"window\":" + std::to_string(r.a);
            break;
        case trace_kind::tam_quantum:
            out += "quantum";
            args = "\"codeblock\":" + std::to_string(r.a) + ",\"threads\":" + std::to_string(r.b) +
                   ",\"frame\":" + std::to_string(r.c);
            break;
        case trace_kind::tam_wave:
            out += "termination wave " + std::to_string(r.a);
            args = "\"wave\":" + std::to_string(r.a) + ",\"sent\":" + std::to_string(r.b) +
                   ",\"handled\":" + std::to_string(r.c);
            break;
    }
    out += "\",\"cat\":\"";
    out += kind_name(r.kind);
    const std::uint64_t base = _t._base;
    const bool instant = r.kind == trace_kind::send || r.kind == trace_kind::oam_promote;
    if (r.kind == trace_kind::oam_run || r.kind == trace_kind::tam_quantum) {
        // An optimistic handler that blocks, or a quantum whose frame runs again after other
        // work, ends after other events of its thread began: an async pair (a row of its own
        // in the viewer), not a nesting "X".
        const std::string id = ",\"id\":\"" + pid + "." + std::to_string(++_async_ids) + "\"";
        const std::string end_line = out.substr(line);
        out += "\",\"ph\":\"b\"" + id;
        append_us(out, "ts", static_cast<std::int64_t>(r.start - base));
        out += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"args\":{" + args + "}},\n";
        out += end_line + "\",\"ph\":\"e\"" + id;
        append_us(out, "ts", static_cast<std::int64_t>(r.end - base));
        out += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"args\":{}},\n";
        return;
    }
    out += instant ? "\",\"ph\":\"i\",\"s\":\"t\"" : "\",\"ph\":\"X\"";
    append_us(out, "ts", static_cast<std::int64_t>(r.start - base));
    if (!instant) append_us(out, "dur", static_cast<std::int64_t>(r.end - r.start));
    out += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"args\":{" + args + "}},\n";
}

}  // namespace am::detail
