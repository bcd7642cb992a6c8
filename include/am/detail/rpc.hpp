// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/rpc.hpp>, not part of the API: a remote function's wire format (short
/// message or serialised medium), its optimistic handler, and the call and result bookkeeping
/// implemented in src/oam/rpc.cpp.
#pragma once

#include <am/future.hpp>
#include <am/serial.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace am {

template <class Sig>
struct remote;  // <am/rpc.hpp>

namespace detail {

/// A remote function's parameters (handler.hpp's params_of) and its result.
template <class F, class L = typename params_of<F>::type>
struct fn_traits;
template <class F, class... P>
struct fn_traits<F, type_list<P...>> {
    using result = std::invoke_result_t<std::remove_cvref_t<F>&, P...>;
    using params = type_list<P...>;
};

/// The parameters that travel: without a leading `am::context&`, decayed.
template <class L>
struct wire_params;
template <class... P>
struct wire_params<type_list<P...>> {
    static constexpr bool takes_ctx = false;
    using type = type_list<std::remove_cvref_t<P>...>;
};
template <class... P>
struct wire_params<type_list<context&, P...>> {
    static constexpr bool takes_ctx = true;
    using type = type_list<std::remove_cvref_t<P>...>;
};

template <class T>
inline constexpr bool short_value_v = wire_arg_v<T> && !std::is_pointer_v<T>;

template <class L>
struct short_call : std::false_type {};
template <class... P>
struct short_call<type_list<P...>>
    : std::bool_constant<(short_value_v<P> && ...) && sizeof...(P) <= max_args - 1> {};

template <class R>
constexpr bool short_result() {
    if constexpr (std::is_void_v<R>) {
        return true;
    } else {
        return short_value_v<R>;
    }
}
template <class R>
inline constexpr bool short_result_v = short_result<R>();

template <class T>
inline constexpr bool check_sendable() {
    static_assert(sendable<T>,
                  "am::rpc: this argument or result type cannot be sent. Use a trivially "
                  "copyable type, std::string, std::vector<T> or std::span<const T> (T "
                  "trivially copyable), specialise am::serializer<T>, or include "
                  "<am/rpc_cereal.hpp> and give the type a cereal serialize() function");
    return true;
}

/// A call in flight on the caller: where its result goes.
struct rpc_delivery {
    future_base* state;
    void (*from_slot)(future_base*, std::uint64_t);
    void (*from_bytes)(future_base*, std::span<const std::byte>);
};

// The rpc part of the scheduler (src/oam/rpc.cpp).
/// This process's number for a remote function (the key of the per-rank table).
std::uint32_t rpc_new_slot() noexcept;
/// Records that function `slot` is handler `index` on this rank.
void rpc_set_index(oam_sched* s, std::uint32_t slot, std::uint32_t index, std::string_view name);
/// The handler of function `slot`; throws errc::bad_handler naming `name` when unregistered.
std::uint32_t rpc_index(oam_sched* s, std::uint32_t slot, std::string_view name);
/// Registers the call; returns its id (which takes a reference on `d.state`).
std::uint64_t rpc_begin(oam_sched* s, const rpc_delivery& d);
/// Withdraws a call whose request could not be sent.
void rpc_cancel(oam_sched* s, std::uint64_t id) noexcept;
/// No result wanted.
inline constexpr std::uint64_t rpc_no_reply = ~std::uint64_t{0};
/// Sends the result of call `id` back to `caller` (from the remote function's handler); a
/// result over max_medium() goes back as a failure naming `name`.
void rpc_return_slot(oam_sched* s, int caller, std::uint64_t id, std::uint64_t value);
void rpc_return_bytes(oam_sched* s, int caller, std::uint64_t id, std::string_view name,
                      std::span<const std::byte> b);
/// Sends the exception the remote function `name` threw back (or fails the job for a call
/// without reply). Its text is cut to 8 KiB in the middle: the outermost call and the
/// innermost cause stay.
void rpc_return_error(oam_sched* s, int caller, std::uint64_t id, std::string_view name,
                      std::exception_ptr e);
/// Sends arguments larger than a medium message ahead to `rank` in parts; the call's message
/// then names the returned key. errc::too_large above config::max_payload (nothing sent).
std::uint64_t rpc_stash(context& ctx, int rank, std::span<const std::byte> b,
                        std::string_view name);
/// The arguments `source` sent ahead under `key`.
std::vector<std::byte> rpc_take_stash(oam_sched* s, int source, std::uint64_t key);

template <class T>
std::uint64_t to_slot(const T& v) noexcept {
    return pack_arg<T>(v);
}

template <class R>
void deliver_slot(future_base* b, std::uint64_t v) {
    auto* s = static_cast<future_state<R>*>(b);
    if constexpr (std::is_void_v<R>) {
        (void)v;
        (void)s->set_value();
    } else if constexpr (short_result_v<R>) {
        (void)s->set_value(unpack_arg<R>(v));
    } else {
        (void)v;
        (void)s->set_exception(std::make_exception_ptr(error(
            errc::invalid_argument, "am::rpc: a result arrived in another shape than its type")));
    }
}
template <class R>
void deliver_bytes(future_base* b, std::span<const std::byte> bytes) {
    auto* s = static_cast<future_state<R>*>(b);
    try {
        serial_reader r(bytes);
        (void)s->set_value(serializer<R>::read(r));
    } catch (...) {
        (void)s->set_exception(std::current_exception());
    }
}

/// Runs the remote function on its target and sends the result back.
template <class R, bool Ctx, class F, class... A>
void rpc_run(oam_sched* s, context& ctx, int caller, std::uint64_t id, std::string_view name, F& f,
             A&&... a) {
    try {
        auto call = [&]() -> R {
            if constexpr (Ctx) {
                return f(ctx, std::forward<A>(a)...);
            } else {
                return f(std::forward<A>(a)...);
            }
        };
        if constexpr (std::is_void_v<R>) {
            call();
            if (id != rpc_no_reply) rpc_return_slot(s, caller, id, 0);
        } else {
            R result = call();
            if (id == rpc_no_reply) return;
            if constexpr (short_result_v<R>) {
                rpc_return_slot(s, caller, id, to_slot(result));
            } else {
                std::vector<std::byte> out;
                serial_writer w(out);
                serializer<R>::write(w, result);
                rpc_return_bytes(s, caller, id, name, out);
            }
        }
    } catch (...) {
        rpc_return_error(s, caller, id, name, std::current_exception());
    }
}

/// The optimistic handler of a remote function `F` (a callable) with wire parameters `P...`.
template <class F, class R, bool Ctx, class L, bool Short = short_call<L>::value>
struct rpc_handler;

template <class F, class R, bool Ctx, class... P>
struct rpc_handler<F, R, Ctx, type_list<P...>, true> {
    oam_sched* s;
    F f;
    void operator()(token& t, std::uint64_t id, P... p) {
        rpc_run<R, Ctx>(s, t.ctx(), t.source(), id, type_name<F>(), f, std::move(p)...);
    }
};

template <class F, class R, bool Ctx, class... P>
struct rpc_handler<F, R, Ctx, type_list<P...>, false> {
    oam_sched* s;
    F f;
    void operator()(token& t, std::span<const std::byte> in, std::uint64_t id,
                    std::uint64_t stash) {
        context& ctx = t.ctx();
        const int caller = t.source();
        std::optional<std::tuple<P...>> args;
        std::vector<std::byte> whole;  // arguments sent ahead (views into it live on this frame)
        try {
            if (stash != 0) {
                whole = rpc_take_stash(s, caller, stash);
                in = whole;
            }
            serial_reader r(in);
            args.emplace(std::tuple<P...>{serializer<P>::read(r)...});
        } catch (...) {
            rpc_return_error(s, caller, id, type_name<F>(), std::current_exception());
            return;
        }
        std::apply(
            [&](P&... p) {
                rpc_run<R, Ctx>(s, ctx, caller, id, type_name<F>(), f, std::move(p)...);
            },
            *args);
    }
};

template <class F>
struct rpc_traits {
    using R = typename fn_traits<F>::result;
    using W = wire_params<typename fn_traits<F>::params>;
    using L = typename W::type;
    static constexpr bool takes_ctx = W::takes_ctx;
    static constexpr bool is_short = short_call<L>::value;
};

template <class L>
struct sendable_all;
template <class... P>
struct sendable_all<type_list<P...>> {
    static constexpr bool value = (check_sendable<P>() && ...);
};

/// Registers callable `f` as remote function; its handler index.
template <class F>
std::uint32_t rpc_register_callable(context& ctx, F&& f) {
    using D = std::remove_cvref_t<F>;
    using T = rpc_traits<D>;
    static_assert(sendable_all<typename T::L>::value);
    if constexpr (!std::is_void_v<typename T::R>) static_assert(check_sendable<typename T::R>());
    using H = rpc_handler<D, typename T::R, T::takes_ctx, typename T::L>;
    return optimistic_handler(ctx, H{oam_of(ctx, "am::rpc_register"), std::forward<F>(f)}).index;
}

/// Sends the call; `id` is rpc_no_reply or a call registered with rpc_begin.
template <class L, class... A>
struct rpc_send;
template <class... P, class... A>
struct rpc_send<type_list<P...>, A...> {
    static void go(context& ctx, int rank, std::uint32_t index, std::uint64_t id,
                   std::string_view name, A&&... a) {
        static_assert(sizeof...(P) == sizeof...(A), "am::rpc: wrong number of arguments");
        static_assert((std::is_constructible_v<P, A> && ...),
                      "am::rpc: an argument does not convert to the function's parameter type");
        if constexpr (short_call<type_list<P...>>::value) {
            ctx.request(rank, am::handler<category::short_am, std::uint64_t, P...>{index}, id,
                        static_cast<P>(std::forward<A>(a))...);
        } else {
            std::vector<std::byte> buf;
            serial_writer w(buf);
            (serializer<P>::write(w, P(std::forward<A>(a))), ...);
            const am::handler<category::medium, std::uint64_t, std::uint64_t> h{index};
            if (buf.size() <= ctx.max_medium()) {
                ctx.request(rank, h, std::span<const std::byte>(buf), id, std::uint64_t{0});
            } else {
                const std::uint64_t key = rpc_stash(ctx, rank, buf, name);
                ctx.request(rank, h, std::span<const std::byte>{}, id, key);
            }
        }
    }
};

template <class R, class L, class... A>
future<R> rpc_call(context& ctx, oam_sched* s, int rank, std::uint32_t index, std::string_view name,
                   A&&... a) {
    state_ref<R> st(new future_state<R>(s));
    rpc_delivery d{st.get(), &deliver_slot<R>, nullptr};
    if constexpr (!short_result_v<R>) d.from_bytes = &deliver_bytes<R>;
    const std::uint64_t id = rpc_begin(s, d);
    try {
        rpc_send<L, A...>::go(ctx, rank, index, id, name, std::forward<A>(a)...);
    } catch (...) {
        rpc_cancel(s, id);
        throw;
    }
    return future<R>(std::move(st));
}

/// Function `Fn` as a callable of the same signature (its type names `Fn`).
template <auto Fn, class L = typename fn_traits<decltype(Fn)>::params>
struct fn_object_r;
template <auto Fn, class... P>
struct fn_object_r<Fn, type_list<P...>> {
    typename fn_traits<decltype(Fn)>::result operator()(P... p) const {
        return Fn(std::forward<P>(p)...);
    }
};

/// This process's key of function `Fn` in the per-rank tables.
template <auto Fn>
std::uint32_t rpc_slot_of() {
    static const std::uint32_t slot = rpc_new_slot();
    return slot;
}

template <class R, class L>
struct remote_of;
template <class R, class... P>
struct remote_of<R, type_list<P...>> {
    static remote<R(P...)> make(std::uint32_t index) { return remote<R(P...)>{index}; }
};

}  // namespace detail

}  // namespace am
