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
#include <am/detail/oam.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <utility>

namespace am {

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
