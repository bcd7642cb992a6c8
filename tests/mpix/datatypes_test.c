/* SPDX-License-Identifier: MIT */
/*
 * Origin datatypes (vector, indexed, struct of ints, hvector of doubles, a mixed struct as
 * bytes) with predefined target types, from every process to every process in one fence
 * epoch, with a small pipeline unit (info am_pipeline_unit) so that units start at non-zero
 * segment offsets. The expected output is computed with MPI_Pack / MPI_Unpack (the datatype
 * rule: the target sees each segment packed), the gaps of the output layout must keep their
 * contents, and the persistent sums check the segment offsets the function was given.
 */
#include "mpix_test.h"

enum { SEG = 5, P = 8, CASES = 5 };

/* out = 2 x in (ints, doubles) or a copy (bytes); persistent[(offset + s) % P] += sum of
 * segment s (ints, doubles). */
static void twice_fn(void* input_addr, int input_segment_count, MPI_Datatype input_segment_datatype,
                     void* persistent_addr, int persistent_count, MPI_Datatype persistent_datatype,
                     void* output_addr, int output_segment_count,
                     MPI_Datatype output_segment_datatype, int num_segments, int segment_offset) {
    const int nin = input_segment_count;
    if (nin != output_segment_count || input_segment_datatype != output_segment_datatype) {
        fprintf(stderr, "twice_fn: unexpected arguments\n");
        abort();
    }
    for (int s = 0; s < num_segments; ++s) {
        const int slot = persistent_count > 0 ? (segment_offset + s) % persistent_count : 0;
        if (input_segment_datatype == MPI_INT && persistent_datatype == MPI_INT) {
            const int* in = (const int*)input_addr + s * nin;
            int* out = (int*)output_addr + s * nin;
            for (int j = 0; j < nin; ++j) {
                out[j] = 2 * in[j];
                ((int*)persistent_addr)[slot] += in[j];
            }
        } else if (input_segment_datatype == MPI_DOUBLE && persistent_datatype == MPI_DOUBLE) {
            const double* in = (const double*)input_addr + s * nin;
            double* out = (double*)output_addr + s * nin;
            for (int j = 0; j < nin; ++j) {
                out[j] = 2 * in[j];
                ((double*)persistent_addr)[slot] += in[j];
            }
        } else if (input_segment_datatype == MPI_BYTE) {
            memcpy((char*)output_addr + s * nin, (const char*)input_addr + s * nin, (size_t)nin);
        } else {
            fprintf(stderr, "twice_fn: unexpected datatypes\n");
            abort();
        }
    }
}

struct layout {
    MPI_Datatype in_type, out_type, target;
    int in_count, out_count;
};

static struct layout cases[CASES];

static void make_cases(void) {
    MPI_Datatype t;
    /* 0: a strided column: 4 ints, stride 3 */
    MPI_Type_vector(4, 1, 3, MPI_INT, &t);
    MPI_Type_commit(&t);
    cases[0] = (struct layout){t, MPI_INT, MPI_INT, 1, 4};
    /* 1: indexed (not in address order), 2 per segment -> 12 ints; out: vector of 6 x 2 */
    const int lens[3] = {2, 1, 3}, disps[3] = {5, 0, 9};
    MPI_Type_indexed(3, lens, disps, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Datatype out;
    MPI_Type_vector(6, 2, 3, MPI_INT, &out);
    MPI_Type_commit(&out);
    cases[1] = (struct layout){t, out, MPI_INT, 2, 1};
    /* 2: struct {int a; double skip; int b[2];} of ints only, extent 24, 5 per segment, out
     * the same layout */
    const int slens[2] = {1, 2};
    const MPI_Aint sdisps[2] = {0, 16};
    const MPI_Datatype stypes[2] = {MPI_INT, MPI_INT};
    MPI_Datatype s;
    MPI_Type_create_struct(2, slens, sdisps, stypes, &s);
    MPI_Type_create_resized(s, 0, 24, &t);
    MPI_Type_free(&s);
    MPI_Type_commit(&t);
    cases[2] = (struct layout){t, t, MPI_INT, 5, 5};
    /* 3: hvector of doubles: 3 blocks of 2, 40 bytes apart */
    MPI_Type_create_hvector(3, 2, 40, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    cases[3] = (struct layout){t, MPI_DOUBLE, MPI_DOUBLE, 1, 6};
    /* 4: struct {int; double} as bytes (MPI_BYTE takes any signature), 3 per segment */
    const int mlens[2] = {1, 1};
    const MPI_Aint mdisps[2] = {0, 8};
    const MPI_Datatype mtypes[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, mlens, mdisps, mtypes, &t);
    MPI_Type_commit(&t);
    cases[4] = (struct layout){t, MPI_BYTE, MPI_BYTE, 3, 36};
}

static MPI_Aint extent_of(MPI_Datatype t) {
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    return extent;
}

/* Origin `o`'s input for case `c` to target `t`: integer values in the buffer's element type. */
static void fill_input(unsigned char* buf, size_t bytes, int c, int o, int t) {
    uint64_t st = (uint64_t)(c * 101 + o * 7 + t * 13 + 5);
    if (cases[c].target == MPI_DOUBLE) {
        for (size_t i = 0; i < bytes / sizeof(double); ++i) {
            ((double*)buf)[i] = (double)((int)(next_random(&st) % 201) - 100);
        }
    } else if (cases[c].target == MPI_INT) {
        for (size_t i = 0; i < bytes / sizeof(int); ++i) {
            ((int*)buf)[i] = (int)(next_random(&st) % 2001) - 1000;
        }
    } else {
        for (size_t i = 0; i < bytes; ++i) buf[i] = (unsigned char)next_random(&st);
    }
}

static size_t in_bytes(int c) {
    return (size_t)(SEG * cases[c].in_count * extent_of(cases[c].in_type));
}
static size_t out_bytes(int c) {
    return (size_t)(SEG * cases[c].out_count * extent_of(cases[c].out_type));
}

/* The packed input of origin `o` for case `c` to target `t` (what the target sees). */
static unsigned char* packed_input(int c, int o, int t, int* size) {
    unsigned char* in = malloc(in_bytes(c));
    fill_input(in, in_bytes(c), c, o, t);
    MPI_Pack_size(SEG * cases[c].in_count, cases[c].in_type, MPI_COMM_SELF, size);
    unsigned char* packed = malloc((size_t)*size);
    int pos = 0;
    MPI_Pack(in, SEG * cases[c].in_count, cases[c].in_type, packed, *size, &pos, MPI_COMM_SELF);
    *size = pos;
    free(in);
    return packed;
}

/* Byte offset of case c, origin o's persistent slots in a target's window. */
static MPI_Aint slot_disp(int c, int o, int n) {
    return (MPI_Aint)((c * n + o) * P * 8);
}

static void check_output(int c, int t, const unsigned char* got) {
    int size = 0;
    unsigned char* packed = packed_input(c, rank_of_world(), t, &size);
    if (cases[c].target == MPI_INT) {
        for (int i = 0; i < size / (int)sizeof(int); ++i) ((int*)packed)[i] *= 2;
    } else if (cases[c].target == MPI_DOUBLE) {
        for (int i = 0; i < size / (int)sizeof(double); ++i) ((double*)packed)[i] *= 2;
    }
    unsigned char* want = malloc(out_bytes(c));
    memset(want, 0x5a, out_bytes(c));
    int pos = 0;
    MPI_Unpack(packed, size, &pos, want, SEG * cases[c].out_count, cases[c].out_type,
               MPI_COMM_SELF);
    CHECK(memcmp(want, got, out_bytes(c)) == 0);
    free(want);
    free(packed);
}

static void check_persistent(const unsigned char* window, int n) {
    for (int c = 0; c < CASES; ++c) {
        if (cases[c].target == MPI_BYTE) continue;
        for (int o = 0; o < n; ++o) {
            int size = 0;
            unsigned char* packed = packed_input(c, o, rank_of_world(), &size);
            const int per_seg = size / SEG;
            double want[P] = {0};
            for (int s = 0; s < SEG; ++s) {
                const unsigned char* seg = packed + s * per_seg;
                if (cases[c].target == MPI_INT) {
                    for (int j = 0; j < per_seg / (int)sizeof(int); ++j)
                        want[s % P] += ((const int*)seg)[j];
                } else {
                    for (int j = 0; j < per_seg / (int)sizeof(double); ++j)
                        want[s % P] += ((const double*)seg)[j];
                }
            }
            const unsigned char* slots = window + slot_disp(c, o, n);
            int bad = 0;
            for (int k = 0; k < P; ++k) {
                const double got = cases[c].target == MPI_INT ? (double)((const int*)slots)[k]
                                                              : ((const double*)slots)[k];
                bad += got != want[k];
            }
            CHECK(bad == 0);
            free(packed);
        }
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = rank_of_world(), n = size_of_world();
    make_cases();
    const size_t bytes = (size_t)(CASES * n * P * 8);
    unsigned char* window = calloc(1, bytes);
    MPI_Info info = am_info(NULL, NULL, "2");
    MPI_Win win;
    CHECK_RC(MPI_Win_create(window, (MPI_Aint)bytes, 1, info, MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    MPI_Op op;
    CHECK_RC(MPIX_Am_op_create(twice_fn, &op));
    CHECK_RC(MPIX_Am_win_op_register(op, win));

    unsigned char* inputs[CASES * 64];
    unsigned char* outputs[CASES * 64];
    CHECK_RC(MPI_Win_fence(0, win));
    for (int c = 0; c < CASES; ++c) {
        for (int t = 0; t < n; ++t) {
            unsigned char* in = malloc(in_bytes(c));
            unsigned char* out = malloc(out_bytes(c));
            fill_input(in, in_bytes(c), c, me, t);
            memset(out, 0x5a, out_bytes(c));
            const int pcount = cases[c].target == MPI_BYTE ? 0 : P;
            CHECK_RC(MPIX_Am(in, cases[c].in_count, cases[c].in_type, out, cases[c].out_count,
                             cases[c].out_type, SEG, t, cases[c].target, slot_disp(c, me, n),
                             pcount, cases[c].target, cases[c].target, op, win));
            inputs[c * 64 + t] = in;
            outputs[c * 64 + t] = out;
        }
    }
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int c = 0; c < CASES; ++c) {
        for (int t = 0; t < n; ++t) {
            check_output(c, t, outputs[c * 64 + t]);
            free(inputs[c * 64 + t]);
            free(outputs[c * 64 + t]);
        }
    }
    check_persistent(window, n);
    CHECK_RC(MPI_Win_free(&win));
    CHECK_RC(MPIX_Am_op_free(&op));
    for (int c = 0; c < CASES; ++c) {
        if (cases[c].in_type != cases[c].target) MPI_Type_free(&cases[c].in_type);
        if (cases[c].out_type != cases[c].target && c != 2) MPI_Type_free(&cases[c].out_type);
    }
    free(window);
    return finish("mpix_datatypes");
}
