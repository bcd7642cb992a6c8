// SPDX-License-Identifier: MIT
/// @file
/// Window active messages: the generalized, MPI-interoperable active messages of
/// "MPI-Interoperable Generalized Active Messages" (section IV), on any transport.
///
/// A **window** is a region of each rank's memory, created collectively. An **operation** is a
/// user function of the paper's Fig. 1 shape, registered collectively on a window: it sees an
/// input buffer of `num_segments` segments (sent by the origin), the **persistent** range of the
/// target's window the AM names, and an output buffer of `num_segments` segments (returned to
/// the origin), plus the index of its first segment (`segment_offset`). An **AM** (`window::am`,
/// the paper's Fig. 2 trigger) names the operation, the target, the origin's input and output
/// buffers with their per-segment layouts, the number of segments and the persistent range.
///
/// Streaming: an AM is split into pipeline units of k segments (`window_info::pipeline_unit`,
/// per-call `am_options::pipeline_unit`); the target runs the operation once per unit, as the
/// unit arrives, while later units are still in transfer; each unit's output flows back on its
/// own. The runtime may make units smaller (never below one segment) to fit the buffers.
///
/// Buffers: each target stages the units of every origin in an internal buffer of
/// `window_info::internal_buffer` bytes per origin (default 8 KiB, as in the paper); a unit
/// needs its input plus its output bytes there. When that is in use the origin reserves room in
/// the target's attached buffer (`attach`, shared by all origins) with a handshake first. A
/// segment that fits neither is an error reported by the origin's next completion call.
///
/// Completion: AMs complete at the end of an access epoch — `fence` (collective), `unlock`,
/// `unlock_all`, `flush`, `flush_all`. After it, the origin's output buffers hold every output
/// and the targets' persistent buffers every update, consistent with the target's own loads and
/// stores after the target's matching synchronisation (the fence, or a later barrier). The
/// origin's input and output buffers must stay valid and untouched until then. An AM outside an
/// epoch is an error.
///
/// Ordering (`window_info::ordering`, the paper's `am_ordering` hint): `sameop` — AMs of the same
/// operation, `diffop` — of different operations, from one origin to one target with
/// overlapping persistent ranges, and `sameam` — the units of one AM, run in issue order. The
/// default is all three; relaxed ordering lets later AMs overtake one that waits for buffer space.
///
/// Concurrency (`epoch_assert::concurrent`, the paper's MPIX_MODE_CONCURRENT_AM): without it,
/// results are as if the AMs ran in some sequential order at each target (a rank's handler
/// threads run them one at a time). With it, the AMs of that epoch may run concurrently, and —
/// since operations are equivalent on every rank — the origin runs an AM itself on the target's
/// persistent buffer when that buffer is mapped in its process (threads, shm, node peers under
/// mpi; the window's memory must then lie in the ranks' segments, see `window::allocate`), with
/// no message at all. The operation must then be safe against concurrent runs.
///
/// Thread-safety: a window is used by its rank's thread (any thread of the rank with
/// `config::thread_multiple`, each call then being atomic). Operations run on whichever thread
/// handles the AM's message (the target's, or the origin's for origin-side runs) and must not
/// call back into the window or block (an error names the call). Memory consistency: a full
/// fence before and after every operation run.
#pragma once

#include <am/context.hpp>
#include <am/error.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace am {

// ----------------------------------------------------------------------------- hints, modes

/// The `am_ordering` hint: a set of these bits (`none` relaxes all).
namespace am_order {
inline constexpr unsigned none = 0;
inline constexpr unsigned sameop = 1;  ///< AMs of one operation stay in issue order
inline constexpr unsigned diffop = 2;  ///< AMs of different operations stay in issue order
inline constexpr unsigned sameam = 4;  ///< the pipeline units of one AM run in order
inline constexpr unsigned strict = sameop | diffop | sameam;  ///< the default
/// Parses the paper's info value: "none" or a comma-separated subset of "sameop", "diffop",
/// "sameam". Throws am::error(errc::invalid_argument) naming the bad word.
unsigned parse(std::string_view value);
/// The value as the paper writes it ("sameop,diffop,sameam", "none").
std::string to_string(unsigned bits);
}  // namespace am_order

/// Assertions at the start of an epoch (`fence`, `lock`, `lock_all`).
namespace epoch_assert {
inline constexpr unsigned none = 0;
/// The paper's MPIX_MODE_CONCURRENT_AM: the AMs of this epoch may run concurrently with each
/// other, at the target or at the origin.
inline constexpr unsigned concurrent = 1;
/// `fence` only: no epoch follows (MPI_MODE_NOSUCCEED); AMs after it are errors.
inline constexpr unsigned nosucceed = 2;
}  // namespace epoch_assert

/// Window attributes, fixed at creation, the same on every rank.
struct window_info {
    unsigned ordering = am_order::strict;   ///< `am_order` bits
    std::size_t internal_buffer = 8 << 10;  ///< staging bytes per origin at each target (≥ 0)
    std::size_t pipeline_unit = 0;          ///< segments per unit; 0: as many as fit the
                                            ///< internal buffer (at least 1)
};

/// Per-AM options.
struct am_options {
    std::size_t pipeline_unit = 0;  ///< 0: the window's
};

enum class lock_type : std::uint8_t { exclusive, shared };

// ---------------------------------------------------------------------------------- layouts

/// Where one segment's elements lie in an origin buffer, in elements of the buffer's type:
/// blocks of `count` elements at `offset` from the segment's start; segment i starts at
/// i × `extent`. The target sees each segment packed (the blocks one after another).
struct segment_layout {
    struct block {
        std::size_t offset = 0, count = 0;
    };
    std::vector<block> blocks;
    std::size_t extent = 0;

    /// `n` consecutive elements per segment.
    static segment_layout contiguous(std::size_t n) { return {{{0, n}}, n}; }
    /// `count` blocks of `blocklen` elements, `stride` apart (MPI_Type_vector); the extent is
    /// `count` × `stride` unless given.
    static segment_layout strided(std::size_t count, std::size_t blocklen, std::size_t stride,
                                  std::size_t extent = 0);
    /// Arbitrary blocks (MPI_Type_indexed); the extent is the end of the last block unless given.
    static segment_layout indexed(std::vector<block> blocks, std::size_t extent = 0);
    /// Elements of one segment.
    [[nodiscard]] std::size_t elements() const noexcept;
    /// Elements of the buffer that `n` segments span (0 for n = 0; SIZE_MAX when that many
    /// elements do not fit in a std::size_t, so no buffer holds them).
    [[nodiscard]] std::size_t span_of(std::size_t n) const noexcept;
};

// ------------------------------------------------------------------------------- operations

/// One run of an operation (one pipeline unit), untyped: what the target (or the origin, for
/// origin-side runs) passes to the function. Input and output are packed segments.
struct window_call {
    const std::byte* input;           ///< num_segments × input_segment_bytes
    std::size_t input_segment_bytes;  ///< bytes of one packed input segment
    std::byte* persistent;            ///< the AM's persistent range in the target's window
    std::size_t persistent_bytes;
    std::byte* output;                 ///< num_segments × output_segment_bytes
    std::size_t output_segment_bytes;  ///< bytes of one output segment
    std::size_t num_segments;          ///< segments in this unit
    std::size_t segment_offset;        ///< index of this unit's first segment in the AM
    std::uint64_t tag;                 ///< the AM's `tag` (the C interface's type codes)
    int origin;                        ///< the rank that issued the AM
};

/// An operation's function, untyped.
using window_fn = std::function<void(const window_call&)>;

/// One run of a typed operation: spans of the unit's segments and the persistent range.
template <class In, class P, class Out>
struct window_args {
    std::span<const In> input;  ///< num_segments × input_per_segment elements
    std::size_t input_per_segment;
    std::span<P> persistent;  ///< the AM's persistent elements at the target
    std::span<Out> output;    ///< num_segments × output_per_segment elements
    std::size_t output_per_segment;
    std::size_t num_segments;    ///< segments in this unit
    std::size_t segment_offset;  ///< index of this unit's first segment in the AM
    int origin;                  ///< the rank that issued the AM

    /// Segment `i` (of this unit) of the input and output.
    [[nodiscard]] std::span<const In> in(std::size_t i) const {
        return input.subspan(i * input_per_segment, input_per_segment);
    }
    [[nodiscard]] std::span<Out> out(std::size_t i) const {
        return output.subspan(i * output_per_segment, output_per_segment);
    }
};

/// The handle of an operation registered on a window (an index into the window's table).
template <class In, class P, class Out>
struct window_op {
    std::uint32_t index = 0;
    std::uint64_t window_id = 0;
};
/// The handle of an untyped operation.
using window_op_bytes = window_op<std::byte, std::byte, std::byte>;

/// Counters of one window on this rank (both roles).
struct window_stats {
    std::uint64_t ams = 0;                ///< AMs issued here
    std::uint64_t units_sent = 0;         ///< pipeline units sent to targets
    std::uint64_t units_at_origin = 0;    ///< units run here on a mapped target window
    std::uint64_t units_run = 0;          ///< units run here as target
    std::uint64_t segments_internal = 0;  ///< segments sent through internal buffers
    std::uint64_t segments_user = 0;      ///< segments sent through attached buffers
    std::uint64_t reservations = 0;       ///< attached-buffer handshakes started here
    std::uint64_t reservations_refused = 0;
    std::uint64_t overtaken = 0;    ///< units sent before an earlier waiting unit
    std::uint64_t function_ns = 0;  ///< time in the operation's function here
};

namespace detail {
class window_state;
struct byte_layout {
    std::vector<segment_layout::block> blocks;  // in bytes
    std::size_t extent = 0;                     // bytes
};
byte_layout to_bytes(const segment_layout& l, std::size_t elem);
template <class T>
std::string window_type_name() {
    return std::string(typeid(T).name()) + ":" + std::to_string(sizeof(T));
}
}  // namespace detail

/// The description of one AM in bytes (the C interface and the typed `am` build it).
struct am_desc {
    std::uint32_t op = 0;
    int target = 0;
    const std::byte* input = nullptr;
    detail::byte_layout input_layout;  ///< per segment, in bytes of the origin buffer
    std::byte* output = nullptr;
    detail::byte_layout output_layout;  ///< per segment, in bytes of the origin buffer
    std::size_t num_segments = 0;
    std::size_t persistent_disp = 0;  ///< bytes from the window's start
    std::size_t persistent_bytes = 0;
    std::size_t pipeline_unit = 0;  ///< 0: the window's
    std::uint64_t tag = 0;
    std::size_t input_elem = 1;   ///< target input element bytes (packed input is a multiple)
    std::size_t output_elem = 1;  ///< target output element bytes
};

// ----------------------------------------------------------------------------------- window

/// A window over `memory` on every rank (collective over all ranks). Windows are created and
/// freed in the same order on every rank. Not copyable; movable.
class window {
  public:
    /// Collective: a window over this rank's `memory` (any local memory; for origin-side runs it
    /// must lie in the rank's segment). `info` must be equal on every rank (checked).
    window(context& ctx, std::span<std::byte> memory, const window_info& info = {});
    /// Collective: a window of `bytes` allocated in this rank's segment (zeroed), freed with
    /// the window: the form whose memory other ranks of the node can map.
    static window allocate(context& ctx, std::size_t bytes, const window_info& info = {});
    window(window&&) noexcept;
    window& operator=(window&&) noexcept;
    /// Frees the window (collectively) unless `free` was called; when unwinding from an
    /// exception it only releases local state (the job is failing).
    ~window();

    /// Collective: completes every AM, then releases the window on every rank (and the memory
    /// of `allocate` to the segment). A no-op when freed already.
    void free();

    [[nodiscard]] context& ctx() const noexcept;
    /// This rank's window memory.
    [[nodiscard]] std::span<std::byte> memory() const noexcept;
    [[nodiscard]] const window_info& info() const noexcept;
    /// The byte size of rank `rank`'s window.
    [[nodiscard]] std::size_t size_of(int rank) const;
    [[nodiscard]] window_stats stats() const;
    /// Whether rank `rank`'s window memory is mapped in this process (origin-side runs).
    [[nodiscard]] bool mapped(int rank) const;
    /// A stable id of the window (the same on every rank).
    [[nodiscard]] std::uint64_t id() const noexcept;

    // ---------------------------------------------------------------------------- operations

    /// Collective: registers `fn` under `name` as the window's next operation. Every rank
    /// registers equivalent operations (same name and types) in the same order; the call
    /// checks it (errc::handler_mismatch naming the ranks and both entries).
    template <class In, class P, class Out, class F>
    window_op<In, P, Out> register_op(std::string_view name, F&& fn) {
        static_assert(std::is_trivially_copyable_v<In> && std::is_trivially_copyable_v<P> &&
                      std::is_trivially_copyable_v<Out>);
        std::string sig = detail::window_type_name<In>() + "," + detail::window_type_name<P>() +
                          "," + detail::window_type_name<Out>();
        window_fn erased = [f = std::forward<F>(fn)](const window_call& c) {
            window_args<In, P, Out> a{
                {reinterpret_cast<const In*>(c.input),
                 c.num_segments * c.input_segment_bytes / sizeof(In)},
                c.input_segment_bytes / sizeof(In),
                {reinterpret_cast<P*>(c.persistent), c.persistent_bytes / sizeof(P)},
                {reinterpret_cast<Out*>(c.output),
                 c.num_segments * c.output_segment_bytes / sizeof(Out)},
                c.output_segment_bytes / sizeof(Out),
                c.num_segments,
                c.segment_offset,
                c.origin};
            f(a);
        };
        return {register_bytes(name, sig, std::move(erased), alignof(In)), id()};
    }
    /// Collective: an untyped operation; `signature` is compared across ranks with `name`.
    /// The input the function sees is aligned to `input_align` bytes (a unit that arrived in one
    /// message is then read in place, else from its staging area, aligned to 16).
    std::uint32_t register_bytes(std::string_view name, std::string_view signature, window_fn fn,
                                 std::size_t input_align = 16);

    // ---------------------------------------------------------------------------------- AMs

    /// The trigger (Fig. 2): runs `op` on `num_segments` segments at `target`, over its
    /// persistent elements [`disp`, `disp` + `count`) (elements of P from the window's start).
    /// Segment i of the input is gathered from `input` by `in_layout` and packed; the target's
    /// output segment i (`out_layout.elements()` elements) is scattered into `output` by
    /// `out_layout`. Returns at once; the AM completes at the end of the epoch. Errors
    /// (errc::invalid_argument / out_of_segment / bad_context, naming the call, the rank and the
    /// limit) leave earlier AMs unaffected and send nothing.
    template <class In, class P, class Out>
    void am(window_op<In, P, Out> op, int target, std::span<const In> input,
            const segment_layout& in_layout, std::span<Out> output,
            const segment_layout& out_layout, std::size_t num_segments, std::size_t disp,
            std::size_t count, const am_options& opt = {}) {
        check_op(op.window_id, "am::window::am");
        check_span(input.size(), in_layout, num_segments, "input");
        check_span(output.size(), out_layout, num_segments, "output");
        am_desc d;
        d.op = op.index;
        d.target = target;
        d.input = reinterpret_cast<const std::byte*>(input.data());
        d.input_layout = detail::to_bytes(in_layout, sizeof(In));
        d.output = reinterpret_cast<std::byte*>(output.data());
        d.output_layout = detail::to_bytes(out_layout, sizeof(Out));
        d.num_segments = num_segments;
        d.persistent_disp = persistent_bytes(disp, sizeof(P), "start");
        d.persistent_bytes = persistent_bytes(count, sizeof(P), "length");
        d.pipeline_unit = opt.pipeline_unit;
        d.input_elem = sizeof(In);
        d.output_elem = sizeof(Out);
        am_bytes(d);
    }
    /// The trigger with contiguous segments of `in_per_segment` and `out_per_segment` elements.
    template <class In, class P, class Out>
    void am(window_op<In, P, Out> op, int target, std::span<const In> input,
            std::size_t in_per_segment, std::span<Out> output, std::size_t out_per_segment,
            std::size_t num_segments, std::size_t disp, std::size_t count,
            const am_options& opt = {}) {
        am(op, target, input, segment_layout::contiguous(in_per_segment), output,
           segment_layout::contiguous(out_per_segment), num_segments, disp, count, opt);
    }
    /// The trigger in bytes (the C interface). Same rules.
    void am_bytes(const am_desc& d);

    // ------------------------------------------------------------------------------- epochs

    /// Collective: completes every AM issued by any rank since the previous fence (their
    /// outputs are in place and their updates visible), then opens the next epoch with
    /// `assert` (`epoch_assert` bits) unless it has `nosucceed`.
    void fence(unsigned assert = epoch_assert::none);
    /// Opens a passive-target epoch at `target`: waits until the target grants the lock
    /// (exclusive: no other lock; shared: only shared ones).
    void lock(int target, lock_type type = lock_type::exclusive,
              unsigned assert = epoch_assert::none);
    /// Completes this rank's AMs to `target`, then releases its lock.
    void unlock(int target);
    /// A shared lock at every rank.
    void lock_all(unsigned assert = epoch_assert::none);
    void unlock_all();
    /// Completes this rank's AMs to `target` (all targets) without ending the epoch.
    void flush(int target);
    void flush_all();

    // ------------------------------------------------------------------------------ buffers

    /// Hands the runtime `buffer` (local memory, aligned to 16 bytes or better) to stage
    /// incoming AMs of all origins after the internal buffers. One at a time; errc::
    /// invalid_argument when one is attached already or `buffer` is empty.
    void attach(std::span<std::byte> buffer);
    /// Takes the attached buffer back after every AM staged in it has run (polls until then).
    /// Reservations that arrive later are refused (the origins wait for internal buffers).
    /// Returns the buffer (empty when none was attached).
    std::span<std::byte> detach();

  private:
    explicit window(std::unique_ptr<detail::window_state> s) noexcept;
    void check_op(std::uint64_t window_id, const char* call) const;
    void check_span(std::size_t have, const segment_layout& l, std::size_t n,
                    const char* what) const;
    std::size_t persistent_bytes(std::size_t elements, std::size_t elem, const char* what) const;
    std::unique_ptr<detail::window_state> _s;
};

}  // namespace am
