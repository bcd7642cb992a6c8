// SPDX-License-Identifier: MIT
/// @file
/// Optimistic RPC: `am::rpc<&f>(ctx, rank, args...)` runs `f(args...)` on `rank` and returns an
/// `am::future` of its result; `am::rpc_ff` is fire-and-forget. No stub compiler: the
/// function's C++ signature decides the wire format at compile time.
///
/// - **Remote functions** are plain functions (`rpc_register<&f>(ctx)`) or callables
///   (`auto h = rpc_register(ctx, lambda)`, called with `rpc(ctx, rank, h, args...)`).
///   Registration is collective and sealed by the next `barrier()`, which checks every rank
///   registered the same functions in the same order (the handler-table handshake). A function
///   may take `am::context&` first: it receives the context of the rank it runs on (for nested
///   RPCs).
/// - **Where it runs.** As an optimistic handler (<am/oam.hpp>) on the target: at once in the
///   target's poll, turning into a thread only if it blocks (on a mutex, a future — e.g. a
///   nested RPC's `get()` — a condition variable, `ctx.wait`).
/// - **Arguments and results**: see <am/serial.hpp>. When every parameter is trivially
///   copyable and at most 8 bytes (at most 15 of them) the call travels as a short active
///   message; otherwise as one medium message when they fit `ctx.max_medium()` bytes, else
///   sent ahead in parts of that size and reassembled at the target before the call runs, up
///   to config::max_payload (`AM_MAX_PAYLOAD`, default 1 GiB; more is refused with
///   errc::too_large, nothing sent). Results likewise (a result over the limit reaches the
///   caller's `get()` as errc::remote naming errc::too_large).
/// - **Exceptions** the remote function throws travel back: `get()` throws am::error with
///   errc::remote whose text names the function, the rank and the original `what()` (the
///   original code for an `am::error`); nested failures keep both ends (the text is cut to 8 KiB
///   in the middle). A fire-and-forget call's exception fails the job, as a
///   handler's would.
/// - **Completion.** The future is ready once the result message has been handled on the
///   caller's rank (in one of its polls). `rpc` itself never blocks (from a handler it queues).
///
/// Thread-safety: as `context::request`.
#pragma once

#include <am/detail/rpc.hpp>
#include <am/future.hpp>
#include <am/serial.hpp>

#include <cstdint>

namespace am {

/// A handle to a registered callable taking `P...` and returning `R` (from `rpc_register`).
template <class Sig>
struct remote;
template <class R, class... P>
struct remote<R(P...)> {
    std::uint32_t index = UINT32_MAX;  ///< its handler's index
};

/// Registers function `Fn` for `rpc<Fn>` on this rank (collective; see the file comment).
template <auto Fn>
void rpc_register(context& ctx) {
    const std::uint32_t index = detail::rpc_register_callable(ctx, detail::fn_object_r<Fn>{});
    detail::rpc_set_index(detail::oam_of(ctx, "am::rpc_register"), detail::rpc_slot_of<Fn>(), index,
                          detail::value_name<Fn>());
}

/// Registers callable `f` (a lambda may capture rank-local state; the context keeps a copy)
/// as a remote function; call it with `rpc(ctx, rank, handle, args...)`.
template <class F>
auto rpc_register(context& ctx, F&& f) {
    using T = detail::rpc_traits<std::remove_cvref_t<F>>;
    return detail::remote_of<typename T::R, typename T::L>::make(
        detail::rpc_register_callable(ctx, std::forward<F>(f)));
}

/// Calls `Fn(args...)` on `rank`; the future of its result.
template <auto Fn, class... A>
auto rpc(context& ctx, int rank, A&&... args) {
    using T = detail::rpc_traits<decltype(Fn)>;
    detail::oam_sched* s = detail::oam_of(ctx, "am::rpc");
    const std::uint32_t index =
        detail::rpc_index(s, detail::rpc_slot_of<Fn>(), detail::value_name<Fn>());
    return detail::rpc_call<typename T::R, typename T::L>(
        ctx, s, rank, index, detail::value_name<Fn>(), std::forward<A>(args)...);
}

/// Calls `Fn(args...)` on `rank` without a result; an exception there fails the job.
template <auto Fn, class... A>
void rpc_ff(context& ctx, int rank, A&&... args) {
    using T = detail::rpc_traits<decltype(Fn)>;
    const std::uint32_t index = detail::rpc_index(
        detail::oam_of(ctx, "am::rpc_ff"), detail::rpc_slot_of<Fn>(), detail::value_name<Fn>());
    detail::rpc_send<typename T::L, A...>::go(ctx, rank, index, detail::rpc_no_reply,
                                              detail::value_name<Fn>(), std::forward<A>(args)...);
}

/// Calls a registered callable on `rank`.
template <class R, class... P, class... A>
future<R> rpc(context& ctx, int rank, remote<R(P...)> h, A&&... args) {
    return detail::rpc_call<R, detail::type_list<P...>>(ctx, detail::oam_of(ctx, "am::rpc"), rank,
                                                        h.index, "registered callable",
                                                        std::forward<A>(args)...);
}

/// Calls a registered callable on `rank` without a result.
template <class R, class... P, class... A>
void rpc_ff(context& ctx, int rank, remote<R(P...)> h, A&&... args) {
    detail::rpc_send<detail::type_list<P...>, A...>::go(
        ctx, rank, h.index, detail::rpc_no_reply, "registered callable", std::forward<A>(args)...);
}

}  // namespace am
