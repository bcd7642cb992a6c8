// SPDX-License-Identifier: MIT
/// @file
/// `am::context` (one per rank), `am::token` (handed to every handler) and `am::run`.
///
/// Over 500 lines on purpose: this is the reference of the whole per-rank API (active
/// messages, Split-C, send/receive), read top to bottom; its templates are thin and inline.
///
/// Thread-safety: a context is used by the thread that runs its rank. With
/// `config::progress_thread` a second, internal thread also polls; sends, polls and waits are
/// then serialised internally and handlers may run on that thread.
#pragma once

#include <am/config.hpp>
#include <am/error.hpp>
#include <am/global_ptr.hpp>
#include <am/handler.hpp>
#include <am/message.hpp>
#include <am/stats.hpp>
#include <am/trace.hpp>

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

class context;
class counter;

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
/// As core_check_wait, but true (and no error) in an optimistic handler, which then waits
/// with core_fiber_wait: it yields to its rank's poller until `pred()` holds.
bool core_wait_check(context_impl* c, const char* call);
void core_fiber_wait(context_impl* c, const std::function<bool()>& pred);

/// A put or get in bytes: `rows` blocks of `width` bytes. Remote block i starts at
/// `offset + i * remote_stride` (or at `offset + index[i] * width` when `index` is set); local
/// block i at `local + i * local_stride`.
struct rma_shape {
    int rank;
    std::uint64_t offset;
    std::size_t remote_stride;
    std::byte* local;
    std::size_t local_stride;
    std::size_t width;
    std::size_t rows;
    const std::uint64_t* index = nullptr;
};

struct access;
struct token_access;
/// Tag of the counters the library uses internally: they take no remote-flag position.
struct unregistered_t {};

// The Split-C layer (src/rma) and the message layer (src/msg). Not part of the stable API.
void rma_put(context& c, const rma_shape& s, counter* flag, counter* done, const char* call);
void rma_get(context& c, const rma_shape& s, counter* flag, const char* call);
std::uint64_t rma_allocate(context& c, std::size_t bytes, std::size_t align);
void rma_deallocate(context& c, int rank, std::uint64_t offset);
void rma_exchange(context& c, const void* in, void* out, std::size_t bytes);
void* rma_local(const context& c, int rank, std::uint64_t offset, std::size_t bytes) noexcept;
std::uint64_t rma_offset_of(const context& c, const void* p, std::size_t bytes);
std::uint32_t counter_attach(context& c, counter* k) noexcept;
void counter_detach(context& c, std::uint32_t id) noexcept;
void msg_send(context& c, int dest, int tag, std::span<const std::byte> data);
message_status msg_recv(context& c, int source, int tag, std::span<std::byte> buffer);
request msg_isend(context& c, int dest, int tag, std::span<const std::byte> data, const char* call);
request msg_irecv(context& c, int source, int tag, std::span<std::byte> buffer, const char* call);

/// `n * size`, or SIZE_MAX when that overflows: no range check can then pass, so an
/// overflowing count is refused instead of wrapping into a small, valid-looking size.
constexpr std::size_t bytes_of(std::size_t n, std::size_t size) noexcept {
    std::size_t bytes = 0;
    return __builtin_mul_overflow(n, size, &bytes) ? SIZE_MAX : bytes;
}

template <class T>
rma_shape contiguous(global_ptr<T> p, const T* local, std::size_t n) noexcept {
    const std::size_t bytes = bytes_of(n, sizeof(T));
    return rma_shape{
        p.rank(),        p.offset(),
        bytes,           const_cast<std::byte*>(reinterpret_cast<const std::byte*>(local)),
        bytes,           bytes,
        n == 0 ? 0u : 1u};
}

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

/// One rank's endpoint: rank and size, handler registration, sends, progress and waits.
/// Created by `am::run` and passed to the rank function; not copyable.
class context {
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

    // ------------------------------------------------------------------ global memory (Split-C)
    //
    // The registered segment of each rank is its global memory. `allocate` carves blocks out
    // of this rank's segment; `put` and `get` copy between local memory and any rank's
    // segment. Transports that map every segment (threads, shm) copy directly; otherwise (or
    // with `AM_RMA=am`) a put is a long request and a get a short request answered by the
    // data, exactly as in the Split-C paper. Ranges are checked against the target's segment
    // before anything is sent (errc::out_of_segment, naming the call, rank and segment size).
    //
    // Flags (Split-C): a put increments `flag` on the rank that receives the data, a get on
    // this rank, once per call when all its data is in place. A put's `flag` names a counter
    // by identity: the target uses its own counter created at the same position, so counters
    // used as remote flags are created in the same order on every rank (like handlers) and
    // must exist on the target when the data arrives. Split-phase calls never block and may be
    // issued from handlers; the `src` of a put may be reused when the call returns; the `dst`
    // of a get must stay valid until its flag counts it. The calls without a flag block until
    // the data is in place (put: at the target) and are not callable from a handler.

    /// Allocates `n` objects of `T` in this rank's segment (aligned for `T`, at least 16
    /// bytes); not initialised. Throws `am::error` (errc::no_memory) naming the segment size
    /// when it is full. Local: other ranks learn the pointer through `exchange` or messages.
    template <class T>
    global_ptr<T> allocate(std::size_t n = 1) {
        constexpr std::size_t align = alignof(T) > 16 ? alignof(T) : 16;
        return global_ptr<T>(rank(),
                             detail::rma_allocate(*this, detail::bytes_of(n, sizeof(T)), align));
    }
    /// Returns a block from `allocate` to this rank's segment. The memory must no longer be
    /// the target of any put or get.
    template <class T>
    void deallocate(global_ptr<T> p) {
        detail::rma_deallocate(*this, p.rank(), p.offset());
    }
    /// Collective: every rank contributes a pointer; returns them all, indexed by rank
    /// ("exchange of base addresses"). Polls while it waits.
    template <class T>
    std::vector<global_ptr<T>> exchange(global_ptr<T> mine) {
        struct wire {
            std::int64_t rank;
            std::uint64_t offset;
        };
        const wire in{mine.rank(), mine.offset()};
        std::vector<wire> all(static_cast<std::size_t>(size()));
        detail::rma_exchange(*this, &in, all.data(), sizeof(wire));
        std::vector<global_ptr<T>> out;
        out.reserve(all.size());
        for (const wire& w : all) out.emplace_back(static_cast<int>(w.rank), w.offset);
        return out;
    }
    /// The address of `p`'s object in this process when its segment is mapped here (always
    /// for this rank; for every rank on threads and shm unless `AM_RMA=am`), else nullptr. Accesses
    /// through it are ordinary memory accesses: synchronise with flags or barriers.
    template <class T>
    [[nodiscard]] T* local(global_ptr<T> p) const noexcept {
        return static_cast<T*>(detail::rma_local(*this, p.rank(), p.offset(), sizeof(T)));
    }
    /// The global pointer of `p`, which must point into this rank's segment (else
    /// `am::error`, errc::out_of_segment).
    template <class T>
    [[nodiscard]] global_ptr<T> to_global(T* p) const {
        return global_ptr<T>(rank(), detail::rma_offset_of(*this, p, sizeof(T)));
    }

    /// Split-phase PUT: copies `n` objects from `src` to `dst`; then `flag` on `dst.rank()`
    /// counts one.
    template <class T>
    void put(global_ptr<T> dst, const T* src, std::size_t n, counter& flag) {
        detail::rma_put(*this, detail::contiguous(dst, src, n), &flag, nullptr, "am::context::put");
    }
    /// As above; `done`, on this rank, counts one when the data is in place at the target.
    template <class T>
    void put(global_ptr<T> dst, const T* src, std::size_t n, counter& flag, counter& done) {
        detail::rma_put(*this, detail::contiguous(dst, src, n), &flag, &done, "am::context::put");
    }
    /// Blocking PUT: returns when the data is in place at the target.
    template <class T>
    void put(global_ptr<T> dst, const T* src, std::size_t n) {
        detail::rma_put(*this, detail::contiguous(dst, src, n), nullptr, nullptr,
                        "am::context::put");
    }
    /// Split-phase GET: copies `n` objects from `src` to `dst`; then `flag` (here) counts one.
    template <class T>
    void get(T* dst, global_ptr<T> src, std::size_t n, counter& flag) {
        detail::rma_get(*this, detail::contiguous(src, dst, n), &flag, "am::context::get");
    }
    /// Blocking GET.
    template <class T>
    void get(T* dst, global_ptr<T> src, std::size_t n) {
        detail::rma_get(*this, detail::contiguous(src, dst, n), nullptr, "am::context::get");
    }

    /// Strided (2-D block) PUT: `rows` rows of `width` objects; row i goes from
    /// `src + i * src_stride` to `dst + i * dst_stride` (strides in objects, ≥ width).
    template <class T>
    void put_strided(global_ptr<T> dst, std::size_t dst_stride, const T* src,
                     std::size_t src_stride, std::size_t width, std::size_t rows, counter& flag) {
        detail::rma_put(*this, strided(dst, dst_stride, src, src_stride, width, rows), &flag,
                        nullptr, "am::context::put_strided");
    }
    /// Blocking strided PUT.
    template <class T>
    void put_strided(global_ptr<T> dst, std::size_t dst_stride, const T* src,
                     std::size_t src_stride, std::size_t width, std::size_t rows) {
        detail::rma_put(*this, strided(dst, dst_stride, src, src_stride, width, rows), nullptr,
                        nullptr, "am::context::put_strided");
    }
    /// Strided (2-D block) GET: row i goes from `src + i * src_stride` to
    /// `dst + i * dst_stride`.
    template <class T>
    void get_strided(T* dst, std::size_t dst_stride, global_ptr<T> src, std::size_t src_stride,
                     std::size_t width, std::size_t rows, counter& flag) {
        detail::rma_get(*this, strided(src, src_stride, dst, dst_stride, width, rows), &flag,
                        "am::context::get_strided");
    }
    /// Blocking strided GET.
    template <class T>
    void get_strided(T* dst, std::size_t dst_stride, global_ptr<T> src, std::size_t src_stride,
                     std::size_t width, std::size_t rows) {
        detail::rma_get(*this, strided(src, src_stride, dst, dst_stride, width, rows), nullptr,
                        "am::context::get_strided");
    }

    /// Indexed PUT (scatter): `base[index[i]] = src[i]` for every i.
    template <class T>
    void put_indexed(global_ptr<T> base, std::span<const std::uint64_t> index, const T* src,
                     counter& flag) {
        detail::rma_put(*this, indexed(base, index, src), &flag, nullptr,
                        "am::context::put_indexed");
    }
    /// Blocking indexed PUT.
    template <class T>
    void put_indexed(global_ptr<T> base, std::span<const std::uint64_t> index, const T* src) {
        detail::rma_put(*this, indexed(base, index, src), nullptr, nullptr,
                        "am::context::put_indexed");
    }
    /// Indexed GET (gather): `dst[i] = base[index[i]]` for every i.
    template <class T>
    void get_indexed(T* dst, global_ptr<T> base, std::span<const std::uint64_t> index,
                     counter& flag) {
        detail::rma_get(*this, indexed(base, index, dst), &flag, "am::context::get_indexed");
    }
    /// Blocking indexed GET.
    template <class T>
    void get_indexed(T* dst, global_ptr<T> base, std::span<const std::uint64_t> index) {
        detail::rma_get(*this, indexed(base, index, dst), nullptr, "am::context::get_indexed");
    }

    // ------------------------------------------------------- two-sided messages (send/receive)
    //
    // Tagged send and receive built on active messages, matched on source and tag in the
    // order sent (per source and tag, like MPI's non-overtaking rule); `any_source` and
    // `any_tag` match anything. Small messages travel eagerly (the receiver buffers them when
    // no receive is posted); large ones use the three-phase protocol of the 1992 paper
    // (request to send, ready to receive, data), so they are copied only into the posted
    // buffer. Tags are ≥ 0. Not callable from handlers, except `isend`/`irecv`.

    /// Blocking send: returns when `data` may be reused (small messages: at once).
    void send(int dest, int tag, std::span<const std::byte> data) {
        detail::msg_send(*this, dest, tag, data);
    }
    /// Blocking receive into `buffer`; returns the source, tag and size of the message.
    /// A matching message larger than `buffer` raises `am::error` (errc::too_large) and stays
    /// queued.
    message_status recv(int source, int tag, std::span<std::byte> buffer) {
        return detail::msg_recv(*this, source, tag, buffer);
    }
    /// Non-blocking send; `data` must stay valid until the request completes.
    [[nodiscard]] am::request isend(int dest, int tag, std::span<const std::byte> data) {
        return detail::msg_isend(*this, dest, tag, data, "am::context::isend");
    }
    /// Non-blocking receive; `buffer` must stay valid until the request completes.
    [[nodiscard]] am::request irecv(int source, int tag, std::span<std::byte> buffer) {
        return detail::msg_irecv(*this, source, tag, buffer, "am::context::irecv");
    }

  private:
    friend struct detail::access;
    friend class detail::context_impl;
    explicit context(detail::context_impl* impl) noexcept : _impl(impl) {}

    template <class T>
    static detail::rma_shape strided(global_ptr<T> remote, std::size_t remote_stride,
                                     const T* local, std::size_t local_stride, std::size_t width,
                                     std::size_t rows) noexcept {
        return detail::rma_shape{remote.rank(),
                                 remote.offset(),
                                 detail::bytes_of(remote_stride, sizeof(T)),
                                 const_cast<std::byte*>(reinterpret_cast<const std::byte*>(local)),
                                 detail::bytes_of(local_stride, sizeof(T)),
                                 detail::bytes_of(width, sizeof(T)),
                                 width == 0 ? 0 : rows};
    }
    template <class T>
    static detail::rma_shape indexed(global_ptr<T> base, std::span<const std::uint64_t> index,
                                     const T* local) noexcept {
        return detail::rma_shape{
            base.rank(),  base.offset(),
            sizeof(T),    const_cast<std::byte*>(reinterpret_cast<const std::byte*>(local)),
            sizeof(T),    sizeof(T),
            index.size(), index.data()};
    }

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
