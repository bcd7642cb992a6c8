// SPDX-License-Identifier: MIT
// The optimistic-handler layer of one rank: its fibers (a handler on a stack of its own,
// switched with Boost.Context's boost::context::fiber), the queue of blocked handlers made runnable
// again, and the RPC tables (calls in flight, remote functions by process-wide slot).
#pragma once

#include <am/config.hpp>
#include <am/context.hpp>
#include <am/core/frame.hpp>
#include <am/core/layer.hpp>
#include <am/oam.hpp>
#include <am/rpc.hpp>

#include <boost/context/fiber.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

namespace am::detail {

/// Bytes of the PROT_NONE gap below every handler stack: larger than any plausible frame, so
/// an overflowing frame faults in it instead of reaching the stack mapped below
/// (src/oam/stack.cpp).
inline constexpr std::size_t oam_guard_bytes = std::size_t{1} << 20;

/// A stack with a guard gap below it (src/oam/stack.cpp).
struct oam_stack {
    std::byte* base = nullptr;  // the mapping, guard gap first
    std::size_t mapped = 0;
    std::size_t usable = 0;
    [[nodiscard]] std::byte* top() const noexcept { return base + mapped; }
    [[nodiscard]] std::byte* bottom() const noexcept { return base + (mapped - usable); }
};
/// `usable` rounded up to whole pages: the usable bytes of a stack asked for with `usable`.
std::size_t oam_stack_round(std::size_t usable) noexcept;
oam_stack oam_stack_map(std::size_t usable, int rank);
void oam_stack_unmap(oam_stack& s) noexcept;
/// The StackAllocator (Boost.Context's concept) of a fiber built on a pooled stack with
/// boost::context::preallocated: the pool owns the stack, so nothing is freed when the fiber
/// ends; there is no allocate() (a preallocated fiber takes no stack from its allocator).
struct oam_stack_keep {
    boost::context::stack_context allocate() = delete;
    void deallocate(boost::context::stack_context&) noexcept {}
};
/// Where a fiber on `s` starts: its record (Boost's) at the top, the frames below it.
boost::context::preallocated oam_stack_preallocated(const oam_stack& s) noexcept;
/// Installs (once per process) the SIGSEGV handler that names the handler whose stack overflowed,
/// and an alternate signal stack for the calling thread (once per thread; a thread-local test
/// after that, so every resumption calls it).
void oam_guard_install();

struct oam_fiber {
    enum class state : std::uint8_t { idle, running, blocked, yielding, done };
    // Move-only handles of suspended contexts: `self` holds the fiber while it is switched
    // out (empty while it runs), `back` whoever resumed it while it runs (it returns there).
    // Neither is ever destroyed holding a context (~fiber would unwind it): the fiber loops
    // forever and is abandoned with its stack (oam_sched::~oam_sched).
    boost::context::fiber self;
    boost::context::fiber back;
    oam_stack stack;
    oam_sched* sched = nullptr;
    int rank = 0;
    state st = state::idle;
    bool blocked_once = false;  // counts as live (pending) until it finishes
    // Tracing: the start of the handler's run (0: not traced), its source and name.
    std::uint64_t trace_start = 0;
    std::uint64_t trace_source = 0;
    const char* trace_name = nullptr;
    // The current job: a handler (task) or a spawned function.
    const oam_task* task = nullptr;  // stale after a handler ran: written before each job
    void (*run)(void*) = nullptr;
    void (*drop)(void*) = nullptr;
    void* arg = nullptr;
    std::string_view name;
    token* tok = nullptr;          // the handler's copy of its token (detached when it blocks)
    oam_waitq* release = nullptr;  // unlocked by the resumer once this fiber is switched out
    std::atomic<const char*> waiting_in{nullptr};  // the call it is blocked in, for diagnoses
    std::exception_ptr error;                      // what the job threw
    oam_fiber* next = nullptr;                     // in the ready list or the idle pool
    fiber_hook hook{};
    const fiber_hook* saved_hook = nullptr;  // the resumer's hook, restored on return
    // Sanitizers: the resumer's stack and fiber, this fiber's fake stack and fiber.
    const void* back_bottom = nullptr;
    std::size_t back_size = 0;
    void* fake_stack = nullptr;
    void* tsan_back = nullptr;
    void* tsan_self = nullptr;
};

class oam_sched final : public core::layer {
  public:
    static constexpr core::key key{"optimistic AMs"};

    oam_sched(context& ctx, const config& cfg);
    ~oam_sched() override;
    [[nodiscard]] std::string report() const override;

    context& ctx() noexcept { return _ctx; }
    /// Runs a handler / a spawned function on a fiber until it finishes or blocks.
    void dispatch(const oam_task& t);
    void spawn(void (*run)(void*), void (*drop)(void*), void* arg, std::string_view name);
    /// Makes blocked fiber `f` runnable; any thread.
    void make_ready(oam_fiber* f) noexcept;
    /// Called on fiber `f` (the running one): switch out; `why` is blocked or yielding.
    void suspend(oam_fiber* f, oam_fiber::state why, oam_waitq* release, const char* call);
    [[nodiscard]] oam_stats stats() const;
    /// "N optimistic handlers blocked: name in call, …" (the hang diagnosis).
    [[nodiscard]] std::string blocked_report();
    /// Rank code has waited in `call` since `start`: prints the diagnosis once, after
    /// config::oam_hang_seconds.
    void hang_check(const char* call, std::chrono::steady_clock::time_point start, bool& reported);

    // RPC (src/oam/rpc.cpp)
    void rpc_set_index(std::uint32_t slot, std::uint32_t index, std::string_view name);
    std::uint32_t rpc_index(std::uint32_t slot, std::string_view name);
    std::uint64_t rpc_begin(const rpc_delivery& d);
    void rpc_cancel(std::uint64_t id) noexcept;
    void on_return_slot(int source, std::uint64_t id, std::uint64_t value);
    void on_return_bytes(int source, std::uint64_t id, std::span<const std::byte> b,
                         std::uint64_t stash);
    /// Arguments or results larger than a medium message: sent ahead in parts to `dest`'s
    /// stash under a key (requests, so the message that names the key arrives after them);
    /// errc::too_large naming `call` above config::max_payload. Returns the key (never 0).
    std::uint64_t send_stash(int dest, std::span<const std::byte> b, const char* call,
                             std::string_view name, const char* what);
    void on_part(int source, std::span<const std::byte> b, std::uint64_t stash, std::uint64_t total,
                 std::uint64_t offset);
    /// The bytes stashed by `source` under key `stash` (complete: its parts came first).
    std::vector<std::byte> take_stash(int source, std::uint64_t stash);
    void on_return_error(int source, std::uint64_t id, std::span<const std::byte> text);

    am::handler<category::short_am, std::uint64_t, std::uint64_t> ret_slot;
    am::handler<category::medium, std::uint64_t, std::uint64_t> ret_bytes;
    am::handler<category::medium, std::uint64_t> ret_error;
    am::handler<category::medium, std::uint64_t, std::uint64_t, std::uint64_t> part;

  private:
    oam_fiber* take_fiber();
    void park(oam_fiber* f) noexcept;
    /// Switches to `f` (from rank code, a handler, the ready queue or another fiber) and
    /// handles the state it comes back in.
    void resume(oam_fiber* f);
    void after_switch(oam_fiber* f);
    [[gnu::cold, gnu::noinline]] static void trace_begin(oam_fiber* f, const oam_task& t);
    [[gnu::cold, gnu::noinline]] void trace_promote(const oam_fiber* f) const noexcept;
    [[gnu::cold, gnu::noinline]] void trace_end(oam_fiber* f, bool blocked) const noexcept;
    std::size_t run_ready();
    rpc_delivery finish_call(int source, std::uint64_t id, const char* what);
    [[noreturn]] void fail(errc code, const char* call, const std::string& what) const;

    context& _ctx;
    const int _rank;
    const bool _locking;
    const std::size_t _stack_bytes;
    const std::size_t _max_live;
    const double _hang_seconds;
    std::mutex _m;          // idle pool and call table when locking
    oam_waitq _ready_lock;  // the ready list (wakers may be any thread); only its lock is used
    oam_fiber* _ready_head = nullptr;
    oam_fiber* _ready_tail = nullptr;
    oam_fiber* _idle = nullptr;
    oam_fiber* _hot = nullptr;  // without locking: the idle fiber reused first
    struct job {
        void (*run)(void*);
        void (*drop)(void*);
        void* arg;
        std::string_view name;
        job* next;
    };
    job* _jobs_head = nullptr;  // spawned, not started: under _ready_lock
    job* _jobs_tail = nullptr;
    void start_job(job* j);
    std::vector<std::unique_ptr<oam_fiber>> _fibers;
    std::atomic<std::uint64_t> _live{0};
    std::atomic<std::uint64_t> _stacks{0};  // _fibers.size(), readable without the lock
    std::atomic<std::uint64_t> _handlers{0}, _blocked{0}, _resumes{0}, _peak{0};

    // RPC
    static constexpr std::uint32_t max_slots = 4096;
    std::unique_ptr<std::atomic<std::uint32_t>[]> _rpc_index;  // slot -> handler + 1 (0: none)
    struct call_entry {
        rpc_delivery d{};
        std::uint32_t gen = 0;
        bool busy = false;
    };
    std::vector<call_entry> _calls;
    std::vector<std::uint32_t> _free_calls;
    // Large arguments and results: parts arrived, by (source, key); this rank's next key.
    struct stash_entry {
        std::vector<std::byte> bytes;
        std::uint64_t received = 0;
    };
    std::map<std::pair<int, std::uint64_t>, stash_entry> _stash;
    std::uint64_t _next_stash = 1;
    std::size_t _max_payload;
};

oam_sched& oam_layer_of(context& ctx, const char* call);
/// A function's or callable's name out of the compiler's text of type_name / value_name: a
/// part of `pretty` (no allocation, so a signal handler may call it).
std::string_view oam_readable_view(std::string_view pretty) noexcept;
std::string oam_readable(std::string_view pretty);

}  // namespace am::detail
