/* SPDX-License-Identifier: MIT */
/*
 * Misuse of the AML API on the last rank while the others wait in aml_barrier: the job must
 * end, non-zero and in bounded time, with a message naming the call, the rank and the limit.
 *
 *   mpirun -n N aml_error_test type|negative_type|node|length|unregistered|register|nested|exit
 *   type          aml_send with message type 256
 *   negative_type aml_send with message type -1
 *   node          aml_send to node aml_n_pes()
 *   length        aml_send of AML_MAX_PAYLOAD + 1 bytes
 *   unregistered  aml_send with a type that has no handler
 *   register      aml_register_handler with id 256
 *   nested        aml_barrier called from a handler
 *   exit          exit(3) between aml_init and aml_finalize
 * Prints "aml_error: ... returned" if a call that must not return does.
 */
#include "aml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void plain_handler(int from, void* data, int nbytes) {
    (void)from, (void)data, (void)nbytes;
}

static void barrier_handler(int from, void* data, int nbytes) {
    (void)from, (void)data, (void)nbytes;
    aml_barrier();
    printf("aml_error: aml_barrier in a handler returned\n");
}

int main(int argc, char** argv) {
    aml_init(&argc, &argv);
    const char* mode = argc > 1 ? argv[1] : "";
    const int me = my_pe(), n = num_pes(), bad = n - 1;
    static char payload[AML_MAX_PAYLOAD + 1];
    aml_register_handler(plain_handler, 1);
    aml_register_handler(barrier_handler, 2);
    for (int dst = 0; dst < n; ++dst) aml_send(payload, 1, 8, dst); /* some traffic first */
    if (me == bad) {
        if (strcmp(mode, "type") == 0) {
            aml_send(payload, 256, 8, 0);
        } else if (strcmp(mode, "negative_type") == 0) {
            aml_send(payload, -1, 8, 0);
        } else if (strcmp(mode, "node") == 0) {
            aml_send(payload, 1, 8, n);
        } else if (strcmp(mode, "length") == 0) {
            aml_send(payload, 1, AML_MAX_PAYLOAD + 1, 0);
        } else if (strcmp(mode, "unregistered") == 0) {
            aml_send(payload, 9, 8, 0);
        } else if (strcmp(mode, "register") == 0) {
            aml_register_handler(plain_handler, 256);
        } else if (strcmp(mode, "nested") == 0) {
            aml_send(payload, 2, 8, me);
        } else if (strcmp(mode, "exit") == 0) {
            exit(3);
        } else {
            fprintf(stderr, "aml_error: unknown mode '%s'\n", mode);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        printf("aml_error: rank %d: the bad call returned\n", me);
        fflush(stdout);
    }
    aml_barrier();
    printf("aml_error: rank %d: aml_barrier returned\n", me);
    fflush(stdout);
    aml_finalize();
    return 0;
}
