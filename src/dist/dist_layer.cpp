// SPDX-License-Identifier: MIT
#include "dist_layer.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

// The handlers, named for statistics ("am::dist::batch", "am::dist::fragment").
namespace am::dist {

void batch(token& t, std::span<const std::byte> data) {
    core::get<am::detail::dist_layer>(t.ctx(), am::detail::dist_layer::key, "am::async")
        .on_batch(t.source(), data);
}

void fragment(token& t, std::span<const std::byte> data, std::uint64_t id, std::uint64_t total,
              std::uint64_t offset) {
    core::get<am::detail::dist_layer>(t.ctx(), am::detail::dist_layer::key, "am::async")
        .on_fragment(t.source(), data, id, total, offset);
}

}  // namespace am::dist

namespace am::detail {
namespace {

constexpr std::size_t pad16(std::size_t n) noexcept {
    return (n + record_align - 1) & ~(record_align - 1);
}

std::string bytes_text(std::uint64_t n) {
    if (n >= (std::uint64_t{1} << 30) && n % (std::uint64_t{1} << 30) == 0) {
        return std::to_string(n >> 30) + " GiB";
    }
    return std::to_string(n) + " bytes";
}

}  // namespace

dist_layer& dist_of(context& ctx, const char* call) {
    return core::get<dist_layer>(ctx, dist_layer::key, call);
}

record_out record_open(dist_layer& d, std::uint64_t team, int dest, std::uint64_t fn,
                       const char* call) {
    return d.open(team, dest, fn, call);
}
void record_close(dist_layer& d, const record_out& o, const char* call) {
    d.close(o, call);
}
void record_abort(dist_layer& d, const record_out& o) noexcept {
    d.abort(o);
}

dist_layer::dist_layer(context& ctx, const config& cfg)
    : _ctx(ctx),
      _rank(ctx.rank()),
      _batch(ctx.max_medium()),
      _max_bytes(cfg.max_payload),
      _h_batch(ctx.handler<&dist::batch>()),
      _h_fragment(ctx.handler<&dist::fragment>()) {
    core::set_deferred(ctx, [this] { return run_deferred(); });
}

dist_layer::~dist_layer() = default;

std::string dist_layer::report() const {
    if (_records == 0) return {};
    return "dist: " + std::to_string(_records) + " async records in " + std::to_string(_batches) +
           " batches, " + std::to_string(_large) + " sent in fragments\n";
}

[[noreturn]] void dist_layer::fail(std::string what) const {
    throw error(errc::invalid_argument, std::move(what));
}

// --------------------------------------------------------------------------------- sending

dist_layer::out_buffer& dist_layer::buffer(std::uint64_t team, int dest) {
    team_counts& c = counts(team);
    if (c.out.empty()) c.out.resize(static_cast<std::size_t>(_ctx.size()));
    auto& slot = c.out[static_cast<std::size_t>(dest)];
    if (!slot) [[unlikely]] {
        slot = std::make_unique<out_buffer>();
        slot->team = team;
        slot->counts = &c;
        slot->dest = dest;
    }
    return *slot;
}

dist_layer::team_counts& dist_layer::counts(std::uint64_t team) {
    if (team == _last_team_id && _last_team != nullptr) [[likely]]
        return *_last_team;
    auto& slot = _teams[team];
    if (!slot) slot = std::make_unique<team_counts>();
    _last_team_id = team;
    _last_team = slot.get();
    return *slot;
}

record_out dist_layer::open(std::uint64_t team, int dest, std::uint64_t fn, const char* call) {
    if (dest < 0 || dest >= _ctx.size()) [[unlikely]] {
        throw error(errc::bad_rank, std::string(call) + " on rank " + std::to_string(_rank) +
                                        ": destination rank " + std::to_string(dest) +
                                        " is outside the job's " + std::to_string(_ctx.size()) +
                                        " ranks");
    }
    core::check_thread(_ctx, call);
    const bool locked = locking();
    if (locked) _mutex.lock();  // held until close or abort
    out_buffer& b = buffer(team, dest);
    if (b.bytes.empty()) {
        if (!_spare.empty()) {
            b.bytes = std::move(_spare.back());
            _spare.pop_back();
        }
        b.bytes.reserve(_batch + 2 * record_align);
        b.bytes.resize(sizeof(batch_header));
    }
    const std::size_t start = b.bytes.size();
    const record_header h{fn, 0};
    b.bytes.resize(start + sizeof h);
    std::memcpy(b.bytes.data() + start, &h, sizeof h);
    return {&b.bytes, start, &b, locked};
}

void dist_layer::truncate(const record_out& o) noexcept {
    auto& b = *static_cast<out_buffer*>(o.slot);
    b.bytes.resize(o.start);
    if (b.records == 0) b.bytes.clear();
}

void dist_layer::abort(const record_out& o) noexcept {
    truncate(o);
    if (o.locked) _mutex.unlock();
}

// Takes b's records out as one message (header written) and leaves b empty.
std::vector<std::byte> dist_layer::detach(out_buffer& b) {
    std::vector<std::byte> bytes;
    bytes.swap(b.bytes);
    const batch_header h{b.team, b.records, 0};
    std::memcpy(bytes.data(), &h, sizeof h);
    b.records = 0;
    unlist(b);
    return bytes;
}

void dist_layer::list(out_buffer& b) {
    if (b.listed) return;
    b.listed = true;
    _filled.push_back(&b);
    core::add_pending(_ctx, 1);
    core::signal_deferred(_ctx);
}

void dist_layer::unlist(out_buffer& b) noexcept {
    if (!b.listed) return;  // its entry in _filled is skipped by the next flush
    b.listed = false;
    core::add_pending(_ctx, -1);
}

void dist_layer::close(const record_out& o, const char* call) {
    {
        std::unique_lock<std::recursive_mutex> held;
        if (o.locked) held = std::unique_lock<std::recursive_mutex>(_mutex, std::adopt_lock);
        auto& b = *static_cast<out_buffer*>(o.slot);
        const std::size_t args = b.bytes.size() - o.start - sizeof(record_header);
        if (args > _max_bytes) {
            truncate(o);
            throw error(errc::too_large,
                        std::string(call) + " on rank " + std::to_string(_rank) + ": " +
                            bytes_text(args) + " of arguments exceed the payload limit of " +
                            bytes_text(_max_bytes) + " (AM_MAX_PAYLOAD); nothing was sent");
        }
        std::memcpy(b.bytes.data() + o.start + offsetof(record_header, bytes), &args,
                    sizeof(std::uint64_t));
        b.bytes.resize(pad16(b.bytes.size()));
        ++_records;
        b.counts->sent.fetch_add(1, std::memory_order_relaxed);
        if (b.bytes.size() > _batch && b.records > 0) {
            // The new record does not fit: the batch goes without it; it starts the next.
            std::vector<std::byte> tail(b.bytes.begin() + static_cast<std::ptrdiff_t>(o.start),
                                        b.bytes.end());
            b.bytes.resize(o.start);
            enqueue({b.dest, detach(b), false});
            b.bytes.resize(sizeof(batch_header));
            const std::size_t at = b.bytes.size();
            b.bytes.resize(at + tail.size());
            std::memcpy(b.bytes.data() + at, tail.data(), tail.size());
        }
        ++b.records;
        if (b.bytes.size() > _batch) {
            enqueue({b.dest, detach(b), true});  // a record alone larger than a batch
        } else if (b.bytes.size() + sizeof(record_header) > _batch) {
            enqueue({b.dest, detach(b), false});
        } else {
            list(b);
        }
    }
    (void)drain();
}

// Under the lock: `m` joins the queue of messages to send, in the order they were detached.
void dist_layer::enqueue(outgoing&& m) {
    _outq.push_back(std::move(m));
    core::add_pending(_ctx, 1);
}

// Sends the queue in order, without the lock: a send that waits for room polls, and the
// handlers (or the deferred flush) it runs may detach more batches. Those join the queue and
// this loop sends them after the ones before them; a call made while the queue is being sent
// (re-entered from such a handler, or another thread) returns at once. So batches to one
// destination leave in the order their records were made.
std::size_t dist_layer::drain() {
    {
        const auto g = lock();
        if (_sending) return 0;
        _sending = true;
    }
    std::size_t sent = 0;
    for (;;) {
        outgoing m;
        {
            const auto g = lock();
            if (_outq.empty()) {
                _sending = false;
                return sent;
            }
            m = std::move(_outq.front());
            _outq.pop_front();
        }
        try {
            transmit(m);
        } catch (...) {
            const auto g = lock();
            _sending = false;
            core::add_pending(_ctx, -1);
            throw;
        }
        ++sent;
        const auto g = lock();
        core::add_pending(_ctx, -1);
        if (_spare.size() < 8 && m.bytes.capacity() <= 2 * _batch) {
            m.bytes.clear();
            _spare.push_back(std::move(m.bytes));
        }
    }
}

void dist_layer::transmit(const outgoing& m) {
    if (m.large) {
        send_large(m.dest, m.bytes);
    } else {
        ++_batches;
        _ctx.request(m.dest, _h_batch, std::span<const std::byte>(m.bytes));
    }
}

// A batch of one record larger than a batch: it goes in fragments of whole medium messages.
void dist_layer::send_large(int dest, const std::vector<std::byte>& bytes) {
    std::uint64_t id = 0;
    {
        const auto g = lock();
        ++_large;
        id = _next_large++;
    }
    const std::size_t chunk = _batch & ~(record_align - 1);
    for (std::size_t at = 0; at < bytes.size(); at += chunk) {
        const std::size_t n = std::min(chunk, bytes.size() - at);
        _ctx.request(dest, _h_fragment, std::span<const std::byte>(bytes.data() + at, n), id,
                     std::uint64_t{bytes.size()}, std::uint64_t{at});
    }
}

std::size_t dist_layer::flush(std::uint64_t team) {
    {
        const auto g = lock();
        std::size_t kept = 0;
        for (out_buffer* b : _filled) {
            if (!b->listed) continue;  // sent since it was listed
            if (team != 0 && b->team != team) {
                _filled[kept++] = b;
                continue;
            }
            enqueue({b->dest, detach(*b), false});
        }
        _filled.resize(kept);
    }
    return drain();
}

std::size_t dist_layer::run_deferred() {
    return flush(0);
}

// ------------------------------------------------------------------------------- receiving

void dist_layer::on_batch(int source, std::span<const std::byte> data) {
    if (reinterpret_cast<std::uintptr_t>(data.data()) % record_align != 0) {
        // Arguments viewed in place (std::span parameters) need their alignment.
        std::vector<std::byte> copy(data.begin(), data.end());
        run_batch(source, copy);
        return;
    }
    run_batch(source, data);
}

namespace {
// The dist layer whose records this thread is running: what the records' object lookups use
// (instead of a search of the context's layers per record). Saved and restored around a batch.
thread_local dist_layer* t_running [[gnu::tls_model("initial-exec")]] = nullptr;

class running_mark {
  public:
    explicit running_mark(dist_layer* d) noexcept : _saved(t_running) { t_running = d; }
    ~running_mark() { t_running = _saved; }
    running_mark(const running_mark&) = delete;
    running_mark& operator=(const running_mark&) = delete;

  private:
    dist_layer* _saved;
};
}  // namespace

dist_layer& dist_running(context& ctx, const char* call) {
    dist_layer* d = t_running;
    if (d != nullptr && &d->ctx() == &ctx) [[likely]]
        return *d;
    return dist_of(ctx, call);
}

void dist_layer::run_batch(int source, std::span<const std::byte> data) {
    const running_mark mark(this);
    batch_header h{};
    if (data.size() < sizeof h) fail("am::async: a batch shorter than its header arrived");
    std::memcpy(&h, data.data(), sizeof h);
    team_counts& c = counts(h.team);
    std::size_t at = sizeof h;
    for (std::uint32_t i = 0; i < h.records; ++i) {
        record_header r{};
        if (data.size() - at < sizeof r) fail("am::async: a batch ends inside a record");
        std::memcpy(&r, data.data() + at, sizeof r);
        at += sizeof r;
        if (r.bytes > data.size() - at) fail("am::async: a record is longer than its batch");
        run_record(source, r.fn, data.subspan(at, static_cast<std::size_t>(r.bytes)));
        at = pad16(at + static_cast<std::size_t>(r.bytes));
        c.handled.fetch_add(1, std::memory_order_relaxed);
    }
}

void dist_layer::run_record(int source, std::uint64_t fn, std::span<const std::byte> args) {
    const async_fn_info* info = nullptr;
    {
        const auto g = lock();
        if (fn == _last_fn && _last_info != nullptr) {
            info = _last_info;
        } else {
            auto it = _fns.find(fn);
            if (it == _fns.end()) it = _fns.emplace(fn, async_find(fn)).first;
            info = it->second;
            _last_fn = fn;
            _last_info = info;
        }
    }
    if (info == nullptr || info->ambiguous) {
        const std::string why =
            info == nullptr
                ? "which this process does not have (ranks must run the same program)"
                : "which names two callables of one name in this program (" + info->shown + ")";
        throw error(errc::bad_handler, "am::async on rank " + std::to_string(_rank) + ": rank " +
                                           std::to_string(source) + " sent function key " +
                                           std::to_string(fn) + ", " + why);
    }
    serial_reader r(args);
    try {
        info->run(_ctx, source, r);
    } catch (const std::exception& e) {
        throw error(errc::remote, "am::async: " + info->shown + " threw on rank " +
                                      std::to_string(_rank) + " (sent by rank " +
                                      std::to_string(source) + "): " + e.what());
    }
}

void dist_layer::on_fragment(int source, std::span<const std::byte> data, std::uint64_t id,
                             std::uint64_t total, std::uint64_t offset) {
    std::vector<std::byte> whole;
    {
        const auto g = lock();
        auto& a = _assembling[{source, id}];
        if (a.bytes.empty()) {
            try {
                a.bytes.resize(static_cast<std::size_t>(total));
            } catch (const std::bad_alloc&) {
                _assembling.erase({source, id});
                throw error(errc::too_large, "am::async on rank " + std::to_string(_rank) +
                                                 ": no memory for a " + bytes_text(total) +
                                                 " call from rank " + std::to_string(source));
            }
        }
        if (offset > total || data.size() > total - offset) {
            fail("am::async: a fragment lies outside its call");
        }
        std::memcpy(a.bytes.data() + offset, data.data(), data.size());
        a.received += data.size();
        if (a.received < total) return;
        whole = std::move(a.bytes);
        _assembling.erase({source, id});
    }
    run_batch(source, whole);
}

// ------------------------------------------------------------------------- termination

void dist_layer::barrier(const coll::team& t) {
    core::check_wait(_ctx, "am::dist::barrier");
    const std::uint64_t team = t.id();
    std::uint64_t last[2] = {~0ull, 0};
    for (;;) {
        flush_holding(team);
        flush(team);
        team_counts& c = counts(team);
        const std::uint64_t mine[2] = {c.sent.load(std::memory_order_relaxed),
                                       c.handled.load(std::memory_order_relaxed)};
        std::uint64_t sum[2] = {0, 0};
        coll::allreduce(t, std::span<const std::uint64_t>(mine), std::span<std::uint64_t>(sum),
                        coll::sum{});
        // Every record counted as sent in the previous wave had run by this one, and none was
        // sent since: nothing is in flight.
        if (sum[0] == sum[1] && sum[0] == last[0] && last[0] == last[1]) return;
        last[0] = sum[0];
        last[1] = sum[1];
    }
}

// ---------------------------------------------------------------------------------- objects

std::uint32_t dist_layer::next_object(std::uint64_t team) {
    const auto g = lock();
    return ++counts(team).objects;
}

void dist_layer::add_object(std::uint64_t team, std::uint32_t number, void* obj, const char* type) {
    const auto g = lock();
    _objects[{team, number}] = {obj, type};
}

void dist_layer::hold(dist::object_base* o) {
    const auto g = lock();
    _holding.push_back(o);
}

void dist_layer::unhold(dist::object_base* o) noexcept {
    const auto g = lock();
    _holding.erase(std::remove(_holding.begin(), _holding.end(), o), _holding.end());
}

// The team's objects that combine operations locally send them (on the rank's own thread).
void dist_layer::flush_holding(std::uint64_t team) {
    std::vector<dist::object_base*> now;
    {
        const auto g = lock();
        for (std::size_t i = 0; i < _holding.size();) {
            if (_holding[i]->ref().team == team) {
                now.push_back(_holding[i]);
                _holding[i] = _holding.back();
                _holding.pop_back();
            } else {
                ++i;
            }
        }
    }
    for (dist::object_base* o : now) o->flush_local();
}

void dist_layer::remove_object(std::uint64_t team, std::uint32_t number) noexcept {
    const auto g = lock();
    _objects.erase({team, number});
    _last = {nullptr, nullptr};
}

void* dist_layer::object(std::uint64_t team, std::uint32_t number, const char* type,
                         const char* call) {
    const auto g = lock();
    if (_last.obj != nullptr && _last_key == object_key{team, number} && _last.type == type) {
        return _last.obj;
    }
    const auto it = _objects.find({team, number});
    if (it == _objects.end() || std::strcmp(it->second.type, type) != 0) {
        throw error(
            errc::bad_context,
            std::string(call) + " on rank " + std::to_string(_rank) + ": dist object #" +
                std::to_string(number) + " of team " + std::to_string(team) +
                (it == _objects.end() ? " does not exist here (destroyed, or not created "
                                        "by every member in the same order)"
                                      : " is a " + std::string(it->second.type) + " here, not a " +
                                            type + " (members created objects in another order)"));
    }
    _last_key = {team, number};
    _last = {it->second.obj, type};
    return it->second.obj;
}

}  // namespace am::detail
