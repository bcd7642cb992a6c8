// SPDX-License-Identifier: MIT
// The TAM machine of one rank: its frames, I-structures, queues and the two-level scheduler,
// under either dispatch policy (docs/tam.md). Everything here is touched only by the rank's
// own thread: the core's handler only appends arrived messages to an inbox, which the
// scheduler drains at its poll points.
#pragma once

#include <am/config.hpp>
#include <am/context.hpp>
#include <am/core/layer.hpp>
#include <am/tam.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace am::tam {
namespace detail {
class machine;
struct frame_rec;
}  // namespace detail

/// Makes and opens frame views (the public class keeps its members private).
struct frame_access {
    static frame make(detail::machine* m, detail::frame_rec* r, frame_ref f, bool inlet) noexcept;
    static detail::machine& machine_of(const frame& f) noexcept {
        return *static_cast<detail::machine*>(f._machine);
    }
    static detail::frame_rec& rec_of(const frame& f) noexcept {
        return *static_cast<detail::frame_rec*>(f._rec);
    }
    static bool is_inlet(const frame& f) noexcept { return f._inlet; }
};

}  // namespace am::tam

namespace am::tam::detail {

/// A message: inlet messages and system requests (local ones never leave the rank).
struct message {
    enum kind : std::uint8_t { inlet = 1, call = 2, fetch = 3, store = 4 };
    word head = 0;    // kind | nargs << 8 | inlet << 16 | codeblock << 32
    word target = 0;  // inlet: frame word; fetch/store: index << 32 | I-structure id
    word a[max_args] = {};

    static word make_head(kind k, unsigned nargs, inlet_id in, codeblock_id cb) noexcept {
        return word{k} | word{nargs} << 8 | word{in} << 16 | word{cb} << 32;
    }
    [[nodiscard]] kind what() const noexcept { return static_cast<kind>(head & 0xff); }
    [[nodiscard]] unsigned nargs() const noexcept { return (head >> 8) & 0xff; }
    [[nodiscard]] inlet_id inlet_index() const noexcept {
        return static_cast<inlet_id>(head >> 16);
    }
    [[nodiscard]] codeblock_id codeblock() const noexcept {
        return static_cast<codeblock_id>(head >> 32);
    }
};

struct frame_rec {
    const codeblock_def* cb = nullptr;  // kept after release, for error texts
    codeblock_id cbid = 0;
    std::uint16_t gen = 0;
    bool live = false;
    bool queued = false;  // in the ready queue (AM)
    std::vector<word> slots;
    std::vector<std::uint32_t> counts;  // remaining entry count per thread
    std::vector<thread_id> cv;          // enabled threads (AM: the RCV; the LCV while active)
};

}  // namespace am::tam::detail

namespace am::tam {
inline frame frame_access::make(detail::machine* m, detail::frame_rec* r, frame_ref f,
                                bool inlet) noexcept {
    frame v;
    v._slots = r->slots.data();
    v._nslots = static_cast<std::uint32_t>(r->slots.size());
    v._inlet = inlet;
    v._ref = f;
    v._machine = m;
    v._rec = r;
    return v;
}
}  // namespace am::tam

namespace am::tam::detail {

/// A FIFO on a power-of-two ring that only grows (no allocation per push once warm).
template <class T>
class ring {
  public:
    [[nodiscard]] bool empty() const noexcept { return _size == 0; }
    [[nodiscard]] std::size_t size() const noexcept { return _size; }
    void push_back(const T& v) {
        if (_size == _buf.size()) grow();
        _buf[(_head + _size) & (_buf.size() - 1)] = v;
        ++_size;
    }
    [[nodiscard]] T& front() noexcept { return _buf[_head]; }
    void pop_front() noexcept {
        _head = (_head + 1) & (_buf.size() - 1);
        --_size;
    }
    void clear() noexcept { _head = _size = 0; }

  private:
    void grow() {
        std::vector<T> bigger(_buf.empty() ? 64 : _buf.size() * 2);
        for (std::size_t i = 0; i < _size; ++i) bigger[i] = _buf[(_head + i) & (_buf.size() - 1)];
        _buf.swap(bigger);
        _head = 0;
    }
    std::vector<T> _buf;
    std::size_t _head = 0;
    std::size_t _size = 0;
};

struct reader {
    word frame;  // frame word of the reader
    word tag;
    inlet_id in;
    codeblock_id cb;
};

struct istruct_rec {
    std::vector<word> values;
    std::vector<std::uint8_t> full;
    std::unordered_map<std::uint32_t, std::vector<reader>> waiting;
};

class machine final : public core::layer {
  public:
    static constexpr core::key key{"TAM"};

    machine(context& ctx, const config& cfg);
    [[nodiscard]] std::string report() const override;

    result run(const program& prog, codeblock_id root, std::initializer_list<word> args,
               const options& opt);

    // ---- what a frame view calls (frame.cpp)
    [[noreturn]] void bad_slot(const frame_rec& r, frame_ref self, unsigned i) const;
    void enable(frame_rec& r, frame_ref self, thread_id t, bool from_inlet);
    void set_count(frame_rec& r, frame_ref self, thread_id t, std::uint32_t n);
    void check_live(const frame_rec& r, frame_ref self, const char* call) const {
        if (!r.live || r.gen != self.generation()) [[unlikely]]
            released(self, call);
    }
    [[noreturn]] void released(frame_ref self, const char* call) const;
    [[noreturn]] void bad_thread(const frame_rec& r, frame_ref self, thread_id t,
                                 const char* call) const;
    [[noreturn]] void undeliverable(const message& m, const char* call) const;
    [[noreturn]] void bad_element(const message& m, const char* call) const;
    [[noreturn]] void written_twice(const message& m) const;
    void send(frame_ref from, frame_ref to, inlet_id in, std::initializer_list<word> args);
    void call(frame_ref from, codeblock_id cb, int rank, inlet_id in,
              std::initializer_list<word> args);
    void ifetch(frame_ref from, istruct_ref a, std::uint32_t i, inlet_id in, word tag);
    void istore(frame_ref from, istruct_ref a, std::uint32_t i, word value);
    istruct_ref ialloc(std::uint32_t length);
    void release(frame_rec& r, frame_ref self);
    void finish(frame_ref from, word value);
    [[nodiscard]] int rank() const noexcept { return _rank; }
    [[nodiscard]] int ranks() const noexcept { return _ranks; }
    /// "frame 3.1 (codeblock 'qs') on rank 0"
    [[nodiscard]] std::string describe(frame_ref f) const;
    [[noreturn]] void fail_frame(errc code, const char* call, frame_ref f,
                                 const std::string& what) const;
    /// From a catch block of an inlet or thread (`who`, e.g. "inlet 2") of frame `f`: throws
    /// the exception being handled as an am::error naming them and keeping its text.
    [[noreturn, gnu::cold]] void threw(frame_ref f, const char* call, const std::string& who) const;

  private:
    void begin(const program& prog, const options& opt);
    void check_program(const program& prog);
    void start_root(codeblock_id root, std::initializer_list<word> args);
    void terminate();
    result finish_run();
    /// A collective of run (kind tam_run, so that a rank in another collective fails the job
    /// naming both calls) while `idle` does the rank's work; under AM_EPOCH_TIMEOUT it fails
    /// the job once the rank has waited that long with nothing to do (`phase` says where).
    void collective(const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                    const std::function<std::size_t()>& idle, const char* phase);
    [[noreturn]] void timed_out(const char* phase, double waited) const;
    std::string unsatisfied_reads(std::uint64_t& count) const;

    // scheduler
    bool step();  // one unit of work; false when there is none
    bool step_am();
    bool step_md();
    void work_until_idle();
    void poll_point();
    /// AM: the active frame still has enabled threads (local messages wait, unless enabled).
    [[nodiscard]] bool in_quantum() const noexcept {
        return _active != ~0u && !_frames[_active].cv.empty();
    }
    void take_inbox();
    void run_thread(std::uint32_t idx, thread_id t);
    // Tracing (docs/observability.md): one event per quantum, written when the next begins.
    [[gnu::cold, gnu::noinline]] void trace_thread_start(bool new_quantum, std::uint32_t idx);
    [[gnu::cold, gnu::noinline]] void trace_thread_end() noexcept;
    void trace_quantum_flush() noexcept;
    void deliver(const message& m);
    void system(const message& m);
    void allocate(const message& m);
    void serve_fetch(const message& m);
    void serve_store(const message& m);
    /// Counts a message and queues it here (dest = this rank) or sends it to `dest`.
    void post_message(int dest, const message& m, bool system_request) {
        ++_sent;
        ++_stats.messages;
        if (dest == _rank) [[likely]] {
            (system_request ? _hiq : _msgq).push_back(m);
            return;
        }
        post_remote(dest, m);
    }
    void post_remote(int dest, const message& m);
    void copy_args(message& m, std::initializer_list<word> args, const char* call,
                   frame_ref from) const;

    frame_rec& rec_of(frame_ref f, const char* call);
    frame_ref ref_of(std::uint32_t idx) const noexcept;

    // core side
    void on_arrival(const message& m);

    context& _ctx;
    core::collective _run{};  // the kind of am::tam::run's rounds
    int _rank;
    int _ranks;
    am::handler<category::short_am, word, word, word, word, word, word> _h;

    const program* _prog = nullptr;
    options _opt;
    bool _multi = false;
    unsigned _since_poll = 0;

    std::vector<frame_rec> _frames;                 // reserved up front; grows only between threads
    std::vector<std::vector<std::uint32_t>> _free;  // released frames, per codeblock
    ring<std::uint32_t> _ready;                     // AM: frames with enabled threads
    std::uint32_t _active = ~0u;                    // AM: the frame whose CV is the LCV
    std::vector<thread_id> _lcv;  // MD: the local continuation vector (threads of _md_frame)
    std::uint32_t _md_frame = ~0u;
    ring<message> _msgq;  // inlet messages (MD: the task queue)
    ring<message> _hiq;   // local system requests
    std::vector<istruct_rec> _istructs;
    word _last_frame = ~word{0};  // for counting quanta
    // The quantum being traced (start 0: none): its span, threads, codeblock and frame.
    std::uint64_t _q_start = 0, _q_end = 0, _q_threads = 0;
    std::uint32_t _q_cb = 0, _q_frame = 0;

    std::mutex _inbox_lock;
    std::vector<message> _inbox;
    std::vector<message> _inbox_taken;
    std::atomic<bool> _inbox_full{false};

    double _timeout = 0;  // config::epoch_timeout (AM_EPOCH_TIMEOUT): 0 waits forever
    std::uint32_t _wave = 0;
    std::uint64_t _wave_sums[2] = {0, 0};  // the last wave's sums (sent, handled)

    std::uint64_t _sent = 0;
    std::uint64_t _handled = 0;
    word _result = 0;
    std::uint64_t _finished = 0;
    stats _stats;
};

}  // namespace am::tam::detail
