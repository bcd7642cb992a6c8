// SPDX-License-Identifier: MIT
// context_impl: receiving — polls, the check of each incoming message (incoming.hpp) and the
// handler call; deferred and parallel work of the layers.
#include "context_common.hpp"

#include "../util/assert.hpp"

#include <cstdio>
#include <cstring>

namespace am::detail {

std::size_t context_impl::run_deferred() {
    _deferred_ready.store(false, std::memory_order_relaxed);
    if (!_deferred_fn) return 0;
    frame_scope scope(this, 0);
    return _deferred_fn();
}

void context_impl::poll_after_send() {
    (void)_ring->poll_into(*this);  // every send from the rank's own code makes progress
}

std::size_t context_impl::poll() {
    if (in_handler()) return 0;
    if (!_locking) {
        check_thread("am::context::poll");
        return poll_locked();
    }
    if (std::this_thread::get_id() == _home) return poll_shared();
    // Another thread of the rank (its progress thread, or the program's under
    // thread_multiple): a handler that throws here leaves its message unhandled and the
    // rank's epochs and waits unable to end, so it fails the job (every rank's waits then
    // throw errc::aborted) before the exception reaches the caller.
    try {
        return poll_shared();
    } catch (const std::exception& e) {
        if (!_tp.job_failed()) {
            const char* who = t_progress_of == this ? "progress thread" : "a polling thread";
            _tp.fail_job("rank " + std::to_string(_rank) + " (" + who + "): " + e.what());
        }
        throw;
    }
}

std::size_t context_impl::poll_shared() {
    std::size_t n = 0;
    {
        std::unique_lock lock(_poll_mutex, std::try_to_lock);
        if (lock.owns_lock()) {
            n = poll_locked();
        } else if (_tp.job_failed()) [[unlikely]] {
            // Another thread is polling: still report a failed job, as every poll does.
            throw error(errc::aborted,
                        "rank " + std::to_string(_rank) + ": job aborted: " + _tp.failure_reason());
        }
    }
    if (_work_ready.load(std::memory_order_acquire)) n += run_work();
    return n;
}

// Outside the poll lock: several threads of the rank may run work units at once.
std::size_t context_impl::run_work() {
    if (!_work_fn) return 0;
    std::shared_lock lock(_work_mutex);
    frame_scope scope(this, 0);
    return _work_fn();
}

void context_impl::reject(int source, const char* why) noexcept {
    bump(_bad);
    if (_bad.load(std::memory_order_relaxed) <= 10) {
        std::fprintf(stderr, "am: rank %d: dropped an invalid message from rank %d: %s\n", _rank,
                     source, why);
    }
}

// The limits of incoming.hpp, read from the context where the check needs them.
struct dispatch_limits {
    const context_impl& c;
    std::uint32_t handlers() const noexcept { return c._table.count(); }
    std::uint16_t signature(std::uint32_t i) const noexcept { return c._table.signature(i); }
    std::size_t max_medium() const noexcept { return c._max_medium; }
    std::span<std::byte> segment() const noexcept { return c._own_segment; }
};

void context_impl::deliver(int source, unsigned lane, std::byte* msg, std::size_t len) {
    incoming in;
    if (check_plain(msg, len, source, dispatch_limits{*this}, in) != nullptr) [[unlikely]]
        return deliver_unusual(source, lane, msg, len);
    dispatch(source, lane, msg, in);
}

// A message check_plain refused: the inline-long form, or invalid. Checked again from the
// start by check_incoming (so the hot path keeps no reason live; this path is rare).
void context_impl::deliver_unusual(int source, unsigned lane, std::byte* msg, std::size_t len) {
    incoming in;
    if (const char* why = check_incoming(msg, len, source, dispatch_limits{*this}, in)) {
        return reject(source, why);
    }
    dispatch(source, lane, msg, in);
}

inline void context_impl::dispatch(int source, unsigned lane, std::byte* msg, const incoming& in) {
    AM_ASSERT(in.handler < _table.count() && _table.hot(in.handler).fn != nullptr,
              "a checked message names a registered handler");
    AM_ASSERT(in.kind != category::long_am ||
                  (in.payload >= _own_segment.data() &&
                   in.length <= _own_segment.size() -
                                    static_cast<std::size_t>(in.payload - _own_segment.data())),
              "a long payload lies inside the segment");
    handler_counters& ctr = _table.counters(in.handler);
    if (in.length != 0) [[unlikely]] {  // medium and long payloads (short messages have none)
        // A long payload that travelled inline goes into the segment at its offset first.
        if (in.inline_bytes != nullptr) std::memcpy(in.payload, in.inline_bytes, in.length);
        bump(ctr.received_bytes, in.length);
    }
    bump(ctr.received);
    token t(this, source, static_cast<detail::lane>(lane));
    frame_scope scope(this, lane);
    const handler_hot& h = _table.hot(in.handler);
    h.fn(h.obj, t, reinterpret_cast<const std::uint64_t*>(msg + sizeof(wire_header)), in.payload,
         in.length);
}

}  // namespace am::detail
