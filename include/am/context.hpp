// SPDX-License-Identifier: MIT
/// @file
/// `am::context` (one per rank), `am::token` (handed to every handler) and `am::run`.
///
/// Thread-safety: a context is used by the thread that runs its rank. With
/// `config::progress_thread` a second, internal thread also polls; sends, polls and waits are
/// then serialised internally and handlers may run on that thread.
#pragma once

#include <am/config.hpp>
#include <am/error.hpp>
#include <am/handler.hpp>
#include <am/stats.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <type_traits>
#include <typeinfo>

namespace am {

class context;

namespace detail {

class context_impl;

/// Lane of a message: requests and replies travel separately, each with its own credits.
enum class lane : std::uint8_t { request = 0, reply = 1 };

/// One outgoing message, as the typed front end hands it to the core.
struct send_desc {
    int dest;
    lane ln;
    category kind;
    std::uint8_t nargs;
    std::uint32_t handler;
    const std::uint64_t* args;
    const std::byte* payload;
    std::size_t len;
    std::size_t offset;  ///< long: byte offset in the target's segment
};

struct handler_desc {
    category kind;
    std::uint8_t nargs;
    invoke_fn fn;
    void* obj;  ///< owned by the table when `destroy` is set
    void (*destroy)(void*);
    std::string_view name;
    /// Distinguishes callables whose readable names coincide (two lambdas with the same
    /// signature in one function): the mangled type name. Null for named functions.
    const char* id = nullptr;
};

// The core, implemented in src/core. Not part of the stable API.
void core_send(context_impl* c, const send_desc& d);
void core_reply(token& t, const send_desc& d);
/// Short messages, specialised by argument count (instantiated in the library for 0..16).
template <unsigned N>
void core_request_short(context_impl* c, int dest, std::uint32_t handler,
                        const std::uint64_t* args);
template <unsigned N>
void core_reply_short(token& t, std::uint32_t handler, const std::uint64_t* args);

#define AM_DETAIL_SHORT_EXTERN(N)                                                 \
    extern template void core_request_short<N>(context_impl*, int, std::uint32_t, \
                                               const std::uint64_t*);             \
    extern template void core_reply_short<N>(token&, std::uint32_t, const std::uint64_t*);
AM_DETAIL_SHORT_EXTERN(0)
AM_DETAIL_SHORT_EXTERN(1)
AM_DETAIL_SHORT_EXTERN(2)
AM_DETAIL_SHORT_EXTERN(3)
AM_DETAIL_SHORT_EXTERN(4)
AM_DETAIL_SHORT_EXTERN(5)
AM_DETAIL_SHORT_EXTERN(6)
AM_DETAIL_SHORT_EXTERN(7)
AM_DETAIL_SHORT_EXTERN(8)
AM_DETAIL_SHORT_EXTERN(9)
AM_DETAIL_SHORT_EXTERN(10)
AM_DETAIL_SHORT_EXTERN(11)
AM_DETAIL_SHORT_EXTERN(12)
AM_DETAIL_SHORT_EXTERN(13)
AM_DETAIL_SHORT_EXTERN(14)
AM_DETAIL_SHORT_EXTERN(15)
AM_DETAIL_SHORT_EXTERN(16)
#undef AM_DETAIL_SHORT_EXTERN
std::uint32_t core_register(context_impl* c, const handler_desc& h);
std::size_t core_poll(context_impl* c);
void core_idle(context_impl* c, unsigned& backoff_state);
void core_check_wait(context_impl* c, const char* call);

template <class F>
void destroy_callable(void* p) {
    delete static_cast<F*>(p);
}

template <class H>
send_desc make_desc(int dest, lane ln, H h, const std::uint64_t* slots) {
    return send_desc{dest,    ln, H::kind, static_cast<std::uint8_t>(H::nargs), h.index, slots,
                     nullptr, 0,  0};
}

}  // namespace detail

/// Handed to every handler: who sent the message and how to answer it.
/// Valid only during the handler call; not copyable.
class token {
  public:
    token(detail::context_impl* c, int source, detail::lane ln) noexcept
        : _ctx(c), _source(source), _lane(ln) {}
    token(const token&) = delete;
    token& operator=(const token&) = delete;

    /// Rank that sent the message being handled.
    [[nodiscard]] int source() const noexcept { return _source; }
    /// True in a request handler (which may reply once), false in a reply handler.
    [[nodiscard]] bool is_request() const noexcept { return _lane == detail::lane::request; }
    /// The context of the rank running the handler (to send nested requests, read the rank).
    [[nodiscard]] context& ctx() const noexcept;

    /// Replies to the requester with a short message. At most once per request; only from
    /// a request handler (else `am::error`, errc::bad_reply). Never blocks: with no room it
    /// is queued and sent by later progress.
    template <class... A, class... Args>
    void reply(handler<category::short_am, A...> h, Args&&... args) {
        std::uint64_t slots[sizeof...(A) + 1] = {};
        detail::pack_args(slots, detail::type_list<A...>{}, std::forward<Args>(args)...);
        detail::core_reply_short<sizeof...(A)>(*this, h.index, slots);
    }
    /// Replies with a medium payload (copied before return; at most `max_medium()` bytes).
    template <class... A, class... Args>
    void reply(handler<category::medium, A...> h, std::span<const std::byte> payload,
               Args&&... args) {
        std::uint64_t slots[sizeof...(A) + 1] = {};
        detail::pack_args(slots, detail::type_list<A...>{}, std::forward<Args>(args)...);
        auto d = detail::make_desc(_source, detail::lane::reply, h, slots);
        d.payload = payload.data(), d.len = payload.size();
        detail::core_reply(*this, d);
    }
    /// Replies with a long payload written at `offset` in the requester's segment.
    template <class... A, class... Args>
    void reply(handler<category::long_am, A...> h, std::span<const std::byte> payload,
               std::size_t offset, Args&&... args) {
        std::uint64_t slots[sizeof...(A) + 1] = {};
        detail::pack_args(slots, detail::type_list<A...>{}, std::forward<Args>(args)...);
        auto d = detail::make_desc(_source, detail::lane::reply, h, slots);
        d.payload = payload.data(), d.len = payload.size(), d.offset = offset;
        detail::core_reply(*this, d);
    }

  private:
    friend void detail::core_reply(token&, const detail::send_desc&);
    template <unsigned N>
    friend void detail::core_reply_short(token&, std::uint32_t, const std::uint64_t*);
    friend class detail::context_impl;
    detail::context_impl* _ctx;
    int _source;
    detail::lane _lane;
    bool _replied = false;
};

/// One rank's endpoint: rank and size, handler registration, sends, progress and waits.
/// Created by `am::run` and passed to the rank function; not copyable.
class context {
  public:
    explicit context(detail::context_impl* impl) noexcept : _impl(impl) {}
    context(const context&) = delete;
    context& operator=(const context&) = delete;

    /// This rank, in [0, size()).
    [[nodiscard]] int rank() const noexcept;
    /// Number of ranks in the job.
    [[nodiscard]] int size() const noexcept;
    /// Largest medium payload in bytes (bounded by `config::max_medium` and the ring size).
    [[nodiscard]] std::size_t max_medium() const noexcept;
    /// This rank's registered segment: the target of long messages sent to this rank. The same
    /// size on every rank. Lives until the job ends.
    [[nodiscard]] std::span<std::byte> segment() const noexcept;

    /// Registers function `Fn` as a handler. Collective: every rank registers the same handlers
    /// in the same order, then calls `barrier()`, which checks the tables match and enables
    /// the new handlers for sending. The signature decides the category:
    /// `void(token&, A...)` short, `void(token&, std::span<const std::byte>, A...)` medium,
    /// `void(token&, std::span<std::byte>, A...)` long; each A trivially copyable, ≤ 8 bytes.
    template <auto Fn>
    auto handler() {
        using H = detail::handle_t<decltype(Fn)>;
        detail::handler_desc d{H::kind, H::nargs, &detail::invoke_function<Fn>,
                               nullptr, nullptr,  detail::value_name<Fn>()};
        return H{detail::core_register(_impl, d)};
    }
    /// Registers a callable (e.g. a lambda capturing rank-local state) as a handler; the
    /// context keeps a copy until the job ends. Same rules as `handler<Fn>()`.
    template <class F>
    auto handler(F&& f) {
        using D = std::remove_cvref_t<F>;
        using H = detail::handle_t<D>;
        auto* obj = new D(std::forward<F>(f));
        detail::handler_desc d{H::kind,
                               H::nargs,
                               &detail::invoke_callable<D>,
                               obj,
                               &detail::destroy_callable<D>,
                               detail::type_name<D>(),
                               typeid(D).name()};
        return H{detail::core_register(_impl, d)};
    }

    /// Sends a short request. Arguments are checked against the handler at compile time.
    /// Returns when the message is handed to the transport (or, from inside a handler, queued
    /// for later progress when there is no room). Makes progress while it waits for room.
    template <class... A, class... Args>
    void request(int dest, am::handler<category::short_am, A...> h, Args&&... args) {
        std::uint64_t slots[sizeof...(A) + 1] = {};
        detail::pack_args(slots, detail::type_list<A...>{}, std::forward<Args>(args)...);
        detail::core_request_short<sizeof...(A)>(_impl, dest, h.index, slots);
    }
    /// Sends a medium request; the payload is copied before return (at most `max_medium()`).
    template <class... A, class... Args>
    void request(int dest, am::handler<category::medium, A...> h,
                 std::span<const std::byte> payload, Args&&... args) {
        std::uint64_t slots[sizeof...(A) + 1] = {};
        detail::pack_args(slots, detail::type_list<A...>{}, std::forward<Args>(args)...);
        auto d = detail::make_desc(dest, detail::lane::request, h, slots);
        d.payload = payload.data(), d.len = payload.size();
        detail::core_send(_impl, d);
    }
    /// Sends a long request: `payload` is written at byte `offset` of `dest`'s segment, then
    /// the handler runs there with a span over the written bytes. The source buffer may be
    /// reused when the call returns. `offset + size` must lie within the segment.
    template <class... A, class... Args>
    void request(int dest, am::handler<category::long_am, A...> h,
                 std::span<const std::byte> payload, std::size_t offset, Args&&... args) {
        std::uint64_t slots[sizeof...(A) + 1] = {};
        detail::pack_args(slots, detail::type_list<A...>{}, std::forward<Args>(args)...);
        auto d = detail::make_desc(dest, detail::lane::request, h, slots);
        d.payload = payload.data(), d.len = payload.size(), d.offset = offset;
        detail::core_send(_impl, d);
    }

    /// Runs the handlers of arrived messages and flushes queued sends. Returns the number of
    /// messages handled. Inside a handler it does nothing and returns 0 (handlers do not nest).
    /// Throws `am::error` (errc::aborted) when another rank has failed.
    std::size_t poll() { return detail::core_poll(_impl); }

    /// Polls until `pred()` is true, backing off (spin, yield, sleep) while nothing arrives so
    /// oversubscribed ranks still progress. Not callable from a handler.
    template <class Pred>
    void wait(Pred&& pred) {
        detail::core_check_wait(_impl, "am::context::wait");
        unsigned backoff = 0;
        while (!pred()) {
            if (detail::core_poll(_impl) != 0) {
                backoff = 0;
            } else {
                detail::core_idle(_impl, backoff);
            }
        }
    }

    /// Collective: returns when every rank has called it. Polls while waiting. Seals handlers
    /// registered since the previous barrier after checking every rank registered the same
    /// ones (else `am::error`, errc::handler_mismatch, naming both ranks and the entry).
    /// Not a quiescence point: messages in flight may still arrive after it.
    void barrier();

    /// Collective: returns when every message sent by any rank before or during the call —
    /// including messages sent by handlers, to any depth — has been handled. Call it before
    /// the rank function returns when handlers use state local to that function: `am::run`
    /// itself only quiesces after the function has returned. Not callable from a handler.
    void quiesce();

    /// A snapshot of this rank's counters.
    [[nodiscard]] am::stats stats() const;

    /// Brings the whole job down: every rank stops with an error that carries `reason`.
    [[noreturn]] void abort(std::string_view reason);

    /// The core object behind this context (for layers built on the core).
    [[nodiscard]] detail::context_impl* impl() const noexcept { return _impl; }

  private:
    detail::context_impl* _impl;
};

/// Completion flag: handlers `add()`, the rank `wait()`s for a count. Thread-safe.
class counter {
  public:
    explicit counter(context& ctx) noexcept : _ctx(&ctx) {}
    counter(const counter&) = delete;
    counter& operator=(const counter&) = delete;

    /// Adds `n` (release): values written before it are visible to whoever sees the count.
    void add(std::uint64_t n = 1) noexcept { _value.fetch_add(n, std::memory_order_release); }
    /// Current count (acquire).
    [[nodiscard]] std::uint64_t value() const noexcept {
        return _value.load(std::memory_order_acquire);
    }
    /// True when the count has reached `n`.
    [[nodiscard]] bool test(std::uint64_t n) const noexcept { return value() >= n; }
    /// Polls the context until the count reaches `n`. Not callable from a handler.
    void wait(std::uint64_t n) {
        _ctx->wait([&] { return test(n); });
    }
    /// Sets the count back to zero (no message for it may be in flight).
    void reset() noexcept { _value.store(0, std::memory_order_relaxed); }

  private:
    context* _ctx;
    std::atomic<std::uint64_t> _value{0};
};

/// The rank function type of `am::run`.
using rank_main = std::function<void(context&)>;

/// SPMD entry point: runs `fn` on every rank and returns the job's exit status (0 when every
/// rank returned normally). The transport and rank count come from `amrun` or the
/// environment (`config::from_env`); with `AM_TRANSPORT=shm` the calling process forks its
/// ranks and waits for them. After `fn` returns on every rank, every message sent has been
/// handled before the contexts are destroyed. A rank that throws, dies or exits early brings
/// the job down; the status is then non-zero and the failure is printed naming the rank.
int run(int argc, char** argv, const rank_main& fn);
/// As above with an explicit configuration (the environment is not read).
int run(const config& cfg, const rank_main& fn);

}  // namespace am
