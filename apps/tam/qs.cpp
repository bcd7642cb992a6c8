// SPDX-License-Identifier: MIT
// Quicksort (QS), the J-Machine study's argument 100: sorts n pseudo-random integers, as Id
// would: every call partitions its part of an I-structure into a new I-structure and calls
// itself on the two halves (frames spread over the ranks); a parent joins its children with
// an entry count. The sorted values go into one result I-structure (each call stores its pivot
// at its final place, destination-passing), which a check frame then reads in order.
//   qs_main  (rank 0)  generates the input into an I-structure (a thread per element), calls
//                      qs on it, then qs_check on the result; finishes with the check's value
//   qs       (any)     args: caller, A, (base, n, off), OUT. Fetches pivot A[base], then
//                      A[base+1 .. base+n-1] (four fetches in flight) into a new P, in order:
//                      the values below the pivot from the front, the others from the back
//                      (reversed); stores the pivot at OUT[off + #below]; calls qs on both
//                      parts of P (frames on other ranks); joins them
//   qs_check (rank 1 % ranks)  returns Σ (i+1)·out[i], complemented if out is not sorted
#include <am/error.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tam_apps.hpp"
#include "tam_apps_common.hpp"

namespace tam_apps {

namespace {

using namespace detail;

constexpr am::tam::codeblock_id cb_main = 0;
constexpr am::tam::codeblock_id cb_qs = 1;
constexpr am::tam::codeblock_id cb_check = 2;

/// Every caller of qs receives "child done" on this inlet.
constexpr am::tam::inlet_id in_child_done = 1;
/// Fetches in flight in the partition loop: one slot and one thread each (qs_check has its
/// own, detail::check_window).
constexpr unsigned window = 4;

/// The input: a 64-bit linear congruential generator (Knuth's MMIX constants), top 31 bits.
constexpr std::uint64_t seed = 0x2545F4914F6CDD1DULL;
constexpr std::uint64_t lcg(std::uint64_t x) {
    return x * 6364136223846793005ULL + 1442695040888963407ULL;
}
constexpr std::uint64_t value_of(std::uint64_t x) {
    return x >> 33;
}

/// (base, n, off) in one argument word, 21 bits each (n < 2^21).
constexpr unsigned field_bits = 21;
constexpr word field_mask = (word{1} << field_bits) - 1;
constexpr word pack(word base, word n, word off) {
    return base | n << field_bits | off << (2 * field_bits);
}

// ---- qs_main --------------------------------------------------------------------------------
enum : unsigned { m_n, m_a, m_out, m_k, m_x, m_value, m_slots };
enum : am::tam::inlet_id { m_in_args, m_in_sorted = in_child_done, m_in_checked };
enum : am::tam::thread_id { m_t_start, m_t_gen, m_t_sort, m_t_check, m_t_done };

void main_start(frame& f) {
    const auto n = static_cast<std::uint32_t>(f.slot(m_n));
    f.slot(m_a) = f.ialloc(n).as_word();
    f.slot(m_out) = f.ialloc(n).as_word();
    f.slot(m_k) = 0;
    f.slot(m_x) = seed;
    f.fork(m_t_gen);
}
// for k in 0..n-1: A[k] = next random value
void main_gen(frame& f) {
    const word k = f.slot(m_k);
    const std::uint64_t x = lcg(f.slot(m_x));
    f.istore(istruct_ref::from(f.slot(m_a)), static_cast<std::uint32_t>(k), value_of(x));
    f.slot(m_x) = x;
    f.slot(m_k) = k + 1;
    f.fork(k + 1 < f.slot(m_n) ? m_t_gen : m_t_sort);
}
void main_sort(frame& f) {
    f.call(cb_qs, 0, 0, {f.self().as_word(), f.slot(m_a), pack(0, f.slot(m_n), 0), f.slot(m_out)});
}
void main_check(frame& f) {
    f.call(cb_check, 1 % f.ranks(), 0, {f.self().as_word(), f.slot(m_out), f.slot(m_n)});
}

// ---- qs -------------------------------------------------------------------------------------
enum : unsigned {
    q_caller,
    q_a,
    q_base,
    q_n,
    q_off,
    q_out,
    q_pivot,
    q_p,
    q_lo,
    q_hi,
    q_next,
    q_val,
    q_slots = q_val + window
};
enum : am::tam::inlet_id { q_in_args, q_in_child = in_child_done, q_in_pivot, q_in_value };
enum : am::tam::thread_id { q_t_start, q_t_have_pivot, q_t_spawn, q_t_join, q_t_place };

void qs_fetch(frame& f, unsigned j) {
    const word i = f.slot(q_next);
    f.slot(q_next) = i + 1;
    f.ifetch(istruct_ref::from(f.slot(q_a)), static_cast<std::uint32_t>(i), q_in_value, j);
}
void qs_start(frame& f) {
    f.ifetch(istruct_ref::from(f.slot(q_a)), static_cast<std::uint32_t>(f.slot(q_base)),
             q_in_pivot);
}
void qs_have_pivot(frame& f) {
    const word n = f.slot(q_n);
    if (n == 1) {  // a leaf: its one value is in place
        f.istore(istruct_ref::from(f.slot(q_out)), static_cast<std::uint32_t>(f.slot(q_off)),
                 f.slot(q_pivot));
        f.send(frame_ref::from(f.slot(q_caller)), in_child_done, {});
        f.release();
        return;
    }
    f.slot(q_p) = f.ialloc(static_cast<std::uint32_t>(n - 1)).as_word();
    f.slot(q_lo) = 0;
    f.slot(q_hi) = n - 1;  // one past the last free place from the back
    f.slot(q_next) = f.slot(q_base) + 1;
    for (unsigned j = 0; j < window && j + 1 < n; ++j) qs_fetch(f, j);
    f.fork(q_t_place);  // the first element has no predecessor
}
// One element of the partition loop, in index order (so P is a stable partition and the
// recursion the same under any policy and rank count): place<J> handles the elements i ≡ J
// (mod window) and needs two events, its element's arrival (inlet) and the placing of element
// i-1 (fork from place<J-1>).
template <unsigned J>
void qs_place(frame& f) {
    const word v = f.slot(q_val + J);
    const istruct_ref p = istruct_ref::from(f.slot(q_p));
    const word pos = v < f.slot(q_pivot) ? f.slot(q_lo)++ : --f.slot(q_hi);
    f.istore(p, static_cast<std::uint32_t>(pos), v);
    if (f.slot(q_next) < f.slot(q_base) + f.slot(q_n)) qs_fetch(f, J);
    const word placed = f.slot(q_lo) + (f.slot(q_n) - 1 - f.slot(q_hi));
    f.fork(placed + 1 < f.slot(q_n) ? static_cast<am::tam::thread_id>(q_t_place + (J + 1) % window)
                                    : am::tam::thread_id{q_t_spawn});
}
void qs_call(frame& f, unsigned side, word base, word n, word off) {
    if (n == 0) {
        f.fork(q_t_join);  // nothing to sort on this side
        return;
    }
    const int rank = (f.rank() * 2 + 1 + static_cast<int>(side)) % f.ranks();
    f.call(cb_qs, rank, q_in_args,
           {f.self().as_word(), f.slot(q_p), pack(base, n, off), f.slot(q_out)});
}
// All n-1 values are placed: the pivot's place is known; sort both sides.
void qs_spawn(frame& f) {
    const word below = f.slot(q_lo);
    const word off = f.slot(q_off);
    f.istore(istruct_ref::from(f.slot(q_out)), static_cast<std::uint32_t>(off + below),
             f.slot(q_pivot));
    qs_call(f, 0, 0, below, off);
    qs_call(f, 1, below, f.slot(q_n) - 1 - below, off + below + 1);
}
void qs_join(frame& f) {
    f.send(frame_ref::from(f.slot(q_caller)), in_child_done, {});
    f.release();
}
void qs_in_args(frame& f, std::span<const word> a) {
    f.slot(q_caller) = a[0];
    f.slot(q_a) = a[1];
    f.slot(q_base) = a[2] & field_mask;
    f.slot(q_n) = a[2] >> field_bits & field_mask;
    f.slot(q_off) = a[2] >> (2 * field_bits);
    f.slot(q_out) = a[3];
    f.post(q_t_start);
}
void qs_in_pivot(frame& f, std::span<const word> a) {
    f.slot(q_pivot) = a[0];
    f.post(q_t_have_pivot);
}
void qs_in_value(frame& f, std::span<const word> a) {
    const auto j = static_cast<unsigned>(a[1]);
    f.slot(q_val + j) = a[0];
    f.post(static_cast<am::tam::thread_id>(q_t_place + j));
}

am::tam::program build() {
    static_assert(window == 4, "one place thread per window position");
    am::tam::program p;
    p.add(codeblock_def{
        "qs_main",
        m_slots,
        {{main_start, 1, "start"},
         {main_gen, 1, "gen"},
         {main_sort, 1, "sort"},
         {main_check, 1, "check"},
         {finish_with_slot<m_value>, 1, "done"}},
        {store_and_post<m_n, m_t_start>, post_only<m_t_check>, store_and_post<m_value, m_t_done>}});
    p.add(codeblock_def{"qs",
                        q_slots,
                        {{qs_start, 1, "start"},
                         {qs_have_pivot, 1, "have_pivot"},
                         {qs_spawn, 1, "spawn"},
                         {qs_join, 2, "join"},
                         {qs_place<0>, 2, "place0"},
                         {qs_place<1>, 2, "place1"},
                         {qs_place<2>, 2, "place2"},
                         {qs_place<3>, 2, "place3"}},
                        {qs_in_args, post_only<q_t_join>, qs_in_pivot, qs_in_value}});
    p.add(in_order_check_codeblock<m_in_checked>("qs_check"));
    return p;
}

void check_arg(int n) {
    if (n < 1 || static_cast<word>(n) > field_mask)
        throw am::error(am::errc::invalid_argument,
                        "tam_apps::qs: n must be in [1, 2^21 - 1], not " + std::to_string(n));
}

am::tam::result run(am::context& ctx, int n, const am::tam::options& opt) {
    check_arg(n);
    const am::tam::program p = build();
    return am::tam::run(ctx, p, cb_main, {static_cast<word>(n)}, opt);
}

// The reference's quicksort: first element as pivot, Lomuto partition, in place.
void quicksort(std::vector<std::uint64_t>& a, std::size_t lo, std::size_t hi) {
    while (hi - lo > 1) {
        const std::uint64_t pivot = a[lo];
        std::size_t below = lo;
        for (std::size_t i = lo + 1; i < hi; ++i)
            if (a[i] < pivot) std::swap(a[i], a[++below]);
        std::swap(a[lo], a[below]);
        quicksort(a, lo, below);
        lo = below + 1;
    }
}

}  // namespace

[[gnu::noinline]] am::tam::word qs_reference(int n) {
    check_arg(n);
    const auto size = static_cast<std::size_t>(n);
    std::vector<std::uint64_t> a(size);
    std::uint64_t x = seed;
    for (std::size_t k = 0; k < size; ++k) {
        x = lcg(x);
        a[k] = value_of(x);
    }
    quicksort(a, 0, size);
    return in_order_checksum(a);
}

extern const app qs_app;
const app qs_app{"qs", "quicksort", 100, 400000, run, qs_reference};

}  // namespace tam_apps
