// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/async.hpp> and <am/dist.hpp>, not part of the API: the program's table of
/// async functions (filled at static initialisation, keyed by a hash of each callable's mangled
/// type name, so no rank registers anything) and the entry points of the dist layer
/// (src/dist), which packs records per destination and runs them where they arrive.
#pragma once

#include <am/detail/handler.hpp>
#include <am/detail/rpc.hpp>
#include <am/error.hpp>
#include <am/serial.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace am {
class context;
}

namespace am::detail {

/// Runs one record: reads the arguments from `r` and calls the function on `ctx`'s rank.
using async_runner = void (*)(context& ctx, int source, serial_reader& r);

/// Adds a callable to the program's table (at static initialisation); returns its key, the
/// 64-bit hash of `mangled`. A second name with the same hash marks the key ambiguous: running
/// it fails the job. Thread-safe.
std::uint64_t async_add(const char* mangled, std::string_view shown, async_runner run) noexcept;

/// The dist layer of a rank (src/dist/dist_layer.hpp).
class dist_layer;
/// The rank's dist layer; errc::bad_context naming `call` for a context not made by am::run.
dist_layer& dist_of(context& ctx, const char* call);

/// A record being written: the buffer it goes into and where it starts.
struct record_out {
    std::vector<std::byte>* bytes;
    std::size_t start;
    void* slot;   // the layer's buffer
    bool locked;  // the layer's lock is held until close or abort
};
/// Opens a record of function `fn` to job rank `dest`, counted on team `team` (1 = world):
/// the arguments are then written at the end of `*bytes` (16-byte aligned). Checks `dest`.
record_out record_open(dist_layer& d, std::uint64_t team, int dest, std::uint64_t fn,
                       const char* call);
/// Ends the record (sends the batch when full; a record larger than a batch goes on its own in
/// fragments). Throws errc::too_large, nothing sent, above the payload limit.
void record_close(dist_layer& d, const record_out& o, const char* call);
/// Takes the record back out (its arguments failed to serialise).
void record_abort(dist_layer& d, const record_out& o) noexcept;

/// The mangled name that identifies `F` in every process of one program.
template <class F>
const char* async_mangled() noexcept {
    return typeid(F).name();
}

/// The wire parameters of async function `F` (without a leading `context&`).
template <class F>
using async_traits = rpc_traits<F>;

/// Reads the arguments and calls a default-constructed `F`.
template <class F, bool Ctx, class... P>
void async_run(context& ctx, serial_reader& r, type_list<P...>) {
    std::optional<std::tuple<P...>> args;
    args.emplace(std::tuple<P...>{serializer<P>::read(r)...});
    F f{};
    std::apply(
        [&](P&... p) {
            if constexpr (Ctx) {
                (void)f(ctx, std::move(p)...);
            } else {
                (void)f(std::move(p)...);
            }
        },
        *args);
}

template <class F>
void async_runner_of(context& ctx, int /*source*/, serial_reader& r) {
    using T = async_traits<F>;
    async_run<F, T::takes_ctx>(ctx, r, typename T::L{});
}

/// `F`'s key in the program's table. Registered at static initialisation (the static member is
/// odr-used by `key()`), so a rank that never sends `F` can still run it.
template <class F>
struct async_entry {
    static inline const std::uint64_t id =
        async_add(async_mangled<F>(), type_name<F>(), &async_runner_of<F>);
    static std::uint64_t key() noexcept { return id; }
};

/// A function pointer `Fn` as an empty callable (its type names `Fn`).
template <auto Fn>
struct async_fn : fn_object_r<Fn> {};

template <class F>
inline constexpr bool async_callable_v =
    std::is_empty_v<F>&& std::is_default_constructible_v<F>&& std::is_class_v<F>;

template <class F, class... P, class... A>
void send_record(dist_layer& d, std::uint64_t team, int dest, const char* call, type_list<P...>,
                 A&&... a) {
    static_assert(sizeof...(P) == sizeof...(A), "am::async: wrong number of arguments");
    static_assert((std::is_constructible_v<P, A> && ...),
                  "am::async: an argument does not convert to the function's parameter type");
    const record_out o = record_open(d, team, dest, async_entry<F>::key(), call);
    try {
        serial_writer w(*o.bytes);
        (serializer<P>::write(w, P(std::forward<A>(a))), ...);
    } catch (...) {
        record_abort(d, o);
        throw;
    }
    record_close(d, o, call);
}

/// Writes a record of `F(args...)` to `dest`, counted on `team`.
template <class F, class... A>
void async_send(dist_layer& d, std::uint64_t team, int dest, const char* call, A&&... a) {
    static_assert(async_callable_v<F>,
                  "am::async: the function must be a lambda without captures, an empty function "
                  "object, or a function passed as am::async<&f>; pass state as arguments (any "
                  "type am::serializer can send) or reach it through an am::dist::dist_object");
    using T = async_traits<F>;
    static_assert(sendable_all<typename T::L>::value);
    send_record<F>(d, team, dest, call, typename T::L{}, std::forward<A>(a)...);
}

}  // namespace am::detail
