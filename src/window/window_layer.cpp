// SPDX-License-Identifier: MIT
#include "window_layer.hpp"

#include "window_state.hpp"

#include "../util/error.hpp"
#include "../util/maybe_lock.hpp"

#include <cstring>

// The handlers, named for statistics ("am::window_wire::unit").
namespace am::window_wire {
namespace {

detail::window_layer& layer(token& t) {
    return core::get<detail::window_layer>(t.ctx(), detail::window_layer::key, "am::window");
}

}  // namespace

using w = std::uint64_t;
void unit(token& t, std::span<const std::byte> input, w w0, w w1, w w2, w w3, w w4, w w5, w w6,
          w w7, w w8, w w9, w w10, w w11, w w12) {
    const w words[detail::unit_words] = {w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w11, w12};
    detail::unit_header h;
    std::memcpy(&h, words, sizeof h);
    layer(t).find(h.window, "am::window (unit)").on_unit(t.source(), h, input);
}
void output(token& t, std::span<const std::byte> data, std::uint64_t id, std::uint64_t unit,
            std::uint64_t off) {
    layer(t).find(id, "am::window (output)").on_output(unit, off, data);
}
void reserve(token& t, std::uint64_t id, std::uint64_t unit, std::uint64_t bytes) {
    layer(t).find(id, "am::window (reserve)").on_reserve(t.source(), unit, bytes);
}
void grant(token& t, std::uint64_t id, std::uint64_t unit, std::uint64_t offset,
           std::uint64_t capacity, std::uint64_t granted) {
    layer(t)
        .find(id, "am::window (grant)")
        .on_grant(t.source(), unit, offset, capacity, granted != 0);
}
void lock(token& t, std::uint64_t id, std::uint64_t exclusive) {
    layer(t).find(id, "am::window::lock").on_lock(t.source(), exclusive != 0);
}
void lock_granted(token& t, std::uint64_t id) {
    layer(t).find(id, "am::window::lock").on_lock_granted(t.source());
}
void unlock(token& t, std::uint64_t id) {
    layer(t).find(id, "am::window::unlock").on_unlock(t.source());
}
void unlock_ack(token& t, std::uint64_t id) {
    layer(t).find(id, "am::window::unlock").on_unlock_acked(t.source());
}

}  // namespace am::window_wire

namespace am::detail {

window_layer::window_layer(context& ctx, const config&)
    : _ctx(ctx),
      _h_unit(ctx.handler<&window_wire::unit>()),
      _h_output(ctx.handler<&window_wire::output>()),
      _h_reserve(ctx.handler<&window_wire::reserve>()),
      _h_grant(ctx.handler<&window_wire::grant>()),
      _h_lock(ctx.handler<&window_wire::lock>()),
      _h_lock_granted(ctx.handler<&window_wire::lock_granted>()),
      _h_unlock(ctx.handler<&window_wire::unlock>()),
      _h_unlock_ack(ctx.handler<&window_wire::unlock_ack>()) {
    _fence = core::add_collective(ctx, key, 1, "am::window::fence");
    _free = core::add_collective(ctx, key, 2, "am::window::free");
}

std::uint64_t window_layer::add(window_state* w) {
    util::maybe_lock g(_m, core::locking(_ctx));
    _windows.push_back(w);
    return _created++;
}

void window_layer::remove(std::uint64_t id) {
    util::maybe_lock g(_m, core::locking(_ctx));
    if (id < _windows.size()) _windows[id] = nullptr;
}

window_state& window_layer::find(std::uint64_t id, const char* call) {
    window_state* w = nullptr;
    {
        util::maybe_lock g(_m, core::locking(_ctx));
        if (id < _windows.size()) w = _windows[id];
    }
    if (w == nullptr) {
        util::fail(errc::invalid_argument, call, _ctx.rank(),
                   "a message names window " + std::to_string(id) +
                       ", which does not exist here (created " + std::to_string(_created) +
                       " windows): windows must be created and freed in the same order on "
                       "every rank");
    }
    return *w;
}

void window_layer::retire(const window_stats& s) {
    util::maybe_lock g(_m, core::locking(_ctx));
    _retired.ams += s.ams;
    _retired.units_sent += s.units_sent;
    _retired.units_at_origin += s.units_at_origin;
    _retired.units_run += s.units_run;
    _retired.segments_internal += s.segments_internal;
    _retired.segments_user += s.segments_user;
    _retired.reservations += s.reservations;
}

std::string window_layer::report() const {
    if (_created == 0) return {};
    window_stats t = _retired;
    for (const window_state* w : _windows) {
        if (w == nullptr) continue;
        const window_stats s = w->stats();
        t.ams += s.ams, t.units_sent += s.units_sent, t.units_at_origin += s.units_at_origin;
        t.units_run += s.units_run, t.segments_internal += s.segments_internal;
        t.segments_user += s.segments_user, t.reservations += s.reservations;
    }
    return "window AMs: " + std::to_string(_created) + " windows, " + std::to_string(t.ams) +
           " AMs issued, " + std::to_string(t.units_sent) + " units sent, " +
           std::to_string(t.units_at_origin) + " run at origin, " + std::to_string(t.units_run) +
           " run here; segments via internal buffers " + std::to_string(t.segments_internal) +
           ", via attached buffers " + std::to_string(t.segments_user) + " (" +
           std::to_string(t.reservations) + " reservations)\n";
}

void window_layer::send_unit(int target, const unit_header& h, std::span<const std::byte> input) {
    word v[unit_words];
    std::memcpy(v, &h, sizeof v);
    _ctx.request(target, _h_unit, input, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9],
                 v[10], v[11], v[12]);
}
void window_layer::send_output(int origin, std::uint64_t id, std::uint64_t token, std::uint64_t off,
                               std::span<const std::byte> data) {
    _ctx.request(origin, _h_output, data, id, token, off);
}
void window_layer::send_reserve(int target, std::uint64_t id, std::uint64_t token,
                                std::uint64_t bytes) {
    _ctx.request(target, _h_reserve, id, token, bytes);
}
void window_layer::send_grant(int origin, std::uint64_t id, std::uint64_t token,
                              std::uint64_t offset, std::uint64_t capacity, bool granted) {
    _ctx.request(origin, _h_grant, id, token, offset, capacity, std::uint64_t{granted ? 1u : 0u});
}
void window_layer::send_lock(int target, std::uint64_t id, bool exclusive) {
    _ctx.request(target, _h_lock, id, std::uint64_t{exclusive ? 1u : 0u});
}
void window_layer::send_lock_granted(int origin, std::uint64_t id) {
    _ctx.request(origin, _h_lock_granted, id);
}
void window_layer::send_unlock(int target, std::uint64_t id) {
    _ctx.request(target, _h_unlock, id);
}
void window_layer::send_unlock_ack(int origin, std::uint64_t id) {
    _ctx.request(origin, _h_unlock_ack, id);
}

}  // namespace am::detail
