// SPDX-License-Identifier: MIT
// A scoped lock that locks only when asked: state shared with a progress thread is locked,
// the single-threaded default pays nothing.
#pragma once

#include <mutex>

namespace am::util {

/// Any lockable: std::mutex (the usual), std::recursive_mutex (a layer whose handlers re-enter).
template <class M = std::mutex>
class maybe_lock {
  public:
    maybe_lock(M& m, bool on) : _m(on ? &m : nullptr) {
        if (_m) _m->lock();
    }
    ~maybe_lock() {
        if (_m) _m->unlock();
    }
    maybe_lock(const maybe_lock&) = delete;
    maybe_lock& operator=(const maybe_lock&) = delete;

  private:
    M* _m;
};

}  // namespace am::util
