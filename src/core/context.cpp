// SPDX-License-Identifier: MIT
// The public `am::context` / `am::token` entry points: thin forwarding to `context_impl`.
#include "context_impl.hpp"

#include "../util/error.hpp"

#include <am/context.hpp>

namespace am {

namespace detail {

void core_send(context_impl* c, const send_desc& d) {
    c->send(d, false);
}

void core_reply(token& t, const send_desc& d) {
    const char* call = "am::token::reply";
    if (!t.is_request()) {
        util::fail(errc::bad_reply, call, t._ctx->rank(),
                   "called in a reply handler; only request handlers may reply");
    }
    if (t._detached) {
        util::fail(errc::bad_reply, call, t._ctx->rank(),
                   "the optimistic handler of the request from rank " + std::to_string(t.source()) +
                       " blocked, so it can no longer reply; send a request back (or use "
                       "am::rpc, whose result travels back by itself)");
    }
    if (t._replied) {
        util::fail(errc::bad_reply, call, t._ctx->rank(),
                   "second reply to the request from rank " + std::to_string(t.source()) +
                       " (at most one reply per request)");
    }
    t._ctx->send(d, true);
    t._replied = true;
    t._ctx->count_reply();
}

std::uint32_t core_register(context_impl* c, const handler_desc& h) {
    try {
        c->check_thread("am::context::handler");
    } catch (...) {
        if (h.destroy != nullptr) h.destroy(h.obj);  // owned by the table from the call on
        throw;
    }
    return c->add_handler(h);
}

void core_idle(context_impl* c, unsigned& backoff_state) {
    c->idle(backoff_state);
}

void core_check_wait(context_impl* c, const char* call) {
    c->check_thread(call);
    if (c->in_handler()) {
        if (t_fiber_hook != nullptr) {
            util::fail(errc::bad_context, call, c->rank(),
                       "called from an optimistic handler; those may block on am::mutex, "
                       "am::condition_variable, am::future and context::wait, but not here");
        }
        util::fail(errc::bad_context, call, c->rank(),
                   "called from a handler; handlers must not block");
    }
}

bool core_wait_check(context_impl* c, const char* call) {
    if (t_fiber_hook != nullptr && c->in_handler()) return true;
    core_check_wait(c, call);
    return false;
}

void core_fiber_wait(context_impl*, const std::function<bool()>& pred) {
    const fiber_hook* h = t_fiber_hook;
    while (!pred()) {
        h->yield(h->arg);
        h = t_fiber_hook;  // the handler may resume on another thread of the rank
    }
}

}  // namespace detail

context& token::ctx() const noexcept {
    return _ctx->front();
}

int context::rank() const noexcept {
    return _impl->rank();
}
int context::size() const noexcept {
    return _impl->size();
}
std::size_t context::max_medium() const noexcept {
    return _impl->max_medium();
}
std::span<std::byte> context::segment() const noexcept {
    return _impl->own_segment();
}
void context::barrier() {
    _impl->check_thread("am::context::barrier");
    _impl->barrier();
}

void context::quiesce() {
    detail::core_check_wait(_impl, "am::context::quiesce");
    _impl->quiesce();
}
am::stats context::stats() const {
    return _impl->snapshot();
}
void context::trace_start(std::string_view path) {
    _impl->trace_start(path, "am::context::trace_start");
}
void context::trace_stop() {
    _impl->trace_stop("am::context::trace_stop");
}

void context::abort(std::string_view reason) {
    const std::string why =
        "rank " + std::to_string(rank()) + " called abort: " + std::string(reason);
    _impl->transport().fail_job(why);
    throw error(errc::aborted, "am::context::abort: " + why);
}

}  // namespace am
