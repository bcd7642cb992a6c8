// SPDX-License-Identifier: MIT
// The per-thread word that says which context's handler a thread runs, or whose rank's own
// thread it is. The core keeps it; <am/core/layer.hpp> reads it so that core::check_thread
// costs a compare on the hot paths of layers (no call). Nothing else uses it.
#pragma once

#include <cstdint>

namespace am::detail {

/// The handler running on this thread, if any: its context's address with the lane in bit 0.
/// Outside handlers, the rank's own thread holds its context's address with bit 1 set
/// (`home_mark`): the short-send hot path, which reads this word anyway, tells from it that the
/// calling thread may use the context. Per thread, not per process: with ranks as threads every
/// rank has its own, and a progress thread has its own too.
inline thread_local std::uintptr_t t_frame [[gnu::tls_model("initial-exec")]] = 0;
inline constexpr unsigned home_mark = 2;

/// Set while an optimistic handler (src/oam) runs on its own stack on this thread: how
/// `context::wait` yields it instead of refusing to wait in a handler.
struct fiber_hook {
    void (*yield)(void* arg);
    void* arg;
};
inline thread_local const fiber_hook* t_fiber_hook [[gnu::tls_model("initial-exec")]] = nullptr;

inline std::uintptr_t frame_of(const void* c, unsigned lane) noexcept {
    return reinterpret_cast<std::uintptr_t>(c) | lane;
}

}  // namespace am::detail
