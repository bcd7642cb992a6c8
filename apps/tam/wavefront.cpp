// SPDX-License-Identifier: MIT
// Wavefront (paper argument 40): successive n x n matrices M1, M2, M3 of doubles after an input
// matrix M0, where each element is a function of the north and west values of the previous and
// the current matrix:
//   M_m[i][j] = (3 N + 5 W + 7 N' + 11 W' + 1) mod 1009
//   N = M_m[i-1][j], W = M_m[i][j-1], N' = M_{m-1}[i-1][j], W' = M_{m-1}[i][j-1]
// (0 outside the matrix), M0[i][j] = (31 i + 17 j) mod 101. The answer is the sum of M3's
// elements. Three successive matrices is a fixed choice (the paper does not give its count).
// The values are integers, so the result is exact.
//
// One `row` frame per row i (on rank i % ranks) computes row i of M0, M1, M2, M3 in turn, one
// thread per cell, keeping its own row and the north row of the previous matrix in slots; it
// publishes its rows in one I-structure (matrix m at [m n, m n + n)) and reads row i - 1's
// through split-phase fetches, a block of 8 cells ahead (two synchronising threads take
// turns). The rows thus advance as a wavefront over the ranks, pass after pass.
#include "tam_apps.hpp"
#include "tam_apps_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tam_apps {
namespace {

namespace tam = am::tam;
using namespace detail;

/// Successive matrices computed after M0.
constexpr unsigned matrices = 3;
/// Cells per synchronising block (fetched ahead together).
constexpr unsigned width = 8;

double initial(int i, int j) {
    return static_cast<double>((31 * i + 17 * j) % 101);
}
double step(double north, double west, double north_prev, double west_prev) {
    return std::fmod(3 * north + 5 * west + 7 * north_prev + 11 * west_prev + 1, 1009.0);
}

enum codeblocks : tam::codeblock_id { cb_main, cb_row };

// --- main (rank 0): the directory of rows, a row frame per row, the sum. ---
enum main_slots : unsigned { m_n, m_dir, m_i, m_sum, m_slots };
enum main_threads : tam::thread_id { mt_start, mt_spawn, mt_end };
enum main_inlets : tam::inlet_id { mi_args, mi_rowsum };

void main_start(frame& f) {
    f.slot(m_dir) = f.ialloc(f.get<unsigned>(m_n)).as_word();
    f.slot(m_i) = 0;
    f.put(m_sum, 0.0);
    f.fork(mt_spawn);
}

void main_spawn(frame& f) {
    const auto i = f.get<unsigned>(m_i);
    const auto n = f.get<unsigned>(m_n);
    const int rank = static_cast<int>(i % static_cast<unsigned>(f.ranks()));
    f.call(cb_row, rank, 0, {f.self().as_word(), f.slot(m_dir), pack(i, n)});
    f.slot(m_i) = i + 1;
    if (i + 1 < n) f.fork(mt_spawn);
}

// --- row (rank i % ranks): row i of every matrix. ---
// Block b of a pass (cells [8b, 8b + 8)) waits in synchronising thread b % 2 for its north
// values and for the end of block b - 1. When block b starts, block b + 1's fetches are issued:
// that thread's count is set then (its previous block is done), before anything can post it.
enum row_slots : unsigned {
    r_parent,
    r_dir,
    r_i,
    r_n,
    r_row,        // this row's I-structure
    r_prev,       // row i - 1's I-structure
    r_m,          // the matrix (pass)
    r_j,          // next cell
    r_block,      // next block to fetch
    r_west,       // M_m[i][j-1]
    r_west_prev,  // M_{m-1}[i][j-1]
    r_sum,        // sum of the last matrix's row so far
    r_cur,        // n slots: M_m[i][j] for cells done in this pass, M_{m-1}[i][j] for the rest
    // then 2n slots: the north rows of the even and the odd matrices
};
unsigned north_slot(unsigned n, unsigned m, unsigned j) {
    return r_cur + n + (m % 2) * n + j;
}
unsigned row_slot_count(unsigned n) {
    return r_cur + 3 * n;
}

enum row_threads : tam::thread_id {
    rt_start,
    rt_ref,    // row i - 1's I-structure arrived
    rt_fetch,  // fetches the next block of north values
    rt_sync0,  // block b, b even: north values arrived and block b - 1 is done (count set)
    rt_sync1,  // the same for b odd
    rt_cell,   // one cell
};
enum row_inlets : tam::inlet_id { ri_args, ri_ref, ri_north };

tam::thread_id sync_of(unsigned j) {
    return j / width % 2 == 0 ? rt_sync0 : rt_sync1;
}

void row_ref(frame& f, std::span<const word> a) {
    f.slot(r_prev) = a[0];
    f.post(rt_ref);
}
// Tag: the north slot's offset (matrix parity and column).
void row_north(frame& f, std::span<const word> a) {
    const auto n = f.get<unsigned>(r_n);
    const auto tag = static_cast<unsigned>(a[1]);
    f.slot(r_cur + n + tag) = a[0];
    f.post(sync_of(tag % n));
}

void row_start(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    const auto i = f.get<unsigned>(r_i);
    const auto dir = istruct_ref::from(f.slot(r_dir));
    const istruct_ref row = f.ialloc((matrices + 1) * n);
    f.slot(r_row) = row.as_word();
    f.istore(dir, i, row.as_word());
    f.put(r_sum, 0.0);
    if (i > 0) {
        f.ifetch(dir, i - 1, ri_ref);
    } else {
        f.fork(rt_ref);
    }
}

// Sets block b's synchronising count (its north values and the end of block b - 1) and forks
// its fetches, if the pass has a block b. Row 0 has no north: its blocks wait for block b - 1.
void row_prefetch(frame& f, unsigned b) {
    const auto n = f.get<unsigned>(r_n);
    if (b * width >= n) return;
    if (f.get<unsigned>(r_i) == 0) {
        f.set_count(sync_of(b * width), 1);
        return;
    }
    f.set_count(sync_of(b * width), std::min(n - b * width, width) + 1);
    f.fork(rt_fetch);
}

// A pass starts: matrix r_m, from the west edge.
void row_pass(frame& f) {
    f.slot(r_j) = 0;
    f.slot(r_block) = 0;
    f.put(r_west, 0.0);
    f.put(r_west_prev, 0.0);
    row_prefetch(f, 0);
    row_prefetch(f, 1);
    f.fork(rt_sync0);  // block -1 is done
}

void row_ref_arrived(frame& f) {
    f.slot(r_m) = 0;
    row_pass(f);
}

// Each run fetches the next block: blocks are forked in order, and block b + 1 only once
// block b's values have arrived.
void row_fetch(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    const auto m = f.get<unsigned>(r_m);
    const auto b = f.get<unsigned>(r_block);
    f.slot(r_block) = b + 1;
    const auto prev = istruct_ref::from(f.slot(r_prev));
    for (unsigned j = b * width, end = std::min(n, j + width); j < end; ++j)
        f.ifetch(prev, m * n + j, ri_north, (m % 2) * n + j);
}

void row_sync(frame& f) {
    f.fork(rt_cell);
}

// M_m[i][j] from the values in the frame (M0 from the input function).
double row_value(frame& f, unsigned n, unsigned m, unsigned j) {
    const auto i = f.get<unsigned>(r_i);
    if (m == 0) return initial(static_cast<int>(i), static_cast<int>(j));
    const double north = i > 0 ? f.get<double>(north_slot(n, m, j)) : 0.0;
    const double north_prev = i > 0 ? f.get<double>(north_slot(n, m - 1, j)) : 0.0;
    return step(north, f.get<double>(r_west), north_prev, f.get<double>(r_west_prev));
}

void row_cell(frame& f) {
    const auto n = f.get<unsigned>(r_n);
    const auto m = f.get<unsigned>(r_m);
    const auto j = f.get<unsigned>(r_j);
    const double v = row_value(f, n, m, j);
    f.istore(istruct_ref::from(f.slot(r_row)), m * n + j, tam::to_word(v));
    f.slot(r_west_prev) = f.slot(r_cur + j);
    f.put(r_cur + j, v);
    f.put(r_west, v);
    if (m == matrices) f.put(r_sum, f.get<double>(r_sum) + v);
    f.slot(r_j) = j + 1;
    if ((j + 1) % width != 0 && j + 1 < n) {
        f.fork(rt_cell);
    } else if (j + 1 < n) {  // block b = (j + 1) / width starts
        row_prefetch(f, (j + 1) / width + 1);
        f.fork(sync_of(j + 1));
    } else if (m < matrices) {
        f.slot(r_m) = m + 1;
        row_pass(f);
    } else {
        f.send(frame_ref::from(f.slot(r_parent)), mi_rowsum, {f.slot(r_sum)});
        f.release();
    }
}

tam::program build(unsigned n) {
    tam::program prog;
    prog.add({"wavefront_main",
              m_slots,
              {{main_start, 1, "start"},
               {main_spawn, 1, "spawn"},
               {finish_with_integral_double<m_sum>, n, "end"}},  // every row's sum has arrived
              {store_and_post<m_n, mt_start>, add_double_and_post<m_sum, mt_end>}});
    prog.add({"wavefront_row",
              row_slot_count(n),
              {{row_start, 1, "start"},
               {row_ref_arrived, 1, "ref"},
               {row_fetch, 1, "fetch"},
               {row_sync, width + 1, "sync0"},  // set per block
               {row_sync, width + 1, "sync1"},
               {row_cell, 1, "cell"}},
              {parent_dir_row_args<r_parent, r_dir, r_i, r_n, rt_start>, row_ref, row_north}});
    return prog;
}

tam::result run(am::context& ctx, int n, const tam::options& opt) {
    require_positive(n, "wavefront");
    const tam::program prog = build(static_cast<unsigned>(n));
    return tam::run(ctx, prog, cb_main, {tam::to_word(n)}, opt);
}

}  // namespace

[[gnu::noinline]] word wavefront_reference(int n) {
    const auto size = static_cast<std::size_t>(n);
    std::vector<double> prev(size * size), cur(size * size);
    for (std::size_t i = 0; i < size; ++i)
        for (std::size_t j = 0; j < size; ++j)
            prev[i * size + j] = initial(static_cast<int>(i), static_cast<int>(j));
    for (unsigned m = 1; m <= matrices; ++m) {
        for (std::size_t i = 0; i < size; ++i)
            for (std::size_t j = 0; j < size; ++j) {
                const double north = i > 0 ? cur[(i - 1) * size + j] : 0.0;
                const double west = j > 0 ? cur[i * size + j - 1] : 0.0;
                const double north_prev = i > 0 ? prev[(i - 1) * size + j] : 0.0;
                const double west_prev = j > 0 ? prev[i * size + j - 1] : 0.0;
                cur[i * size + j] = step(north, west, north_prev, west_prev);
            }
        std::swap(prev, cur);
    }
    double sum = 0;
    for (const double v : prev) sum += v;
    return tam::to_word(static_cast<std::int64_t>(sum));
}

extern const app wavefront_app;
const app wavefront_app{"wavefront", "wavefront", 40, 1500, run, wavefront_reference};

}  // namespace tam_apps
