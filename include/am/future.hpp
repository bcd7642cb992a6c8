// SPDX-License-Identifier: MIT
/// @file
/// `am::promise<T>` / `am::future<T>`: a value (or an exception) that arrives later — an
/// RPC's result, or anything a handler or rank code sets — with `then` and `when_all`.
///
/// Waiting follows the rules of <am/oam.hpp>: `get()` / `wait()` in rank code poll the calling
/// rank's context; in an optimistic handler (or a `then` continuation) they block the handler,
/// which becomes a thread and resumes when the value is set; in a plain handler they throw
/// errc::bad_context unless the value is ready.
///
/// Completion: a future is ready once its promise was given a value or an exception, or was
/// destroyed without either (then `get()` throws errc::broken_promise). `get()` takes the value
/// out: a second `get()` throws errc::invalid_argument. Continuations (`then`) run once the
/// value is set, as optimistic handlers of the rank that created the promise, so they may
/// block and send; they run after the setter's call returns to its poll or rank code.
///
/// Thread-safety: one promise and one future per state; either may be moved to and used from
/// any thread of the job. Lifetime: the state lives while the promise, the future or a
/// pending continuation refers to it.
#pragma once

#include <am/detail/future.hpp>
#include <am/oam.hpp>

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

template <class T>
class future;
template <class T>
class promise;

/// The producing side. Created for a rank (whose context rank-code waits poll and whose polls
/// run continuations); movable, not copyable.
template <class T>
class promise {
  public:
    explicit promise(context& ctx)
        : _st(new detail::future_state<T>(detail::oam_of(ctx, "am::promise"))) {}
    promise(promise&&) noexcept = default;
    promise& operator=(promise&& o) noexcept {
        if (this != &o) {
            abandon();
            _st = std::move(o._st);
            _future_taken = o._future_taken;
        }
        return *this;
    }
    ~promise() { abandon(); }

    /// The future of this promise; once (then errc::invalid_argument).
    future<T> get_future() {
        if (!_st || _future_taken) detail::promise_invalid("am::promise::get_future");
        _future_taken = true;
        return future<T>(_st);
    }
    /// Completes the future with `v` (nothing for `promise<void>`). Errc::invalid_argument
    /// when it is complete already.
    template <class... V>
    void set_value(V&&... v) {
        if (!_st || !_st->set_value(std::forward<V>(v)...))
            detail::promise_invalid("am::promise::set_value");
    }
    /// Completes the future with an exception that `get()` rethrows.
    void set_exception(std::exception_ptr e) {
        if (!_st || !_st->set_exception(std::move(e)))
            detail::promise_invalid("am::promise::set_exception");
    }

    /// For the library: the state (RPC results are set through it).
    [[nodiscard]] const detail::state_ref<T>& state() const noexcept { return _st; }

  private:
    void abandon() noexcept {
        if (_st) (void)_st->set_exception(detail::broken_promise_error());
        _st = {};
    }
    detail::state_ref<T> _st;
    bool _future_taken = false;
};

/// The consuming side: movable, not copyable; `get()` once.
template <class T>
class future {
  public:
    future() = default;
    explicit future(detail::state_ref<T> st) noexcept : _st(std::move(st)) {}
    future(future&&) noexcept = default;
    future& operator=(future&&) noexcept = default;

    /// True while the future refers to a state whose value has not been taken.
    [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(_st); }
    /// True when the value (or exception) is there: `get()` will not wait. Never blocks.
    [[nodiscard]] bool ready() const {
        if (!_st) detail::future_invalid("am::future::ready");
        return _st->ready();
    }
    /// Waits for the value without taking it.
    void wait() const {
        if (!_st) detail::future_invalid("am::future::wait");
        _st->wait("am::future::wait");
    }
    /// Waits, takes the value (or rethrows the exception) and leaves the future invalid.
    T get() {
        if (!_st) detail::future_invalid("am::future::get");
        _st->wait("am::future::get");  // a refused wait (plain handler) leaves the future valid
        detail::state_ref<T> st = std::move(_st);
        st->take("am::future::get");
        if constexpr (!std::is_void_v<T>) return std::move(st->value());
    }
    /// A future of `f(value)`, computed once this one is ready: `f` runs as an optimistic
    /// handler of the promise's rank (it may block, send, call RPCs). An exception of this
    /// future, or one `f` throws, goes to the returned future instead. Leaves this invalid.
    template <class F>
    auto then(F f) -> future<typename detail::then_result<F, T>::type::type> {
        using U = typename detail::then_result<F, T>::type::type;
        if (!_st) detail::future_invalid("am::future::then");
        detail::state_ref<T> src = std::move(_st);
        detail::state_ref<U> dst(new detail::future_state<U>(src->sched()));
        detail::future_state<T>* s = src.get();
        s->on_ready([src = std::move(src), dst, f = std::move(f)]() mutable {
            if (src->has_error()) {
                (void)dst->set_exception(src->error());
                return;
            }
            try {
                if constexpr (std::is_void_v<U>) {
                    if constexpr (std::is_void_v<T>) {
                        f();
                    } else {
                        f(std::move(src->value()));
                    }
                    (void)dst->set_value();
                } else if constexpr (std::is_void_v<T>) {
                    (void)dst->set_value(f());
                } else {
                    (void)dst->set_value(f(std::move(src->value())));
                }
            } catch (...) {
                (void)dst->set_exception(std::current_exception());
            }
        });
        return future<U>(std::move(dst));
    }

    /// For the library.
    [[nodiscard]] const detail::state_ref<T>& state() const noexcept { return _st; }

  private:
    detail::state_ref<T> _st;
};

/// A future that is ready with `v`.
template <class T>
future<std::decay_t<T>> make_ready_future(context& ctx, T&& v) {
    promise<std::decay_t<T>> p(ctx);
    future<std::decay_t<T>> f = p.get_future();
    p.set_value(std::forward<T>(v));
    return f;
}

/// A future of every value of `fs`, in order, ready once all are; the first exception (in
/// order) instead if any has one. `fs` are left invalid. For `T = void`, a `future<void>`.
template <class T>
auto when_all(context& ctx, std::vector<future<T>>& fs)
    -> future<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>> {
    using R = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;
    struct gather {
        std::vector<detail::state_ref<T>> parts;
        std::atomic<std::size_t> left;
        detail::state_ref<R> out;
    };
    detail::state_ref<R> out(new detail::future_state<R>(detail::oam_of(ctx, "am::when_all")));
    auto g = std::make_shared<gather>();
    g->out = out;
    for (future<T>& f : fs) {
        if (!f.valid()) detail::future_invalid("am::when_all");
        g->parts.push_back(f.state());
    }
    fs.clear();
    g->left.store(g->parts.size() + 1);
    auto finish = [g] {
        if (g->left.fetch_sub(1) != 1) return;
        for (auto& p : g->parts) {
            if (p->has_error()) {
                (void)g->out->set_exception(p->error());
                return;
            }
        }
        if constexpr (std::is_void_v<T>) {
            (void)g->out->set_value();
        } else {
            std::vector<T> v;
            v.reserve(g->parts.size());
            for (auto& p : g->parts) v.push_back(std::move(p->value()));
            (void)g->out->set_value(std::move(v));
        }
    };
    for (auto& p : g->parts) p->on_ready(finish);
    finish();
    return future<R>(std::move(out));
}

/// A future of the tuple of the values of `fs...` (void values as std::monostate).
template <class... T>
auto when_all(context& ctx, future<T>&... fs) -> future<std::tuple<detail::stored_t<T>...>> {
    using R = std::tuple<detail::stored_t<T>...>;
    struct gather {
        std::tuple<detail::state_ref<T>...> parts;
        std::atomic<std::size_t> left{sizeof...(T) + 1};
        detail::state_ref<R> out;
    };
    detail::state_ref<R> out(new detail::future_state<R>(detail::oam_of(ctx, "am::when_all")));
    ((fs.valid() ? void() : detail::future_invalid("am::when_all")), ...);
    auto g = std::make_shared<gather>();
    g->out = out;
    g->parts = std::tuple<detail::state_ref<T>...>(fs.state()...);
    (void(fs = future<T>()), ...);
    auto finish = [g] {
        if (g->left.fetch_sub(1) != 1) return;
        std::exception_ptr e;
        std::apply(
            [&](auto&... p) { ((!e && p->has_error() ? void(e = p->error()) : void()), ...); },
            g->parts);
        if (e) {
            (void)g->out->set_exception(e);
            return;
        }
        std::apply([&](auto&... p) { (void)g->out->set_value(std::move(p->value())...); },
                   g->parts);
    };
    std::apply([&](auto&... p) { (p->on_ready(finish), ...); }, g->parts);
    finish();
    return future<R>(std::move(out));
}

}  // namespace am
