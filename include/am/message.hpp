// SPDX-License-Identifier: MIT
/// @file
/// Two-sided tagged messages built on active messages: `am::request` (the handle of a
/// non-blocking `isend`/`irecv`), `am::message_status`, `am::any_source` and `am::any_tag`.
/// The calls themselves are members of `am::context` (`send`, `recv`, `isend`, `irecv`).
#pragma once

#include <cstddef>

namespace am {

class context;

namespace detail {
struct msg_op;
}  // namespace detail

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
    request(context& ctx, detail::msg_op* op) noexcept : _ctx(&ctx), _op(op) {}
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
    detail::msg_op* _op = nullptr;
    message_status _status;
};

}  // namespace am
