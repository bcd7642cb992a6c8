// SPDX-License-Identifier: MIT
// One rank's trace: an append-only buffer of binary records per recording thread, at most a
// cap of records per rank, turned into trace-event JSON a piece at a time when the trace stops
// (docs/observability.md).
#pragma once

#include <am/trace.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace am::detail {

struct trace_rec {
    std::uint64_t start, end;  // trace_now() ns
    trace_kind kind;
    std::uint32_t a;
    std::uint64_t b, c;
};

/// Records a rank keeps when neither config::trace_max_events nor AM_TRACE_MAX_EVENTS says.
inline constexpr std::size_t default_trace_max_events = 1'000'000;
/// The cap in force for a config whose trace_max_events is 0: AM_TRACE_MAX_EVENTS when set
/// (throws am::error naming the variable when it is not a count >= 1), else the default.
[[nodiscard]] std::size_t trace_max_events_from_env();

class tracer {
  public:
    /// `base`: the trace's time zero (rank 0's clock at trace_start), in trace_now() ns.
    /// `max_events`: records kept; later ones are counted as dropped, and the first drop
    /// prints one warning naming the rank and the cap.
    tracer(int rank, std::thread::id home, std::uint64_t base, std::size_t max_events);
    tracer(const tracer&) = delete;
    tracer& operator=(const tracer&) = delete;

    void record(const trace_rec& r) noexcept;
    /// Records dropped: over the cap, or because a buffer could not grow.
    [[nodiscard]] std::uint64_t dropped() const noexcept {
        return _dropped.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::size_t max_events() const noexcept { return _max; }

    /// The events as JSON objects, one a line, separated by ",\n" (none after the last):
    /// metadata (rank and thread names) first. Made a piece at a time, so that writing a
    /// trace holds one piece of text and not the whole (src/core/context_trace.cpp). Use it
    /// once recording has stopped; the tracer must outlive it.
    class json_cursor {
      public:
        /// `handler_name(i)` names handler i.
        json_cursor(const tracer& t, std::function<std::string(std::uint32_t)> handler_name);
        /// Appends events to `out` until it holds at least `want` bytes or every event is
        /// in; returns whether every event is in (then also on every later call).
        bool fill(std::string& out, std::size_t want);

      private:
        void append_record(std::string& out, const trace_rec& r, const std::string& tid);
        const std::string& name_of(std::uint32_t i);

        const tracer& _t;
        std::function<std::string(std::uint32_t)> _handler_name;
        std::string _pid;
        std::vector<std::string> _names;  // by handler index, filled as met
        std::uint64_t _async_ids = 0;     // oam_run, tam_quantum: a begin/end pair each
        std::size_t _buf = 0, _rec = 0;   // the next record
        bool _started = false, _named = false, _done = false;  // _named: _buf's thread_name
    };

  private:
    struct thread_buf {
        std::vector<trace_rec> recs;
        int tid;
        std::string name;
    };
    thread_buf* add_buffer();
    [[gnu::cold, gnu::noinline]] void drop() noexcept;

    int _rank;
    std::thread::id _home;
    std::uint64_t _base;
    std::uint64_t _serial;  // tells this tracer apart in the threads' caches (never reused)
    std::size_t _max;
    mutable std::mutex _mutex;
    std::deque<thread_buf> _bufs;            // stable addresses
    std::atomic<std::uint64_t> _taken{0};    // records offered (kept while below _max)
    std::atomic<std::uint64_t> _dropped{0};  // records not kept
    std::atomic<bool> _warned{false};        // the warning of the cap was printed
    std::atomic<bool> _overflow{false};      // a buffer could not grow: records dropped
};

}  // namespace am::detail
