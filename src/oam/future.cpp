// SPDX-License-Identifier: MIT
// The shared state of am::future / am::promise: waiting (oam_block), completion, continuations.
#include "oam_sched.hpp"

#include <string>

namespace am::detail {

future_base::~future_base() = default;

namespace {

// Freed state blocks of this thread, reused by the next states it makes (an RPC's state is
// made by the caller and usually freed there too).
constexpr std::size_t block_bytes = 128;
constexpr unsigned cache_max = 256;
struct block_cache {
    void* head = nullptr;
    unsigned n = 0;
    block_cache() = default;
    block_cache(const block_cache&) = delete;
    block_cache& operator=(const block_cache&) = delete;
    ~block_cache() {
        while (head != nullptr) {
            void* next = *static_cast<void**>(head);
            ::operator delete(head);
            head = next;
        }
    }
};
thread_local block_cache t_blocks;

}  // namespace

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool use_cache = false;  // the sanitizers see every allocation
#else
constexpr bool use_cache = true;
#endif

void* future_base::operator new(std::size_t bytes) {
    if (use_cache && bytes <= block_bytes) {
        block_cache& c = t_blocks;
        if (c.head != nullptr) {
            void* p = c.head;
            c.head = *static_cast<void**>(p);
            --c.n;
            return p;
        }
        return ::operator new(block_bytes);
    }
    return ::operator new(bytes);  // (a block that is not cached is freed as bytes-sized)
}

void future_base::operator delete(void* p, std::size_t bytes) noexcept {
    if (use_cache && bytes <= block_bytes) {
        block_cache& c = t_blocks;
        if (c.n < cache_max) {
            *static_cast<void**>(p) = c.head;
            c.head = p;
            ++c.n;
            return;
        }
    }
    ::operator delete(p);
}

void future_base::wait(const char* call) {
    if (ready()) return;
    _q.lock();
    if (ready()) {
        _q.unlock();
        return;
    }
    oam_waiter w;
    // Rank code polls until the value comes (traced as a wait); a handler's fiber switches out.
    tracer* t = core::tracer(_s->ctx());
    if (t != nullptr && oam_current() != nullptr) [[unlikely]]
        t = nullptr;
    const trace_span waiting(t, trace_kind::wait, static_cast<std::uint32_t>(trace_cause::future));
    oam_block(_s, _q, w, call);
}

void future_base::take(const char* call) {
    wait(call);
    if (_taken) future_invalid(call);
    _taken = true;
    if (_error) std::rethrow_exception(_error);
}

bool future_base::set_exception(std::exception_ptr e) noexcept {
    if (!claim()) return false;
    _error = std::move(e);
    publish();
    return true;
}

namespace {
void run_function(void* p) {
    (*static_cast<std::function<void()>*>(p))();
}
void drop_function(void* p) {
    delete static_cast<std::function<void()>*>(p);
}
void spawn_continuation(oam_sched* s, std::function<void()> f) {
    oam_spawn(s, &run_function, &drop_function, new std::function<void()>(std::move(f)),
              "am::future::then continuation");
}
}  // namespace

void future_base::publish() noexcept {
    _q.lock();
    _ready.store(true, std::memory_order_release);
    oam_waiter* w = _q.take_all();
    std::vector<std::function<void()>> then = std::move(_then);
    _q.unlock();
    while (w != nullptr) {
        oam_waiter* next = w->next;
        oam_wake(w);
        w = next;
    }
    for (auto& f : then) {
        try {
            spawn_continuation(_s, std::move(f));
        } catch (...) {  // out of memory: nothing better to do than to lose it loudly
            std::terminate();
        }
    }
}

void future_base::on_ready(std::function<void()> f) {
    _q.lock();
    if (!ready()) {
        _then.push_back(std::move(f));
        _q.unlock();
        return;
    }
    _q.unlock();
    spawn_continuation(_s, std::move(f));
}

void future_invalid(const char* call) {
    throw error(errc::invalid_argument,
                std::string(call) +
                    ": the future has no value to wait for: its value was taken already (get() "
                    "once), it was moved from, or it was default-constructed");
}

void promise_invalid(const char* call) {
    throw error(errc::invalid_argument,
                std::string(call) +
                    ": the promise was given a value already, its future was taken already, "
                    "or it was moved from");
}

std::exception_ptr broken_promise_error() {
    return std::make_exception_ptr(
        error(errc::broken_promise,
              "am::future::get: the promise was destroyed without a value (broken promise)"));
}

}  // namespace am::detail
