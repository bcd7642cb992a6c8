// SPDX-License-Identifier: MIT
// The public face of window AMs (include/am/window.hpp): layouts, hints and am::window, which
// forwards to the rank's window_state.
#include "window_layer.hpp"
#include "window_state.hpp"

#include "../util/error.hpp"

#include <am/core/layer.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>

namespace am {

// ----------------------------------------------------------------------------------- hints

namespace am_order {

unsigned parse(std::string_view value) {
    unsigned bits = 0;
    bool saw_none = false;
    std::size_t pos = 0;
    while (pos <= value.size()) {
        std::size_t end = value.find(',', pos);
        if (end == std::string_view::npos) end = value.size();
        std::string_view word = value.substr(pos, end - pos);
        while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
        while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
        if (word == "sameop") {
            bits |= sameop;
        } else if (word == "diffop") {
            bits |= diffop;
        } else if (word == "sameam") {
            bits |= sameam;
        } else if (word == "none") {
            saw_none = true;
        } else {
            throw error(errc::invalid_argument,
                        "am::am_order::parse: \"" + std::string(word) + "\" in \"" +
                            std::string(value) +
                            "\" is none of sameop, diffop, sameam, none (comma-separated)");
        }
        pos = end + 1;
    }
    if (saw_none && bits != 0) {
        throw error(errc::invalid_argument, "am::am_order::parse: \"" + std::string(value) +
                                                "\" mixes none with orderings");
    }
    return bits;
}

std::string to_string(unsigned bits) {
    if ((bits & strict) == 0) return "none";
    std::string s;
    auto add = [&](unsigned bit, const char* word) {
        if ((bits & bit) == 0) return;
        if (!s.empty()) s += ',';
        s += word;
    };
    add(sameop, "sameop");
    add(diffop, "diffop");
    add(sameam, "sameam");
    return s;
}

}  // namespace am_order

// --------------------------------------------------------------------------------- layouts

segment_layout segment_layout::strided(std::size_t count, std::size_t blocklen, std::size_t stride,
                                       std::size_t extent) {
    segment_layout l;
    for (std::size_t i = 0; i < count; ++i) l.blocks.push_back({i * stride, blocklen});
    l.extent = extent != 0 ? extent : count * stride;
    return l;
}

segment_layout segment_layout::indexed(std::vector<block> blocks, std::size_t extent) {
    segment_layout l;
    std::size_t end = 0;
    for (const block& b : blocks) end = std::max(end, b.offset + b.count);
    l.blocks = std::move(blocks);
    l.extent = extent != 0 ? extent : end;
    return l;
}

std::size_t segment_layout::elements() const noexcept {
    std::size_t n = 0;
    for (const block& b : blocks) n += b.count;
    return n;
}

std::size_t segment_layout::span_of(std::size_t n) const noexcept {
    if (n == 0) return 0;
    std::size_t end = 0;
    for (const block& b : blocks) {
        std::size_t block_end = 0;
        if (b.count == 0) continue;
        if (__builtin_add_overflow(b.offset, b.count, &block_end)) return SIZE_MAX;
        end = std::max(end, block_end);
    }
    std::size_t span = 0;
    if (__builtin_mul_overflow(n - 1, extent, &span) || __builtin_add_overflow(span, end, &span)) {
        return SIZE_MAX;
    }
    return span;
}

namespace detail {

byte_layout to_bytes(const segment_layout& l, std::size_t elem) {
    byte_layout b;
    b.extent = l.extent * elem;
    for (const auto& blk : l.blocks) {
        if (blk.count > 0) b.blocks.push_back({blk.offset * elem, blk.count * elem});
    }
    return b;
}

namespace {

window_layer& layer_of(context& ctx, const char* call) {
    return core::get<window_layer>(ctx, window_layer::key, call);
}

}  // namespace
}  // namespace detail

// ---------------------------------------------------------------------------------- window

window::window(std::unique_ptr<detail::window_state> s) noexcept : _s(std::move(s)) {}

window::window(context& ctx, std::span<std::byte> memory, const window_info& info) {
    const char* call = "am::window::window";
    core::check_wait(ctx, call);
    _s = std::make_unique<detail::window_state>(detail::layer_of(ctx, call), ctx, memory, info,
                                                false);
    _s->create();
}

window window::allocate(context& ctx, std::size_t bytes, const window_info& info) {
    const char* call = "am::window::allocate";
    core::check_wait(ctx, call);
    auto p = ctx.allocate<std::byte>(std::max<std::size_t>(bytes, 1));
    std::byte* base = ctx.local(p);
    std::memset(base, 0, bytes);
    auto s = std::make_unique<detail::window_state>(detail::layer_of(ctx, call), ctx,
                                                    std::span(base, bytes), info, true);
    s->create();
    return window(std::move(s));
}

window::window(window&&) noexcept = default;
window& window::operator=(window&& o) noexcept {
    if (this != &o) {
        this->~window();
        new (this) window(std::move(o));
    }
    return *this;
}

window::~window() {
    if (!_s || _s->freed() || std::uncaught_exceptions() != 0) return;
    try {
        free();
    } catch (...) {  // the job is failing: the error reached the rank already
    }
}

void window::free() {
    if (!_s) throw error(errc::bad_context, "am::window::free: a moved-from window");
    if (_s->freed()) return;
    // The memory goes back to the segment now (the context may end before ~window), also when
    // free raises a buffer error after releasing the window.
    auto release = [this] {
        if (!_s->freed() || !_s->owns_memory()) return;
        context& ctx = _s->ctx();
        ctx.deallocate(ctx.to_global(_s->memory().data()));
    };
    try {
        _s->free();
    } catch (...) {
        release();
        throw;
    }
    release();
}

context& window::ctx() const noexcept {
    return _s->ctx();
}
std::span<std::byte> window::memory() const noexcept {
    return _s->memory();
}
const window_info& window::info() const noexcept {
    return _s->info();
}
std::size_t window::size_of(int rank) const {
    return _s->size_of(rank);
}
window_stats window::stats() const {
    return _s->stats();
}
bool window::mapped(int rank) const {
    return _s->mapped(rank);
}
std::uint64_t window::id() const noexcept {
    return _s->id();
}

std::uint32_t window::register_bytes(std::string_view name, std::string_view signature,
                                     window_fn fn, std::size_t input_align) {
    return _s->register_op(name, signature, std::move(fn), input_align);
}

void window::check_op(std::uint64_t window_id, const char* call) const {
    if (!_s || _s->freed()) {
        throw error(errc::bad_context, std::string(call) + ": the window was freed or moved from");
    }
    if (window_id != _s->id()) {
        util::fail(errc::bad_handler, call, _s->ctx().rank(),
                   "the operation was registered on window " + std::to_string(window_id) +
                       ", not on this window " + std::to_string(_s->id()));
    }
}

void window::check_span(std::size_t have, const segment_layout& l, std::size_t n,
                        const char* what) const {
    const std::size_t need = l.span_of(n);
    if (need == SIZE_MAX) {
        util::fail(errc::invalid_argument, "am::window::am", _s->ctx().rank(),
                   std::string("the ") + what + " layout: " + std::to_string(n) +
                       " segments of extent " + std::to_string(l.extent) +
                       " elements span more elements than a buffer can hold (SIZE_MAX)");
    }
    if (have < need) {
        util::fail(errc::invalid_argument, "am::window::am", _s->ctx().rank(),
                   std::string("the ") + what + " buffer holds " + std::to_string(have) +
                       " elements but " + std::to_string(n) + " segments of its layout span " +
                       std::to_string(need));
    }
}

std::size_t window::persistent_bytes(std::size_t elements, std::size_t elem,
                                     const char* what) const {
    const std::size_t bytes = detail::bytes_of(elements, elem);  // SIZE_MAX if it overflows
    if (bytes == SIZE_MAX) {
        util::fail(errc::out_of_segment, "am::window::am", _s->ctx().rank(),
                   std::string("the persistent range's ") + what + " of " +
                       std::to_string(elements) + " elements of " + std::to_string(elem) +
                       " bytes is beyond any window (SIZE_MAX bytes or more)");
    }
    return bytes;
}

void window::am_bytes(const am_desc& d) {
    if (!_s || _s->freed()) {
        throw error(errc::bad_context, "am::window::am: the window was freed or moved from");
    }
    _s->am(d);
}

void window::fence(unsigned assert) {
    _s->fence(assert);
}
void window::lock(int target, lock_type type, unsigned assert) {
    _s->lock(target, type, assert);
}
void window::unlock(int target) {
    _s->unlock(target);
}
void window::lock_all(unsigned assert) {
    _s->lock_all(assert);
}
void window::unlock_all() {
    _s->unlock_all();
}
void window::flush(int target) {
    _s->flush(target, "am::window::flush");
}
void window::flush_all() {
    _s->flush_all("am::window::flush_all");
}
void window::attach(std::span<std::byte> buffer) {
    _s->attach(buffer);
}
std::span<std::byte> window::detach() {
    return _s->detach();
}

}  // namespace am
