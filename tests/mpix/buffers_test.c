/* SPDX-License-Identifier: MIT */
/*
 * MPIX_Am_win_buffer_attach / _detach: the window's internal buffer (info am_internal_buffer
 * = 64 bytes) holds no absolute-sum segment (800 bytes), so every AM must be staged in the
 * buffer each target attached (4 KiB, given at an odd address: the runtime aligns it). Every
 * process sends every process AMs in two fence epochs; outputs and persistent sums are checked
 * against a sequential computation, and detach returns exactly what was attached.
 */
#include "mpix_test.h"

enum { SEGMENTS = 9, AMS = 3 };

static void make_input(int* in, int origin, int target, int a) {
    uint64_t st = (uint64_t)(origin * 1000003 + target * 1009 + a * 17 + 3);
    for (int i = 0; i < SEGMENTS * ABS_N; ++i) in[i] = (int)(next_random(&st) % 20001) - 10000;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = rank_of_world(), n = size_of_world();
    int* persistent = calloc((size_t)n * ABS_N, sizeof(int));
    MPI_Info info = am_info(NULL, "64", NULL);
    MPI_Win win;
    CHECK_RC(MPI_Win_create(persistent, (MPI_Aint)((size_t)n * ABS_N * sizeof(int)), sizeof(int),
                            info, MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    MPI_Op op;
    CHECK_RC(MPIX_Am_op_create(abssum_fn, &op));
    CHECK_RC(MPIX_Am_win_op_register(op, win));
    char* storage = malloc(4096 + 3);
    void* buffer = storage + 3;
    CHECK_RC(MPIX_Am_win_buffer_attach(win, buffer, 4096));

    const size_t per_target = (size_t)AMS * SEGMENTS * ABS_N;
    int* in = malloc((size_t)n * per_target * sizeof(int));
    int* out = malloc((size_t)n * per_target * sizeof(int));
    for (int epoch = 0; epoch < 2; ++epoch) {
        CHECK_RC(MPI_Win_fence(0, win));
        for (int t = 0; t < n; ++t) {
            for (int a = 0; a < AMS; ++a) {
                int* ia = in + t * per_target + (size_t)a * SEGMENTS * ABS_N;
                int* oa = out + t * per_target + (size_t)a * SEGMENTS * ABS_N;
                make_input(ia, me, t, a + epoch * AMS);
                memset(oa, 0xff, SEGMENTS * ABS_N * sizeof(int));
                CHECK_RC(MPIX_Am(ia, ABS_N, MPI_INT, oa, ABS_N, MPI_INT, SEGMENTS, t, MPI_INT,
                                 (MPI_Aint)me * ABS_N, ABS_N, MPI_INT, MPI_INT, op, win));
            }
        }
        CHECK_RC(MPI_Win_fence(0, win));
        int bad = 0;
        for (size_t i = 0; i < (size_t)n * per_target; ++i) bad += out[i] != abs(in[i]);
        CHECK(bad == 0);
    }
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    void* back = NULL;
    MPI_Aint size = 0;
    CHECK_RC(MPIX_Am_win_buffer_detach(win, &back, &size));
    CHECK(back == buffer);
    CHECK(size == 4096);
    /* Nothing attached now: detach returns NULL, 0. */
    CHECK_RC(MPIX_Am_win_buffer_detach(win, &back, &size));
    CHECK(back == NULL && size == 0);

    int bad = 0;
    int* seq = malloc(SEGMENTS * ABS_N * sizeof(int));
    for (int o = 0; o < n; ++o) {
        int want[ABS_N] = {0};
        for (int a = 0; a < 2 * AMS; ++a) {
            make_input(seq, o, me, a);
            for (int i = 0; i < SEGMENTS * ABS_N; ++i) want[i % ABS_N] += abs(seq[i]);
        }
        for (int i = 0; i < ABS_N; ++i) bad += persistent[o * ABS_N + i] != want[i];
    }
    CHECK(bad == 0);
    CHECK_RC(MPI_Win_free(&win));
    CHECK_RC(MPIX_Am_op_free(&op));
    free(seq);
    free(in);
    free(out);
    free(storage);
    free(persistent);
    return finish("mpix_buffers");
}
