/* SPDX-License-Identifier: MIT */
/*
 * AMs mixed with MPI_Put, MPI_Get and MPI_Accumulate on one window in the same epochs (paper
 * IV-E: unordered with respect to each other, so on non-overlapping ranges both must be
 * correct). Window of each process, in ints: [put: n x ABS_N][am: n x ABS_N][get: ABS_N]
 * [acc: ABS_N]. Every origin, to every target, in each of two fence epochs: puts its row into
 * the put area, sends an absolute-sum AM on its row of the am area, gets the (constant) get
 * area and accumulates (MPI_SUM) into the acc area. Then a lock_all epoch does the same with
 * MPI_Win_flush. Everything against a sequential computation.
 */
#include "mpix_test.h"

enum { SEGMENTS = 6, EPOCHS = 3 };

static int me, n;

static void make_row(int* row, int origin, int target, int epoch, int salt) {
    uint64_t st = (uint64_t)(origin * 131 + target * 7 + epoch * 1000 + salt);
    for (int i = 0; i < ABS_N; ++i) row[i] = (int)(next_random(&st) % 2001) - 1000;
}

static void make_am_input(int* in, int origin, int target, int epoch) {
    for (int s = 0; s < SEGMENTS; ++s) make_row(in + s * ABS_N, origin, target, epoch, 50 + s);
}

struct per_target {
    int put_row[ABS_N], am_in[SEGMENTS * ABS_N], am_out[SEGMENTS * ABS_N], got[ABS_N], acc[ABS_N];
};

static void issue(struct per_target* p, int t, int epoch, MPI_Op op, MPI_Win win) {
    make_row(p->put_row, me, t, epoch, 1);
    make_am_input(p->am_in, me, t, epoch);
    for (int i = 0; i < ABS_N; ++i) p->acc[i] = me + 1;
    memset(p->got, 0, sizeof p->got);
    const MPI_Aint put_at = (MPI_Aint)me * ABS_N, am_at = (MPI_Aint)(n + me) * ABS_N;
    const MPI_Aint get_at = (MPI_Aint)2 * n * ABS_N, acc_at = get_at + ABS_N;
    CHECK_RC(MPI_Put(p->put_row, ABS_N, MPI_INT, t, put_at, ABS_N, MPI_INT, win));
    CHECK_RC(MPIX_Am(p->am_in, ABS_N, MPI_INT, p->am_out, ABS_N, MPI_INT, SEGMENTS, t, MPI_INT,
                     am_at, ABS_N, MPI_INT, MPI_INT, op, win));
    CHECK_RC(MPI_Get(p->got, ABS_N, MPI_INT, t, get_at, ABS_N, MPI_INT, win));
    CHECK_RC(MPI_Accumulate(p->acc, ABS_N, MPI_INT, t, acc_at, ABS_N, MPI_INT, MPI_SUM, win));
}

static void check_origin_side(const struct per_target* p, int t) {
    int bad = 0;
    for (int i = 0; i < SEGMENTS * ABS_N; ++i) bad += p->am_out[i] != abs(p->am_in[i]);
    for (int i = 0; i < ABS_N; ++i) bad += p->got[i] != t * 1000 + i;
    CHECK(bad == 0);
}

/* The window of this process after `epochs` epochs. */
static void check_target_side(const int* w, int epochs) {
    int bad = 0, row[ABS_N], in[SEGMENTS * ABS_N];
    for (int o = 0; o < n; ++o) {
        make_row(row, o, me, epochs - 1, 1); /* the last put wins */
        for (int i = 0; i < ABS_N; ++i) bad += w[o * ABS_N + i] != row[i];
        int want[ABS_N] = {0};
        for (int e = 0; e < epochs; ++e) {
            make_am_input(in, o, me, e);
            for (int i = 0; i < SEGMENTS * ABS_N; ++i) want[i % ABS_N] += abs(in[i]);
        }
        for (int i = 0; i < ABS_N; ++i) bad += w[(n + o) * ABS_N + i] != want[i];
    }
    const int* get_area = w + 2 * n * ABS_N;
    for (int i = 0; i < ABS_N; ++i) {
        bad += get_area[i] != me * 1000 + i;
        bad += get_area[ABS_N + i] != epochs * n * (n + 1) / 2;
    }
    CHECK(bad == 0);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    me = rank_of_world();
    n = size_of_world();
    const size_t ints = (size_t)(2 * n + 2) * ABS_N;
    int* w = calloc(ints, sizeof(int));
    for (int i = 0; i < ABS_N; ++i) w[2 * n * ABS_N + i] = me * 1000 + i;
    MPI_Win win;
    CHECK_RC(MPI_Win_create(w, (MPI_Aint)(ints * sizeof(int)), sizeof(int), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &win));
    MPI_Op op;
    CHECK_RC(MPIX_Am_op_create(abssum_fn, &op));
    CHECK_RC(MPIX_Am_win_op_register(op, win));
    struct per_target* p = calloc((size_t)n, sizeof *p);
    for (int epoch = 0; epoch < 2; ++epoch) {
        CHECK_RC(MPI_Win_fence(0, win));
        for (int t = 0; t < n; ++t) issue(&p[t], t, epoch, op, win);
        CHECK_RC(MPI_Win_fence(0, win));
        for (int t = 0; t < n; ++t) check_origin_side(&p[t], t);
        check_target_side(w, epoch + 1);
    }
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    /* A passive epoch: lock_all, flush per target. */
    CHECK_RC(MPI_Win_lock_all(0, win));
    for (int i = 0; i < n; ++i) {
        const int t = (me + i) % n;
        issue(&p[t], t, 2, op, win);
        CHECK_RC(MPI_Win_flush(t, win));
        check_origin_side(&p[t], t);
    }
    CHECK_RC(MPI_Win_unlock_all(win));
    CHECK_RC(MPI_Win_free(&win)); /* every epoch on every window is over */
    check_target_side(w, EPOCHS);
    CHECK_RC(MPIX_Am_op_free(&op));
    free(p);
    free(w);
    return finish("mpix_mixed");
}
