// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/handler.hpp>, not part of the API: how a handler's C++ signature maps onto
/// the wire (category, argument count, packing of arguments into 8-byte slots).
#pragma once

#include <am/handler.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

namespace am {
namespace detail {

/// A handler argument travels in one 8-byte slot: trivially copyable and at most 8 bytes.
template <class T>
inline constexpr bool wire_arg_v = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;

template <class T>
inline std::uint64_t pack_arg(const T& v) noexcept {
    std::uint64_t slot = 0;
    std::memcpy(&slot, &v, sizeof(T));
    return slot;
}

template <class T>
inline T unpack_arg(std::uint64_t slot) noexcept {
    T v;
    std::memcpy(&v, &slot, sizeof(T));
    return v;
}

/// Type-erased entry point stored in the handler table. `payload` is the medium payload (valid
/// only during the call) or the long payload in the segment; empty for short messages.
using invoke_fn = void (*)(void* obj, token& t, const std::uint64_t* args, std::byte* payload,
                           std::size_t len);

template <class... A>
struct type_list {};

/// Parameter list of a function type / function pointer / callable's `operator()`.
template <class F>
struct params_of : params_of<decltype(&std::remove_cvref_t<F>::operator())> {};
template <class R, class... P>
struct params_of<R (*)(P...)> {
    using type = type_list<P...>;
};
template <class R, class... P>
struct params_of<R (*)(P...) noexcept> : params_of<R (*)(P...)> {};
template <class R, class C, class... P>
struct params_of<R (C::*)(P...)> : params_of<R (*)(P...)> {};
template <class R, class C, class... P>
struct params_of<R (C::*)(P...) const> : params_of<R (*)(P...)> {};
template <class R, class C, class... P>
struct params_of<R (C::*)(P...) noexcept> : params_of<R (*)(P...)> {};
template <class R, class C, class... P>
struct params_of<R (C::*)(P...) const noexcept> : params_of<R (*)(P...)> {};

/// Maps `void(token&, [span], A...)` to its category and trailing argument list.
template <class List>
struct signature;

template <class Tok, class... A>
struct signature<type_list<Tok, A...>> {
    static_assert(std::is_same_v<Tok, token&>,
                  "am: a handler's first parameter must be `am::token&`");
    static constexpr category kind = category::short_am;
    using args = type_list<std::remove_cvref_t<A>...>;
};
template <class Tok, class... A>
struct signature<type_list<Tok, std::span<const std::byte>, A...>> {
    static_assert(std::is_same_v<Tok, token&>,
                  "am: a handler's first parameter must be `am::token&`");
    static constexpr category kind = category::medium;
    using args = type_list<std::remove_cvref_t<A>...>;
};
template <class Tok, class... A>
struct signature<type_list<Tok, std::span<std::byte>, A...>> {
    static_assert(std::is_same_v<Tok, token&>,
                  "am: a handler's first parameter must be `am::token&`");
    static constexpr category kind = category::long_am;
    using args = type_list<std::remove_cvref_t<A>...>;
};

template <category C, class List>
struct handle_of;
template <category C, class... A>
struct handle_of<C, type_list<A...>> {
    static_assert((wire_arg_v<A> && ...),
                  "am: every handler argument after the token (and payload span) must be "
                  "trivially copyable and at most 8 bytes; send larger data as a payload");
    static_assert(sizeof...(A) <= max_args, "am: a handler takes at most 16 arguments");
    using type = handler<C, A...>;
};

template <class F>
using sig_t = signature<typename params_of<F>::type>;

template <class F>
using handle_t = typename handle_of<sig_t<F>::kind, typename sig_t<F>::args>::type;

/// Calls `f` with the token, the payload (by category) and the unpacked argument slots.
template <category C, class F, class... A, std::size_t... I>
inline void call_unpacked(F& f, token& t, const std::uint64_t* args, std::byte* payload,
                          std::size_t len, type_list<A...>, std::index_sequence<I...>) {
    if constexpr (C == category::short_am) {
        (void)payload, (void)len;
        f(t, unpack_arg<A>(args[I])...);
    } else if constexpr (C == category::medium) {
        f(t, std::span<const std::byte>(payload, len), unpack_arg<A>(args[I])...);
    } else {
        f(t, std::span<std::byte>(payload, len), unpack_arg<A>(args[I])...);
    }
    (void)args;
}

template <class F>
void invoke_callable(void* obj, token& t, const std::uint64_t* args, std::byte* payload,
                     std::size_t len) {
    using S = sig_t<F>;
    using L = typename S::args;
    call_unpacked<S::kind>(*static_cast<F*>(obj), t, args, payload, len, L{},
                           std::make_index_sequence<handle_t<F>::nargs>{});
}

template <auto Fn>
void invoke_function(void*, token& t, const std::uint64_t* args, std::byte* payload,
                     std::size_t len) {
    using F = decltype(Fn);
    using S = sig_t<F>;
    F fn = Fn;
    call_unpacked<S::kind>(fn, t, args, payload, len, typename S::args{},
                           std::make_index_sequence<handle_t<F>::nargs>{});
}

/// A human-readable name for `T` (or value `V`), the same in every rank of one program; used
/// in the handler-table handshake and in statistics.
template <class T>
constexpr std::string_view type_name() {
    return __PRETTY_FUNCTION__;
}
template <auto V>
constexpr std::string_view value_name() {
    return __PRETTY_FUNCTION__;
}

/// Packs call arguments after checking them against the handler's parameter types.
template <class... A, class... Args>
inline void pack_args(std::uint64_t* slots, type_list<A...>, Args&&... args) {
    static_assert(sizeof...(A) == sizeof...(Args),
                  "am: wrong number of arguments for this handler");
    static_assert((std::is_convertible_v<Args, A> && ...),
                  "am: an argument does not convert to the handler's parameter type");
    std::size_t i = 0;
    ((slots[i++] = pack_arg<A>(static_cast<A>(std::forward<Args>(args)))), ...);
    (void)slots, (void)i;
}

}  // namespace detail
}  // namespace am
