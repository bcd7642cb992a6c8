/* SPDX-License-Identifier: MIT */
/*
 * Misuse of the MPIX interface returns the right MPI error class (the window and
 * MPI_COMM_WORLD have MPI_ERRORS_RETURN) and loses nothing already issued: an AM issued
 * before the errors of an epoch still completes correctly at the fence.
 *
 *   errors_test            the error classes (every process prints one "ok" line)
 *   errors_test reduce     an MPIX op used in MPI_Allreduce: the job must abort saying so
 *   errors_test mismatch   process 0 registers another function than the others: the
 *                          registration must fail with MPI_ERR_OP
 *   errors_test buffer     a segment (800 bytes) that fits neither the internal buffer (64) nor
 *                          the attached one (256): the closing fence returns MPI_ERR_BUFFER on
 *                          the origin; with a large enough buffer attached instead, the next
 *                          epoch's AM completes
 *   errors_test fence_vs_free  process 0 calls MPI_Win_fence while the others call MPI_Win_free
 *                          on a window with an MPIX op: the job must fail naming both calls
 *                          (am's fence and free are collectives of their own kinds)
 * The program leaves one MPI_Win_allocate window open: MPI_Finalize must free it.
 */
#include "mpix_test.h"

enum { WINDOW_INTS = 4 * ABS_N };

static int me, n;

#define EXPECT_CLASS(call, cls)                                                                 \
    do {                                                                                        \
        const int rc_ = (call);                                                                 \
        if (error_class(rc_) != (cls)) {                                                        \
            printf("FAILED (rank %d) %s:%d: %s returned class %d, expected %s\n", me, __FILE__, \
                   __LINE__, #call, error_class(rc_), #cls);                                    \
            ++mpix_test_failures;                                                               \
        }                                                                                       \
    } while (0)

static int in[ABS_N], out[ABS_N];

static int am_to(int target, MPI_Aint disp, int count, MPI_Op op, MPI_Win win) {
    return MPIX_Am(in, ABS_N, MPI_INT, out, ABS_N, MPI_INT, 1, target, MPI_INT, disp, count,
                   MPI_INT, MPI_INT, op, win);
}

static void type_errors(MPI_Op op, MPI_Win win) {
    double din[ABS_N] = {0};
    /* origin doubles, target ints */
    EXPECT_CLASS(MPIX_Am(din, ABS_N, MPI_DOUBLE, out, ABS_N, MPI_INT, 1, 0, MPI_INT, 0, ABS_N,
                         MPI_INT, MPI_INT, op, win),
                 MPI_ERR_TYPE);
    /* a vector of 3 ints as output, target output elements of doubles */
    MPI_Datatype v, pair;
    MPI_Type_vector(3, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    EXPECT_CLASS(MPIX_Am(in, ABS_N, MPI_INT, out, 1, v, 1, 0, MPI_INT, 0, ABS_N, MPI_INT,
                         MPI_DOUBLE, op, win),
                 MPI_ERR_TYPE);
    /* a derived target datatype */
    EXPECT_CLASS(
        MPIX_Am(in, 3, MPI_INT, out, 3, MPI_INT, 1, 0, v, 0, ABS_N, MPI_INT, MPI_INT, op, win),
        MPI_ERR_TYPE);
    /* a pair type as the persistent datatype */
    pair = MPI_2INT;
    EXPECT_CLASS(MPIX_Am(in, ABS_N, MPI_INT, out, ABS_N, MPI_INT, 1, 0, MPI_INT, 0, 1, pair,
                         MPI_INT, op, win),
                 MPI_ERR_TYPE);
    MPI_Type_free(&v);
}

static void window_errors(MPI_Op registered, MPI_Op unregistered, MPI_Win win) {
    EXPECT_CLASS(am_to(0, 0, ABS_N, unregistered, win), MPI_ERR_OP);
    EXPECT_CLASS(am_to(0, 0, ABS_N, MPI_SUM, win), MPI_ERR_OP);
    /* persistent ranges outside the target's window */
    EXPECT_CLASS(am_to(n - 1, WINDOW_INTS, ABS_N, registered, win), MPI_ERR_RMA_RANGE);
    EXPECT_CLASS(am_to(n - 1, WINDOW_INTS - ABS_N + 1, ABS_N, registered, win), MPI_ERR_RMA_RANGE);
    EXPECT_CLASS(am_to(0, -1, ABS_N, registered, win), MPI_ERR_DISP);
    EXPECT_CLASS(am_to(n, 0, ABS_N, registered, win), MPI_ERR_RANK);
    EXPECT_CLASS(am_to(-1, 0, ABS_N, registered, win), MPI_ERR_RANK);
    EXPECT_CLASS(MPIX_Am(in, -1, MPI_INT, out, ABS_N, MPI_INT, 1, 0, MPI_INT, 0, ABS_N, MPI_INT,
                         MPI_INT, registered, win),
                 MPI_ERR_COUNT);
    type_errors(registered, win);
    EXPECT_CLASS(MPIX_Am_win_op_register(MPI_SUM, win), MPI_ERR_OP);
    static char buffer[1024];
    EXPECT_CLASS(MPIX_Am_win_buffer_attach(win, NULL, 1024), MPI_ERR_ARG);
    CHECK_RC(MPIX_Am_win_buffer_attach(win, buffer, sizeof buffer));
    EXPECT_CLASS(MPIX_Am_win_buffer_attach(win, buffer, sizeof buffer), MPI_ERR_BUFFER);
}

static void plain_window_errors(MPI_Op op) {
    /* A window on the processes of MPI_COMM_WORLD in another order is a plain MPI window (am's
     * ranks are MPI_COMM_WORLD's). */
    if (n < 2) return;
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &reversed);
    int mem[ABS_N];
    MPI_Win plain;
    CHECK_RC(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, reversed, &plain));
    MPI_Win_set_errhandler(plain, MPI_ERRORS_RETURN);
    CHECK_RC(MPI_Win_fence(0, plain));
    EXPECT_CLASS(am_to(0, 0, ABS_N, op, plain), MPI_ERR_WIN);
    EXPECT_CLASS(MPIX_Am_win_op_register(op, plain), MPI_ERR_WIN);
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, plain));
    CHECK_RC(MPI_Win_free(&plain));
    MPI_Comm_free(&reversed);
}

static void info_errors(void) {
    int mem[ABS_N];
    MPI_Win bad = MPI_WIN_NULL;
    MPI_Info info = am_info("sameop,sometimes", NULL, NULL);
    EXPECT_CLASS(MPI_Win_create(mem, sizeof mem, sizeof(int), info, MPI_COMM_WORLD, &bad),
                 MPI_ERR_INFO_VALUE);
    MPI_Info_free(&info);
    info = am_info(NULL, "lots", NULL);
    EXPECT_CLASS(MPI_Win_create(mem, sizeof mem, sizeof(int), info, MPI_COMM_WORLD, &bad),
                 MPI_ERR_INFO_VALUE);
    MPI_Info_free(&info);
}

static int mismatch_mode(MPI_Op op, MPI_Op other) {
    int mem[ABS_N];
    MPI_Win win;
    CHECK_RC(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    EXPECT_CLASS(MPIX_Am_win_op_register(me == 0 ? other : op, win), MPI_ERR_OP);
    CHECK_RC(MPI_Win_free(&win));
    return finish("mpix_errors");
}

static int buffer_mode(MPI_Op op) {
    int* w = calloc((size_t)n * ABS_N, sizeof(int));
    MPI_Info info = am_info(NULL, "64", NULL);
    MPI_Win win;
    CHECK_RC(MPI_Win_create(w, (MPI_Aint)((size_t)n * ABS_N * sizeof(int)), sizeof(int), info,
                            MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK_RC(MPIX_Am_win_op_register(op, win));
    static char small[256], large[2048];
    CHECK_RC(MPIX_Am_win_buffer_attach(win, small, sizeof small));
    for (int i = 0; i < ABS_N; ++i) in[i] = -i;
    const int target = (me + 1) % n;
    CHECK_RC(MPI_Win_fence(0, win));
    CHECK_RC(am_to(target, (MPI_Aint)me * ABS_N, ABS_N, op, win));
    EXPECT_CLASS(MPI_Win_fence(0, win), MPI_ERR_BUFFER);
    void* back;
    MPI_Aint size;
    CHECK_RC(MPIX_Am_win_buffer_detach(win, &back, &size));
    CHECK(back == small);
    CHECK_RC(MPIX_Am_win_buffer_attach(win, large, sizeof large));
    CHECK_RC(MPI_Win_fence(0, win));
    memset(out, 0, sizeof out);
    CHECK_RC(am_to(target, (MPI_Aint)me * ABS_N, ABS_N, op, win));
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    int bad = 0;
    for (int i = 0; i < ABS_N; ++i) bad += out[i] != i;
    CHECK(bad == 0);
    CHECK_RC(MPI_Win_free(&win));
    free(w);
    return finish("mpix_errors");
}

static int reduce_mode(MPI_Op op) {
    int x = 1, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, op, MPI_COMM_WORLD);
    printf("mpix_errors: rank %d: the reduction returned\n", me);
    return finish("mpix_errors");
}

static int fence_vs_free_mode(MPI_Op op) {
    int* w = calloc(WINDOW_INTS, sizeof(int));
    MPI_Win win;
    CHECK_RC(MPI_Win_create(w, WINDOW_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &win));
    CHECK_RC(MPIX_Am_win_op_register(op, win));
    CHECK_RC(MPI_Win_fence(0, win));
    if (me == 0) {
        MPI_Win_fence(0, win);
    } else {
        MPI_Win_free(&win);
    }
    printf("mpix_errors: rank %d: passed a mismatched collective\n", me);
    return finish("mpix_errors");
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    me = rank_of_world();
    n = size_of_world();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op op, other;
    CHECK_RC(MPIX_Am_op_create(abssum_fn, &op));
    CHECK_RC(MPIX_Am_op_create(search_fn, &other));
    if (argc > 1 && strcmp(argv[1], "reduce") == 0) return reduce_mode(op);
    if (argc > 1 && strcmp(argv[1], "mismatch") == 0) return mismatch_mode(op, other);
    if (argc > 1 && strcmp(argv[1], "buffer") == 0) return buffer_mode(op);
    if (argc > 1 && strcmp(argv[1], "fence_vs_free") == 0) return fence_vs_free_mode(op);
    EXPECT_CLASS(MPIX_Am_op_create(NULL, &other), MPI_ERR_ARG);
    MPI_Op sum = MPI_SUM;
    EXPECT_CLASS(MPIX_Am_op_free(&sum), MPI_ERR_OP);
    info_errors();

    int* w = calloc(WINDOW_INTS, sizeof(int));
    MPI_Win win;
    CHECK_RC(MPI_Win_create(w, WINDOW_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK_RC(MPIX_Am_win_op_register(op, win));
    for (int i = 0; i < ABS_N; ++i) in[i] = i % 2 == 0 ? -i : i;

    EXPECT_CLASS(am_to(0, 0, ABS_N, op, win), MPI_ERR_RMA_SYNC); /* no epoch yet */
    CHECK_RC(MPI_Win_fence(0, win));
    const int target = (me + 1) % n;
    CHECK_RC(am_to(target, (MPI_Aint)me * ABS_N % (WINDOW_INTS - ABS_N + 1), ABS_N, op, win));
    window_errors(op, other, win);
    plain_window_errors(op);
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    int bad = 0;
    for (int i = 0; i < ABS_N; ++i) bad += out[i] != i;
    CHECK(bad == 0); /* the AM issued before the errors completed */
    EXPECT_CLASS(am_to(0, 0, ABS_N, op, win), MPI_ERR_RMA_SYNC); /* after MPI_MODE_NOSUCCEED */
    void* back;
    MPI_Aint size;
    CHECK_RC(MPIX_Am_win_buffer_detach(win, &back, &size));
    CHECK_RC(MPI_Win_free(&win));
    /* Left open on purpose: MPI_Finalize frees it (am's part first). */
    int* left = NULL;
    MPI_Win open_win;
    CHECK_RC(MPI_Win_allocate(ABS_N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &left, &open_win));
    CHECK_RC(MPIX_Am_win_op_register(op, open_win));
    CHECK_RC(MPI_Win_fence(0, open_win));
    left[0] = 0;
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, open_win));
    CHECK_RC(MPIX_Am_op_free(&op));
    CHECK_RC(MPIX_Am_op_free(&other));
    free(w);
    return finish("mpix_errors");
}
