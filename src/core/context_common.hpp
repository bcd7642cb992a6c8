// SPDX-License-Identifier: MIT
// What the parts of context_impl (context_*.cpp) share and nothing else includes.
#pragma once

#include "context_impl.hpp"

#include "../util/assert.hpp"
#include "../util/error.hpp"
#include "incoming.hpp"

#include <cstring>

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
    // One test per poll for both queued messages and tracing (none per message: the traced
    // poll wraps each delivery); an untraced poll pays nothing for tracing.
    if (_poll_slow.load(std::memory_order_relaxed)) [[unlikely]]
        return poll_slow();
    // The ring transport is called directly so its scan inlines.
    std::size_t n = _ring != nullptr ? _ring->poll_into(*this) : _tp.poll(*this);
    if (_deferred_ready.load(std::memory_order_relaxed)) [[unlikely]]
        n += run_deferred();
    return n;
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

// The limits of incoming.hpp, read from the context where the check needs them.
struct dispatch_limits {
    const context_impl& c;
    std::uint32_t handlers() const noexcept { return c._table.count(); }
    std::uint16_t signature(std::uint32_t i) const noexcept { return c._table.signature(i); }
    std::size_t max_medium() const noexcept { return c._max_medium; }
    std::span<std::byte> segment() const noexcept { return c._own_segment; }
};

inline void context_impl::deliver_inline(int source, unsigned lane, std::byte* msg,
                                         std::size_t len) {
    incoming in;
    if (check_plain(msg, len, source, dispatch_limits{*this}, in) != nullptr) [[unlikely]]
        return deliver_unusual(source, lane, msg, len);
    dispatch(source, lane, msg, in);
}

// The program's poll: on the rank's own thread outside handlers (its frame word is this context
// with `home_mark`), without a progress thread, nothing but the scan. One thread-local load and
// one compare decide it; `poll_general` handles handlers (no-op), other threads and locking.
inline std::size_t context_impl::poll() {
    if (_locking || t_frame != (frame_of(this, 0) | home_mark)) [[unlikely]]
        return poll_general();
    return poll_locked();
}

}  // namespace am::detail
