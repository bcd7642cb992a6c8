/* SPDX-License-Identifier: MIT */
/*
 * Split-C global memory from C (am/am_splitc.h). `splitc_test <scenario>` runs one scenario on
 * every rank through am_run (transport and rank count from AM_TRANSPORT / AM_RANKS; AM_RMA=am
 * forces the active-message path) and exits non-zero when any check fails on any rank: a
 * failing rank prints "splitc_test: FAILED ..." and calls am_abort. AM_CAPI_VERBOSE=1 prints
 * each error message that was checked.
 *
 * Every rank puts to its right neighbour and gets from it; every remote flag is created in
 * the same order on every rank, and freed only after a barrier that follows the last wait.
 */
#include <am/am.h>
#include <am/am_splitc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct rank_state {
    CHECK_RANK_FIELDS;
    unsigned bad;
    size_t seg_bytes;
    size_t max_medium;
    /* the handler scenario */
    am_handler_t h_put_back;
    am_splitc_gptr_t* all; /* every rank's region */
    am_splitc_flag_t* h_flag;
    am_counter_t handled;
} rank_state;

static unsigned char pattern(int owner, size_t i) {
    return (unsigned char)((size_t)owner * 151u + i * 13u + 7u);
}

static void fill(unsigned char* p, int owner, size_t len) {
    for (size_t i = 0; i < len; ++i) p[i] = pattern(owner, i);
}

/* Index of the first byte of `p` that is not pattern(owner, first + i), or len. */
static size_t first_wrong(const unsigned char* p, int owner, size_t first, size_t len) {
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != pattern(owner, first + i)) return i;
    }
    return len;
}

static size_t count_not(const unsigned char* p, unsigned char v, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; ++i) n += p[i] != v;
    return n;
}

/* ------------------------------------------------------------------------------ memory */

/* Allocation, exchange, local and global addresses, flags, and their errors. */
static int scenario_memory(rank_state* s) {
    am_splitc_gptr_t a, b, g;
    REQUIRE_OK(s, am_splitc_alloc(s->ctx, 1000, 0, &a));
    REQUIRE(s, a.rank == s->rank && a.offset % 16 == 0 && a.offset + 1000 <= s->seg_bytes);
    REQUIRE_OK(s, am_splitc_alloc(s->ctx, 10, 4096, &b));
    REQUIRE(s, b.rank == s->rank && b.offset % 4096 == 0 && b.offset != a.offset);
    REQUIRE(s, !am_splitc_gptr_is_null(a) && am_splitc_gptr_is_null(am_splitc_gptr(-1, 0)));
    REQUIRE(s, am_splitc_gptr_add(a, 24).offset == a.offset + 24 &&
                   am_splitc_gptr_add(a, 24).rank == s->rank);

    /* local <-> global */
    size_t seg_bytes = 0;
    unsigned char* seg = am_segment(s->ctx, &seg_bytes);
    unsigned char* la = am_splitc_local(s->ctx, a, 1000);
    REQUIRE(s, la == seg + a.offset);
    REQUIRE_OK(s, am_splitc_to_global(s->ctx, la + 10, 4, &g));
    REQUIRE(s, g.rank == s->rank && g.offset == a.offset + 10);
    REQUIRE(s, am_splitc_local(s->ctx, am_splitc_gptr(-1, 0), 1) == NULL);
    REQUIRE(s, am_splitc_local(s->ctx, am_splitc_gptr(s->size, 0), 1) == NULL);
    REQUIRE(s, am_splitc_local(s->ctx, am_splitc_gptr(s->rank, s->seg_bytes - 8), 16) == NULL);
    REQUIRE(s, am_splitc_local(NULL, a, 1) == NULL);

    /* exchange: everyone's block, indexed by rank (the allgather orders this write before
     * every other rank's read below) */
    snprintf((char*)la, 16, "block of %d", s->rank);
    am_splitc_gptr_t* all = calloc((size_t)s->size, sizeof *all);
    REQUIRE(s, all != NULL);
    int ok = am_splitc_exchange(s->ctx, a, all) == AM_OK;
    for (int r = 0; ok && r < s->size; ++r) ok = all[r].rank == r && all[r].offset % 16 == 0;
    ok = ok && all[s->rank].offset == a.offset;
    am_splitc_gptr_t right_block = all[s->right];
    free(all);
    REQUIRE(s, ok);
    /* A mapped neighbour's block (threads, shm) is the memory its owner wrote. */
    const char* lr = am_splitc_local(s->ctx, right_block, 16);
    char want[16];
    snprintf(want, sizeof want, "block of %d", s->right);
    REQUIRE(s, lr == NULL || strcmp(lr, want) == 0);
    unsigned char got[16] = {0};
    REQUIRE_OK(s, am_splitc_get(s->ctx, got, right_block, sizeof got));
    REQUIRE(s, strcmp((const char*)got, want) == 0);
    REQUIRE_OK(s, am_barrier(s->ctx)); /* the get above read the block: keep it until here */

    /* allocation errors */
    EXPECT_ERR(s, "am_splitc_alloc", am_splitc_alloc(s->ctx, 8, 24, &g), AM_ERR_INVALID_ARGUMENT,
               "alignment 24", "power of two");
    REQUIRE(s, am_splitc_gptr_is_null(g));
    EXPECT_ERR(s, "am_splitc_alloc", am_splitc_alloc(s->ctx, 8, s->seg_bytes * 2, &g),
               AM_ERR_INVALID_ARGUMENT, "no larger than the segment");
    char seg_text[32];
    snprintf(seg_text, sizeof seg_text, "%zu bytes", s->seg_bytes);
    EXPECT_ERR(s, "am_splitc_alloc", am_splitc_alloc(s->ctx, s->seg_bytes, 0, &g), AM_ERR_NO_MEMORY,
               seg_text, "AM_SEGMENT_BYTES");
    EXPECT_ERR(s, "am_splitc_alloc", am_splitc_alloc(s->ctx, SIZE_MAX, 0, &g), AM_ERR_NO_MEMORY,
               seg_text);
    EXPECT_ERR(s, "am_splitc_alloc", am_splitc_alloc(s->ctx, 8, 0, NULL), AM_ERR_INVALID_ARGUMENT,
               "null pointer for the result");
    REQUIRE(s, am_splitc_alloc(NULL, 8, 0, &g) == AM_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(s, "am_splitc_free", am_splitc_free(s->ctx, am_splitc_gptr_add(a, 16)),
               AM_ERR_INVALID_ARGUMENT, "not a block returned by am_splitc_alloc");
    if (s->size > 1) {
        EXPECT_ERR(s, "am_splitc_free", am_splitc_free(s->ctx, right_block),
                   AM_ERR_INVALID_ARGUMENT, "belongs to rank");
    }
    int on_stack = 0;
    EXPECT_ERR(s, "am_splitc_to_global",
               am_splitc_to_global(s->ctx, &on_stack, sizeof on_stack, &g), AM_ERR_OUT_OF_SEGMENT,
               "not inside this rank's segment", seg_text);
    EXPECT_ERR(s, "am_splitc_exchange", am_splitc_exchange(s->ctx, a, NULL),
               AM_ERR_INVALID_ARGUMENT, "null result array");

    /* A block released is found again by first fit. */
    REQUIRE_OK(s, am_splitc_free(s->ctx, b));
    EXPECT_ERR(s, "am_splitc_free", am_splitc_free(s->ctx, b), AM_ERR_INVALID_ARGUMENT,
               "not a block returned by am_splitc_alloc");
    REQUIRE_OK(s, am_splitc_alloc(s->ctx, 10, 4096, &g));
    REQUIRE(s, g.offset == b.offset);
    REQUIRE_OK(s, am_splitc_free(s->ctx, g));

    /* flags: count, add, reset, wait for a count already reached */
    am_splitc_flag_t* f = NULL;
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &f));
    REQUIRE(s, am_splitc_flag_value(f) == 0);
    am_splitc_flag_add(f, 3);
    REQUIRE(s, am_splitc_flag_value(f) == 3);
    REQUIRE_OK(s, am_splitc_flag_wait(f, 3));
    am_splitc_flag_reset(f);
    REQUIRE(s, am_splitc_flag_value(f) == 0);
    REQUIRE_OK(s, am_splitc_flag_wait(f, 0));
    REQUIRE(s, am_splitc_flag_wait(NULL, 0) == AM_ERR_INVALID_ARGUMENT &&
                   am_splitc_flag_value(NULL) == 0);
    EXPECT_ERR(s, "am_splitc_flag_create", am_splitc_flag_create(s->ctx, NULL),
               AM_ERR_INVALID_ARGUMENT, "null pointer for the flag");
    am_splitc_flag_free(NULL);

    /* The table of flag identities is finite: the first flag over it is refused. */
    am_splitc_flag_t** many = calloc(AM_SPLITC_MAX_FLAGS, sizeof *many);
    REQUIRE(s, many != NULL);
    size_t made = 0;
    am_status_t st = AM_OK;
    while (made < AM_SPLITC_MAX_FLAGS && (st = am_splitc_flag_create(s->ctx, &many[made])) == AM_OK)
        ++made;
    EXPECT_ERR(s, "am_splitc_flag_create", st, AM_ERR_TOO_LARGE, "AM_SPLITC_MAX_FLAGS = 4096");
    for (size_t i = 0; i < made; ++i) am_splitc_flag_free(many[i]);
    free(many);
    REQUIRE(s, made > 0 && made < AM_SPLITC_MAX_FLAGS);
    /* Freed positions are reused: one more flag works again. */
    am_splitc_flag_t* again = NULL;
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &again));
    am_splitc_flag_free(again);
    am_splitc_flag_free(f);
    REQUIRE_OK(s, am_splitc_free(s->ctx, a));
    return s->bad != 0;
}

/* ----------------------------------------------------------------------------- put/get */

/* The layout of every rank's region (offsets in bytes). */
enum {
    SMALL = 0,       /* 1000 bytes put split-phase by the left neighbour */
    STRIDED = 4096,  /* 7 rows of 24 bytes at stride 40, put by the left neighbour */
    INDEXED = 8192,  /* 12-byte elements scattered by the left neighbour */
    BACK = 12288,    /* 64 bytes put back by the right neighbour's handler */
    BIG = 16384,     /* the large put (`big` bytes), then `big` bytes of scratch */
    STRIDE_DST = 40, /* remote row stride of the strided put */
    STRIDE_SRC = 32, /* local row stride of the strided put */
    ROW = 24,        /* bytes per row */
    ROWS = 7,        /* rows */
    ELEM = 12,       /* bytes per indexed element */
    NIDX = 10        /* indexed elements */
};

static const uint64_t scatter_index[NIDX] = {9, 0, 5, 31, 2, 17, 4, 30, 11, 1};

/* The handler scenario's request: put 64 bytes back into the requester's region (a
 * split-phase put from a handler: Split-C's enqueue idiom), and check that the blocking calls
 * are refused here. */
static void put_back(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_state* s = user;
    unsigned char data[64];
    (void)args, (void)nargs;
    const int from = am_token_source(t);
    am_context_t* ctx = am_token_context(t);
    fill(data, s->rank + 1000, sizeof data);
    CHECK(s, am_splitc_put_nb(ctx, am_splitc_gptr_add(s->all[from], BACK), data, sizeof data,
                              s->h_flag, NULL) == AM_OK);
    EXPECT_ERR(s, "am_splitc_put", am_splitc_put(ctx, s->all[from], data, 8), AM_ERR_BAD_CONTEXT,
               "handler");
    EXPECT_ERR(s, "am_splitc_get", am_splitc_get(ctx, data, s->all[from], 8), AM_ERR_BAD_CONTEXT,
               "handler");
    EXPECT_ERR(s, "am_splitc_flag_wait", am_splitc_flag_wait(s->h_flag, 1), AM_ERR_BAD_CONTEXT,
               "handler");
    am_counter_add(&s->handled, 1);
}

typedef struct region {
    am_splitc_gptr_t mine, right;
    unsigned char* local; /* this rank's region, mapped here */
    size_t bytes, big;    /* the region's size; the large put's size */
} region;

/* Contiguous put and get, blocking and split-phase, small and large (more than a medium). */
static int contiguous(rank_state* s, const region* g, am_splitc_flag_t* f_small,
                      am_splitc_flag_t* done, am_splitc_flag_t* f_get) {
    unsigned char small[1000];
    unsigned char* big = malloc(g->big);
    unsigned char* back = malloc(g->big);
    REQUIRE(s, big != NULL && back != NULL);
    fill(small, s->rank, sizeof small);
    fill(big, s->rank, g->big);
    REQUIRE_OK(s, am_splitc_put_nb(s->ctx, am_splitc_gptr_add(g->right, SMALL), small, sizeof small,
                                   f_small, done));
    memset(small, 0, sizeof small); /* the source may be reused at once */
    REQUIRE_OK(s, am_splitc_put(s->ctx, am_splitc_gptr_add(g->right, BIG), big, g->big));
    REQUIRE_OK(s, am_splitc_flag_wait(done, 1));    /* my put is in place at the right */
    REQUIRE_OK(s, am_splitc_flag_wait(f_small, 1)); /* the left's put is in place here */
    REQUIRE(s, first_wrong(g->local + SMALL, s->left, 0, 1000) == 1000);
    REQUIRE_OK(s, am_barrier(s->ctx)); /* every blocking put returned */
    REQUIRE(s, first_wrong(g->local + BIG, s->left, 0, g->big) == g->big);

    /* Get back what this rank put: blocking, then split-phase into the heap and into this
     * rank's segment (a different path on active messages). Zero bytes count their flag. */
    memset(back, 0, g->big);
    REQUIRE_OK(s, am_splitc_get(s->ctx, back, am_splitc_gptr_add(g->right, SMALL), 1000));
    REQUIRE(s, first_wrong(back, s->rank, 0, 1000) == 1000);
    memset(back, 0, g->big);
    REQUIRE_OK(s, am_splitc_get_nb(s->ctx, back, am_splitc_gptr_add(g->right, BIG), g->big, f_get));
    REQUIRE_OK(s, am_splitc_get_nb(s->ctx, g->local + BACK + 64,
                                   am_splitc_gptr_add(g->right, BIG + 100), 200, f_get));
    REQUIRE_OK(s, am_splitc_get_nb(s->ctx, NULL, g->right, 0, f_get));
    REQUIRE_OK(s, am_splitc_flag_wait(f_get, 3));
    REQUIRE(s, first_wrong(back, s->rank, 0, g->big) == g->big);
    REQUIRE(s, first_wrong(g->local + BACK + 64, s->rank, 100, 200) == 200);
    REQUIRE_OK(s, am_splitc_put_nb(s->ctx, g->right, NULL, 0, NULL, done));
    REQUIRE_OK(s, am_splitc_flag_wait(done, 2));
    REQUIRE(s, am_splitc_flag_value(f_get) == 3);
    free(big);
    free(back);
    return 0;
}

/* Strided put and get: rows land at the target's stride, the gaps stay untouched; rows wider
 * than a medium payload go in pieces. */
static int strided(rank_state* s, const region* g, am_splitc_flag_t* f_str,
                   am_splitc_flag_t* f_get) {
    unsigned char src[ROWS * STRIDE_SRC], dst[ROWS * 30];
    fill(src, s->rank, sizeof src);
    REQUIRE_OK(s, am_splitc_put_strided_nb(s->ctx, am_splitc_gptr_add(g->right, STRIDED),
                                           STRIDE_DST, src, STRIDE_SRC, ROW, ROWS, f_str, NULL));
    REQUIRE_OK(s, am_splitc_flag_wait(f_str, 1));
    const unsigned char* at = g->local + STRIDED;
    for (size_t r = 0; r < ROWS; ++r) {
        REQUIRE(s, first_wrong(at + r * STRIDE_DST, s->left, r * STRIDE_SRC, ROW) == ROW);
        if (r + 1 < ROWS) REQUIRE(s, count_not(at + r * STRIDE_DST + ROW, 0xEE, 16) == 0);
    }
    REQUIRE_OK(s, am_barrier(s->ctx));
    /* back: the right's rows hold this rank's pattern */
    memset(dst, 0, sizeof dst);
    REQUIRE_OK(s, am_splitc_get_strided(s->ctx, dst, 30, am_splitc_gptr_add(g->right, STRIDED),
                                        STRIDE_DST, ROW, ROWS));
    for (size_t r = 0; r < ROWS; ++r) {
        REQUIRE(s, first_wrong(dst + r * 30, s->rank, r * STRIDE_SRC, ROW) == ROW);
        if (r + 1 < ROWS) REQUIRE(s, count_not(dst + r * 30 + ROW, 0, 6) == 0);
    }
    /* Two rows of max_medium + 100 bytes out of the right's big block, then a blocking put of
     * the same shape into this rank's scratch (after its big block, which the left reads). */
    const size_t w = s->max_medium + 100, stride = w + 50, scratch = BIG + g->big;
    unsigned char* rows = calloc(2, stride);
    REQUIRE(s, rows != NULL && stride + w <= g->big);
    REQUIRE_OK(s, am_splitc_get_strided_nb(s->ctx, rows, stride, am_splitc_gptr_add(g->right, BIG),
                                           stride, w, 2, f_get));
    REQUIRE_OK(s, am_splitc_flag_wait(f_get, 4));
    int ok = first_wrong(rows, s->rank, 0, w) == w &&
             first_wrong(rows + stride, s->rank, stride, w) == w && count_not(rows + w, 0, 50) == 0;
    if (ok) {
        ok = am_splitc_put_strided(s->ctx, am_splitc_gptr_add(g->mine, (int64_t)scratch), stride,
                                   rows, stride, w, 2) == AM_OK;
    }
    free(rows);
    REQUIRE(s, ok);
    REQUIRE(s, first_wrong(g->local + scratch, s->rank, 0, w) == w);
    REQUIRE(s, first_wrong(g->local + scratch + stride, s->rank, stride, w) == w);
    REQUIRE(s, count_not(g->local + scratch + w, 0xEE, 50) == 0);
    /* width or rows 0: nothing moves, the flag still counts */
    REQUIRE_OK(s, am_splitc_put_strided_nb(s->ctx, g->right, 8, NULL, 8, 0, 5, f_str, NULL));
    REQUIRE_OK(s, am_splitc_get_strided(s->ctx, NULL, 8, g->right, 8, 8, 0));
    return 0;
}

/* Indexed put (scatter) and get (gather) of 12-byte elements. */
static int indexed(rank_state* s, const region* g, am_splitc_flag_t* f_idx, am_splitc_flag_t* done,
                   am_splitc_flag_t* f_get) {
    unsigned char src[NIDX * ELEM], dst[NIDX * ELEM];
    fill(src, s->rank, sizeof src);
    REQUIRE_OK(s, am_splitc_put_indexed_nb(s->ctx, am_splitc_gptr_add(g->right, INDEXED),
                                           scatter_index, NIDX, src, ELEM, f_idx, done));
    REQUIRE_OK(s, am_splitc_flag_wait(f_idx, 1));
    for (size_t i = 0; i < NIDX; ++i) {
        REQUIRE(s, first_wrong(g->local + INDEXED + scatter_index[i] * ELEM, s->left, i * ELEM,
                               ELEM) == ELEM);
    }
    REQUIRE(s, count_not(g->local + INDEXED + 3 * ELEM, 0xEE, ELEM) == 0); /* not an index */
    REQUIRE_OK(s, am_splitc_flag_wait(done, 3));
    memset(dst, 0, sizeof dst);
    REQUIRE_OK(s, am_splitc_get_indexed_nb(s->ctx, dst, am_splitc_gptr_add(g->right, INDEXED),
                                           scatter_index, NIDX, ELEM, f_get));
    REQUIRE_OK(s, am_splitc_flag_wait(f_get, 5));
    REQUIRE(s, memcmp(dst, src, sizeof dst) == 0);
    /* blocking: gather two, scatter them to other indices of this rank's own block */
    const uint64_t two[2] = {31, 0}, to[2] = {40, 41};
    REQUIRE_OK(
        s, am_splitc_get_indexed(s->ctx, dst, am_splitc_gptr_add(g->right, INDEXED), two, 2, ELEM));
    REQUIRE(s, memcmp(dst, src + 3 * ELEM, ELEM) == 0 && memcmp(dst + ELEM, src + ELEM, ELEM) == 0);
    REQUIRE_OK(
        s, am_splitc_put_indexed(s->ctx, am_splitc_gptr_add(g->mine, INDEXED), to, 2, dst, ELEM));
    REQUIRE(s, memcmp(g->local + INDEXED + 40 * ELEM, src + 3 * ELEM, ELEM) == 0);
    return 0;
}

/* Every put/get call on every shape, blocking and split-phase, between neighbours and (with
 * one rank) to itself, checked byte by byte; then split-phase puts from handlers. */
static int scenario_putget(rank_state* s) {
    am_splitc_flag_t *f_small = NULL, *done = NULL, *f_get = NULL, *f_str = NULL, *f_idx = NULL;
    region g;
    g.big = 2 * (s->max_medium + 200);
    g.bytes = BIG + 2 * g.big;
    /* Remote flags in the same order on every rank. */
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &f_small));
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &done));
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &f_get));
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &f_str));
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &f_idx));
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &s->h_flag));
    REQUIRE_OK(s, am_register_short(s->ctx, put_back, 0, s, &s->h_put_back));
    REQUIRE_OK(s, am_splitc_alloc(s->ctx, g.bytes, 64, &g.mine));
    g.local = am_splitc_local(s->ctx, g.mine, g.bytes);
    REQUIRE(s, g.local != NULL);
    memset(g.local, 0xEE, g.bytes);
    s->all = calloc((size_t)s->size, sizeof *s->all);
    REQUIRE(s, s->all != NULL);
    /* The exchange orders the fill before any put; the barrier enables the handler. */
    REQUIRE_OK(s, am_splitc_exchange(s->ctx, g.mine, s->all));
    REQUIRE_OK(s, am_barrier(s->ctx));
    g.right = s->all[s->right];

    if (contiguous(s, &g, f_small, done, f_get) != 0) return 1;
    if (strided(s, &g, f_str, f_get) != 0) return 1;
    if (indexed(s, &g, f_idx, done, f_get) != 0) return 1;

    /* From a handler: the right neighbour puts 64 bytes back here. */
    REQUIRE_OK(s, am_request_short(s->ctx, s->right, s->h_put_back, NULL, 0));
    REQUIRE_OK(s, am_splitc_flag_wait(s->h_flag, 1));
    REQUIRE(s, first_wrong(g.local + BACK, s->right + 1000, 0, 64) == 64);
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->handled, 1));
    REQUIRE_OK(s, am_splitc_flag_wait(f_str, 2)); /* the left's empty strided put */

    /* Every put naming a flag here has been counted: free them after everyone is done. */
    REQUIRE_OK(s, am_barrier(s->ctx));
    REQUIRE(s, am_splitc_flag_value(f_small) == 1 && am_splitc_flag_value(f_idx) == 1 &&
                   am_splitc_flag_value(s->h_flag) == 1 && am_splitc_flag_value(f_str) == 2);
    am_splitc_flag_free(f_small);
    am_splitc_flag_free(done);
    am_splitc_flag_free(f_get);
    am_splitc_flag_free(f_str);
    am_splitc_flag_free(f_idx);
    am_splitc_flag_free(s->h_flag);
    free(s->all);
    REQUIRE_OK(s, am_splitc_free(s->ctx, g.mine));
    return s->bad != 0;
}

/* ------------------------------------------------------------------------------ errors */

static am_splitc_flag_t* foreign_flag; /* rank 1's flag, seen by rank 0 only on threads */

/* Every refused call names the call, the rank and the limit, and sends, copies and counts
 * nothing: the bytes at the end of the right's segment and the flags stay as they were. */
static int scenario_errors(rank_state* s) {
    unsigned char buf[64] = {0};
    am_splitc_flag_t *flag = NULL, *done = NULL;
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &flag));
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &done));
    if (s->rank == 1) foreign_flag = done;
    unsigned char* tail = am_splitc_local(s->ctx, am_splitc_gptr(s->rank, s->seg_bytes - 128), 128);
    REQUIRE(s, tail != NULL);
    memset(tail, 0x5A, 128);
    REQUIRE_OK(s, am_barrier(s->ctx));

    const size_t seg = s->seg_bytes;
    const am_splitc_gptr_t end = am_splitc_gptr(s->right, seg - 8);
    char right_seg[96], seg_text[32];
    snprintf(right_seg, sizeof right_seg, "outside rank %d's segment of %zu bytes", s->right, seg);
    snprintf(seg_text, sizeof seg_text, "%zu bytes", seg);

    /* out of the segment: contiguous, strided (also by overflow), indexed */
    EXPECT_ERR(s, "am_splitc_put", am_splitc_put(s->ctx, end, buf, 16), AM_ERR_OUT_OF_SEGMENT,
               right_seg);
    EXPECT_ERR(s, "am_splitc_put_nb", am_splitc_put_nb(s->ctx, end, buf, 16, flag, done),
               AM_ERR_OUT_OF_SEGMENT, right_seg);
    EXPECT_ERR(s, "am_splitc_get_nb", am_splitc_get_nb(s->ctx, buf, end, 9, flag),
               AM_ERR_OUT_OF_SEGMENT, right_seg);
    EXPECT_ERR(s, "am_splitc_get", am_splitc_get(s->ctx, buf, am_splitc_gptr(s->right, seg + 1), 0),
               AM_ERR_OUT_OF_SEGMENT, "offset", seg_text);
    EXPECT_ERR(s, "am_splitc_put_strided_nb",
               am_splitc_put_strided_nb(s->ctx, am_splitc_gptr(s->right, seg - 100), 40, buf, 8, 8,
                                        4, flag, NULL),
               AM_ERR_OUT_OF_SEGMENT, right_seg);
    EXPECT_ERR(
        s, "am_splitc_put_strided",
        am_splitc_put_strided(s->ctx, am_splitc_gptr(s->right, 8), SIZE_MAX / 2, buf, 8, 8, 3),
        AM_ERR_OUT_OF_SEGMENT, "overflow", right_seg);
    EXPECT_ERR(
        s, "am_splitc_get_strided",
        am_splitc_get_strided(s->ctx, buf, SIZE_MAX / 2, am_splitc_gptr(s->right, 0), 8, 8, 3),
        AM_ERR_INVALID_ARGUMENT, "overflow the local address space");
    EXPECT_ERR(s, "am_splitc_get_strided",
               am_splitc_get_strided(s->ctx, buf, 4, am_splitc_gptr(s->right, 0), 8, 8, 2),
               AM_ERR_INVALID_ARGUMENT, "stride of 4 bytes is smaller than the row of 8 bytes");
    const uint64_t far[3] = {0, seg / 4, 1};
    EXPECT_ERR(
        s, "am_splitc_put_indexed_nb",
        am_splitc_put_indexed_nb(s->ctx, am_splitc_gptr(s->right, 0), far, 3, buf, 4, flag, done),
        AM_ERR_OUT_OF_SEGMENT, right_seg);
    const uint64_t huge[1] = {UINT64_MAX / 2};
    EXPECT_ERR(s, "am_splitc_get_indexed",
               am_splitc_get_indexed(s->ctx, buf, am_splitc_gptr(s->right, 8), huge, 1, 8),
               AM_ERR_OUT_OF_SEGMENT, "overflow", right_seg);

    /* bad rank, null pointers, missing flags */
    char bad_rank[64];
    snprintf(bad_rank, sizeof bad_rank, "target rank %d out of range [0, %d)", s->size, s->size);
    EXPECT_ERR(s, "am_splitc_get", am_splitc_get(s->ctx, buf, am_splitc_gptr(s->size, 0), 8),
               AM_ERR_BAD_RANK, bad_rank);
    EXPECT_ERR(s, "am_splitc_put_indexed",
               am_splitc_put_indexed(s->ctx, am_splitc_gptr(-7, 0), far, 1, buf, 4),
               AM_ERR_BAD_RANK, "target rank -7");
    EXPECT_ERR(s, "am_splitc_put", am_splitc_put(s->ctx, am_splitc_gptr(-1, 0), buf, 8),
               AM_ERR_INVALID_ARGUMENT, "null global pointer");
    EXPECT_ERR(s, "am_splitc_get_nb",
               am_splitc_get_nb(s->ctx, NULL, am_splitc_gptr(s->right, 0), 8, flag),
               AM_ERR_INVALID_ARGUMENT, "null local buffer");
    EXPECT_ERR(s, "am_splitc_get_indexed_nb",
               am_splitc_get_indexed_nb(s->ctx, buf, am_splitc_gptr(s->right, 0), NULL, 2, 8, flag),
               AM_ERR_INVALID_ARGUMENT, "null index array");
    EXPECT_ERR(s, "am_splitc_put_nb",
               am_splitc_put_nb(s->ctx, am_splitc_gptr(s->right, 0), buf, 8, NULL, NULL),
               AM_ERR_INVALID_ARGUMENT, "needs a flag");
    EXPECT_ERR(s, "am_splitc_get_strided_nb",
               am_splitc_get_strided_nb(s->ctx, buf, 8, am_splitc_gptr(s->right, 0), 8, 8, 2, NULL),
               AM_ERR_INVALID_ARGUMENT, "null flag");
    REQUIRE(s, am_splitc_put(NULL, am_splitc_gptr(0, 0), buf, 8) == AM_ERR_INVALID_ARGUMENT);

    /* a flag of another rank's context (only reachable with thread ranks) */
    REQUIRE_OK(s, am_barrier(s->ctx));
    if (s->rank == 0 && foreign_flag != NULL) {
        EXPECT_ERR(
            s, "am_splitc_put_nb",
            am_splitc_put_nb(s->ctx, am_splitc_gptr(s->right, 0), buf, 8, NULL, foreign_flag),
            AM_ERR_INVALID_ARGUMENT, "created on rank 1's context");
    }

    /* Nothing was sent: no flag counted, no byte written (both paths check everything first). */
    REQUIRE_OK(s, am_barrier(s->ctx));
    REQUIRE(s, am_splitc_flag_value(flag) == 0 && am_splitc_flag_value(done) == 0);
    REQUIRE(s, count_not(tail, 0x5A, 128) == 0);
    REQUIRE_OK(s, am_barrier(s->ctx)); /* rank 0 is done with rank 1's flag */
    if (s->rank == 1) foreign_flag = NULL;
    am_splitc_flag_free(flag);
    am_splitc_flag_free(done);
    return s->bad != 0;
}

/* -------------------------------------------------------------------------------- main */

static const char* const names[] = {"memory", "putget", "errors"};
static int (*const runs[])(rank_state*) = {scenario_memory, scenario_putget, scenario_errors};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    (void)am_segment(ctx, &s.seg_bytes);
    s.max_medium = am_max_medium(ctx);
    const int failed = runs[sc](&s) != 0;
    check_end(ctx, names[sc], failed || s.bad != 0);
}

int main(int argc, char** argv) {
    return check_main(argc, argv, "splitc_test", names, sizeof names / sizeof names[0], rank_main);
}
