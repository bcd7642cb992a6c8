/* SPDX-License-Identifier: MIT */
/*
 * aml_rate: message rate of aml_send. Every rank sends `count` messages of `bytes` bytes,
 * round-robin to the other ranks (to itself when alone), then calls aml_barrier; the time of
 * the slowest rank from the start to the end of the barrier gives the rate, over all ranks'
 * messages. Prints one JSON line (median, min and max over the repetitions) on rank 0.
 *
 *   mpirun -n 2 aml_rate [count per rank = 10000000] [bytes = 8] [repetitions = 5]
 */
#include "aml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t received;

static void count_handler(int from, void* data, int nbytes) {
    (void)from;
    (void)data;
    (void)nbytes;
    ++received;
}

static int compare(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    aml_init(&argc, &argv);
    const long count = argc > 1 ? atol(argv[1]) : 10000000L;
    const int bytes = argc > 2 ? atoi(argv[2]) : 8;
    const int reps = argc > 3 ? atoi(argv[3]) : 5;
    const int me = my_pe(), n = num_pes();
    char payload[AML_MAX_PAYLOAD];
    memset(payload, 7, sizeof payload);
    aml_register_handler(count_handler, 1);

    double* rates = malloc(sizeof(double) * (size_t)(reps > 0 ? reps : 1));
    for (int r = 0; r < reps; ++r) {
        received = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = aml_time();
        int dest = me;
        for (long i = 0; i < count; ++i) {
            if (n > 1) {
                dest = (dest + 1) % n;
                if (dest == me) dest = (dest + 1) % n;
            }
            aml_send(payload, 1, bytes, dest);
        }
        aml_barrier();
        double elapsed = aml_time() - start;
        MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int64_t total = received;
        aml_long_allsum(&total);
        if (total != (int64_t)count * n) {
            fprintf(stderr, "aml_rate: rank %d: %lld messages handled, expected %lld\n", me,
                    (long long)total, (long long)count * n);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        rates[r] = (double)total / elapsed;
    }
    if (me == 0 && reps > 0) {
        qsort(rates, (size_t)reps, sizeof(double), compare);
        printf(
            "{\"name\": \"aml_send_rate\", \"transport\": \"am-aml\", \"ranks\": %d, "
            "\"size\": %d, \"iterations\": %ld, \"unit\": \"messages/s\", \"median\": %.0f, "
            "\"min\": %.0f, \"max\": %.0f}\n",
            n, bytes, count, rates[reps / 2], rates[0], rates[reps - 1]);
    }
    free(rates);
    aml_finalize();
    return 0;
}
