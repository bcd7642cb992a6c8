// SPDX-License-Identifier: MIT
// What the files of the C API share: the C views of a context and a token, and the way every
// entry point turns exceptions into status codes with a message for am_last_error.
#pragma once

#include <am/am.h>
#include <am/context.hpp>
#include <am/error.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

/// The C view of one rank's context. Shared with the C handlers registered on it, because
/// handlers still run during the end-of-job quiescence, after the rank function returned.
struct am_context : std::enable_shared_from_this<am_context> {
    explicit am_context(am::context& c) : cxx(&c), owner(std::this_thread::get_id()) {}

    /// True when `id` was returned by am_rpc_register on this context.
    bool is_rpc(std::uint32_t id) const {
        const std::lock_guard lk(rpc_lock);
        return find_rpc(id) != rpcs.end();
    }
    /// The name of remote function `id` ("" when there is none).
    std::string rpc_name(std::uint32_t id) const {
        const std::lock_guard lk(rpc_lock);
        const auto it = find_rpc(id);
        return it != rpcs.end() ? it->second : std::string();
    }
    void add_rpc(std::uint32_t id, std::string name) {
        const std::lock_guard lk(rpc_lock);
        rpcs.emplace(std::upper_bound(rpcs.begin(), rpcs.end(), std::pair(id, std::string())), id,
                     std::move(name));
    }

    am::context* cxx;
    std::thread::id owner;  // the rank's thread; any other one is its progress thread
    std::string errors[2];  // last error message: [0] rank thread, [1] progress thread
    std::atomic<bool> aborted{false};

  private:
    // Registered on the rank thread, read by calls from any thread polling the rank (a
    // remote function resumed on the progress thread): a lock, held for a lookup.
    using rpc_entry = std::pair<std::uint32_t, std::string>;  // handler index, name
    std::vector<rpc_entry>::const_iterator find_rpc(std::uint32_t id) const {
        const auto it =
            std::lower_bound(rpcs.begin(), rpcs.end(), id,
                             [](const rpc_entry& e, std::uint32_t key) { return e.first < key; });
        return it != rpcs.end() && it->first == id ? it : rpcs.end();
    }

    mutable std::mutex rpc_lock;
    std::vector<rpc_entry> rpcs;  // the remote functions, by handler index
};

/// Lives on the stack of the handler trampoline for the duration of one handler call.
struct am_token {
    am::token* cxx;
    am_context* ctx;
};

namespace am::capi {

/// "call: rank N: ".
std::string where(const char* call, const am_context* c);

/// Throws am::error(`code`) with the text "call: rank N: what".
[[noreturn]] void fail(errc code, const char* call, const am_context* c, const std::string& what);

/// Keeps "call: rank N: ..." (rewritten from a C++ message `what`) as the calling thread's
/// last error on `c`; returns `st`.
am_status_t record(const am_context* c, const char* call, am_status_t st,
                   const std::string& what) noexcept;

/// The calling thread's last-error slot of `c`.
std::string& error_slot(const am_context* c);

/// errc::invalid_argument "null <what>" when `needed` and `p` is null.
void check_pointer(const char* call, const am_context* c, const void* p, bool needed,
                   const char* what);

/// The name of C function `fn` as the handler table shows it: its symbol, else "C <what>"
/// ("short handler", "remote function") with its module and offset, the same on every rank.
std::string handler_name(void (*fn)(), const char* what);

/// Runs `f`, mapping every exception to a status and recording its message on `c`.
template <class F>
am_status_t guarded(const am_context* c, const char* call, F&& f) noexcept {
    try {
        f();
        return AM_OK;
    } catch (const am::error& e) {
        return record(c, call, static_cast<am_status_t>(e.code()), e.what());
    } catch (const std::bad_alloc&) {
        return record(c, call, AM_ERR_SYSTEM, "out of memory");
    } catch (const std::exception& e) {
        return record(c, call, AM_ERR_SYSTEM, e.what());
    } catch (...) {
        return record(c, call, AM_ERR_SYSTEM, "unknown exception");
    }
}

}  // namespace am::capi
