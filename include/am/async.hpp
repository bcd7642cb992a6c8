// SPDX-License-Identifier: MIT
/// @file
/// `am::async(ctx, rank, f, args...)`: run a callable on another rank, YGM-style, with no
/// registration call.
///
/// - **The callable** is a lambda without captures, an empty function object, or a function
///   given as `am::async<&f>(ctx, rank, args...)`. Its type is entered in the program's table
///   when the program starts (static initialisation), keyed by a 64-bit hash of its mangled
///   name; every message names that key. A rank that receives a key its process does not have
///   (ranks running different binaries) fails the job naming the key. State travels as
///   arguments, or is reached at the target through an `am::dist::dist_object`. A capturing
///   lambda is refused at compile time.
/// - **It runs** on `rank` as a handler: inside that rank's poll, to completion, with
///   `f(args...)` or — when its first parameter is `am::context&` — `f(ctx, args...)` where
///   `ctx` is the target rank's context. It may call `am::async` again (to any depth); it must
///   not block (no waits, no blocking collectives). Its return value is dropped. An exception it
///   throws fails the job, naming the function, the rank and the sender.
/// - **Arguments** are any types <am/serial.hpp> sends (with <am/rpc_cereal.hpp>, cereal
///   types), of any total size up to the payload limit (`AM_MAX_PAYLOAD`, default 1 GiB;
///   above it errc::too_large and nothing is sent). They are serialised before `async`
///   returns: the caller's objects may change at once.
/// - **Coalescing.** Calls to one rank are packed into one message per destination of up to
///   `ctx.max_medium()` bytes, sent when full and whenever the rank polls or waits; a call
///   larger than that travels alone, in fragments, and is run once every fragment is in.
/// - **Completion.** Nothing is returned. `ctx.quiesce()` — or `am::dist::barrier(team)` for
///   the calls of one team — returns once every call sent before it, and every call those
///   made, has run.
///
/// Thread-safety: as `context::request`. Calls from one rank to one destination, counted on one
/// team, run in the order they were made (large ones too: their fragments travel in that order).
#pragma once

#include <am/context.hpp>
#include <am/detail/async.hpp>

#include <utility>

namespace am {

/// Runs `f(args...)` (or `f(ctx, args...)`) on job rank `rank`; see the file comment.
template <class F, class... A>
void async(context& ctx, int rank, F&& f, A&&... args) {
    (void)f;
    using D = std::remove_cvref_t<F>;
    detail::async_send<D>(detail::dist_of(ctx, "am::async"), 1, rank, "am::async",
                          std::forward<A>(args)...);
}

/// Runs function `Fn(args...)` on job rank `rank`.
template <auto Fn, class... A>
void async(context& ctx, int rank, A&&... args) {
    detail::async_send<detail::async_fn<Fn>>(detail::dist_of(ctx, "am::async"), 1, rank,
                                             "am::async", std::forward<A>(args)...);
}

}  // namespace am
