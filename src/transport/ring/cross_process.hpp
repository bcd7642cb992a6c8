// SPDX-License-Identifier: MIT
// What ThreadSanitizer cannot see when ranks are processes (shm): the order that runs through
// another process. A message or a collective this process observes may depend on anything it
// did before it last published (a message, a collective arrival): the peer saw that and acted
// on it. TSan watches one process, so it misses that edge and reports, for example, a rank's
// check of its memory after a barrier against its progress thread applying a peer's update
// that the peer sent only after the barrier. Under TSan, `publish` releases
// and `observe` acquires one object of the rank's transport, which tells it exactly that.
// Only ranks that are processes turn it on: with ranks as threads TSan sees the real order, and
// the annotation would hide races. Without TSan this is empty and costs nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define AM_RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#define AM_RING_TSAN 1
#endif
#endif

namespace am::transport::ring {

class cross_process_order {
  public:
    /// From now on `publish` and `observe` annotate (ranks are processes).
    void enable() noexcept {
#ifdef AM_RING_TSAN
        _on = true;
#endif
    }
    /// Before this process publishes something another process may act on.
    void publish() noexcept {
#ifdef AM_RING_TSAN
        if (_on) __tsan_release(this);
#endif
    }
    /// After this process observed something another process published.
    void observe() noexcept {
#ifdef AM_RING_TSAN
        if (_on) __tsan_acquire(this);
#endif
    }

  private:
#ifdef AM_RING_TSAN
    bool _on = false;
#endif
};

}  // namespace am::transport::ring
