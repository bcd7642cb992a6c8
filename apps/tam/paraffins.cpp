// SPDX-License-Identifier: MIT
// Paraffins, the J-Machine study's argument 13 (the Id benchmark of Arvind, Heller and Nikhil):
// enumerates the distinct isomers of the paraffins C_m H_2m+2 for m = 1..n.
//
// A radical of size s is a carbon with three sub-radicals (H is the radical of size 0) of sizes
// summing to s-1; it is described by its sub-radicals as a non-decreasing tuple of ids
// (size, index within its size). A paraffin of size m is carbon-centred (CCP: four radicals,
// sizes summing to m-1, each at most (m-1)/2) or bond-centred (BCP, m even: two radicals of
// size m/2). Enumerating canonical tuples counts each isomer once.
//
//   para_main (rank 0)   allocates COUNTS and RADS (I-structures indexed by size: the number
//                        of radicals of that size, the ref of the I-structure of their
//                        descriptions), calls rad(s) for s = 1..n/2 and para(m) for m = 1..n
//                        (on rank s, m mod ranks) and joins them
//   rad(s)               reads COUNTS[0..s-1] (deferred until rad(0..s-1) publish them),
//                        enumerates its radicals once to count them, publishes the count and a
//                        new I-structure R_s, then enumerates again writing one packed
//                        description per radical into R_s
//   para(m)              enumerates the size partitions of its CCPs and BCPs and calls
//                        combos on each (on the ranks in turn); returns
//                        mix(m, count_m) + hash sum_m to para_main
//   combos(sizes)        reads COUNTS and RADS of its sizes, enumerates the index tuples of
//                        its partition and, for each paraffin, fetches the descriptions of its
//                        radicals (split-phase), adding a hash of them; returns (count, hash)
// The result is Σ_m mix(m, count_m) + hash sum_m (mod 2^64).
#include <am/error.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tam_apps.hpp"
#include "tam_apps_common.hpp"

namespace tam_apps {

namespace {

using namespace detail;

constexpr am::tam::codeblock_id cb_main = 0;
constexpr am::tam::codeblock_id cb_rad = 1;
constexpr am::tam::codeblock_id cb_para = 2;
constexpr am::tam::codeblock_id cb_combos = 3;

/// Sizes 1..30: radical sizes up to 15 fit 5 bits, their counts (at most 48865) 16 bits.
constexpr int max_n = 30;

/// splitmix64's finaliser.
constexpr std::uint64_t mix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}
/// A radical's id (size, index) in 21 bits; a description packs three ids.
constexpr word radical_id(word size, word index) {
    return size << 16 | index;
}
/// The hash a paraffin adds for the radical at position t of its tuple.
constexpr word radical_hash(word description, word t) {
    return mix(description + t * 0x632BE59BD9B4E019ULL);
}
/// What para(m) adds to the result, with the hash sum of its paraffins.
constexpr word size_hash(word m, word count) {
    return mix(m << 32 | count);
}

// ---- para_main ------------------------------------------------------------------------------
enum : unsigned { m_n, m_maxrad, m_counts, m_rads, m_j, m_value, m_slots };
enum : am::tam::inlet_id { m_in_args, m_in_rad_done, m_in_para_done };
enum : am::tam::thread_id { m_t_start, m_t_call_rad, m_t_call_para, m_t_done };

void main_start(frame& f) {
    const word n = f.slot(m_n);
    const word maxrad = n / 2;
    const istruct_ref counts = f.ialloc(static_cast<std::uint32_t>(maxrad + 1));
    const istruct_ref rads = f.ialloc(static_cast<std::uint32_t>(maxrad + 1));
    const istruct_ref hydrogen = f.ialloc(1);  // R_0: the one radical of size 0, H
    f.istore(hydrogen, 0, 0);
    f.istore(rads, 0, hydrogen.as_word());
    f.istore(counts, 0, 1);
    f.slot(m_maxrad) = maxrad;
    f.slot(m_counts) = counts.as_word();
    f.slot(m_rads) = rads.as_word();
    f.slot(m_value) = 0;
    f.slot(m_j) = 1;
    f.set_count(m_t_done, static_cast<std::uint32_t>(maxrad + n));
    f.fork(maxrad > 0 ? m_t_call_rad : m_t_call_para);
}
void main_call(frame& f, am::tam::codeblock_id cb, word j) {
    f.call(cb, static_cast<int>(j % static_cast<word>(f.ranks())), 0,
           {f.self().as_word(), f.slot(m_counts), f.slot(m_rads), j});
}
// for s in 1..n/2: call rad(s)
void main_call_rad(frame& f) {
    const word s = f.slot(m_j);
    main_call(f, cb_rad, s);
    f.slot(m_j) = s + 1 <= f.slot(m_maxrad) ? s + 1 : 1;
    f.fork(s + 1 <= f.slot(m_maxrad) ? m_t_call_rad : m_t_call_para);
}
// for m in 1..n: call para(m)
void main_call_para(frame& f) {
    const word m = f.slot(m_j);
    main_call(f, cb_para, m);
    f.slot(m_j) = m + 1;
    if (m + 1 <= f.slot(m_n)) f.fork(m_t_call_para);
}
void main_in_para_done(frame& f, std::span<const word> a) {
    f.slot(m_value) += a[0];
    f.post(m_t_done);
}

// ---- the enumeration state, common to rad and para -----------------------------------------
// Tuples of k radical ids, non-decreasing, sizes summing to e_sum, each size at most e_cap,
// in lexicographic order: first the size partitions, then within one the index tuples.
enum : unsigned {
    x_main,
    x_counts,
    x_rads,
    x_size,
    e_k,
    e_sum,
    e_cap,
    e_sizes,
    e_idx = e_sizes + 4,
    x_count = e_idx + 4,
    x_pos,
    x_j,
    x_got,
    x_acc,
    x_done,
    x_phase,
    x_own,
    x_desc,
    x_radicals = x_desc + 4  // per size 0..maxrad: the count of radicals, the ref of their R_size
};

word& tuple_size(frame& f, word t) {
    return f.slot(e_sizes + static_cast<unsigned>(t));
}
word& tuple_idx(frame& f, word t) {
    return f.slot(e_idx + static_cast<unsigned>(t));
}
unsigned count_slot(word size) {
    return x_radicals + 2 * static_cast<unsigned>(size);
}
unsigned ref_slot(word size) {
    return count_slot(size) + 1;
}
word count_of(frame& f, word size) {
    return f.slot(count_slot(size));
}

// Sizes j..k-1: the least non-decreasing completion with each in [v, cap] summing to rest.
bool fill_sizes(frame& f, word j, word v, word rest) {
    const word k = f.slot(e_k);
    const word cap = f.slot(e_cap);
    const word r = k - j;
    if (v > cap || r * v > rest || rest > r * cap) return false;
    word excess = rest - r * v;
    for (word t = k; t-- > j;) {
        const word add = std::min(excess, cap - v);
        tuple_size(f, t) = v + add;
        excess -= add;
    }
    for (word t = 0; t < k; ++t) tuple_idx(f, t) = 0;
    return true;
}
bool first_tuple(frame& f) {
    return fill_sizes(f, 0, 0, f.slot(e_sum));
}
bool next_indices(frame& f) {
    const word k = f.slot(e_k);
    for (word t = k; t-- > 0;) {
        if (tuple_idx(f, t) + 1 >= count_of(f, tuple_size(f, t))) continue;
        ++tuple_idx(f, t);
        for (word u = t + 1; u < k; ++u)
            tuple_idx(f, u) = tuple_size(f, u) == tuple_size(f, u - 1) ? tuple_idx(f, u - 1) : 0;
        return true;
    }
    return false;
}
bool next_partition(frame& f) {
    const word k = f.slot(e_k);
    for (word j = k; j-- > 0;) {
        word before = 0;
        for (word t = 0; t < j; ++t) before += tuple_size(f, t);
        if (fill_sizes(f, j, tuple_size(f, j) + 1, f.slot(e_sum) - before)) return true;
    }
    return false;
}
bool next_tuple(frame& f) {
    return next_indices(f) || next_partition(f);
}
void set_shape(frame& f, word k, word sum, word cap) {
    f.slot(e_k) = k;
    f.slot(e_sum) = sum;
    f.slot(e_cap) = cap;
}

// ---- rad(s) ---------------------------------------------------------------------------------
enum : am::tam::inlet_id { r_in_args, r_in_count };
enum : am::tam::thread_id {
    r_t_fetch,
    r_t_counted,
    r_t_count_loop,
    r_t_publish,
    r_t_write_loop,
    r_t_done
};

// for j in 0..s-1: fetch COUNTS[j]
void rad_fetch(frame& f) {
    const word j = f.slot(x_j);
    f.ifetch(istruct_ref::from(f.slot(x_counts)), static_cast<std::uint32_t>(j), r_in_count, j);
    f.slot(x_j) = j + 1;
    if (j + 1 < f.slot(x_size)) f.fork(r_t_fetch);
}
// All smaller counts are known: enumerate once, counting.
void rad_counted(frame& f) {
    const word s = f.slot(x_size);
    set_shape(f, 3, s - 1, s - 1);
    f.slot(x_count) = 0;
    if (first_tuple(f)) f.fork(r_t_count_loop);
}
void rad_count_loop(frame& f) {
    ++f.slot(x_count);
    f.fork(next_tuple(f) ? r_t_count_loop : r_t_publish);
}
void rad_publish(frame& f) {
    const word s = f.slot(x_size);
    const istruct_ref own = f.ialloc(static_cast<std::uint32_t>(f.slot(x_count)));
    f.slot(x_own) = own.as_word();
    f.istore(istruct_ref::from(f.slot(x_rads)), static_cast<std::uint32_t>(s), own.as_word());
    f.istore(istruct_ref::from(f.slot(x_counts)), static_cast<std::uint32_t>(s), f.slot(x_count));
    f.slot(x_pos) = 0;
    if (first_tuple(f)) f.fork(r_t_write_loop);
}
// Enumerate again: R_s[pos] = the packed ids of the three sub-radicals.
void rad_write_loop(frame& f) {
    word description = 0;
    for (word t = 0; t < 3; ++t)
        description |= radical_id(tuple_size(f, t), tuple_idx(f, t)) << (21 * t);
    const word pos = f.slot(x_pos);
    f.istore(istruct_ref::from(f.slot(x_own)), static_cast<std::uint32_t>(pos), description);
    f.slot(x_pos) = pos + 1;
    f.fork(next_tuple(f) ? r_t_write_loop : r_t_done);
}
void rad_done(frame& f) {
    f.send(frame_ref::from(f.slot(x_main)), m_in_rad_done, {f.slot(x_size)});
    f.release();
}
void rad_in_args(frame& f, std::span<const word> a) {
    f.slot(x_main) = a[0];
    f.slot(x_counts) = a[1];
    f.slot(x_rads) = a[2];
    f.slot(x_size) = a[3];
    f.slot(x_j) = 0;
    f.set_count(r_t_counted, static_cast<std::uint32_t>(a[3]));
    f.post(r_t_fetch);
}
void rad_in_count(frame& f, std::span<const word> a) {
    f.slot(count_slot(a[1])) = a[0];
    f.post(r_t_counted);
}

// ---- para(m) --------------------------------------------------------------------------------
// Enumerates the size partitions of its CCPs and BCPs and calls combos on each (on the ranks
// in turn); sums what they return. Its slots: x_pos = calls made, x_got = calls returned.
enum : am::tam::inlet_id { p_in_args, p_in_child };
enum : am::tam::thread_id { p_t_phase, p_t_call, p_t_ended, p_t_report };

/// A partition (k sizes, each at most 15) in one argument word.
word pack_shape(frame& f) {
    const word k = f.slot(e_k);
    word shape = k;
    for (word t = 0; t < k; ++t) shape |= tuple_size(f, t) << (3 + 5 * t);
    return shape;
}

// Phase 0: the CCPs; phase 1: the BCPs (m even); phase 2: the enumeration has ended.
void para_phase(frame& f) {
    const word m = f.slot(x_size);
    const word phase = f.slot(x_phase);
    if (phase == 0) set_shape(f, 4, m - 1, (m - 1) / 2);
    if (phase == 1) set_shape(f, 2, m, m / 2);
    if (phase < 2 && first_tuple(f)) {
        f.fork(p_t_call);
        return;
    }
    ++f.slot(x_phase);
    f.fork(phase < 2 ? p_t_phase : p_t_ended);
}
// for each partition: call combos on the next rank
void para_call(frame& f) {
    const word j = f.slot(x_j);
    f.slot(x_j) = j + 1;
    f.call(cb_combos, static_cast<int>(j % static_cast<word>(f.ranks())), 0,
           {f.self().as_word(), f.slot(x_counts), f.slot(x_rads), pack_shape(f)});
    ++f.slot(x_pos);
    if (next_partition(f)) {
        f.fork(p_t_call);
    } else {
        ++f.slot(x_phase);
        f.fork(p_t_phase);
    }
}
// The report runs once: here if every call has returned, else after the last one returns.
void para_ended(frame& f) {
    f.slot(x_done) = 1;
    if (f.slot(x_got) == f.slot(x_pos)) f.fork(p_t_report);
}
void para_report(frame& f) {
    const word value = size_hash(f.slot(x_size), f.slot(x_count)) + f.slot(x_acc);
    f.send(frame_ref::from(f.slot(x_main)), m_in_para_done, {value});
    f.release();
}
void para_in_args(frame& f, std::span<const word> a) {
    f.slot(x_main) = a[0];
    f.slot(x_counts) = a[1];
    f.slot(x_rads) = a[2];
    f.slot(x_size) = a[3];
    f.slot(x_j) = a[3];  // the first callee's rank (mod ranks)
    f.slot(x_count) = 0;
    f.slot(x_pos) = 0;
    f.slot(x_got) = 0;
    f.slot(x_acc) = 0;
    f.slot(x_done) = 0;
    f.slot(x_phase) = 0;
    f.post(p_t_phase);
}
void para_in_child(frame& f, std::span<const word> a) {
    f.slot(x_count) += a[0];
    f.slot(x_acc) += a[1];
    ++f.slot(x_got);
    if (f.slot(x_done) && f.slot(x_got) == f.slot(x_pos)) f.post(p_t_report);
}

// ---- combos(partition) ----------------------------------------------------------------------
// Reads the counts and the description I-structures of its sizes (deferred until rad has
// published them), then for each index tuple fetches the descriptions of its k radicals into
// x_desc and, when all k have arrived, adds their hash. Returns (count, hash sum) to para.
enum : am::tam::inlet_id { c_in_args, c_in_count, c_in_ref, c_in_description };
enum : am::tam::thread_id { c_t_fetch, c_t_ready, c_t_visit, c_t_combine, c_t_report };

// for t in 0..k-1: fetch COUNTS[size_t] and RADS[size_t]
void combos_fetch(frame& f) {
    const word t = f.slot(x_j);
    const auto size = static_cast<std::uint32_t>(tuple_size(f, t));
    f.ifetch(istruct_ref::from(f.slot(x_counts)), size, c_in_count, size);
    f.ifetch(istruct_ref::from(f.slot(x_rads)), size, c_in_ref, size);
    f.slot(x_j) = t + 1;
    if (t + 1 < f.slot(e_k)) f.fork(c_t_fetch);
}
void combos_ready(frame& f) {
    f.fork(c_t_visit);
}
// One paraffin: fetch the descriptions of its radicals.
void combos_visit(frame& f) {
    const word k = f.slot(e_k);
    f.set_count(c_t_combine, static_cast<std::uint32_t>(k));
    for (word t = 0; t < k; ++t) {
        const istruct_ref r = istruct_ref::from(f.slot(ref_slot(tuple_size(f, t))));
        f.ifetch(r, static_cast<std::uint32_t>(tuple_idx(f, t)), c_in_description, t);
    }
}
void combos_combine(frame& f) {
    const word k = f.slot(e_k);
    for (word t = 0; t < k; ++t)
        f.slot(x_acc) += radical_hash(f.slot(x_desc + static_cast<unsigned>(t)), t);
    ++f.slot(x_count);
    f.fork(next_indices(f) ? c_t_visit : c_t_report);
}
void combos_report(frame& f) {
    f.send(frame_ref::from(f.slot(x_main)), p_in_child, {f.slot(x_count), f.slot(x_acc)});
    f.release();
}
void combos_in_args(frame& f, std::span<const word> a) {
    f.slot(x_main) = a[0];
    f.slot(x_counts) = a[1];
    f.slot(x_rads) = a[2];
    const word k = a[3] & 7;
    f.slot(e_k) = k;
    for (word t = 0; t < k; ++t) {
        tuple_size(f, t) = a[3] >> (3 + 5 * t) & 31;
        tuple_idx(f, t) = 0;
    }
    f.slot(x_j) = 0;
    f.slot(x_count) = 0;
    f.slot(x_acc) = 0;
    f.set_count(c_t_ready, static_cast<std::uint32_t>(2 * k));
    f.post(c_t_fetch);
}
void combos_in_count(frame& f, std::span<const word> a) {
    f.slot(count_slot(a[1])) = a[0];
    f.post(c_t_ready);
}
void combos_in_ref(frame& f, std::span<const word> a) {
    f.slot(ref_slot(a[1])) = a[0];
    f.post(c_t_ready);
}
void combos_in_description(frame& f, std::span<const word> a) {
    f.slot(x_desc + static_cast<unsigned>(a[1])) = a[0];
    f.post(c_t_combine);
}

void check_arg(int n) {
    if (n < 1 || n > max_n)
        throw am::error(am::errc::invalid_argument, "tam_apps::paraffins: n must be in [1, " +
                                                        std::to_string(max_n) + "], not " +
                                                        std::to_string(n));
}

am::tam::program build(int n) {
    const auto maxrad = static_cast<unsigned>(n / 2);
    am::tam::program p;
    p.add(codeblock_def{"para_main",
                        m_slots,
                        {{main_start, 1, "start"},
                         {main_call_rad, 1, "call_rad"},
                         {main_call_para, 1, "call_para"},
                         {finish_with_slot<m_value>, 2, "done"}},  // count set: n/2 + n callees
                        {store_and_post<m_n, m_t_start>, post_only<m_t_done>, main_in_para_done}});
    p.add(codeblock_def{"rad",
                        x_radicals + 2 * (maxrad + 1),
                        {{rad_fetch, 1, "fetch"},
                         {rad_counted, 2, "counted"},  // count set: s fetches
                         {rad_count_loop, 1, "count_loop"},
                         {rad_publish, 1, "publish"},
                         {rad_write_loop, 1, "write_loop"},
                         {rad_done, 1, "done"}},
                        {rad_in_args, rad_in_count}});
    p.add(codeblock_def{"para",
                        x_radicals,
                        {{para_phase, 1, "phase"},
                         {para_call, 1, "call"},
                         {para_ended, 1, "ended"},
                         {para_report, 1, "report"}},
                        {para_in_args, para_in_child}});
    p.add(codeblock_def{"combos",
                        x_radicals + 2 * (maxrad + 1),
                        {{combos_fetch, 1, "fetch"},
                         {combos_ready, 2, "ready"},  // count set: 2k fetches
                         {combos_visit, 1, "visit"},
                         {combos_combine, 2, "combine"},  // count set: k descriptions
                         {combos_report, 1, "report"}},
                        {combos_in_args, combos_in_count, combos_in_ref, combos_in_description}});
    return p;
}

am::tam::result run(am::context& ctx, int n, const am::tam::options& opt) {
    check_arg(n);
    const am::tam::program p = build(n);
    return am::tam::run(ctx, p, cb_main, {static_cast<word>(n)}, opt);
}

}  // namespace

[[gnu::noinline]] am::tam::word paraffins_reference(int n) {
    check_arg(n);
    const auto size = static_cast<std::uint64_t>(n);
    const std::uint64_t maxrad = size / 2;
    // radicals[s]: the descriptions of the radicals of size s, as packed sub-radical ids
    std::vector<std::vector<std::uint64_t>> radicals(maxrad + 1);
    radicals[0].push_back(0);  // H
    for (std::uint64_t s = 1; s <= maxrad; ++s) {
        for (std::uint64_t a = 0; 3 * a <= s - 1; ++a) {
            for (std::uint64_t b = a; a + 2 * b <= s - 1; ++b) {
                const std::uint64_t c = s - 1 - a - b;
                for (std::uint64_t i = 0; i < radicals[a].size(); ++i)
                    for (std::uint64_t j = b == a ? i : 0; j < radicals[b].size(); ++j)
                        for (std::uint64_t l = c == b ? j : 0; l < radicals[c].size(); ++l)
                            radicals[s].push_back(radical_id(a, i) | radical_id(b, j) << 21 |
                                                  radical_id(c, l) << 42);
            }
        }
    }
    std::uint64_t value = 0;
    for (std::uint64_t m = 1; m <= size; ++m) {
        std::uint64_t count = 0;
        std::uint64_t hash = 0;
        // carbon-centred: four radicals of sizes a <= b <= c <= d <= (m-1)/2, a+b+c+d = m-1
        const std::uint64_t cap = (m - 1) / 2;
        for (std::uint64_t a = 0; a <= cap; ++a) {
            for (std::uint64_t b = a; b <= cap; ++b) {
                for (std::uint64_t c = b; c <= cap && a + b + c <= m - 1; ++c) {
                    const std::uint64_t d = m - 1 - a - b - c;
                    if (d < c || d > cap) continue;
                    const auto& ra = radicals[a];
                    const auto& rb = radicals[b];
                    const auto& rc = radicals[c];
                    const auto& rd = radicals[d];
                    for (std::uint64_t i = 0; i < ra.size(); ++i)
                        for (std::uint64_t j = b == a ? i : 0; j < rb.size(); ++j)
                            for (std::uint64_t l = c == b ? j : 0; l < rc.size(); ++l)
                                for (std::uint64_t o = d == c ? l : 0; o < rd.size(); ++o) {
                                    ++count;
                                    hash += radical_hash(ra[i], 0) + radical_hash(rb[j], 1) +
                                            radical_hash(rc[l], 2) + radical_hash(rd[o], 3);
                                }
                }
            }
        }
        // bond-centred: two radicals of size m/2
        if (m % 2 == 0) {
            const auto& r = radicals[m / 2];
            for (std::uint64_t i = 0; i < r.size(); ++i)
                for (std::uint64_t j = i; j < r.size(); ++j) {
                    ++count;
                    hash += radical_hash(r[i], 0) + radical_hash(r[j], 1);
                }
        }
        value += size_hash(m, count) + hash;
    }
    return value;
}

extern const app paraffins_app;
const app paraffins_app{"paraffins", "paraffins", 13, 22, run, paraffins_reference};

}  // namespace tam_apps
