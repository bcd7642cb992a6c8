// SPDX-License-Identifier: MIT
/// @file
/// Machinery of tracing, not part of the API (`AM_TRACE=path`, `context::trace_start` /
/// `trace_stop`): the kinds of events the runtime records and the entry points its layers use
/// to record them. Programs start and stop tracing through `am::context`;
/// docs/observability.md describes the file and its events.
#pragma once

#include <cstdint>

namespace am::detail {

/// One rank's trace: per-thread append-only buffers of binary records (src/core/trace.cpp).
class tracer;

/// What a record is. Complete events ("X") have a start and an end; `send` is an instant.
enum class trace_kind : std::uint16_t {
    handler,  ///< a handler run: a = handler index, b = source rank, c = payload bytes
    send,     ///< a message sent: a = handler index, b = destination rank, c = payload bytes
    wait,     ///< a blocking wait: a = cause (trace_cause), b, c = cause-specific
    epoch,    ///< a typed epoch, begin to end: a = epoch number, b = detector rounds, c = sent
    round,    ///< one detector round of epoch::end: a = epoch, b = round (1-based)
    put,      ///< an RMA put: b = target rank, c = bytes
    get,      ///< an RMA get: b = source rank, c = bytes
    rpc,      ///< an RPC call issued: b = destination rank
    // The later layers' events (src/oam, src/window, src/tam).
    oam_run,       ///< an optimistic handler (an RPC's remote function too), from its start to
                   ///< its end across its blocks: a = 1 if it blocked, b = source (caller) rank,
                   ///< c = its name: a `const char*` to a string that lives as long as the process
    oam_promote,   ///< an optimistic handler blocked the first time and became a thread (an
                   ///< instant): b = source rank, c = its name (as oam_run)
    window_am,     ///< a window AM run at its target: a = window id, b = segments, c = input bytes
    window_fence,  ///< am::window::fence (an epoch's end and the next one's start): a = window id
    tam_quantum,   ///< a TAM quantum (threads of one frame without a switch of frame), from its
                   ///< first thread's start to its last thread's end: a = codeblock, b = threads,
                   ///< c = frame index
    tam_wave,      ///< a TAM termination wave: a = wave number (1-based), b = messages sent,
                   ///< c = messages handled (the sums over all ranks)
};

/// Why a thread waits (the `a` field of a `wait` record).
enum class trace_cause : std::uint32_t {
    credits,    ///< a send found its destination's ring full
    barrier,    ///< am::context::barrier
    quiesce,    ///< am::context::quiesce or the end of am::run
    epoch_end,  ///< am::epoch::end (the termination detector)
    reply,      ///< a blocking put or get waiting for its acknowledgement or data
    future,     ///< rank code waiting for an am::future (an RPC's result, a promise)
};

/// The trace clock: steady_clock in nanoseconds.
[[nodiscard]] std::uint64_t trace_now() noexcept;
/// Appends a record to the calling thread's buffer of `t` (a few stores; allocates when the
/// buffer grows). `t` must be non-null: callers test it first, so a disabled trace costs one
/// well-predicted branch at each event site.
void trace_record(tracer* t, trace_kind k, std::uint64_t start, std::uint64_t end,
                  std::uint32_t a = 0, std::uint64_t b = 0, std::uint64_t c = 0) noexcept;

/// Records one complete event from construction to destruction when `t` is non-null.
class trace_span {
  public:
    trace_span(tracer* t, trace_kind k, std::uint32_t a = 0, std::uint64_t b = 0,
               std::uint64_t c = 0) noexcept
        : _t(t), _k(k), _a(a), _b(b), _c(c) {
        if (_t != nullptr) [[unlikely]]
            _start = trace_now();
    }
    ~trace_span() {
        if (_t != nullptr) [[unlikely]]
            finish();
    }
    trace_span(const trace_span&) = delete;
    trace_span& operator=(const trace_span&) = delete;
    /// Sets the `b` / `c` fields recorded at the end (e.g. the rounds an epoch took).
    void set(std::uint64_t b, std::uint64_t c) noexcept { _b = b, _c = c; }

  private:
    // Records the event: out of line, so that a span costs its callers no inlining budget
    // (a span in a send path once cost that path the inlining of the ring's commit).
    [[gnu::cold, gnu::noinline]] void finish() noexcept;

    tracer* _t;
    trace_kind _k;
    std::uint32_t _a;
    std::uint64_t _b, _c, _start = 0;
};

}  // namespace am::detail
