// SPDX-License-Identifier: MIT
// One rank's trace: an append-only buffer of binary records per recording thread, turned into
// trace-event JSON only when the trace stops (docs/observability.md).
#pragma once

#include <am/trace.hpp>

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

class tracer {
  public:
    /// `base`: the trace's time zero (rank 0's clock at trace_start), in trace_now() ns.
    tracer(int rank, std::thread::id home, std::uint64_t base);
    tracer(const tracer&) = delete;
    tracer& operator=(const tracer&) = delete;

    void record(const trace_rec& r) noexcept;
    /// The events as JSON objects, one a line, each line ending with ",\n": metadata (rank and
    /// thread names) first. Call once recording has stopped. `handler_name(i)` names handler i.
    [[nodiscard]] std::string events_json(
        const std::function<std::string(std::uint32_t)>& handler_name) const;
    [[nodiscard]] std::size_t records() const;

  private:
    struct thread_buf {
        std::vector<trace_rec> recs;
        int tid;
        std::string name;
    };
    thread_buf* add_buffer();

    int _rank;
    std::thread::id _home;
    std::uint64_t _base;
    std::uint64_t _serial;  // tells this tracer apart in the threads' caches (never reused)
    mutable std::mutex _mutex;
    std::deque<thread_buf> _bufs;  // stable addresses
    bool _overflow = false;        // a buffer could not grow: records were dropped
};

}  // namespace am::detail
