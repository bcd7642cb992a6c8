// SPDX-License-Identifier: MIT
// The tracer: binary records per thread while the program runs, JSON once at the end.
#include "trace.hpp"

#include "context_common.hpp"

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>

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

tracer::tracer(int rank, std::thread::id home, std::uint64_t base)
    : _rank(rank),
      _home(home),
      _base(base),
      _serial(next_serial.fetch_add(1, std::memory_order_relaxed)) {}

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
    b.recs.reserve(4096);
    return &b;
}

void tracer::record(const trace_rec& r) noexcept {
    trace_cache& c = t_trace_cache;
    thread_buf* b = static_cast<thread_buf*>(c.buf);
    if (c.serial != _serial) [[unlikely]] {
        try {
            b = add_buffer();
        } catch (...) {
            _overflow = true;
            return;
        }
        c.serial = _serial;
        c.buf = b;
    }
    try {
        b->recs.push_back(r);
    } catch (...) {
        _overflow = true;  // out of memory: the record is dropped, the program goes on
    }
}

std::size_t tracer::records() const {
    std::lock_guard lock(_mutex);
    std::size_t n = 0;
    for (const thread_buf& b : _bufs) n += b.recs.size();
    return n;
}

std::string tracer::events_json(
    const std::function<std::string(std::uint32_t)>& handler_name) const {
    std::lock_guard lock(_mutex);
    std::string out;
    const std::string pid = std::to_string(_rank);
    out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
           ",\"args\":{\"name\":\"rank " + pid + "\"}},\n";
    out += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
           ",\"args\":{\"sort_index\":" + pid + "}},\n";
    std::vector<std::string> names;  // by handler index, filled as met
    std::uint64_t async_ids = 0;     // oam_run, tam_quantum: a begin/end pair each
    auto name_of = [&](std::uint32_t i) -> const std::string& {
        if (names.size() <= i) names.resize(i + 1);
        if (names[i].empty()) {
            std::string n;
            append_escaped(n, handler_name(i));
            names[i] = n.empty() ? "handler " + std::to_string(i) : n;
        }
        return names[i];
    };
    for (const thread_buf& b : _bufs) {
        const std::string tid = std::to_string(b.tid);
        out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + tid +
               ",\"args\":{\"name\":\"";
        append_escaped(out, b.name);
        out += "\"}},\n";
        for (const trace_rec& r : b.recs) {
            out += "{\"name\":\"";
            std::string args;
            switch (r.kind) {
                case trace_kind::handler:
                    out += name_of(r.a);
                    args = "\"handler\":" + std::to_string(r.a) +
                           ",\"source\":" + std::to_string(r.b) +
                           ",\"bytes\":" + std::to_string(r.c);
                    break;
                case trace_kind::send:
                    out += "send " + name_of(r.a);
                    args = "\"handler\":" + std::to_string(r.a) +
                           ",\"dest\":" + std::to_string(r.b) + ",\"bytes\":" + std::to_string(r.c);
                    break;
                case trace_kind::wait:
                    out += std::string("wait: ") + cause_name(r.a);
                    args = std::string("\"cause\":\"") + cause_name(r.a) + "\"";
                    break;
                case trace_kind::epoch:
                    out += "epoch " + std::to_string(r.a);
                    args = "\"epoch\":" + std::to_string(r.a) +
                           ",\"rounds\":" + std::to_string(r.b) +
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
                    args = "\"window\":" + std::to_string(r.a) +
                           ",\"segments\":" + std::to_string(r.b) +
                           ",\"bytes\":" + std::to_string(r.c);
                    break;
                case trace_kind::window_fence:
                    out += "window fence";
                    args = "\"window\":" + std::to_string(r.a);
                    break;
                case trace_kind::tam_quantum:
                    out += "quantum";
                    args = "\"codeblock\":" + std::to_string(r.a) +
                           ",\"threads\":" + std::to_string(r.b) +
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
            const bool instant = r.kind == trace_kind::send || r.kind == trace_kind::oam_promote;
            if (r.kind == trace_kind::oam_run || r.kind == trace_kind::tam_quantum) {
                // An optimistic handler that blocks, or a quantum whose frame runs again after
                // other work, ends after other events of its thread began: an async pair (a
                // row of its own in the viewer), not a nesting "X".
                const std::string id =
                    ",\"id\":\"" + pid + "." + std::to_string(++async_ids) + "\"";
                const std::size_t line = out.rfind("{\"name\":\"");
                std::string end_line = out.substr(line);
                out += "\",\"ph\":\"b\"" + id;
                append_us(out, "ts", static_cast<std::int64_t>(r.start - _base));
                out += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"args\":{" + args + "}},\n";
                out += end_line + "\",\"ph\":\"e\"" + id;
                append_us(out, "ts", static_cast<std::int64_t>(r.end - _base));
                out += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"args\":{}},\n";
                continue;
            }
            out += instant ? "\",\"ph\":\"i\",\"s\":\"t\"" : "\",\"ph\":\"X\"";
            append_us(out, "ts", static_cast<std::int64_t>(r.start - _base));
            if (!instant) append_us(out, "dur", static_cast<std::int64_t>(r.end - r.start));
            out += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"args\":{" + args + "}},\n";
        }
    }
    if (_overflow) {
        std::fprintf(stderr, "am: rank %d: the trace dropped records (out of memory)\n", _rank);
    }
    return out;
}

}  // namespace am::detail
