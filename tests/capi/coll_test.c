/* SPDX-License-Identifier: MIT */
/*
 * Collectives and teams from C (am/am_coll.h). `coll_test <scenario>` runs one scenario on every
 * rank through am_run (transport and rank count from AM_TRANSPORT / AM_RANKS) and exits
 * non-zero when any check fails on any rank. Results are checked against sums computed here
 * from what every rank contributes (rank r contributes values derived from r).
 */
#include <am/am.h>
#include <am/am_coll.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct rank_state {
    CHECK_RANK_FIELDS;
    unsigned bad;
} rank_state;

static int64_t value_of(int rank, int i) {
    return (int64_t)(rank + 1) * 1000 + i;
}

/* A non-commutative operator on 2x2 integer matrices (row-major int64): inout = in · inout. */
static void matmul(const void* in, void* inout, size_t count, size_t elem, void* user) {
    (void)user;
    for (size_t k = 0; k < count; ++k) {
        const int64_t* a = (const int64_t*)((const char*)in + k * elem);
        int64_t* b = (int64_t*)((char*)inout + k * elem);
        const int64_t r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                              a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

static int scenario_basics(rank_state* s) {
    am_coll_team_t* w = NULL;
    REQUIRE_OK(s, am_coll_team_world(s->ctx, &w));
    REQUIRE(s, am_coll_team_rank(w) == s->rank && am_coll_team_size(w) == s->size);
    REQUIRE_OK(s, am_coll_barrier(w));

    /* broadcast from the last rank */
    char buf[300];
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (char)(s->rank == s->size - 1 ? i * 3 : 0);
    REQUIRE_OK(s, am_coll_broadcast(w, buf, sizeof buf, s->size - 1));
    for (size_t i = 0; i < sizeof buf; ++i) CHECK(s, buf[i] == (char)(i * 3));

    /* allreduce, reduce, scans of 5 int64 */
    int64_t in[5], out[5], want[5], prefix[5];
    for (int i = 0; i < 5; ++i) {
        in[i] = value_of(s->rank, i);
        want[i] = 0;
        prefix[i] = 0;
        for (int r = 0; r < s->size; ++r) want[i] += value_of(r, i);
        for (int r = 0; r < s->rank; ++r) prefix[i] += value_of(r, i);
    }
    REQUIRE_OK(s, am_coll_allreduce(w, in, out, 5, AM_COLL_INT64, AM_COLL_SUM));
    for (int i = 0; i < 5; ++i) CHECK(s, out[i] == want[i]);
    memset(out, 0, sizeof out);
    REQUIRE_OK(s, am_coll_reduce(w, in, out, 5, AM_COLL_INT64, AM_COLL_MAX, 0));
    if (s->rank == 0) {
        for (int i = 0; i < 5; ++i) CHECK(s, out[i] == value_of(s->size - 1, i));
    }
    REQUIRE_OK(s, am_coll_inclusive_scan(w, in, out, 5, AM_COLL_INT64, AM_COLL_SUM));
    for (int i = 0; i < 5; ++i) CHECK(s, out[i] == prefix[i] + in[i]);
    for (int i = 0; i < 5; ++i) out[i] = -7;
    REQUIRE_OK(s, am_coll_exclusive_scan(w, in, out, 5, AM_COLL_INT64, AM_COLL_SUM));
    for (int i = 0; i < 5; ++i) CHECK(s, out[i] == (s->rank == 0 ? -7 : prefix[i]));

    /* a user operator in rank order: the product of [[1, r+1], [0, 1]] is [[1, sum], [0, 1]]
     * whatever the order, so use [[r+1, 1], [0, 1]] whose product depends on it */
    int64_t m[4] = {s->rank + 1, 1, 0, 1}, p[4];
    REQUIRE_OK(s, am_coll_allreduce_fn(w, m, p, 1, sizeof m, matmul, NULL));
    int64_t q[4] = {1, 0, 0, 1};
    for (int r = 0; r < s->size; ++r) {
        const int64_t mr[4] = {r + 1, 1, 0, 1};
        int64_t t[4];
        memcpy(t, mr, sizeof t);
        matmul(q, t, 1, sizeof t, NULL); /* t = q · mr */
        memcpy(q, t, sizeof q);
    }
    for (int i = 0; i < 4; ++i) CHECK(s, p[i] == q[i]);

    /* gather, allgather, alltoall */
    int32_t mine = s->rank * 11, all[64], to[64], from[64];
    REQUIRE(s, s->size <= 64);
    REQUIRE_OK(s, am_coll_allgather(w, &mine, sizeof mine, all));
    for (int r = 0; r < s->size; ++r) CHECK(s, all[r] == r * 11);
    memset(all, 0, sizeof all);
    REQUIRE_OK(s, am_coll_gather(w, &mine, sizeof mine, s->rank == 0 ? all : NULL, 0));
    if (s->rank == 0) {
        for (int r = 0; r < s->size; ++r) CHECK(s, all[r] == r * 11);
    }
    for (int j = 0; j < s->size; ++j) to[j] = s->rank * 100 + j;
    REQUIRE_OK(s, am_coll_alltoall(w, to, sizeof to[0], from));
    for (int i = 0; i < s->size; ++i) CHECK(s, from[i] == i * 100 + s->rank);

    /* split into odd and even ranks */
    am_coll_team_t* half = NULL;
    REQUIRE_OK(s, am_coll_team_split(w, s->rank % 2, s->rank, &half));
    REQUIRE(s, half != NULL);
    CHECK(s, am_coll_team_size(half) == (s->size + 1 - s->rank % 2) / 2);
    CHECK(s, am_coll_team_world_rank(half, am_coll_team_rank(half)) == s->rank);
    int64_t one = s->rank, sum = 0, want_sum = 0;
    for (int r = s->rank % 2; r < s->size; r += 2) want_sum += r;
    REQUIRE_OK(s, am_coll_allreduce(half, &one, &sum, 1, AM_COLL_INT64, AM_COLL_SUM));
    CHECK(s, sum == want_sum);
    am_coll_team_t* none = NULL;
    REQUIRE_OK(s, am_coll_team_split(w, s->rank == 0 ? AM_COLL_UNDEFINED : 0, 0, &none));
    CHECK(s, (none == NULL) == (s->rank == 0));
    am_coll_team_free(none);
    am_coll_team_free(half);
    am_coll_team_free(w);
    return s->bad != 0;
}

static int scenario_errors(rank_state* s) {
    am_coll_team_t* w = NULL;
    REQUIRE_OK(s, am_coll_team_world(s->ctx, &w));
    int64_t x = 1, y = 0;
    EXPECT_ERR(s, "am_coll_broadcast", am_coll_broadcast(w, &x, sizeof x, s->size), AM_ERR_BAD_RANK,
               "root", "out of range");
    EXPECT_ERR(s, "am_coll_allreduce",
               am_coll_allreduce(w, &x, &y, 1, (am_coll_type_t)99, AM_COLL_SUM),
               AM_ERR_INVALID_ARGUMENT, "type 99");
    EXPECT_ERR(s, "am_coll_allreduce",
               am_coll_allreduce(w, &x, &y, 1, AM_COLL_DOUBLE, AM_COLL_BXOR),
               AM_ERR_INVALID_ARGUMENT, "operator 6");
    EXPECT_ERR(s, "am_coll_allreduce",
               am_coll_allreduce(w, NULL, &y, 1, AM_COLL_INT64, AM_COLL_SUM),
               AM_ERR_INVALID_ARGUMENT, "null input");
    CHECK(s, am_coll_barrier(NULL) == AM_ERR_INVALID_ARGUMENT); /* no context to keep a message */
    /* nothing was sent by the refused calls: the next collective still matches */
    REQUIRE_OK(s, am_coll_allreduce(w, &x, &y, 1, AM_COLL_INT64, AM_COLL_SUM));
    CHECK(s, y == s->size);
    am_coll_team_free(w);
    return s->bad != 0;
}

static const char* const names[] = {"basics", "errors"};
static int (*const runs[])(rank_state*) = {scenario_basics, scenario_errors};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    const int failed = runs[sc](&s) != 0;
    check_end(ctx, names[sc], failed || s.bad != 0);
}

int main(int argc, char** argv) {
    return check_main(argc, argv, "coll_test", names, sizeof names / sizeof names[0], rank_main);
}
