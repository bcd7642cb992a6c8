// SPDX-License-Identifier: MIT
/// @file
/// `am::error`: the exception thrown for misuse at the API boundary and for set-up failures.
#pragma once

#include <stdexcept>
#include <string>

namespace am {

/// Error codes shared by the C++ exception and the C status codes (`am_status_t`).
enum class errc : int {
    ok = 0,
    bad_rank = 1,     ///< destination rank outside [0, size)
    bad_handler = 2,  ///< handler not registered, wrong category or not yet sealed by a barrier
    too_large = 3,    ///< payload or argument count over a limit
    bad_reply = 4,    ///< second reply, reply outside a request handler
    bad_context = 5,  ///< call not allowed here (request from a reply handler, wait in a handler)
    out_of_segment = 6,        ///< long payload outside the target's registered segment
    handler_mismatch = 7,      ///< ranks registered different handler tables
    aborted = 8,               ///< the job is going down: a rank died or called abort
    system = 9,                ///< an operating-system call failed during set-up
    invalid_argument = 10,     ///< any other bad argument (configuration, null pointer)
    no_memory = 11,            ///< the segment has no free block of the requested size
    timeout = 12,              ///< an epoch end or am::tam::run wait over config::epoch_timeout
    collective_mismatch = 13,  ///< ranks called different collectives (e.g. barrier vs epoch end)
    remote = 14,               ///< a remote function (am::rpc) threw; the text says what
    broken_promise = 15        ///< an am::promise was destroyed without a value
};

/// Thrown by `am` calls on misuse and on job failure. `what()` names the call, the rank and the
/// limit that was crossed, e.g. "am::context::request: rank 0: destination 7 out of range
/// [0, 4)". A throwing send has not sent anything; messages accepted before it are unaffected.
class error : public std::runtime_error {
  public:
    error(errc code, const std::string& what) : std::runtime_error(what), _code(code) {}
    /// The error's category, also used as the C API status code.
    [[nodiscard]] errc code() const noexcept { return _code; }

  private:
    errc _code;
};

}  // namespace am
