// SPDX-License-Identifier: MIT
// context_impl: construction, the thread check, attached layers and statistics. Sending is in
// context_send.cpp, dispatch in context_dispatch.cpp, collectives in context_collectives.cpp,
// the progress thread in context_progress.cpp.
#include "context_common.hpp"

#include <algorithm>
#include <string>
#include <thread>

namespace am::detail {

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
    _fast = !cfg.progress_thread && !cfg.thread_multiple;
    _trace_max_events =
        cfg.trace_max_events != 0 ? cfg.trace_max_events : trace_max_events_from_env();
    update_slow_path();
    name_collectives();
    _saved_frame = t_frame;
    t_frame = frame_of(this, home_mark);
    // The progress thread is started by am::run once the model layers have registered their
    // handlers (start_progress_thread), so no message is dispatched before they exist.
}

void context_impl::name_collectives() {
    transport::coll_names& names = _tp.collective_names();
    names.add(core_coll::handshake, {"am::context::barrier", {}, false});
    names.add(core_coll::handshake_report,
              {"am::context::barrier (comparing differing handler tables)", {}, false});
    names.add(core_coll::exchange, {"am::context::exchange", {}, true});
    names.add(core_coll::quiesce, {"am::context::quiesce", {}, false});
    names.add(core_coll::trace, {"am::context::trace_start / trace_stop", {}, false});
}

transport::coll_kind context_impl::add_layer_collective(const core::key& k, std::uint8_t id,
                                                        const char* call) {
    auto at = std::find(_coll_layers.begin(), _coll_layers.end(), &k);
    if (at == _coll_layers.end()) at = _coll_layers.insert(at, &k);
    const auto part = static_cast<std::size_t>(at - _coll_layers.begin()) + first_layer_coll_part;
    if (part > 0xf || id > 0xf) {
        fail(errc::invalid_argument, "am::core::add_collective", _rank,
             std::string("collective ") + std::to_string(id) + " of layer " + k.name +
                 ": at most 16 kinds per layer and " +
                 std::to_string(0x10 - first_layer_coll_part) + " layers with collectives");
    }
    const transport::coll_kind kind{static_cast<std::uint8_t>(part), id};
    _tp.collective_names().add(kind, {call, {}, false});
    return kind;
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
