// SPDX-License-Identifier: MIT
// The tagged send/receive part of the C API (include/am/am_msg.h) over the message layer's
// entry points (am::msg::detail::msg_*) and am::request. A C request keeps the outcome once the
// operation is over, so a receive that failed (too small a buffer) reports the same failure
// to every later test or wait instead of an empty success.
#include "capi_layers.hpp"

#include <am/am.h>
#include <am/am_msg.h>
#include <am/context.hpp>
#include <am/msg.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>

static_assert(AM_MSG_ANY_SOURCE == am::any_source && AM_MSG_ANY_TAG == am::any_tag);

/// A C request: the C++ request until the operation is over, then its outcome.
struct am_msg_request {
    std::shared_ptr<am_context> ctx;
    am::request cxx;
    bool over = false;
    am_status_t status = AM_OK;  // once over
    std::string error;           // the failure's text, without "call: rank N: "
    am::message_status result;
};

namespace {

using namespace am::capi;
using am::errc;

/// "call: rank N: what" → "what".
std::string without_where(const std::string& what) {
    const auto rank = what.find(": rank ");
    const auto colon = rank == std::string::npos ? rank : what.find(": ", rank + 7);
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

/// Runs `f` for `call` on `ctx`, with the layer's C++ names turned into their C names.
template <class F>
am_status_t run_c(am_context* ctx, const char* call, F&& f) noexcept {
    return guarded_c(ctx, call,
                     {{"am::any_source", "AM_MSG_ANY_SOURCE"}, {"am::any_tag", "AM_MSG_ANY_TAG"}},
                     std::forward<F>(f));
}

void check_data(const char* call, const am_context* c, const void* p, std::size_t len,
                const char* what) {
    check_pointer(call, c, p, len != 0, what);
}

void store(am_msg_status_t* out, const am::message_status& st) {
    if (out != nullptr) *out = am_msg_status_t{st.source, st.tag, st.bytes};
}

/// Ends the operation with a failure raised by the C++ request: it will report the same.
void end_failed(am_msg_request* r, const am::error& e) {
    r->over = true;
    r->status = static_cast<am_status_t>(e.code());
    r->error = without_where(e.what());
}

/// Polls once (test) or until completion (wait); true when the operation is over. A failure
/// of the operation itself ends it; one of the progress (the job going down) propagates and
/// leaves it pending.
bool progress(am_msg_request* r, bool wait) {
    if (r->over) return true;
    try {
        if (wait) {
            r->result = r->cxx.wait();
        } else if (!r->cxx.test()) {
            return false;
        } else {
            r->result = r->cxx.status();
        }
        r->over = true;
    } catch (const am::error& e) {
        if (r->cxx.active()) throw;  // not the operation's failure: it goes on
        end_failed(r, e);
    }
    return true;
}

/// Reports an operation that ended in failure, as the calling `call`.
void report(const char* call, const am_msg_request* r, am_msg_status_t* status) {
    if (r->status != AM_OK) {
        fail(static_cast<errc>(r->status), call, r->ctx.get(), r->error);
    }
    store(status, r->result);
}

}  // namespace

extern "C" {

am_status_t am_msg_send(am_context_t* ctx, int dest, int tag, const void* data,
                        size_t len) noexcept {
    return run_c(ctx, "am_msg_send", [&] {
        check_data("am_msg_send", ctx, data, len, "data pointer");
        am::msg::detail::msg_send(*ctx->cxx, dest, tag, {static_cast<const std::byte*>(data), len});
    });
}

am_status_t am_msg_recv(am_context_t* ctx, int source, int tag, void* buf, size_t cap,
                        am_msg_status_t* status) noexcept {
    return run_c(ctx, "am_msg_recv", [&] {
        check_data("am_msg_recv", ctx, buf, cap, "receive buffer");
        store(status, am::msg::detail::msg_recv(*ctx->cxx, source, tag,
                                                {static_cast<std::byte*>(buf), cap}));
    });
}

am_status_t am_msg_send_nb(am_context_t* ctx, int dest, int tag, const void* data, size_t len,
                           am_msg_request_t** out) noexcept {
    if (out != nullptr) *out = nullptr;
    return run_c(ctx, "am_msg_send_nb", [&] {
        check_pointer("am_msg_send_nb", ctx, out, true, "pointer for the request");
        check_data("am_msg_send_nb", ctx, data, len, "data pointer");
        auto r = std::make_unique<am_msg_request>();
        r->ctx = ctx->shared_from_this();
        r->cxx = am::msg::detail::msg_isend(
            *ctx->cxx, dest, tag, {static_cast<const std::byte*>(data), len}, "am_msg_send_nb");
        *out = r.release();
    });
}

am_status_t am_msg_recv_nb(am_context_t* ctx, int source, int tag, void* buf, size_t cap,
                           am_msg_request_t** out) noexcept {
    if (out != nullptr) *out = nullptr;
    return run_c(ctx, "am_msg_recv_nb", [&] {
        check_pointer("am_msg_recv_nb", ctx, out, true, "pointer for the request");
        check_data("am_msg_recv_nb", ctx, buf, cap, "receive buffer");
        auto r = std::make_unique<am_msg_request>();
        r->ctx = ctx->shared_from_this();
        r->cxx = am::msg::detail::msg_irecv(*ctx->cxx, source, tag,
                                            {static_cast<std::byte*>(buf), cap}, "am_msg_recv_nb");
        *out = r.release();
    });
}

am_status_t am_msg_test(am_msg_request_t* req, int* done, am_msg_status_t* status) noexcept {
    if (done != nullptr) *done = 0;
    if (req == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return run_c(req->ctx.get(), "am_msg_test", [&] {
        check_pointer("am_msg_test", req->ctx.get(), done, true, "pointer for the result");
        if (!progress(req, false)) return;
        *done = 1;
        report("am_msg_test", req, status);
    });
}

am_status_t am_msg_wait(am_msg_request_t* req, am_msg_status_t* status) noexcept {
    if (req == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return run_c(req->ctx.get(), "am_msg_wait", [&] {
        progress(req, true);
        report("am_msg_wait", req, status);
    });
}

void am_msg_free(am_msg_request_t* req) noexcept {
    delete req;  // ~am::request withdraws an unmatched receive or waits; it never throws
}

}  // extern "C"
