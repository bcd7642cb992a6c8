/* SPDX-License-Identifier: MIT */
/*
 * What AML programs rely on, checked from C against aml.h: rank and size, self-sends that run
 * before aml_send returns, payload copied (buffer reusable at once), every message from every
 * rank handled after aml_barrier (exact counts and checksums per source, `from` right), 32 KiB
 * payloads, phases separated by aml_register_handler, sends from handlers completed by
 * aml_barrier, no message of the next phase handled inside aml_barrier or
 * aml_register_handler, and the aml_long_all* reductions.
 *
 *   mpirun -n 4 aml_semantics_test [preinit]
 * `preinit`: the program calls MPI_Init itself before aml_init.
 * Prints "aml_semantics: rank R ok" per rank, or "... FAILED: ..." lines and exits 1.
 */
#include "aml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, npes;
static int failures;

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) {                                                \
            printf("aml_semantics: rank %d FAILED: %s: ", me, #cond); \
            printf(__VA_ARGS__);                                      \
            printf("\n");                                             \
            ++failures;                                               \
        }                                                             \
    } while (0)

/* Handler ids used below. */
enum { T_SELF = 3, T_TRAFFIC = 4, T_PHASE = 5, T_LARGE = 6, T_CHAIN = 7, T_FROM = 200 };

/* ------------------------------------------------------------------ self-send */

static int self_from = -1;
static int self_value;

static void self_handler(int from, void* data, int nbytes) {
    self_from = from;
    CHECK(nbytes == 4, "self-send of 4 bytes arrived with %d", nbytes);
    memcpy(&self_value, data, 4);
}

static void test_self_send(void) {
    aml_register_handler(self_handler, T_SELF);
    for (int i = 1; i <= 3; ++i) {
        int value = 1000 * i + me;
        self_from = -1;
        aml_send(&value, T_SELF, 4, me);
        /* Before aml_send returned: */
        CHECK(self_from == me && self_value == value,
              "self-send %d not handled when aml_send returned (from %d, value %d)", i, self_from,
              self_value);
    }
    aml_barrier();
}

/* ------------------------------------------------ all-to-all traffic, reused buffer */

#define TRAFFIC_MESSAGES 3000
#define MAX_RANKS 64

static int64_t traffic_count[MAX_RANKS];
static uint64_t traffic_sum[MAX_RANKS];
static int misaligned;

static int traffic_length(int src, int dst, int i) {
    return (i * 7 + src + 3 * dst) % 201;
}
static unsigned char traffic_byte(int src, int dst, int i, int j) {
    return (unsigned char)(src * 31 + dst * 17 + i * 13 + j * 5 + 1);
}
/* Order-independent: a sum of per-message hashes (FNV-1a of length and bytes). */
static uint64_t message_hash(const unsigned char* p, int n) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int j = 0; j < n; ++j) h = (h ^ p[j]) * 1099511628211ull;
    return h;
}

static void traffic_handler(int from, void* data, int nbytes) {
    if (from < 0 || from >= npes) {
        ++failures;
        printf("aml_semantics: rank %d FAILED: handler got from = %d\n", me, from);
        return;
    }
    if (((uintptr_t)data & 7u) != 0) ++misaligned;
    ++traffic_count[from];
    traffic_sum[from] += message_hash(data, nbytes);
}

static void test_traffic(void) {
    aml_register_handler(traffic_handler, T_TRAFFIC);
    memset(traffic_count, 0, sizeof traffic_count);
    memset(traffic_sum, 0, sizeof traffic_sum);
    misaligned = 0;
    uint64_t storage[256 / 8];
    unsigned char* buf = (unsigned char*)storage; /* one buffer, reused for every message */
    for (int i = 0; i < TRAFFIC_MESSAGES; ++i) {
        for (int k = 0; k < npes; ++k) {
            const int dst = (me + k) % npes;
            const int n = traffic_length(me, dst, i);
            for (int j = 0; j < n; ++j) buf[j] = traffic_byte(me, dst, i, j);
            aml_send(buf, T_TRAFFIC, n, dst);
            memset(buf, 0xee, 256); /* overwritten at once: aml_send must have copied */
        }
    }
    aml_barrier();
    /* Everything sent to this rank has been handled now: compare with what each sent. */
    for (int src = 0; src < npes; ++src) {
        uint64_t expected = 0;
        for (int i = 0; i < TRAFFIC_MESSAGES; ++i) {
            const int n = traffic_length(src, me, i);
            for (int j = 0; j < n; ++j) buf[j] = traffic_byte(src, me, i, j);
            expected += message_hash(buf, n);
        }
        CHECK(traffic_count[src] == TRAFFIC_MESSAGES, "%lld messages from rank %d, expected %d",
              (long long)traffic_count[src], src, TRAFFIC_MESSAGES);
        CHECK(traffic_sum[src] == expected, "checksum of the messages from rank %d differs", src);
    }
    CHECK(misaligned == 0, "%d payloads not 8-byte aligned", misaligned);
}

/* ----------------------------------------------------------------------- `from` */

static int64_t from_seen[MAX_RANKS];

static void from_handler(int from, void* data, int nbytes) {
    int claimed = -1;
    if (nbytes == (int)sizeof claimed) memcpy(&claimed, data, sizeof claimed);
    CHECK(from == claimed, "handler got from = %d for a message rank %d sent", from, claimed);
    if (from >= 0 && from < npes) ++from_seen[from];
}

static void test_from(void) {
    aml_register_handler(from_handler, T_FROM);
    memset(from_seen, 0, sizeof from_seen);
    for (int round = 0; round < 5; ++round) {
        for (int dst = 0; dst < npes; ++dst) aml_send(&me, T_FROM, (int)sizeof me, dst);
    }
    aml_barrier();
    for (int src = 0; src < npes; ++src) {
        CHECK(from_seen[src] == 5, "%lld messages from rank %d, expected 5",
              (long long)from_seen[src], src);
    }
}

/* --------------------------------------------------------------- 32 KiB payloads */

#define LARGE_MESSAGES 6
static int64_t large_count, large_bad, empty_count;

static unsigned char large_byte(int src, int i, int j) {
    return (unsigned char)((src + 1) * 7 + i * 3 + j * 11 + (j >> 8));
}

static void large_handler(int from, void* data, int nbytes) {
    const unsigned char* p = data;
    if (nbytes == 0) {
        ++empty_count;
        return;
    }
    if (nbytes != AML_MAX_PAYLOAD) {
        ++large_bad;
        return;
    }
    const int i = p[0];
    for (int j = 1; j < nbytes; ++j) {
        if (p[j] != large_byte(from, i, j)) {
            ++large_bad;
            return;
        }
    }
    ++large_count;
}

static void test_large(void) {
    aml_register_handler(large_handler, T_LARGE);
    large_count = large_bad = empty_count = 0;
    unsigned char* buf = malloc(AML_MAX_PAYLOAD);
    for (int i = 0; i < LARGE_MESSAGES; ++i) {
        buf[0] = (unsigned char)i;
        for (int j = 1; j < AML_MAX_PAYLOAD; ++j) buf[j] = large_byte(me, i, j);
        for (int k = 0; k < npes; ++k) {
            aml_send(buf, T_LARGE, AML_MAX_PAYLOAD, (me + k) % npes);
            aml_send(buf, T_LARGE, 0, (me + k) % npes);
        }
    }
    free(buf);
    aml_barrier();
    CHECK(large_count == (int64_t)LARGE_MESSAGES * npes && large_bad == 0,
          "%lld intact 32 KiB messages, %lld damaged, expected %lld", (long long)large_count,
          (long long)large_bad, (long long)LARGE_MESSAGES * npes);
    CHECK(empty_count == (int64_t)LARGE_MESSAGES * npes, "%lld empty messages, expected %lld",
          (long long)empty_count, (long long)LARGE_MESSAGES * npes);
}

/* ------------------------------------------------------------------------- phases */

static int64_t phase_a, phase_b;
static void phase_a_handler(int from, void* data, int nbytes) {
    (void)from, (void)data, (void)nbytes;
    ++phase_a;
}
static void phase_b_handler(int from, void* data, int nbytes) {
    (void)from, (void)data, (void)nbytes;
    ++phase_b;
}

static void test_phases(void) {
    phase_a = phase_b = 0;
    aml_register_handler(phase_a_handler, T_PHASE);
    int64_t x = 42;
    for (int i = 0; i < 100; ++i) {
        for (int dst = 0; dst < npes; ++dst) aml_send(&x, T_PHASE, 8, dst);
    }
    /* No aml_barrier: the new handler starts a phase, the messages above reach the old one. */
    aml_register_handler(phase_b_handler, T_PHASE);
    CHECK(phase_a == 100 * (int64_t)npes && phase_b == 0,
          "after re-registering: old handler ran %lld times, new %lld, expected %lld and 0",
          (long long)phase_a, (long long)phase_b, 100 * (long long)npes);
    for (int i = 0; i < 50; ++i) {
        for (int dst = 0; dst < npes; ++dst) aml_send(&x, T_PHASE, 8, dst);
    }
    aml_barrier();
    CHECK(phase_a == 100 * (int64_t)npes && phase_b == 50 * (int64_t)npes,
          "in the new phase: old handler ran %lld times, new %lld, expected %lld and %lld",
          (long long)phase_a, (long long)phase_b, 100 * (long long)npes, 50 * (long long)npes);
}

/* ------------------------------------------------------- sends from handlers */

#define CHAINS 300
struct chain_msg {
    int32_t hops;
    int32_t origin;
};
static int64_t chain_ends, chain_calls;

static void chain_handler(int from, void* data, int nbytes) {
    (void)from;
    (void)nbytes;
    struct chain_msg m;
    memcpy(&m, data, sizeof m);
    ++chain_calls;
    if (m.hops == 0) {
        ++chain_ends;
        return;
    }
    --m.hops;
    aml_send(&m, T_CHAIN, (int)sizeof m, (me + 1 + m.hops % 2) % npes);
}

static void test_chains(void) {
    aml_register_handler(chain_handler, T_CHAIN);
    chain_ends = chain_calls = 0;
    int64_t expected_calls = 0;
    for (int i = 0; i < CHAINS; ++i) {
        struct chain_msg m = {(int32_t)(3 + i % 5), me};
        expected_calls += m.hops + 1;
        aml_send(&m, T_CHAIN, (int)sizeof m, (me + i) % npes);
    }
    aml_barrier(); /* also completes every message handlers sent, to any depth */
    int64_t ends = chain_ends, calls = chain_calls;
    aml_long_allsum(&ends);
    aml_long_allsum(&calls);
    aml_long_allsum(&expected_calls);
    CHECK(ends == (int64_t)CHAINS * npes && calls == expected_calls,
          "after aml_barrier %lld chains ended and %lld handlers ran, expected %lld and %lld",
          (long long)ends, (long long)calls, (long long)CHAINS * npes, (long long)expected_calls);
}

/* ------------------------------------------- no next-phase message inside a barrier */

/* The Graph500 kernels reset their state right after aml_barrier / aml_register_handler: a
 * rank still inside the call must not run handlers for what faster ranks send after it.
 * Enough messages to fill buffers (so they leave before the next barrier) in every round. */
#define TAIL_ROUNDS 20
#define TAIL_MESSAGES 6000
static int64_t tail_count;
enum { T_TAIL = 8 };

static void tail_handler(int from, void* data, int nbytes) {
    (void)from, (void)data, (void)nbytes;
    ++tail_count;
}

static void test_barrier_tail(void) {
    aml_register_handler(tail_handler, T_TAIL);
    for (int round = 0; round < TAIL_ROUNDS; ++round) {
        tail_count = 0; /* reset after the collective, as BFS levels do */
        int64_t x = round;
        for (int i = 0; i < TAIL_MESSAGES; ++i) {
            for (int k = 1; k <= npes; ++k) aml_send(&x, T_TAIL, 8, (me + k) % npes);
        }
        aml_barrier();
        CHECK(tail_count == (int64_t)TAIL_MESSAGES * npes,
              "round %d: %lld messages handled between two barriers, expected %lld", round,
              (long long)tail_count, (long long)TAIL_MESSAGES * npes);
    }
}

/* ------------------------------------------------------------------ reductions */

static void test_reductions(void) {
    const int64_t big = INT64_C(1) << 40; /* needs all 8 bytes */
    int64_t sum = big + me, lo = big + me, hi = big + me, neg = -big * (me + 1);
    aml_long_allsum(&sum);
    aml_long_allmin(&lo);
    aml_long_allmax(&hi);
    aml_long_allmin(&neg);
    CHECK(sum == big * npes + (int64_t)npes * (npes - 1) / 2, "allsum gave %lld", (long long)sum);
    CHECK(lo == big, "allmin gave %lld", (long long)lo);
    CHECK(hi == big + npes - 1, "allmax gave %lld", (long long)hi);
    CHECK(neg == -big * npes, "allmin of negatives gave %lld", (long long)neg);
}

int main(int argc, char** argv) {
    const int preinit = argc > 1 && strcmp(argv[1], "preinit") == 0;
    if (preinit) MPI_Init(&argc, &argv);
    CHECK(aml_init(&argc, &argv) == 0, "aml_init failed");
    me = my_pe();
    npes = num_pes();
    int mpi_rank = -1, mpi_size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    CHECK(me == mpi_rank && npes == mpi_size, "my_pe %d / num_pes %d, MPI says %d / %d", me, npes,
          mpi_rank, mpi_size);
    if (npes > MAX_RANKS) {
        printf("aml_semantics: rank %d FAILED: at most %d ranks\n", me, MAX_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const double t0 = aml_time();

    test_self_send();
    test_traffic();
    test_from();
    test_large();
    test_phases();
    test_chains();
    test_barrier_tail();
    test_reductions();

    CHECK(aml_time() > t0, "aml_time did not advance (%f, %f)", t0, aml_time());
    int64_t total = failures;
    aml_long_allsum(&total);
    if (failures == 0) printf("aml_semantics: rank %d ok\n", me);
    fflush(stdout);
    aml_finalize();
    return total == 0 ? 0 : 1;
}
