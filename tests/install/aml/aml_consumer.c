/* SPDX-License-Identifier: MIT */
/* Built against an installed am: every node sends each node (itself included) its rank + 1
 * through AML; after aml_barrier each node checks the sum it received. */
#include "aml.h"

#include <stdio.h>
#include <string.h>

static long long received;

static void add(int from, void* data, int nbytes) {
    long long v;
    (void)from;
    if (nbytes != (int)sizeof v) MPI_Abort(MPI_COMM_WORLD, 2);
    memcpy(&v, data, sizeof v);
    received += v;
}

int main(int argc, char** argv) {
    aml_init(&argc, &argv);
    aml_register_handler(add, 1);
    for (int node = 0; node < num_pes(); ++node) {
        long long v = my_pe() + 1;
        aml_send(&v, 1, (int)sizeof v, node);
    }
    aml_barrier();
    const long long n = num_pes();
    if (received != n * (n + 1) / 2) {
        fprintf(stderr, "aml consumer: node %d received %lld, expected %lld\n", my_pe(), received,
                n * (n + 1) / 2);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long long total = received;
    aml_long_allsum(&total);
    if (my_pe() == 0) printf("aml consumer: %d nodes, sum over nodes %lld\n", num_pes(), total);
    aml_finalize();
    return 0;
}
