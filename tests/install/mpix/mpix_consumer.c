/* SPDX-License-Identifier: MIT */
/* A C program written only against the paper's MPIX_AM interface and standard MPI, built with an
 * installed am (find_package(am), am::mpix_am): every process adds its rank + 1 to element 0 of
 * every process's window with one AM of one segment and gets the sum so far back; after the
 * fence each window holds n (n + 1) / 2. */
#include <am/mpix_am.h>
#include <mpi.h>

#include <stdio.h>

static void add(void* in, int in_count, MPI_Datatype in_type, void* persistent,
                int persistent_count, MPI_Datatype persistent_type, void* out, int out_count,
                MPI_Datatype out_type, int num_segments, int segment_offset) {
    (void)in_count, (void)in_type, (void)persistent_count, (void)persistent_type;
    (void)out_count, (void)out_type, (void)segment_offset;
    int* p = persistent;
    for (int s = 0; s < num_segments; ++s) {
        p[0] += ((const int*)in)[s];
        ((int*)out)[s] = p[0];
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int me = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int* base = NULL;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Op op;
    MPIX_Am_op_create(&add, &op);
    MPIX_Am_win_op_register(op, win);
    *base = 0;
    MPI_Win_fence(0, win);
    int in = me + 1, out[64] = {0};
    for (int t = 0; t < n && t < 64; ++t) {
        if (MPIX_Am(&in, 1, MPI_INT, &out[t], 1, MPI_INT, 1, t, MPI_INT, 0, 1, MPI_INT, MPI_INT, op,
                    win) != MPI_SUCCESS) {
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Win_fence(0, win);
    const int want = n * (n + 1) / 2;
    int bad = *base != want;
    for (int t = 0; t < n && t < 64; ++t) bad += out[t] < in || out[t] > want;
    printf("mpix consumer: rank %d window %d (expected %d)%s\n", me, *base, want,
           bad ? " MISMATCH" : "");
    MPIX_Am_op_free(&op);
    MPI_Win_free(&win);
    MPI_Finalize();
    return bad != 0;
}
