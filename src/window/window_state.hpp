// SPDX-License-Identifier: MIT
// One window on one rank, in both roles. As origin it splits AMs into units, stages them in the
// targets' internal buffers (credits it tracks itself) or reserved parts of their attached
// buffers, sends them, and scatters the outputs that come back. As target it assembles units,
// runs the operation in the order each origin sent them (unless the epoch is concurrent),
// returns the outputs, grants reservations and locks.
//
// Threads: with core::locking(ctx) handlers run on other threads too; `_m` guards the state,
// never held while sending (a send from rank code may poll and run a handler that takes it) or
// while an operation runs. `_run` serialises the operations of non-concurrent epochs.
#pragma once

#include "window_common.hpp"

#include "../util/maybe_lock.hpp"

#include <am/context.hpp>
#include <am/window.hpp>

#include <atomic>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace am::detail {

class window_layer;

struct window_op_entry {
    std::string name, signature;
    window_fn fn;
    std::size_t input_align;  // the input may be read in place when so aligned
};

/// One AM issued here, until its last unit completes.
struct am_record {
    am_desc d;
    std::size_t in_seg = 0, out_seg = 0;
    std::size_t units_left = 0;  // units carved off and the rest, not complete
    std::size_t k = 1;           // segments per unit
};

/// A pipeline unit at the origin, from issue to completion. An AM enters the queue as one entry
/// for all its segments; units of `am_record::k` segments are carved off its front when the
/// send plan reaches it, so memory grows with the units in flight, not with the AMs queued.
struct origin_unit {
    am_record* am = nullptr;
    std::size_t first = 0, count = 0;  // segments of the AM
    std::size_t in_bytes = 0, out_bytes = 0, stage = 0;
    enum class state : std::uint8_t { queued, reserving, granted, sent } st = state::queued;
    bool user = false;
    std::size_t staging = 0;
    std::size_t out_received = 0;
    std::uint32_t flags = 0;
};

/// What the origin knows of one target.
struct target_link {
    std::deque<origin_unit*> queue;  // not yet sent, in issue order
    range_alloc internal;            // this origin's internal buffer at the target
    std::size_t in_flight = 0;       // units issued, not complete
    std::size_t reserving = 0;       // reservations asked for, not answered
    std::uint64_t next_seq = 0;
    bool user_refused = false;      // the target refused a reservation this epoch
    std::size_t user_capacity = 0;  // its attached buffer when it refused (0: none)
    bool lock_granted = false, unlock_acked = false;
    int locked = 0;  // 0 none, 1 exclusive, 2 shared
    bool lock_concurrent = false;
};

/// What the target keeps of one origin.
struct origin_link {
    std::vector<std::byte> internal;              // the origin's internal buffer here (lazy)
    std::uint64_t expected = 0;                   // next ordered unit to run
    std::map<std::uint64_t, unit_header> parked;  // ordered units that arrived early
    std::unordered_map<std::uint64_t, std::size_t> partial;  // token -> input bytes arrived
};

struct lock_waiter {
    int origin;
    bool exclusive;
};

class window_state {
  public:
    window_state(window_layer& layer, context& ctx, std::span<std::byte> memory,
                 const window_info& info, bool owns_memory);
    ~window_state();
    window_state(const window_state&) = delete;
    window_state& operator=(const window_state&) = delete;

    /// Collective part of creation: registers with the layer, exchanges sizes and mappings.
    void create();
    void free();

    context& ctx() const noexcept { return _ctx; }
    std::uint64_t id() const noexcept { return _id; }
    std::span<std::byte> memory() const noexcept { return _memory; }
    const window_info& info() const noexcept { return _info; }
    std::size_t size_of(int rank) const;
    bool mapped(int rank) const;
    window_stats stats() const;
    bool freed() const noexcept { return _freed; }
    bool owns_memory() const noexcept { return _owns_memory; }

    std::uint32_t register_op(std::string_view name, std::string_view signature, window_fn fn,
                              std::size_t input_align);
    std::size_t op_count() const {
        util::maybe_lock g(_m, _locking);
        return _ops.size();
    }
    void am(const am_desc& d);

    void fence(unsigned assert);
    void lock(int target, lock_type type, unsigned assert);
    void unlock(int target);
    void lock_all(unsigned assert);
    void unlock_all();
    void flush(int target, const char* call);
    void flush_all(const char* call);

    void attach(std::span<std::byte> buffer);
    std::span<std::byte> detach();

    // Handler bodies (window_layer dispatches by window id).
    void on_unit(int origin, const unit_header& h, std::span<const std::byte> data);
    void on_output(std::uint64_t token, std::uint64_t off, std::span<const std::byte> data);
    void on_reserve(int origin, std::uint64_t token, std::uint64_t bytes);
    void on_grant(int target, std::uint64_t token, std::uint64_t offset, std::uint64_t capacity,
                  bool granted);
    void on_lock(int origin, bool exclusive);
    void on_lock_granted(int target);
    void on_unlock(int origin);
    void on_unlock_acked(int target);

    /// Fails when the calling thread is running an operation of this window.
    void check_not_in_op(const char* call) const;

  private:
    /// The full memory barrier around operation runs and fences (the paper's UNIFIED model).
    /// TSan does not model std::atomic_thread_fence (GCC refuses it with -fsanitize=thread):
    /// a sequentially consistent read-modify-write of a word of the window is one too.
    void full_fence() noexcept {
#if defined(__SANITIZE_THREAD__)
        _fence_word.fetch_add(0, std::memory_order_seq_cst);
#else
        std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
    }
    std::atomic<unsigned> _fence_word{0};
    /// Runs an operation: refuses re-entry, fences around it, times it.
    /// Runs `e` on `c`. At the target (a handler) an exception from it becomes an am::error
    /// naming the operation (op_threw); at the origin (inside am()) it reaches the caller as is.
    void invoke(const window_op_entry& e, const window_call& c, bool at_target);
    [[noreturn]] void op_threw(const window_op_entry& e, const window_call& c) const;
    void check_epoch(int target, const char* call) const;
    void check_desc(const am_desc& d, const char* call) const;
    std::uint32_t epoch_flags(int target) const;
    bool run_at_origin(const am_desc& d, std::uint32_t flags) const;
    void origin_run(const am_desc& d, std::size_t in_seg, std::size_t out_seg, std::size_t unit);
    std::size_t unit_segments(const am_desc& d, std::size_t per_seg_stage) const;
    // origin: the send pipeline
    void pump(int target);
    struct send_action {
        origin_unit* u;
        bool reserve;
        std::uint64_t seq;
    };
    void plan(int target, std::vector<send_action>& out);
    bool blocked(const origin_unit& u, const std::vector<const origin_unit*>& waiting) const;
    bool try_split(target_link& l, origin_unit& u);
    void carve(target_link& l, std::deque<origin_unit*>::iterator& it);
    void send_unit(int target, origin_unit& u, std::uint64_t seq);
    void complete_unit(origin_unit* u);
    // target
    void run_in_order(int origin, const unit_header& first, const std::byte* input);
    void run_unit(int origin, const unit_header& h, const std::byte* input);
    std::byte* staging_of(int origin, const unit_header& h);
    void release_user(std::size_t off, std::size_t bytes);
    void grant_waiting();
    void wait_until(const char* call, const std::function<bool()>& done);
    [[noreturn]] void fail(errc code, const char* call, const std::string& what) const;

    window_layer& _layer;
    context& _ctx;
    const int _rank, _size;
    std::span<std::byte> _memory;
    window_info _info;
    bool _owns_memory;
    std::uint64_t _id = 0;
    bool _freed = false;
    std::vector<std::uint64_t> _sizes;  // every rank's window bytes
    std::vector<std::byte*> _mapped;    // every rank's window here, or null
    std::deque<window_op_entry> _ops;   // stable while handlers read entries

    mutable std::mutex _m;  // state below, when locking
    std::mutex _run;        // non-concurrent operations, when locking
    bool _locking;
    // origin
    std::vector<target_link> _targets;
    std::unordered_map<am_record*, std::unique_ptr<am_record>> _ams;
    std::unordered_map<origin_unit*, std::unique_ptr<origin_unit>> _units;
    std::size_t _outstanding = 0;  // units issued, not complete (all targets)
    bool _pumping = false;
    std::vector<std::byte> _scratch;  // a unit's packed input (used by the pumping thread)
    std::vector<int> _dirty;
    bool _fence_open = false;
    bool _fence_concurrent = false;
    bool _lock_all = false;
    std::string _error;  // a unit that fits no buffer: raised by the next completion call
    // target
    std::vector<origin_link> _origins;
    std::span<std::byte> _user;
    range_alloc _user_alloc;
    struct reservation {
        int origin;
        std::uint64_t token, bytes;
    };
    std::deque<reservation> _reservations;
    int _exclusive_holder = -1;
    int _shared_holders = 0;
    std::deque<lock_waiter> _lock_waiters;
    // statistics
    struct counters {
        std::atomic<std::uint64_t> ams{0}, units_sent{0}, units_at_origin{0}, units_run{0},
            segments_internal{0}, segments_user{0}, reservations{0}, reservations_refused{0},
            overtaken{0}, function_ns{0};
    } _st;
};

}  // namespace am::detail
