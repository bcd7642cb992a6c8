// SPDX-License-Identifier: MIT
/// @file
/// TAM, the Threaded Abstract Machine (Culler et al.; "Active Messages", 1992, section 3.3), on
/// am's active messages, with the two dispatch policies that "TAM on the J-Machine: Active
/// Messages vs message-driven dispatch" compares. docs/tam.md explains the model.
///
/// A **program** is a list of **codeblocks** (what a TAM compiler emits for one function). A
/// codeblock has **threads** — functions that run to completion and may fork threads of their
/// frame, send to inlets of any frame, call codeblocks (allocate frames, on any rank), fetch
/// and store I-structure elements, and release their frame — and **inlets** — message handlers
/// that store a message's words into frame slots and post threads. A **frame** (activation)
/// holds the codeblock's slots (64-bit words), one entry count per thread and a continuation
/// vector (CV) of enabled threads. A thread with entry count n > 1 is *synchronising*: it is
/// enabled by the n-th fork/post, and its count then starts again at n (`set_count` changes it).
///
/// **I-structures** are heap arrays of words with split-phase access: `ifetch` sends a request
/// to the element's rank and the value comes back to an inlet of the fetching frame, at once
/// if the element is written, else when it is (the reader is deferred). Writing an element
/// twice is an error; a read that is never satisfied is reported when the program ends.
///
/// **Policies** (`options::dispatch`), as the J-Machine paper's section 2 and Fig. 1 define them:
/// - `active_messages`: an inlet runs when its message arrives, at the next poll point (the top
///   of every thread); the threads it posts go to its frame's CV and the frame to the rank's
///   ready queue. The scheduler activates the frame at the head of the ready queue and runs its
///   CV (then the local continuation vector, LCV) until it is empty: one quantum.
/// - `message_driven`: the message queue is the task queue. No inlet runs until the LCV is
///   empty; then the next message's inlet runs, the threads it posts go straight onto the LCV,
///   and they (with the threads they fork) run before the next message.
/// In both, system work — frame allocation, I-structure fetch and store — runs at high priority,
/// at the next poll point.
///
/// Thread-safety: a program runs on the rank's own thread (TAM threads are not OS threads);
/// `run` is collective. Frames, slots and I-structures belong to one rank and are touched only
/// by threads and inlets of that rank.
#pragma once

#include <am/context.hpp>

#include <bit>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace am::tam {

/// A TAM value: slots, message arguments and I-structure elements are 64-bit words.
using word = std::uint64_t;

/// A value of at most 8 bytes (int, double, a ref) as a word, and back.
template <class T>
[[nodiscard]] constexpr word to_word(T v) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(word),
                  "am::tam: a word holds a trivially copyable value of at most 8 bytes");
    if constexpr (sizeof(T) == sizeof(word)) {
        return std::bit_cast<word>(v);
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        return static_cast<word>(static_cast<std::int64_t>(v));
    } else {
        return static_cast<word>(v);
    }
}
template <class T>
[[nodiscard]] constexpr T from_word(word w) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(word),
                  "am::tam: a word holds a trivially copyable value of at most 8 bytes");
    if constexpr (sizeof(T) == sizeof(word)) {
        return std::bit_cast<T>(w);
    } else {
        return static_cast<T>(w);
    }
}

/// The most argument words one message (inlet, call, fetch reply) carries.
inline constexpr unsigned max_args = 4;

/// A frame anywhere in the job: rank, slot in the rank's frame table, generation (so a
/// reference to a released frame is caught; a slot retires rather than wrap its 16-bit
/// generation). Passed in messages as one word.
struct frame_ref {
    word bits = ~word{0};
    [[nodiscard]] int rank() const noexcept { return static_cast<int>(bits >> 48); }
    [[nodiscard]] std::uint32_t index() const noexcept { return static_cast<std::uint32_t>(bits); }
    [[nodiscard]] std::uint16_t generation() const noexcept {
        return static_cast<std::uint16_t>(bits >> 32);
    }
    [[nodiscard]] bool valid() const noexcept { return bits != ~word{0}; }
    [[nodiscard]] word as_word() const noexcept { return bits; }
    static frame_ref from(word w) noexcept { return frame_ref{w}; }
    friend bool operator==(frame_ref, frame_ref) = default;
};

/// An I-structure (array of words on one rank). Passed in messages as one word.
struct istruct_ref {
    word bits = ~word{0};
    [[nodiscard]] int rank() const noexcept { return static_cast<int>(bits >> 48); }
    [[nodiscard]] std::uint32_t id() const noexcept { return static_cast<std::uint32_t>(bits); }
    [[nodiscard]] bool valid() const noexcept { return bits != ~word{0}; }
    [[nodiscard]] word as_word() const noexcept { return bits; }
    static istruct_ref from(word w) noexcept { return istruct_ref{w}; }
    friend bool operator==(istruct_ref, istruct_ref) = default;
};

class frame;
/// A thread: runs to completion on its frame.
using thread_fn = void (*)(frame& f);
/// An inlet: stores a message's words (`args`, at most max_args) into slots and posts threads.
using inlet_fn = void (*)(frame& f, std::span<const word> args);

/// Thread and inlet indices within a codeblock; codeblock indices within a program.
using thread_id = std::uint16_t;
using inlet_id = std::uint16_t;
using codeblock_id = std::uint16_t;

struct thread_def {
    thread_fn fn = nullptr;
    /// Forks/posts needed to enable it: 1 = non-synchronising (enabled by every fork/post).
    std::uint32_t entry = 1;
    const char* name = "";
};

struct codeblock_def {
    std::string name;
    unsigned slots = 0;               // words of the frame
    std::vector<thread_def> threads;  // at most 65535
    std::vector<inlet_fn> inlets;     // at most 65535
};

/// The codeblocks of a TAM program. Build the same program, in the same order, on every rank
/// (`run` checks this).
class program {
  public:
    /// Adds a codeblock; its id is its position. am::error (invalid_argument) on an empty name,
    /// a null thread or inlet, or more than 65535 threads, inlets or codeblocks.
    codeblock_id add(codeblock_def cb);
    [[nodiscard]] const codeblock_def& at(codeblock_id id) const { return _codeblocks.at(id); }
    [[nodiscard]] std::size_t size() const noexcept { return _codeblocks.size(); }

  private:
    std::vector<codeblock_def> _codeblocks;
};

enum class policy : std::uint8_t { active_messages, message_driven };
/// "am" or "md" (also "active_messages", "message_driven"); am::error otherwise.
[[nodiscard]] policy parse_policy(std::string_view text);
[[nodiscard]] const char* to_string(policy p) noexcept;

struct options {
    policy dispatch = policy::active_messages;
    /// Threads between two polls of the core when the job has more than one rank (the J-Machine
    /// AM implementation enables interrupts at the top of every thread: 1). On one rank nothing
    /// arrives from outside, and the core is not polled while there is work.
    unsigned poll_every = 1;
    /// Messages a rank sends itself (local I-structure fetches and their replies, local calls
    /// and sends) model a network: under `active_messages` they arrive when the running quantum
    /// ends — the J-Machine study's "unenabled" AM version, whose uniprocessor runs model a
    /// multiprocessor (its section 2.4). `enabled = true` serves them at the next poll point,
    /// inside the quantum, as its "enabled" version does (larger quanta on one rank).
    /// `message_driven` is not affected: its inlets wait for the LCV to empty either way.
    bool enabled = false;
};

/// What one rank's machine did in a run (`run` also returns the sum over all ranks).
struct stats {
    std::uint64_t messages = 0;         // inlet messages and system requests sent (local too)
    std::uint64_t remote_messages = 0;  // of them, to another rank
    std::uint64_t inlets = 0;           // inlets run
    std::uint64_t threads = 0;          // threads run
    std::uint64_t quanta = 0;           // runs of threads of one frame without a switch of frame
    std::uint64_t frames = 0;           // frames allocated
    std::uint64_t released = 0;         // frames released
    std::uint64_t fetches = 0;          // I-structure fetches served
    std::uint64_t deferred = 0;         // of them, deferred until the element was written
    std::uint64_t stores = 0;           // I-structure stores served
    /// Threads per quantum (TPQ).
    [[nodiscard]] double tpq() const noexcept {
        return quanta ? static_cast<double>(threads) / static_cast<double>(quanta) : 0.0;
    }
};

struct result {
    word value = 0;         // the value the program passed to frame::finish
    bool finished = false;  // whether a thread called finish
    stats local;            // this rank
    stats total;            // every rank
};

/// Runs `prog` on every rank: allocates a frame of `root` on rank 0, delivers `args` to its
/// inlet 0, and runs the TAM scheduler on every rank until no rank has work and no message is
/// in flight (termination detection over all ranks). Collective; not from a handler.
/// am::error: programs that differ between ranks; more than max_args arguments; and the
/// program's own errors (frame::...): a thread or inlet index out of range, a message to a
/// released frame, a frame released twice, an I-structure element written twice or out of
/// range, and, when the program has ended, I-structure reads never satisfied (naming the
/// element and the reading frame, codeblock and rank, on every rank that has them); an
/// exception from an inlet or thread, as an am::error naming it and its frame. Its collectives
/// are of kind am::tam::run (collective_mismatch against any other collective); under
/// AM_EPOCH_TIMEOUT, errc::timeout once a rank waited that long in one with nothing to do.
result run(context& ctx, const program& prog, codeblock_id root, std::initializer_list<word> args,
           const options& opt = {});

/// The view a thread or an inlet has of its frame, and what it may do (an inlet only touches
/// slots and posts threads; the other calls are for threads and refuse an inlet).
class frame {
  public:
    /// Slot `i` of the frame (am::error if out of range). Read and written freely by the
    /// frame's threads and inlets (the program synchronises them with entry counts). The
    /// reference is valid while the thread or inlet runs.
    [[nodiscard]] word& slot(unsigned i) {
        if (i >= _nslots) [[unlikely]]
            bad_slot(i);
        return _slots[i];
    }
    template <class T>
    [[nodiscard]] T get(unsigned i) {
        return from_word<T>(slot(i));
    }
    template <class T>
    void put(unsigned i, T v) {
        slot(i) = to_word(v);
    }

    /// Decrements thread t's entry count; when it reaches 0 (it then starts again at the
    /// thread's entry) the thread is enabled. From a thread: onto the LCV. From an inlet: per
    /// policy (the frame's CV and the ready queue, or the LCV).
    void fork(thread_id t);
    void post(thread_id t) { fork(t); }
    /// Sets thread t's remaining entry count to n ≥ 1 (a join whose count is known only at run
    /// time): the n-th fork/post from now enables it, and its count then starts again at the
    /// thread's declared entry. Works for synchronising and non-synchronising threads.
    void set_count(thread_id t, std::uint32_t n);

    /// Sends `args` to inlet `in` of frame `to` (any rank). Threads only.
    void send(frame_ref to, inlet_id in, std::initializer_list<word> args);
    /// Allocates a frame of codeblock `cb` on rank `rank` and delivers `args` to its inlet `in`
    /// (frame allocation is a system request; the callee learns its caller from its args).
    void call(codeblock_id cb, int rank, inlet_id in, std::initializer_list<word> args);
    /// Split-phase read of element `i` of `a`: inlet `in` of this frame later receives
    /// {value, tag}. Threads only.
    void ifetch(istruct_ref a, std::uint32_t i, inlet_id in, word tag = 0);
    /// Writes element `i` of `a` (once; waiting readers get the value). Threads only.
    void istore(istruct_ref a, std::uint32_t i, word value);
    /// A new I-structure of `length` empty elements on this rank. Threads only.
    istruct_ref ialloc(std::uint32_t length);
    /// Releases this frame; nothing may run on it afterwards (am::error if threads of it are
    /// still enabled, or on a second release). Threads only.
    void release();
    /// Ends the program with `value` (returned by run on every rank). Threads only; once.
    void finish(word value);

    [[nodiscard]] frame_ref self() const noexcept { return _ref; }
    [[nodiscard]] int rank() const noexcept;
    [[nodiscard]] int ranks() const noexcept;
    [[nodiscard]] const std::string& codeblock_name() const noexcept;

  private:
    friend struct frame_access;
    frame() = default;
    [[noreturn]] void bad_slot(unsigned i) const;
    word* _slots = nullptr;  // the frame's slots (they never move while the frame lives)
    std::uint32_t _nslots = 0;
    bool _inlet = false;
    frame_ref _ref;
    void* _machine = nullptr;
    void* _rec = nullptr;
};

}  // namespace am::tam
