// SPDX-License-Identifier: MIT
// The scheduler of optimistic handlers: a handler runs at once on a pooled fiber (a stack of
// its own, switched to with Boost.Context's boost::context::fiber); when it blocks it switches back
// and the poller carries on; a woken fiber goes on the ready list, which the rank's polls run (the
// core's deferred work). Switches are annotated for ASan and TSan here (Boost 1.74's fcontext
// fiber calls no sanitizer hook itself).
//
// One boost::context::fiber per pooled stack, made once and never finished: its function loops,
// running one job per turn, so a handler costs two switches (in and out; four if it blocks) and
// no fiber record is built per message. A fiber is never destroyed holding a context (that
// would throw forced_unwind through a blocked handler's frames): ~oam_sched abandons them.
#include "oam_sched.hpp"

#include "../util/assert.hpp"
#include "../util/error.hpp"
#include "../util/maybe_lock.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>

// Boost annotates its own switches when built so; ours would then be made twice.
#if defined(BOOST_USE_ASAN) || defined(BOOST_USE_TSAN) || defined(BOOST_USE_UCONTEXT)
#error "src/oam annotates its fiber switches itself: build without BOOST_USE_ASAN/TSAN/UCONTEXT"
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define AM_OAM_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define AM_OAM_TSAN 1
#endif

namespace am::detail {

namespace bctx = boost::context;

namespace {

// ------------------------------------------------------------------ sanitizer annotations

inline void asan_start([[maybe_unused]] void** fake, [[maybe_unused]] const void* bottom,
                       [[maybe_unused]] std::size_t size) noexcept {
#ifdef AM_OAM_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#endif
}
inline void asan_finish([[maybe_unused]] void* fake, [[maybe_unused]] const void** bottom,
                        [[maybe_unused]] std::size_t* size) noexcept {
#ifdef AM_OAM_ASAN
    __sanitizer_finish_switch_fiber(fake, bottom, size);
#endif
}
inline void* tsan_current() noexcept {
#ifdef AM_OAM_TSAN
    return __tsan_get_current_fiber();
#else
    return nullptr;
#endif
}
inline void tsan_switch([[maybe_unused]] void* to) noexcept {
#ifdef AM_OAM_TSAN
    __tsan_switch_to_fiber(to, 0);
#endif
}
inline void* tsan_create() noexcept {
#ifdef AM_OAM_TSAN
    return __tsan_create_fiber(0);
#else
    return nullptr;
#endif
}
inline void tsan_destroy([[maybe_unused]] void* f) noexcept {
#ifdef AM_OAM_TSAN
    if (f != nullptr) __tsan_destroy_fiber(f);
#endif
}

// ------------------------------------------------------------------------ the switch

/// Switches to the context held in `slot` (emptying it) and, once something switches back,
/// puts that one's context into `slot`. The same as `slot = std::move(slot).resume()` without
/// the move assignment's test of the old value (resume() left it empty; ~fiber, skipped here,
/// would do nothing): a store, as the fcontext switch it replaces had (issue 34, counted with
/// callgrind: the assignment cost 4 instructions a switch).
inline void switch_to(bctx::fiber& slot) {
    bctx::fiber from = std::move(slot).resume();
    ::new (static_cast<void*>(&slot)) bctx::fiber(std::move(from));
}

// ------------------------------------------------------------------------ the fiber side

/// Switches from fiber `f` back to whoever resumed it; returns when it is resumed again (by
/// whoever resumes it then: `back` becomes that).
void switch_out(oam_fiber* f) {
    asan_start(&f->fake_stack, f->back_bottom, f->back_size);
    tsan_switch(f->tsan_back);
    switch_to(f->back);
    asan_finish(f->fake_stack, &f->back_bottom, &f->back_size);
}

/// Runs the handler of `tk` with its own copies of the arguments, the payload of a medium
/// message and the token: all three outlive the dispatch if the handler blocks.
void run_task(oam_fiber* f, const oam_task& tk) {
    // `tk` lives in the dispatching poller's frame: read all of it before the handler runs.
    const invoke_fn fn = tk.fn;
    void* const obj = tk.obj;
    const std::size_t len = tk.len;
    std::uint64_t args[max_args + 1];
    for (unsigned i = 0; i < tk.nargs; ++i) args[i] = tk.args[i];
    alignas(16) std::byte small[256];
    std::unique_ptr<std::max_align_t[]> big;
    std::byte* payload = tk.payload;
    if (tk.kind == category::medium && tk.len != 0) {
        if (tk.len <= sizeof small) {
            payload = small;
        } else {
            big.reset(new std::max_align_t[(tk.len + sizeof(std::max_align_t) - 1) /
                                           sizeof(std::max_align_t)]);
            payload = reinterpret_cast<std::byte*>(big.get());
        }
        std::memcpy(payload, tk.payload, tk.len);
    }
    alignas(token) std::byte tok_storage[sizeof(token)];
    token* tok = token_access::copy(tok_storage, *tk.tok);
    f->tok = tok;
    struct clear {
        oam_fiber* f;
        ~clear() { f->tok = nullptr; }
    } c{f};
    fn(obj, *tok, args, payload, len);
}

void run_job(oam_fiber* f) {
    try {
        if (const oam_task* tk = f->task) {  // set by every dispatch, cleared by start_job
            run_task(f, *tk);
        } else {
            void* arg = std::exchange(f->arg, nullptr);
            struct drop {
                void (*fn)(void*);
                void* arg;
                ~drop() { fn(arg); }
            } d{f->drop, arg};
            f->run(arg);
        }
    } catch (const bctx::detail::forced_unwind&) {
        throw;  // Boost.Context's unwinding of a destroyed fiber must pass (its docs)
    } catch (...) {
        f->error = std::current_exception();
    }
}

/// The function of `f`'s fiber, entered on its first resumption by `caller`: one job per turn.
bctx::fiber fiber_main(oam_fiber* f, bctx::fiber&& caller) {
    f->back = std::move(caller);
    asan_finish(nullptr, &f->back_bottom, &f->back_size);
    for (;;) {
        run_job(f);
        f->st = oam_fiber::state::done;
        switch_out(f);
    }
}

/// The fiber of `f` on its pooled stack. Boost runs the fiber's entry on the new stack up to a
/// first switch back: TSan is told, so that the entry's frame is on the new fiber's shadow
/// stack (ASan needs no word: no frame of the poller's stack is left or entered).
bctx::fiber make_fiber(oam_fiber* f) {
    void* const cur = tsan_current();
    tsan_switch(f->tsan_self);
    bctx::fiber fb(std::allocator_arg, oam_stack_preallocated(f->stack), oam_stack_keep{},
                   [f](bctx::fiber&& caller) { return fiber_main(f, std::move(caller)); });
    tsan_switch(cur);
    return fb;
}

/// Lets go of `fb` without unwinding it: ~fiber would resume it to throw forced_unwind through
/// its frames, a blocked handler's after a failed job among them. Its record (on its stack,
/// unmapped next) holds nothing to free.
void abandon(bctx::fiber&& fb) noexcept {
    alignas(bctx::fiber) std::byte grave[sizeof(bctx::fiber)];
    ::new (static_cast<void*>(grave)) bctx::fiber(std::move(fb));
}

// The readable name of an optimistic handler (from its type_name), kept for the process's
// life: trace records point at it until the trace is written.
const char* traced_name(std::string_view pretty) {
    static std::mutex m;
    static std::unordered_map<std::string_view, std::string> names;  // type_name: static text
    const std::lock_guard g(m);
    auto [it, fresh] = names.try_emplace(pretty);
    if (fresh) it->second = oam_readable(pretty);
    return it->second.c_str();
}

void hook_yield(void* arg) {
    auto* f = static_cast<oam_fiber*>(arg);
    f->sched->suspend(f, oam_fiber::state::yielding, nullptr, "am::context::wait");
}

}  // namespace

// --------------------------------------------------------------------------- the scheduler

oam_sched::oam_sched(context& ctx, const config& cfg)
    : ret_slot(ctx.handler([this](token& t, std::uint64_t id, std::uint64_t v) {
          on_return_slot(t.source(), id, v);
      })),
      ret_bytes(
          ctx.handler([this](token& t, std::span<const std::byte> b, std::uint64_t id,
                             std::uint64_t stash) { on_return_bytes(t.source(), id, b, stash); })),
      ret_error(ctx.handler([this](token& t, std::span<const std::byte> b, std::uint64_t id) {
          on_return_error(t.source(), id, b);
      })),
      part(ctx.handler(
          [this](token& t, std::span<const std::byte> b, std::uint64_t stash, std::uint64_t total,
                 std::uint64_t offset) { on_part(t.source(), b, stash, total, offset); })),
      _ctx(ctx),
      _rank(ctx.rank()),
      _locking(cfg.progress_thread || cfg.thread_multiple),
      _stack_bytes(oam_stack_round(std::max<std::size_t>(cfg.oam_stack_bytes, 16 * 1024))),
      _max_live(cfg.oam_max_threads),
      _hang_seconds(cfg.oam_hang_seconds),
      _rpc_index(new std::atomic<std::uint32_t>[max_slots]),
      _max_payload(cfg.max_payload) {
    for (std::uint32_t i = 0; i < max_slots; ++i) _rpc_index[i].store(0);
    core::set_deferred(_ctx, [this] { return run_ready(); });
    core::set_pending_report(_ctx, _hang_seconds, [this] { return blocked_report(); });
}

oam_sched::~oam_sched() {
    // After the final quiescence nothing is blocked unless the job failed; then blocked
    // handlers are abandoned (their stacks unmapped, their frames never unwound), and so are
    // the idle fibers, waiting in their loop.
    while (job* j = _jobs_head) {
        _jobs_head = j->next;
        j->drop(j->arg);
        delete j;
    }
    for (auto& f : _fibers) {
        abandon(std::move(f->self));
        tsan_destroy(f->tsan_self);
        oam_stack_unmap(f->stack);
    }
}

void oam_sched::fail(errc code, const char* call, const std::string& what) const {
    util::fail(code, call, _rank, what);
}

oam_fiber* oam_sched::take_fiber() {
    if (!_locking && _hot != nullptr) return std::exchange(_hot, nullptr);
    {
        util::maybe_lock g(_m, _locking);
        if (_idle != nullptr) {
            oam_fiber* f = _idle;
            _idle = f->next;
            f->next = nullptr;
            return f;
        }
    }
    oam_guard_install();
    auto f = std::make_unique<oam_fiber>();
    f->stack = oam_stack_map(_stack_bytes, _rank);
    f->sched = this;
    f->rank = _rank;
    f->tsan_self = tsan_create();
    f->self = make_fiber(f.get());
    f->hook = fiber_hook{&hook_yield, f.get()};
    oam_fiber* p = f.get();
    util::maybe_lock g(_m, _locking);
    _fibers.push_back(std::move(f));
    _stacks.fetch_add(1, std::memory_order_relaxed);
    return p;
}

void oam_sched::park(oam_fiber* f) noexcept {
    util::maybe_lock g(_m, _locking);
    f->next = _idle;
    _idle = f;
}

void oam_sched::resume(oam_fiber* f) {
    // A fiber made on one thread may resume on another (a progress thread): that thread needs
    // the alternate signal stack too, or an overflow dies without its message.
    oam_guard_install();
    f->st = oam_fiber::state::running;
#ifdef AM_OAM_TSAN
    f->tsan_back = tsan_current();  // (without TSan: no store)
#endif
    void* fake = nullptr;
    const fiber_hook* saved_hook = t_fiber_hook;
    t_fiber_hook = &f->hook;
    asan_start(&fake, f->stack.bottom(), f->stack.usable);
    tsan_switch(f->tsan_self);
    switch_to(f->self);
    asan_finish(fake, nullptr, nullptr);
    t_fiber_hook = saved_hook;
    after_switch(f);
}

void oam_sched::after_switch(oam_fiber* f) {
    switch (f->st) {
        case oam_fiber::state::blocked:
        case oam_fiber::state::yielding: {
            if (!f->blocked_once) {
                if (f->trace_start != 0) [[unlikely]]
                    trace_promote(f);
                f->blocked_once = true;
                _blocked.fetch_add(1, std::memory_order_relaxed);
                const std::uint64_t live = _live.fetch_add(1, std::memory_order_relaxed) + 1;
                std::uint64_t peak = _peak.load(std::memory_order_relaxed);
                while (live > peak && !_peak.compare_exchange_weak(peak, live)) {
                }
                core::add_pending(_ctx, 1);
            }
            // Only now, with its context saved, may the fiber be woken: release the lock of
            // the queue it waits in (a waker pops it under that lock), or requeue a yield.
            if (f->st == oam_fiber::state::yielding) {
                make_ready(f);
            } else if (oam_waitq* q = std::exchange(f->release, nullptr)) {
                q->unlock();
            }
            return;
        }
        case oam_fiber::state::done: {
            if (f->trace_start != 0) [[unlikely]]
                trace_end(f, f->blocked_once);
            if (f->blocked_once) {
                f->blocked_once = false;
                _live.fetch_sub(1, std::memory_order_relaxed);
                core::add_pending(_ctx, -1);
            }
            f->st = oam_fiber::state::idle;
            if (f->error) [[unlikely]] {
                std::exception_ptr e = std::exchange(f->error, nullptr);
                park(f);
                std::rethrow_exception(e);
            }
            if (!_locking && _hot == nullptr) [[likely]] {
                _hot = f;
            } else {
                park(f);
            }
            return;
        }
        default:
            AM_ASSERT(false, "a fiber switches back blocked, yielding or done");
    }
}

void oam_sched::dispatch(const oam_task& t) {
    // Without other polling threads the fiber the last handler returned is reused directly.
    oam_fiber* f = _hot;
    if (f != nullptr && !_locking) [[likely]] {
        _hot = nullptr;
    } else {
        f = take_fiber();
    }
    f->task = &t;
    f->name = t.name;
    if (core::tracer(_ctx) != nullptr) [[unlikely]]
        trace_begin(f, t);
    // Dispatches are serialised (one poller at a time): a plain increment, no locked RMW.
    _handlers.store(_handlers.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    resume(f);
}

void oam_sched::trace_begin(oam_fiber* f, const oam_task& t) {
    f->trace_name = traced_name(t.name);
    f->trace_source = static_cast<std::uint64_t>(t.tok->source());
    f->trace_start = trace_now();
}

void oam_sched::trace_promote(const oam_fiber* f) const noexcept {
    if (tracer* tr = core::tracer(_ctx)) {  // (tracing may have stopped since the start)
        const std::uint64_t now = trace_now();
        trace_record(tr, trace_kind::oam_promote, now, now, 0, f->trace_source,
                     reinterpret_cast<std::uintptr_t>(f->trace_name));
    }
}

void oam_sched::trace_end(oam_fiber* f, bool blocked) const noexcept {
    if (tracer* tr = core::tracer(_ctx)) {
        trace_record(tr, trace_kind::oam_run, f->trace_start, trace_now(), blocked ? 1 : 0,
                     f->trace_source, reinterpret_cast<std::uintptr_t>(f->trace_name));
    }
    f->trace_start = 0;
}

void oam_sched::spawn(void (*run)(void*), void (*drop)(void*), void* arg, std::string_view name) {
    // Not started here: the setter that spawns it may be anywhere (another rank's thread); it
    // starts in this rank's next poll, counted as pending until it finishes.
    job* j = new job{run, drop, arg, name, nullptr};
    core::add_pending(_ctx, 1);
    _ready_lock.lock();
    (_jobs_tail != nullptr ? _jobs_tail->next : _jobs_head) = j;
    _jobs_tail = j;
    _ready_lock.unlock();
    core::signal_deferred(_ctx);
}

void oam_sched::start_job(job* j) {
    std::unique_ptr<job> owned(j);
    oam_fiber* f;
    try {
        f = take_fiber();
    } catch (...) {
        core::add_pending(_ctx, -1);
        j->drop(j->arg);
        throw;
    }
    f->task = nullptr;
    f->run = j->run;
    f->drop = j->drop;
    f->arg = j->arg;
    f->name = j->name;
    _handlers.store(_handlers.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    core::add_pending(_ctx, -1);  // taken at spawn; from here on it counts as any handler
    resume(f);
}

void oam_sched::make_ready(oam_fiber* f) noexcept {
    _ready_lock.lock();
    f->next = nullptr;
    (_ready_tail != nullptr ? _ready_tail->next : _ready_head) = f;
    _ready_tail = f;
    _ready_lock.unlock();
    core::signal_deferred(_ctx);
}

std::size_t oam_sched::run_ready() {
    _ready_lock.lock();
    oam_fiber* list = std::exchange(_ready_head, nullptr);
    _ready_tail = nullptr;
    job* jobs = std::exchange(_jobs_head, nullptr);
    _jobs_tail = nullptr;
    _ready_lock.unlock();
    std::size_t n = 0;
    while (jobs != nullptr) {
        job* j = jobs;
        jobs = j->next;
        ++n;
        try {
            start_job(j);
        } catch (...) {
            while (jobs != nullptr) {  // keep the rest for the next poll
                job* k = jobs;
                jobs = k->next;
                k->next = nullptr;
                _ready_lock.lock();
                (_jobs_tail != nullptr ? _jobs_tail->next : _jobs_head) = k;
                _jobs_tail = k;
                _ready_lock.unlock();
            }
            while (list != nullptr) {
                oam_fiber* g = list;
                list = g->next;
                make_ready(g);
            }
            throw;
        }
    }
    while (list != nullptr) {
        oam_fiber* f = list;
        list = f->next;
        f->next = nullptr;
        ++n;
        _resumes.store(_resumes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        try {
            resume(f);
        } catch (...) {
            // Keep the rest runnable, then let the poll report the handler's exception.
            while (list != nullptr) {
                oam_fiber* g = list;
                list = g->next;
                make_ready(g);
            }
            throw;
        }
    }
    return n;
}

void oam_sched::suspend(oam_fiber* f, oam_fiber::state why, oam_waitq* release, const char* call) {
    if (!f->blocked_once && _live.load(std::memory_order_relaxed) >= _max_live) {
        if (release != nullptr) release->unlock();
        fail(errc::too_large, call,
             "optimistic handler " + oam_readable(f->name) + " would be handler number " +
                 std::to_string(_max_live + 1) + " blocked at once on this rank, over the limit " +
                 "config::oam_max_threads = " + std::to_string(_max_live) +
                 " (AM_OAM_MAX_THREADS)");
    }
    if (f->tok != nullptr) token_access::detach(*f->tok);
    f->st = why;
    f->release = release;
    f->waiting_in.store(call, std::memory_order_release);
    switch_out(f);
    f->waiting_in.store(nullptr, std::memory_order_relaxed);
    f->st = oam_fiber::state::running;
}

oam_stats oam_sched::stats() const {
    oam_stats s;
    s.handlers = _handlers.load();
    s.blocked = _blocked.load();
    s.resumes = _resumes.load();
    s.live = _live.load();
    s.peak_live = _peak.load();
    s.stacks = _stacks.load(std::memory_order_relaxed);
    s.stack_bytes = _stack_bytes;
    s.max_threads = _max_live;
    return s;
}

std::string oam_sched::blocked_report() {
    std::string list;
    std::size_t n = 0;
    util::maybe_lock g(_m, _locking);
    for (const auto& f : _fibers) {
        const char* call = f->waiting_in.load(std::memory_order_acquire);
        if (call == nullptr) continue;
        if (++n <= 8) list += "\n  " + oam_readable(f->name) + " blocked in " + call;
    }
    if (n > 8) list += "\n  ... and " + std::to_string(n - 8) + " more";
    return std::to_string(n) + " blocked optimistic handler(s) on this rank" +
           (n == 0 ? std::string(" (none: the wait is for another rank)") : ":" + list) +
           "\n  (a handler waiting on itself, or waits in a cycle across handlers and ranks, "
           "never end)";
}

void oam_sched::hang_check(const char* call, std::chrono::steady_clock::time_point start,
                           bool& reported) {
    if (reported || _hang_seconds <= 0 ||
        std::chrono::steady_clock::now() - start < std::chrono::duration<double>(_hang_seconds))
        return;
    reported = true;
    const std::string what = blocked_report();
    std::fprintf(stderr, "am: rank %d: rank code has waited %.0f s in %s; %s\n", _rank,
                 _hang_seconds, call, what.c_str());
}

std::string oam_sched::report() const {
    const oam_stats s = stats();
    if (s.handlers == 0) return {};
    return "  optimistic handlers: " + std::to_string(s.handlers) + " run, " +
           std::to_string(s.blocked) + " became threads, " + std::to_string(s.resumes) +
           " resumptions, peak " + std::to_string(s.peak_live) + " blocked, " +
           std::to_string(s.stacks) + " stacks of " + std::to_string(s.stack_bytes) + " B\n";
}

// ------------------------------------------------------------------- the public detail API

oam_sched& oam_layer_of(context& ctx, const char* call) {
    return core::get<oam_sched>(ctx, oam_sched::key, call);
}

oam_sched* oam_of(context& ctx, const char* call) {
    return &oam_layer_of(ctx, call);
}

context& oam_context(oam_sched* s) noexcept {
    return s->ctx();
}

oam_fiber* oam_current() noexcept {
    const fiber_hook* h = t_fiber_hook;
    return h != nullptr ? static_cast<oam_fiber*>(h->arg) : nullptr;
}

void oam_dispatch(oam_sched* s, const oam_task& task) {
    s->dispatch(task);
}

void oam_spawn(oam_sched* s, void (*run)(void*), void (*drop)(void*), void* arg,
               std::string_view name) {
    s->spawn(run, drop, arg, name);
}

}  // namespace am::detail

namespace am {
oam_stats optimistic_stats(context& ctx) {
    return detail::oam_layer_of(ctx, "am::optimistic_stats").stats();
}
}  // namespace am
