/* SPDX-License-Identifier: MIT */
/*
 * am_ordering: each process sends its successor a stream of AMs, alternately large (many
 * segments, more than the small internal buffer holds) and small (one segment), of a
 * non-commutative operation on one persistent int64 x: per segment, out = {x, x'} with
 * x' = 3x + v. Every AM of an origin updates the same x (overlapping ranges).
 *
 *   ordering_test strict   (no am_ordering key: the default, "sameop,diffop,sameam")
 *     The outputs must form the chain of issue order: segment k's x is segment k-1's x'. A
 *     runtime that let a small AM overtake a large one waiting for buffer space fails this.
 *   ordering_test none     (am_ordering = "none")
 *     The AMs still run one at a time (no MPIX_MODE_CONCURRENT_AM): the outputs must form one
 *     chain from 0 in SOME order. Prints how many steps ran out of issue order.
 * Both: the final x, read back with MPI_Get, is the chain's end.
 */
#include "mpix_test.h"

enum { AMS = 24, LARGE = 120 };

static void chain_fn(void* input_addr, int input_segment_count, MPI_Datatype input_segment_datatype,
                     void* persistent_addr, int persistent_count, MPI_Datatype persistent_datatype,
                     void* output_addr, int output_segment_count,
                     MPI_Datatype output_segment_datatype, int num_segments, int segment_offset) {
    (void)segment_offset;
    if (input_segment_count != 1 || output_segment_count != 2 || persistent_count != 1 ||
        input_segment_datatype != MPI_UINT64_T || output_segment_datatype != MPI_UINT64_T ||
        persistent_datatype != MPI_UINT64_T) {
        fprintf(stderr, "chain_fn: unexpected arguments\n");
        abort();
    }
    uint64_t* x = (uint64_t*)persistent_addr;
    for (int s = 0; s < num_segments; ++s) {
        uint64_t* out = (uint64_t*)output_addr + 2 * s;
        out[0] = *x;
        *x = *x * 3u + ((const uint64_t*)input_addr)[s];
        out[1] = *x;
    }
}

static int segments_of(int a) {
    return a % 2 == 0 ? LARGE : 1;
}

static int compare_before(const void* a, const void* b) {
    const uint64_t x = ((const uint64_t*)a)[0], y = ((const uint64_t*)b)[0];
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
    const int strict = argc < 2 || strcmp(argv[1], "none") != 0;
    MPI_Init(&argc, &argv);
    const int me = rank_of_world(), n = size_of_world();
    const int target = (me + 1) % n, source = (me + n - 1) % n;
    uint64_t* xs = calloc((size_t)n, sizeof(uint64_t)); /* origin o's x at index o */
    MPI_Info info = am_info(strict ? NULL : "none", "512", NULL);
    MPI_Win win;
    /* Processes disagree on disp_unit (8 on even ranks, 1 on odd ones): a displacement counts
     * in the target's unit. */
    const int unit_of_target = target % 2 == 0 ? (int)sizeof(uint64_t) : 1;
    const int my_unit = me % 2 == 0 ? (int)sizeof(uint64_t) : 1;
    const MPI_Aint disp = (MPI_Aint)me * (MPI_Aint)sizeof(uint64_t) / unit_of_target;
    CHECK_RC(
        MPI_Win_create(xs, (MPI_Aint)(n * sizeof(uint64_t)), my_unit, info, MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    MPI_Op op;
    CHECK_RC(MPIX_Am_op_create(chain_fn, &op));
    CHECK_RC(MPIX_Am_win_op_register(op, win));
    static char attached[1536];
    CHECK_RC(MPIX_Am_win_buffer_attach(win, attached, sizeof attached));

    int total = 0;
    for (int a = 0; a < AMS; ++a) total += segments_of(a);
    uint64_t* in = malloc((size_t)total * sizeof(uint64_t));
    uint64_t* out = calloc((size_t)total * 2, sizeof(uint64_t));
    uint64_t st = 77u + (uint64_t)me;
    for (int k = 0; k < total; ++k) in[k] = next_random(&st);

    CHECK_RC(MPI_Win_fence(0, win));
    for (int a = 0, k = 0; a < AMS; k += segments_of(a), ++a) {
        CHECK_RC(MPIX_Am(in + k, 1, MPI_UINT64_T, out + 2 * k, 2, MPI_UINT64_T, segments_of(a),
                         target, MPI_UINT64_T, disp, 1, MPI_UINT64_T, MPI_UINT64_T, op, win));
    }
    CHECK_RC(MPI_Win_fence(0, win));
    uint64_t final_x = 0;
    CHECK_RC(MPI_Get(&final_x, 1, MPI_UINT64_T, target, disp, 1, MPI_UINT64_T, win));
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    /* The chain in issue order, and how many steps broke it. */
    int out_of_order = 0;
    for (int k = 1; k < total; ++k) out_of_order += out[2 * k] != out[2 * k - 1];
    out_of_order += out[0] != 0;
    if (strict) {
        CHECK(out_of_order == 0);
        uint64_t x = 0;
        for (int k = 0; k < total; ++k) x = x * 3u + in[k];
        CHECK(final_x == x);
    } else {
        /* One chain from 0 through every step in some order. */
        qsort(out, (size_t)total, 2 * sizeof(uint64_t), compare_before);
        uint64_t x = 0;
        int steps = 0;
        for (; steps < total; ++steps) {
            uint64_t key[2] = {x, 0};
            const uint64_t* hit =
                bsearch(key, out, (size_t)total, 2 * sizeof(uint64_t), compare_before);
            if (hit == NULL) break;
            x = hit[1];
        }
        CHECK(steps == total);
        CHECK(final_x == x);
        printf("mpix_ordering: none: rank %d: %d of %d steps out of issue order\n", me,
               out_of_order, total);
    }
    void* back = NULL;
    MPI_Aint back_size = 0;
    CHECK_RC(MPIX_Am_win_buffer_detach(win, &back, &back_size));
    CHECK(back == attached && back_size == (MPI_Aint)sizeof attached);
    CHECK_RC(MPI_Win_free(&win));
    CHECK_RC(MPIX_Am_op_free(&op));
    (void)source;
    free(in);
    free(out);
    free(xs);
    return finish("mpix_ordering");
}
