// SPDX-License-Identifier: MIT
// A window's life, its operations, its epochs and its attached buffer (window_state.hpp).
#include "window_state.hpp"

#include "window_layer.hpp"

#include "../util/error.hpp"
#include "../util/maybe_lock.hpp"

#include <am/core/layer.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>

namespace am::detail {

namespace {

std::uint64_t fnv(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

/// What every rank contributes when a window is created.
struct create_wire {
    std::uint64_t id, bytes, segment_offset, ordering, internal, unit;
};

/// What every rank contributes when it registers an operation.
struct op_wire {
    std::uint64_t index, hash;
    char text[112];
};

}  // namespace

window_state::window_state(window_layer& layer, context& ctx, std::span<std::byte> memory,
                           const window_info& info, bool owns_memory)
    : _layer(layer),
      _ctx(ctx),
      _rank(ctx.rank()),
      _size(ctx.size()),
      _memory(memory),
      _info(info),
      _owns_memory(owns_memory),
      _locking(core::locking(ctx)) {}

window_state::~window_state() {
    if (!_freed) _layer.remove(_id);
}

void window_state::fail(errc code, const char* call, const std::string& what) const {
    util::fail(code, call, _rank, what);
}

void window_state::create() {
    const char* call = "am::window::window";
    if (_info.ordering > am_order::strict) {
        fail(errc::invalid_argument, call,
             "ordering bits " + std::to_string(_info.ordering) + " outside am_order::strict");
    }
    _id = _layer.add(this);
    const std::span<std::byte> seg = _ctx.segment();
    const bool in_seg = !_memory.empty() && _memory.data() >= seg.data() &&
                        _memory.data() + _memory.size() <= seg.data() + seg.size();
    const create_wire mine{
        _id,
        _memory.size(),
        in_seg ? static_cast<std::uint64_t>(_memory.data() - seg.data()) : ~std::uint64_t{0},
        _info.ordering,
        _info.internal_buffer,
        _info.pipeline_unit};
    std::vector<create_wire> all(static_cast<std::size_t>(_size));
    core::allgather(_ctx, core::context_exchange, &mine, all.data(), sizeof mine, call);
    _sizes.resize(all.size());
    _mapped.assign(all.size(), nullptr);
    for (std::size_t r = 0; r < all.size(); ++r) {
        const create_wire& w = all[r];
        if (w.id != mine.id || w.ordering != mine.ordering || w.internal != mine.internal ||
            w.unit != mine.unit) {
            fail(errc::invalid_argument, call,
                 "rank " + std::to_string(r) + " created window " + std::to_string(w.id) +
                     " (ordering " + am_order::to_string(static_cast<unsigned>(w.ordering)) +
                     ", internal buffer " + std::to_string(w.internal) + ", pipeline unit " +
                     std::to_string(w.unit) + ") where this rank created window " +
                     std::to_string(mine.id) + " (ordering " + am_order::to_string(_info.ordering) +
                     ", internal buffer " + std::to_string(_info.internal_buffer) +
                     ", pipeline unit " + std::to_string(_info.pipeline_unit) +
                     "): windows are created in the same order with the same window_info");
        }
        _sizes[r] = w.bytes;
        if (static_cast<int>(r) == _rank) {
            _mapped[r] = _memory.data();
        } else if (w.segment_offset != ~std::uint64_t{0}) {
            const std::span<std::byte> other = core::segment_of(_ctx, static_cast<int>(r));
            if (!other.empty() && w.segment_offset + w.bytes <= other.size()) {
                _mapped[r] = other.data() + w.segment_offset;
            }
        }
    }
    _targets.resize(all.size());
    for (target_link& t : _targets) t.internal.reset(_info.internal_buffer);
    _origins.resize(all.size());
}

void window_state::free() {
    const char* call = "am::window::free";
    check_not_in_op(call);
    core::check_wait(_ctx, call);
    std::exception_ptr late;  // as in fence: the barrier first
    try {
        flush_all(call);
    } catch (const error& e) {
        if (e.code() != errc::too_large) throw;
        late = std::current_exception();
    }
    // Every AM to this rank has completed too: its origin flushed before. A rank in another
    // collective (a plain barrier, a fence) fails the job naming both calls.
    core::barrier(_ctx, _layer.free_kind(), call);
    _layer.retire(stats());
    _layer.remove(_id);
    _freed = true;
    if (late) std::rethrow_exception(late);
}

std::size_t window_state::size_of(int rank) const {
    if (rank < 0 || rank >= _size) {
        fail(errc::bad_rank, "am::window::size_of",
             "rank " + std::to_string(rank) + " outside [0, " + std::to_string(_size) + ")");
    }
    return _sizes[static_cast<std::size_t>(rank)];
}

bool window_state::mapped(int rank) const {
    size_of(rank);
    return _mapped[static_cast<std::size_t>(rank)] != nullptr;
}

window_stats window_state::stats() const {
    auto v = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    return {v(_st.ams),          v(_st.units_sent),           v(_st.units_at_origin),
            v(_st.units_run),    v(_st.segments_internal),    v(_st.segments_user),
            v(_st.reservations), v(_st.reservations_refused), v(_st.overtaken),
            v(_st.function_ns)};
}

void window_state::check_not_in_op(const char* call) const {
    if (t_running_window != nullptr) [[unlikely]] {
        fail(errc::bad_context, call,
             "called from inside a window operation: an operation may not call back into a "
             "window (it runs as a handler, or at the origin inside am::window::am)");
    }
}

// --------------------------------------------------------------------------------- operations

std::uint32_t window_state::register_op(std::string_view name, std::string_view signature,
                                        window_fn fn, std::size_t input_align) {
    const char* call = "am::window::register_op";
    check_not_in_op(call);
    core::check_wait(_ctx, call);
    if (!fn) fail(errc::invalid_argument, call, "the operation's function is empty");
    const std::string text = std::string(name) + "(" + std::string(signature) + ")";
    // The entry exists before this rank joins the exchange: a rank whose exchange completes
    // first may send an AM with it at once, and it must find it here.
    op_wire mine{};
    {
        util::maybe_lock g(_m, _locking);
        mine.index = _ops.size();
        _ops.push_back({std::string(name), std::string(signature), std::move(fn),
                        std::max<std::size_t>(input_align, 1)});
    }
    mine.hash = fnv(text);
    std::strncpy(mine.text, text.c_str(), sizeof mine.text - 1);
    std::vector<op_wire> all(static_cast<std::size_t>(_size));
    auto withdraw = [&] {
        util::maybe_lock g(_m, _locking);
        _ops.pop_back();
    };
    try {
        core::allgather(_ctx, core::context_exchange, &mine, all.data(), sizeof mine, call);
    } catch (...) {
        withdraw();
        throw;
    }
    for (std::size_t r = 0; r < all.size(); ++r) {
        if (all[r].index != mine.index || all[r].hash != mine.hash) {
            withdraw();
            fail(errc::handler_mismatch, call,
                 "operation #" + std::to_string(mine.index) + " of window " + std::to_string(_id) +
                     " is " + std::string(mine.text) + " here but rank " + std::to_string(r) +
                     " registered #" + std::to_string(all[r].index) + " " +
                     std::string(all[r].text, strnlen(all[r].text, sizeof all[r].text)) +
                     ": every rank registers equivalent operations in the same order");
        }
    }
    return static_cast<std::uint32_t>(mine.index);
}

// An exception from the user's operation fails the rank: its text names the operation, the
// window, the origin and the segments, and keeps the original text (and code, for an
// am::error; the job's own abort passes as it is).
void window_state::op_threw(const window_op_entry& e, const window_call& c) const {
    const std::string who = "operation '" + e.name + "' of window " + std::to_string(_id) +
                            " (an AM from rank " + std::to_string(c.origin) + ", segments " +
                            std::to_string(c.segment_offset) + ".." +
                            std::to_string(c.segment_offset + c.num_segments) + ")";
    const char* call = "am::window op";
    try {
        throw;
    } catch (const error& x) {
        if (x.code() == errc::aborted) throw;
        fail(x.code(), call, who + " threw: " + x.what());
    } catch (const std::exception& x) {
        fail(errc::invalid_argument, call, who + " threw: " + x.what());
    } catch (...) {
        fail(errc::invalid_argument, call,
             who + " threw an exception not derived from std::exception");
    }
}

void window_state::invoke(const window_op_entry& e, const window_call& c, bool at_target) {
    const void* saved = t_running_window;
    t_running_window = this;
    full_fence();
    const std::uint64_t t0 = now_ns();
    try {
        e.fn(c);
    } catch (...) {
        t_running_window = saved;
        if (!at_target) throw;
        op_threw(e, c);
    }
    _st.function_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
    full_fence();
    t_running_window = saved;
}

// ------------------------------------------------------------------------------------ epochs

void window_state::wait_until(const char* call, const std::function<bool()>& done) {
    check_not_in_op(call);
    core::check_wait(_ctx, call);
    _ctx.wait([&] {
        util::maybe_lock g(_m, _locking);
        return done();
    });
}

void window_state::flush(int target, const char* call) {
    size_of(target);
    auto& l = _targets[static_cast<std::size_t>(target)];
    wait_until(call, [&] { return l.in_flight == 0; });
    std::string error;
    {
        util::maybe_lock g(_m, _locking);
        error.swap(_error);
    }
    if (!error.empty()) fail(errc::too_large, call, error);
}

void window_state::flush_all(const char* call) {
    wait_until(call, [&] { return _outstanding == 0; });
    std::string error;
    {
        util::maybe_lock g(_m, _locking);
        error.swap(_error);
    }
    if (!error.empty()) fail(errc::too_large, call, error);
}

void window_state::fence(unsigned assert) {
    const char* call = "am::window::fence";
    check_not_in_op(call);
    core::check_wait(_ctx, call);
    const trace_span span(core::tracer(_ctx), trace_kind::window_fence,
                          static_cast<std::uint32_t>(_id));
    // A unit that fits no buffer is this rank's error, but the fence is collective: the others
    // wait in it (and for this rank's answers), so the error is raised after the barrier.
    std::exception_ptr late;
    try {
        flush_all(call);
    } catch (const error& e) {
        if (e.code() != errc::too_large) throw;
        late = std::current_exception();
    }
    full_fence();
    core::barrier(_ctx, _layer.fence_kind(), call);
    full_fence();
    util::maybe_lock g(_m, _locking);
    _fence_open = (assert& epoch_assert::nosucceed) == 0;
    _fence_concurrent = (assert& epoch_assert::concurrent) != 0;
    for (target_link& t : _targets) t.user_refused = false;
    if (late) std::rethrow_exception(late);
}

void window_state::lock(int target, lock_type type, unsigned assert) {
    const char* call = "am::window::lock";
    check_not_in_op(call);  // before anything is sent
    core::check_wait(_ctx, call);
    size_of(target);
    auto& l = _targets[static_cast<std::size_t>(target)];
    {
        util::maybe_lock g(_m, _locking);
        if (l.locked != 0) {
            fail(errc::bad_context, call,
                 "rank " + std::to_string(target) + " is locked already by this rank");
        }
        l.lock_granted = false;
    }
    const bool exclusive = type == lock_type::exclusive;
    _layer.send_lock(target, _id, exclusive);
    wait_until(call, [&] { return l.lock_granted; });
    util::maybe_lock g(_m, _locking);
    l.locked = exclusive ? 1 : 2;
    l.lock_concurrent = (assert& epoch_assert::concurrent) != 0;
    l.user_refused = false;
}

void window_state::unlock(int target) {
    const char* call = "am::window::unlock";
    check_not_in_op(call);
    core::check_wait(_ctx, call);
    size_of(target);
    auto& l = _targets[static_cast<std::size_t>(target)];
    {
        util::maybe_lock g(_m, _locking);
        if (l.locked == 0) {
            fail(errc::bad_context, call,
                 "rank " + std::to_string(target) + " is not locked by this rank");
        }
    }
    std::exception_ptr late;  // a unit that fits no buffer: raised once the lock is released
    try {
        flush(target, call);
    } catch (const error& e) {
        if (e.code() != errc::too_large) throw;
        late = std::current_exception();
    }
    {
        util::maybe_lock g(_m, _locking);
        l.unlock_acked = false;
    }
    _layer.send_unlock(target, _id);
    wait_until(call, [&] { return l.unlock_acked; });
    util::maybe_lock g(_m, _locking);
    l.locked = 0;
    l.lock_concurrent = false;
    if (late) std::rethrow_exception(late);
}

void window_state::lock_all(unsigned assert) {
    check_not_in_op("am::window::lock_all");
    core::check_wait(_ctx, "am::window::lock_all");
    if (_lock_all) {
        fail(errc::bad_context, "am::window::lock_all", "lock_all is held already");
    }
    for (int r = 0; r < _size; ++r) lock(r, lock_type::shared, assert);
    _lock_all = true;
}

void window_state::unlock_all() {
    check_not_in_op("am::window::unlock_all");
    core::check_wait(_ctx, "am::window::unlock_all");
    if (!_lock_all) {
        fail(errc::bad_context, "am::window::unlock_all", "lock_all is not held");
    }
    for (int r = 0; r < _size; ++r) unlock(r);
    _lock_all = false;
}

void window_state::check_epoch(int target, const char* call) const {
    const target_link& l = _targets[static_cast<std::size_t>(target)];
    if (_fence_open || _lock_all || l.locked != 0) return;
    fail(errc::bad_context, call,
         "an AM to rank " + std::to_string(target) +
             " outside an access epoch: open one with fence (and no nosucceed), lock(" +
             std::to_string(target) + ") or lock_all");
}

std::uint32_t window_state::epoch_flags(int target) const {
    const target_link& l = _targets[static_cast<std::size_t>(target)];
    const bool concurrent =
        (l.locked != 0 && l.lock_concurrent) || (_fence_open && _fence_concurrent);
    return concurrent ? unit_concurrent : 0;
}

// ----------------------------------------------------------------------------- target locks

void window_state::on_lock(int origin, bool exclusive) {
    bool grant = false;
    {
        util::maybe_lock g(_m, _locking);
        const bool free_now = _exclusive_holder < 0 && _lock_waiters.empty();
        if (free_now && (!exclusive || _shared_holders == 0)) {
            grant = true;
            if (exclusive) {
                _exclusive_holder = origin;
            } else {
                ++_shared_holders;
            }
        } else {
            _lock_waiters.push_back({origin, exclusive});
        }
    }
    if (grant) _layer.send_lock_granted(origin, _id);
}

void window_state::on_unlock(int origin) {
    std::vector<int> granted;
    {
        util::maybe_lock g(_m, _locking);
        if (_exclusive_holder == origin) {
            _exclusive_holder = -1;
        } else if (_shared_holders > 0) {
            --_shared_holders;
        }
        while (!_lock_waiters.empty() && _exclusive_holder < 0) {
            const lock_waiter w = _lock_waiters.front();
            if (w.exclusive && _shared_holders > 0) break;
            _lock_waiters.pop_front();
            granted.push_back(w.origin);
            if (w.exclusive) {
                _exclusive_holder = w.origin;
                break;
            }
            ++_shared_holders;
        }
    }
    for (int o : granted) _layer.send_lock_granted(o, _id);
    _layer.send_unlock_ack(origin, _id);
}

void window_state::on_lock_granted(int target) {
    util::maybe_lock g(_m, _locking);
    _targets[static_cast<std::size_t>(target)].lock_granted = true;
}

void window_state::on_unlock_acked(int target) {
    util::maybe_lock g(_m, _locking);
    _targets[static_cast<std::size_t>(target)].unlock_acked = true;
}

// ---------------------------------------------------------------------------- attached buffer

void window_state::attach(std::span<std::byte> buffer) {
    const char* call = "am::window::attach";
    check_not_in_op(call);
    if (buffer.empty()) fail(errc::invalid_argument, call, "the buffer is empty");
    if (reinterpret_cast<std::uintptr_t>(buffer.data()) % stage_align != 0) {
        fail(errc::invalid_argument, call,
             "the buffer is not aligned to " + std::to_string(stage_align) + " bytes");
    }
    util::maybe_lock g(_m, _locking);
    if (!_user.empty()) {
        fail(errc::invalid_argument, call,
             "a buffer of " + std::to_string(_user.size()) +
                 " bytes is attached already: detach it first");
    }
    _user = buffer;
    _user_alloc.reset(buffer.size());
}

std::span<std::byte> window_state::detach() {
    const char* call = "am::window::detach";
    check_not_in_op(call);
    core::check_wait(_ctx, call);
    std::deque<reservation> refused;
    std::span<std::byte> buffer;
    for (;;) {
        wait_until(call, [&] { return _user_alloc.used() == 0; });
        util::maybe_lock g(_m, _locking);
        if (_user_alloc.used() != 0) continue;
        buffer = _user;
        _user = {};
        _user_alloc.reset(0);
        refused.swap(_reservations);
        break;
    }
    for (const reservation& r : refused) _layer.send_grant(r.origin, _id, r.token, 0, 0, false);
    return buffer;
}

}  // namespace am::detail
