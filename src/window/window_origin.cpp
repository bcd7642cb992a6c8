// SPDX-License-Identifier: MIT
// The origin's side of window AMs: checking a trigger, running it here on a mapped window, or
// splitting it into units that are staged at the target and sent in order (window_state.hpp).
#include "window_state.hpp"

#include "window_layer.hpp"

#include "../util/maybe_lock.hpp"

#include <am/core/layer.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace am::detail {

namespace {

std::size_t unit_stage(std::size_t count, std::size_t in_seg, std::size_t out_seg) {
    return round_up(count * in_seg, stage_align) + round_up(count * out_seg, stage_align);
}

bool contiguous(const byte_layout& l, std::size_t seg) {
    return l.extent == seg &&
           (l.blocks.empty() || (l.blocks.size() == 1 && l.blocks[0].offset == 0));
}

}  // namespace

void window_state::check_desc(const am_desc& d, const char* call) const {
    if (d.target < 0 || d.target >= _size) {
        fail(errc::bad_rank, call,
             "target " + std::to_string(d.target) + " outside [0, " + std::to_string(_size) + ")");
    }
    check_epoch(d.target, call);
    if (d.op >= _ops.size()) {
        fail(errc::bad_handler, call,
             "operation #" + std::to_string(d.op) + " is not registered on window " +
                 std::to_string(_id) + " (" + std::to_string(_ops.size()) + " operations)");
    }
    const std::uint64_t size = _sizes[static_cast<std::size_t>(d.target)];
    if (d.persistent_disp > size || d.persistent_bytes > size - d.persistent_disp) {
        fail(errc::out_of_segment, call,
             "persistent range [" + std::to_string(d.persistent_disp) + ", +" +
                 std::to_string(d.persistent_bytes) + ") bytes outside rank " +
                 std::to_string(d.target) + "'s window of " + std::to_string(size) + " bytes");
    }
    const std::size_t in_seg = packed_bytes(d.input_layout);
    const std::size_t out_seg = packed_bytes(d.output_layout);
    if (d.input_elem == 0 || in_seg % d.input_elem != 0 || d.output_elem == 0 ||
        out_seg % d.output_elem != 0) {
        fail(errc::invalid_argument, call,
             "type signatures do not match: an input segment of " + std::to_string(in_seg) +
                 " bytes is not N target elements of " + std::to_string(d.input_elem) +
                 " bytes, or an output segment of " + std::to_string(out_seg) + " bytes not N of " +
                 std::to_string(d.output_elem));
    }
    if (d.num_segments > 0 &&
        (in_seg > SIZE_MAX / d.num_segments || out_seg > SIZE_MAX / d.num_segments)) {
        fail(errc::invalid_argument, call,
             std::to_string(d.num_segments) + " segments of " + std::to_string(in_seg) +
                 " input and " + std::to_string(out_seg) +
                 " output bytes are more than SIZE_MAX bytes");
    }
    if (d.num_segments > 0 &&
        ((in_seg > 0 && d.input == nullptr) || (out_seg > 0 && d.output == nullptr))) {
        fail(errc::invalid_argument, call, "a null input or output buffer with data to move");
    }
}

std::size_t window_state::unit_segments(const am_desc& d, std::size_t per_seg) const {
    std::size_t k = d.pipeline_unit != 0 ? d.pipeline_unit : _info.pipeline_unit;
    if (k == 0) {
        const std::size_t room =
            _info.internal_buffer > 2 * stage_align ? _info.internal_buffer - 2 * stage_align : 0;
        k = per_seg == 0 ? d.num_segments : std::max<std::size_t>(1, room / per_seg);
    }
    return std::clamp<std::size_t>(k, 1, std::max<std::size_t>(1, d.num_segments));
}

void window_state::am(const am_desc& d) {
    const char* call = "am::window::am";
    check_not_in_op(call);
    core::check_thread(_ctx, call);
    std::uint32_t flags = 0;
    {
        util::maybe_lock g(_m, _locking);
        check_desc(d, call);
        flags = epoch_flags(d.target);
    }
    _st.ams.fetch_add(1, std::memory_order_relaxed);
    if (d.num_segments == 0) return;
    const std::size_t in_seg = packed_bytes(d.input_layout);
    const std::size_t out_seg = packed_bytes(d.output_layout);
    const std::size_t k = unit_segments(d, in_seg + out_seg);
    if ((flags & unit_concurrent) != 0 && _mapped[static_cast<std::size_t>(d.target)] != nullptr) {
        origin_run(d, in_seg, out_seg, k);
        return;
    }
    auto rec = std::make_unique<am_record>();
    rec->d = d;
    rec->in_seg = in_seg;
    rec->out_seg = out_seg;
    rec->k = k;
    rec->units_left = 1;
    auto u = std::make_unique<origin_unit>();
    u->am = rec.get();
    u->count = d.num_segments;
    u->flags = flags;
    {
        util::maybe_lock g(_m, _locking);
        target_link& l = _targets[static_cast<std::size_t>(d.target)];
        l.queue.push_back(u.get());
        _units.emplace(u.get(), std::move(u));
        ++l.in_flight;
        ++_outstanding;
        _ams.emplace(rec.get(), std::move(rec));
    }
    pump(d.target);
}

void window_state::origin_run(const am_desc& d, std::size_t in_seg, std::size_t out_seg,
                              std::size_t k) {
    thread_local std::vector<std::byte> in_buf, out_buf;
    const window_op_entry* e = nullptr;
    {
        util::maybe_lock g(_m, _locking);
        e = &_ops[d.op];
    }
    std::byte* persistent = _mapped[static_cast<std::size_t>(d.target)] + d.persistent_disp;
    const bool direct_in = contiguous(d.input_layout, in_seg);
    const bool direct_out = contiguous(d.output_layout, out_seg);
    for (std::size_t first = 0; first < d.num_segments; first += k) {
        const std::size_t n = std::min(k, d.num_segments - first);
        const std::byte* in = d.input + first * in_seg;
        if (!direct_in) {
            in_buf.resize(n * in_seg);
            gather(d.input_layout, d.input, first, n, in_buf.data());
            in = in_buf.data();
        }
        std::byte* out = d.output + first * out_seg;
        if (!direct_out) {
            out_buf.resize(n * out_seg);
            out = out_buf.data();
        }
        const window_call c{in,    in_seg, persistent, d.persistent_bytes, out, out_seg, n,
                            first, d.tag,  _rank};
        {
            const trace_span span(core::tracer(_ctx), trace_kind::window_am,
                                  static_cast<std::uint32_t>(_id), n, n * in_seg);
            invoke(*e, c, false);
        }
        if (!direct_out) scatter(d.output_layout, out_seg, d.output, first, 0, out, n * out_seg);
        _st.units_at_origin.fetch_add(1, std::memory_order_relaxed);
    }
}

// ----------------------------------------------------------------------------- the pipeline

bool window_state::blocked(const origin_unit& u,
                           const std::vector<const origin_unit*>& waiting) const {
    if ((u.flags & unit_concurrent) != 0) return false;
    for (const origin_unit* w : waiting) {
        if (w->am == u.am) {
            if ((_info.ordering & am_order::sameam) != 0) return true;
            continue;
        }
        const am_desc& a = w->am->d;
        const am_desc& b = u.am->d;
        const bool overlap = a.persistent_disp < b.persistent_disp + b.persistent_bytes &&
                             b.persistent_disp < a.persistent_disp + a.persistent_bytes;
        if (!overlap) continue;
        const unsigned bit = a.op == b.op ? am_order::sameop : am_order::diffop;
        if ((_info.ordering & bit) != 0) return true;
    }
    return false;
}

// Makes the units of `u`'s AM small enough for the larger of the target's buffers; false (and
// the AM's error recorded) when not even one segment fits.
bool window_state::try_split(target_link& l, origin_unit& u) {
    am_record& rec = *u.am;
    const std::size_t room = std::max(l.internal.capacity(), l.user_capacity);
    std::size_t k = std::min(u.count, rec.k);
    while (k > 0 && unit_stage(k, rec.in_seg, rec.out_seg) > room) --k;
    if (k == 0) {
        if (_error.empty()) {
            _error =
                "operation #" + std::to_string(rec.d.op) + " of window " + std::to_string(_id) +
                ": one segment needs " + std::to_string(unit_stage(1, rec.in_seg, rec.out_seg)) +
                " bytes of staging at rank " + std::to_string(rec.d.target) +
                ", whose internal buffer holds " + std::to_string(l.internal.capacity()) +
                " bytes per origin and whose attached buffer " +
                (l.user_capacity == 0 ? std::string("is missing")
                                      : "holds " + std::to_string(l.user_capacity) + " bytes") +
                "; the AM's other segments completed";
        }
        return false;
    }
    rec.k = k;
    return true;
}

// Carves a unit of the AM's k segments off the front of the queue entry at `it` (which keeps
// the rest) and points `it` at the new unit.
void window_state::carve(target_link& l, std::deque<origin_unit*>::iterator& it) {
    origin_unit& rest = **it;
    am_record& rec = *rest.am;
    auto p = std::make_unique<origin_unit>(rest);
    p->count = rec.k;
    rest.first += rec.k;
    rest.count -= rec.k;
    origin_unit* raw = p.get();
    _units.emplace(raw, std::move(p));
    ++rec.units_left;
    ++l.in_flight;
    ++_outstanding;
    it = l.queue.insert(it, raw);
}

// How far past the first waiting unit the origin looks for units that may overtake it, and how
// many reservations it keeps open per target: bounds the work of one pass over a long queue.
constexpr std::size_t lookahead = 16;
constexpr std::size_t max_reserving = 4;

// Under _m: decides which queued units to send (or to reserve room for) now, in queue order,
// honouring the ordering hints; the caller sends them in that order after unlocking.
void window_state::plan(int target, std::vector<send_action>& out) {
    target_link& l = _targets[static_cast<std::size_t>(target)];
    std::vector<const origin_unit*> waiting;
    auto it = l.queue.begin();
    while (it != l.queue.end() && waiting.size() <= lookahead) {
        origin_unit& u = **it;
        if (u.st == origin_unit::state::reserving || blocked(u, waiting)) {
            waiting.push_back(&u);
            ++it;
            continue;
        }
        if (u.st == origin_unit::state::queued && u.count > u.am->k) {
            carve(l, it);
            continue;
        }
        if (u.st == origin_unit::state::queued) {
            u.in_bytes = u.count * u.am->in_seg;
            u.out_bytes = u.count * u.am->out_seg;
            u.stage = unit_stage(u.count, u.am->in_seg, u.am->out_seg);
        }
        const bool ordered = (u.flags & unit_concurrent) == 0;
        if (u.st == origin_unit::state::granted) {
            u.st = origin_unit::state::sent;
            if (!waiting.empty()) _st.overtaken.fetch_add(1, std::memory_order_relaxed);
            out.push_back({&u, false, ordered ? l.next_seq++ : 0});
            it = l.queue.erase(it);
            continue;
        }
        if (auto off = l.internal.allocate(u.stage)) {
            u.staging = *off;
            u.user = false;
            u.st = origin_unit::state::sent;
            if (!waiting.empty()) _st.overtaken.fetch_add(1, std::memory_order_relaxed);
            out.push_back({&u, false, ordered ? l.next_seq++ : 0});
            it = l.queue.erase(it);
            continue;
        }
        // A refusal says the target has no attached buffer, or one smaller than that unit:
        // smaller units may still ask.
        const bool may_reserve = !l.user_refused || u.stage <= l.user_capacity;
        if (may_reserve && l.reserving < max_reserving) {
            u.st = origin_unit::state::reserving;
            ++l.reserving;
            out.push_back({&u, true, 0});
            waiting.push_back(&u);
            ++it;
            continue;
        }
        if (l.user_refused && u.stage > std::max(l.internal.capacity(), l.user_capacity)) {
            if (try_split(l, u)) continue;  // look at it again, carved smaller
            complete_unit(&u);  // dropped: its error is raised by the next completion call
            it = l.queue.erase(it);
            continue;
        }
        waiting.push_back(&u);  // room frees when units in flight complete
        ++it;
    }
}

void window_state::pump(int target) {
    {
        util::maybe_lock g(_m, _locking);
        if (_pumping) {
            _dirty.push_back(target);
            return;
        }
        _pumping = true;
    }
    std::vector<send_action> actions;
    for (;;) {
        actions.clear();
        {
            util::maybe_lock g(_m, _locking);
            plan(target, actions);
        }
        for (const send_action& a : actions) {
            if (a.reserve) {
                _st.reservations.fetch_add(1, std::memory_order_relaxed);
                _layer.send_reserve(target, _id, reinterpret_cast<std::uintptr_t>(a.u), a.u->stage);
            } else {
                send_unit(target, *a.u, a.seq);
            }
        }
        util::maybe_lock g(_m, _locking);
        if (_dirty.empty()) {
            _pumping = false;
            return;
        }
        target = _dirty.back();
        _dirty.pop_back();
    }
}

void window_state::send_unit(int target, origin_unit& u, std::uint64_t seq) {
    const am_record& rec = *u.am;
    const std::size_t cap = _ctx.max_medium();
    unit_header h{};
    h.window = _id;
    h.seq = seq;
    h.token = reinterpret_cast<std::uintptr_t>(&u);
    h.staging = u.staging;
    h.persistent_disp = rec.d.persistent_disp;
    h.persistent_bytes = rec.d.persistent_bytes;
    h.in_seg = rec.in_seg;
    h.out_seg = rec.out_seg;
    h.num_segments = u.count;
    h.segment_offset = u.first;
    h.tag = rec.d.tag;
    h.op = rec.d.op;
    h.flags = u.flags | (u.user ? unit_user : 0);
    const std::byte* packed = rec.d.input + u.first * rec.in_seg;
    if (u.in_bytes > 0 && !contiguous(rec.d.input_layout, rec.in_seg)) {
        _scratch.resize(u.in_bytes);
        gather(rec.d.input_layout, rec.d.input, u.first, u.count, _scratch.data());
        packed = _scratch.data();
    }
    _st.units_sent.fetch_add(1, std::memory_order_relaxed);
    (u.user ? _st.segments_user : _st.segments_internal)
        .fetch_add(u.count, std::memory_order_relaxed);
    // A send may poll, and the unit may run and complete (and be freed) before the next line:
    // nothing of `u` is read after the first send.
    const std::size_t in_bytes = u.in_bytes;
    if (in_bytes <= cap) {
        _layer.send_unit(target, h, std::span(packed, in_bytes));
        return;
    }
    for (std::size_t off = 0; off < in_bytes; off += cap) {
        h.chunk_off = off;
        _layer.send_unit(target, h, std::span(packed + off, std::min(cap, in_bytes - off)));
    }
}

// Under _m: the unit's output is all here (or it was dropped).
void window_state::complete_unit(origin_unit* u) {
    am_record* rec = u->am;
    target_link& l = _targets[static_cast<std::size_t>(rec->d.target)];
    if (u->st == origin_unit::state::sent && !u->user) l.internal.release(u->staging, u->stage);
    --l.in_flight;
    --_outstanding;
    if (--rec->units_left == 0) {
        _ams.erase(rec);
    }
    _units.erase(u);
}

void window_state::on_output(std::uint64_t token, std::uint64_t off,
                             std::span<const std::byte> data) {
    auto* u = reinterpret_cast<origin_unit*>(static_cast<std::uintptr_t>(token));
    const am_record* rec = nullptr;
    {
        util::maybe_lock g(_m, _locking);
        if (_units.find(u) == _units.end() || u->st != origin_unit::state::sent ||
            off + data.size() > u->out_bytes) {
            fail(errc::invalid_argument, "am::window (output)",
                 "an output message names no unit in flight here");
        }
        rec = u->am;
    }
    if (!data.empty()) {
        scatter(rec->d.output_layout, rec->out_seg, rec->d.output, u->first, off, data.data(),
                data.size());
    }
    int target = 0;
    {
        util::maybe_lock g(_m, _locking);
        u->out_received += data.size();
        if (u->out_received < u->out_bytes) return;
        target = rec->d.target;
        complete_unit(u);
    }
    pump(target);
}

void window_state::on_grant(int target, std::uint64_t token, std::uint64_t offset,
                            std::uint64_t capacity, bool granted) {
    auto* u = reinterpret_cast<origin_unit*>(static_cast<std::uintptr_t>(token));
    {
        util::maybe_lock g(_m, _locking);
        if (_units.find(u) == _units.end() || u->st != origin_unit::state::reserving) {
            fail(errc::invalid_argument, "am::window (grant)",
                 "a grant names no unit waiting for a reservation here");
        }
        target_link& l = _targets[static_cast<std::size_t>(target)];
        --l.reserving;
        if (granted) {
            u->st = origin_unit::state::granted;
            u->user = true;
            u->staging = offset;
        } else {
            u->st = origin_unit::state::queued;
            l.user_refused = true;
            l.user_capacity = capacity;
            _st.reservations_refused.fetch_add(1, std::memory_order_relaxed);
        }
    }
    pump(target);
}

}  // namespace am::detail
