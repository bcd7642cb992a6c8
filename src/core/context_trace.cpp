// SPDX-License-Identifier: MIT
// context_impl: tracing — the traced dispatch, start and stop, and the gathering of every
// rank's records to rank 0, which streams them into a temporary file next to the target and
// renames it into place once the whole trace is written (docs/observability.md).
#include "context_common.hpp"

#include "../util/maybe_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace am::detail {
namespace {

// Bytes of JSON rank 0 asks a rank for at a time, and writes at a time: what rank 0 holds of
// the trace's text (with up to as much again on the rank that sends it), whatever the size of
// the trace.
constexpr std::size_t trace_window_bytes = std::size_t{1} << 20;

// A file of its own next to `path` (same directory, so rename(2) moves it into place without
// copying), created with the permissions a new `path` would get. Null with errno on failure.
std::FILE* open_temp_next_to(const std::string& path, std::string& tmp) {
    static std::atomic<unsigned> serial{0};
    for (int attempt = 0; attempt < 64; ++attempt) {
        char suffix[64];
        std::snprintf(suffix, sizeof suffix, ".am-tmp.%ld.%llx", static_cast<long>(::getpid()),
                      static_cast<unsigned long long>(trace_now() ^
                                                      serial.fetch_add(1) * 0x9e3779b97f4a7c15ull));
        tmp = path + suffix;
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return nullptr;
        std::FILE* f = ::fdopen(fd, "w");
        if (f == nullptr) {
            const int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            errno = e;
        }
        return f;
    }
    errno = EEXIST;
    return nullptr;
}

// Where rank 0 writes a trace, decided at trace_start.
struct trace_target {
    int err = 0;          // 0 if the trace can be written at the end, else an errno
    std::string file;     // the path or, when it exists, what its symbolic links lead to
    bool direct = false;  // not a regular file: written in place
};

// Rank 0 at trace_start. Nothing is created or truncated: a job that fails before trace_stop
// leaves `path` as it was. An existing file must be writable, as when it was opened for writing
// here: the rename could replace a read-only one. The rename replaces the file a symbolic link
// leads to, not the link. A path that exists and is not a regular file (a FIFO, /dev/stdout)
// cannot be replaced by a rename: it is written in place.
trace_target check_trace_path(const std::string& path) {
    trace_target t{0, path, false};
    auto failed = [&t](int err) {
        t.err = err;
        return t;
    };
    if (path.empty()) return failed(EINVAL);
    if (char* real = ::realpath(path.c_str(), nullptr)) {
        t.file = real;
        std::free(real);
    } else if (path.front() != '/') {
        // Not there yet: absolute now, so that a chdir before trace_stop changes nothing.
        if (char* cwd = ::getcwd(nullptr, 0)) {
            t.file = std::string(cwd) + "/" + path;
            std::free(cwd);
        }
    }
    struct stat st {};
    const bool exists = ::stat(t.file.c_str(), &st) == 0;
    if (exists) {
        if (S_ISDIR(st.st_mode)) return failed(EISDIR);
        if (::access(t.file.c_str(), W_OK) != 0) return failed(errno);
        t.direct = !S_ISREG(st.st_mode);
        if (t.direct) return t;
    }
    std::string tmp;
    std::FILE* f = open_temp_next_to(t.file, tmp);
    if (f == nullptr) {
        // A writable file in a directory this process cannot create files in: written in place
        // (as before the temporary files; a failed job then leaves it truncated).
        if (exists && (errno == EACCES || errno == EPERM || errno == EROFS)) {
            t.direct = true;
            return t;
        }
        return failed(errno);
    }
    std::fclose(f);
    ::unlink(tmp.c_str());
    return t;
}

// The file up to its first event: the rank count, the clock, and what each rank dropped.
std::string trace_file_head(int size, std::uint64_t base, std::size_t max_events,
                            const std::vector<std::uint64_t>& drops) {
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, falsely) on "literal" +
    // std::string&&.
    std::uint64_t total = 0;
    std::string by_rank;
    for (const std::uint64_t d : drops) {
        total += d;
        if (!by_rank.empty()) by_rank += ',';
        by_rank += std::to_string(d);
    }
    std::string head = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"ranks\":";
    head += std::to_string(size);
    head += ",\"clock_base_ns\":";
    head += std::to_string(base);
    head += ",\"max_events_per_rank\":";
    head += std::to_string(max_events);
    head += ",\"dropped_events\":";
    head += std::to_string(total);
    head += ",\"dropped_events_by_rank\":[";
    head += by_rank;
    head += "]},\"traceEvents\":[\n";
    return head;
}

}  // namespace

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
        handler_desc{category::medium, 3, &trace_chunk, this, nullptr, "am::trace::chunk"});
}

// During trace_stop. On rank 0: a piece of a window of rank t.source()'s events, at byte
// args[0] of a window of args[1] bytes, the rank's last window if args[2]. On the other ranks:
// rank 0 asks for the next window (no payload).
void context_impl::trace_chunk(void* obj, token& t, const std::uint64_t* args, std::byte* payload,
                               std::size_t len) {
    auto* self = static_cast<context_impl*>(obj);
    if (self->_rank != 0) {
        self->_trace_pulls.fetch_add(1, std::memory_order_release);
        return;
    }
    if (t.source() != self->_trace_from.load(std::memory_order_acquire)) return;  // not asked
    const std::uint64_t at = args[0], total = args[1];
    if (total > self->_trace_window.size() || at > total || len > total - at) return;
    if (len != 0) std::memcpy(self->_trace_window.data() + at, payload, len);
    // The count last: once it reaches the window's length, no handler of the window touches
    // anything any more (rank 0 then resets the state for the next window).
    self->_trace_final.store(args[2] != 0, std::memory_order_relaxed);
    self->_trace_len.store(total, std::memory_order_release);
    self->_trace_got.fetch_add(len, std::memory_order_release);
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
    _trace_pulls.store(0, std::memory_order_relaxed);
    // Rank 0 checks now that it can write the file, so that a path it cannot write fails here
    // on every rank and not after the work. It creates nothing yet: the trace goes into a
    // temporary file at trace_stop, renamed into place once complete.
    // Rank 0's clock now is the trace's time zero on every rank: ranks on one host share the
    // clock; across hosts their clocks are not aligned (docs/observability.md).
    struct opening {
        std::int64_t err;
        std::uint64_t now;
    } mine{0, trace_now()};
    if (_rank == 0) {
        trace_target t = check_trace_path(_trace_path);
        mine.err = t.err;
        _trace_file = std::move(t.file);
        _trace_direct = t.direct;
    }
    std::vector<opening> all(static_cast<std::size_t>(_size));
    _tp.allgather(core_coll::trace, &mine, all.data(), sizeof mine, [this] { return poll(); }, {});
    if (all[0].err != 0) {
        fail(errc::invalid_argument, call, _rank,
             "rank 0 cannot write the trace file '" + _trace_path +
                 "': " + std::strerror(static_cast<int>(all[0].err)));
    }
    _trace_base = all[0].now;
    _trace_owner = std::make_unique<tracer>(_rank, _home, _trace_base, _trace_max_events);
    exclusive([&] {
        util::maybe_lock lock(_send_mutex, _locking);
        _trace.store(_trace_owner.get(), std::memory_order_relaxed);
        access::set_trace(_front, _trace_owner.get());
        update_slow_path();
    });
    // Returns once every rank records: a message sent after this call is traced where it runs.
    std::uint64_t on = 1;
    std::vector<std::uint64_t> ons(static_cast<std::size_t>(_size));
    _tp.allgather(core_coll::trace, &on, ons.data(), sizeof on, [this] { return poll(); }, {});
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
    trace_gather(*t, call);
}

// Every rank's events travel to rank 0 as medium messages (any transport; no shared file
// system), one window at a time when rank 0 asks for it: rank 0 holds one window of text and
// each rank makes its text a window at a time, so writing a trace of any size takes memory for
// the records and a few windows, not for the whole file.
void context_impl::trace_gather(tracer& t, const char* call) {
    const std::uint64_t dropped = t.dropped();
    std::vector<std::uint64_t> drops(static_cast<std::size_t>(_size));
    _tp.allgather(core_coll::trace, &dropped, drops.data(), sizeof dropped,
                  [this] { return poll(); }, {});
    tracer::json_cursor cursor(t, [this](std::uint32_t i) { return _table.cold(i).name; });
    if (_rank != 0) return trace_serve(cursor);
    trace_write(cursor, drops, call);
}

// A rank other than 0: sends each window rank 0 asks for, until the last. It holds at most two
// windows of text: the one it sends and the next.
void context_impl::trace_serve(tracer::json_cursor& cursor) {
    std::string pending;
    std::uint64_t served = 0;
    unsigned backoff = 0;
    for (bool last = false; !last; ++served) {
        while (_trace_pulls.load(std::memory_order_acquire) == served) {
            poll_or_idle(backoff);
        }
        last = trace_send_window(cursor, pending);
        // The next window is made while rank 0 writes this one, not after it asks.
        if (!last) (void)cursor.fill(pending, trace_window_bytes + 1);
    }
}

// The next window of this rank's text to rank 0, in pieces of at most max_medium bytes. A
// window that is not the last leaves text for the next (it is made one byte longer than sent),
// so the last window is never empty. Returns whether it was the last.
bool context_impl::trace_send_window(tracer::json_cursor& cursor, std::string& pending) {
    const bool done = cursor.fill(pending, trace_window_bytes + 1);
    const std::size_t len = std::min(trace_window_bytes, pending.size());
    const bool last = done && len == pending.size();
    std::uint64_t args[3] = {0, len, last ? 1u : 0u};
    std::size_t at = 0;
    do {
        const std::size_t piece = std::min(_max_medium, len - at);
        args[0] = at;
        const send_desc d{0,
                          lane::request,
                          category::medium,
                          3,
                          _trace_handler,
                          args,
                          reinterpret_cast<const std::byte*>(pending.data() + at),
                          piece,
                          0};
        send(d, false);
        at += piece;
    } while (at < len);
    pending.erase(0, len);
    return last;
}

// Rank 0's output while it writes a trace: a temporary file next to the target, or the target
// itself when it is not a regular file, and the first error. Until commit() renamed it into
// place, the temporary file goes with this object, also when an exception leaves trace_write.
struct context_impl::trace_output {
    std::string target, tmp;
    std::FILE* f = nullptr;
    int err = 0;  // the first failure (an errno), 0 while all is well

    trace_output(const std::string& file, bool direct) : target(file) {
        f = direct ? std::fopen(file.c_str(), "w") : open_temp_next_to(file, tmp);
        if (f == nullptr) {
            err = errno;
            return;
        }
        struct stat st {};
        if (!tmp.empty() && ::stat(file.c_str(), &st) == 0) {
            (void)::fchmod(::fileno(f), st.st_mode & 07777);  // a replaced file keeps its mode
        }
    }
    trace_output(const trace_output&) = delete;
    trace_output& operator=(const trace_output&) = delete;
    ~trace_output() {
        if (f != nullptr) std::fclose(f);
        if (!tmp.empty()) ::unlink(tmp.c_str());
    }
    // After a failure nothing more is written (the ranks' windows are still taken).
    void put(const char* data, std::size_t n) {
        if (err == 0 && std::fwrite(data, 1, n, f) != n) err = errno;
    }
    void put(const std::string& text) { put(text.data(), text.size()); }
    // Closes the file and renames the temporary file to the target; the first error, or 0.
    int commit() {
        if (f != nullptr) {
            const int closed = std::fclose(f);
            f = nullptr;
            if (closed != 0 && err == 0) err = errno;
        }
        if (err == 0 && !tmp.empty()) {
            if (std::rename(tmp.c_str(), target.c_str()) != 0) {
                err = errno;
            } else {
                tmp.clear();
            }
        }
        return err;
    }
};

// Rank 0: asks rank `from` for its windows one after another and writes each.
void context_impl::trace_pull(int from, trace_output& out) {
    bool last = false;
    unsigned backoff = 0;
    while (!last) {
        _trace_got.store(0, std::memory_order_relaxed);
        _trace_len.store(~std::uint64_t{0}, std::memory_order_relaxed);
        _trace_from.store(from, std::memory_order_release);
        const std::uint64_t args[3] = {0, 0, 0};
        const std::byte none{};
        send(send_desc{from, lane::request, category::medium, 3, _trace_handler, args, &none, 0, 0},
             false);
        std::uint64_t got = 0, len = 0;
        while ((got = _trace_got.load(std::memory_order_acquire),
                len = _trace_len.load(std::memory_order_acquire)) == ~std::uint64_t{0} ||
               got != len) {
            poll_or_idle(backoff);
        }
        last = _trace_final.load(std::memory_order_relaxed);
        out.put(_trace_window.data(), len);
    }
}

// Rank 0: the file, streamed into a temporary file next to the target and renamed into place
// once complete. On any failure, this trace_stop's included, the temporary file goes and an
// existing file at the path stays as it was.
void context_impl::trace_write(tracer::json_cursor& cursor, const std::vector<std::uint64_t>& drops,
                               const char* call) {
    // Also when an exception leaves: no rank is asked any more. The window's memory goes only
    // after a complete trace: after a failure a piece may still be arriving in a handler on
    // another thread (a progress thread) that has seen the old _trace_from, so the window stays
    // until the context goes.
    struct window_reset {
        context_impl& c;
        bool complete = false;
        ~window_reset() {
            c._trace_from.store(-1, std::memory_order_release);
            if (complete) std::string().swap(c._trace_window);
        }
    } reset{*this};
    _trace_window.assign(trace_window_bytes, '\0');
    trace_output out(_trace_file, _trace_direct);
    out.put(trace_file_head(_size, _trace_base, _trace_max_events, drops));
    std::string piece;
    for (bool done = false; !done; piece.clear()) {  // rank 0's own events
        done = cursor.fill(piece, trace_window_bytes);
        out.put(piece);
    }
    for (int r = 1; r < _size; ++r) {
        out.put(",\n");  // between the ranks' events
        trace_pull(r, out);
    }
    out.put("\n]}\n");
    reset.complete = true;
    if (const int err = out.commit(); err != 0) {
        fail(errc::invalid_argument, call, _rank,
             "could not write the trace file '" + _trace_path + "': " + std::strerror(err));
    }
}

}  // namespace am::detail
