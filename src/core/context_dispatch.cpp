// SPDX-License-Identifier: MIT
// context_impl: receiving — polls, the check of each incoming message (incoming.hpp) and the
// handler call; deferred and parallel work of the layers.
#include "context_common.hpp"

#include "../util/assert.hpp"
#include "../util/maybe_lock.hpp"

#include <cstdio>
#include <cstring>

namespace am::detail {

std::size_t context_impl::run_deferred() {
    _deferred_ready.store(false, std::memory_order_relaxed);
    if (_deferred_fns.empty()) return 0;
    frame_scope scope(this, 0);
    std::size_t n = 0;
    for (const auto& fn : _deferred_fns) n += fn();
    return n;
}

std::size_t context_impl::poll_slow() {
    if (_trace.load(std::memory_order_relaxed) != nullptr) return poll_traced();
    if (_pending_total.load(std::memory_order_relaxed) != 0) flush_pending();
    std::size_t n = _ring != nullptr ? _ring->poll_into(*this) : _tp.poll(*this);
    if (_deferred_ready.load(std::memory_order_relaxed)) [[unlikely]]
        n += run_deferred();
    return n;
}

// A send from the rank's own thread that found no room: it waits for room, handling what
// arrives meanwhile (traced as a wait for credits). Out of line and in this file so that the
// send path's file keeps its inlining budget for the rings' reserve and commit.
void context_impl::send_blocked(const send_desc& d, std::size_t bytes, bool inline_long) {
    unsigned backoff = 0;
    const trace_span span(trace(), trace_kind::wait,
                          static_cast<std::uint32_t>(trace_cause::credits),
                          static_cast<std::uint64_t>(d.dest));
    for (;;) {
        poll_or_idle(backoff);
        util::maybe_lock lock(_send_mutex, _locking);
        if (try_inject(d, bytes, inline_long)) {
            count_sent(d);
            return;
        }
    }
}

void context_impl::poll_after_send() {
    (void)_ring->poll_into(*this);  // every send from the rank's own code makes progress
}

std::size_t core_poll(context_impl* c) {
    return c->poll();
}

std::size_t context_impl::poll_general() {
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

void context_impl::deliver(int source, unsigned lane, std::byte* msg, std::size_t len) {
    deliver_inline(source, lane, msg, len);
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

}  // namespace am::detail
