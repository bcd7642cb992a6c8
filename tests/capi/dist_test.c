/* SPDX-License-Identifier: MIT */
/*
 * The distributed containers from C (am/am_dist.h). `dist_test <scenario>` runs one scenario on
 * every rank through am_run (transport and rank count from AM_TRANSPORT / AM_RANKS) and exits
 * non-zero when any check fails on any rank. Every rank inserts, reassigns and erases keys
 * derived from its rank (with embedded NUL bytes, empty values, an empty key and a 100 KB
 * key); the expected contents are computed here from every rank's operations and compared
 * with size, gather and for_all.
 */
#include <am/am.h>
#include <am/am_coll.h>
#include <am/am_dist.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct rank_state {
    CHECK_RANK_FIELDS;
    unsigned bad;
} rank_state;

enum { KEYS = 200, BIG = 100 * 1024, COMMON = 5 };

/* ------------------------------------------------------------------------- byte strings */

typedef struct bytes {
    char* p;
    size_t n;
} bytes;

static bytes make(const void* p, size_t n) {
    bytes b = {malloc(n + 1), n};
    if (b.p == NULL) abort();
    if (n != 0) memcpy(b.p, p, n);
    return b;
}

static bytes text(const char* s) {
    return make(s, strlen(s));
}

/* "<prefix><rank>\0<i>": a key with an embedded NUL byte. */
static bytes key_of(const char* prefix, int rank, int i) {
    char buf[64];
    const int a = snprintf(buf, sizeof buf, "%s%d", prefix, rank);
    const int b = snprintf(buf + a + 1, sizeof buf - (size_t)a - 1, "%d", i);
    return make(buf, (size_t)a + 1 + (size_t)b);
}

/* The value rank `rank` first inserts at key i: empty for every fifth key. */
static bytes value_of(int rank, int i) {
    char buf[128];
    size_t n = 0;
    if (i % 5 != 0) {
        for (int rep = 0; rep <= i % 3; ++rep) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, "val-%d-%d;", rank, i);
        }
    }
    return make(buf, n);
}

static bytes reassigned_of(int rank, int i) {
    char buf[64];
    snprintf(buf, sizeof buf, "new-%d-%d", rank, i);
    return text(buf);
}

/* Rank `rank`'s 100 KB key (or value). */
static bytes big_of(int rank) {
    bytes b = {malloc(BIG), BIG};
    if (b.p == NULL) abort();
    for (size_t j = 0; j < BIG; ++j) b.p[j] = (char)((j * 7 + (size_t)rank * 13 + j / 251) & 0xff);
    return b;
}

static int same(bytes a, const void* p, size_t n) {
    return a.n == n && (n == 0 || memcmp(a.p, p, n) == 0);
}

/* ------------------------------------------------------------- the expected contents */

typedef struct entry {
    bytes key, value; /* value.p NULL in a set; in a map, NULL: any "v<rank>" */
    unsigned seen;
} entry;

typedef struct table {
    entry* e;
    size_t n, cap;
} table;

static void add(table* t, bytes key, bytes value) {
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->e = realloc(t->e, t->cap * sizeof *t->e);
        if (t->e == NULL) abort();
    }
    entry x = {key, value, 0};
    t->e[t->n++] = x;
}

static int cmp_key(const void* pa, size_t na, const void* pb, size_t nb) {
    if (na != nb) return na < nb ? -1 : 1;
    return na == 0 ? 0 : memcmp(pa, pb, na);
}

static int cmp_entry(const void* a, const void* b) {
    const entry* x = a;
    const entry* y = b;
    return cmp_key(x->key.p, x->key.n, y->key.p, y->key.n);
}

static entry* find(table* t, const void* key, size_t n) {
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = cmp_key(t->e[mid].key.p, t->e[mid].key.n, key, n);
        if (c == 0) return &t->e[mid];
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static void drop(table* t) {
    for (size_t i = 0; i < t->n; ++i) {
        free(t->e[i].key.p);
        free(t->e[i].value.p);
    }
    free(t->e);
}

/* A visit's state: the rank, the expected contents and the entries seen. */
typedef struct visit {
    rank_state* s;
    table* want;
    size_t count;
} visit;

static void check_entry(visit* v, const void* key, size_t klen, const void* value, size_t vlen,
                        int in_map) {
    rank_state* s = v->s;
    ++v->count;
    if (klen != 0 && key == NULL) {
        FAIL(s, "a %zu-byte key at NULL", klen);
        return;
    }
    entry* e = find(v->want, key, klen);
    if (e == NULL) {
        FAIL(s, "unexpected %zu-byte key \"%.*s\"", klen, (int)(klen < 40 ? klen : 40),
             (const char*)key);
        return;
    }
    if (e->seen++ != 0)
        FAIL(s, "key \"%.*s\" seen twice", (int)(klen < 40 ? klen : 40), (const char*)key);
    if (!in_map) return;
    if (vlen != 0 && value == NULL) {
        FAIL(s, "a %zu-byte value at NULL", vlen);
    } else if (e->value.p != NULL) {
        if (!same(e->value, value, vlen)) {
            FAIL(s, "key \"%.*s\": value \"%.*s\" (%zu bytes), expected \"%.*s\" (%zu bytes)",
                 (int)(klen < 40 ? klen : 40), (const char*)key, (int)(vlen < 40 ? vlen : 40),
                 (const char*)value, vlen, (int)(e->value.n < 40 ? e->value.n : 40), e->value.p,
                 e->value.n);
        }
    } else { /* the race: the value of one of the ranks */
        int ok = 0;
        for (int r = 0; r < s->size && !ok; ++r) {
            char buf[32];
            snprintf(buf, sizeof buf, "v%d", r);
            ok = vlen == strlen(buf) && memcmp(value, buf, vlen) == 0;
        }
        if (!ok) FAIL(s, "race: value \"%.*s\" is no rank's", (int)vlen, (const char*)value);
    }
}

static void map_visit(const void* key, size_t klen, const void* value, size_t vlen, void* user) {
    check_entry(user, key, klen, value, vlen, 1);
}

static void set_visit(const void* key, size_t klen, void* user) {
    check_entry(user, key, klen, NULL, 0, 0);
}

static void unsee(table* t) {
    for (size_t i = 0; i < t->n; ++i) t->e[i].seen = 0;
}

/* Every expected entry seen once (after a gather). */
static void check_all_seen(rank_state* s, table* t) {
    for (size_t i = 0; i < t->n; ++i) {
        if (t->e[i].seen != 1) {
            FAIL(s, "key \"%.*s\" (%zu bytes) seen %u times",
                 (int)(t->e[i].key.n < 40 ? t->e[i].key.n : 40), t->e[i].key.p, t->e[i].key.n,
                 t->e[i].seen);
        }
    }
}

/* The contents after every rank ran map_ops (below). */
static table expected_map(int size) {
    table t = {NULL, 0, 0};
    for (int q = 0; q < size; ++q) {
        for (int i = 0; i < KEYS; ++i) {
            if (i % 3 == 1 || i % 7 == 3) continue; /* erased by q, or by q-1 after the barrier */
            add(&t, key_of("k", q, i), i % 4 == 2 ? reassigned_of(q, i) : value_of(q, i));
        }
        if (q % 2 == 0) add(&t, big_of(q), text(q == 0 ? "big0" : "big"));
        add(&t, key_of("bigval", q, 0), big_of(q + 1000));
    }
    for (int j = 0; j < COMMON; ++j) {
        char k[32], v[32];
        snprintf(k, sizeof k, "common%d", j);
        snprintf(v, sizeof v, "same%d", j);
        add(&t, text(k), text(v));
    }
    const bytes any = {NULL, 0};
    add(&t, text("race"), any);
    qsort(t.e, t.n, sizeof *t.e, cmp_entry);
    return t;
}

#define REQUIRE_OK_OR_GOTO(s, expr, label)                                                        \
    do {                                                                                          \
        am_status_t st_ = (expr);                                                                 \
        if (st_ != AM_OK) {                                                                       \
            FAIL(s, "%s returned %s: %s", #expr, am_status_string(st_), am_last_error((s)->ctx)); \
            goto label;                                                                           \
        }                                                                                         \
    } while (0)

/* This rank's operations on a map (expected_map says what they leave). */
static int map_ops(rank_state* s, am_dist_map_t* m) {
    const int me = s->rank, next = (s->rank + 1) % s->size;
    for (int i = 0; i < KEYS; ++i) {
        bytes k = key_of("k", me, i), v = value_of(me, i);
        REQUIRE_OK(s, am_dist_map_insert(m, k.p, k.n, v.p, v.n));
        if (i % 4 == 0) REQUIRE_OK(s, am_dist_map_insert(m, k.p, k.n, "ignored", 7));
        if (i % 4 == 2) {
            bytes n = reassigned_of(me, i);
            REQUIRE_OK(s, am_dist_map_insert_or_assign(m, k.p, k.n, n.p, n.n));
            free(n.p);
        }
        if (i % 3 == 1) REQUIRE_OK(s, am_dist_map_erase(m, k.p, k.n));
        free(k.p);
        free(v.p);
    }
    bytes big = big_of(me), bigval = big_of(me + 1000), bk = key_of("bigval", me, 0);
    REQUIRE_OK(s, am_dist_map_insert_or_assign(m, big.p, big.n, "big", 3));
    if (me == 0) REQUIRE_OK(s, am_dist_map_insert_or_assign(m, big.p, big.n, "big0", 4));
    REQUIRE_OK(s, am_dist_map_insert(m, bk.p, bk.n, bigval.p, bigval.n));
    free(big.p);
    free(bigval.p);
    free(bk.p);
    for (int j = 0; j < COMMON; ++j) {
        char k[32], v[32];
        snprintf(k, sizeof k, "common%d", j);
        snprintf(v, sizeof v, "same%d", j);
        REQUIRE_OK(s, am_dist_map_insert_or_assign(m, k, strlen(k), v, strlen(v)));
    }
    char race[32];
    snprintf(race, sizeof race, "v%d", me);
    REQUIRE_OK(s, am_dist_map_insert(m, "race", 4, race, strlen(race)));
    REQUIRE_OK(s, am_dist_map_erase(m, "absent", 6));

    /* after a barrier, erase some of the next rank's keys */
    REQUIRE_OK(s, am_dist_map_barrier(m));
    for (int i = 0; i < KEYS; ++i) {
        if (i % 7 != 3) continue;
        bytes k = key_of("k", next, i);
        REQUIRE_OK(s, am_dist_map_erase(m, k.p, k.n));
        free(k.p);
    }
    if (next % 2 == 1) {
        bytes nb = big_of(next);
        REQUIRE_OK(s, am_dist_map_erase(m, nb.p, nb.n));
        free(nb.p);
    }
    return 0;
}

static int scenario_map(rank_state* s) {
    am_dist_map_t* m = NULL;
    REQUIRE_OK(s, am_dist_map_create(s->ctx, NULL, &m));
    REQUIRE(s, m != NULL);
    table want = expected_map(s->size);
    visit v = {s, &want, 0};
    if (map_ops(s, m) != 0) goto out;

    size_t total = 0;
    REQUIRE_OK_OR_GOTO(s, am_dist_map_size(m, &total), out);
    CHECK(s, total == want.n);

    /* the local part: every entry expected, the counts add up */
    REQUIRE_OK_OR_GOTO(s, am_dist_map_for_all(m, map_visit, &v), out);
    CHECK(s, v.count == am_dist_map_local_size(m));
    uint64_t local = v.count, sum = 0;
    am_coll_team_t* w = NULL;
    REQUIRE_OK_OR_GOTO(s, am_coll_team_world(s->ctx, &w), out);
    const am_status_t st = am_coll_allreduce(w, &local, &sum, 1, AM_COLL_UINT64, AM_COLL_SUM);
    am_coll_team_free(w);
    REQUIRE_OK_OR_GOTO(s, st, out);
    CHECK(s, sum == want.n);

    /* everything at the last rank */
    unsee(&want);
    v.count = 0;
    const int root = s->size - 1;
    REQUIRE_OK_OR_GOTO(s, am_dist_map_gather(m, root, s->rank == root ? map_visit : NULL, &v), out);
    if (s->rank == root) {
        CHECK(s, v.count == want.n);
        check_all_seen(s, &want);
    } else {
        CHECK(s, v.count == 0);
    }
out:
    drop(&want);
    REQUIRE_OK(s, am_dist_map_free(m));
    return s->bad != 0;
}

/* The contents after every rank ran the set scenario's operations. */
static table expected_set(int size) {
    table t = {NULL, 0, 0};
    bytes none = {NULL, 0};
    for (int q = 0; q < size; ++q) {
        for (int i = 0; i < KEYS; ++i) {
            if (i % 3 == 1 && i % 5 != 4) continue;
            add(&t, key_of("s", q, i), none);
        }
        if (q % 2 == 0) add(&t, big_of(q), none);
    }
    add(&t, text("dup"), none);
    add(&t, make("", 0), none); /* the empty key */
    qsort(t.e, t.n, sizeof *t.e, cmp_entry);
    return t;
}

static int set_ops(rank_state* s, am_dist_set_t* set) {
    const int me = s->rank, next = (s->rank + 1) % s->size;
    for (int i = 0; i < KEYS; ++i) {
        bytes k = key_of("s", me, i);
        REQUIRE_OK(s, am_dist_set_insert(set, k.p, k.n));
        if (i % 3 == 1) REQUIRE_OK(s, am_dist_set_erase(set, k.p, k.n));
        if (i % 3 == 1 && i % 5 == 4) REQUIRE_OK(s, am_dist_set_insert(set, k.p, k.n));
        free(k.p);
    }
    bytes big = big_of(me);
    REQUIRE_OK(s, am_dist_set_insert(set, big.p, big.n));
    free(big.p);
    REQUIRE_OK(s, am_dist_set_insert(set, "dup", 3));
    REQUIRE_OK(s, am_dist_set_insert(set, NULL, 0)); /* the empty key */
    REQUIRE_OK(s, am_dist_set_insert(set, "gone", 4));
    REQUIRE_OK(s, am_dist_set_barrier(set));
    REQUIRE_OK(s, am_dist_set_erase(set, "gone", 4));
    if (next % 2 == 1) {
        bytes nb = big_of(next);
        REQUIRE_OK(s, am_dist_set_erase(set, nb.p, nb.n));
        free(nb.p);
    }
    return 0;
}

static int scenario_set(rank_state* s) {
    am_dist_set_t* set = NULL;
    REQUIRE_OK(s, am_dist_set_create(s->ctx, NULL, &set));
    REQUIRE(s, set != NULL);
    table want = expected_set(s->size);
    visit v = {s, &want, 0};
    if (set_ops(s, set) != 0) goto out;

    size_t total = 0;
    REQUIRE_OK_OR_GOTO(s, am_dist_set_size(set, &total), out);
    CHECK(s, total == want.n);
    REQUIRE_OK_OR_GOTO(s, am_dist_set_for_all(set, set_visit, &v), out);
    CHECK(s, v.count == am_dist_set_local_size(set));

    unsee(&want);
    v.count = 0;
    REQUIRE_OK_OR_GOTO(s, am_dist_set_gather(set, 0, s->rank == 0 ? set_visit : NULL, &v), out);
    if (s->rank == 0) {
        CHECK(s, v.count == want.n);
        check_all_seen(s, &want);
    } else {
        CHECK(s, v.count == 0);
    }
out:
    drop(&want);
    REQUIRE_OK(s, am_dist_set_free(set));
    return s->bad != 0;
}

/* Containers on teams: a map on the odd or even half of the ranks and a set on the world, used
 * together; each half's map sees only its members' keys. */
static int scenario_team(rank_state* s) {
    am_coll_team_t* w = NULL;
    am_coll_team_t* half = NULL;
    REQUIRE_OK(s, am_coll_team_world(s->ctx, &w));
    REQUIRE_OK(s, am_coll_team_split(w, s->rank % 2, s->rank, &half));
    REQUIRE(s, half != NULL);
    am_dist_map_t* m = NULL;
    am_dist_set_t* set = NULL;
    REQUIRE_OK(s, am_dist_map_create(s->ctx, half, &m));
    REQUIRE_OK(s, am_dist_set_create(s->ctx, w, &set));
    am_coll_team_free(half); /* the containers keep their teams */
    for (int i = 0; i < 50; ++i) {
        bytes k = key_of("t", s->rank, i);
        REQUIRE_OK(s, am_dist_map_insert(m, k.p, k.n, &i, sizeof i));
        REQUIRE_OK(s, am_dist_set_insert(set, k.p, k.n));
        free(k.p);
    }
    size_t n = 0;
    REQUIRE_OK(s, am_dist_map_size(m, &n));
    const int members = (s->size + 1 - s->rank % 2) / 2;
    CHECK(s, n == (size_t)members * 50);
    REQUIRE_OK(s, am_dist_set_size(set, &n));
    CHECK(s, n == (size_t)s->size * 50);
    REQUIRE_OK(s, am_dist_map_free(m));
    REQUIRE_OK(s, am_dist_set_free(set));
    am_coll_team_free(w);
    return s->bad != 0;
}

static void never(const void* key, size_t klen, const void* value, size_t vlen, void* user) {
    (void)key, (void)klen, (void)value, (void)vlen;
    rank_state* s = user;
    FAIL(s, "callback called on an empty map");
}

static void never_key(const void* key, size_t klen, void* user) {
    (void)key, (void)klen;
    rank_state* s = user;
    FAIL(s, "callback called on an empty set");
}

/* In a handler: the collective calls refused, the handle kept by a refused free. */
typedef struct in_handler {
    rank_state* s;
    am_dist_map_t* m;
    am_dist_set_t* set;
    am_counter_t done;
} in_handler;

static void collectives_in_handler(am_token_t* token, const uint64_t* args, unsigned nargs,
                                   void* user) {
    (void)token, (void)args, (void)nargs;
    in_handler* h = user;
    rank_state* s = h->s;
    const am_status_t bad = AM_ERR_BAD_CONTEXT;
    size_t n = 0;
    am_dist_map_t* other = NULL;
    EXPECT_ERR(s, "am_dist_map_barrier", am_dist_map_barrier(h->m), bad, "handler");
    EXPECT_ERR(s, "am_dist_map_size", am_dist_map_size(h->m, &n), bad, "handler");
    EXPECT_ERR(s, "am_dist_map_free", am_dist_map_free(h->m), bad, "handler");
    EXPECT_ERR(s, "am_dist_map_create", am_dist_map_create(s->ctx, NULL, &other), bad, "handler");
    CHECK(s, other == NULL);
    EXPECT_ERR(s, "am_dist_set_free", am_dist_set_free(h->set), bad, "handler");
    EXPECT_ERR(s, "am_dist_set_gather", am_dist_set_gather(h->set, 0, never_key, s), bad,
               "handler");
    am_counter_add(&h->done, 1);
}

/* Bad arguments: the documented status, a message naming the call and the rank, nothing
 * sent (the containers stay empty and the next collective still matches). */
static int scenario_errors(rank_state* s) {
    am_dist_map_t* m = NULL;
    am_dist_set_t* set = NULL;
    const am_status_t inval = AM_ERR_INVALID_ARGUMENT;
    CHECK(s, am_dist_map_create(NULL, NULL, &m) == inval && m == NULL);
    CHECK(s, am_dist_set_create(NULL, NULL, &set) == inval && set == NULL);
    EXPECT_ERR(s, "am_dist_map_create", am_dist_map_create(s->ctx, NULL, NULL), inval,
               "null output pointer");
    EXPECT_ERR(s, "am_dist_set_create", am_dist_set_create(s->ctx, NULL, NULL), inval,
               "null output pointer");
    REQUIRE_OK(s, am_dist_map_create(s->ctx, NULL, &m));
    REQUIRE_OK(s, am_dist_set_create(s->ctx, NULL, &set));

    /* a NULL container: no context to keep a message in */
    size_t n = 7;
    CHECK(s, am_dist_map_insert(NULL, "k", 1, "v", 1) == inval);
    CHECK(s, am_dist_map_insert_or_assign(NULL, "k", 1, "v", 1) == inval);
    CHECK(s, am_dist_map_erase(NULL, "k", 1) == inval);
    CHECK(s, am_dist_map_barrier(NULL) == inval);
    CHECK(s, am_dist_map_size(NULL, &n) == inval && n == 7);
    CHECK(s, am_dist_map_for_all(NULL, never, s) == inval);
    CHECK(s, am_dist_map_gather(NULL, 0, never, s) == inval);
    CHECK(s, am_dist_map_local_size(NULL) == 0);
    CHECK(s, am_dist_map_free(NULL) == AM_OK);
    CHECK(s, am_dist_set_insert(NULL, "k", 1) == inval);
    CHECK(s, am_dist_set_erase(NULL, "k", 1) == inval);
    CHECK(s, am_dist_set_barrier(NULL) == inval);
    CHECK(s, am_dist_set_size(NULL, &n) == inval && n == 7);
    CHECK(s, am_dist_set_for_all(NULL, never_key, s) == inval);
    CHECK(s, am_dist_set_gather(NULL, 0, never_key, s) == inval);
    CHECK(s, am_dist_set_local_size(NULL) == 0);
    CHECK(s, am_dist_set_free(NULL) == AM_OK);

    /* NULL bytes with a non-zero length, NULL outputs and callbacks, a root out of range */
    EXPECT_ERR(s, "am_dist_map_insert", am_dist_map_insert(m, NULL, 3, "v", 1), inval, "null key");
    EXPECT_ERR(s, "am_dist_map_insert", am_dist_map_insert(m, "k", 1, NULL, 2), inval,
               "null value");
    EXPECT_ERR(s, "am_dist_map_insert_or_assign", am_dist_map_insert_or_assign(m, NULL, 1, "", 0),
               inval, "null key");
    EXPECT_ERR(s, "am_dist_map_insert_or_assign", am_dist_map_insert_or_assign(m, "k", 1, NULL, 5),
               inval, "null value");
    EXPECT_ERR(s, "am_dist_map_erase", am_dist_map_erase(m, NULL, 9), inval, "null key");
    EXPECT_ERR(s, "am_dist_map_size", am_dist_map_size(m, NULL), inval, "null output pointer");
    EXPECT_ERR(s, "am_dist_map_for_all", am_dist_map_for_all(m, NULL, NULL), inval,
               "null callback");
    EXPECT_ERR(s, "am_dist_map_gather", am_dist_map_gather(m, s->size, never, s), AM_ERR_BAD_RANK,
               "root", "out of range");
    EXPECT_ERR(s, "am_dist_map_gather", am_dist_map_gather(m, -1, never, s), AM_ERR_BAD_RANK,
               "root -1");
    EXPECT_ERR(s, "am_dist_set_insert", am_dist_set_insert(set, NULL, 1), inval, "null key");
    EXPECT_ERR(s, "am_dist_set_erase", am_dist_set_erase(set, NULL, 4), inval, "null key");
    EXPECT_ERR(s, "am_dist_set_size", am_dist_set_size(set, NULL), inval, "null output pointer");
    EXPECT_ERR(s, "am_dist_set_for_all", am_dist_set_for_all(set, NULL, NULL), inval,
               "null callback");
    EXPECT_ERR(s, "am_dist_set_gather", am_dist_set_gather(set, s->size, never_key, s),
               AM_ERR_BAD_RANK, "root", "out of range");

    /* a NULL callback at the root: on a team of this rank alone, where every rank is root */
    am_coll_team_t* w = NULL;
    am_coll_team_t* solo = NULL;
    REQUIRE_OK(s, am_coll_team_world(s->ctx, &w));
    REQUIRE_OK(s, am_coll_team_split(w, s->rank, 0, &solo));
    am_dist_map_t* sm = NULL;
    REQUIRE_OK(s, am_dist_map_create(s->ctx, solo, &sm));
    EXPECT_ERR(s, "am_dist_map_gather", am_dist_map_gather(sm, 0, NULL, NULL), inval,
               "null callback at the root");
    REQUIRE_OK(s, am_dist_map_free(sm));
    am_dist_set_t* ss = NULL;
    REQUIRE_OK(s, am_dist_set_create(s->ctx, solo, &ss));
    EXPECT_ERR(s, "am_dist_set_gather", am_dist_set_gather(ss, 0, NULL, NULL), inval,
               "null callback at the root");
    REQUIRE_OK(s, am_dist_set_free(ss));
    am_coll_team_free(solo);
    am_coll_team_free(w);

    /* in a handler (a request to this rank itself) */
    in_handler h = {s, m, set, AM_COUNTER_INIT};
    am_handler_t hid = AM_HANDLER_INVALID;
    REQUIRE_OK(s, am_register_short(s->ctx, collectives_in_handler, 0, &h, &hid));
    REQUIRE_OK(s, am_barrier(s->ctx));
    REQUIRE_OK(s, am_request_short(s->ctx, s->rank, hid, NULL, 0));
    REQUIRE_OK(s, am_counter_wait(s->ctx, &h.done, 1));

    /* nothing was sent: both are empty everywhere (and still usable) */
    REQUIRE_OK(s, am_dist_map_size(m, &n));
    CHECK(s, n == 0);
    REQUIRE_OK(s, am_dist_map_for_all(m, never, s));
    REQUIRE_OK(s, am_dist_map_gather(m, 0, never, s));
    REQUIRE_OK(s, am_dist_set_size(set, &n));
    CHECK(s, n == 0);
    REQUIRE_OK(s, am_dist_set_for_all(set, never_key, s));
    REQUIRE_OK(s, am_dist_set_gather(set, 0, never_key, s));
    /* the empty key is a key */
    REQUIRE_OK(s, am_dist_map_insert(m, NULL, 0, NULL, 0));
    REQUIRE_OK(s, am_dist_map_size(m, &n));
    CHECK(s, n == 1);
    REQUIRE_OK(s, am_dist_map_free(m));
    REQUIRE_OK(s, am_dist_set_free(set));
    return s->bad != 0;
}

static const char* const names[] = {"map", "set", "team", "errors"};
static int (*const runs[])(rank_state*) = {scenario_map, scenario_set, scenario_team,
                                           scenario_errors};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    const int failed = runs[sc](&s) != 0;
    check_end(ctx, names[sc], failed || s.bad != 0);
}

int main(int argc, char** argv) {
    return check_main(argc, argv, "dist_test", names, sizeof names / sizeof names[0], rank_main);
}
