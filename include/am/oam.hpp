// SPDX-License-Identifier: MIT
/// @file
/// Optimistic Active Messages (Wallach et al., PPoPP 1995): handlers that may block.
///
/// An *optimistic handler* is registered with `am::optimistic_handler` and sent to like any
/// handler (`ctx.request(rank, h, args...)`). It runs at once on the polling thread, on a
/// pooled stack of its own. If it never blocks it costs what a plain handler costs plus two
/// stack switches. If it blocks — on an `am::mutex` another holds, an
/// `am::condition_variable`, an `am::future` not yet ready (an RPC's result), or
/// `ctx.wait(pred)` / `counter::wait` — it becomes a user-level thread: the poller carries on
/// with the next message and the handler resumes inside a later poll of its rank once what it
/// waits for is ready. docs/rpc.md explains the rules; in short:
///
/// - **Ordering.** Messages from one source start their handlers in the order sent. A handler
///   that blocks does not hold back later messages: they run (and may overtake it) while it
///   waits. Use an `am::mutex` where a later message must not see the state of an unfinished
///   earlier one.
/// - **Blocking** is allowed only in optimistic handlers and rank code. A plain handler that
///   would block gets `am::error` (errc::bad_context). Collectives (barrier, quiesce, epochs)
///   are never allowed in handlers.
/// - **The token** (reply, source) is valid until the handler first blocks; a reply after
///   that throws errc::bad_reply (answer with a request, or use `am::rpc`).
/// - **Threads.** A blocked handler resumes on a thread that polls its rank: the rank's own
///   thread, or its progress thread (config::progress_thread / thread_multiple). Do not keep a
///   `thread_local`'s address across a blocking call.
/// - **Limits.** `config::oam_stack_bytes` per handler stack (a 1 MiB guard gap below it turns an
///   overflow into a message naming the handler); `config::oam_max_threads` handlers blocked
///   at once per rank (one more is refused with errc::too_large naming the limit).
/// - **Quiescence.** `quiesce()` and the end of `am::run` wait for blocked handlers to finish.
///
/// Thread-safety: `mutex`, `condition_variable`, `promise` and `future` may be used by any
/// thread of the job (rank code, handlers, progress threads, other thread ranks).
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

/// Registers callable `f` as an optimistic handler of this rank: the same rules, signature and
/// handle as `context::handler` (collective, sealed by the next barrier, checked by the
/// handshake — an optimistic and a plain registration of the same callable differ there), but
/// `f` may block; see the file comment.
template <class F>
auto optimistic_handler(context& ctx, F&& f) {
    using D = std::remove_cvref_t<F>;
    using H = detail::handle_t<D>;
    using O = detail::optimistic_callable<D>;
    auto* obj = new O{detail::oam_of(ctx, "am::optimistic_handler"), std::forward<F>(f)};
    detail::handler_desc d{H::kind,
                           H::nargs,
                           &detail::invoke_optimistic<D>,
                           obj,
                           &detail::destroy_callable<O>,
                           detail::type_name<O>(),
                           typeid(O).name()};
    return H{detail::core_register(detail::access::impl(ctx), d)};
}

/// Registers function `Fn` as an optimistic handler (see the callable overload).
template <auto Fn>
auto optimistic_handler(context& ctx) {
    return optimistic_handler(ctx, detail::fn_object<Fn>{});
}

/// A mutex for handlers and rank code. `lock()` in an optimistic handler blocks the handler
/// (it becomes a thread if the mutex is held); in rank code it polls the context given at
/// construction until the mutex is free; in a plain handler it succeeds only when the mutex is
/// free and otherwise throws errc::bad_context. `unlock()` hands the mutex to the
/// longest-waiting party (FIFO). Not recursive: locking it again from the handler that holds
/// it throws errc::bad_context (the handler would wait on itself). Usable with
/// std::lock_guard / std::unique_lock.
class mutex {
  public:
    explicit mutex(context& ctx);
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;
    void lock();
    bool try_lock() noexcept;
    void unlock();

  private:
    friend class condition_variable;
    detail::oam_sched* _s;
    detail::oam_waitq _q;
    bool _locked = false;          // under _q's lock
    const void* _owner = nullptr;  // the fiber (or rank-code marker) holding it
};

/// A condition variable over `am::mutex`, with the same blocking rules. `notify_*` may be
/// called with or without the mutex held, from any thread.
class condition_variable {
  public:
    condition_variable() = default;
    condition_variable(const condition_variable&) = delete;
    condition_variable& operator=(const condition_variable&) = delete;
    /// Releases `lk`, waits for a notify, takes `lk` again.
    void wait(std::unique_lock<am::mutex>& lk);
    template <class Pred>
    void wait(std::unique_lock<am::mutex>& lk, Pred pred) {
        while (!pred()) wait(lk);
    }
    void notify_one() noexcept;
    void notify_all() noexcept;

  private:
    detail::oam_waitq _q;
};

/// Counters of a rank's optimistic handlers.
struct oam_stats {
    std::uint64_t handlers = 0;   ///< optimistic handlers started (incl. continuations)
    std::uint64_t blocked = 0;    ///< of which became threads (blocked at least once)
    std::uint64_t resumes = 0;    ///< resumptions of blocked handlers
    std::uint64_t live = 0;       ///< blocked now
    std::uint64_t peak_live = 0;  ///< most blocked at once
    std::uint64_t stacks = 0;     ///< stacks allocated (pooled, reused)
    std::size_t stack_bytes = 0;  ///< usable bytes per stack
    std::size_t max_threads = 0;  ///< the limit on `live`
};
/// This rank's counters. Rank code; any time.
[[nodiscard]] oam_stats optimistic_stats(context& ctx);

}  // namespace am
