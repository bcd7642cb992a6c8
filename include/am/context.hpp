// SPDX-License-Identifier: MIT
/// @file
/// The core layer: `am::context` (one per rank), `am::token` (handed to every handler),
/// `am::counter` and `am::run`. The calls of the Split-C layer (`put`, `get`, `allocate`, ...)
/// and of the message layer (`send`, `recv`, `isend`, `irecv`) are members of the context too,
/// declared in their layers' headers <am/splitc.hpp> and <am/msg.hpp> (bases of the context);
/// the machinery is in <am/detail/context.hpp>.
///
/// Thread-safety: a context is used by the thread that runs its rank. With
/// `config::progress_thread` a second, internal thread also polls; sends, polls and waits are
/// then serialised internally and handlers may run on that thread.
#pragma once

#include <am/config.hpp>
#include <am/detail/context.hpp>
#include <am/detail/trace.hpp>
#include <am/error.hpp>
#include <am/global_ptr.hpp>
#include <am/handler.hpp>
#include <am/msg.hpp>
#include <am/splitc.hpp>
#include <am/stats.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace am {

/// Handed to every handler: who sent the message and how to answer it.
/// Valid only during the handler call; not copyable.
class token {
  public:
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
    friend struct detail::token_access;
    token(detail::context_impl* c, int source, detail::lane ln) noexcept
        : _ctx(c), _source(source), _lane(ln) {}
    detail::context_impl* _ctx;
    int _source;
    detail::lane _lane;
    bool _replied = false;
    bool _detached = false;  // an optimistic handler that blocked: its reply slot is gone
};

/// One rank's endpoint: rank and size, handler registration, sends, progress and waits; with
/// its bases, Split-C global memory (`splitc::context_api`) and send/receive
/// (`msg::context_api`). Created by `am::run` and passed to the rank function; not copyable.
class context : public splitc::context_api<context>, public msg::context_api<context> {
  public:
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
        if (detail::core_wait_check(_impl, "am::context::wait")) [[unlikely]] {
            detail::core_fiber_wait(_impl, [&] { return static_cast<bool>(pred()); });
            return;
        }
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

    /// Collective: starts recording a trace of this rank (handler runs, sends, waits and their
    /// cause, epochs and their detector rounds, RMA operations) for `trace_stop` to write to
    /// `path` in the Chrome/Perfetto trace-event format (docs/observability.md). Every rank
    /// passes the same path; rank 0 checks here that it can write it (without touching the
    /// path), so an unwritable path raises `am::error` (errc::invalid_argument) on every rank
    /// naming the call, rank 0 and the path. Each rank records at most
    /// config::trace_max_events events (`AM_TRACE_MAX_EVENTS`) and warns once when it drops one.
    /// Returns once every rank records, so a message sent after the call is traced where it
    /// runs. Tracing already on (e.g. `AM_TRACE`) raises errc::bad_context. Call it from the rank's
    /// own thread, outside handlers; records go to one buffer per thread that records
    /// (the rank's thread, its progress thread, other threads under thread_multiple).
    void trace_start(std::string_view path);
    /// Collective: stops recording and writes the trace: every rank's records travel to rank
    /// 0 as messages of the library's handler "am::trace::chunk" (any transport, no shared file
    /// system needed), a window at a time, and rank 0 streams them into a temporary file next
    /// to the path, renamed to the path once complete: a job that fails leaves an existing file
    /// at the path as it was. One file with a track per rank and thread. Events end at this
    /// call. Call it from the rank's own thread, outside handlers, while no other
    /// thread of the rank is inside a call of the library (the progress thread may be).
    /// Nothing happens when tracing is off. With `AM_TRACE`, am::run calls it at the end.
    void trace_stop();

    /// Brings the whole job down: every rank stops with an error that carries `reason`.
    [[noreturn]] void abort(std::string_view reason);

  private:
    friend struct detail::access;
    friend class detail::context_impl;
    explicit context(detail::context_impl* impl) noexcept : _impl(impl) {}

    detail::context_impl* _impl;
    // Non-null while tracing: the layers' event sites test it (relaxed: a plain load).
    std::atomic<detail::tracer*> _trace{nullptr};
};

namespace detail {
/// The core object behind a context: for the library's own code (the core's entry points in
/// headers, the runtime, tests), never for programs. Layers use src/core/include/am/core/layer.hpp.
struct access {
    static context_impl* impl(const context& c) noexcept { return c._impl; }
    static tracer* trace(const context& c) noexcept {
        return c._trace.load(std::memory_order_relaxed);
    }
    static void set_trace(context& c, tracer* t) noexcept {
        c._trace.store(t, std::memory_order_relaxed);
    }
};
}  // namespace detail

/// Completion flag: handlers `add()`, the rank `wait()`s for a count. Thread-safe.
///
/// Also the flag of `put`: a put names the counter by its position among this rank's live
/// counters, and the target increments its counter at the same position. Create counters that
/// serve as remote flags in the same order on every rank.
class counter {
  public:
    explicit counter(context& ctx) noexcept : _ctx(&ctx), _id(detail::counter_attach(ctx, this)) {}
    /// A counter without a remote-flag position (usable as a local flag only).
    counter(context& ctx, detail::unregistered_t) noexcept : _ctx(&ctx), _id(0xffffffffu) {}
    ~counter() { detail::counter_detach(*_ctx, _id); }
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
    /// This counter's identity as a remote flag (its position among the rank's counters).
    [[nodiscard]] std::uint32_t id() const noexcept { return _id; }

  private:
    context* _ctx;
    std::uint32_t _id;
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
