/* SPDX-License-Identifier: MIT */
/*
 * Split-C global memory from C (am/am_splitc.h): a matrix of ROWS x COLS integers per rank,
 * stacked by rank into one global matrix. Each rank sums one column over every rank's block
 * with strided GETs (one row of 8 bytes every COLS * 8 bytes), all in flight at once and
 * completed by one flag, then PUTs its sum into rank 0's table, where a flag counts them in.
 *   AM_RANKS=4 ./splitc_c                     (4 thread-ranks)
 *   amrun -n 4 --transport shm ./splitc_c     (4 processes)
 *   AM_RMA=am AM_RANKS=4 ./splitc_c           (puts and gets as active messages)
 */
#include <am/am_splitc.h> /* self-contained: includes <am/am.h> */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 1000
#define COLS 8

typedef struct job {
    am_splitc_flag_t* got;     /* counts this rank's GETs */
    am_splitc_flag_t* arrived; /* on rank 0: counts the PUT sums */
    am_splitc_gptr_t block, table;
    am_splitc_gptr_t* blocks; /* every rank's block */
    am_splitc_gptr_t* tables; /* every rank's table; rank 0's is used */
    int64_t* column;          /* this rank's column, gathered from every rank */
} job;

/* Column c of the global matrix, whose element (g, c) is g * COLS + c. */
static int64_t expected_sum(int64_t nrows, int c) {
    return COLS * nrows * (nrows - 1) / 2 + nrows * c;
}

static am_status_t run(am_context_t* ctx, job* j) {
    const int rank = am_rank(ctx), size = am_size(ctx), c = rank % COLS;
    am_status_t st;
    /* Flags that other ranks' puts name: created in the same order on every rank. */
    if ((st = am_splitc_flag_create(ctx, &j->got)) != AM_OK) return st;
    if ((st = am_splitc_flag_create(ctx, &j->arrived)) != AM_OK) return st;
    if ((st = am_splitc_alloc(ctx, ROWS * COLS * sizeof(int64_t), 0, &j->block)) != AM_OK)
        return st;
    if ((st = am_splitc_alloc(ctx, (size_t)size * sizeof(int64_t), 0, &j->table)) != AM_OK)
        return st;
    int64_t* mine = am_splitc_local(ctx, j->block, ROWS * COLS * sizeof(int64_t));
    for (int64_t i = 0; i < ROWS; ++i) {
        for (int k = 0; k < COLS; ++k) mine[i * COLS + k] = ((int64_t)rank * ROWS + i) * COLS + k;
    }
    j->blocks = malloc((size_t)size * sizeof *j->blocks);
    j->tables = malloc((size_t)size * sizeof *j->tables);
    j->column = malloc((size_t)size * ROWS * sizeof *j->column);
    if (j->blocks == NULL || j->tables == NULL || j->column == NULL) return AM_ERR_SYSTEM;
    /* Collective: everyone's pointers (and every block is filled once it returns). */
    if ((st = am_splitc_exchange(ctx, j->block, j->blocks)) != AM_OK) return st;
    if ((st = am_splitc_exchange(ctx, j->table, j->tables)) != AM_OK) return st;

    /* Split-phase strided GETs of column c from every rank, then one wait for all. */
    for (int r = 0; r < size; ++r) {
        st =
            am_splitc_get_strided_nb(ctx, j->column + (size_t)r * ROWS, sizeof(int64_t),
                                     am_splitc_gptr_add(j->blocks[r], c * (int64_t)sizeof(int64_t)),
                                     COLS * sizeof(int64_t), sizeof(int64_t), ROWS, j->got);
        if (st != AM_OK) return st;
    }
    if ((st = am_splitc_flag_wait(j->got, (uint64_t)size)) != AM_OK) return st;
    int64_t sum = 0;
    for (size_t i = 0; i < (size_t)size * ROWS; ++i) sum += j->column[i];

    /* PUT the sum into slot `rank` of rank 0's table; `arrived` counts on rank 0. */
    st = am_splitc_put_nb(ctx, am_splitc_gptr_add(j->tables[0], rank * (int64_t)sizeof(int64_t)),
                          &sum, sizeof sum, j->arrived, NULL);
    if (st != AM_OK) return st;
    if (rank == 0) {
        if ((st = am_splitc_flag_wait(j->arrived, (uint64_t)size)) != AM_OK) return st;
        const int64_t* table = am_splitc_local(ctx, j->table, (size_t)size * sizeof(int64_t));
        int wrong = 0;
        for (int r = 0; r < size; ++r) {
            const int64_t want = expected_sum((int64_t)size * ROWS, r % COLS);
            wrong += table[r] != want;
            printf("rank 0: column %d (summed by rank %d) = %" PRId64 " (expected %" PRId64 ")\n",
                   r % COLS, r, table[r], want);
        }
        printf("rank 0: %d column sums of a %d x %d matrix on %d ranks, %d wrong\n", size,
               size * ROWS, COLS, size, wrong);
        fflush(stdout);
        if (wrong != 0) return am_abort(ctx, "splitc_c: wrong sum");
    }
    /* Other ranks may still read this rank's block: free only when all are done. */
    if ((st = am_barrier(ctx)) != AM_OK) return st;
    if ((st = am_splitc_free(ctx, j->table)) != AM_OK) return st;
    return am_splitc_free(ctx, j->block);
}

static void rank_main(am_context_t* ctx, void* arg) {
    job j = {NULL, NULL, {-1, 0}, {-1, 0}, NULL, NULL, NULL};
    (void)arg;
    if (run(ctx, &j) != AM_OK) {
        fprintf(stderr, "splitc_c: %s\n", am_last_error(ctx));
        (void)am_abort(ctx, "splitc_c failed");
    }
    am_splitc_flag_free(j.got);
    am_splitc_flag_free(j.arrived);
    free(j.blocks);
    free(j.tables);
    free(j.column);
}

int main(int argc, char** argv) {
    return am_run(argc, argv, rank_main, NULL);
}
