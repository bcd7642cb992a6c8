// SPDX-License-Identifier: MIT
// The typed layer: registration of message types, sending, receiving (deferred and parallel
// batches) and the entry points of include/am/typed/*.hpp. Epochs are in typed_epoch.cpp.
#include "typed_common.hpp"

#include "../util/assert.hpp"
#include "../util/error.hpp"
#include "../util/maybe_lock.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

namespace am::detail {
using namespace typed_internal;

typed_layer::typed_layer(context& ctx, const config& cfg)
    : _ctx(ctx),
      _rank(ctx.rank()),
      _size(ctx.size()),
      _max_batch(ctx.max_medium()),
      _timeout(cfg.epoch_timeout),
      _locking(cfg.thread_multiple || cfg.progress_thread) {
    _epoch_end = core::add_collective(_ctx, key, 1, "am::epoch::end");
    hot.threaded = _locking;
    core::set_deferred(_ctx, [this] { return run_deferred(); });
    _parallel = cfg.thread_multiple;
    if (_parallel) core::set_parallel_work(_ctx, [this] { return run_parallel(); });
}

typed_layer::~typed_layer() {
    for (auto& t : _types) {
        if (t && t->runner.destroy != nullptr) t->runner.destroy(t->runner.obj);
    }
}

void typed_layer::fail(errc code, const char* call, const std::string& what) const {
    util::fail(code, call, _rank, what);
}

// ----------------------------------------------------------------------------- registration

std::uint32_t typed_layer::add_type(std::string_view name, std::size_t item_size,
                                    const type_runner& runner) {
    const char* call = "am::message_type";
    // Owned from here on, also when this throws.
    std::unique_ptr<void, void (*)(void*)> owned(runner.obj, runner.destroy);
    core::check_thread(_ctx, call);
    if (core::in_handler(_ctx)) fail(errc::bad_context, call, "created in a handler");
    if (_ending) fail(errc::bad_context, call, "created while an epoch ends");
    const std::uint32_t id = _ntypes.load(std::memory_order_relaxed);
    if (id >= max_types) {
        fail(errc::too_large, call,
             "more than " + std::to_string(max_types) + " message types in one job");
    }
    if (item_size > _max_batch) {
        fail(errc::too_large, call,
             "a message of " + std::to_string(item_size) +
                 " bytes exceeds max_medium() = " + std::to_string(_max_batch));
    }
    auto t = std::make_unique<type_info>();
    t->runner = runner;
    (void)owned.release();
    t->name = std::string(name);
    t->item_size = item_size;
    for (auto& p : t->peers) p = std::make_unique<peer_counts>(_size);
    _types[id] = std::move(t);
    _ntypes.store(id + 1, std::memory_order_release);
    return id;
}

void typed_layer::set_handler(std::uint32_t type, std::uint32_t handler) {
    _types[type]->handler = handler;
}

void typed_layer::attach(typed_member* m) {
    util::maybe_lock lock(_members_mutex, _locking);
    _members.push_back(m);
    std::stable_sort(
        _members.begin(), _members.end(),
        [](const typed_member* a, const typed_member* b) { return a->order > b->order; });
}

void typed_layer::detach(typed_member* m) noexcept {
    util::maybe_lock lock(_members_mutex, _locking);
    // Its counts stay in the statistics (they are cumulative, and epochs subtract).
    m->add_counts(_departed_dedup, _departed_combined);
    std::erase(_members, m);
}

// ---------------------------------------------------------------------------------- sending

std::uint64_t typed_layer::send_tag(const char* call) {
    // Inside a handler the tag is the handled batch's, one level deeper; outside, the open
    // epoch's. Without other threads `hot.tag` holds exactly that; with them, a thread-local.
    std::uint64_t tag = hot.tag;
    if (_locking) {
        tag = t_batch.layer == this ? t_batch.tag : _open_tag.load(std::memory_order_acquire);
    }
    check_tag(tag, call);
    return tag;
}

void typed_layer::check_tag(std::uint64_t tag, const char* call) {
    if (tag == no_epoch_tag) [[unlikely]] {
        fail(errc::bad_context, call,
             "no epoch is open: typed messages are sent inside an am::epoch or from handlers");
    }
    // Read through atomics: handlers on a progress thread check their sends here too.
    const unsigned level = static_cast<unsigned>(tag & 0xff);
    const std::uint64_t open = _open_tag.load(std::memory_order_acquire);
    const int depth = _open_depth.load(std::memory_order_relaxed);
    if (open != no_epoch_tag && (tag >> 8) == (open >> 8) && depth >= 0 &&
        level > static_cast<unsigned>(depth)) [[unlikely]] {
        fail(errc::bad_context, call,
             "a message nested " + std::to_string(level) + " deep exceeds the depth " +
                 std::to_string(depth) + " declared for epoch " + std::to_string(open >> 8) +
                 " (epoch_options::depth)");
    }
}

void typed_layer::send(std::uint32_t type, int dest, std::uint64_t tag, const void* data,
                       std::size_t items, const char* call) {
    // Before the counts: a thread that may not use the context must not touch them either.
    core::check_thread(_ctx, call);
    if (dest < 0 || dest >= _size) [[unlikely]] {
        fail(errc::bad_rank, call,
             "destination " + std::to_string(dest) + " out of range [0, " + std::to_string(_size) +
                 ")");
    }
    const type_info& t = *_types[type];
    const std::size_t bytes = items * t.item_size;
    if (items > _max_batch / t.item_size) [[unlikely]] {
        fail(errc::too_large, call,
             std::to_string(items) + " messages of " + std::to_string(t.item_size) +
                 " bytes exceed max_medium() = " + std::to_string(_max_batch) + " bytes");
    }
    if (items == 0) return;
    const unsigned slot = slot_of(tag), level = level_of(tag);
    // Counted before the message can arrive anywhere (the detectors rely on it); taken back
    // if the core refuses the send.
    add(_slots[slot].sent[level], items, _locking);
    try {
        const send_desc d{dest,
                          lane::request,
                          category::medium,
                          1,
                          t.handler,
                          &tag,
                          static_cast<const std::byte*>(data),
                          bytes,
                          0};
        core::send(_ctx, d);
    } catch (...) {
        _slots[slot].sent[level].fetch_sub(items, std::memory_order_relaxed);
        throw;
    }
    add(_slots[slot].batches, 1, _locking);
    add(_slots[slot].bytes, bytes, _locking);
    peer_counts& p = *t.peers[slot];
    add(p.sent[dest], items, _locking);
    add(p.batches[dest], 1, _locking);
}

// -------------------------------------------------------------------------------- receiving

void typed_layer::deliver(std::uint32_t type, int source, std::span<const std::byte> p,
                          std::uint64_t tag) {
    const std::uint64_t epoch = tag >> 8;
    if (epoch > _begun.load(std::memory_order_acquire)) [[unlikely]] {
        util::maybe_lock lock(_deferred_mutex, _locking);
        if (epoch > _begun.load(std::memory_order_relaxed)) {
            _deferred.push_back(deferred_batch{type, source, tag, {p.begin(), p.end()}});
            return;
        }
    }
    if (_parallel) {
        std::lock_guard lock(_work_mutex);
        _work.push_back(deferred_batch{type, source, tag, {p.begin(), p.end()}});
        core::work_available(_ctx, true);
        return;
    }
    run_batch(type, source, p, tag);
}

std::size_t typed_layer::run_parallel() {
    deferred_batch b;
    {
        std::lock_guard lock(_work_mutex);
        if (_work.empty()) return 0;
        b = std::move(_work.front());
        _work.pop_front();
        if (_work.empty()) core::work_available(_ctx, false);
    }
    run_batch(b.type, b.source, b.bytes, b.tag);
    return 1;
}

void typed_layer::run_inline(std::uint32_t type, int source, std::span<const std::byte> p) {
    AM_ASSERT(type < _ntypes.load(std::memory_order_acquire), "inline run of a registered type");
    const type_info& t = *_types[type];
    t.runner.run(t.runner.obj, source, p);
}

void typed_layer::run_batch(std::uint32_t type, int source, std::span<const std::byte> p,
                            std::uint64_t tag) {
    const type_info& t = *_types[type];
    const std::uint64_t saved = batch_begin(tag);
    struct restore {
        typed_layer* l;
        std::uint64_t saved;
        bool done = false;
        ~restore() {
            if (done) return;
            if (l->_locking) {
                t_batch = saved == no_epoch_tag ? batch_frame{} : batch_frame{l, saved};
            } else {
                l->hot.tag = saved;
            }
        }
    } guard{this, saved};
    t.runner.run(t.runner.obj, source, p);
    guard.done = true;
    batch_end(saved, type, source, tag, p.size() / t.item_size);
}

// Runs the batches kept for the epoch this rank has just begun (inside a poll).
std::size_t typed_layer::run_deferred() {
    std::vector<deferred_batch> ready;
    {
        util::maybe_lock lock(_deferred_mutex, _locking);
        const std::uint64_t begun = _begun.load(std::memory_order_relaxed);
        // Stable: batches from one source keep the order they arrived in.
        auto later =
            std::stable_partition(_deferred.begin(), _deferred.end(),
                                  [&](const deferred_batch& b) { return (b.tag >> 8) <= begun; });
        ready.assign(std::make_move_iterator(_deferred.begin()), std::make_move_iterator(later));
        _deferred.erase(_deferred.begin(), later);
    }
    if (_parallel) {  // queued like any other arrival, for whichever polling threads take them
        if (ready.empty()) return 0;
        std::lock_guard lock(_work_mutex);
        _work.insert(_work.end(), std::make_move_iterator(ready.begin()),
                     std::make_move_iterator(ready.end()));
        core::work_available(_ctx, true);
        return 0;
    }
    for (const deferred_batch& b : ready) run_batch(b.type, b.source, b.bytes, b.tag);
    return ready.size();
}

std::uint64_t typed_layer::batch_begin(std::uint64_t msg_tag) noexcept {
    const unsigned level = static_cast<unsigned>(msg_tag & 0xff);
    const std::uint64_t nested = (msg_tag & ~std::uint64_t{0xff}) | (level < 255 ? level + 1 : 255);
    if (_locking) {
        const std::uint64_t saved = t_batch.layer == this ? t_batch.tag : no_epoch_tag;
        t_batch = batch_frame{this, nested};
        return saved;
    }
    const std::uint64_t saved = hot.tag;
    hot.tag = nested;
    return saved;
}

void typed_layer::batch_end(std::uint64_t saved, std::uint32_t type, int source,
                            std::uint64_t msg_tag, std::size_t items) noexcept {
    if (_locking) {
        t_batch = saved == no_epoch_tag ? batch_frame{} : batch_frame{this, saved};
    } else {
        hot.tag = saved;
    }
    const unsigned slot = slot_of(msg_tag);
    if (type < _ntypes.load(std::memory_order_acquire) && source >= 0 && source < _size) {
        add(_types[type]->peers[slot]->handled[source], items, _locking);
    }
    // Release: whoever reads this count also sees the sends the handler made.
    add(_slots[slot].handled[level_of(msg_tag)], items, _locking, std::memory_order_release);
}

// ------------------------------------------------------------- entry points of typed.hpp

typed_layer* typed_of(context& ctx) {
    return &core::get<typed_layer>(ctx, typed_layer::key, "am::message_type");
}
typed_hot* typed_hot_of(typed_layer* l) noexcept {
    return &l->hot;
}
std::uint32_t typed_register(typed_layer* l, std::string_view name, std::size_t item_size,
                             const type_runner& runner) {
    return l->add_type(name, item_size, runner);
}
void typed_deliver(typed_layer* l, std::uint32_t type, int source, std::span<const std::byte> p,
                   std::uint64_t tag) {
    l->deliver(type, source, p, tag);
}
void typed_set_handler(typed_layer* l, std::uint32_t type, std::uint32_t handler) {
    l->set_handler(type, handler);
}
void typed_run_inline(typed_layer* l, std::uint32_t type, int source,
                      std::span<const std::byte> p) {
    l->run_inline(type, source, p);
}
std::uint64_t typed_send_tag(typed_layer* l, const char* call) {
    return l->send_tag(call);
}
void typed_check_tag(typed_layer* l, std::uint64_t tag, const char* call) {
    l->check_tag(tag, call);
}
void typed_send(typed_layer* l, std::uint32_t type, int dest, std::uint64_t tag, const void* data,
                std::size_t items, const char* call) {
    l->send(type, dest, tag, data, items, call);
}
std::size_t typed_max_batch_bytes(typed_layer* l) noexcept {
    return l->max_batch_bytes();
}
void typed_attach(typed_layer* l, typed_member* m) {
    l->attach(m);
}
void typed_detach(typed_layer* l, typed_member* m) noexcept {
    l->detach(m);
}
void typed_fail(typed_layer* l, errc code, const char* call, const std::string& what) {
    l->fail(code, call, what);
}
std::uint64_t typed_new_serial() noexcept {
    // The one process-wide object of the typed layer: a counter, shared by all ranks of a
    // threads job on purpose (serials must differ across ranks and jobs of the process).
    static std::atomic<std::uint64_t> serial{0};
    return serial.fetch_add(1, std::memory_order_relaxed) + 1;
}
int typed_rank(typed_layer* l) noexcept {
    return l->rank();
}
int typed_size(typed_layer* l) noexcept {
    return l->size();
}
void report_lost(typed_layer* l, const char* what, const char* why) noexcept {
    std::fprintf(stderr, "am: rank %d: %s destroyed with unsent messages, which are lost: %s\n",
                 l->rank(), what, why);
}
void epoch_begin(typed_layer* l, const epoch_options& opt) {
    l->begin(opt);
}
std::uint64_t epoch_end(typed_layer* l, std::uint64_t value, epoch_stats& out) {
    return l->end(value, out);
}
void epoch_abandon(typed_layer* l) noexcept {
    l->abandon();
}
std::size_t typed_memory_bytes(const typed_layer* l) {
    return l->memory_bytes();
}

std::size_t typed_layer::memory_bytes() const {
    // Per type and epoch slot: three counters and three base words per peer.
    const std::size_t per_peer = 3 * sizeof(counter) + 3 * sizeof(std::uint64_t);
    std::size_t n = sizeof(*this);
    const std::uint32_t types = _ntypes.load(std::memory_order_acquire);
    for (std::uint32_t t = 0; t < types; ++t) {
        n += sizeof(type_info) + _types[t]->name.capacity() +
             2 * (sizeof(peer_counts) + static_cast<std::size_t>(_size) * per_peer);
    }
    n += _history.capacity() * sizeof(epoch_stats);
    n += _scratch.capacity() * sizeof(typed_member*);
    {
        util::maybe_lock lock(_deferred_mutex, _locking);
        for (const deferred_batch& b : _deferred) n += sizeof b + b.bytes.capacity();
    }
    return n;
}

}  // namespace am::detail

std::string am::epoch_stats::to_string() const {
    char line[512];
    std::snprintf(line, sizeof line,
                  "epoch %" PRIu64 ": sent %" PRIu64 " in %" PRIu64 " batches (ratio %.1f, %" PRIu64
                  " bytes), handled %" PRIu64 ", dedup hits %" PRIu64 ", combined %" PRIu64
                  ", %" PRIu64 " detector rounds, %.6f s",
                  epoch, messages_sent, batches_sent, coalescing_ratio(), bytes_sent,
                  messages_handled, dedup_hits, combined, waves, seconds);
    return line;
}
