// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/future.hpp>, not part of the API: the shared state of a promise and its
/// future (src/oam/future.cpp).
#pragma once

#include <am/detail/oam.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace am {

namespace detail {

/// `void` as a storable value.
template <class T>
using stored_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

/// The part of a future's shared state that does not depend on T (src/oam/future.cpp).
class future_base {
  public:
    explicit future_base(oam_sched* s) noexcept : _s(s) {}
    future_base(const future_base&) = delete;
    future_base& operator=(const future_base&) = delete;
    virtual ~future_base();
    // States are small and made per RPC: a per-thread cache of blocks spares malloc.
    static void* operator new(std::size_t bytes);
    static void operator delete(void* p, std::size_t bytes) noexcept;

    void ref() noexcept { _refs.fetch_add(1, std::memory_order_relaxed); }
    void unref() noexcept {
        if (_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    [[nodiscard]] bool ready() const noexcept { return _ready.load(std::memory_order_acquire); }
    /// Waits until ready (see the file comment for where it may block); `call` names the API.
    void wait(const char* call);
    /// Waits, then marks the value taken; rethrows a stored exception. Throws
    /// errc::invalid_argument when it was taken already.
    void take(const char* call);
    /// Stores `e` and completes. false (and nothing changes) when complete already.
    bool set_exception(std::exception_ptr e) noexcept;
    /// Runs `f` (an optimistic task of this state's rank) once the state completes.
    void on_ready(std::function<void()> f);
    [[nodiscard]] oam_sched* sched() const noexcept { return _s; }
    [[nodiscard]] bool has_error() const noexcept { return static_cast<bool>(_error); }
    [[nodiscard]] std::exception_ptr error() const noexcept { return _error; }

  protected:
    /// Begins completing: false when complete already. On true the caller stores the value,
    /// then calls `publish()`.
    bool claim() noexcept { return !_claimed.exchange(true, std::memory_order_acq_rel); }
    void publish() noexcept;

  private:
    oam_sched* _s;
    std::atomic<int> _refs{1};
    std::atomic<bool> _claimed{false};
    std::atomic<bool> _ready{false};
    bool _taken = false;
    std::exception_ptr _error;
    oam_waitq _q;
    std::vector<std::function<void()>> _then;  // under _q's lock
};

template <class T>
class future_state final : public future_base {
  public:
    using future_base::future_base;
    template <class... V>
    bool set_value(V&&... v) {
        if (!claim()) return false;
        _value.emplace(std::forward<V>(v)...);
        publish();
        return true;
    }
    stored_t<T>& value() noexcept { return *_value; }

  private:
    std::optional<stored_t<T>> _value;
};

/// A reference-counted pointer to a state.
template <class T>
class state_ref {
  public:
    state_ref() = default;
    explicit state_ref(future_state<T>* p) noexcept : _p(p) {}
    state_ref(const state_ref& o) noexcept : _p(o._p) {
        if (_p != nullptr) _p->ref();
    }
    state_ref(state_ref&& o) noexcept : _p(std::exchange(o._p, nullptr)) {}
    state_ref& operator=(state_ref o) noexcept {
        std::swap(_p, o._p);
        return *this;
    }
    ~state_ref() {
        if (_p != nullptr) _p->unref();
    }
    future_state<T>* get() const noexcept { return _p; }
    future_state<T>* operator->() const noexcept { return _p; }
    explicit operator bool() const noexcept { return _p != nullptr; }

  private:
    future_state<T>* _p = nullptr;
};

[[noreturn]] void future_invalid(const char* call);
[[noreturn]] void promise_invalid(const char* call);
std::exception_ptr broken_promise_error();

template <class F, class T>
struct then_result {
    using type =
        std::conditional_t<std::is_void_v<T>, std::invoke_result<F>, std::invoke_result<F, T>>;
};

}  // namespace detail

}  // namespace am
