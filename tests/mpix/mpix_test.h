/* SPDX-License-Identifier: MIT */
/*
 * What the MPIX_AM C tests share: checks, the paper's two operations (remote search and
 * absolute sum) with their sequential references, and set-up. Only <am/mpix_am.h> and MPI.
 * Each program prints "<name>: rank R ok" on stdout when every check held, "FAILED ..." lines
 * otherwise.
 */
#ifndef MPIX_TEST_H
#define MPIX_TEST_H

#include <am/mpix_am.h>
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mpix_test_failures = 0; /* per program: each includes this once */

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            int r_ = -1;                                                           \
            MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                    \
            printf("FAILED (rank %d) %s:%d: %s\n", r_, __FILE__, __LINE__, #cond); \
            fflush(stdout);                                                        \
            ++mpix_test_failures;                                                  \
        }                                                                          \
    } while (0)

#define CHECK_RC(call) CHECK((call) == MPI_SUCCESS)

/* The error class of an MPI return code. */
static inline int error_class(int rc) {
    int cls = rc;
    MPI_Error_class(rc, &cls);
    return cls;
}

static inline int rank_of_world(void) {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static inline int size_of_world(void) {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

/* Prints the verdict, finalises MPI, returns the exit status. */
static inline int finish(const char* name) {
    const int rank = rank_of_world();
    if (mpix_test_failures == 0) printf("%s: rank %d ok\n", name, rank);
    fflush(stdout);
    MPI_Finalize();
    return mpix_test_failures == 0 ? 0 : 1;
}

/* A deterministic pseudo-random sequence (splitmix64). */
static inline uint64_t next_random(uint64_t* state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------- absolute sum */
/* Each segment: ABS_N ints in, ABS_N ints out; out[i] = |in[i]|, and the persistent
 * int[ABS_N] accumulates the absolute values (a commutative update). */
enum { ABS_N = 100 };

static inline void abssum_fn(void* input_addr, int input_segment_count,
                             MPI_Datatype input_segment_datatype, void* persistent_addr,
                             int persistent_count, MPI_Datatype persistent_datatype,
                             void* output_addr, int output_segment_count,
                             MPI_Datatype output_segment_datatype, int num_segments,
                             int segment_offset) {
    const int* in = (const int*)input_addr;
    int* p = (int*)persistent_addr;
    int* out = (int*)output_addr;
    (void)segment_offset;
    if (input_segment_datatype != MPI_INT || persistent_datatype != MPI_INT ||
        output_segment_datatype != MPI_INT || input_segment_count != output_segment_count ||
        persistent_count < input_segment_count) {
        fprintf(stderr, "abssum_fn: unexpected arguments\n");
        abort();
    }
    for (int s = 0; s < num_segments; ++s) {
        for (int i = 0; i < input_segment_count; ++i) {
            const int v = in[s * input_segment_count + i];
            const int a = v < 0 ? -v : v;
            out[s * output_segment_count + i] = a;
            p[i] += a;
        }
    }
}

/* ------------------------------------------------------------------ remote search */
/* Each segment: a SEARCH_W-character key in, SEARCH_W characters out: the persistent record
 * (SEARCH_W characters each) that has the most characters in common with the key, position
 * by position (the first on ties). Read-only on the persistent buffer. */
enum { SEARCH_W = 20 };

static inline void search_one(const char* key, const char* records, int n_records, char* out) {
    int best = 0, best_score = -1;
    for (int r = 0; r < n_records; ++r) {
        int score = 0;
        for (int i = 0; i < SEARCH_W; ++i) score += records[r * SEARCH_W + i] == key[i];
        if (score > best_score) {
            best_score = score;
            best = r;
        }
    }
    memcpy(out, records + best * SEARCH_W, SEARCH_W);
}

static inline void search_fn(void* input_addr, int input_segment_count,
                             MPI_Datatype input_segment_datatype, void* persistent_addr,
                             int persistent_count, MPI_Datatype persistent_datatype,
                             void* output_addr, int output_segment_count,
                             MPI_Datatype output_segment_datatype, int num_segments,
                             int segment_offset) {
    (void)segment_offset;
    if (input_segment_datatype != MPI_CHAR || persistent_datatype != MPI_CHAR ||
        output_segment_datatype != MPI_CHAR || input_segment_count != SEARCH_W ||
        output_segment_count != SEARCH_W) {
        fprintf(stderr, "search_fn: unexpected arguments\n");
        abort();
    }
    for (int s = 0; s < num_segments; ++s) {
        search_one((const char*)input_addr + s * SEARCH_W, (const char*)persistent_addr,
                   persistent_count / SEARCH_W, (char*)output_addr + s * SEARCH_W);
    }
}

/* Fills `n` records of rank `rank` deterministically. */
static inline void fill_records(char* records, int n, int rank) {
    uint64_t st = 1000u + (uint64_t)rank;
    for (int i = 0; i < n * SEARCH_W; ++i) records[i] = (char)('a' + next_random(&st) % 4);
}

/* An info object with the am_* keys (NULL values are left out); free with MPI_Info_free. */
static inline MPI_Info am_info(const char* ordering, const char* internal_buffer,
                               const char* pipeline_unit) {
    MPI_Info info;
    MPI_Info_create(&info);
    if (ordering) MPI_Info_set(info, "am_ordering", ordering);
    if (internal_buffer) MPI_Info_set(info, "am_internal_buffer", internal_buffer);
    if (pipeline_unit) MPI_Info_set(info, "am_pipeline_unit", pipeline_unit);
    return info;
}

#endif /* MPIX_TEST_H */
