// SPDX-License-Identifier: MIT
#include "typed_layer.hpp"

#include "../util/error.hpp"
#include "../util/maybe_lock.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

namespace am::detail {
namespace {

// The batch a thread is handling and the tag of the sends its handler makes. Only used when
// several threads of a rank may send (thread_multiple, progress thread); otherwise the rank's
// `typed_hot::tag` says the same without a thread-local access.
struct batch_frame {
    const typed_layer* layer = nullptr;
    std::uint64_t tag = no_epoch_tag;
};
thread_local batch_frame t_batch [[gnu::tls_model("initial-exec")]];

constexpr std::uint64_t make_tag(std::uint64_t epoch, unsigned level) noexcept {
    return (epoch << 8) | level;
}

using counter = std::atomic<std::uint64_t>;

// Counts updated only by the rank's thread (no progress thread, no thread_multiple) need no
// locked instruction: a relaxed load and store, as the core's counters do.
inline void add(counter& c, std::uint64_t n, bool shared,
                std::memory_order order = std::memory_order_relaxed) noexcept {
    if (shared) {
        c.fetch_add(n, order);
    } else {
        c.store(c.load(std::memory_order_relaxed) + n, order == std::memory_order_relaxed
                                                           ? std::memory_order_relaxed
                                                           : std::memory_order_release);
    }
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

typed_layer::typed_layer(context& ctx, const config& cfg)
    : _ctx(ctx),
      _rank(ctx.rank()),
      _size(ctx.size()),
      _max_batch(ctx.max_medium()),
      _timeout(cfg.epoch_timeout),
      _locking(cfg.thread_multiple || cfg.progress_thread) {
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

// ----------------------------------------------------------------------------------- epochs

void typed_layer::begin(const epoch_options& opt) {
    const char* call = "am::epoch";
    core::check_thread(_ctx, call);
    if (core::in_handler(_ctx)) fail(errc::bad_context, call, "opened in a handler");
    if (_open_tag.load(std::memory_order_relaxed) != no_epoch_tag || _ending) {
        fail(errc::bad_context, call,
             "epoch " + std::to_string(_epoch) + " is still open: epochs do not nest");
    }
    if (opt.depth < -1 || opt.depth > max_depth) {
        fail(errc::invalid_argument, call,
             "depth " + std::to_string(opt.depth) + " outside [-1, " + std::to_string(max_depth) +
                 "]");
    }
    ++_epoch;
    _depth = opt.depth;
    _began = std::chrono::steady_clock::now();
    _begin_totals = read_totals(slot_of(make_tag(_epoch, 0)));
    const std::uint64_t tag = make_tag(_epoch, 0);
    hot.tag = tag;
    _open_depth.store(_depth, std::memory_order_relaxed);
    _open_tag.store(tag, std::memory_order_release);
    bool kept;
    {
        util::maybe_lock lock(_deferred_mutex, _locking);
        _begun.store(_epoch, std::memory_order_release);
        kept = !_deferred.empty();
    }
    if (kept) {
        core::signal_deferred(_ctx);
        (void)core::poll(_ctx);
    }
}

void typed_layer::abandon() noexcept {
    hot.tag = no_epoch_tag;
    _open_tag.store(no_epoch_tag, std::memory_order_release);
    _ending = false;
}

typed_layer::totals typed_layer::read_totals(unsigned slot) const noexcept {
    totals t;
    const slot_counts& c = _slots[slot];
    // Handled first (acquire), then sent: a handled message's nested sends are then counted.
    for (const counter& h : c.handled) t.handled += h.load(std::memory_order_acquire);
    for (const counter& s : c.sent) t.sent += s.load(std::memory_order_relaxed);
    t.batches = c.batches.load(std::memory_order_relaxed);
    t.bytes = c.bytes.load(std::memory_order_relaxed);
    util::maybe_lock lock(_members_mutex, _locking);
    t.dedup = _departed_dedup, t.combined = _departed_combined;
    for (const typed_member* m : _members) m->add_counts(t.dedup, t.combined);
    return t;
}

std::size_t typed_layer::flush_members() {
    // A flush may poll and run handlers, which may create or destroy members: iterate over a
    // copy and skip members gone meanwhile.
    {
        util::maybe_lock lock(_members_mutex, _locking);
        _scratch = _members;
    }
    std::size_t n = 0;
    for (typed_member* m : _scratch) {
        {
            util::maybe_lock lock(_members_mutex, _locking);
            if (std::find(_members.begin(), _members.end(), m) == _members.end()) continue;
        }
        n += m->flush_held();
    }
    return n;
}

bool typed_layer::members_hold() const {
    util::maybe_lock lock(_members_mutex, _locking);
    return std::any_of(_members.begin(), _members.end(),
                       [](const typed_member* m) { return m->holds(); });
}

// What the rank does while the detector waits: handle arrivals, send what handlers held back.
std::size_t typed_layer::progress() {
    std::size_t n = core::poll(_ctx);
    n += flush_members();
    return n;
}

// This rank's words for one reduction round: [value, then per level sent and handled] for the
// depth-limited detector, [value, sent, handled] for the general one. Everything held is
// flushed first; the counts are read when nothing is held (and, when other threads run
// handlers, while none runs), so every message a handled one caused is counted as sent.
// This rank's words for one reduction round: [value, depth + 2, then per level sent and
// handled] for the depth-limited detector, [value, 1, sent, handled] for the general one (the
// second word lets every rank check that all chose the same detector). Everything held is
// flushed first; the counts are read when nothing is held (and, when other threads run
// handlers, while none runs), so every message a handled one caused is counted as sent.
std::size_t typed_layer::contribution(unsigned slot, std::uint64_t value, std::uint64_t* words,
                                      const wave_state& w) {
    for (;;) {
        while (progress() != 0) check_timeout(w);
        const auto read = [&] {
            if (members_hold()) return false;
            const slot_counts& c = _slots[slot];
            words[0] = value;
            words[1] = static_cast<std::uint64_t>(_depth + 2);
            std::uint64_t handled[max_levels], sent[max_levels];
            for (unsigned i = 0; i < max_levels; ++i) {
                handled[i] = c.handled[i].load(std::memory_order_acquire);
            }
            for (unsigned i = 0; i < max_levels; ++i) {
                sent[i] = c.sent[i].load(std::memory_order_relaxed);
            }
            if (_depth >= 0) {
                for (int i = 0; i <= _depth; ++i) {
                    words[2 + 2 * i] = sent[i];
                    words[3 + 2 * i] = handled[i];
                }
            } else {
                words[2] = words[3] = 0;
                for (unsigned i = 0; i < max_levels; ++i) {
                    words[2] += sent[i], words[3] += handled[i];
                }
            }
            return true;
        };
        if (core::exclusive(_ctx, read)) break;
        check_timeout(w);
    }
    return _depth >= 0 ? 2 + 2 * static_cast<std::size_t>(_depth + 1) : 4;
}

bool typed_layer::detect(const std::uint64_t* sum, std::size_t n, wave_state& w) const {
    if (sum[1] != static_cast<std::uint64_t>(_size) * static_cast<std::uint64_t>(_depth + 2)) {
        fail(errc::invalid_argument, "am::epoch::end",
             "the ranks ended epoch " + std::to_string(_epoch) +
                 " with different epoch_options::depth (this rank: " + std::to_string(_depth) +
                 ")");
    }
    if (_depth >= 0) {
        // Depth-limited: level 0 is final at the contribution (the ranks' code sends nothing
        // while it ends the epoch), and level i is final once level i - 1 is all handled.
        w.sum_sent = w.sum_handled = 0;
        bool done = true;
        for (std::size_t i = 2; i + 1 < n; i += 2) {
            done = done && sum[i] == sum[i + 1];
            w.sum_sent += sum[i], w.sum_handled += sum[i + 1];
        }
        return done;
    }
    // Four counters (Mattern): two consecutive rounds with the same sums, sent == handled.
    w.sum_sent = sum[2], w.sum_handled = sum[3];
    const bool done = sum[2] == sum[3] && sum[2] == w.last_sent && sum[3] == w.last_handled;
    w.last_sent = sum[2], w.last_handled = sum[3];
    return done;
}

void typed_layer::check_timeout(const wave_state& w) const {
    if (_timeout <= 0 || seconds_since(_end_began) < _timeout) return;
    print_diagnosis(w, "did not end within AM_EPOCH_TIMEOUT");
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", _timeout);
    // The ranks that never joined this round of the detector (stopped polling, or stuck in
    // their own code) are the likely cause: name them where the transport can tell.
    const std::string missing = core::stragglers(_ctx);
    fail(errc::timeout, "am::epoch::end",
         "epoch " + std::to_string(_epoch) + " did not end within " + secs +
             " s (AM_EPOCH_TIMEOUT)" + (missing.empty() ? "" : "; " + missing) +
             "; the counts of every rank are printed above");
}

std::uint64_t typed_layer::end(std::uint64_t value, epoch_stats& out) {
    const char* call = "am::epoch::end";
    core::check_thread(_ctx, call);
    if (core::in_handler(_ctx)) fail(errc::bad_context, call, "called from a handler");
    if (_open_tag.load(std::memory_order_relaxed) == no_epoch_tag) {
        fail(errc::bad_context, call, "no epoch is open");
    }
    const unsigned slot = slot_of(make_tag(_epoch, 0));
    _ending = true;
    if (_timeout > 0) _end_began = std::chrono::steady_clock::now();
    wave_state w;
    std::uint64_t words[core::max_reduce_words];
    std::uint64_t sum[core::max_reduce_words];
    const std::function<std::size_t()> idle = [&]() -> std::size_t {
        check_timeout(w);
        return progress();
    };
    try {
        for (;;) {
            const std::size_t n = contribution(slot, value, words, w);
            core::allreduce_sum(_ctx, core::collective::epoch_end, words, sum, n, idle, call);
            ++w.waves;
            if (detect(sum, n, w)) break;
            check_timeout(w);
        }
    } catch (const error& e) {
        if (e.code() == errc::aborted && _timeout > 0)
            print_diagnosis(w, "was open when the job aborted");
        abandon();
        throw;
    }
    out.waves = w.waves;
    record_end(slot, out);
    hot.tag = no_epoch_tag;
    _open_tag.store(no_epoch_tag, std::memory_order_release);
    _ending = false;
    return sum[0];
}

void typed_layer::record_end(unsigned slot, epoch_stats& out) {
    const totals now = read_totals(slot);
    const totals& base = _base[slot];
    out.epoch = _epoch;
    out.messages_sent = now.sent - base.sent;
    out.messages_handled = now.handled - base.handled;
    out.batches_sent = now.batches - base.batches;
    out.bytes_sent = now.bytes - base.bytes;
    out.dedup_hits = now.dedup - _begin_totals.dedup;
    out.combined = now.combined - _begin_totals.combined;
    out.seconds = seconds_since(_began);
    _base[slot] = now;
    const std::uint32_t types = _ntypes.load(std::memory_order_acquire);
    for (std::uint32_t t = 0; t < types; ++t) {
        peer_counts& p = *_types[t]->peers[slot];
        for (int r = 0; r < _size; ++r) {
            p.base[3 * r] = p.sent[r].load(std::memory_order_relaxed);
            p.base[3 * r + 1] = p.batches[r].load(std::memory_order_relaxed);
            p.base[3 * r + 2] = p.handled[r].load(std::memory_order_relaxed);
        }
    }
    constexpr std::size_t keep = 4096;
    if (_history.size() == keep) {
        _history.erase(_history.begin(), _history.begin() + keep / 2);
        _history_dropped += keep / 2;
    }
    _history.push_back(out);
}

// ------------------------------------------------------------------------------- diagnosis

void typed_layer::print_diagnosis(const wave_state& w, const char* why) const {
    const unsigned slot = slot_of(make_tag(_epoch, 0));
    std::string text;
    char line[512];
    std::snprintf(line, sizeof line,
                  "am: rank %d: epoch %" PRIu64 " %s (ending for %.3f s; %s detector, %" PRIu64
                  " rounds, last sums: sent %" PRIu64 ", handled %" PRIu64 ")\n",
                  _rank, _epoch, why, seconds_since(_end_began),
                  _depth >= 0 ? "depth-limited" : "general", w.waves, w.sum_sent, w.sum_handled);
    text += line;
    const std::uint32_t types = _ntypes.load(std::memory_order_acquire);
    bool any = false;
    for (std::uint32_t t = 0; t < types; ++t) {
        const type_info& ti = *_types[t];
        const peer_counts& p = *ti.peers[slot];
        for (int r = 0; r < _size; ++r) {
            const std::uint64_t sent = p.sent[r].load() - p.base[3 * r];
            const std::uint64_t batches = p.batches[r].load() - p.base[3 * r + 1];
            const std::uint64_t handled = p.handled[r].load() - p.base[3 * r + 2];
            if (sent == 0 && handled == 0) continue;
            any = true;
            std::snprintf(line, sizeof line,
                          "am: rank %d:   type %u \"%s\": to rank %d sent %" PRIu64 " in %" PRIu64
                          " batches; from rank %d handled %" PRIu64 "\n",
                          _rank, t, ti.name.c_str(), r, sent, batches, r, handled);
            text += line;
        }
    }
    if (!any) {
        std::snprintf(line, sizeof line,
                      "am: rank %d:   no typed message sent or handled in this epoch\n", _rank);
        text += line;
    }
    if (members_hold()) {
        std::snprintf(line, sizeof line, "am: rank %d:   messages still held in buffers\n", _rank);
        text += line;
    }
    std::fputs(text.c_str(), stderr);
}

std::string typed_layer::report() const {
    if (_history.empty() && _history_dropped == 0) return {};
    epoch_stats sum;
    for (const epoch_stats& e : _history) {
        sum.messages_sent += e.messages_sent, sum.messages_handled += e.messages_handled;
        sum.batches_sent += e.batches_sent, sum.bytes_sent += e.bytes_sent;
        sum.dedup_hits += e.dedup_hits, sum.combined += e.combined, sum.waves += e.waves;
        sum.seconds += e.seconds;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "am: rank %d typed: %" PRIu64 " epochs; sent %" PRIu64 " messages in %" PRIu64
                  " batches (coalescing ratio %.1f), handled %" PRIu64 ", dedup hits %" PRIu64
                  ", combined %" PRIu64 "\n",
                  _rank, _epoch, sum.messages_sent, sum.batches_sent, sum.coalescing_ratio(),
                  sum.messages_handled, sum.dedup_hits, sum.combined);
    std::string text = line;
    if (_history_dropped != 0) {
        text += "am: rank " + std::to_string(_rank) + "   (first " +
                std::to_string(_history_dropped) + " epochs not listed)\n";
    }
    for (const epoch_stats& e : _history) {
        text += "am: rank " + std::to_string(_rank) + "   " + e.to_string() + "\n";
    }
    return text;
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
