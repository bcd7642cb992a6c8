// SPDX-License-Identifier: MIT
// A scoped lock that locks only when asked: state shared with a progress thread is locked,
// the single-threaded default pays nothing.
#pragma once

#include <mutex>

namespace am::util {

class maybe_lock {
  public:
    maybe_lock(std::mutex& m, bool on) : _m(on ? &m : nullptr) {
        if (_m) _m->lock();
    }
    ~maybe_lock() {
        if (_m) _m->unlock();
    }
    maybe_lock(const maybe_lock&) = delete;
    maybe_lock& operator=(const maybe_lock&) = delete;

  private:
    std::mutex* _m;
};

}  // namespace am::util
