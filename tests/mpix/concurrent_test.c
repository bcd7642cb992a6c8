/* SPDX-License-Identifier: MIT */
/*
 * MPIX_MODE_CONCURRENT_AM on an MPI_Win_allocate window: every process sends every process
 * absolute-sum AMs (each origin to its own persistent range of each target: concurrency-safe)
 * in fence epochs opened with the assertion; results against a sequential computation. The
 * function counts the runs whose persistent buffer lies outside this process's own window:
 * runs at the origin, on the target's window mapped here.
 *
 *   concurrent_test concurrent origin   the assertion; runs at the origin must happen
 *                                       (processes of one host sharing memory: mpishm)
 *   concurrent_test concurrent any      the assertion; no claim where they run (mpi: every
 *                                       message through MPI, nothing mapped)
 *   concurrent_test plain target        no assertion: every run must be at the target
 * A third argument "lockall" uses MPI_Win_lock_all(MPIX_MODE_CONCURRENT_AM) / MPI_Win_unlock_all
 * instead of fences (the target then reads its window after a fence: an MPI_Barrier would leave
 * the others' unlocks waiting without a progress thread, see docs/mpix_am.md); "big" makes
 * the window 2 MiB (run with AM_SEGMENT_BYTES=1048576: MPI then allocates the memory, nothing is
 * mapped, and every run must be at the target).
 */
#include "mpix_test.h"

#include <stdatomic.h>

enum { SEGMENTS = 20, AMS = 4 };

static char* window_base;
static size_t window_bytes;
static atomic_int runs_elsewhere;

static void counting_fn(void* input_addr, int input_segment_count,
                        MPI_Datatype input_segment_datatype, void* persistent_addr,
                        int persistent_count, MPI_Datatype persistent_datatype, void* output_addr,
                        int output_segment_count, MPI_Datatype output_segment_datatype,
                        int num_segments, int segment_offset) {
    const char* p = (const char*)persistent_addr;
    if (p < window_base || p >= window_base + window_bytes) atomic_fetch_add(&runs_elsewhere, 1);
    abssum_fn(input_addr, input_segment_count, input_segment_datatype, persistent_addr,
              persistent_count, persistent_datatype, output_addr, output_segment_count,
              output_segment_datatype, num_segments, segment_offset);
}

static void make_input(int* in, int origin, int target, int a) {
    uint64_t st = (uint64_t)(origin * 7 + target * 7919 + a * 104729 + 11);
    for (int i = 0; i < SEGMENTS * ABS_N; ++i) in[i] = (int)(next_random(&st) % 2001) - 1000;
}

int main(int argc, char** argv) {
    const int concurrent = argc > 1 && strcmp(argv[1], "concurrent") == 0;
    const char* expect = argc > 2 ? argv[2] : "any";
    MPI_Init(&argc, &argv);
    const int me = rank_of_world(), n = size_of_world();
    const int big = argc > 3 && strcmp(argv[3], "big") == 0;
    window_bytes = big ? (size_t)2 << 20 : (size_t)n * ABS_N * sizeof(int);
    int* persistent = NULL;
    MPI_Win win;
    CHECK_RC(MPI_Win_allocate((MPI_Aint)window_bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &persistent, &win));
    window_base = (char*)persistent;
    memset(persistent, 0, window_bytes);
    MPI_Op op;
    CHECK_RC(MPIX_Am_op_create(counting_fn, &op));
    CHECK_RC(MPIX_Am_win_op_register(op, win));
    const int assert_bits = concurrent ? MPIX_MODE_CONCURRENT_AM : 0;

    const size_t per_am = (size_t)SEGMENTS * ABS_N;
    int* in = malloc((size_t)n * AMS * per_am * sizeof(int));
    int* out = malloc((size_t)n * AMS * per_am * sizeof(int));
    const int lockall = argc > 3 && strcmp(argv[3], "lockall") == 0;
    if (lockall) {
        MPI_Barrier(MPI_COMM_WORLD); /* the window's initial zeros are everyone's */
        CHECK_RC(MPI_Win_lock_all(assert_bits, win));
    } else {
        CHECK_RC(MPI_Win_fence(assert_bits, win)); /* the initial zeros are everyone's */
    }
    for (int t = 0; t < n; ++t) {
        for (int a = 0; a < AMS; ++a) {
            int* ia = in + ((size_t)t * AMS + a) * per_am;
            int* oa = out + ((size_t)t * AMS + a) * per_am;
            make_input(ia, me, t, a);
            memset(oa, 0xff, per_am * sizeof(int));
            CHECK_RC(MPIX_Am(ia, ABS_N, MPI_INT, oa, ABS_N, MPI_INT, SEGMENTS, t, MPI_INT,
                             (MPI_Aint)me * ABS_N, ABS_N, MPI_INT, MPI_INT, op, win));
        }
    }
    if (lockall) {
        CHECK_RC(MPI_Win_unlock_all(win));
        CHECK_RC(MPI_Win_fence(0, win)); /* every origin's AMs have completed */
    } else {
        CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    }
    int bad = 0;
    for (size_t i = 0; i < (size_t)n * AMS * per_am; ++i) bad += out[i] != abs(in[i]);
    CHECK(bad == 0);
    int* seq = malloc(per_am * sizeof(int));
    bad = 0;
    for (int o = 0; o < n; ++o) {
        int want[ABS_N] = {0};
        for (int a = 0; a < AMS; ++a) {
            make_input(seq, o, me, a);
            for (size_t i = 0; i < per_am; ++i) want[i % ABS_N] += abs(seq[i]);
        }
        for (int i = 0; i < ABS_N; ++i) bad += persistent[o * ABS_N + i] != want[i];
    }
    CHECK(bad == 0);
    const int elsewhere = atomic_load(&runs_elsewhere);
    if (strcmp(expect, "origin") == 0 && n > 1) CHECK(elsewhere > 0);
    if (strcmp(expect, "target") == 0) CHECK(elsewhere == 0);
    if (lockall) CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    printf("mpix_concurrent: on rank %d, %d runs on mapped windows of other processes\n", me,
           elsewhere);
    CHECK_RC(MPI_Win_free(&win));
    CHECK_RC(MPIX_Am_op_free(&op));
    free(seq);
    free(in);
    free(out);
    return finish("mpix_concurrent");
}
