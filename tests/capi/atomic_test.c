/* SPDX-License-Identifier: MIT */
/*
 * Remote atomics from C (am_splitc_atomic_*, am/am_splitc.h). `atomic_test <scenario>` runs one
 * scenario on every rank through am_run (transport and rank count from AM_TRANSPORT / AM_RANKS;
 * AM_RMA=am forces the message path) and exits non-zero when any check fails on any rank.
 *
 * counts: every rank does N blocking and N split-phase fetch-adds on words of rank 0; the old
 * values gathered on rank 0 are exactly {0..P*N-1} each; min, 32-bit wraparound, double add and
 * compare_swap against sequential references. errors: every kind of bad input is refused before
 * anything is sent, naming the call, the rank and the limit.
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
} rank_state;

enum { N = 50 };

/* The words of rank 0's region, by byte offset; then two arrays of size * N old values. */
enum { W_COUNT = 0, W_MIN = 8, W_WRAP = 12, W_SUM = 16, W_CAS = 24, W_NB = 32, W_OLDS = 40 };

static int cmp_u64(const void* a, const void* b) {
    const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return (x > y) - (x < y);
}

/* Rank 0: the `count` values at `olds` are exactly 0..count-1. */
static int is_permutation(uint64_t* olds, size_t count) {
    qsort(olds, count, sizeof *olds, cmp_u64);
    for (size_t i = 0; i < count; ++i) {
        if (olds[i] != i) return 0;
    }
    return 1;
}

static int scenario_counts(rank_state* s) {
    const size_t p = (size_t)s->size;
    am_splitc_gptr_t mine, *all = calloc(p, sizeof *all);
    REQUIRE(s, all != NULL);
    REQUIRE_OK(s, am_splitc_alloc(s->ctx, W_OLDS + 2 * p * N * 8, 8, &mine));
    unsigned char* base = am_splitc_local(s->ctx, mine, W_OLDS);
    REQUIRE(s, base != NULL);
    memset(base, 0, W_OLDS);
    const int32_t min0 = 1000;
    const uint32_t wrap0 = 0xfffffffeu;
    const int64_t cas0 = 77;
    memcpy(base + W_MIN, &min0, 4);
    memcpy(base + W_WRAP, &wrap0, 4);
    memcpy(base + W_CAS, &cas0, 8);
    REQUIRE_OK(s, am_splitc_exchange(s->ctx, mine, all));
    REQUIRE_OK(s, am_barrier(s->ctx));
    const am_splitc_gptr_t r0 = all[0];

    uint64_t olds[N], nb_olds[N];
    am_splitc_flag_t* flag = NULL;
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &flag));
    for (int i = 0; i < N; ++i) {
        REQUIRE_OK(s, am_splitc_atomic_u64(s->ctx, am_splitc_gptr_add(r0, W_COUNT),
                                           AM_SPLITC_ATOMIC_ADD, 1, 0, &olds[i]));
        REQUIRE_OK(s, am_splitc_atomic_u64_nb(s->ctx, am_splitc_gptr_add(r0, W_NB),
                                              AM_SPLITC_ATOMIC_ADD, 1, 0, &nb_olds[i], flag));
        REQUIRE_OK(s, am_splitc_atomic_f64(s->ctx, am_splitc_gptr_add(r0, W_SUM),
                                           AM_SPLITC_ATOMIC_ADD, 0.5, 0.0, NULL));
    }
    int32_t old_min = 0;
    REQUIRE_OK(s, am_splitc_atomic_i32(s->ctx, am_splitc_gptr_add(r0, W_MIN), AM_SPLITC_ATOMIC_MIN,
                                       -3 * s->rank - 1, 0, &old_min));
    REQUIRE(s, old_min <= 1000);
    REQUIRE_OK(s, am_splitc_atomic_u32_nb(s->ctx, am_splitc_gptr_add(r0, W_WRAP),
                                          AM_SPLITC_ATOMIC_ADD, 1u, 0u, NULL, flag));
    int64_t old_cas = 0;
    REQUIRE_OK(s, am_splitc_atomic_i64(s->ctx, am_splitc_gptr_add(r0, W_CAS),
                                       AM_SPLITC_ATOMIC_COMPARE_SWAP, -5, 12345, &old_cas));
    REQUIRE(s, old_cas == 77); /* no match: unchanged */
    REQUIRE_OK(s, am_splitc_flag_wait(flag, N + 1));
    REQUIRE(s, am_splitc_flag_value(flag) == N + 1);

    /* Every rank's old values into rank 0's arrays. */
    REQUIRE_OK(s, am_splitc_put(s->ctx, am_splitc_gptr_add(r0, W_OLDS + s->rank * N * 8), olds,
                                sizeof olds));
    REQUIRE_OK(
        s, am_splitc_put(s->ctx, am_splitc_gptr_add(r0, (int64_t)(W_OLDS + (p + s->rank) * N * 8)),
                         nb_olds, sizeof nb_olds));
    REQUIRE_OK(s, am_barrier(s->ctx));
    if (s->rank == 0) {
        uint64_t count, nb, *gathered = (uint64_t*)(base + W_OLDS);
        int32_t min;
        uint32_t wrap;
        double sum;
        memcpy(&count, base + W_COUNT, 8);
        memcpy(&nb, base + W_NB, 8);
        memcpy(&min, base + W_MIN, 4);
        memcpy(&wrap, base + W_WRAP, 4);
        memcpy(&sum, base + W_SUM, 8);
        REQUIRE(s, count == p * N);
        REQUIRE(s, nb == p * N);
        REQUIRE(s, min == -3 * (s->size - 1) - 1);
        REQUIRE(s, wrap == (uint32_t)(0xfffffffeu + (uint32_t)p));
        REQUIRE(s, sum == 0.5 * (double)(p * N));
        REQUIRE(s, is_permutation(gathered, p * N));
        REQUIRE(s, is_permutation(gathered + p * N, p * N));
    }
    REQUIRE_OK(s, am_barrier(s->ctx));
    am_splitc_flag_free(flag);
    REQUIRE_OK(s, am_splitc_free(s->ctx, mine));
    free(all);
    return s->bad != 0;
}

static int scenario_errors(rank_state* s) {
    am_splitc_flag_t* flag = NULL;
    REQUIRE_OK(s, am_splitc_flag_create(s->ctx, &flag));
    am_splitc_gptr_t mine;
    REQUIRE_OK(s, am_splitc_alloc(s->ctx, 16, 16, &mine));
    uint64_t* word = am_splitc_local(s->ctx, mine, 16);
    REQUIRE(s, word != NULL);
    word[0] = 99;
    word[1] = 99;
    am_splitc_gptr_t right;
    {
        am_splitc_gptr_t* all = calloc((size_t)s->size, sizeof *all);
        REQUIRE(s, all != NULL);
        REQUIRE_OK(s, am_splitc_exchange(s->ctx, mine, all));
        right = all[s->right];
        free(all);
    }
    REQUIRE_OK(s, am_barrier(s->ctx));

    char seg_text[96], bad_rank[64];
    snprintf(seg_text, sizeof seg_text, "outside rank %d's segment of %zu bytes", s->right,
             s->seg_bytes);
    snprintf(bad_rank, sizeof bad_rank, "target rank %d out of range [0, %d)", s->size, s->size);
    uint64_t old = 5;
    EXPECT_ERR(
        s, "am_splitc_atomic_u64",
        am_splitc_atomic_u64(s->ctx, am_splitc_gptr(-1, 0), AM_SPLITC_ATOMIC_ADD, 1, 0, &old),
        AM_ERR_INVALID_ARGUMENT, "null global pointer");
    EXPECT_ERR(s, "am_splitc_atomic_u64_nb",
               am_splitc_atomic_u64_nb(s->ctx, am_splitc_gptr_add(right, 4), AM_SPLITC_ATOMIC_ADD,
                                       1, 0, &old, flag),
               AM_ERR_INVALID_ARGUMENT, "not aligned", "8 bytes");
    EXPECT_ERR(s, "am_splitc_atomic_u32",
               am_splitc_atomic_u32(s->ctx, am_splitc_gptr(s->right, s->seg_bytes),
                                    AM_SPLITC_ATOMIC_OR, 1, 0, NULL),
               AM_ERR_OUT_OF_SEGMENT, seg_text);
    EXPECT_ERR(
        s, "am_splitc_atomic_i64",
        am_splitc_atomic_i64(s->ctx, am_splitc_gptr(s->size, 0), AM_SPLITC_ATOMIC_MAX, 1, 0, NULL),
        AM_ERR_BAD_RANK, bad_rank);
    EXPECT_ERR(s, "am_splitc_atomic_i32",
               am_splitc_atomic_i32(s->ctx, right, (am_splitc_atomic_op_t)42, 1, 0, NULL),
               AM_ERR_INVALID_ARGUMENT, "atomic op 42");
    EXPECT_ERR(s, "am_splitc_atomic_f64_nb",
               am_splitc_atomic_f64_nb(s->ctx, right, AM_SPLITC_ATOMIC_AND, 1.0, 0.0, NULL, flag),
               AM_ERR_INVALID_ARGUMENT, "and is not defined on double");
    EXPECT_ERR(s, "am_splitc_atomic_i64_nb",
               am_splitc_atomic_i64_nb(s->ctx, right, AM_SPLITC_ATOMIC_ADD, 1, 0, NULL, NULL),
               AM_ERR_INVALID_ARGUMENT, "null flag");
    REQUIRE(s, am_splitc_atomic_u64(NULL, right, AM_SPLITC_ATOMIC_ADD, 1, 0, NULL) ==
                   AM_ERR_INVALID_ARGUMENT);

    /* Nothing was done: the words, the flag and `old` are untouched. */
    REQUIRE_OK(s, am_barrier(s->ctx));
    REQUIRE(s, word[0] == 99 && word[1] == 99);
    REQUIRE(s, am_splitc_flag_value(flag) == 0);
    REQUIRE(s, old == 5);
    REQUIRE_OK(s, am_barrier(s->ctx));
    am_splitc_flag_free(flag);
    REQUIRE_OK(s, am_splitc_free(s->ctx, mine));
    return s->bad != 0;
}

static const char* const names[] = {"counts", "errors"};
static int (*const runs[])(rank_state*) = {scenario_counts, scenario_errors};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    (void)am_segment(ctx, &s.seg_bytes);
    const int failed = runs[sc](&s) != 0;
    check_end(ctx, names[sc], failed || s.bad != 0);
}

int main(int argc, char** argv) {
    return check_main(argc, argv, "atomic_test", names, sizeof names / sizeof names[0], rank_main);
}
