// SPDX-License-Identifier: MIT
// Blocking and waking (one rule for every primitive: an optimistic handler switches out, rank
// code polls, a plain handler is refused), and am::mutex / am::condition_variable on it.
#include "oam_sched.hpp"

#include "../util/error.hpp"

#include <string>

namespace am::detail {

namespace {

/// The calling thread's identity as a mutex owner: its fiber, or its frame word (the rank's
/// own thread, a handler, another thread).
const void* self_id() noexcept {
    if (oam_fiber* f = oam_current()) return f;
    return reinterpret_cast<const void*>(t_frame | 4u);
}

/// True on a thread running a plain (not optimistic) handler.
bool in_plain_handler() noexcept {
    return oam_current() == nullptr && t_frame != 0 && (t_frame & home_mark) == 0;
}

[[noreturn]] void refuse_block(oam_sched* s, const char* call) {
    util::fail(errc::bad_context, call, s->ctx().rank(),
               "would block in a handler that is not optimistic; register it with "
               "am::optimistic_handler (or am::rpc_register) to let it block");
}

}  // namespace

bool oam_waitq::remove(oam_waiter* w) noexcept {
    oam_waiter* prev = nullptr;
    for (oam_waiter* p = _head; p != nullptr; prev = p, p = p->next) {
        if (p != w) continue;
        (prev != nullptr ? prev->next : _head) = p->next;
        if (_tail == p) _tail = prev;
        return true;
    }
    return false;
}

void oam_block(oam_sched* s, oam_waitq& q, oam_waiter& w, const char* call) {
    if (oam_fiber* f = oam_current()) {
        w.fiber = f;
        q.push(&w);
        try {
            f->sched->suspend(f, oam_fiber::state::blocked, &q, call);
        } catch (...) {  // refused (thread limit): suspend released q
            q.lock();
            (void)q.remove(&w);
            q.unlock();
            throw;
        }
        return;
    }
    if (in_plain_handler()) {
        q.unlock();
        refuse_block(s, call);
    }
    // Rank code (the rank's own thread, or another thread under thread_multiple): poll.
    const std::uintptr_t fr = t_frame;
    context_impl* impl = (fr & home_mark) != 0
                             ? reinterpret_cast<context_impl*>(fr & ~std::uintptr_t{3})
                             : access::impl(s->ctx());
    q.push(&w);
    q.unlock();
    try {
        unsigned backoff = 0;
        const auto start = std::chrono::steady_clock::now();
        bool reported = false;
        while (!w.woken.load(std::memory_order_acquire)) {
            if (core_poll(impl) != 0) {
                backoff = 0;
            } else {
                core_idle(impl, backoff);
                if (backoff > 1000) s->hang_check(call, start, reported);
            }
        }
    } catch (...) {
        q.lock();
        (void)q.remove(&w);
        q.unlock();
        throw;
    }
}

void oam_wake(oam_waiter* w) noexcept {
    if (oam_fiber* f = w->fiber) {
        f->sched->make_ready(f);
    } else {
        w->woken.store(true, std::memory_order_release);  // w may be gone right after
    }
}

}  // namespace am::detail

namespace am {

mutex::mutex(context& ctx) : _s(detail::oam_of(ctx, "am::mutex")) {}

void mutex::lock() {
    const void* me = detail::self_id();
    _q.lock();
    if (!_locked) {
        _locked = true;
        _owner = me;
        _q.unlock();
        return;
    }
    if (_owner == me) {
        _q.unlock();
        util::fail(errc::bad_context, "am::mutex::lock", detail::oam_context(_s).rank(),
                   "the caller holds this mutex already (it is not recursive): it would wait "
                   "on itself forever");
    }
    detail::oam_waiter w;
    detail::oam_block(_s, _q, w, "am::mutex::lock");
    _owner = me;  // handed over by unlock()
}

bool mutex::try_lock() noexcept {
    _q.lock();
    const bool ok = !_locked;
    if (ok) {
        _locked = true;
        _owner = detail::self_id();
    }
    _q.unlock();
    return ok;
}

void mutex::unlock() {
    _q.lock();
    detail::oam_waiter* w = _q.pop();
    _owner = nullptr;  // a waiter handed the mutex names itself once it runs
    if (w == nullptr) _locked = false;
    _q.unlock();
    if (w != nullptr) detail::oam_wake(w);  // the mutex stays locked: it is w's now
}

void condition_variable::wait(std::unique_lock<am::mutex>& lk) {
    am::mutex& m = *lk.mutex();
    if (detail::in_plain_handler()) detail::refuse_block(m._s, "am::condition_variable::wait");
    detail::oam_waiter w;
    _q.lock();
    m.unlock();  // queued first: a notify after this unlock finds w
    detail::oam_block(m._s, _q, w, "am::condition_variable::wait");
    m.lock();
}

void condition_variable::notify_one() noexcept {
    _q.lock();
    detail::oam_waiter* w = _q.pop();
    _q.unlock();
    if (w != nullptr) detail::oam_wake(w);
}

void condition_variable::notify_all() noexcept {
    _q.lock();
    detail::oam_waiter* w = _q.take_all();
    _q.unlock();
    while (w != nullptr) {
        detail::oam_waiter* next = w->next;
        detail::oam_wake(w);
        w = next;
    }
}

}  // namespace am
