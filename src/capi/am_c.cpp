// SPDX-License-Identifier: MIT
// The C API (include/am/am.h) over the C++ core. Every entry point is noexcept and turns
// exceptions into status codes, so nothing unwinds through C frames; error messages are
// rewritten to name the C call instead of the C++ one.
#include "../util/error.hpp"
#include "capi_common.hpp"

#include <am/core/layer.hpp>

#include <am/am.h>
#include <am/context.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <thread>

// The status codes are the C++ error codes, value for value.
static_assert(AM_OK == static_cast<int>(am::errc::ok));
static_assert(AM_ERR_BAD_RANK == static_cast<int>(am::errc::bad_rank));
static_assert(AM_ERR_BAD_HANDLER == static_cast<int>(am::errc::bad_handler));
static_assert(AM_ERR_TOO_LARGE == static_cast<int>(am::errc::too_large));
static_assert(AM_ERR_BAD_REPLY == static_cast<int>(am::errc::bad_reply));
static_assert(AM_ERR_BAD_CONTEXT == static_cast<int>(am::errc::bad_context));
static_assert(AM_ERR_OUT_OF_SEGMENT == static_cast<int>(am::errc::out_of_segment));
static_assert(AM_ERR_HANDLER_MISMATCH == static_cast<int>(am::errc::handler_mismatch));
static_assert(AM_ERR_ABORTED == static_cast<int>(am::errc::aborted));
static_assert(AM_ERR_SYSTEM == static_cast<int>(am::errc::system));
static_assert(AM_ERR_INVALID_ARGUMENT == static_cast<int>(am::errc::invalid_argument));
static_assert(AM_ERR_NO_MEMORY == static_cast<int>(am::errc::no_memory));
static_assert(AM_ERR_TIMEOUT == static_cast<int>(am::errc::timeout));
static_assert(AM_ERR_COLLECTIVE_MISMATCH == static_cast<int>(am::errc::collective_mismatch));
static_assert(AM_ERR_REMOTE == static_cast<int>(am::errc::remote));
static_assert(AM_ERR_BROKEN_PROMISE == static_cast<int>(am::errc::broken_promise));
static_assert(AM_MAX_ARGS == am::max_args);
static_assert(alignof(am_counter_t) >= std::atomic_ref<std::uint64_t>::required_alignment);

namespace am::capi {

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
        s.replace(at, from.size(), to);
    }
}

// Core messages read "am::context::request: rank 0: ...", "am: rank 0: ..." or "rank 0: job
// aborted: ..."; the C user called, say, am_request_short, so that is the name the message
// must carry, followed by the rank.
std::string c_message(const char* call, const am_context* c, const std::string& what) {
    const std::string rank = "rank " + std::to_string(c->cxx->rank()) + ": ";
    std::string_view rest = what;
    if (rest.rfind("am::", 0) == 0 && rest.find(": ") != std::string_view::npos) {
        rest.remove_prefix(rest.find(": ") + 2);
    } else if (rest.rfind("am: ", 0) == 0) {
        rest.remove_prefix(4);
    } else if (rest.rfind(call, 0) == 0) {
        return what;  // raised by this file, already in the C form
    }
    if (rest.rfind(rank, 0) == 0) rest.remove_prefix(rank.size());
    std::string msg = std::string(call) + ": " + rank + std::string(rest);
    replace_all(msg, " max_medium()", " am_max_medium()");
    replace_all(msg, " barrier()", " am_barrier()");
    replace_all(msg,
                "register it with am::optimistic_handler (or am::rpc_register) to let it block",
                "only remote functions (am_rpc_register) may block");
    return msg;
}

}  // namespace

std::string where(const char* call, const am_context* c) {
    return am::util::where(call, c->cxx->rank());
}

void fail(errc code, const char* call, const am_context* c, const std::string& what) {
    throw am::error(code, where(call, c) + what);
}

std::string& error_slot(const am_context* c) {
    // Only the rank thread and its progress thread use a context: one slot each, no lock.
    auto* m = const_cast<am_context*>(c);
    return m->errors[std::this_thread::get_id() == c->owner ? 0 : 1];
}

am_status_t record(const am_context* c, const char* call, am_status_t st,
                   const std::string& what) noexcept {
    try {
        error_slot(c) = c_message(call, c, what);
    } catch (...) {  // out of memory while reporting: the status still says what happened
    }
    return st;
}

void check_pointer(const char* call, const am_context* c, const void* p, bool needed,
                   const char* what) {
    if (needed && p == nullptr) fail(errc::invalid_argument, call, c, std::string("null ") + what);
}

// The handler's name in the table, compared across ranks at am_barrier and shown in errors
// and statistics: the symbol when the function is exported, else its offset in its module,
// which is the same in every rank of one program despite address-space randomisation.
std::string handler_name(void (*fn)(), const char* what) {
    const std::string generic = std::string("C ") + what;
    Dl_info info{};
    void* addr = reinterpret_cast<void*>(fn);
    if (dladdr(addr, &info) == 0) return generic;
    if (info.dli_sname != nullptr && info.dli_saddr == addr) return info.dli_sname;
    if (info.dli_fname == nullptr) return generic;
    const char* slash = std::strrchr(info.dli_fname, '/');
    char offset[24];
    std::snprintf(
        offset, sizeof offset, "+0x%" PRIxPTR,
        reinterpret_cast<std::uintptr_t>(addr) - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
    return generic + " " + (slash ? slash + 1 : info.dli_fname) + offset;
}

}  // namespace am::capi

namespace {

using namespace am::capi;
using am::category;
using am::errc;

// ----------------------------------------------------------------------------------- errors

void check_nargs(const char* call, const am_context* c, unsigned nargs) {
    if (nargs > am::max_args) {
        fail(errc::too_large, call, c,
             std::to_string(nargs) + " arguments exceed the limit of " +
                 std::to_string(am::max_args));
    }
}

// ------------------------------------------------------------------------------- handlers

using any_fn = void (*)();

/// What the core's handler table owns for one C handler.
struct c_handler {
    std::shared_ptr<am_context> ctx;
    any_fn fn;  // an am_short_fn_t, am_medium_fn_t or am_long_fn_t, by category
    void* user;
    unsigned nargs;
};

void invoke_short(void* obj, am::token& t, const std::uint64_t* args, std::byte*, std::size_t) {
    auto* h = static_cast<c_handler*>(obj);
    am_token tok{&t, h->ctx.get()};
    reinterpret_cast<am_short_fn_t>(h->fn)(&tok, args, h->nargs, h->user);
}

void invoke_medium(void* obj, am::token& t, const std::uint64_t* args, std::byte* payload,
                   std::size_t len) {
    auto* h = static_cast<c_handler*>(obj);
    am_token tok{&t, h->ctx.get()};
    reinterpret_cast<am_medium_fn_t>(h->fn)(&tok, payload, len, args, h->nargs, h->user);
}

void invoke_long(void* obj, am::token& t, const std::uint64_t* args, std::byte* payload,
                 std::size_t len) {
    auto* h = static_cast<c_handler*>(obj);
    am_token tok{&t, h->ctx.get()};
    reinterpret_cast<am_long_fn_t>(h->fn)(&tok, payload, len, args, h->nargs, h->user);
}

void destroy_handler(void* obj) {
    delete static_cast<c_handler*>(obj);
}

am_status_t register_c(am_context* c, const char* call, category kind, any_fn fn, unsigned nargs,
                       void* user, am_handler_t* out) noexcept {
    if (c == nullptr) return AM_ERR_INVALID_ARGUMENT;
    if (out != nullptr) *out = AM_HANDLER_INVALID;
    return guarded(c, call, [&] {
        check_pointer(call, c, reinterpret_cast<void*>(fn), true, "handler function");
        check_pointer(call, c, out, true, "handler id pointer");
        check_nargs(call, c, nargs);
        if (am::core::in_handler(*c->cxx))
            fail(errc::bad_context, call, c, "called from a handler");
        static constexpr const char* kinds[] = {"short handler", "medium handler", "long handler"};
        const std::string name = handler_name(fn, kinds[static_cast<int>(kind)]);
        const am::detail::invoke_fn invoke = kind == category::short_am ? &invoke_short
                                             : kind == category::medium ? &invoke_medium
                                                                        : &invoke_long;
        // Owned by the handler table from here on (it calls destroy_handler, also on failure).
        auto* h = new c_handler{c->shared_from_this(), fn, user, nargs};
        *out = am::core::register_handler(
            *c->cxx, {kind, static_cast<std::uint8_t>(nargs), invoke, h, &destroy_handler, name});
    });
}

// --------------------------------------------------------------------------------- sending

/// One send or reply from the C API, before validation.
struct c_send {
    const char* call;
    am_context* ctx;
    am::token* reply_to;  // null for a request
    int dest;
    category kind;
    am_handler_t handler;
    const std::uint64_t* args;
    unsigned nargs;
    const void* payload;
    std::size_t len;
    std::size_t offset;
};

// The core accepts every sealed index, the library's own handlers (rma, typed, ...) included:
// they are sent through the same calls. A C program knows handlers only by the indices its
// registrations returned, which start after the library's, so a smaller one is an error.
void check_program_handler(const char* call, const am_context* c, am_handler_t h) {
    if (h < am::core::library_handlers(*c->cxx)) {
        fail(errc::bad_handler, call, c, am::core::unregistered(*c->cxx, h));
    }
}

am_status_t send_c(const c_send& s) noexcept {
    if (s.ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(s.ctx, s.call, [&] {
        check_nargs(s.call, s.ctx, s.nargs);
        check_pointer(s.call, s.ctx, s.args, s.nargs != 0, "argument pointer");
        check_pointer(s.call, s.ctx, s.payload, s.len != 0, "payload pointer");
        check_program_handler(s.call, s.ctx, s.handler);
        static constexpr std::uint64_t no_args[1] = {0};  // memcpy wants a pointer even for 0
        const am::detail::send_desc d{
            s.reply_to ? s.reply_to->source() : s.dest,
            s.reply_to ? am::detail::lane::reply : am::detail::lane::request,
            s.kind,
            static_cast<std::uint8_t>(s.nargs),
            s.handler,
            s.args ? s.args : no_args,
            static_cast<const std::byte*>(s.payload),
            s.len,
            s.offset};
        if (s.reply_to != nullptr) {
            am::detail::core_reply(*s.reply_to, d);
        } else {
            am::core::send(*s.ctx->cxx, d);
        }
    });
}

c_send request(const char* call, am_context* c, int dest, category kind, am_handler_t h) {
    return c_send{call, c, nullptr, dest, kind, h, nullptr, 0, nullptr, 0, 0};
}

c_send reply(const char* call, am_token* t, category kind, am_handler_t h) {
    return c_send{
        call, t ? t->ctx : nullptr, t ? t->cxx : nullptr, 0, kind, h, nullptr, 0, nullptr, 0, 0};
}

// ---------------------------------------------------------------------------------- am_run

const char* const status_strings[] = {
    "AM_OK: success",
    "AM_ERR_BAD_RANK: destination rank out of range",
    "AM_ERR_BAD_HANDLER: handler not registered, not enabled by am_barrier, or of another "
    "category or argument count",
    "AM_ERR_TOO_LARGE: argument count or payload over a limit",
    "AM_ERR_BAD_REPLY: second reply, or reply outside a request handler",
    "AM_ERR_BAD_CONTEXT: call not allowed here (request from a reply handler, wait or barrier "
    "in a handler)",
    "AM_ERR_OUT_OF_SEGMENT: long payload outside the target's segment",
    "AM_ERR_HANDLER_MISMATCH: ranks registered different handler tables",
    "AM_ERR_ABORTED: the job is going down (a rank failed or called am_abort)",
    "AM_ERR_SYSTEM: an operating-system call failed or memory ran out",
    "AM_ERR_INVALID_ARGUMENT: invalid argument",
    "AM_ERR_NO_MEMORY: the segment has no free block of the requested size",
    "AM_ERR_TIMEOUT: an epoch did not end within AM_EPOCH_TIMEOUT",
    "AM_ERR_COLLECTIVE_MISMATCH: ranks called different collectives at the same point",
    "AM_ERR_REMOTE: a remote function failed",
    "AM_ERR_BROKEN_PROMISE: a future's producer went away without a result",
};

void run_c_rank(am::context& ctx, am_rank_fn_t rank_fn, void* arg) {
    const auto c = std::make_shared<am_context>(ctx);
    rank_fn(c.get(), arg);
    // A C rank reports failure by am_abort and returning; turn that into the failure of this
    // rank here, in C++ frames only. With one rank nothing else would notice the abort.
    if (c->aborted.load() || am::core::job_failed(ctx)) {
        throw am::error(errc::aborted, "am_run: rank " + std::to_string(ctx.rank()) +
                                           ": job aborted: " + am::core::failure_reason(ctx));
    }
}

}  // namespace

// =============================================================================== the C API

extern "C" {

int am_run(int argc, char** argv, am_rank_fn_t rank_fn, void* arg) noexcept {
    if (rank_fn == nullptr) {
        std::fputs("am_run: rank_fn is NULL\n", stderr);
        return 1;
    }
    try {
        return am::run(argc, argv,
                       [rank_fn, arg](am::context& ctx) { run_c_rank(ctx, rank_fn, arg); });
    } catch (const std::exception& e) {  // e.g. a bad AM_* variable, read before any rank ran
        std::fprintf(stderr, "am_run: %s\n", e.what());
    } catch (...) {
        std::fputs("am_run: unknown exception\n", stderr);
    }
    return 1;
}

am_status_t am_abort(am_context_t* ctx, const char* reason) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    ctx->aborted.store(true);
    const char* why = reason != nullptr ? reason : "(no reason given)";
    return guarded(ctx, "am_abort", [&] {
        try {
            ctx->cxx->abort(why);  // marks the job failed, then throws errc::aborted
        } catch (const am::error& e) {
            if (e.code() != errc::aborted) throw;
        }
        fail(errc::aborted, "am_abort", ctx, std::string("aborted the job: ") + why);
    });
}

int am_rank(const am_context_t* ctx) noexcept {
    return ctx ? ctx->cxx->rank() : -1;
}

int am_size(const am_context_t* ctx) noexcept {
    return ctx ? ctx->cxx->size() : 0;
}

size_t am_max_medium(const am_context_t* ctx) noexcept {
    return ctx ? ctx->cxx->max_medium() : 0;
}

void* am_segment(const am_context_t* ctx, size_t* bytes) noexcept {
    const std::span<std::byte> seg = ctx ? ctx->cxx->segment() : std::span<std::byte>{};
    if (bytes != nullptr) *bytes = seg.size();
    return seg.data();
}

const char* am_last_error(const am_context_t* ctx) noexcept {
    return ctx ? error_slot(ctx).c_str() : "am_last_error: null context";
}

const char* am_status_string(am_status_t status) noexcept {
    const auto i = static_cast<std::size_t>(status);
    return i < std::size(status_strings) ? status_strings[i] : "unknown am_status_t value";
}

am_status_t am_register_short(am_context_t* ctx, am_short_fn_t fn, unsigned nargs, void* user,
                              am_handler_t* out) noexcept {
    return register_c(ctx, "am_register_short", category::short_am, reinterpret_cast<any_fn>(fn),
                      nargs, user, out);
}

am_status_t am_register_medium(am_context_t* ctx, am_medium_fn_t fn, unsigned nargs, void* user,
                               am_handler_t* out) noexcept {
    return register_c(ctx, "am_register_medium", category::medium, reinterpret_cast<any_fn>(fn),
                      nargs, user, out);
}

am_status_t am_register_long(am_context_t* ctx, am_long_fn_t fn, unsigned nargs, void* user,
                             am_handler_t* out) noexcept {
    return register_c(ctx, "am_register_long", category::long_am, reinterpret_cast<any_fn>(fn),
                      nargs, user, out);
}

am_status_t am_barrier(am_context_t* ctx) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(ctx, "am_barrier", [&] { ctx->cxx->barrier(); });
}

am_status_t am_trace_start(am_context_t* ctx, const char* path) noexcept {
    if (ctx == nullptr || path == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(ctx, "am_trace_start", [&] { ctx->cxx->trace_start(path); });
}

am_status_t am_trace_stop(am_context_t* ctx) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(ctx, "am_trace_stop", [&] { ctx->cxx->trace_stop(); });
}

am_status_t am_request_short(am_context_t* ctx, int dest, am_handler_t h, const uint64_t* args,
                             unsigned nargs) noexcept {
    c_send s = request("am_request_short", ctx, dest, category::short_am, h);
    s.args = args, s.nargs = nargs;
    return send_c(s);
}

am_status_t am_request_medium(am_context_t* ctx, int dest, am_handler_t h, const void* payload,
                              size_t len, const uint64_t* args, unsigned nargs) noexcept {
    c_send s = request("am_request_medium", ctx, dest, category::medium, h);
    s.args = args, s.nargs = nargs, s.payload = payload, s.len = len;
    return send_c(s);
}

am_status_t am_request_long(am_context_t* ctx, int dest, am_handler_t h, const void* payload,
                            size_t len, size_t dest_offset, const uint64_t* args,
                            unsigned nargs) noexcept {
    c_send s = request("am_request_long", ctx, dest, category::long_am, h);
    s.args = args, s.nargs = nargs, s.payload = payload, s.len = len, s.offset = dest_offset;
    return send_c(s);
}

am_status_t am_reply_short(am_token_t* token, am_handler_t h, const uint64_t* args,
                           unsigned nargs) noexcept {
    c_send s = reply("am_reply_short", token, category::short_am, h);
    s.args = args, s.nargs = nargs;
    return send_c(s);
}

am_status_t am_reply_medium(am_token_t* token, am_handler_t h, const void* payload, size_t len,
                            const uint64_t* args, unsigned nargs) noexcept {
    c_send s = reply("am_reply_medium", token, category::medium, h);
    s.args = args, s.nargs = nargs, s.payload = payload, s.len = len;
    return send_c(s);
}

am_status_t am_reply_long(am_token_t* token, am_handler_t h, const void* payload, size_t len,
                          size_t dest_offset, const uint64_t* args, unsigned nargs) noexcept {
    c_send s = reply("am_reply_long", token, category::long_am, h);
    s.args = args, s.nargs = nargs, s.payload = payload, s.len = len, s.offset = dest_offset;
    return send_c(s);
}

int am_token_source(const am_token_t* token) noexcept {
    return token ? token->cxx->source() : -1;
}

int am_token_is_request(const am_token_t* token) noexcept {
    return token && token->cxx->is_request() ? 1 : 0;
}

am_context_t* am_token_context(const am_token_t* token) noexcept {
    return token ? token->ctx : nullptr;
}

am_status_t am_poll(am_context_t* ctx, size_t* handled) noexcept {
    if (handled != nullptr) *handled = 0;
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(ctx, "am_poll", [&] {
        const std::size_t n = ctx->cxx->poll();
        if (handled != nullptr) *handled = n;
    });
}

void am_counter_add(am_counter_t* counter, uint64_t n) noexcept {
    std::atomic_ref<std::uint64_t>(counter->_value).fetch_add(n, std::memory_order_release);
}

uint64_t am_counter_value(const am_counter_t* counter) noexcept {
    // atomic_ref needs a mutable object; a load does not write it.
    auto& v = const_cast<std::uint64_t&>(counter->_value);
    return std::atomic_ref<std::uint64_t>(v).load(std::memory_order_acquire);
}

void am_counter_reset(am_counter_t* counter) noexcept {
    std::atomic_ref<std::uint64_t>(counter->_value).store(0, std::memory_order_relaxed);
}

am_status_t am_counter_wait(am_context_t* ctx, const am_counter_t* counter, uint64_t n) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(ctx, "am_counter_wait", [&] {
        check_pointer("am_counter_wait", ctx, counter, true, "counter");
        ctx->cxx->wait([&] { return am_counter_value(counter) >= n; });
    });
}

}  // extern "C"
