// SPDX-License-Identifier: MIT
// The typed layer's epochs: begin, the termination detector's waves, end, diagnosis of an
// epoch that does not end, and the AM_STATS report.
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
    if (core::tracer(_ctx) != nullptr) [[unlikely]]
        _trace_began = detail::trace_now();
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
    AM_ASSERT(_depth >= -1 && _depth <= max_depth, "the open epoch's depth is in range");
    if (_depth >= 0) {
        AM_ASSERT(n >= 4 && sum[3] <= sum[2],
                  "level 0 is final at the contribution: no more handled than sent");
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
    detail::tracer* const trace = core::tracer(_ctx);
    try {
        const detail::trace_span waiting(
            trace, detail::trace_kind::wait,
            static_cast<std::uint32_t>(detail::trace_cause::epoch_end));
        for (;;) {
            const std::size_t n = contribution(slot, value, words, w);
            {
                const detail::trace_span round(trace, detail::trace_kind::round,
                                               static_cast<std::uint32_t>(_epoch), w.waves + 1);
                core::allreduce_sum(_ctx, _epoch_end, words, sum, n, idle, call);
            }
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
    if (trace != nullptr && _trace_began != 0) [[unlikely]] {
        detail::trace_record(trace, detail::trace_kind::epoch, _trace_began, detail::trace_now(),
                             static_cast<std::uint32_t>(_epoch), w.waves, out.messages_sent);
    }
    _trace_began = 0;
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

}  // namespace am::detail
