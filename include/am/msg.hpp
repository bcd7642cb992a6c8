// SPDX-License-Identifier: MIT
/// @file
/// The message layer (src/msg): two-sided tagged send and receive built on active messages.
/// Its calls are members of `am::context` (`ctx.send(...)`, `ctx.irecv(...)`), declared here in
/// `am::msg::context_api`, which `am::context` inherits; `am::context` and this header include
/// each other, so either one gives the whole API. Its types (`am::request`,
/// `am::message_status`, `am::any_source`, `am::any_tag`) are in `am` and in `am::msg`.
///
/// Messages are matched on source and tag in the order sent (per source and tag, like MPI's
/// non-overtaking rule); `any_source` and `any_tag` match anything. Small messages travel
/// eagerly (the receiver buffers them when no receive is posted); large ones use the
/// three-phase protocol of the 1992 paper (request to send, ready to receive, data), so they
/// are copied only into the posted buffer. Tags are ≥ 0.
///
/// Completion and buffer lifetime: a send is complete when its buffer may be reused, a receive
/// when the data is in its buffer; the buffers of `isend`/`irecv` stay valid until then.
/// Blocking calls are not callable from handlers; `isend`/`irecv` are.
///
/// Thread-safety: as the context's (the thread that runs the rank; with a progress thread the
/// calls are serialised internally). A request is used by the thread that runs its rank.
#pragma once

#include <am/detail/msg.hpp>

#include <cstddef>
#include <span>

namespace am {

class context;

/// `recv`/`irecv` source that matches a message from any rank.
inline constexpr int any_source = -1;
/// `recv`/`irecv` tag that matches any tag.
inline constexpr int any_tag = -1;

/// What a completed receive got: the sending rank, the tag and the number of bytes.
struct message_status {
    int source = -1;
    int tag = -1;
    std::size_t bytes = 0;
};

/// Handle of a non-blocking `isend` or `irecv`; move-only.
///
/// Completion: a send is complete when its buffer may be reused; a receive when the data is in
/// its buffer. The buffers must stay valid until then. Progress happens in `test`, `wait` and
/// every other call that polls the context.
///
/// Destroying an incomplete request cancels a receive that has not been matched yet, and
/// otherwise waits for completion (polling), so no buffer is written after the handle is
/// gone. Thread-safety: used by the thread that runs the rank, like the context.
class request {
  public:
    request() noexcept = default;
    /// An operation in progress (created by the library).
    request(context& ctx, msg::detail::msg_op* op) noexcept : _ctx(&ctx), _op(op) {}
    /// An operation that completed at once, with its status.
    request(context& ctx, const message_status& done) noexcept : _ctx(&ctx), _status(done) {}
    request(request&& o) noexcept : _ctx(o._ctx), _op(o._op), _status(o._status) {
        o._op = nullptr;
    }
    request& operator=(request&& o) noexcept;
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    ~request();

    /// Polls once; true when the operation has completed. Throws `am::error` when it failed
    /// (errc::too_large: the matched message is larger than the receive buffer; the message
    /// stays queued for a later receive with a larger buffer) or the job is going down.
    bool test();
    /// Polls until the operation completes and returns its status (for a send: the
    /// destination, tag and size). Throws as `test`. Not callable from a handler.
    message_status wait();
    /// True until `wait` or a successful `test` has completed the operation. An eager `isend`
    /// (payload within `AM_EAGER_BYTES`) is complete when it returns: never active.
    [[nodiscard]] bool active() const noexcept { return _op != nullptr; }
    /// The status of the completed operation (meaningful once `test` returned true or `wait`
    /// returned).
    [[nodiscard]] const message_status& status() const noexcept { return _status; }

  private:
    void release() noexcept;

    context* _ctx = nullptr;
    msg::detail::msg_op* _op = nullptr;
    message_status _status;
};

}  // namespace am

namespace am::msg {

using am::any_source;
using am::any_tag;
using am::message_status;
using am::request;

/// The send/receive calls of `am::context` (its base class; `Context` is `am::context`).
template <class Context>
class context_api {
  public:
    /// Blocking send: returns when `data` may be reused (small messages: at once).
    void send(int dest, int tag, std::span<const std::byte> data) {
        detail::msg_send(self(), dest, tag, data);
    }
    /// Blocking receive into `buffer`; returns the source, tag and size of the message.
    /// A matching message larger than `buffer` raises `am::error` (errc::too_large) and stays
    /// queued.
    message_status recv(int source, int tag, std::span<std::byte> buffer) {
        return detail::msg_recv(self(), source, tag, buffer);
    }
    /// Non-blocking send; `data` must stay valid until the request completes.
    [[nodiscard]] am::request isend(int dest, int tag, std::span<const std::byte> data) {
        return detail::msg_isend(self(), dest, tag, data, "am::context::isend");
    }
    /// Non-blocking receive; `buffer` must stay valid until the request completes.
    [[nodiscard]] am::request irecv(int source, int tag, std::span<std::byte> buffer) {
        return detail::msg_irecv(self(), source, tag, buffer, "am::context::irecv");
    }

  protected:
    context_api() = default;

  private:
    Context& self() noexcept { return static_cast<Context&>(*this); }
};

}  // namespace am::msg

#include <am/context.hpp>
