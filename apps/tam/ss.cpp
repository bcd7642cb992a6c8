// SPDX-License-Identifier: MIT
// Selection sort (SS), the J-Machine study's argument 100: sorts n integers that start in
// reverse order. As in the paper, the whole execution makes three procedure calls — main,
// sort and check — so nearly every thread runs in the one frame of `ss_sort`, whose slots hold
// the array; the loops are threads that fork each other (two threads per comparison).
//   ss_main  (rank 0)          calls ss_sort, then ss_check on the array it returns
//   ss_sort  (rank 1 % ranks)  fills the array (n, n-1, ..., 1), sorts it in its slots, writes
//                              it into a new I-structure and sends its ref to ss_main
//   ss_check (rank 2 % ranks)  reads the I-structure in order (split-phase, four fetches in
//                              flight) and returns Σ (i+1)·a[i], complemented if a[i] > a[i+1]
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
constexpr am::tam::codeblock_id cb_sort = 1;
constexpr am::tam::codeblock_id cb_check = 2;

// ---- ss_main: slots, inlets, threads -------------------------------------------------------
enum : unsigned { m_n, m_array, m_value, m_slots };
enum : am::tam::inlet_id { m_in_args, m_in_sorted, m_in_checked };
enum : am::tam::thread_id { m_t_start, m_t_check, m_t_done };

void main_start(frame& f) {
    f.call(cb_sort, 1 % f.ranks(), 0, {f.self().as_word(), f.slot(m_n)});
}
void main_check(frame& f) {
    f.call(cb_check, 2 % f.ranks(), 0, {f.self().as_word(), f.slot(m_array), f.slot(m_n)});
}

// ---- ss_sort: the array is slots s_a .. s_a + n - 1 ----------------------------------------
enum : unsigned { s_caller, s_n, s_i, s_j, s_min, s_k, s_out, s_a };
enum : am::tam::thread_id { s_t_fill, s_t_outer, s_t_inner_test, s_t_inner, s_t_swap, s_t_emit };

word& elem(frame& f, word i) {
    return f.slot(s_a + static_cast<unsigned>(i));
}

// for k in 0..n-1: a[k] = n - k
void sort_fill(frame& f) {
    const word k = f.slot(s_k);
    elem(f, k) = f.slot(s_n) - k;
    f.slot(s_k) = k + 1;
    if (k + 1 < f.slot(s_n)) {
        f.fork(s_t_fill);
    } else {
        f.slot(s_i) = 0;
        f.fork(s_t_outer);
    }
}
// for i in 0..n-2: find the least of a[i..n-1] (inner), swap it into a[i] (swap)
void sort_outer(frame& f) {
    const word i = f.slot(s_i);
    if (i + 1 < f.slot(s_n)) {
        f.slot(s_min) = i;
        f.slot(s_j) = i + 1;
        f.fork(s_t_inner_test);
    } else {
        f.slot(s_out) = f.ialloc(static_cast<std::uint32_t>(f.slot(s_n))).as_word();
        f.slot(s_k) = 0;
        f.fork(s_t_emit);
    }
}
// for j in i+1..n-1: the loop's test and its body are threads, as a TAM compiler emits them
void sort_inner_test(frame& f) {
    f.fork(f.slot(s_j) < f.slot(s_n) ? s_t_inner : s_t_swap);
}
void sort_inner(frame& f) {
    const word j = f.slot(s_j);
    if (elem(f, j) < elem(f, f.slot(s_min))) f.slot(s_min) = j;
    f.slot(s_j) = j + 1;
    f.fork(s_t_inner_test);
}
void sort_swap(frame& f) {
    const word i = f.slot(s_i);
    std::swap(elem(f, i), elem(f, f.slot(s_min)));
    f.slot(s_i) = i + 1;
    f.fork(s_t_outer);
}
// for k in 0..n-1: out[k] = a[k]; then the caller gets out
void sort_emit(frame& f) {
    const word k = f.slot(s_k);
    const istruct_ref out = istruct_ref::from(f.slot(s_out));
    f.istore(out, static_cast<std::uint32_t>(k), elem(f, k));
    f.slot(s_k) = k + 1;
    if (k + 1 < f.slot(s_n)) {
        f.fork(s_t_emit);
    } else {
        f.send(frame_ref::from(f.slot(s_caller)), m_in_sorted, {out.as_word()});
        f.release();
    }
}
void sort_in_args(frame& f, std::span<const word> a) {
    f.slot(s_caller) = a[0];
    f.slot(s_n) = a[1];
    f.slot(s_k) = 0;
    f.post(s_t_fill);
}

am::tam::program build(int n) {
    am::tam::program p;
    p.add(codeblock_def{"ss_main",
                        m_slots,
                        {{main_start, 1, "start"},
                         {main_check, 1, "check"},
                         {finish_with_slot<m_value>, 1, "done"}},
                        {store_and_post<m_n, m_t_start>, store_and_post<m_array, m_t_check>,
                         store_and_post<m_value, m_t_done>}});
    p.add(codeblock_def{"ss_sort",
                        s_a + static_cast<unsigned>(n),
                        {{sort_fill, 1, "fill"},
                         {sort_outer, 1, "outer"},
                         {sort_inner_test, 1, "inner_test"},
                         {sort_inner, 1, "inner"},
                         {sort_swap, 1, "swap"},
                         {sort_emit, 1, "emit"}},
                        {sort_in_args}});
    p.add(in_order_check_codeblock<m_in_checked>("ss_check"));
    return p;
}

void check_arg(int n) {
    if (n < 1 || n > (1 << 20))
        throw am::error(am::errc::invalid_argument,
                        "tam_apps::ss: n must be in [1, 2^20], not " + std::to_string(n));
}

am::tam::result run(am::context& ctx, int n, const am::tam::options& opt) {
    check_arg(n);
    const am::tam::program p = build(n);
    return am::tam::run(ctx, p, cb_main, {static_cast<word>(n)}, opt);
}

}  // namespace

[[gnu::noinline]] am::tam::word ss_reference(int n) {
    check_arg(n);
    const auto size = static_cast<std::size_t>(n);
    std::vector<std::uint64_t> a(size);
    for (std::size_t k = 0; k < size; ++k) a[k] = size - k;
    for (std::size_t i = 0; i + 1 < size; ++i) {
        std::size_t min = i;
        for (std::size_t j = i + 1; j < size; ++j)
            if (a[j] < a[min]) min = j;
        std::swap(a[i], a[min]);
    }
    return in_order_checksum(a);
}

extern const app ss_app;
const app ss_app{"ss", "selection sort", 100, 8000, run, ss_reference};

}  // namespace tam_apps
