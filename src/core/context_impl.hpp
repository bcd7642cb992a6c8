// SPDX-License-Identifier: MIT
// The core of one rank: handler table, sends with flow control, dispatch with header
// validation, progress, the handler-table handshake and the end-of-job quiescence.
#pragma once

#if !defined(AM_INTERNAL_CORE)
#error \
    "src/core/context_impl.hpp is private to the core and the runtime; a layer uses <am/core/layer.hpp> (docs/layers.md)"
#endif

#include "../transport/ring/region.hpp"
#include "../transport/transport.hpp"
#include "handler_table.hpp"
#include "incoming.hpp"
#include "trace.hpp"
#include "wire.hpp"

#include <am/context.hpp>
#include <am/core/frame.hpp>
#include <am/core/layer.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

namespace am::detail {

/// Counters updated by one thread at a time (under the send or poll lock when a progress
/// thread exists) and read by any: relaxed load + store instead of a locked add.
inline void bump(std::atomic<std::uint64_t>& a, std::uint64_t n = 1) noexcept {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// t_frame, home_mark and frame_of: <am/core/frame.hpp>.

/// The numbers of the parts of the library that start collectives (`transport::coll_kind::
/// layer`): the transport's own kinds are part 0 (`transport::transport_layer`), the core's
/// part 1, the runtime's part 2; the layers get 3, 4, … in the order they first add a kind
/// (`core::add_collective`), which is the same on every rank.
inline constexpr std::uint8_t core_coll_part = 1;
inline constexpr std::uint8_t runtime_coll_part = 2;
inline constexpr std::uint8_t first_layer_coll_part = 3;

/// The core's collective kinds (named in the transport's `coll_names` by the context).
namespace core_coll {
inline constexpr transport::coll_kind handshake{core_coll_part, 1};         // context::barrier
inline constexpr transport::coll_kind handshake_report{core_coll_part, 2};  // its tables differ
inline constexpr transport::coll_kind exchange{core::context_exchange.layer,
                                               core::context_exchange.id};
inline constexpr transport::coll_kind quiesce{core_coll_part, 4};
inline constexpr transport::coll_kind trace{core_coll_part, 5};  // trace_start / trace_stop
static_assert(exchange.layer == core_coll_part && exchange.id == 3);
}  // namespace core_coll

class context_impl final : public transport::message_sink {
  public:
    context_impl(transport::transport& tp, const config& cfg);
    ~context_impl();
    context_impl(const context_impl&) = delete;
    context_impl& operator=(const context_impl&) = delete;

    [[nodiscard]] int rank() const noexcept { return _rank; }
    [[nodiscard]] int size() const noexcept { return _size; }
    [[nodiscard]] std::size_t max_medium() const noexcept { return _max_medium; }
    [[nodiscard]] std::span<std::byte> own_segment() const noexcept { return _own_segment; }
    [[nodiscard]] context& front() noexcept { return _front; }
    [[nodiscard]] transport::transport& transport() noexcept { return _tp; }

    /// Appends a handler. The program may register `max_program_handlers` of its own; the
    /// library's (registered before `seal_builtin`) do not count against that limit.
    std::uint32_t add_handler(const handler_desc& d) {
        return _table.add(d, _rank, !_builtin_sealed, _builtin);
    }
    /// Handlers [0, builtin_handlers()) are the library's own: a program never names them.
    [[nodiscard]] std::uint32_t builtin_handlers() const noexcept { return _builtin; }
    void send(const send_desc& d, bool reply);
    /// Short messages with N arguments: the hot path (checks, ring write, counter inline).
    template <unsigned N, unsigned Lane>
    void send_short(int dest, std::uint32_t handler, const std::uint64_t* args);
    /// A reply: checks the token, sends, marks it answered.
    template <unsigned N>
    void reply_short(token& t, std::uint32_t handler, const std::uint64_t* args);
    /// A poll from the program: the rank's own thread outside handlers and without a progress
    /// thread takes the inlined scan; everything else `poll_general`.
    [[gnu::always_inline]] inline std::size_t poll();
    [[gnu::noinline]] std::size_t poll_general();
    std::size_t poll_shared();
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) final;
    /// `deliver` inlined into the ring scan (the ring transport calls it when the sink has it).
    [[gnu::always_inline]] inline void deliver_inline(int source, unsigned lane, std::byte* msg,
                                                      std::size_t len);
    friend struct dispatch_limits;
    void barrier(transport::coll_kind kind = core_coll::handshake,
                 const char* call = "am::context::barrier");
    /// Collective exchange of `bytes` per rank (≤ the transport's gather limit); polls while
    /// it waits. Not callable from a handler. `kind` names the operation to the other ranks
    /// (a rank in another collective fails the job, see transport::coll_kind).
    void allgather(transport::coll_kind kind, const void* in, void* out, std::size_t bytes,
                   const char* call);
    /// Element-wise sum over all ranks (≤ transport::max_reduce_words words), calling `idle`
    /// while it waits. Not callable from a handler.
    void allreduce_sum(transport::coll_kind kind, const std::uint64_t* in, std::uint64_t* out,
                       std::size_t n, const transport::idle_fn& idle, const char* call);
    /// Runs `f` while no handler runs on another thread of this rank (under the poll lock
    /// when a progress thread or several threads share the context). `f` must not send.
    template <class F>
    decltype(auto) exclusive(F&& f) {
        if (!_locking) return f();
        std::lock_guard lock(_poll_mutex);
        std::unique_lock work(_work_mutex);
        return f();
    }
    /// Work a layer keeps for later (e.g. batches of an epoch this rank has not begun): `fn`
    /// runs inside a poll, as a handler would (sends never block), after `signal_deferred`.
    void set_deferred(std::function<std::size_t()> fn) { _deferred_fns.push_back(std::move(fn)); }
    /// Work a layer holds that will still send or finish (blocked optimistic handlers):
    /// quiescence waits for it to reach zero.
    void set_pending_report(double seconds, std::function<std::string()> report) {
        _pending_report_seconds = seconds;
        _pending_report = std::move(report);
    }
    void add_layer_pending(std::int64_t n) noexcept {
        _layer_pending.fetch_add(n, std::memory_order_acq_rel);
    }
    void signal_deferred() noexcept { _deferred_ready.store(true, std::memory_order_release); }
    /// Work that any thread polling this rank may run, outside the poll lock and concurrently
    /// with other such threads (`thread_multiple`): `fn` runs as a handler would, one unit per
    /// call, returning how many it ran; `work_available` says whether there is any.
    void set_parallel_work(std::function<std::size_t()> fn) { _work_fn = std::move(fn); }
    void work_available(bool yes) noexcept { _work_ready.store(yes, std::memory_order_release); }
    /// Enables every handler registered so far without a handshake: for the library's own
    /// handlers, registered identically on every rank before any message can arrive.
    void seal_builtin() noexcept {
        _builtin = _table.count();
        _builtin_sealed = true;
        _sealed.store(_builtin, std::memory_order_relaxed);
    }
    /// True while a progress thread shares this context (layers then lock their state).
    [[nodiscard]] bool locking() const noexcept { return _locking; }
    /// Returns when every message sent by any rank has been handled (collective): called by
    /// the program (`quiesce`) or by am::run once the rank function returned (`end_of_run`).
    void quiesce(transport::coll_kind kind = core_coll::quiesce);
    /// The kind of collective `id` of layer `k` (core::add_collective), named `call`.
    transport::coll_kind add_layer_collective(const core::key& k, std::uint8_t id,
                                              const char* call);
    void idle(unsigned& backoff);
    /// One round of a wait on the rank's own thread: a poll, and a back-off while it handles
    /// nothing (reset when it does).
    void poll_or_idle(unsigned& backoff);
    [[nodiscard]] bool in_handler() const noexcept {
        return (t_frame & ~std::uintptr_t{1}) == frame_of(this, 0);
    }
    [[nodiscard]] bool in_reply_handler() const noexcept { return t_frame == frame_of(this, 1); }
    /// Throws am::error (errc::bad_context) naming `call` when the calling thread may not use
    /// this context: without thread_multiple or a progress thread, only the rank's own thread
    /// (the one that created the context) may. Cheap: one thread-local load and compare on the
    /// rank's own thread.
    void check_thread(const char* call) const {
        if (_locking || (t_frame & ~std::uintptr_t{home_mark}) == frame_of(this, 0)) [[likely]]
            return;
        check_thread_slow(call);
    }
    void count_reply() noexcept { bump(_replies); }
    /// The error text for a send naming `handler`, which is not in the table.
    [[nodiscard]] std::string unregistered(std::uint32_t handler) const;
    [[nodiscard]] am::stats snapshot() const;
    /// The layers attached to this rank (core::attach, core::find).
    void attach_layer(const core::key& k, core::layer& l);
    [[nodiscard]] core::layer* find_layer(const core::key& k) const noexcept {
        for (unsigned i = 0; i < _nlayers; ++i) {
            if (_layers[i].k == &k) return _layers[i].l;
        }
        return nullptr;
    }
    void start_progress_thread();
    void stop_progress_thread() noexcept;

    /// Tracing (context::trace_start / trace_stop, AM_TRACE): collective, the rank's own
    /// thread. `register_trace_handler` adds the library handler that carries the records to
    /// rank 0 (am::run calls it with the other library handlers, before seal_builtin).
    void register_trace_handler();
    void trace_start(std::string_view path, const char* call);
    void trace_stop(const char* call);
    [[nodiscard]] tracer* trace() const noexcept { return _trace.load(std::memory_order_relaxed); }

  private:
    struct pending_msg {
        std::vector<std::byte> bytes;
    };

    void validate(const send_desc& d, bool reply) const;
    [[nodiscard]] std::size_t message_bytes(const send_desc& d, bool inline_long) const noexcept;
    void write_message(std::byte* out, const send_desc& d, bool inline_long) const noexcept;
    [[nodiscard]] bool copy_long_payload(const send_desc& d) const;
    // A long payload of at least `one_sided_long_bytes` to a peer reached one-sided (ucx): put
    // into its segment, waiting for the put (not from a handler); false when not done so.
    bool put_long_payload(const send_desc& d);
    bool try_inject(const send_desc& d, std::size_t bytes, bool inline_long);
    [[gnu::noinline]] void send_blocked(const send_desc& d, std::size_t bytes, bool inline_long);
    void enqueue(const send_desc& d, std::size_t bytes, bool inline_long);
    void flush_pending();
    void count_sent(const send_desc& d) noexcept;
    [[gnu::cold, gnu::noinline]] void trace_sent(const send_desc& d) const noexcept;
    [[gnu::noinline]] void poll_after_send();
    template <unsigned N, unsigned Lane>
    [[gnu::noinline]] void send_short_other(int dest, std::uint32_t handler,
                                            const std::uint64_t* args, std::uintptr_t frame);
    [[gnu::cold]] void send_short_slow(int dest, unsigned lane, std::uint32_t handler,
                                       unsigned nargs, const std::uint64_t* args);
    [[nodiscard]] std::uint64_t total_sent() const noexcept;
    [[nodiscard]] std::uint64_t total_received() const noexcept;
    void reject(int source, const char* why) noexcept;
    [[gnu::cold, gnu::noinline]] void deliver_unusual(int source, unsigned lane, std::byte* msg,
                                                      std::size_t len);
    [[gnu::always_inline]] inline void dispatch(int source, unsigned lane, std::byte* msg,
                                                const incoming& in);
    struct traced_sink;
    [[gnu::cold, gnu::noinline]] std::size_t poll_traced();
    // poll_locked when `_poll_slow`: flushes queued messages or polls traced. Out of line, so
    // the poll inlined into every send path stays one test and one call as without tracing.
    [[gnu::noinline]] std::size_t poll_slow();
    void trace_gather(tracer& t, const char* call);
    bool trace_send_window(tracer::json_cursor& cursor, std::string& pending);
    void trace_serve(tracer::json_cursor& cursor);
    void trace_write(tracer::json_cursor& cursor, const std::vector<std::uint64_t>& drops,
                     const char* call);
    struct trace_output;
    void trace_pull(int from, trace_output& out);
    static void trace_chunk(void* obj, token& t, const std::uint64_t* args, std::byte* payload,
                            std::size_t len);
    void check_tables(transport::coll_kind kind);
    void name_collectives();  // the core's kinds, in the transport's coll_names
    void check_thread_slow(const char* call) const;
    [[noreturn]] void report_mismatch(std::uint32_t max_count);
    struct entry_label {
        std::uint64_t digest = 0;
        std::string text;
    };
    /// Every rank's table entry `i`: digest and whole handshake label (collective).
    std::vector<entry_label> gather_labels(std::uint32_t i);
    void progress_loop() noexcept;
    [[nodiscard, gnu::always_inline]] inline std::size_t poll_locked();

    transport::transport& _tp;
    // The transport again when it is the ring transport (threads, shm): the hot paths call it
    // directly so its ring operations inline; every other transport goes through `_tp`.
    transport::ring::ring_transport* _ring;
    bool _fast = false;  // no progress thread, no thread_multiple: no locks on the hot path
    context _front;
    int _rank;
    int _size;
    std::size_t _max_medium;
    std::span<std::byte> _own_segment;
    handler_table _table;
    std::atomic<std::uint32_t> _sealed{0};  // handlers [0, _sealed) may be sent
    std::uint32_t _builtin = 0;             // handlers [0, _builtin) are the library's own
    bool _builtin_sealed = false;           // seal_builtin has run: the program registers now

    // Messages waiting for room, by dest * lanes + lane: only the (destination, lane) pairs
    // that have any, so a rank's memory does not grow with the job's size (an empty deque
    // already holds ~600 bytes; 2 per peer were 1.3 GB for 1024 thread ranks).
    std::map<std::size_t, std::deque<pending_msg>> _pending;
    std::atomic<std::size_t> _pending_total{0};  // written under the send lock
    // Non-zero when a short send must take the general path: messages are queued (their count)
    // or the fast path is off (bit 62). One load on the hot path instead of two.
    std::atomic<std::uint64_t> _slow_path{0};
    // True when a poll has more to do than scan the rings: messages are queued (flush them
    // first) or tracing is on (the traced poll). One test per poll covers both, so tracing
    // adds no instruction to an untraced poll.
    std::atomic<bool> _poll_slow{false};
    void update_slow_path() noexcept;

    bool _locking = false;  // true while a progress thread shares the context
    std::mutex _send_mutex;
    std::mutex _poll_mutex;
    std::thread _progress;
    // The rank's own thread (it constructs the context): an exception from a handler run by
    // another thread's poll fails the job, as one escaping the rank's function does.
    std::thread::id _home = std::this_thread::get_id();
    std::uintptr_t _saved_frame = 0;  // the home thread's t_frame before this context's mark
    std::atomic<bool> _stop{false};

    std::vector<std::function<std::size_t()>> _deferred_fns;  // one per layer that asks
    std::atomic<std::int64_t> _layer_pending{0};
    double _pending_report_seconds = 0;
    std::function<std::string()> _pending_report;
    std::function<std::size_t()> _work_fn;
    std::atomic<bool> _work_ready{false};
    std::shared_mutex _work_mutex;  // shared while work runs; `exclusive` takes it alone
    std::size_t run_work();
    std::atomic<bool> _deferred_ready{false};
    [[gnu::noinline]] std::size_t run_deferred();

    struct layer_slot {
        const core::key* k = nullptr;
        core::layer* l = nullptr;
    };
    std::array<layer_slot, core::max_layers> _layers{};
    std::vector<const core::key*> _coll_layers;  // layers by collective part number - 3
    unsigned _nlayers = 0;

    // Tracing: null when off, so each event site costs one load and a predicted branch. The
    // short-send hot path tests nothing: while tracing, `_slow_path` sends it the general way.
    std::atomic<tracer*> _trace{nullptr};
    std::unique_ptr<tracer> _trace_owner;  // kept after stop until the next start
    std::size_t _trace_max_events;         // config::trace_max_events or AM_TRACE_MAX_EVENTS
    std::string _trace_path;
    std::string _trace_file;     // rank 0: the file written (the path through its links)
    bool _trace_direct = false;  // rank 0: the path is not a regular file; written in place
    std::uint32_t _trace_handler = ~0u;
    std::uint64_t _trace_base = 0;  // rank 0's trace_now() at trace_start: the file's zero
    // Rank 0 during trace_stop: one window of the events of rank `_trace_from`, pulled from it
    // (context_trace.cpp). The handler (maybe on the progress thread) copies pieces in and
    // counts them, the count last; the rank thread reads the window once `_trace_got` reaches
    // `_trace_len` (release / acquire: the bytes and `_trace_final` are in place then).
    std::string _trace_window;
    std::atomic<int> _trace_from{-1};
    std::atomic<std::uint64_t> _trace_got{0}, _trace_len{0};
    std::atomic<bool> _trace_final{false};
    // Other ranks during trace_stop: windows rank 0 asked for.
    std::atomic<std::uint64_t> _trace_pulls{0};

    std::uint64_t _header_base;  // this rank in the header's source field
    std::atomic<std::uint64_t> _replies{0}, _stalls{0}, _queued{0}, _bad{0};
};

}  // namespace am::detail
