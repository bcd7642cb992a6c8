// SPDX-License-Identifier: MIT
// The target's side of window AMs: assembling units in staging buffers, running them in the
// order their origin sent them, returning outputs, and granting attached-buffer reservations
// (window_state.hpp).
#include "window_state.hpp"

#include "window_layer.hpp"

#include "../util/maybe_lock.hpp"

#include <am/core/layer.hpp>

#include <atomic>
#include <cstring>

namespace am::detail {

namespace {

std::size_t stage_of(const unit_header& h) {
    return round_up(h.num_segments * h.in_seg, stage_align) +
           round_up(h.num_segments * h.out_seg, stage_align);
}

}  // namespace

std::byte* window_state::staging_of(int origin, const unit_header& h) {
    const char* call = "am::window (unit)";
    const std::size_t stage = stage_of(h);
    util::maybe_lock g(_m, _locking);
    if ((h.flags & unit_user) != 0) {
        if (h.staging > _user.size() || stage > _user.size() - h.staging) {
            fail(errc::invalid_argument, call,
                 "a unit from rank " + std::to_string(origin) +
                     " names attached-buffer bytes outside the buffer (" +
                     std::to_string(_user.size()) + " bytes)");
        }
        return _user.data() + h.staging;
    }
    origin_link& o = _origins[static_cast<std::size_t>(origin)];
    if (h.staging > _info.internal_buffer || stage > _info.internal_buffer - h.staging) {
        fail(errc::invalid_argument, call,
             "a unit from rank " + std::to_string(origin) +
                 " names internal-buffer bytes outside its " +
                 std::to_string(_info.internal_buffer) + " bytes");
    }
    if (o.internal.empty()) o.internal.resize(_info.internal_buffer);
    return o.internal.data() + h.staging;
}

void window_state::on_unit(int origin, const unit_header& h, std::span<const std::byte> data) {
    const char* call = "am::window (unit)";
    const std::size_t in_bytes = h.num_segments * h.in_seg;
    if (h.op >= op_count()) {
        fail(errc::bad_handler, call,
             "an AM from rank " + std::to_string(origin) + " names operation #" +
                 std::to_string(h.op) + ", which is not registered here (" +
                 std::to_string(op_count()) + " operations on window " + std::to_string(_id) + ")");
    }
    if (h.chunk_off > in_bytes || data.size() > in_bytes - h.chunk_off) {
        fail(errc::invalid_argument, call,
             "a unit chunk from rank " + std::to_string(origin) + " lies outside its input");
    }
    std::byte* st = staging_of(origin, h);
    const bool whole = data.size() == in_bytes;
    const window_op_entry* e = nullptr;
    {
        util::maybe_lock g(_m, _locking);
        e = &_ops[h.op];
    }
    if (whole && reinterpret_cast<std::uintptr_t>(data.data()) % e->input_align == 0) {
        // The common case: the unit in one message. It runs on the message's bytes unless it
        // must wait for an earlier unit of its origin (then it is copied to its staging area).
        if ((h.flags & unit_concurrent) == 0) {
            util::maybe_lock g(_m, _locking);
            origin_link& o = _origins[static_cast<std::size_t>(origin)];
            if (h.seq != o.expected) {
                if (!data.empty()) std::memcpy(st, data.data(), data.size());
                o.parked.emplace(h.seq, h);
                return;
            }
        }
        run_in_order(origin, h, data.data());
        return;
    }
    if (!data.empty()) std::memcpy(st + h.chunk_off, data.data(), data.size());
    if (!whole) {
        util::maybe_lock g(_m, _locking);
        auto& partial = _origins[static_cast<std::size_t>(origin)].partial;
        std::size_t& got = partial[h.token];
        got += data.size();
        if (got < in_bytes) return;
        partial.erase(h.token);
    }
    if ((h.flags & unit_concurrent) == 0) {
        util::maybe_lock g(_m, _locking);
        origin_link& o = _origins[static_cast<std::size_t>(origin)];
        if (h.seq != o.expected) {
            o.parked.emplace(h.seq, h);
            return;
        }
    }
    run_in_order(origin, h, st);
}

// Runs the unit `first` (its input at `input`), then, for ordered units, the parked units of
// the same origin that are next in its order.
void window_state::run_in_order(int origin, const unit_header& first, const std::byte* input) {
    run_unit(origin, first, input);
    if ((first.flags & unit_concurrent) != 0) return;
    origin_link& o = _origins[static_cast<std::size_t>(origin)];
    for (;;) {
        unit_header h;
        {
            util::maybe_lock g(_m, _locking);
            ++o.expected;
            auto it = o.parked.find(o.expected);
            if (it == o.parked.end()) return;
            h = it->second;
            o.parked.erase(it);
        }
        run_unit(origin, h, staging_of(origin, h));
    }
}

void window_state::run_unit(int origin, const unit_header& h, const std::byte* input) {
    const char* call = "am::window (unit)";
    if (h.persistent_disp > _memory.size() ||
        h.persistent_bytes > _memory.size() - h.persistent_disp) {
        fail(errc::out_of_segment, call,
             "an AM from rank " + std::to_string(origin) + " names a persistent range outside " +
                 "this rank's window of " + std::to_string(_memory.size()) + " bytes");
    }
    std::byte* st = staging_of(origin, h);
    const std::size_t in_bytes = h.num_segments * h.in_seg;
    const std::size_t out_bytes = h.num_segments * h.out_seg;
    std::byte* out = st + round_up(in_bytes, stage_align);
    const window_op_entry* e = nullptr;
    {
        util::maybe_lock g(_m, _locking);
        e = &_ops[h.op];
    }
    const window_call c{input,
                        h.in_seg,
                        _memory.data() + h.persistent_disp,
                        h.persistent_bytes,
                        out,
                        h.out_seg,
                        h.num_segments,
                        h.segment_offset,
                        h.tag,
                        origin};
    {
        util::maybe_lock serial(_run, _locking && (h.flags & unit_concurrent) == 0);
        const trace_span span(core::tracer(_ctx), trace_kind::window_am,
                              static_cast<std::uint32_t>(_id), h.num_segments, in_bytes);
        invoke(*e, c, true);
    }
    _st.units_run.fetch_add(1, std::memory_order_relaxed);
    const std::size_t cap = _ctx.max_medium();
    if (out_bytes == 0) _layer.send_output(origin, _id, h.token, 0, {});
    for (std::size_t off = 0; off < out_bytes; off += cap) {
        const std::size_t n = std::min(cap, out_bytes - off);
        _layer.send_output(origin, _id, h.token, off, std::span(out + off, n));
    }
    if ((h.flags & unit_user) != 0) release_user(h.staging, stage_of(h));
}

// ---------------------------------------------------------------------------- reservations

void window_state::on_reserve(int origin, std::uint64_t token, std::uint64_t bytes) {
    std::optional<std::size_t> off;
    std::size_t capacity = 0;
    bool refuse = false;
    {
        util::maybe_lock g(_m, _locking);
        capacity = _user.size();
        if (_user.empty() || bytes > _user.size()) {
            refuse = true;
        } else if (_reservations.empty()) {
            off = _user_alloc.allocate(bytes);
        }
        if (!refuse && !off) _reservations.push_back({origin, token, bytes});
    }
    if (refuse) {
        _layer.send_grant(origin, _id, token, 0, capacity, false);
    } else if (off) {
        _layer.send_grant(origin, _id, token, *off, capacity, true);
    }
}

void window_state::release_user(std::size_t off, std::size_t bytes) {
    {
        util::maybe_lock g(_m, _locking);
        _user_alloc.release(off, bytes);
    }
    grant_waiting();
}

void window_state::grant_waiting() {
    std::vector<std::pair<reservation, std::size_t>> grants;
    std::size_t capacity = 0;
    {
        util::maybe_lock g(_m, _locking);
        capacity = _user.size();
        while (!_reservations.empty()) {
            const reservation r = _reservations.front();
            auto off = _user_alloc.allocate(r.bytes);
            if (!off) break;
            _reservations.pop_front();
            grants.emplace_back(r, *off);
        }
    }
    for (const auto& [r, off] : grants) {
        _layer.send_grant(r.origin, _id, r.token, off, capacity, true);
    }
}

}  // namespace am::detail
