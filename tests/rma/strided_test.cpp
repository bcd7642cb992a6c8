// SPDX-License-Identifier: MIT
// Strided (2-D block) and indexed (scatter/gather) put and get on both paths: blocks with
// strides wider than the rows, rows wider than max_medium(), many narrow rows, empty shapes;
// random index sets, repeats in gathers; everything written exactly where it should be and
// nowhere else; calls issued from handlers.
#include "rma/rma_support.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace {

using am_test::rma_test;

// A 3-byte element: strides and widths count objects, the library copies bytes.
struct rgb {
    std::uint8_t r, g, b;
    friend bool operator==(const rgb&, const rgb&) = default;
};
static_assert(sizeof(rgb) == 3);

constexpr rgb sentinel{0xee, 0xee, 0xee};
constexpr rgb poison{0xde, 0xad, 0xbe};

rgb cell(int owner, std::size_t row, std::size_t col, int round) {
    const std::uint64_t h =
        am_test::mix((static_cast<std::uint64_t>(owner) << 48) ^
                     (static_cast<std::uint64_t>(round) << 40) ^ (row << 20) ^ col);
    // Never the sentinel or the poison: the low byte avoids 0xee and 0xde.
    return {static_cast<std::uint8_t>(h & 0x7f), static_cast<std::uint8_t>(h >> 8),
            static_cast<std::uint8_t>(h >> 16)};
}

constexpr std::size_t cols = 24000;  // 72 000 bytes a row: one row is above max_medium()
constexpr std::size_t band = 6;      // rows of the matrix per source rank

struct shape {
    std::size_t row0 = 0, col0 = 0, width = 0, rows = 0, local_stride = 0;
};

// The block rank `src` moves to or from rank `dst` in `round`; `any_row` lets it start at any
// row of the matrix (gets), else it stays in the band of rows of `src` (puts).
shape strided_plan(int src, int dst, int round, std::size_t matrix_rows, bool any_row) {
    std::mt19937_64 rng(
        am_test::mix(static_cast<std::uint64_t>(src * 7919 + dst * 104729 + round)));
    auto pick = [&](std::size_t lo, std::size_t hi) {
        return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    shape s;
    switch ((round + src + dst) % 5) {
        case 0:  // whole rows: the remote block is contiguous
            s.width = cols, s.rows = band, s.col0 = 0;
            break;
        case 1:  // one column: many one-element rows
            s.width = 1, s.rows = band, s.col0 = pick(0, cols - 1);
            break;
        case 2:  // rows wider than a medium message
            s.width = cols - 5, s.rows = 2, s.col0 = pick(0, 5);
            break;
        case 3:  // empty
            s.width = 0, s.rows = band, s.col0 = pick(0, cols - 1);
            break;
        default:
            s.width = pick(1, 3000), s.rows = pick(1, band);
            s.col0 = pick(0, cols - s.width);
    }
    s.local_stride = s.width + pick(0, 6);  // sometimes equal to the width
    s.row0 = any_row ? pick(0, matrix_rows - s.rows) : static_cast<std::size_t>(src) * band;
    return s;
}

// Local buffer of a shape: block cells from `fill`, the gaps poisoned.
template <class F>
std::vector<rgb> local_block(const shape& s, F&& fill) {
    std::vector<rgb> v(s.rows * s.local_stride, poison);
    for (std::size_t i = 0; i < s.rows; ++i) {
        for (std::size_t j = 0; j < s.width; ++j) v[i * s.local_stride + j] = fill(i, j);
    }
    return v;
}

class strided : public rma_test {};

// Every rank puts a block into its band of every rank's matrix, all at once; each target then
// checks every cell: block cells hold the source's values, all others (including the columns
// between rows) the sentinel.
AM_RMA_TEST(strided, put_all_to_all) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::uint64_t>(n);
    const std::size_t rows = band * static_cast<std::size_t>(n);
    const int rounds = 5;
    am::counter flag(ctx);
    const auto matrix = ctx.allocate<rgb>(rows * cols);
    const auto all = ctx.exchange(matrix);
    rgb* const mine = ctx.local(matrix);
    for (int k = 0; k < rounds; ++k) {
        std::fill(mine, mine + rows * cols, sentinel);
        ctx.barrier();
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            const shape s = strided_plan(me, d, k, rows, false);
            const auto src = local_block(s, [&](std::size_t r, std::size_t c) {
                return cell(me, s.row0 + r, s.col0 + c, k);
            });
            const auto to = all[static_cast<std::size_t>(d)] +
                            static_cast<std::ptrdiff_t>(s.row0 * cols + s.col0);
            ctx.put_strided(to, cols, src.data(), s.local_stride, s.width, s.rows, flag);
        }
        flag.wait(un * static_cast<std::uint64_t>(k + 1));
        std::size_t wrong = 0;
        for (int src = 0; src < n; ++src) {
            const shape s = strided_plan(src, me, k, rows, false);
            for (std::size_t r = s.row0; r < s.row0 + band; ++r) {
                for (std::size_t c = 0; c < cols; ++c) {
                    const bool in = r - s.row0 < s.rows && c >= s.col0 && c < s.col0 + s.width;
                    const rgb want = in ? cell(src, r, c, k) : sentinel;
                    if (mine[r * cols + c] != want && wrong++ == 0) {
                        ADD_FAILURE()
                            << "round " << k << ": cell (" << r << ", " << c << ") from rank "
                            << src << (in ? " in" : " outside") << " the block " << s.width << " x "
                            << s.rows << " at (" << s.row0 << ", " << s.col0 << ")";
                    }
                }
            }
        }
        EXPECT_EQ(wrong, 0u) << "cells wrong in round " << k;
        ctx.barrier();
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), un * rounds);
}

// Every rank gets blocks from every rank's matrix, all outstanding at once, into local buffers
// whose stride is wider than the block: block cells hold the owner's values, gaps stay.
AM_RMA_TEST(strided, get_all_to_all) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::size_t>(n);
    const std::size_t rows = band * un;
    const int rounds = 5;
    am::counter flag(ctx);
    const auto matrix = ctx.allocate<rgb>(rows * cols);
    rgb* const mine = ctx.local(matrix);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) mine[r * cols + c] = cell(me, r, c, 0);
    }
    const auto all = ctx.exchange(matrix);
    ctx.barrier();
    std::vector<std::vector<rgb>> bufs(un * rounds);
    for (int k = 0; k < rounds; ++k) {
        for (int i = 0; i < n; ++i) {
            const int s = (me + i) % n;
            const shape sh = strided_plan(me, s, k, rows, true);
            auto& buf = bufs[static_cast<std::size_t>(k) * un + s];
            buf.assign(sh.rows * sh.local_stride, poison);
            const auto from = all[static_cast<std::size_t>(s)] +
                              static_cast<std::ptrdiff_t>(sh.row0 * cols + sh.col0);
            ctx.get_strided(buf.data(), sh.local_stride, from, cols, sh.width, sh.rows, flag);
        }
    }
    flag.wait(un * rounds);
    for (int k = 0; k < rounds; ++k) {
        for (int s = 0; s < n; ++s) {
            const shape sh = strided_plan(me, s, k, rows, true);
            const auto want = local_block(sh, [&](std::size_t r, std::size_t c) {
                return cell(s, sh.row0 + r, sh.col0 + c, 0);
            });
            const auto& got = bufs[static_cast<std::size_t>(k) * un + s];
            AM_EXPECT_BYTES(got, want)
                << " (byte; 3 per cell) round " << k << ", block " << sh.width << " x " << sh.rows
                << " at (" << sh.row0 << ", " << sh.col0 << ") of rank " << s;
        }
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), un * rounds);
}

// Blocking strided put, read back at once by a blocking strided get with another local stride.
AM_RMA_TEST(strided, blocking) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    const std::size_t rows = band * static_cast<std::size_t>(n);
    const auto matrix = ctx.allocate<rgb>(rows * cols);
    std::fill(ctx.local(matrix), ctx.local(matrix) + rows * cols, sentinel);
    const auto all = ctx.exchange(matrix);
    for (int k = 0; k < 5; ++k) {
        const shape s = strided_plan(me, right, k, rows, false);
        const auto src = local_block(
            s, [&](std::size_t r, std::size_t c) { return cell(me, s.row0 + r, s.col0 + c, k); });
        const auto at = all[static_cast<std::size_t>(right)] +
                        static_cast<std::ptrdiff_t>(s.row0 * cols + s.col0);
        ctx.put_strided(at, cols, src.data(), s.local_stride, s.width, s.rows);
        const std::size_t stride = s.width + 3;
        std::vector<rgb> back(s.rows * stride, poison);
        ctx.get_strided(back.data(), stride, at, cols, s.width, s.rows);
        shape t = s;
        t.local_stride = stride;
        const auto want = local_block(
            t, [&](std::size_t r, std::size_t c) { return cell(me, s.row0 + r, s.col0 + c, k); });
        AM_EXPECT_BYTES(back, want) << " round " << k << ": block " << s.width << " x " << s.rows;
    }
    ctx.barrier();
}

AM_INSTANTIATE(strided, am_test::make_params({1, 2, 4}, {1, 2, 4}));

// ---------------------------------------------------------------------------------- indexed

// A 12-byte element.
struct rec {
    std::uint32_t a, b, c;
    friend bool operator==(const rec&, const rec&) = default;
};
static_assert(sizeof(rec) == 12);

constexpr rec blank{0xeeeeeeee, 0xeeeeeeee, 0xeeeeeeee};
constexpr std::size_t elements = 30000;

rec value(int owner, std::uint64_t index, int round) {
    const std::uint64_t h = am_test::mix((static_cast<std::uint64_t>(owner) << 40) ^
                                         (static_cast<std::uint64_t>(round) << 32) ^ index);
    return {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(h),
            static_cast<std::uint32_t>(h >> 32) & 0x7fffffff};
}

// Distinct indices rank `src` scatters into rank `dst` in `round`: only indices i with
// i % n == src (disjoint between sources), in random order; sizes cycle through empty, one,
// more than fits a medium message, and random.
std::vector<std::uint64_t> scatter_plan(int src, int dst, int round, int n,
                                        std::size_t max_medium) {
    std::mt19937_64 rng(am_test::mix(static_cast<std::uint64_t>(src * 31 + dst * 1031 + round)));
    std::vector<std::uint64_t> own;
    for (std::uint64_t i = static_cast<std::uint64_t>(src); i < elements;
         i += static_cast<std::uint64_t>(n)) {
        own.push_back(i);
    }
    std::ranges::shuffle(own, rng);
    std::size_t k = 0;
    switch ((round + src + dst) % 4) {
        case 0:
            k = 0;
            break;
        case 1:
            k = 1;
            break;
        case 2:
            k = max_medium / sizeof(rec) + 5;
            break;
        default:
            k = std::uniform_int_distribution<std::size_t>(1, own.size())(rng);
    }
    own.resize(std::min(k, own.size()));
    return own;
}

// Indices rank `me` gathers from rank `src`: random with repeats, both ends included.
std::vector<std::uint64_t> gather_plan(int me, int src, int round, std::size_t max_medium) {
    std::mt19937_64 rng(am_test::mix(static_cast<std::uint64_t>(me * 17 + src * 7717 + round + 5)));
    std::size_t k = 0;
    switch ((round + me + src) % 4) {
        case 0:
            k = 0;
            break;
        case 1:
            k = 1;
            break;
        case 2:
            k = max_medium / sizeof(rec) + 5;
            break;
        default:
            k = std::uniform_int_distribution<std::size_t>(1, 4000)(rng);
    }
    std::vector<std::uint64_t> idx(k);
    for (auto& i : idx) i = std::uniform_int_distribution<std::uint64_t>(0, elements - 1)(rng);
    if (k >= 4) {
        idx[0] = elements - 1, idx[1] = 0, idx[2] = idx[3];  // both ends and a repeat
    }
    return idx;
}

class indexed : public rma_test {};

AM_RMA_TEST(indexed, scatter_all_to_all) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::uint64_t>(n);
    const int rounds = 4;
    am::counter flag(ctx);
    const auto array = ctx.allocate<rec>(elements);
    const auto all = ctx.exchange(array);
    rec* const mine = ctx.local(array);
    for (int k = 0; k < rounds; ++k) {
        std::fill(mine, mine + elements, blank);
        ctx.barrier();
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            const auto idx = scatter_plan(me, d, k, n, ctx.max_medium());
            std::vector<rec> src(idx.size());
            for (std::size_t j = 0; j < idx.size(); ++j) src[j] = value(me, idx[j], k);
            ctx.put_indexed(all[static_cast<std::size_t>(d)], idx, src.data(), flag);
        }
        flag.wait(un * static_cast<std::uint64_t>(k + 1));
        std::vector<rec> want(elements, blank);
        for (int s = 0; s < n; ++s) {
            for (std::uint64_t i : scatter_plan(s, me, k, n, ctx.max_medium()))
                want[i] = value(s, i, k);
        }
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < elements; ++i) {
            if (mine[i] != want[i] && wrong++ == 0) {
                ADD_FAILURE() << "round " << k << ": element " << i << " (source rank "
                              << i % static_cast<std::size_t>(n) << ") "
                              << (want[i] == blank ? "written but not scattered to" : "wrong");
            }
        }
        EXPECT_EQ(wrong, 0u) << "elements wrong in round " << k;
        ctx.barrier();
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), un * rounds);
}

AM_RMA_TEST(indexed, gather_all_to_all) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::size_t>(n);
    const int rounds = 4;
    am::counter flag(ctx);
    const auto array = ctx.allocate<rec>(elements);
    for (std::size_t i = 0; i < elements; ++i) ctx.local(array)[i] = value(me, i, 0);
    const auto all = ctx.exchange(array);
    ctx.barrier();
    std::vector<std::vector<std::uint64_t>> idx(un * rounds);
    std::vector<std::vector<rec>> got(un * rounds);
    for (int k = 0; k < rounds; ++k) {
        for (int i = 0; i < n; ++i) {
            const int s = (me + i) % n;
            const std::size_t at = static_cast<std::size_t>(k) * un + s;
            idx[at] = gather_plan(me, s, k, ctx.max_medium());
            got[at].assign(idx[at].size(), blank);
            ctx.get_indexed(got[at].data(), all[static_cast<std::size_t>(s)], idx[at], flag);
        }
    }
    flag.wait(un * rounds);
    for (int k = 0; k < rounds; ++k) {
        for (int s = 0; s < n; ++s) {
            const std::size_t at = static_cast<std::size_t>(k) * un + s;
            std::vector<rec> want(idx[at].size());
            for (std::size_t j = 0; j < want.size(); ++j) want[j] = value(s, idx[at][j], 0);
            AM_EXPECT_BYTES(got[at], want) << " (byte; 12 per element) round " << k << ": "
                                           << want.size() << " elements from rank " << s;
        }
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), un * rounds);
}

// Blocking scatter then gather of the same indices from the right neighbour.
AM_RMA_TEST(indexed, blocking) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    const auto array = ctx.allocate<rec>(elements);
    std::fill(ctx.local(array), ctx.local(array) + elements, blank);
    const auto all = ctx.exchange(array);
    const auto target = all[static_cast<std::size_t>(right)];
    for (int k = 0; k < 4; ++k) {
        const auto idx = scatter_plan(0, right, k, 1, ctx.max_medium());  // any index
        std::vector<rec> src(idx.size());
        for (std::size_t j = 0; j < idx.size(); ++j) src[j] = value(me, idx[j], k);
        ctx.put_indexed(target, idx, src.data());
        std::vector<rec> back(idx.size(), blank);
        std::vector<std::uint64_t> reversed(idx.rbegin(), idx.rend());
        ctx.get_indexed(back.data(), target, reversed);
        std::ranges::reverse(back);
        AM_EXPECT_BYTES(back, src) << " round " << k << ": " << idx.size() << " elements";
    }
    ctx.barrier();
}

// A request handler issues a strided get from the requester's matrix and an indexed put into
// the requester's array (split-phase, flags on both sides).
AM_RMA_TEST(indexed, from_handler) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    constexpr std::size_t rows = 4;
    am::counter put_flag(ctx), get_flag(ctx), served(ctx);
    const auto matrix = ctx.allocate<rgb>(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) ctx.local(matrix)[r * cols + c] = cell(me, r, c, 0);
    }
    const auto array = ctx.allocate<rec>(elements);
    std::fill(ctx.local(array), ctx.local(array) + elements, blank);
    const auto matrices = ctx.exchange(matrix);
    const auto arrays = ctx.exchange(array);
    // Shapes by request number: narrow and wide (rows above max_medium()).
    const shape shapes[] = {{1, 2, 4, 3, 5}, {0, 3, cols - 7, 3, cols}};
    std::vector<std::vector<rgb>> pulled(std::size(shapes));
    for (std::size_t k = 0; k < std::size(shapes); ++k) {
        pulled[k].assign(shapes[k].rows * shapes[k].local_stride, poison);
    }
    auto serve = ctx.handler([&](am::token& t, std::uint64_t k) {
        const auto src = static_cast<std::size_t>(t.source());
        const shape& s = shapes[k];
        t.ctx().get_strided(pulled[k].data(), s.local_stride,
                            matrices[src] + static_cast<std::ptrdiff_t>(s.row0 * cols + s.col0),
                            cols, s.width, s.rows, get_flag);
        const auto idx = scatter_plan(static_cast<int>(k), 0, 2, 2, ctx.max_medium());
        std::vector<rec> vals(idx.size());
        for (std::size_t j = 0; j < idx.size(); ++j)
            vals[j] = value(static_cast<int>(src), idx[j], 1);
        t.ctx().put_indexed(arrays[src], idx, vals.data(), put_flag);
        served.add();
    });
    ctx.barrier();
    for (std::uint64_t k = 0; k < std::size(shapes); ++k) ctx.request(right, serve, k);
    put_flag.wait(std::size(shapes));
    std::vector<rec> want(elements, blank);
    for (int k = 0; k < static_cast<int>(std::size(shapes)); ++k) {
        for (std::uint64_t i : scatter_plan(k, 0, 2, 2, ctx.max_medium()))
            want[i] = value(me, i, 1);
    }
    AM_EXPECT_BYTES(std::span(ctx.local(array), elements), want) << " (12 per element)";
    served.wait(std::size(shapes));
    get_flag.wait(std::size(shapes));
    for (std::size_t k = 0; k < std::size(shapes); ++k) {
        const shape& s = shapes[k];
        const auto expect = local_block(
            s, [&](std::size_t r, std::size_t c) { return cell(left, s.row0 + r, s.col0 + c, 0); });
        AM_EXPECT_BYTES(pulled[k], expect) << " strided get " << k << " from rank " << left;
    }
    ctx.quiesce();
    EXPECT_EQ(put_flag.value(), std::size(shapes));
    EXPECT_EQ(get_flag.value(), std::size(shapes));
}

// Elements larger than a medium message (70 000 bytes): gathers of one element into this rank's
// segment and into private memory, gathers with repeats, and a scatter.
struct big {
    std::byte bytes[70000];
};

std::uint64_t big_seed(int owner, std::uint64_t index) {
    return am_test::mix(static_cast<std::uint64_t>(owner) * 1000 + index + 1);
}

AM_RMA_TEST(indexed, large_elements) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    constexpr std::size_t count = 6;
    ASSERT_GT(sizeof(big), ctx.max_medium());
    am::counter flag(ctx), got(ctx);
    const auto array = ctx.allocate<big>(count);
    for (std::size_t i = 0; i < count; ++i) {
        am_test::fill_pattern(ctx.local(array)[i].bytes, big_seed(me, i));
    }
    const auto inbox = ctx.allocate<big>(4);
    std::fill_n(reinterpret_cast<std::byte*>(ctx.local(inbox)), 4 * sizeof(big), std::byte{0xcd});
    const auto landing = ctx.allocate<big>(1);
    const auto arrays = ctx.exchange(array);
    const auto inboxes = ctx.exchange(inbox);
    const auto theirs = arrays[static_cast<std::size_t>(right)];
    const std::vector<std::uint64_t> one4 = {4}, one2 = {2}, three = {5, 1, 5};
    std::vector<big> priv(4);
    ctx.get_indexed(ctx.local(landing), theirs, one4, got);  // into this rank's segment
    ctx.get_indexed(priv.data(), theirs, one2, got);
    ctx.get_indexed(priv.data() + 1, theirs, three, got);
    got.wait(3);
    AM_EXPECT_BYTES(ctx.local(landing)->bytes, am_test::pattern(sizeof(big), big_seed(right, 4)))
        << " element 4 gathered into the segment";
    AM_EXPECT_BYTES(priv[0].bytes, am_test::pattern(sizeof(big), big_seed(right, 2)))
        << " element 2 gathered into private memory";
    for (std::size_t j = 0; j < three.size(); ++j) {
        AM_EXPECT_BYTES(priv[1 + j].bytes, am_test::pattern(sizeof(big), big_seed(right, three[j])))
            << " gathered element " << j << " (index " << three[j] << ")";
    }
    // Scatter two elements into slots 3 and 1 of the right neighbour's inbox.
    std::vector<big> src(2);
    am_test::fill_pattern(src[0].bytes, big_seed(me, 100));
    am_test::fill_pattern(src[1].bytes, big_seed(me, 101));
    const std::vector<std::uint64_t> slots = {3, 1};
    ctx.put_indexed(inboxes[static_cast<std::size_t>(right)], slots, src.data(), flag);
    flag.wait(1);
    const big* mine = ctx.local(inbox);
    AM_EXPECT_BYTES(mine[3].bytes, am_test::pattern(sizeof(big), big_seed(left, 100)));
    AM_EXPECT_BYTES(mine[1].bytes, am_test::pattern(sizeof(big), big_seed(left, 101)));
    for (std::size_t j : {0u, 2u}) {
        EXPECT_TRUE(std::all_of(mine[j].bytes, mine[j].bytes + sizeof(big),
                                [](std::byte b) { return b == std::byte{0xcd}; }))
            << "slot " << j << " was not scattered to";
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), 1u);
    EXPECT_EQ(got.value(), 3u);
}

AM_INSTANTIATE(indexed, am_test::make_params({1, 2, 4}, {1, 2, 4}));

}  // namespace
