// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/oam.hpp>, not part of the API: waiter queues, the entry points of the
/// optimistic-handler scheduler (src/oam/sched.cpp, sync.cpp) and the handler-table glue.
#pragma once

#include <am/context.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <utility>

namespace am {

namespace detail {

struct oam_sched;  // one rank's scheduler of optimistic handlers (src/oam)
struct oam_fiber;  // a handler with a stack of its own

/// One party waiting on a mutex, condition variable or future: a blocked handler (`fiber`) or
/// rank code, which polls until `woken`. Lives on the waiter's stack.
struct oam_waiter {
    oam_waiter* next = nullptr;
    oam_fiber* fiber = nullptr;
    std::atomic<bool> woken{false};
};

/// A FIFO of waiters under a spin lock (held for a few instructions).
class oam_waitq {
  public:
    void lock() noexcept {
        while (_busy.exchange(true, std::memory_order_acquire)) {
            while (_busy.load(std::memory_order_relaxed)) __builtin_ia32_pause();
        }
    }
    void unlock() noexcept { _busy.store(false, std::memory_order_release); }
    void push(oam_waiter* w) noexcept {
        w->next = nullptr;
        (_tail != nullptr ? _tail->next : _head) = w;
        _tail = w;
    }
    oam_waiter* pop() noexcept {
        oam_waiter* w = _head;
        if (w != nullptr) {
            _head = w->next;
            if (_head == nullptr) _tail = nullptr;
        }
        return w;
    }
    [[nodiscard]] bool empty() const noexcept { return _head == nullptr; }
    /// Takes every waiter out; the result is a chain through `next`, oldest first.
    oam_waiter* take_all() noexcept {
        _tail = nullptr;
        return std::exchange(_head, nullptr);
    }
    /// Takes `w` out wherever it is; false when it is not queued (already woken).
    bool remove(oam_waiter* w) noexcept;

  private:
    std::atomic<bool> _busy{false};
    oam_waiter* _head = nullptr;
    oam_waiter* _tail = nullptr;
};

/// The rank's scheduler; throws am::error(errc::bad_context) naming `call` for a context
/// not made by am::run.
oam_sched* oam_of(context& ctx, const char* call);
context& oam_context(oam_sched* s) noexcept;
/// The optimistic handler running on this thread, or null (rank code, plain handlers).
oam_fiber* oam_current() noexcept;
/// Queues `w` in `q` and waits until it is woken. The caller holds `q`'s lock, which is
/// released once the wait is safe (also when it throws). In an optimistic handler the handler
/// becomes a thread and the call returns when it is resumed; in rank code it polls `s`'s context;
/// in a plain handler it takes `w` out again and throws errc::bad_context naming `call`.
void oam_block(oam_sched* s, oam_waitq& q, oam_waiter& w, const char* call);
/// Makes `w`'s party runnable (the caller has popped it). Any thread.
void oam_wake(oam_waiter* w) noexcept;
/// Runs `run(arg)` at once as an optimistic handler named `name` (it may block); `arg` is
/// heap memory owned by the task, freed with `drop(arg)` after `run` (or unrun, at the end).
void oam_spawn(oam_sched* s, void (*run)(void*), void (*drop)(void*), void* arg,
               std::string_view name);

/// What the handler table's entry of an optimistic handler calls.
struct oam_task {
    invoke_fn fn;
    void* obj;
    token* tok;
    const std::uint64_t* args;
    unsigned nargs;
    std::byte* payload;
    std::size_t len;
    category kind;
    std::string_view name;
};
void oam_dispatch(oam_sched* s, const oam_task& task);

template <class D>
struct optimistic_callable {
    oam_sched* sched;
    D f;
};

template <class D>
void invoke_optimistic(void* obj, token& t, const std::uint64_t* args, std::byte* payload,
                       std::size_t len) {
    auto* o = static_cast<optimistic_callable<D>*>(obj);
    using H = handle_t<D>;
    oam_dispatch(o->sched, oam_task{&invoke_callable<D>, &o->f, &t, args, H::nargs, payload, len,
                                    H::kind, type_name<D>()});
}

/// Function `Fn` as a callable of the same signature (its type names `Fn`).
template <auto Fn, class L = typename params_of<decltype(Fn)>::type>
struct fn_object;
template <auto Fn, class... P>
struct fn_object<Fn, type_list<P...>> {
    void operator()(P... p) const { Fn(std::forward<P>(p)...); }
};

}  // namespace detail

}  // namespace am
