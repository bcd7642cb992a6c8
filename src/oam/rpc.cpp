// SPDX-License-Identifier: MIT
// RPC on optimistic handlers: remote functions by process-wide slot, the table of calls in
// flight (an id is its index and a generation), and the three return messages.
#include "oam_sched.hpp"

#include "../util/error.hpp"
#include "../util/maybe_lock.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

namespace am::detail {

// The function's name out of the compiler's text of value_name<f>() ("... [with auto V = f;
// ...]") or of type_name<fn_object_r<f, ...>>(); a registered callable's type otherwise.
std::string_view oam_readable_view(std::string_view pretty) noexcept {
    if (const auto at = pretty.find("fn_object_r<"); at != std::string_view::npos) {
        const auto rest = pretty.substr(at + 12);
        return rest.substr(0, rest.find_first_of(",>"));
    }
    for (const char* key : {"V = ", "T = "}) {
        if (const auto at = pretty.find(key); at != std::string_view::npos) {
            const auto rest = pretty.substr(at + 4);
            return rest.substr(0, rest.find_first_of(";]"));
        }
    }
    return pretty;
}

std::string oam_readable(std::string_view pretty) {
    return std::string(oam_readable_view(pretty));
}

std::uint32_t rpc_new_slot() noexcept {
    static std::atomic<std::uint32_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed);
}

void oam_sched::rpc_set_index(std::uint32_t slot, std::uint32_t index, std::string_view name) {
    if (slot >= max_slots) {
        fail(errc::too_large, "am::rpc_register",
             "remote function " + oam_readable(name) + " would be number " +
                 std::to_string(slot + 1) + " of this program; at most " +
                 std::to_string(max_slots) + " are supported");
    }
    _rpc_index[slot].store(index + 1, std::memory_order_release);
}

std::uint32_t oam_sched::rpc_index(std::uint32_t slot, std::string_view name) {
    const std::uint32_t v = slot < max_slots ? _rpc_index[slot].load(std::memory_order_acquire) : 0;
    if (v == 0) [[unlikely]] {
        fail(errc::bad_handler, "am::rpc",
             "remote function " + oam_readable(name) +
                 " is not registered on this rank: call am::rpc_register<" + oam_readable(name) +
                 ">(ctx) on every rank, then barrier()");
    }
    return v - 1;
}

std::uint64_t oam_sched::rpc_begin(const rpc_delivery& d) {
    util::maybe_lock g(_m, _locking);
    std::uint32_t i;
    if (_free_calls.empty()) {
        i = static_cast<std::uint32_t>(_calls.size());
        _calls.emplace_back();
    } else {
        i = _free_calls.back();
        _free_calls.pop_back();
    }
    call_entry& c = _calls[i];
    c.d = d;
    c.busy = true;
    ++c.gen;
    d.state->ref();
    return (std::uint64_t{c.gen} << 32) | i;
}

void oam_sched::rpc_cancel(std::uint64_t id) noexcept {
    future_base* st = nullptr;
    {
        util::maybe_lock g(_m, _locking);
        const auto i = static_cast<std::uint32_t>(id);
        if (i < _calls.size() && _calls[i].busy) {
            st = _calls[i].d.state;
            _calls[i].busy = false;
            _free_calls.push_back(i);
        }
    }
    if (st != nullptr) st->unref();
}

rpc_delivery oam_sched::finish_call(int source, std::uint64_t id, const char* what) {
    util::maybe_lock g(_m, _locking);
    const auto i = static_cast<std::uint32_t>(id);
    const auto gen = static_cast<std::uint32_t>(id >> 32);
    if (i >= _calls.size() || !_calls[i].busy || _calls[i].gen != gen) {
        fail(errc::invalid_argument, "am::rpc (result)",
             std::string("a ") + what + " from rank " + std::to_string(source) + " names call " +
                 std::to_string(id) + ", which is not in flight here");
    }
    _calls[i].busy = false;
    _free_calls.push_back(i);
    return _calls[i].d;
}

void oam_sched::on_return_slot(int source, std::uint64_t id, std::uint64_t value) {
    const rpc_delivery d = finish_call(source, id, "result");
    d.from_slot(d.state, value);
    d.state->unref();
}

void oam_sched::on_return_bytes(int source, std::uint64_t id, std::span<const std::byte> b,
                                std::uint64_t stash) {
    std::vector<std::byte> whole;
    if (stash != 0) {
        whole = take_stash(source, stash);
        b = whole;
    }
    const rpc_delivery d = finish_call(source, id, "result");
    if (d.from_bytes != nullptr) {
        d.from_bytes(d.state, b);
    } else {
        (void)d.state->set_exception(std::make_exception_ptr(
            error(errc::invalid_argument, "am::rpc: rank " + std::to_string(source) +
                                              " sent a result of another shape than expected")));
    }
    d.state->unref();
}

void oam_sched::on_return_error(int source, std::uint64_t id, std::span<const std::byte> text) {
    const rpc_delivery d = finish_call(source, id, "failure");
    (void)d.state->set_exception(std::make_exception_ptr(
        error(errc::remote, std::string(reinterpret_cast<const char*>(text.data()), text.size()))));
    d.state->unref();
}

// ------------------------------------------------------------------ large arguments, results

std::uint64_t oam_sched::send_stash(int dest, std::span<const std::byte> b, const char* call,
                                    std::string_view name, const char* what) {
    if (b.size() > _max_payload) {
        fail(errc::too_large, call,
             std::string("the ") + what + " of " + oam_readable(name) + " take " +
                 std::to_string(b.size()) + " bytes, more than the payload limit of " +
                 std::to_string(_max_payload) + " (AM_MAX_PAYLOAD); nothing was sent");
    }
    std::uint64_t stash = 0;
    {
        util::maybe_lock g(_m, _locking);
        stash = _next_stash++;
    }
    const std::size_t chunk = _ctx.max_medium();
    for (std::size_t at = 0; at < b.size(); at += chunk) {
        const std::size_t n = std::min(chunk, b.size() - at);
        _ctx.request(dest, part, b.subspan(at, n), stash, std::uint64_t{b.size()},
                     std::uint64_t{at});
    }
    return stash;
}

void oam_sched::on_part(int source, std::span<const std::byte> b, std::uint64_t stash,
                        std::uint64_t total, std::uint64_t offset) {
    util::maybe_lock g(_m, _locking);
    stash_entry& e = _stash[{source, stash}];
    if (e.bytes.size() != total) {
        try {
            e.bytes.resize(static_cast<std::size_t>(total));
        } catch (const std::bad_alloc&) {
            _stash.erase({source, stash});
            fail(errc::too_large, "am::rpc",
                 "no memory for " + std::to_string(total) + " bytes of a call from rank " +
                     std::to_string(source));
        }
    }
    if (offset > total || b.size() > total - offset) {
        fail(errc::invalid_argument, "am::rpc", "a part lies outside its call's bytes");
    }
    std::memcpy(e.bytes.data() + offset, b.data(), b.size());
    e.received += b.size();
}

std::vector<std::byte> oam_sched::take_stash(int source, std::uint64_t stash) {
    util::maybe_lock g(_m, _locking);
    const auto it = _stash.find({source, stash});
    if (it == _stash.end() || it->second.received != it->second.bytes.size()) {
        fail(errc::invalid_argument, "am::rpc",
             "a large call or result from rank " + std::to_string(source) +
                 " arrived before its parts");
    }
    std::vector<std::byte> bytes = std::move(it->second.bytes);
    _stash.erase(it);
    return bytes;
}

std::uint64_t rpc_stash(context& ctx, int rank, std::span<const std::byte> b,
                        std::string_view name) {
    return oam_layer_of(ctx, "am::rpc").send_stash(rank, b, "am::rpc", name, "arguments");
}

std::vector<std::byte> rpc_take_stash(oam_sched* s, int source, std::uint64_t key) {
    return s->take_stash(source, key);
}

void rpc_set_index(oam_sched* s, std::uint32_t slot, std::uint32_t index, std::string_view name) {
    s->rpc_set_index(slot, index, name);
}
std::uint32_t rpc_index(oam_sched* s, std::uint32_t slot, std::string_view name) {
    return s->rpc_index(slot, name);
}
std::uint64_t rpc_begin(oam_sched* s, const rpc_delivery& d) {
    return s->rpc_begin(d);
}
void rpc_cancel(oam_sched* s, std::uint64_t id) noexcept {
    s->rpc_cancel(id);
}

void rpc_return_slot(oam_sched* s, int caller, std::uint64_t id, std::uint64_t value) {
    s->ctx().request(caller, s->ret_slot, id, value);
}

namespace {

// A failure's text travels in one medium message, at most this long: a chain of nested calls
// adds a line per level (10 000 levels made 650 KB), and a reader wants its two ends.
constexpr std::size_t rpc_error_bytes = 8192;

constexpr std::string_view trim_open = " [... ";
constexpr std::string_view trim_close = " bytes of nested failures left out ...] ";

// `text` cut to `limit` bytes in the middle: its start (the outermost call) and its end (the
// innermost cause, which nested failures append last) are kept. A text cut at an inner level
// carries its marker; the marker is taken out and its count added to this cut's, so the count
// is the bytes left out at every level.
std::string trim_middle(std::string text, std::size_t limit) {
    if (text.size() <= limit) return text;
    if (limit < 256) {  // no room for both ends and the marker
        text.resize(limit);
        return text;
    }
    std::uint64_t before = 0;
    if (const auto at = text.find(trim_open); at != std::string::npos) {
        const auto digits = at + trim_open.size();
        const auto close = text.find(trim_close, digits);
        if (close != std::string::npos && close > digits &&
            text.find_first_not_of("0123456789", digits) == close) {
            before = std::stoull(text.substr(digits, close - digits));
            text.erase(at, close + trim_close.size() - at);
        }
    }
    const std::size_t head = limit / 4;
    const std::size_t room = limit - head - trim_open.size() - trim_close.size() - 20;
    const std::size_t tail = std::min(room, text.size() - head);
    const std::uint64_t cut = before + (text.size() - head - tail);
    return text.substr(0, head) + std::string(trim_open) + std::to_string(cut) +
           std::string(trim_close) + text.substr(text.size() - tail);
}

void send_error_text(oam_sched* s, int caller, std::uint64_t id, std::string text) {
    context& ctx = s->ctx();
    text = trim_middle(std::move(text), std::min(ctx.max_medium(), rpc_error_bytes));
    ctx.request(caller, s->ret_error, std::as_bytes(std::span<const char>(text)), id);
}

std::string call_site(const context& ctx, std::string_view name, int caller) {
    return "am::rpc: remote function " + oam_readable(name) + " on rank " +
           std::to_string(ctx.rank()) + " (called by rank " + std::to_string(caller) + ")";
}

}  // namespace

void rpc_return_bytes(oam_sched* s, int caller, std::uint64_t id, std::string_view name,
                      std::span<const std::byte> b) {
    context& ctx = s->ctx();
    if (b.size() <= ctx.max_medium()) {
        ctx.request(caller, s->ret_bytes, b, id, std::uint64_t{0});
        return;
    }
    std::uint64_t key = 0;
    try {
        key = s->send_stash(caller, b, "am::rpc", name, "result");
    } catch (const error& e) {
        if (e.code() != errc::too_large) throw;
        send_error_text(s, caller, id,
                        call_site(ctx, name, caller) + ": " + e.what() + " (am::errc " +
                            std::to_string(static_cast<int>(errc::too_large)) + ")");
        return;
    }
    ctx.request(caller, s->ret_bytes, std::span<const std::byte>{}, id, key);
}

void rpc_return_error(oam_sched* s, int caller, std::uint64_t id, std::string_view name,
                      std::exception_ptr e) {
    if (id == rpc_no_reply) std::rethrow_exception(e);  // fire-and-forget: fails the job
    // The code goes before the text, so a chain of nested failures ends with the innermost
    // cause (which trim_middle keeps), not with one code per level.
    std::string what;
    try {
        std::rethrow_exception(e);
    } catch (const error& x) {
        what = "(am::errc " + std::to_string(static_cast<int>(x.code())) + ") " + x.what();
    } catch (const std::exception& x) {
        what = x.what();
    } catch (...) {
        what = "an exception not derived from std::exception";
    }
    send_error_text(s, caller, id, call_site(s->ctx(), name, caller) + " threw: " + what);
}

}  // namespace am::detail
