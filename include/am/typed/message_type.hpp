// SPDX-License-Identifier: MIT
/// @file
/// The typed layer's message types: `am::message_type<T>`, values of `T` sent to a rank
/// where a handler runs on them (part of <am/typed.hpp>).
#pragma once

#include <am/context.hpp>
#include <am/detail/typed.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace am {

namespace detail {

/// Calls the user's handler on a batch: once with the span, or once per message.
template <class T, class F>
void run_batch(F& f, int source, std::span<const T> batch) {
    if constexpr (std::is_invocable_v<F&, int, std::span<const T>>) {
        f(source, batch);
    } else if constexpr (std::is_invocable_v<F&, int, const T&>) {
        for (const T& v : batch) f(source, v);
    } else {
        for (const T& v : batch) f(v);
    }
}

template <class T, class F>
inline constexpr bool valid_handler_v =
    std::is_invocable_v<F&, int, std::span<const T>> || std::is_invocable_v<F&, int, const T&> ||
    std::is_invocable_v<F&, const T&>;

}  // namespace detail

/// A message type: values of `T` sent to a rank, where `handler` runs on them. Created
/// collectively (same types in the same order on every rank; the constructor ends with a
/// barrier, which throws am::error (errc::handler_mismatch) on every rank when a rank created
/// one with another name, `T` or handler type, naming both ranks and what each created). `T` must
/// be trivially copyable. The handler is one of `void(int source, std::span<const T> batch)`,
/// `void(int source, const T&)` or `void(const T&)`; the per-message forms are called in a loop the
/// compiler can inline. Handlers may send any typed message (nested sends); they run on the thread
/// that polls. Sends must happen inside an `am::epoch` (or from a handler). Lives until the job
/// ends on the library side; the object must outlive the layers (coalescing, dedup, combining)
/// built on it.
template <class T>
class message_type {
    static_assert(std::is_trivially_copyable_v<T>,
                  "am::message_type<T>: T must be trivially copyable: messages are copied "
                  "byte-wise between ranks");
    static_assert(!std::is_pointer_v<T>,
                  "am::message_type<T>: T must not be a pointer: addresses mean nothing on "
                  "another rank");

  public:
    using value_type = T;

    template <class F>
    message_type(context& ctx, F&& handler, std::string_view name = "message_type")
        : _ctx(&ctx), _layer(detail::typed_of(ctx)) {
        using H = std::remove_cvref_t<F>;
        static_assert(detail::valid_handler_v<T, H>,
                      "am::message_type<T>: the handler must be callable as "
                      "(int source, std::span<const T>), (int source, const T&) or (const T&)");
        // The layer owns the handler from the call on, also when it throws.
        const detail::type_runner runner{new H(std::forward<F>(handler)), &run<H>,
                                         &detail::destroy_callable<H>};
        _id = detail::typed_register(_layer, name, sizeof(T), runner);
        detail::typed_layer* layer = _layer;
        const std::uint32_t id = _id;
        auto deliver = [layer, id](token& t, std::span<const std::byte> p, std::uint64_t tag) {
            detail::typed_deliver(layer, id, t.source(), p, tag);
        };
        // The core handler carries the type's name, and its type (which depends on T and the
        // handler's type) tells the rest: the barrier's handshake finds a rank that named,
        // typed or handled this message type differently, and reports both ranks' versions.
        using D = decltype(deliver);
        using K = detail::handle_t<D>;
        const std::string label = "am::message_type \"" + std::string(name) + "\"";
        _handler = detail::core_register(
            detail::access::impl(ctx),
            detail::handler_desc{K::kind, K::nargs, &detail::invoke_callable<D>, new D(deliver),
                                 &detail::destroy_callable<D>, label, typeid(D).name()});
        detail::typed_set_handler(_layer, _id, _handler);
        ctx.barrier();
    }

    /// Sends one value to `dest` as its own core message (no coalescing). Copies `value` before
    /// it returns. Makes progress; from a handler it never blocks.
    void send(const T& value, int dest) {
        const std::uint64_t tag = detail::typed_send_tag(_layer, "am::message_type::send");
        detail::typed_send(_layer, _id, dest, tag, &value, 1, "am::message_type::send");
    }
    /// Sends all of `values` to `dest` as one core message (at most `max_batch()` values).
    void send(std::span<const T> values, int dest) {
        const std::uint64_t tag = detail::typed_send_tag(_layer, "am::message_type::send");
        detail::typed_send(_layer, _id, dest, tag, values.data(), values.size(),
                           "am::message_type::send");
    }
    /// Internal: sends `value` in the epoch and level of `tag` (a layer that held it).
    void send_tagged(const T& value, int dest, std::uint64_t tag) {
        detail::typed_check_tag(_layer, tag, "am::message_type::send");
        detail::typed_send(_layer, _id, dest, tag, &value, 1, "am::message_type::send");
    }
    /// The most values one core message carries (bounded by `context::max_medium()`).
    [[nodiscard]] std::size_t max_batch() const noexcept {
        return detail::typed_max_batch_bytes(_layer) / sizeof(T);
    }
    [[nodiscard]] context& ctx() const noexcept { return *_ctx; }
    /// This type's number among the job's message types (creation order).
    [[nodiscard]] std::uint32_t id() const noexcept { return _id; }
    [[nodiscard]] detail::typed_layer* layer() const noexcept { return _layer; }

  private:
    // Runs the user's handler on a received batch: the per-message loop is compiled here,
    // where the handler's type is known, so the call inlines.
    template <class H>
    static void run(void* obj, int source, std::span<const std::byte> p) {
        H& f = *static_cast<H*>(obj);
        const std::size_t n = p.size() / sizeof(T);
        if (reinterpret_cast<std::uintptr_t>(p.data()) % alignof(T) == 0) [[likely]] {
            detail::run_batch<T>(f, source,
                                 std::span<const T>(reinterpret_cast<const T*>(p.data()), n));
        } else {  // over-aligned T: the ring aligns records to 8 bytes
            std::vector<T> copy(n);
            std::memcpy(copy.data(), p.data(), n * sizeof(T));
            detail::run_batch<T>(f, source, std::span<const T>(copy));
        }
    }

    context* _ctx;
    detail::typed_layer* _layer;
    std::uint32_t _id = 0;
    std::uint32_t _handler = 0;
};

}  // namespace am
