// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/context.hpp>, not part of the API: the core's entry points that the
/// inline sends, polls and waits of `am::context` and `am::token` call (src/core).
#pragma once

#include <am/handler.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace am {

class context;
class counter;
class token;

namespace detail {

class context_impl;

/// Lane of a message: requests and replies travel separately, each with its own credits.
enum class lane : std::uint8_t { request = 0, reply = 1 };

/// One outgoing message, as the typed front end hands it to the core.
struct send_desc {
    int dest;
    lane ln;
    category kind;
    std::uint8_t nargs;
    std::uint32_t handler;
    const std::uint64_t* args;
    const std::byte* payload;
    std::size_t len;
    std::size_t offset;  ///< long: byte offset in the target's segment
};

struct handler_desc {
    category kind;
    std::uint8_t nargs;
    invoke_fn fn;
    void* obj;  ///< owned by the table when `destroy` is set
    void (*destroy)(void*);
    std::string_view name;
    /// Distinguishes callables whose readable names coincide (two lambdas with the same
    /// signature in one function): the mangled type name. Null for named functions.
    const char* id = nullptr;
};

// The core, implemented in src/core. Not part of the stable API.
void core_send(context_impl* c, const send_desc& d);
void core_reply(token& t, const send_desc& d);
/// Short messages, specialised by argument count (instantiated in the library for 0..16).
template <unsigned N>
void core_request_short(context_impl* c, int dest, std::uint32_t handler,
                        const std::uint64_t* args);
template <unsigned N>
void core_reply_short(token& t, std::uint32_t handler, const std::uint64_t* args);

#define AM_DETAIL_SHORT_EXTERN(N)                                                 \
    extern template void core_request_short<N>(context_impl*, int, std::uint32_t, \
                                               const std::uint64_t*);             \
    extern template void core_reply_short<N>(token&, std::uint32_t, const std::uint64_t*);
AM_DETAIL_SHORT_EXTERN(0)
AM_DETAIL_SHORT_EXTERN(1)
AM_DETAIL_SHORT_EXTERN(2)
AM_DETAIL_SHORT_EXTERN(3)
AM_DETAIL_SHORT_EXTERN(4)
AM_DETAIL_SHORT_EXTERN(5)
AM_DETAIL_SHORT_EXTERN(6)
AM_DETAIL_SHORT_EXTERN(7)
AM_DETAIL_SHORT_EXTERN(8)
AM_DETAIL_SHORT_EXTERN(9)
AM_DETAIL_SHORT_EXTERN(10)
AM_DETAIL_SHORT_EXTERN(11)
AM_DETAIL_SHORT_EXTERN(12)
AM_DETAIL_SHORT_EXTERN(13)
AM_DETAIL_SHORT_EXTERN(14)
AM_DETAIL_SHORT_EXTERN(15)
AM_DETAIL_SHORT_EXTERN(16)
#undef AM_DETAIL_SHORT_EXTERN
std::uint32_t core_register(context_impl* c, const handler_desc& h);
std::size_t core_poll(context_impl* c);
void core_idle(context_impl* c, unsigned& backoff_state);
void core_check_wait(context_impl* c, const char* call);
/// As core_check_wait, but true (and no error) in an optimistic handler, which then waits
/// with core_fiber_wait: it yields to its rank's poller until `pred()` holds.
bool core_wait_check(context_impl* c, const char* call);
void core_fiber_wait(context_impl* c, const std::function<bool()>& pred);

struct access;
struct token_access;
/// Tag of the counters the library uses internally: they take no remote-flag position.
struct unregistered_t {};

// The counter table of the Split-C layer (src/rma): a counter's position as a remote flag.
std::uint32_t counter_attach(context& c, counter* k) noexcept;
void counter_detach(context& c, std::uint32_t id) noexcept;

template <class F>
void destroy_callable(void* p) {
    delete static_cast<F*>(p);
}

template <class H>
send_desc make_desc(int dest, lane ln, H h, const std::uint64_t* slots) {
    return send_desc{dest,    ln, H::kind, static_cast<std::uint8_t>(H::nargs), h.index, slots,
                     nullptr, 0,  0};
}

}  // namespace detail

}  // namespace am
