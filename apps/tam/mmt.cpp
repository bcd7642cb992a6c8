// SPDX-License-Identifier: MIT
// MMT, matrix multiply (paper argument 50): C = A B for two n x n matrices of doubles, and the
// sum of C's elements.
//
// A matrix is an I-structure of n row references (a "directory", on rank 0); row i is an
// I-structure of n elements on rank i % ranks, allocated and filled by a `gen` frame there.
// One `row` frame per row of C (on rank i % ranks) fetches the directory entries it needs,
// then row i of A, then B column by column; the inner product of a column runs, 16 products per
// thread, once the column's n fetches (and, for the first column, A's row) have arrived — the
// compute-heavy threads of this program. The elements are small integers, so every sum is
// exact whatever order the ranks' messages impose; the answer is the sum as an integer.
#include "tam_apps.hpp"
#include "tam_apps_common.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tam_apps {
namespace {

namespace tam = am::tam;
using namespace detail;

/// Fetches, stores or multiply-adds one iteration of a loop thread issues (its unrolling).
constexpr unsigned width = 16;

double a_elem(int i, int k) {
    return static_cast<double>((i + 2 * k) % 5 - 1);
}
double b_elem(int k, int j) {
    return static_cast<double>((3 * k + j) % 7 - 2);
}

enum codeblocks : tam::codeblock_id { cb_main, cb_gen, cb_row };

// --- main (rank 0): allocates the directories, calls gen and row per row, sums the rows. ---
enum main_slots : unsigned { m_n, m_arows, m_brows, m_i, m_sum, m_slots };
enum main_threads : tam::thread_id { mt_start, mt_spawn, mt_end };
enum main_inlets : tam::inlet_id { mi_args, mi_done, mi_rowsum };

void main_start(frame& f) {
    const auto n = f.get<unsigned>(m_n);
    f.slot(m_arows) = f.ialloc(n).as_word();
    f.slot(m_brows) = f.ialloc(n).as_word();
    f.slot(m_i) = 0;
    f.put(m_sum, 0.0);
    f.fork(mt_spawn);
}

// One iteration per row: A's and B's row i are generated, and row i of C computed, on one rank.
void main_spawn(frame& f) {
    const auto i = f.get<unsigned>(m_i);
    const auto n = f.get<unsigned>(m_n);
    const int rank = static_cast<int>(i % static_cast<unsigned>(f.ranks()));
    const word self = f.self().as_word();
    f.call(cb_gen, rank, 0, {self, f.slot(m_arows), pack(i, n), 0});
    f.call(cb_gen, rank, 0, {self, f.slot(m_brows), pack(i, n), 1});
    f.call(cb_row, rank, 0, {self, f.slot(m_arows), f.slot(m_brows), pack(i, n)});
    f.slot(m_i) = i + 1;
    if (i + 1 < n) f.fork(mt_spawn);
}

// --- gen (rank i % ranks): row i of A (kind 0) or B (kind 1). ---
enum gen_slots : unsigned { g_parent, g_dir, g_i, g_n, g_kind, g_row, g_j, g_slots };
enum gen_threads : tam::thread_id { gt_start, gt_fill };

void gen_args(frame& f, std::span<const word> a) {
    f.slot(g_parent) = a[0];
    f.slot(g_dir) = a[1];
    f.slot(g_i) = low(a[2]);
    f.slot(g_n) = high(a[2]);
    f.slot(g_kind) = a[3];
    f.post(gt_start);
}

// The row is published before it is written: readers of its elements wait in the I-structure.
void gen_start(frame& f) {
    const istruct_ref row = f.ialloc(f.get<unsigned>(g_n));
    f.slot(g_row) = row.as_word();
    f.istore(istruct_ref::from(f.slot(g_dir)), f.get<unsigned>(g_i), row.as_word());
    f.slot(g_j) = 0;
    f.fork(gt_fill);
}

void gen_fill(frame& f) {
    const auto i = f.get<int>(g_i);
    const auto n = f.get<unsigned>(g_n);
    const auto row = istruct_ref::from(f.slot(g_row));
    const bool is_b = f.slot(g_kind) != 0;
    auto j = f.get<unsigned>(g_j);
    for (const unsigned end = std::min(n, j + width); j < end; ++j) {
        const double v = is_b ? b_elem(i, static_cast<int>(j)) : a_elem(i, static_cast<int>(j));
        f.istore(row, j, tam::to_word(v));
    }
    f.slot(g_j) = j;
    if (j < n) {
        f.fork(gt_fill);
        return;
    }
    f.send(frame_ref::from(f.slot(g_parent)), mi_done, {});
    f.release();
}

// --- row (rank i % ranks): row i of C, summed. ---
// Slots: the header, then B's row references, A's row i and the current column of B.
enum row_slots : unsigned {
    r_parent,
    r_arows,
    r_brows,
    r_i,
    r_n,
    r_arow,  // A's row i
    r_ka,    // next A element to fetch
    r_kb,    // next B element of the column to fetch
    r_k,     // next product of the inner product
    r_j,     // column
    r_acc,   // inner product so far
    r_sum,   // row sum so far
    r_bref,  // n slots: B's row references
};
unsigned a_slot(unsigned n, unsigned k) {
    return r_bref + n + k;
}
unsigned b_slot(unsigned n, unsigned k) {
    return r_bref + 2 * n + k;
}
unsigned row_slot_count(unsigned n) {
    return r_bref + 3 * n;
}

enum row_threads : tam::thread_id {
    rt_start,
    rt_ref_loop,
    rt_refs,    // entry n + 1: every row reference has arrived
    rt_a_loop,  // fetches A's row
    rt_b_loop,  // fetches column j of B
    rt_dot,     // entry n + 1 (2n + 1 the first time): the column (and A's row) has arrived,
                // and its fetches have all been issued
    rt_mac,     // the inner product, `width` products per iteration
};
enum row_inlets : tam::inlet_id { ri_args, ri_ref, ri_a, ri_b };

void row_args(frame& f, std::span<const word> a) {
    f.slot(r_parent) = a[0];
    f.slot(r_arows) = a[1];
    f.slot(r_brows) = a[2];
    f.slot(r_i) = low(a[3]);
    f.slot(r_n) = high(a[3]);
    f.post(rt_start);
}
// Tag n is A's row i; tag k < n is B's row k.
void row_ref(frame& f, std::span<const word> a) {
    const auto k = static_cast<unsigned>(a[1]);
    f.slot(k == f.get<unsigned>(r_n) ? r_arow : r_bref + k) = a[0];
    f.post(rt_refs);
}
void row_a(frame& f, std::span<const word> a) {
    f.slot(a_slot(f.get<unsigned>(r_n), static_cast<unsigned>(a[1]))) = a[0];
    f.post(rt_dot);
}
void row_b(frame& f, std::span<const word> a) {
    f.slot(b_slot(f.get<unsigned>(r_n), static_cast<unsigned>(a[1]))) = a[0];
    f.post(rt_dot);
}

void row_start(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    f.ifetch(istruct_ref::from(f.slot(r_arows)), f.get<unsigned>(r_i), ri_ref, n);
    f.slot(r_kb) = 0;
    f.fork(rt_ref_loop);
}

void row_ref_loop(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    const auto brows = istruct_ref::from(f.slot(r_brows));
    auto k = f.get<unsigned>(r_kb);
    for (const unsigned end = std::min(n, k + width); k < end; ++k) f.ifetch(brows, k, ri_ref, k);
    f.slot(r_kb) = k;
    if (k < n) f.fork(rt_ref_loop);
}

void row_refs(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    f.set_count(rt_dot, 2 * n + 1);  // the first column waits for A's row too
    f.put(r_sum, 0.0);
    f.slot(r_ka) = 0;
    f.slot(r_kb) = 0;
    f.slot(r_j) = 0;
    f.fork(rt_a_loop);
    f.fork(rt_b_loop);
}

void row_a_loop(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    const auto arow = istruct_ref::from(f.slot(r_arow));
    auto k = f.get<unsigned>(r_ka);
    for (const unsigned end = std::min(n, k + width); k < end; ++k) f.ifetch(arow, k, ri_a, k);
    f.slot(r_ka) = k;
    if (k < n) f.fork(rt_a_loop);
}

void row_b_loop(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    const auto j = f.get<unsigned>(r_j);
    auto k = f.get<unsigned>(r_kb);
    for (const unsigned end = std::min(n, k + width); k < end; ++k)
        f.ifetch(istruct_ref::from(f.slot(r_bref + k)), j, ri_b, k);
    f.slot(r_kb) = k;
    f.fork(k < n ? rt_b_loop : rt_dot);
}

void row_dot(frame& f) {
    f.put(r_acc, 0.0);
    f.slot(r_k) = 0;
    f.fork(rt_mac);
}

void row_mac(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    auto k = f.get<unsigned>(r_k);
    double acc = f.get<double>(r_acc);
    for (const unsigned end = std::min(n, k + width); k < end; ++k)
        acc += f.get<double>(a_slot(n, k)) * f.get<double>(b_slot(n, k));
    f.put(r_acc, acc);
    f.slot(r_k) = k;
    if (k < n) {
        f.fork(rt_mac);
        return;
    }
    f.put(r_sum, f.get<double>(r_sum) + acc);
    const auto j = f.get<unsigned>(r_j) + 1;
    f.slot(r_j) = j;
    if (j < n) {  // the next column (rt_dot's count is back at n + 1)
        f.slot(r_kb) = 0;
        f.fork(rt_b_loop);
        return;
    }
    f.send(frame_ref::from(f.slot(r_parent)), mi_rowsum, {f.slot(r_sum)});
    f.release();
}

tam::program build(unsigned n) {
    tam::program prog;
    prog.add(
        {"mmt_main",
         m_slots,
         {{main_start, 1, "start"},
          {main_spawn, 1, "spawn"},
          // two generated rows and one row sum per row
          {finish_with_integral_double<m_sum>, 3 * n, "end"}},
         {store_and_post<m_n, mt_start>, post_only<mt_end>, add_double_and_post<m_sum, mt_end>}});
    prog.add({"mmt_gen", g_slots, {{gen_start, 1, "start"}, {gen_fill, 1, "fill"}}, {gen_args}});
    prog.add({"mmt_row",
              row_slot_count(n),
              {{row_start, 1, "start"},
               {row_ref_loop, 1, "ref_loop"},
               {row_refs, n + 1, "refs"},
               {row_a_loop, 1, "a_loop"},
               {row_b_loop, 1, "b_loop"},
               {row_dot, n + 1, "dot"},
               {row_mac, 1, "mac"}},
              {row_args, row_ref, row_a, row_b}});
    return prog;
}

tam::result run(am::context& ctx, int n, const tam::options& opt) {
    require_positive(n, "mmt");
    const tam::program prog = build(static_cast<unsigned>(n));
    return tam::run(ctx, prog, cb_main, {tam::to_word(n)}, opt);
}

}  // namespace

[[gnu::noinline]] word mmt_reference(int n) {
    const auto size = static_cast<std::size_t>(n);
    std::vector<double> a(size * size), b(size * size);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            a[static_cast<std::size_t>(i * n + j)] = a_elem(i, j);
            b[static_cast<std::size_t>(i * n + j)] = b_elem(i, j);
        }
    double sum = 0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double c = 0;
            for (int k = 0; k < n; ++k)
                c +=
                    a[static_cast<std::size_t>(i * n + k)] * b[static_cast<std::size_t>(k * n + j)];
            sum += c;
        }
    return tam::to_word(static_cast<std::int64_t>(sum));
}

extern const app mmt_app;
const app mmt_app{"mmt", "matrix multiply", 50, 300, run, mmt_reference};

}  // namespace tam_apps
