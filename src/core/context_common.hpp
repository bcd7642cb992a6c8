// SPDX-License-Identifier: MIT
// What the parts of context_impl (context_*.cpp) share and nothing else includes.
#pragma once

#include "context_impl.hpp"

#include "../util/error.hpp"

namespace am::detail {

/// Marks the calling thread as running a handler of `c` on `lane` for its lifetime.
class frame_scope {
  public:
    frame_scope(const context_impl* c, unsigned lane) noexcept : _saved(t_frame) {
        t_frame = frame_of(c, lane);
    }
    ~frame_scope() { t_frame = _saved; }
    frame_scope(const frame_scope&) = delete;
    frame_scope& operator=(const frame_scope&) = delete;

  private:
    std::uintptr_t _saved;
};

constexpr unsigned lane_of(bool reply) {
    return reply ? 1u : 0u;
}

/// The context whose progress thread the calling thread is, if any (names it in failures).
inline thread_local const context_impl* t_progress_of = nullptr;

using util::fail;

// A poll under the locks the caller holds: in every part that polls (dispatch, and sends that
// make progress), so that the ring scan inlines into each.
inline std::size_t context_impl::poll_locked() {
    if (_pending_total.load(std::memory_order_relaxed) != 0) flush_pending();
    // The ring transport is called directly so its scan inlines.
    std::size_t n = _ring != nullptr ? _ring->poll_into(*this) : _tp.poll(*this);
    if (_deferred_ready.load(std::memory_order_relaxed)) [[unlikely]]
        n += run_deferred();
    return n;
}

}  // namespace am::detail
