// SPDX-License-Identifier: MIT
// Internal to apps/tam: the pieces the six TAM programs share (the vocabulary of
// <am/tam.hpp>, argument packing, the inlets and threads every main codeblock has, the
// in-order checksum reader of qs and ss). Threads and inlets are templates over their slot,
// thread and inlet indices, so each program still hands plain function pointers to its
// codeblocks and performs exactly the operations it did with its own copies.
#pragma once

#include <am/tam.hpp>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tam_apps::detail {

using am::tam::codeblock_def;
using am::tam::frame;
using am::tam::frame_ref;
using am::tam::istruct_ref;
using am::tam::word;

// ---- argument words -------------------------------------------------------------------------

/// An index and n travel together in one argument word (low and high 32 bits).
inline word pack(unsigned i, unsigned n) {
    return word{i} | word{n} << 32;
}
inline unsigned low(word w) {
    return static_cast<unsigned>(w & 0xffffffffu);
}
inline unsigned high(word w) {
    return static_cast<unsigned>(w >> 32);
}

/// std::invalid_argument "<app>: the argument must be at least 1" unless n >= 1.
inline void require_positive(int n, const char* app) {
    if (n < 1) throw std::invalid_argument(std::string(app) + ": the argument must be at least 1");
}

// ---- inlets and threads of the shape every program repeats ---------------------------------

/// Inlet: the message's first word into Slot, then post Thread.
template <unsigned Slot, am::tam::thread_id Thread>
void store_and_post(frame& f, std::span<const word> a) {
    f.slot(Slot) = a[0];
    f.post(Thread);
}
/// Inlet: a message that only counts (a child is done): post Thread.
template <am::tam::thread_id Thread>
void post_only(frame& f, std::span<const word>) {
    f.post(Thread);
}
/// Inlet: adds the message's double to the double in Slot, then posts Thread.
template <unsigned Slot, am::tam::thread_id Thread>
void add_double_and_post(frame& f, std::span<const word> a) {
    f.put(Slot, f.get<double>(Slot) + am::tam::from_word<double>(a[0]));
    f.post(Thread);
}
/// Thread: the program's answer is the word in Slot.
template <unsigned Slot>
void finish_with_slot(frame& f) {
    f.finish(f.slot(Slot));
    f.release();
}
/// Thread: the program's answer is the (integral) double in Slot, as a 64-bit integer.
template <unsigned Slot>
void finish_with_integral_double(frame& f) {
    f.finish(am::tam::to_word(static_cast<std::int64_t>(f.get<double>(Slot))));
    f.release();
}
/// Inlet of a per-row frame called with {parent, directory, pack(i, n)}.
template <unsigned Parent, unsigned Dir, unsigned I, unsigned N, am::tam::thread_id Start>
void parent_dir_row_args(frame& f, std::span<const word> a) {
    f.slot(Parent) = a[0];
    f.slot(Dir) = a[1];
    f.slot(I) = low(a[2]);
    f.slot(N) = high(a[2]);
    f.post(Start);
}

// ---- the in-order checksum reader (qs_check, ss_check) --------------------------------------
// Called with {caller, array, n}: reads array[0 .. n-1] in order, `check_window` fetches in
// flight, and sends Σ (i+1)·array[i] (complemented unless the array is non-decreasing) to the
// caller's inlet Reply. consume<J> handles the elements i ≡ J (mod check_window); it needs two
// events: its element has arrived (inlet) and element i-1 has been consumed (fork from
// consume<J-1>).

constexpr unsigned check_window = 4;

namespace check {
enum : unsigned { c_caller, c_array, c_n, c_pos, c_sum, c_prev, c_sorted, c_val };
enum : am::tam::inlet_id { c_in_args, c_in_value };
enum : am::tam::thread_id { c_t_start, c_t_report, c_t_consume };

inline void fetch(frame& f, word i, unsigned j) {
    f.ifetch(istruct_ref::from(f.slot(c_array)), static_cast<std::uint32_t>(i), c_in_value, j);
}
inline void start(frame& f) {
    for (unsigned j = 0; j < check_window && j < f.slot(c_n); ++j) fetch(f, j, j);
    f.fork(c_t_consume);  // element 0 has no predecessor
}
template <unsigned J>
void consume(frame& f) {
    const word i = f.slot(c_pos);
    const word v = f.slot(c_val + J);
    if (i > 0 && v < f.slot(c_prev)) f.slot(c_sorted) = 0;
    f.slot(c_sum) += (i + 1) * v;
    f.slot(c_prev) = v;
    f.slot(c_pos) = i + 1;
    if (i + check_window < f.slot(c_n)) fetch(f, i + check_window, J);
    f.fork(i + 1 < f.slot(c_n)
               ? static_cast<am::tam::thread_id>(c_t_consume + (J + 1) % check_window)
               : am::tam::thread_id{c_t_report});
}
template <am::tam::inlet_id Reply>
void report(frame& f) {
    const word sum = f.slot(c_sum);
    f.send(frame_ref::from(f.slot(c_caller)), Reply, {f.slot(c_sorted) ? sum : ~sum});
    f.release();
}
inline void in_args(frame& f, std::span<const word> a) {
    f.slot(c_caller) = a[0];
    f.slot(c_array) = a[1];
    f.slot(c_n) = a[2];
    f.slot(c_pos) = 0;
    f.slot(c_sum) = 0;
    f.slot(c_sorted) = 1;
    f.post(c_t_start);
}
inline void in_value(frame& f, std::span<const word> a) {
    const auto j = static_cast<unsigned>(a[1]);
    f.slot(c_val + j) = a[0];
    f.post(static_cast<am::tam::thread_id>(c_t_consume + j));
}
}  // namespace check

/// The codeblock `name` of the in-order checksum reader, replying to inlet Reply.
template <am::tam::inlet_id Reply>
codeblock_def in_order_check_codeblock(std::string name) {
    static_assert(check_window == 4, "one consume thread per window position");
    return codeblock_def{std::move(name),
                         check::c_val + check_window,
                         {{check::start, 1, "start"},
                          {check::report<Reply>, 1, "report"},
                          {check::consume<0>, 2, "consume0"},
                          {check::consume<1>, 2, "consume1"},
                          {check::consume<2>, 2, "consume2"},
                          {check::consume<3>, 2, "consume3"}},
                         {check::in_args, check::in_value}};
}

/// The sequential references' check: Σ (i+1)·a[i], complemented unless a is non-decreasing.
inline word in_order_checksum(const std::vector<std::uint64_t>& a) {
    std::uint64_t sum = 0;
    bool sorted = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (i > 0 && a[i] < a[i - 1]) sorted = false;
        sum += (i + 1) * a[i];
    }
    return sorted ? sum : ~sum;
}

}  // namespace tam_apps::detail
