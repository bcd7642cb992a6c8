// SPDX-License-Identifier: MIT
// The core's interface to the layers built on it; the library's eight are listed in
// src/runtime/layers.cpp (oam, rma, msg, typed, window, tam, coll, dist). It is the only header of
// the core a layer includes: a layer's include path holds nothing else of src/core, and when the
// build is configured cmake/am_check_includes.cmake refuses a layer source that includes a file
// outside its folder and src/util. Everything else a layer needs is the public API
// (include/am): registering handlers, requests and replies, counters, waits. How to add a
// layer and the rules a layer follows: docs/layers.md, the one place for that recipe.
//
// Thread-safety: every call takes the rank's context and follows the context's rules (the
// rank's own thread, or any thread with a progress thread / thread_multiple); "from a handler"
// means on the thread that runs the handler.
#pragma once

#include <am/atomic_op.hpp>
#include <am/context.hpp>
#include <am/core/frame.hpp>
#include <am/error.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <span>
#include <string>

namespace am::core {

// ------------------------------------------------------------------------------------ layers

/// Base of a layer's per-rank object. The runtime creates one per layer and rank right after
/// the rank's context, in the same order on every rank and before any message can be
/// dispatched, so handlers a layer registers in its constructor get the same indices
/// everywhere without a handshake. Destroyed after the rank's final quiescence, in reverse
/// order (no message for it can still arrive).
class layer {
  public:
    layer() = default;
    virtual ~layer() = default;
    layer(const layer&) = delete;
    layer& operator=(const layer&) = delete;
    /// Lines appended to the AM_STATS report at the end of the run; empty when none.
    [[nodiscard]] virtual std::string report() const { return {}; }
};

/// The identity of a kind of layer: define one `static constexpr core::key` per layer kind;
/// its address is what `attach` and `find` compare. `name` appears in errors.
struct key {
    const char* name;
};

/// The most layers one context holds.
inline constexpr unsigned max_layers = 12;

/// Makes `l` the rank's layer of kind `k` (the runtime calls this; `l` outlives the context's
/// use). Throws am::error when `k` is attached already or `max_layers` are.
void attach(context& ctx, const key& k, layer& l);
/// The rank's layer of kind `k`, or null. Cheap: a scan of at most `max_layers` entries.
[[nodiscard]] layer* find(const context& ctx, const key& k) noexcept;
/// Throws am::error(errc::bad_context) naming `call`: the context has no layer of kind `k`.
[[noreturn]] void missing(const context& ctx, const key& k, const char* call);
/// As `find`, as an `L&`; throws am::error(errc::bad_context) naming `call` when the context
/// has no such layer (a context not made by am::run).
template <class L>
[[nodiscard]] L& get(const context& ctx, const key& k, const char* call) {
    layer* l = find(ctx, k);
    if (l == nullptr) [[unlikely]]
        missing(ctx, k, call);
    return static_cast<L&>(*l);
}

// ------------------------------------------------------------------- threads and handlers

/// True on a thread that is running a handler of this context.
[[nodiscard]] bool in_handler(const context& ctx) noexcept;
/// True on a thread that is running a reply handler of this context (which may not send
/// requests).
[[nodiscard]] bool in_reply_handler(const context& ctx) noexcept;
/// The general case of check_thread (another thread, a handler, a shared context).
void check_thread_slow(const context& ctx, const char* call);
/// Throws am::error(errc::bad_context) naming `call` when the calling thread may not use the
/// context (see config::thread_multiple). Inline: on the rank's own thread outside handlers it
/// is one thread-local load and a compare, as in the core.
inline void check_thread(const context& ctx, const char* call) {
    const auto self = reinterpret_cast<std::uintptr_t>(detail::access::impl(ctx));
    if ((detail::t_frame & ~std::uintptr_t{detail::home_mark}) == self) [[likely]]
        return;
    check_thread_slow(ctx, call);
}
/// check_thread, and refuses a call from a handler (handlers must not block): for every call
/// that waits.
void check_wait(const context& ctx, const char* call);
/// True when another thread may run this rank's handlers concurrently with its own (a
/// progress thread, thread_multiple): a layer then locks the state its handlers share.
[[nodiscard]] bool locking(const context& ctx) noexcept;
/// Runs `f` while no handler of this rank runs on another thread. `f` must not send.
bool exclusive(context& ctx, const std::function<bool()>& f);

// --------------------------------------------------------------------------------- sending

/// Registers a handler from its descriptor (the public context::handler, for a layer that
/// builds the descriptor itself, e.g. the C API). Same rules and errors as that call.
std::uint32_t register_handler(context& ctx, const detail::handler_desc& h);
/// Sends the message `d` describes as a request (the public context::request* calls, for a
/// layer that builds the descriptor itself). Same rules and errors as those calls.
void send(context& ctx, const detail::send_desc& d);
/// The number of handlers the library (all layers) registered; a program's start after them.
[[nodiscard]] std::uint32_t library_handlers(const context& ctx) noexcept;
/// The text of the error for a send to `handler`, which is not a registered program handler.
[[nodiscard]] std::string unregistered(const context& ctx, std::uint32_t handler);

// -------------------------------------------------------------------------------- progress

/// Handles arrived messages (as context::poll); returns how many.
std::size_t poll(context& ctx);
/// Work the layer keeps for later (e.g. batches of an epoch this rank has not begun): `fn`
/// runs inside a poll, as a handler does (its sends never block), after `signal_deferred`.
/// Each layer may add one (in its constructor); a signal runs all of them.
void set_deferred(context& ctx, std::function<std::size_t()> fn);
/// Adds `n` (may be negative) to the work this layer holds outside the core that will still
/// send or finish (blocked optimistic handlers): quiescence waits until the rank's total is 0.
void add_pending(context& ctx, std::int64_t n) noexcept;
/// When quiescence has waited `seconds` (> 0) for pending work of the layers, `report()` says
/// what it is; the rank prints it once to stderr (a hang diagnosis; the wait goes on).
void set_pending_report(context& ctx, double seconds, std::function<std::string()> report);
void signal_deferred(context& ctx) noexcept;
/// Work that any thread polling this rank may run concurrently (thread_multiple): `fn` runs
/// as a handler, one unit per call, returning how many it ran; `work_available` says whether
/// there is any.
void set_parallel_work(context& ctx, std::function<std::size_t()> fn);
void work_available(context& ctx, bool yes) noexcept;

// ----------------------------------------------------------------------------- collectives

/// A kind of collective: the part of the library that starts it and that part's own number
/// for the call. Every rank must start the same kind at the same point; a rank in another
/// collective fails the job naming both calls (errc::collective_mismatch). A layer makes its
/// kinds with `add_collective` in its constructor and keeps them.
struct collective {
    std::uint8_t layer;
    std::uint8_t id;
};
/// Collective `id` (< 16) of layer `k`, named `call` in the errors ("am::window::fence"). The
/// layer's number is given by the core in the order layers first add a kind, the same on every
/// rank (layers are made in the same order everywhere). Throws am::error when `id` or the
/// number of layers is out of range.
[[nodiscard]] collective add_collective(context& ctx, const key& k, std::uint8_t id,
                                        const char* call);
/// The core's kind of am::context::exchange, for a layer whose exchange is that call or one
/// like it (a ranks' exchange of `bytes` each, named so in the errors).
inline constexpr collective context_exchange{1, 3};
/// am::context::barrier as collective `kind` (e.g. am::window::fence): the same handshake
/// of handler tables, but a rank in a plain barrier or another kind fails the job naming both
/// calls. Not from a handler.
void barrier(context& ctx, collective kind, const char* call);
/// Exchange of `bytes` per rank (at most 1 KiB) into `out` (size × bytes), rank order; polls
/// while it waits. Not from a handler.
void allgather(context& ctx, collective kind, const void* in, void* out, std::size_t bytes,
               const char* call);
/// The most words one allreduce_sum adds.
inline constexpr std::size_t max_reduce_words = 32;
/// Element-wise sum over all ranks of `n` words (at most max_reduce_words), calling `idle` while it
/// waits
/// (`idle` returns the work it did, 0 when none). Not from a handler.
void allreduce_sum(context& ctx, collective kind, const std::uint64_t* in, std::uint64_t* out,
                   std::size_t n, const std::function<std::size_t()>& idle, const char* call);
/// While waiting in a collective: the ranks that have not joined it ("" when unknown).
[[nodiscard]] std::string stragglers(context& ctx);

// ---------------------------------------------------------------------------- memory, failure

/// Rank `rank`'s segment mapped into this process (threads, shm, node peers under mpi), or
/// empty when it can be reached only by messages. The own rank's is context::segment().
[[nodiscard]] std::span<std::byte> segment_of(const context& ctx, int rank) noexcept;
/// One-sided network access to segments that are not mapped here (the ucx transport: UCP RMA
/// and atomics on the segments registered at start, without the target's CPU). `done` runs
/// exactly once, from inside a later poll of this rank, with the old word of an atomic (0 for
/// put and get). Calls follow the context's thread rules.
using remote_done = void (*)(void* arg, std::uint64_t value);
/// True when `rank`'s segment is not mapped here but reachable by the remote_* calls.
[[nodiscard]] bool one_sided(const context& ctx, int rank) noexcept;
/// `len` bytes from `src` to byte `offset` of `rank`'s segment; `src` must stay unchanged until
/// `done`, which runs once the bytes are visible at the target. Only where one_sided(rank).
void remote_put(context& ctx, int rank, std::uint64_t offset, const void* src, std::size_t len,
                remote_done done, void* arg);
/// `len` bytes from byte `offset` of `rank`'s segment to `dst`; `done` once they are there.
void remote_get(context& ctx, int rank, std::uint64_t offset, void* dst, std::size_t len,
                remote_done done, void* arg);
/// `op` on the `bytes`-wide (4 or 8, aligned) unsigned word at `offset` of `rank`'s segment,
/// atomic with respect to every other remote_atomic on it. Returns false and starts nothing when
/// the network does not do `op` (min, max): run it at the owner by message then.
[[nodiscard]] bool remote_atomic(context& ctx, int rank, std::uint64_t offset, atomic_op op,
                                 unsigned bytes, std::uint64_t operand, std::uint64_t compare,
                                 remote_done done, void* arg);

/// True once any rank failed the job; `failure_reason` then says why.
[[nodiscard]] bool job_failed(const context& ctx) noexcept;
[[nodiscard]] std::string failure_reason(const context& ctx);
/// Fails the job with `reason` (the first reason wins): every rank's waits then stop with
/// errc::aborted carrying it. For a layer that found an error other ranks cannot see (a
/// collective mismatch); the layer then throws its own error on this rank.
void fail_job(context& ctx, std::string_view reason) noexcept;

// ------------------------------------------------------------------------------------ tracing

/// The rank's tracer while tracing is on, else null: an event site tests it (one load and a
/// well-predicted branch when off) and records with detail::trace_record / trace_span.
[[nodiscard]] inline detail::tracer* tracer(const context& ctx) noexcept {
    return detail::access::trace(ctx);
}

}  // namespace am::core

namespace am::detail {

/// For a layer whose handlers outlive their dispatch (optimistic handlers on their own
/// stacks): a copy of the token, and the mark that its reply is gone.
struct token_access {
    /// Constructs at `where` (storage for a token) a token for the same message as `t`.
    static token* copy(void* where, const token& t) noexcept {
        auto* c = new (where) token(t._ctx, t._source, t._lane);
        c->_replied = t._replied;
        return c;
    }
    /// From now on `t.reply` throws errc::bad_reply saying the handler blocked.
    static void detach(token& t) noexcept {
        t._replied = true;
        t._detached = true;
    }
};

}  // namespace am::detail
