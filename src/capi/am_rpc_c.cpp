// SPDX-License-Identifier: MIT
// The RPC C API (include/am/am_rpc.h) over am::rpc and am::future: a C remote
// function is a C++ callable taking the caller's rank and the argument bytes and returning
// the result bytes, registered with am::rpc_register, so it runs as an optimistic handler and
// may block; a C future owns an am::future of those bytes and keeps the result once taken.
#include "capi_common.hpp"

#include <am/core/layer.hpp>

#include <am/am.h>
#include <am/am_rpc.h>
#include <am/context.hpp>
#include <am/future.hpp>
#include <am/rpc.hpp>
#include <am/serial.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

/// The answer of one run of a C remote function; on the stack of that run.
struct am_rpc_reply {
    am_context* ctx;
    std::vector<std::byte> data;
    std::string error;
    bool answered = false;
    bool failed = false;
};

/// A C future: the C++ future until its value is taken, then the value (or the failure).
struct am_rpc_future {
    std::shared_ptr<am_context> ctx;
    am::future<std::vector<std::byte>> cxx;
    am_rpc_t id = AM_RPC_INVALID;
    bool taken = false;
    am_status_t status = AM_OK;  // of the call, once taken
    std::vector<std::byte> value;
    std::string error;  // the C++ message of a failed call
};

namespace {

using namespace am::capi;
using am::errc;

using bytes = std::vector<std::byte>;
using byte_view = std::span<const std::byte>;

/// In a handler, or in a remote function (also once it has blocked and resumed, when it may
/// run outside the poller's handler frame).
bool in_handler(const am_context* c) noexcept {
    return am::core::in_handler(*c->cxx) || am::detail::oam_current() != nullptr;
}

/// How a C remote function is named in messages: by its symbol, or "C remote function
/// <module>+<offset>" (handler_name).
std::string label(const std::string& name) {
    return name.rfind("C ", 0) == 0 ? name : "remote function " + name;
}

/// A C remote function as the C++ callable am::rpc_register takes. The caller's rank and
/// whether it waits for a result travel as arguments: a C++ remote function learns neither.
struct c_remote {
    std::shared_ptr<am_context> ctx;
    am_rpc_fn_t fn;
    void* user;
    std::string name;

    bytes operator()(int source, bool wanted, byte_view args) const {
        am_rpc_reply reply{ctx.get(), {}, {}, false, false};
        fn(ctx.get(), source, args.empty() ? nullptr : args.data(), args.size(), &reply, user);
        // From here on C++ frames only: the C function has returned.
        if (reply.failed && wanted) {
            // am::rpc sends it back (errc::remote there, named after this callable's type:
            // the caller puts the C function's name back, see c_remote_error).
            throw std::runtime_error(name + ": " + reply.error);
        }
        if (reply.failed) {
            // Nobody waits for this call. An exception would fail the job in C++, but in C
            // it would only become the status of whatever call is polling here: abort, so
            // every rank learns of it (the rank function sees AM_ERR_ABORTED).
            ctx->aborted.store(true);
            ctx->cxx->abort(label(name) + " on rank " + std::to_string(ctx->cxx->rank()) +
                            " (called by rank " + std::to_string(source) +
                            " with am_rpc_call_ff) failed: " + reply.error);
        }
        return std::move(reply.data);
    }
};

using remote_t = am::remote<bytes(int, bool, byte_view)>;
static_assert(std::is_same_v<decltype(am::rpc_register(std::declval<am::context&>(),
                                                       std::declval<c_remote>())),
                             remote_t>);

// What framing adds to the argument and result bytes in their medium messages.
std::size_t framing() {
    std::vector<std::byte> call, result;
    am::serial_writer wc(call), wr(result);
    am::serializer<int>::write(wc, 0);
    am::serializer<bool>::write(wc, false);
    am::serializer<byte_view>::write(wc, byte_view{});
    am::serializer<bytes>::write(wr, bytes{});
    return std::max(call.size(), result.size());
}

std::size_t max_bytes(const am_context* c) {
    static const std::size_t frame = framing();
    const std::size_t medium = c->cxx->max_medium();
    return medium > frame ? medium - frame : 0;
}

void check_size(const char* call, const am_context* c, std::size_t len, const char* what,
                const char* verb) {
    if (len > max_bytes(c)) {
        fail(errc::too_large, call, c,
             std::string(what) + " of " + std::to_string(len) + " bytes " + verb +
                 " am_rpc_max_bytes() = " + std::to_string(max_bytes(c)));
    }
}

// An id must name one of this rank's C remote functions: any other handler index would send
// a call to a handler that does not expect one.
void check_rpc(const char* call, const am_context* c, am_rpc_t id) {
    if (c->is_rpc(id)) return;
    if (id < am::core::library_handlers(*c->cxx)) {
        fail(errc::bad_handler, call, c, am::core::unregistered(*c->cxx, id));
    }
    fail(errc::bad_handler, call, c,
         "remote function " + std::to_string(id) + " is not registered (am_rpc_register)");
}

struct c_call {
    const char* call;
    am_context* ctx;
    int rank;
    am_rpc_t id;
    const void* args;
    std::size_t len;
};

byte_view checked_args(const c_call& c) {
    check_pointer(c.call, c.ctx, c.args, c.len != 0, "argument pointer");
    check_rpc(c.call, c.ctx, c.id);
    check_size(c.call, c.ctx, c.len, "arguments", "exceed");
    return {static_cast<const std::byte*>(c.args), c.len};
}

// am::rpc reports a failed call as "am::rpc: remote function <C++ callable> on rank R (called
// by rank C) threw: <C function name>: <message>"; a C caller wants "remote function <C
// function name> on rank R (called by rank C) failed: <message>". The name is the caller's
// own entry for the id: every rank registered the same functions.
std::string c_remote_error(const am_context* c, am_rpc_t id, std::string what) {
    const std::string name = c->rpc_name(id);
    const std::string_view head = "remote function ", threw = ") threw: ";
    const auto from = what.find(head);
    const auto on = what.find(" on rank ", from);
    const auto by = what.find(threw, on);
    if (name.empty() || from == std::string::npos || on == std::string::npos ||
        by == std::string::npos ||
        what.compare(by + threw.size(), name.size() + 2, name + ": ") != 0) {
        return what;  // not a C function's failure: leave it as it is
    }
    return what.substr(0, from) + label(name) + what.substr(on, by - on) +
           ") failed: " + what.substr(by + threw.size() + name.size() + 2);
}

/// Waits for the future's result and takes it (once): a failed call is kept as the result.
/// What the wait itself throws (abort, a plain handler) propagates and takes nothing.
void take(am_rpc_future* f) {
    if (f->taken) return;
    f->cxx.wait();
    try {
        f->value = f->cxx.get();
        f->status = AM_OK;
    } catch (const am::error& e) {
        f->status = static_cast<am_status_t>(e.code());
        f->error = c_remote_error(f->ctx.get(), f->id, e.what());
    } catch (const std::exception& e) {
        f->status = AM_ERR_REMOTE;
        f->error = e.what();
    }
    f->taken = true;
}

am_status_t answer(am_rpc_reply* r, const char* call, const void* data, std::size_t len,
                   const char* message) noexcept {
    if (r == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(r->ctx, call, [&] {
        if (r->answered) {
            fail(errc::bad_reply, call, r->ctx,
                 std::string("second answer to a call: ") +
                     (r->failed ? "am_rpc_reply_error" : "am_rpc_reply_set") +
                     " was called already (at most one answer per call)");
        }
        if (message != nullptr) {
            r->error = message;
            r->failed = true;
        } else {
            check_pointer(call, r->ctx, data, len != 0, "data pointer");
            check_size(call, r->ctx, len, "a result", "exceeds");
            const auto* p = static_cast<const std::byte*>(data);
            r->data.assign(p, p + len);
        }
        r->answered = true;
    });
}

}  // namespace

extern "C" {

am_status_t am_rpc_register(am_context_t* ctx, am_rpc_fn_t fn, void* user,
                            am_rpc_t* id_out) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    if (id_out != nullptr) *id_out = AM_RPC_INVALID;
    return guarded(ctx, "am_rpc_register", [&] {
        const char* call = "am_rpc_register";
        check_pointer(call, ctx, reinterpret_cast<void*>(fn), true, "function");
        check_pointer(call, ctx, id_out, true, "id pointer");
        if (in_handler(ctx)) fail(errc::bad_context, call, ctx, "called from a handler");
        std::string name = handler_name(reinterpret_cast<void (*)()>(fn), "remote function");
        const remote_t h =
            am::rpc_register(*ctx->cxx, c_remote{ctx->shared_from_this(), fn, user, name});
        ctx->add_rpc(h.index, std::move(name));
        *id_out = h.index;
    });
}

size_t am_rpc_max_bytes(const am_context_t* ctx) noexcept {
    return ctx ? max_bytes(ctx) : 0;
}

am_status_t am_rpc_call(am_context_t* ctx, int rank, am_rpc_t id, const void* args, size_t len,
                        am_rpc_future_t** out) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    if (out != nullptr) *out = nullptr;
    const c_call c{"am_rpc_call", ctx, rank, id, args, len};
    return guarded(ctx, c.call, [&] {
        check_pointer(c.call, ctx, out, true, "future pointer");
        const byte_view a = checked_args(c);
        auto f = std::make_unique<am_rpc_future>();
        f->ctx = ctx->shared_from_this();
        f->id = id;
        f->cxx = am::rpc(*ctx->cxx, rank, remote_t{id}, ctx->cxx->rank(), true, a);
        *out = f.release();
    });
}

am_status_t am_rpc_call_ff(am_context_t* ctx, int rank, am_rpc_t id, const void* args,
                           size_t len) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    const c_call c{"am_rpc_call_ff", ctx, rank, id, args, len};
    return guarded(ctx, c.call, [&] {
        const byte_view a = checked_args(c);
        am::rpc_ff(*ctx->cxx, rank, remote_t{id}, ctx->cxx->rank(), false, a);
    });
}

am_status_t am_rpc_reply_set(am_rpc_reply_t* reply, const void* data, size_t len) noexcept {
    return answer(reply, "am_rpc_reply_set", data, len, nullptr);
}

am_status_t am_rpc_reply_error(am_rpc_reply_t* reply, const char* message) noexcept {
    return answer(reply, "am_rpc_reply_error", nullptr, 0,
                  message != nullptr ? message : "(no message)");
}

am_status_t am_rpc_future_test(am_rpc_future_t* future, int* ready) noexcept {
    if (future == nullptr) return AM_ERR_INVALID_ARGUMENT;
    am_context* ctx = future->ctx.get();
    return guarded(ctx, "am_rpc_future_test", [&] {
        check_pointer("am_rpc_future_test", ctx, ready, true, "ready pointer");
        *ready = future->taken || future->cxx.ready();
        if (*ready == 0 && !in_handler(ctx)) {
            (void)ctx->cxx->poll();
            *ready = future->cxx.ready();
        }
    });
}

am_status_t am_rpc_future_wait(am_rpc_future_t* future) noexcept {
    if (future == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(future->ctx.get(), "am_rpc_future_wait", [&] {
        if (!future->taken) future->cxx.wait();
    });
}

am_status_t am_rpc_future_get(am_rpc_future_t* future, void* buf, size_t cap,
                              size_t* len) noexcept {
    if (len != nullptr) *len = 0;
    if (future == nullptr) return AM_ERR_INVALID_ARGUMENT;
    am_context* ctx = future->ctx.get();
    return guarded(ctx, "am_rpc_future_get", [&] {
        check_pointer("am_rpc_future_get", ctx, buf, cap != 0, "buffer");
        take(future);
        if (future->status != AM_OK) {
            throw am::error(static_cast<errc>(future->status), future->error);
        }
        const std::size_t n = future->value.size();
        if (len != nullptr) *len = n;
        if (n > cap) {
            fail(errc::too_large, "am_rpc_future_get", ctx,
                 "a result of " + std::to_string(n) + " bytes does not fit the buffer of " +
                     std::to_string(cap) + " bytes (kept; ask again with a larger one)");
        }
        if (n != 0) std::memcpy(buf, future->value.data(), n);
    });
}

void am_rpc_future_free(am_rpc_future_t* future) noexcept {
    delete future;
}

}  // extern "C"
