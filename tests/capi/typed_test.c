/* SPDX-License-Identifier: MIT */
/*
 * The typed layer's C API (am/am_typed.h), used from C. `typed_test <scenario>` runs one
 * scenario on every rank through am_run (transport and rank count from AM_TRANSPORT /
 * AM_RANKS) and exits non-zero when a check fails on any rank: the failing rank prints
 * "typed_test: FAILED ..." and calls am_abort. `typed_test all` runs every scenario in turn.
 * AM_CAPI_VERBOSE=1 prints each error message that was checked.
 *
 * Every count below is exact: the epoch's end guarantees that every message sent in it, nested
 * ones too, has been handled on every rank.
 */
#include <am/am_typed.h> /* first: it is self-contained */

#include <am/am.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAX_RANKS 64
#define PER_DEST 600u /* items each rank sends each rank in "counts" */
#define DIRECT_BATCH 10u
#define SMALL_BUFFER 256u /* bytes: 16 items of 16 bytes */
#define TREE_DEPTH 8u     /* a binary tree of 2^9 - 1 = 511 nodes per rank */
#define KEYS 64u
#define REPEATS 10u

typedef struct rank_state {
    am_context_t* ctx;
    int rank, size, right;
    unsigned bad;
    /* counts */
    uint64_t from[MAX_RANKS], seq_errors, misaligned, odd_items;
    /* dedup / reduce */
    uint64_t values_seen, keys_seen[KEYS];
    uint32_t min_of[KEYS];
    /* nested */
    uint64_t nodes, expected_failures;
    am_counter_t tree_nodes, tree_failures; /* on_node may run on the progress thread */
    am_typed_t* tree;
    am_typed_layer_t* tree_out;
    int tables_differ; /* "mismatch": every barrier would report the tables again */
} rank_state;

/* The sum of `value` over all ranks, through an empty epoch (a value handed to am_typed_epoch_end
 * is read when it is called, before the messages it waits for are handled). */
static int sum_over_ranks(rank_state* s, uint64_t value, uint64_t* sum) {
    REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, 0));
    REQUIRE_OK(s, am_typed_epoch_end(s->ctx, value, sum, NULL));
    return 0;
}

/* ------------------------------------------------------------------------------- counts */

typedef struct item {
    int32_t source;
    uint32_t seq;
    uint64_t value;
} item;

static uint64_t value_of(int source, uint32_t seq) {
    return (uint64_t)source * 1000003u + seq * 7u + 1u;
}

static void on_items(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    rank_state* s = user;
    CHECK(s, ctx == s->ctx && count >= 1);
    if (((uintptr_t)items % 8u) != 0) s->misaligned++;
    const item* it = items;
    for (size_t i = 0; i < count; ++i) {
        if (it[i].source != source || it[i].value != value_of(source, it[i].seq)) s->seq_errors++;
        s->from[source]++;
    }
}

/* 3-byte items: packed without padding, at any alignment inside the batch. */
static void on_odd(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    rank_state* s = user;
    (void)ctx;
    const unsigned char* b = items;
    for (size_t i = 0; i < count; ++i) {
        if (b[3 * i] != (unsigned char)source || b[3 * i + 1] != 0xa5 ||
            b[3 * i + 2] != (unsigned char)(source ^ 0x5a))
            s->seq_errors++;
        s->odd_items++;
    }
}

/* Every rank sends PER_DEST items to every rank: half straight (batches of DIRECT_BATCH), half
 * through a coalescing layer of SMALL_BUFFER bytes; and 3-byte items through a default one. */
static int scenario_counts(rank_state* s) {
    am_typed_t *type, *odd;
    am_typed_layer_t *out, *odd_out;
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(item), on_items, s, "item", &type));
    REQUIRE_OK(s, am_typed_create(s->ctx, 3, on_odd, s, "odd", &odd));
    REQUIRE(s, am_typed_item_size(type) == sizeof(item) && am_typed_context(type) == s->ctx);
    REQUIRE(s, am_typed_max_batch(type) == am_max_medium(s->ctx) / sizeof(item));
    REQUIRE_OK(s, am_typed_coalesce(type, SMALL_BUFFER, &out));
    REQUIRE_OK(s, am_typed_coalesce(odd, 0, &odd_out));
    for (int round = 0; round < 2; ++round) {
        memset(s->from, 0, sizeof s->from);
        s->odd_items = 0;
        REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, round == 0 ? -1 : 0));
        for (int d = 0; d < s->size; ++d) {
            const int dest = (s->rank + d) % s->size;
            item batch[DIRECT_BATCH];
            for (uint32_t i = 0; i < PER_DEST / 2; ++i) {
                batch[i % DIRECT_BATCH] = (item){s->rank, i, value_of(s->rank, i)};
                if (i % DIRECT_BATCH == DIRECT_BATCH - 1)
                    REQUIRE_OK(s, am_typed_send(type, batch, DIRECT_BATCH, dest));
            }
            for (uint32_t i = PER_DEST / 2; i < PER_DEST; ++i) {
                const item v = {s->rank, i, value_of(s->rank, i)};
                REQUIRE_OK(s, am_typed_layer_send(out, &v, dest));
            }
            const unsigned char b[3] = {(unsigned char)s->rank, 0xa5,
                                        (unsigned char)(s->rank ^ 0x5a)};
            for (int i = 0; i < 5; ++i) REQUIRE_OK(s, am_typed_layer_send(odd_out, b, dest));
        }
        uint64_t sum = 0;
        am_typed_epoch_stats_t st;
        REQUIRE_OK(s, am_typed_epoch_end(s->ctx, 1, &sum, &st));
        REQUIRE(s, sum == (uint64_t)s->size);
        for (int r = 0; r < s->size; ++r) {
            if (s->from[r] != PER_DEST)
                FAIL(s, "from %d: %llu items", r, (unsigned long long)s->from[r]);
        }
        REQUIRE(s, s->seq_errors == 0 && s->misaligned == 0);
        REQUIRE(s, s->odd_items == 5u * (uint64_t)s->size);
        const uint64_t per_rank = PER_DEST + 5u;
        REQUIRE(s, st.epoch == (uint64_t)round + 1);
        REQUIRE(s, st.messages_sent == per_rank * (uint64_t)s->size);
        REQUIRE(s, st.messages_handled == per_rank * (uint64_t)s->size);
        /* Direct: PER_DEST/2/DIRECT_BATCH batches per destination; coalesced: 16 per buffer;
         * odd: one default buffer (5 items) per destination. */
        const uint64_t cap = SMALL_BUFFER / sizeof(item);
        const uint64_t batches = PER_DEST / 2 / DIRECT_BATCH + (PER_DEST / 2 + cap - 1) / cap + 1;
        REQUIRE(s, st.batches_sent == batches * (uint64_t)s->size);
        REQUIRE(s, st.bytes_sent == (PER_DEST * sizeof(item) + 15u) * (uint64_t)s->size);
        REQUIRE(s, st.waves >= 1 && st.dedup_hits == 0 && st.combined == 0);
    }
    REQUIRE(s, am_typed_layer_count(out) == 0);
    am_typed_layer_free(out);
    am_typed_layer_free(odd_out);
    return 0;
}

/* ------------------------------------------------------------------------ dedup, reduce */

static void on_value(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    rank_state* s = user;
    (void)ctx, (void)source;
    const uint32_t* v = items;
    for (size_t i = 0; i < count; ++i) CHECK(s, (int)(v[i] % (uint32_t)s->size) == s->rank);
    s->values_seen += count;
}

typedef struct kv {
    uint32_t key;
    uint32_t value;
} kv;

static uint32_t kv_value(int rank, uint32_t key, uint32_t j) {
    return (key * 7919u + (uint32_t)rank * 104729u + j * 613u) % 100000u;
}

static void on_kv(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    rank_state* s = user;
    (void)ctx, (void)source;
    const kv* p = items;
    for (size_t i = 0; i < count; ++i) {
        CHECK(s, p[i].key < KEYS && (int)(p[i].key % (uint32_t)s->size) == s->rank);
        if (p[i].key >= KEYS) continue;
        s->keys_seen[p[i].key]++;
        if (p[i].value < s->min_of[p[i].key]) s->min_of[p[i].key] = p[i].value;
    }
}

static void keep_min(void* acc, const void* next, void* user) {
    kv* a = acc;
    const kv* b = next;
    (*(unsigned*)user)++;
    if (b->value < a->value) a->value = b->value;
}

/* One epoch of combining: every rank sends REPEATS values of each key to the key's owner. */
static int reduce_epoch(rank_state* s, am_typed_layer_t* layer, int exact) {
    for (uint32_t k = 0; k < KEYS; ++k) s->keys_seen[k] = 0, s->min_of[k] = UINT32_MAX;
    REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, -1));
    for (uint32_t j = 0; j < REPEATS; ++j) {
        for (uint32_t k = 0; k < KEYS; ++k) {
            const kv v = {k, kv_value(s->rank, k, j)};
            REQUIRE_OK(s, am_typed_layer_send(layer, &v, (int)(k % (uint32_t)s->size)));
        }
    }
    am_typed_epoch_stats_t st;
    REQUIRE_OK(s, am_typed_epoch_end(s->ctx, 0, NULL, &st));
    for (uint32_t k = 0; k < KEYS; ++k) {
        if ((int)(k % (uint32_t)s->size) != s->rank) continue;
        uint32_t want = UINT32_MAX;
        for (int r = 0; r < s->size; ++r)
            for (uint32_t j = 0; j < REPEATS; ++j)
                if (kv_value(r, k, j) < want) want = kv_value(r, k, j);
        if (s->min_of[k] != want) FAIL(s, "key %u: min %u, expected %u", k, s->min_of[k], want);
        /* Exact cache: one item per key from every rank; a small cache: at least one. */
        if (exact ? s->keys_seen[k] != (uint64_t)s->size : s->keys_seen[k] < (uint64_t)s->size)
            FAIL(s, "key %u: %llu items", k, (unsigned long long)s->keys_seen[k]);
    }
    if (exact) REQUIRE(s, st.combined == (uint64_t)KEYS * (REPEATS - 1));
    REQUIRE(s, st.messages_sent + st.combined == (uint64_t)KEYS * REPEATS);
    return 0;
}

static int scenario_dedup_reduce(rank_state* s) {
    am_typed_t *values, *pairs;
    am_typed_layer_t *coal, *dd, *pcoal, *red, *small;
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(uint32_t), on_value, s, "value", &values));
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(kv), on_kv, s, "kv", &pairs));
    REQUIRE_OK(s, am_typed_coalesce(values, 0, &coal));
    REQUIRE_OK(s, am_typed_dedup(values, coal, 0, &dd));
    /* Dedup: 100 distinct values, each sent 5 times; the cache outlives the epoch. */
    for (int round = 0; round < 2; ++round) {
        s->values_seen = 0;
        REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, -1));
        for (int rep = 0; rep < 5; ++rep)
            for (uint32_t v = 0; v < 100; ++v)
                REQUIRE_OK(s, am_typed_layer_send(dd, &v, (int)(v % (uint32_t)s->size)));
        am_typed_epoch_stats_t st;
        uint64_t total = 0;
        REQUIRE_OK(s, am_typed_epoch_end(s->ctx, 0, NULL, &st));
        if (sum_over_ranks(s, s->values_seen, &total) != 0) return 1;
        REQUIRE(s, total == (round == 0 ? 100u * (uint64_t)s->size : 0u));
        REQUIRE(s, st.messages_sent == (round == 0 ? 100u : 0u));
        REQUIRE(s, st.dedup_hits == (round == 0 ? 400u : 500u));            /* this epoch */
        REQUIRE(s, am_typed_layer_count(dd) == (round == 0 ? 400u : 900u)); /* in all */
    }
    am_typed_layer_free(dd);
    am_typed_layer_free(coal);
    /* Combining, keeping the minimum per key: exact, then through a 4-entry cache (evictions
     * send early; the minimum still holds). Both over a coalescing layer: single messages are
     * slow on oversubscribed MPI ranks (straight sends are in "errors"). */
    unsigned calls = 0;
    REQUIRE_OK(s, am_typed_coalesce(pairs, 512, &pcoal));
    REQUIRE_OK(s, am_typed_reduce(pairs, pcoal, offsetof(kv, key), sizeof(uint32_t), keep_min,
                                  &calls, 0, &red));
    if (reduce_epoch(s, red, 1) != 0) return 1;
    REQUIRE(s, calls == KEYS * (REPEATS - 1) && am_typed_layer_count(red) == calls);
    REQUIRE_OK(s, am_typed_reduce(pairs, pcoal, 0, sizeof(uint32_t), keep_min, &calls, 4, &small));
    if (reduce_epoch(s, small, 0) != 0) return 1;
    am_typed_layer_free(small);
    am_typed_layer_free(red);
    am_typed_layer_free(pcoal);
    return 0;
}

/* ------------------------------------------------------------------------------- nested */

typedef struct node {
    uint32_t depth;
    uint32_t id;
} node;

/* A node sends its two children: one straight, one through the coalescing layer; the tree's
 * nodes spread over the ranks. */
static void on_node(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    rank_state* s = user;
    (void)source;
    const node* n = items;
    for (size_t i = 0; i < count; ++i) {
        am_counter_add(&s->tree_nodes, 1);
        if (n[i].depth == 0) continue;
        const node a = {n[i].depth - 1, n[i].id * 2u}, b = {n[i].depth - 1, n[i].id * 2u + 1u};
        CHECK(s, am_typed_send(s->tree, &a, 1, (int)(a.id % (uint32_t)s->size)) == AM_OK);
        if (s->tree_out != NULL) {
            CHECK(s,
                  am_typed_layer_send(s->tree_out, &b, (int)(b.id % (uint32_t)s->size)) == AM_OK);
        } else {
            CHECK(s, am_typed_send(s->tree, &b, 1, (int)(b.id % (uint32_t)s->size)) == AM_OK);
        }
        /* Epochs are begun and ended by the rank's code only. */
        if (n[i].id == 1) {
            EXPECT_ERR(s, "am_typed_epoch_end", am_typed_epoch_end(ctx, 0, NULL, NULL),
                       AM_ERR_BAD_CONTEXT, "handler");
            EXPECT_ERR(s, "am_typed_epoch_begin", am_typed_epoch_begin(ctx, -1), AM_ERR_BAD_CONTEXT,
                       "handler");
            am_counter_add(&s->tree_failures, 1);
        }
    }
}

/* Depth-limited: level 0 sends one child (level 1); a level-1 handler may not send. */
static void on_hop(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    rank_state* s = user;
    (void)ctx, (void)source;
    const node* n = items;
    for (size_t i = 0; i < count; ++i) {
        s->nodes++;
        const node next = {n[i].depth - 1, n[i].id};
        const am_status_t st = am_typed_send(s->tree, &next, 1, (s->rank + 1) % s->size);
        if (n[i].depth == 2) {
            CHECK(s, st == AM_OK);
        } else {
            EXPECT_ERR(s, "am_typed_send", st, AM_ERR_BAD_CONTEXT, "nested 2 deep",
                       "exceeds the depth 1", "am_typed_epoch_begin's depth");
            s->expected_failures++;
        }
    }
}

static int scenario_nested(rank_state* s) {
    am_typed_t* hops;
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(node), on_node, s, "node", &s->tree));
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(node), on_hop, s, "hop", &hops));
    REQUIRE_OK(s, am_typed_coalesce(s->tree, 64, &s->tree_out));
    REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, -1));
    /* One tree per rank, rooted at id 1 on the rank itself (node ids repeat across trees,
     * which the count does not mind). */
    const node root = {TREE_DEPTH, 1};
    REQUIRE_OK(s, am_typed_send(s->tree, &root, 1, s->rank));
    uint64_t total = 0;
    REQUIRE_OK(s, am_typed_epoch_end(s->ctx, 0, NULL, NULL));
    if (sum_over_ranks(s, am_counter_value(&s->tree_nodes), &total) != 0) return 1;
    REQUIRE(s, total == ((1u << (TREE_DEPTH + 1)) - 1u) * (uint64_t)s->size);
    /* Every rank's root has id 1 and runs on that rank: one misuse check per rank. */
    REQUIRE(s, am_counter_value(&s->tree_failures) == 1);
    am_typed_layer_free(s->tree_out);
    /* Depth 1: s->tree now names the hop type for the handler. */
    s->nodes = 0;
    s->expected_failures = 0;
    s->tree = hops;
    REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, 1));
    const node first = {2, (uint32_t)s->rank};
    REQUIRE_OK(s, am_typed_send(hops, &first, 1, s->rank));
    am_typed_epoch_stats_t st;
    REQUIRE_OK(s, am_typed_epoch_end(s->ctx, 0, &total, &st));
    REQUIRE(s, s->nodes == 2 && s->expected_failures == 1);
    REQUIRE(s, st.messages_sent == 2 && st.messages_handled == 2 && st.waves >= 1);
    return 0;
}

/* With a progress thread (AM_PROGRESS_THREAD=1): handlers run on it and send through the
 * message type; the C sending layers refuse to be created. */
static int scenario_progress(rank_state* s) {
    am_typed_layer_t* out = NULL;
    const char* progress = getenv("AM_PROGRESS_THREAD");
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(node), on_node, s, "node", &s->tree));
    if (progress != NULL && strcmp(progress, "1") == 0) {
        EXPECT_ERR(s, "am_typed_coalesce", am_typed_coalesce(s->tree, 0, &out), AM_ERR_BAD_CONTEXT,
                   "rank's thread only");
        REQUIRE(s, out == NULL);
    } else { /* "all" without a progress thread: the layer may be created */
        REQUIRE_OK(s, am_typed_coalesce(s->tree, 0, &out));
        am_typed_layer_free(out);
    }
    for (int round = 0; round < 3; ++round) {
        am_counter_reset(&s->tree_nodes);
        am_counter_reset(&s->tree_failures);
        REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, -1));
        const node root = {TREE_DEPTH, 1};
        REQUIRE_OK(s, am_typed_send(s->tree, &root, 1, s->rank));
        REQUIRE_OK(s, am_typed_epoch_end(s->ctx, 0, NULL, NULL));
        uint64_t total = 0;
        if (sum_over_ranks(s, am_counter_value(&s->tree_nodes), &total) != 0) return 1;
        REQUIRE(s, total == ((1u << (TREE_DEPTH + 1)) - 1u) * (uint64_t)s->size);
        REQUIRE(s, am_counter_value(&s->tree_failures) == 1);
    }
    return 0;
}

/* ------------------------------------------------------------------------------- errors */

static void on_count(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    rank_state* s = user;
    (void)ctx, (void)source, (void)items;
    s->nodes += count;
}

static int scenario_errors(rank_state* s) {
    am_typed_t *type, *none = NULL;
    am_typed_layer_t *out, *bad = NULL;
    const size_t room = am_max_medium(s->ctx);
    EXPECT_ERR(s, "am_typed_create", am_typed_create(s->ctx, 0, on_count, s, "zero", &none),
               AM_ERR_TOO_LARGE, "item size 0 outside [1, am_max_medium()");
    EXPECT_ERR(s, "am_typed_create", am_typed_create(s->ctx, room + 1, on_count, s, "huge", &none),
               AM_ERR_TOO_LARGE, "outside [1, am_max_medium()");
    EXPECT_ERR(s, "am_typed_create", am_typed_create(s->ctx, 8, NULL, s, "null", &none),
               AM_ERR_INVALID_ARGUMENT, "null handler function");
    REQUIRE(s, none == NULL);
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(uint64_t), on_count, s, NULL, &type));
    EXPECT_ERR(s, "am_typed_coalesce", am_typed_coalesce(type, 4, &bad), AM_ERR_TOO_LARGE,
               "buffer of 4 bytes", "one item of 8 bytes");
    EXPECT_ERR(s, "am_typed_coalesce", am_typed_coalesce(type, room + 8, &bad), AM_ERR_TOO_LARGE,
               "am_max_medium()");
    EXPECT_ERR(s, "am_typed_reduce", am_typed_reduce(type, NULL, 4, 8, keep_min, NULL, 0, &bad),
               AM_ERR_INVALID_ARGUMENT, "key of 8 bytes at offset 4 outside the item of 8 bytes");
    REQUIRE_OK(s, am_typed_coalesce(type, 64, &out));
    am_typed_layer_t* dd;
    REQUIRE_OK(s, am_typed_dedup(type, NULL, 0, &dd));
    EXPECT_ERR(s, "am_typed_reduce", am_typed_reduce(type, dd, 0, 8, keep_min, NULL, 0, &bad),
               AM_ERR_INVALID_ARGUMENT, "coalescing layer");
    REQUIRE(s, bad == NULL);
    const uint64_t v = 42;
    /* Outside an epoch. */
    EXPECT_ERR(s, "am_typed_send", am_typed_send(type, &v, 1, 0), AM_ERR_BAD_CONTEXT,
               "no epoch is open", "am_typed_epoch_begin");
    EXPECT_ERR(s, "am_typed_layer_send", am_typed_layer_send(out, &v, 0), AM_ERR_BAD_CONTEXT,
               "no epoch is open");
    EXPECT_ERR(s, "am_typed_epoch_end", am_typed_epoch_end(s->ctx, 0, NULL, NULL),
               AM_ERR_BAD_CONTEXT, "no epoch is open");
    EXPECT_ERR(s, "am_typed_epoch_begin", am_typed_epoch_begin(s->ctx, 7), AM_ERR_INVALID_ARGUMENT,
               "depth 7 outside [-1, 6]");
    /* Inside: what was accepted before a failing call still arrives. */
    s->nodes = 0;
    REQUIRE_OK(s, am_typed_epoch_begin(s->ctx, -1));
    EXPECT_ERR(s, "am_typed_epoch_begin", am_typed_epoch_begin(s->ctx, -1), AM_ERR_BAD_CONTEXT,
               "still open");
    for (int i = 0; i < 3; ++i) REQUIRE_OK(s, am_typed_layer_send(out, &v, s->right));
    REQUIRE_OK(s, am_typed_layer_send(dd, &v, s->right));
    char rank_text[96];
    snprintf(rank_text, sizeof rank_text, "destination %d out of range [0, %d)", s->size, s->size);
    EXPECT_ERR(s, "am_typed_layer_send", am_typed_layer_send(out, &v, s->size), AM_ERR_BAD_RANK,
               rank_text);
    EXPECT_ERR(s, "am_typed_layer_send", am_typed_layer_send(dd, &v, -1), AM_ERR_BAD_RANK,
               "destination -1 out of range");
    EXPECT_ERR(s, "am_typed_send", am_typed_send(type, &v, 1, s->size), AM_ERR_BAD_RANK, rank_text);
    const size_t too_many = am_typed_max_batch(type) + 1;
    uint64_t* big = calloc(too_many, sizeof *big);
    REQUIRE(s, big != NULL);
    const am_status_t st = am_typed_send(type, big, too_many, s->right);
    free(big);
    EXPECT_ERR(s, "am_typed_send", st, AM_ERR_TOO_LARGE,
               "8193 items of 8 bytes exceed am_max_medium() = ");
    EXPECT_ERR(s, "am_typed_send", am_typed_send(type, NULL, 1, 0), AM_ERR_INVALID_ARGUMENT,
               "null items pointer");
    REQUIRE(s, am_typed_send(type, NULL, 0, s->right) == AM_OK); /* sends nothing */
    REQUIRE_OK(s, am_typed_layer_send(dd, &v, s->right));        /* a duplicate: dropped */
    uint64_t total = 0;
    REQUIRE_OK(s, am_typed_epoch_end(s->ctx, 0, NULL, NULL));
    if (sum_over_ranks(s, s->nodes, &total) != 0) return 1;
    REQUIRE(s, total == 4u * (uint64_t)s->size && s->nodes == 4);
    REQUIRE(s, am_typed_layer_count(dd) == 1);
    /* A dedup hit outside an epoch is refused as a send would be. */
    EXPECT_ERR(s, "am_typed_layer_send", am_typed_layer_send(dd, &v, s->right), AM_ERR_BAD_CONTEXT,
               "no epoch is open");
    REQUIRE(s, am_typed_layer_count(dd) == 1);
    REQUIRE(s, am_typed_send(NULL, &v, 1, 0) == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_typed_max_batch(NULL) == 0 && am_typed_layer_count(NULL) == 0);
    am_typed_layer_free(NULL);
    am_typed_layer_free(dd);
    am_typed_layer_free(out);
    return 0;
}

/* A type created differently on one rank: every rank learns it at the creating call. */
static int scenario_mismatch(rank_state* s) {
    am_typed_t* t = NULL;
    const size_t size = s->rank == s->size - 1 ? 12 : 8;
    const am_status_t st = am_typed_create(s->ctx, size, on_count, s, "mismatch", &t);
    if (s->size == 1) {
        REQUIRE(s, st == AM_OK);
        return 0;
    }
    char last[96];
    snprintf(last, sizeof last, "rank %d registered am_typed \"mismatch\" (12-byte items)",
             s->size - 1);
    s->tables_differ = 1;
    EXPECT_ERR(s, "am_typed_create", st, AM_ERR_HANDLER_MISMATCH,
               "rank 0 registered am_typed \"mismatch\" (8-byte items)", last);
    return 0;
}

/* ---------------------------------------------------------------------------------- main */

/* In the order "all" runs them. */
static const char* const names[] = {"counts", "dedup_reduce", "nested",
                                    "errors", "progress",     "mismatch"};
static int (*const runs[])(rank_state*) = {scenario_counts,   scenario_dedup_reduce,
                                           scenario_nested,   scenario_errors,
                                           scenario_progress, scenario_mismatch};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state* s = calloc(1, sizeof *s);
    if (s == NULL) {
        (void)am_abort(ctx, "typed_test: out of memory");
        return;
    }
    s->ctx = ctx;
    s->rank = am_rank(ctx);
    s->size = am_size(ctx);
    s->right = (s->rank + 1) % s->size;
    am_counter_reset(&s->tree_nodes);
    am_counter_reset(&s->tree_failures);
    if (s->size > MAX_RANKS) {
        fprintf(stderr, "typed_test: FAILED: more than %d ranks\n", MAX_RANKS);
        (void)am_abort(ctx, "typed_test: too many ranks");
    } else if (runs[sc](s) != 0 || s->bad != 0) {
        fprintf(stderr, "typed_test: FAILED: rank %d: scenario %s\n", s->rank, names[sc]);
        (void)am_abort(ctx, "typed_test check failed");
    }
    /* Handlers use the state until every rank is done: the last epoch ended on every rank.
     * After "mismatch" nothing was sent, and a barrier would only report the tables again. */
    if (s->tables_differ || am_barrier(ctx) == AM_OK) free(s);
}

int main(int argc, char** argv) {
    return check_main(argc, argv, "typed_test", names, sizeof names / sizeof names[0], rank_main);
}
