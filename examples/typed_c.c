/* SPDX-License-Identifier: MIT */
/*
 * A distributed histogram through the typed layer's C API (am/am_typed.h): every rank draws
 * VALUES pseudo-random values and counts each in bucket `value % BUCKETS`, which rank
 * `bucket % ranks` owns. The counts travel as <bucket, count> items through a combining layer
 * (sums the counts of one bucket at the source, so one item per bucket and owner leaves) over a
 * coalescing layer (packs the items for one owner into few messages). The epoch's end returns
 * once every count has been added at its owner; each rank then checks its buckets against a
 * recount of every rank's draws.
 *   AM_RANKS=4 ./typed_c                     (4 thread-ranks)
 *   amrun -n 4 --transport shm ./typed_c     (4 processes)
 */
#include <am/am.h>
#include <am/am_typed.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define VALUES 100000u
#define BUCKETS 1000u

typedef struct bucket_count {
    uint32_t bucket;
    uint32_t count;
} bucket_count;

/* Handler: runs on the owner over a batch of counts (valid only during the call). */
static void on_counts(am_context_t* ctx, int source, const void* items, size_t n, void* user) {
    uint64_t* hist = user;
    const bucket_count* c = items;
    (void)ctx, (void)source;
    for (size_t i = 0; i < n; ++i) hist[c[i].bucket] += c[i].count;
}

/* Combining: the held item for a bucket absorbs the next one. */
static void add_count(void* acc, const void* next, void* user) {
    (void)user;
    ((bucket_count*)acc)->count += ((const bucket_count*)next)->count;
}

static uint32_t draw(uint64_t* state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

static am_status_t histogram(am_context_t* ctx, uint64_t* hist) {
    const int rank = am_rank(ctx), ranks = am_size(ctx);
    am_typed_t* counts;
    am_typed_layer_t *packed, *summed;
    am_typed_epoch_stats_t st;
    am_status_t rc;
    /* Collective: the same message types in the same order on every rank. */
    if ((rc = am_typed_create(ctx, sizeof(bucket_count), on_counts, hist, "bucket_count",
                              &counts)) != AM_OK)
        return rc;
    if ((rc = am_typed_coalesce(counts, 0, &packed)) != AM_OK) return rc;
    if ((rc = am_typed_reduce(counts, packed, offsetof(bucket_count, bucket), sizeof(uint32_t),
                              add_count, NULL, 0, &summed)) != AM_OK)
        return rc;
    if ((rc = am_typed_epoch_begin(ctx, 0)) != AM_OK)
        return rc; /* handlers send nothing: depth 0 */
    uint64_t state = (uint64_t)rank + 1;
    for (uint32_t i = 0; i < VALUES && rc == AM_OK; ++i) {
        const bucket_count one = {draw(&state) % BUCKETS, 1};
        rc = am_typed_layer_send(summed, &one, (int)(one.bucket % (uint32_t)ranks));
    }
    if (rc == AM_OK) rc = am_typed_epoch_end(ctx, 0, NULL, &st);
    am_typed_layer_free(summed); /* the combining layer first: it sends into `packed` */
    am_typed_layer_free(packed);
    if (rc != AM_OK) return rc;
    printf("rank %d: sent %llu counts in %llu messages (%llu folded at the source)\n", rank,
           (unsigned long long)st.messages_sent, (unsigned long long)st.batches_sent,
           (unsigned long long)st.combined);
    return AM_OK;
}

/* Recounts every rank's draws for this rank's buckets; returns the mismatches. */
static unsigned check(int rank, int ranks, const uint64_t* hist, uint64_t* total) {
    uint64_t* want = calloc(BUCKETS, sizeof *want);
    unsigned wrong = 0;
    if (want == NULL) return 1;
    for (int r = 0; r < ranks; ++r) {
        uint64_t state = (uint64_t)r + 1;
        for (uint32_t i = 0; i < VALUES; ++i) want[draw(&state) % BUCKETS]++;
    }
    *total = 0;
    for (uint32_t b = (uint32_t)rank; b < BUCKETS; b += (uint32_t)ranks) {
        wrong += hist[b] != want[b];
        *total += hist[b];
    }
    free(want);
    return wrong;
}

static void rank_main(am_context_t* ctx, void* arg) {
    uint64_t* hist = calloc(BUCKETS, sizeof *hist);
    (void)arg;
    if (hist == NULL) {
        (void)am_abort(ctx, "typed_c: out of memory");
        return;
    }
    if (histogram(ctx, hist) != AM_OK) {
        fprintf(stderr, "typed_c: %s\n", am_last_error(ctx));
        (void)am_abort(ctx, "typed_c failed");
        free(hist);
        return;
    }
    uint64_t mine = 0;
    const unsigned wrong = check(am_rank(ctx), am_size(ctx), hist, &mine);
    printf("rank %d: %llu values in its buckets, %u wrong\n", am_rank(ctx),
           (unsigned long long)mine, wrong);
    fflush(stdout);
    if (wrong != 0) (void)am_abort(ctx, "typed_c: wrong histogram");
    free(hist); /* no count can arrive any more: the epoch has ended on every rank */
}

int main(int argc, char** argv) {
    fflush(stdout);
    return am_run(argc, argv, rank_main, NULL);
}
