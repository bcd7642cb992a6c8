// SPDX-License-Identifier: MIT
// DTW, discrete time warp (paper argument 10): the speech-recognition kernel that aligns two
// utterances, sequences x and y of n feature vectors (12 features each, as cepstral
// coefficients), by dynamic programming on matrices of doubles:
//   d[i][j] = sum_f (x[i][f] - y[j][f])^2                          (the distance matrix)
//   D[i][j] = d[i][j] + min(D[i-1][j], D[i][j-1], D[i-1][j-1])     (the warp; edges take the
//                                                                   neighbours that exist)
// and the answer is D[n-1][n-1] (an integer: the features are small integers).
//
// Everything lives in I-structures published through one directory on rank 0 (its quarters
// hold the rows of x, y, d and D). Per row i, on rank i % ranks: two `gen` frames write x's and
// y's row, a `dist` frame computes d's row (one thread per distance, once its 12 fetches of
// y[j] have arrived), and a `dp` frame computes D's row: its cells are threads that read
// d[i][j] and D[i-1][j] through split-phase fetches, a block of 4 cells ahead (two
// synchronising threads take turns), so rows i and i+1 advance as a wavefront across ranks.
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

/// Features per vector.
constexpr unsigned features = 12;
/// Stores or fetches one iteration of a loop thread issues; DP cells per synchronising block.
constexpr unsigned width = 4;

double x_elem(int t, int f) {
    return static_cast<double>((t * t + 3 * f * t + f) % 13 - 6);
}
double y_elem(int t, int f) {
    return x_elem((3 * t) / 4, f) + static_cast<double>((t + f) % 3 - 1);
}

/// The directory's quarters: row i of x, y, d and D is at (quarter * n + i).
enum quarters : unsigned { q_x, q_y, q_d, q_dp };

enum codeblocks : tam::codeblock_id { cb_main, cb_gen, cb_dist, cb_dp };

// --- main (rank 0): the directory; per row gen x, gen y, dist and dp; the answer. ---
enum main_slots : unsigned { m_n, m_dir, m_i, m_answer, m_slots };
enum main_threads : tam::thread_id { mt_start, mt_spawn, mt_end };
enum main_inlets : tam::inlet_id { mi_args, mi_done, mi_dp_done };

// {D[i][n-1], i}: the last row's is the answer.
void main_dp_done(frame& f, std::span<const word> a) {
    if (a[1] + 1 == f.slot(m_n)) f.slot(m_answer) = a[0];
    f.post(mt_end);
}

void main_start(frame& f) {
    f.slot(m_dir) = f.ialloc(4 * f.get<unsigned>(m_n)).as_word();
    f.slot(m_i) = 0;
    f.fork(mt_spawn);
}

void main_spawn(frame& f) {
    const auto i = f.get<unsigned>(m_i);
    const auto n = f.get<unsigned>(m_n);
    const int rank = static_cast<int>(i % static_cast<unsigned>(f.ranks()));
    const word self = f.self().as_word();
    const word dir = f.slot(m_dir);
    f.call(cb_gen, rank, 0, {self, dir, pack(i, n), q_x});
    f.call(cb_gen, rank, 0, {self, dir, pack(i, n), q_y});
    f.call(cb_dist, rank, 0, {self, dir, pack(i, n)});
    f.call(cb_dp, rank, 0, {self, dir, pack(i, n)});
    f.slot(m_i) = i + 1;
    if (i + 1 < n) f.fork(mt_spawn);
}

// --- gen (rank i % ranks): the feature vector x[i] or y[i]. ---
enum gen_slots : unsigned { g_parent, g_dir, g_index, g_i, g_which, g_row, g_k, g_slots };
enum gen_threads : tam::thread_id { gt_start, gt_fill };

void gen_args(frame& f, std::span<const word> a) {
    f.slot(g_parent) = a[0];
    f.slot(g_dir) = a[1];
    f.slot(g_i) = low(a[2]);
    f.slot(g_index) = a[3] * high(a[2]) + low(a[2]);
    f.slot(g_which) = a[3];
    f.post(gt_start);
}

// The row is published before it is written: readers of its elements wait in the I-structure.
void gen_start(frame& f) {
    const istruct_ref row = f.ialloc(features);
    f.slot(g_row) = row.as_word();
    f.istore(istruct_ref::from(f.slot(g_dir)), f.get<unsigned>(g_index), row.as_word());
    f.slot(g_k) = 0;
    f.fork(gt_fill);
}

void gen_fill(frame& f) {
    const auto i = f.get<int>(g_i);
    const auto row = istruct_ref::from(f.slot(g_row));
    const bool is_y = f.slot(g_which) == q_y;
    auto k = f.get<unsigned>(g_k);
    for (const unsigned end = std::min(features, k + width); k < end; ++k) {
        const int ft = static_cast<int>(k);
        f.istore(row, k, tam::to_word(is_y ? y_elem(i, ft) : x_elem(i, ft)));
    }
    f.slot(g_k) = k;
    if (k < features) {
        f.fork(gt_fill);
        return;
    }
    f.send(frame_ref::from(f.slot(g_parent)), mi_done, {});
    f.release();
}

// --- dist (rank i % ranks): d's row i. ---
enum dist_slots : unsigned {
    d_parent,
    d_dir,
    d_i,
    d_n,
    d_xrow,                   // x[i]
    d_drow,                   // d's row i
    d_k,                      // next y reference to fetch
    d_kx,                     // next element of x[i] to fetch
    d_ky,                     // next element of y[j] to fetch
    d_j,                      // column
    d_x,                      // `features` slots: x[i]
    d_y = d_x + features,     // `features` slots: y[j]
    d_yref = d_y + features,  // n slots: y's row references
};
enum dist_threads : tam::thread_id {
    dt_start,
    dt_ref_loop,
    dt_refs,    // entry n + 1: the references to x[i] and every y[k] have arrived
    dt_xfetch,  // fetches x[i]
    dt_fetch,   // fetches y[j]
    dt_dist,    // entry `features` (twice that the first time): y[j] (and x[i]) arrived
};
enum dist_inlets : tam::inlet_id { di_args, di_ref, di_x, di_y };

// Tag n is x[i]; tag k < n is y[k].
void dist_ref(frame& f, std::span<const word> a) {
    const auto k = static_cast<unsigned>(a[1]);
    f.slot(k == f.get<unsigned>(d_n) ? d_xrow : d_yref + k) = a[0];
    f.post(dt_refs);
}
void dist_x(frame& f, std::span<const word> a) {
    f.slot(d_x + static_cast<unsigned>(a[1])) = a[0];
    f.post(dt_dist);
}
void dist_y(frame& f, std::span<const word> a) {
    f.slot(d_y + static_cast<unsigned>(a[1])) = a[0];
    f.post(dt_dist);
}

void dist_start(frame& f) {
    const auto n = f.get<unsigned>(d_n);
    const auto i = f.get<unsigned>(d_i);
    const auto dir = istruct_ref::from(f.slot(d_dir));
    const istruct_ref drow = f.ialloc(n);
    f.slot(d_drow) = drow.as_word();
    f.istore(dir, q_d * n + i, drow.as_word());
    f.ifetch(dir, q_x * n + i, di_ref, n);
    f.slot(d_k) = 0;
    f.fork(dt_ref_loop);
}

void dist_ref_loop(frame& f) {
    const auto n = f.get<unsigned>(d_n);
    const auto dir = istruct_ref::from(f.slot(d_dir));
    auto k = f.get<unsigned>(d_k);
    for (const unsigned end = std::min(n, k + width); k < end; ++k)
        f.ifetch(dir, q_y * n + k, di_ref, k);
    f.slot(d_k) = k;
    if (k < n) f.fork(dt_ref_loop);
}

void dist_refs(frame& f) {
    f.set_count(dt_dist, 2 * features);  // the first distance waits for x[i] too
    f.slot(d_kx) = 0;
    f.slot(d_ky) = 0;
    f.slot(d_j) = 0;
    f.fork(dt_xfetch);
    f.fork(dt_fetch);
}

void dist_xfetch(frame& f) {
    const auto xrow = istruct_ref::from(f.slot(d_xrow));
    auto k = f.get<unsigned>(d_kx);
    for (const unsigned end = std::min(features, k + width); k < end; ++k)
        f.ifetch(xrow, k, di_x, k);
    f.slot(d_kx) = k;
    if (k < features) f.fork(dt_xfetch);
}

void dist_fetch(frame& f) {
    const auto yrow = istruct_ref::from(f.slot(d_yref + f.get<unsigned>(d_j)));
    auto k = f.get<unsigned>(d_ky);
    for (const unsigned end = std::min(features, k + width); k < end; ++k)
        f.ifetch(yrow, k, di_y, k);
    f.slot(d_ky) = k;
    if (k < features) f.fork(dt_fetch);
}

void dist_dist(frame& f) {
    double d = 0;
    for (unsigned k = 0; k < features; ++k) {
        const double diff = f.get<double>(d_x + k) - f.get<double>(d_y + k);
        d += diff * diff;
    }
    const auto j = f.get<unsigned>(d_j);
    f.istore(istruct_ref::from(f.slot(d_drow)), j, tam::to_word(d));
    f.slot(d_j) = j + 1;
    if (j + 1 < f.get<unsigned>(d_n)) {
        f.slot(d_ky) = 0;
        f.fork(dt_fetch);
        return;
    }
    f.send(frame_ref::from(f.slot(d_parent)), mi_done, {});
    f.release();
}

// --- dp (rank i % ranks): D's row i, cell by cell. ---
// Block b (cells [4b, 4b + 4)) waits in synchronising thread b % 2 for its fetches and for the
// end of block b - 1. When block b starts, the fetches of block b + 1 are issued: that thread's
// count is set then (its previous block, b - 1, is done), before anything can post it.
enum dp_slots : unsigned {
    p_parent,
    p_dir,
    p_i,
    p_n,
    p_drow,   // d's row i
    p_prev,   // D's row i - 1
    p_row,    // D's row i
    p_j,      // next cell
    p_block,  // next block to fetch
    p_left,   // D[i][j-1]
    p_d,      // n slots: d[i][*]
};
unsigned up_slot(unsigned n, unsigned j) {
    return p_d + n + j;
}  // n slots: D[i-1][*]
unsigned dp_slot_count(unsigned n) {
    return p_d + 2 * n;
}

enum dp_threads : tam::thread_id {
    pt_start,
    pt_refs,   // entry 2 (1 on row 0): the references to d's and D's rows arrived
    pt_fetch,  // fetches the next block
    pt_sync0,  // block b, b even: its fetches arrived and block b - 1 is done (count set)
    pt_sync1,  // the same for b odd
    pt_cell,   // one cell
};
enum dp_inlets : tam::inlet_id { pi_args, pi_ref, pi_d, pi_up };

tam::thread_id sync_of(unsigned j) {
    return j / width % 2 == 0 ? pt_sync0 : pt_sync1;
}

// Tag 0 is d's row i, tag 1 is D's row i - 1.
void dp_ref(frame& f, std::span<const word> a) {
    f.slot(a[1] == 0 ? p_drow : p_prev) = a[0];
    f.post(pt_refs);
}
void dp_d(frame& f, std::span<const word> a) {
    const auto j = static_cast<unsigned>(a[1]);
    f.slot(p_d + j) = a[0];
    f.post(sync_of(j));
}
void dp_up(frame& f, std::span<const word> a) {
    const auto j = static_cast<unsigned>(a[1]);
    f.slot(up_slot(f.get<unsigned>(p_n), j)) = a[0];
    f.post(sync_of(j));
}

void dp_start(frame& f) {
    const auto n = f.get<unsigned>(p_n);
    const auto i = f.get<unsigned>(p_i);
    const auto dir = istruct_ref::from(f.slot(p_dir));
    const istruct_ref row = f.ialloc(n);
    f.slot(p_row) = row.as_word();
    f.istore(dir, q_dp * n + i, row.as_word());
    if (i == 0) f.set_count(pt_refs, 1);
    f.ifetch(dir, q_d * n + i, pi_ref, 0);
    if (i > 0) f.ifetch(dir, q_dp * n + i - 1, pi_ref, 1);
}

// Sets block b's synchronising count (its fetches and the end of block b - 1) and forks its
// fetches, if there is a block b.
void dp_prefetch(frame& f, unsigned b) {
    const auto n = f.get<unsigned>(p_n);
    if (b * width >= n) return;
    const unsigned cells = std::min(n - b * width, width);
    const unsigned per_cell = f.get<unsigned>(p_i) == 0 ? 1 : 2;
    f.set_count(sync_of(b * width), cells * per_cell + 1);
    f.fork(pt_fetch);
}

void dp_refs(frame& f) {
    f.slot(p_j) = 0;
    f.slot(p_block) = 0;
    dp_prefetch(f, 0);
    dp_prefetch(f, 1);
    f.fork(pt_sync0);  // block -1 is done
}

// Each run fetches the next block: blocks are forked in order, and block b + 1 only once
// block b's fetches have arrived.
void dp_fetch(frame& f) {
    const auto n = f.get<unsigned>(p_n);
    const bool first_row = f.get<unsigned>(p_i) == 0;
    const auto b = f.get<unsigned>(p_block);
    f.slot(p_block) = b + 1;
    const auto drow = istruct_ref::from(f.slot(p_drow));
    const auto prev = istruct_ref::from(f.slot(p_prev));
    for (unsigned j = b * width, end = std::min(n, j + width); j < end; ++j) {
        f.ifetch(drow, j, pi_d, j);
        if (!first_row) f.ifetch(prev, j, pi_up, j);
    }
}

void dp_sync(frame& f) {
    f.fork(pt_cell);
}

void dp_cell(frame& f) {
    const auto n = f.get<unsigned>(p_n);
    const auto j = f.get<unsigned>(p_j);
    double best = 0;  // D[0][0] = d[0][0]
    if (f.get<unsigned>(p_i) > 0) {
        best = f.get<double>(up_slot(n, j));
        if (j > 0) best = std::min({best, f.get<double>(p_left), f.get<double>(up_slot(n, j - 1))});
    } else if (j > 0) {
        best = f.get<double>(p_left);
    }
    const double v = f.get<double>(p_d + j) + best;
    f.istore(istruct_ref::from(f.slot(p_row)), j, tam::to_word(v));
    f.put(p_left, v);
    f.slot(p_j) = j + 1;
    if (j + 1 == n) {
        f.send(frame_ref::from(f.slot(p_parent)), mi_dp_done, {tam::to_word(v), f.slot(p_i)});
        f.release();
    } else if ((j + 1) % width != 0) {
        f.fork(pt_cell);
    } else {  // block b = (j + 1) / width starts
        dp_prefetch(f, (j + 1) / width + 1);
        f.fork(sync_of(j + 1));
    }
}

tam::program build(unsigned n) {
    tam::program prog;
    prog.add({"dtw_main",
              m_slots,
              {{main_start, 1, "start"},
               {main_spawn, 1, "spawn"},
               // every frame main called has ended
               {finish_with_integral_double<m_answer>, 4 * n, "end"}},
              {store_and_post<m_n, mt_start>, post_only<mt_end>, main_dp_done}});
    prog.add({"dtw_gen", g_slots, {{gen_start, 1, "start"}, {gen_fill, 1, "fill"}}, {gen_args}});
    prog.add(
        {"dtw_dist",
         d_yref + n,
         {{dist_start, 1, "start"},
          {dist_ref_loop, 1, "ref_loop"},
          {dist_refs, n + 1, "refs"},
          {dist_xfetch, 1, "xfetch"},
          {dist_fetch, 1, "fetch"},
          {dist_dist, features, "dist"}},
         {parent_dir_row_args<d_parent, d_dir, d_i, d_n, dt_start>, dist_ref, dist_x, dist_y}});
    prog.add({"dtw_dp",
              dp_slot_count(n),
              {{dp_start, 1, "start"},
               {dp_refs, 2, "refs"},
               {dp_fetch, 1, "fetch"},
               {dp_sync, 2 * width + 1, "sync0"},  // set per block
               {dp_sync, 2 * width + 1, "sync1"},
               {dp_cell, 1, "cell"}},
              {parent_dir_row_args<p_parent, p_dir, p_i, p_n, pt_start>, dp_ref, dp_d, dp_up}});
    return prog;
}

tam::result run(am::context& ctx, int n, const tam::options& opt) {
    require_positive(n, "dtw");
    const tam::program prog = build(static_cast<unsigned>(n));
    return tam::run(ctx, prog, cb_main, {tam::to_word(n)}, opt);
}

}  // namespace

[[gnu::noinline]] word dtw_reference(int n) {
    const auto size = static_cast<std::size_t>(n);
    std::vector<double> x(size * features), y(size * features);
    for (int t = 0; t < n; ++t)
        for (int k = 0; k < static_cast<int>(features); ++k) {
            x[static_cast<std::size_t>(t) * features + static_cast<std::size_t>(k)] = x_elem(t, k);
            y[static_cast<std::size_t>(t) * features + static_cast<std::size_t>(k)] = y_elem(t, k);
        }
    std::vector<double> d(size * size), dp(size * size);
    for (std::size_t i = 0; i < size; ++i)
        for (std::size_t j = 0; j < size; ++j) {
            double s = 0;
            for (std::size_t k = 0; k < features; ++k) {
                const double diff = x[i * features + k] - y[j * features + k];
                s += diff * diff;
            }
            d[i * size + j] = s;
        }
    for (std::size_t i = 0; i < size; ++i)
        for (std::size_t j = 0; j < size; ++j) {
            double best = 0;
            if (i > 0 && j > 0)
                best = std::min(
                    {dp[(i - 1) * size + j], dp[i * size + j - 1], dp[(i - 1) * size + j - 1]});
            else if (i > 0)
                best = dp[(i - 1) * size + j];
            else if (j > 0)
                best = dp[i * size + j - 1];
            dp[i * size + j] = d[i * size + j] + best;
        }
    return tam::to_word(static_cast<std::int64_t>(dp[size * size - 1]));
}

extern const app dtw_app;
const app dtw_app{"dtw", "discrete time warp", 10, 1200, run, dtw_reference};

}  // namespace tam_apps
