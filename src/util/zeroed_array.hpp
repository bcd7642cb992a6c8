// SPDX-License-Identifier: MIT
// A fixed-size array in fresh anonymous memory: every element starts as all-zero bytes and
// costs no memory until it is written (pages are mapped on first write). For per-peer state
// that a rank of a large job touches only for the peers it talks to.
#pragma once

#include <am/error.hpp>

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

namespace am::util {

/// `n` elements of T, each all-zero bytes until assigned. T must be trivially copyable and
/// destructible, and all-zero bytes must be a valid T (its "empty" state).
template <class T>
class zeroed_array {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

  public:
    zeroed_array() = default;
    explicit zeroed_array(std::size_t n) : _bytes(n * sizeof(T)) {
        if (_bytes == 0) return;
        void* p = mmap(nullptr, _bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            throw error(errc::system, "am: mmap of " + std::to_string(_bytes) +
                                          " bytes failed: " + std::strerror(errno));
        }
        _p = static_cast<T*>(p);
    }
    ~zeroed_array() {
        if (_p != nullptr) munmap(_p, _bytes);
    }
    zeroed_array(zeroed_array&& o) noexcept
        : _p(std::exchange(o._p, nullptr)), _bytes(std::exchange(o._bytes, 0)) {}
    zeroed_array& operator=(zeroed_array&& o) noexcept {
        std::swap(_p, o._p);
        std::swap(_bytes, o._bytes);
        return *this;
    }

    T& operator[](std::size_t i) noexcept { return _p[i]; }
    const T& operator[](std::size_t i) const noexcept { return _p[i]; }

  private:
    T* _p = nullptr;
    std::size_t _bytes = 0;
};

}  // namespace am::util
