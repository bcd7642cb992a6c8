/* SPDX-License-Identifier: MIT */
/*
 * The paper's two operations through MPIX_Am, from every process to every process (itself
 * included), checked against a sequential computation: remote search (20 characters in and
 * out per segment, read-only on the target's records) and absolute sum (100 ints in and out per
 * segment, each origin accumulating into its own persistent range of each target). Windows
 * from MPI_Win_create over user memory with disp_unit = sizeof(int).
 *
 *   ops_test fence|lock|lockall|lock_mt [pipeline_unit]
 *     fence:   two fence epochs;
 *     lock:    an exclusive lock/unlock epoch per target (MPI_THREAD_SINGLE: the targets
 *              progress AMs in their own MPI_Win_* calls, MPI_Win_free at the latest);
 *     lockall: MPI_Win_lock_all, MPI_Win_flush per target (outputs checked after each
 *              flush), MPI_Win_unlock_all;
 *     lock_mt: MPI_THREAD_MULTIPLE: only rank 0 sends AMs, with lock/unlock, while the others
 *              wait in MPI_Barrier (AMs progress on their progress thread).
 */
#include "mpix_test.h"

enum { SEGMENTS = 37, KEYS = 29, RECORDS = 64, ROUNDS = 2 };

static int me, n;
static int* abs_area; /* n x ABS_N ints: origin o's persistent range at o x ABS_N */
static char* records; /* RECORDS x SEARCH_W characters, after the ints */

static void make_input(int* in, int origin, int target, int round) {
    uint64_t st = (uint64_t)(origin * 7919 + target * 104729 + round * 1299709 + 1);
    for (int i = 0; i < SEGMENTS * ABS_N; ++i) in[i] = (int)(next_random(&st) % 2001) - 1000;
}

static void make_keys(char* keys, int origin, int target, int round) {
    uint64_t st = (uint64_t)(origin * 31 + target * 1031 + round * 7 + 99);
    for (int i = 0; i < KEYS * SEARCH_W; ++i) keys[i] = (char)('a' + next_random(&st) % 4);
}

struct outputs {
    int abs_in[SEGMENTS * ABS_N], abs_out[SEGMENTS * ABS_N];
    char keys[KEYS * SEARCH_W], found[KEYS * SEARCH_W];
};

static void issue(struct outputs* o, int target, int round, MPI_Op abs_op, MPI_Op search_op,
                  MPI_Win win) {
    make_input(o->abs_in, me, target, round);
    make_keys(o->keys, me, target, round);
    memset(o->abs_out, 0x7f, sizeof o->abs_out);
    memset(o->found, 0, sizeof o->found);
    CHECK_RC(MPIX_Am(o->abs_in, ABS_N, MPI_INT, o->abs_out, ABS_N, MPI_INT, SEGMENTS, target,
                     MPI_INT, (MPI_Aint)me * ABS_N, ABS_N, MPI_INT, MPI_INT, abs_op, win));
    CHECK_RC(MPIX_Am(o->keys, SEARCH_W, MPI_CHAR, o->found, SEARCH_W, MPI_CHAR, KEYS, target,
                     MPI_CHAR, (MPI_Aint)n * ABS_N, RECORDS * SEARCH_W, MPI_CHAR, MPI_CHAR,
                     search_op, win));
}

static void check_outputs(const struct outputs* o, int target) {
    char target_records[RECORDS * SEARCH_W], want[SEARCH_W];
    fill_records(target_records, RECORDS, target);
    int bad_abs = 0, bad_search = 0;
    for (int i = 0; i < SEGMENTS * ABS_N; ++i) bad_abs += o->abs_out[i] != abs(o->abs_in[i]);
    for (int k = 0; k < KEYS; ++k) {
        search_one(o->keys + k * SEARCH_W, target_records, RECORDS, want);
        bad_search += memcmp(want, o->found + k * SEARCH_W, SEARCH_W) != 0;
    }
    CHECK(bad_abs == 0);
    CHECK(bad_search == 0);
}

/* This process's persistent ranges after `rounds` rounds from the origins in [0, origins). */
static void check_persistent(int origins, int rounds) {
    int in[SEGMENTS * ABS_N];
    int bad = 0;
    for (int o = 0; o < origins; ++o) {
        int want[ABS_N] = {0};
        for (int r = 0; r < rounds; ++r) {
            make_input(in, o, me, r);
            for (int s = 0; s < SEGMENTS; ++s) {
                for (int i = 0; i < ABS_N; ++i) want[i] += abs(in[s * ABS_N + i]);
            }
        }
        for (int i = 0; i < ABS_N; ++i) bad += abs_area[o * ABS_N + i] != want[i];
    }
    CHECK(bad == 0);
    char mine[RECORDS * SEARCH_W];
    fill_records(mine, RECORDS, me);
    CHECK(memcmp(mine, records, sizeof mine) == 0); /* search is read-only */
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "fence";
    const char* unit = argc > 2 ? argv[2] : NULL;
    const int mt = strcmp(mode, "lock_mt") == 0;
    int provided = 0;
    MPI_Init_thread(&argc, &argv, mt ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    me = rank_of_world();
    n = size_of_world();
    if (mt && provided < MPI_THREAD_MULTIPLE) {
        printf("FAILED: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const size_t bytes = (size_t)n * ABS_N * sizeof(int) + RECORDS * SEARCH_W;
    void* memory = calloc(1, bytes);
    abs_area = (int*)memory;
    records = (char*)memory + (size_t)n * ABS_N * sizeof(int);
    fill_records(records, RECORDS, me);

    MPI_Info info = am_info(NULL, NULL, unit);
    MPI_Win win;
    CHECK_RC(MPI_Win_create(memory, (MPI_Aint)bytes, sizeof(int), info, MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    MPI_Op abs_op, search_op;
    CHECK_RC(MPIX_Am_op_create(abssum_fn, &abs_op));
    CHECK_RC(MPIX_Am_op_create(search_fn, &search_op));
    CHECK_RC(MPIX_Am_win_op_register(abs_op, win));
    CHECK_RC(MPIX_Am_win_op_register(search_op, win));

    struct outputs* outs = calloc((size_t)n, sizeof *outs);
    int origins = n, rounds = ROUNDS;
    if (strcmp(mode, "fence") == 0) {
        for (int round = 0; round < ROUNDS; ++round) {
            CHECK_RC(MPI_Win_fence(0, win));
            for (int t = 0; t < n; ++t) issue(&outs[t], t, round, abs_op, search_op, win);
            CHECK_RC(MPI_Win_fence(0, win));
            for (int t = 0; t < n; ++t) check_outputs(&outs[t], t);
            /* After the fence every AM to this process has run. */
            if (round == ROUNDS - 1) check_persistent(n, ROUNDS);
        }
        CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    } else if (strcmp(mode, "lock") == 0) {
        rounds = 1;
        for (int i = 0; i < n; ++i) {
            const int t = (me + i) % n;
            CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            issue(&outs[t], t, 0, abs_op, search_op, win);
            CHECK_RC(MPI_Win_unlock(t, win));
            check_outputs(&outs[t], t);
        }
    } else if (strcmp(mode, "lockall") == 0) {
        rounds = 1;
        CHECK_RC(MPI_Win_lock_all(0, win));
        for (int i = 0; i < n; ++i) {
            const int t = (me + i) % n;
            issue(&outs[t], t, 0, abs_op, search_op, win);
            CHECK_RC(MPI_Win_flush(t, win));
            check_outputs(&outs[t], t);
        }
        CHECK_RC(MPI_Win_unlock_all(win));
    } else if (mt) {
        origins = 1;
        rounds = 1;
        if (me == 0) {
            for (int t = n - 1; t >= 0; --t) {
                CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
                issue(&outs[t], t, 0, abs_op, search_op, win);
                CHECK_RC(MPI_Win_unlock(t, win));
                check_outputs(&outs[t], t);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD); /* not an AM call: the progress thread ran the AMs */
        /* MPI's rule for reading one's own window after others' passive epochs: a lock epoch
         * on it (or MPI_Win_sync). */
        CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
        check_persistent(origins, rounds);
        CHECK_RC(MPI_Win_unlock(me, win));
    } else {
        printf("FAILED: unknown mode %s\n", mode);
    }
    CHECK_RC(MPI_Win_free(&win));
    check_persistent(origins, rounds); /* the memory is the program's, after the free too */
    CHECK_RC(MPIX_Am_op_free(&abs_op));
    CHECK_RC(MPIX_Am_op_free(&search_op));
    CHECK(abs_op == MPI_OP_NULL);
    free(outs);
    free(memory);
    return finish("mpix_ops");
}
