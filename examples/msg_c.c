/* SPDX-License-Identifier: MIT */
/*
 * Tagged send and receive from C (am/am_msg.h): a token goes LAPS times around the ring of
 * ranks, each rank adding its number (blocking sends and receives of 8 bytes); then every rank
 * sends a large block to its right neighbour with a non-blocking send while it receives its
 * left neighbour's (three-phase protocol: the data lands straight in the posted buffer).
 *   AM_RANKS=4 ./msg_c                        (4 thread-ranks)
 *   amrun -n 4 --transport shm ./msg_c        (4 processes)
 */
#include <am/am_msg.h> /* self-contained: includes <am/am.h> */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define LAPS 3
#define TOKEN 1
#define BLOCK 2
#define BLOCK_BYTES 100000u

static am_status_t token_ring(am_context_t* ctx, uint64_t* token) {
    const int rank = am_rank(ctx), size = am_size(ctx);
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    am_status_t st;
    *token = 0;
    for (int lap = 0; lap < LAPS; ++lap) {
        if (rank != 0 || lap != 0) {
            st = am_msg_recv(ctx, left, TOKEN, token, sizeof *token, NULL);
            if (st != AM_OK) return st;
        }
        *token += (uint64_t)rank;
        if ((st = am_msg_send(ctx, right, TOKEN, token, sizeof *token)) != AM_OK) return st;
    }
    return rank == 0 ? am_msg_recv(ctx, left, TOKEN, token, sizeof *token, NULL) : AM_OK;
}

/* Sends `out` to the right neighbour while receiving the left one's block into `in`; `*got`
 * says who sent it, with which tag and how many bytes. */
static am_status_t shift(am_context_t* ctx, unsigned char* out, unsigned char* in,
                         am_msg_status_t* got) {
    const int rank = am_rank(ctx), size = am_size(ctx);
    am_msg_request_t *send = NULL, *recv = NULL;
    for (size_t i = 0; i < BLOCK_BYTES; ++i) out[i] = (unsigned char)(rank + i);
    am_status_t st = am_msg_recv_nb(ctx, AM_MSG_ANY_SOURCE, BLOCK, in, BLOCK_BYTES, &recv);
    if (st == AM_OK) st = am_msg_send_nb(ctx, (rank + 1) % size, BLOCK, out, BLOCK_BYTES, &send);
    if (st == AM_OK) st = am_msg_wait(recv, got);
    if (st == AM_OK) st = am_msg_wait(send, NULL);
    am_msg_free(send);
    am_msg_free(recv);
    return st;
}

static void rank_main(am_context_t* ctx, void* arg) {
    const int rank = am_rank(ctx), size = am_size(ctx);
    unsigned char* out = malloc(BLOCK_BYTES);
    unsigned char* in = malloc(BLOCK_BYTES);
    uint64_t token = 0;
    am_msg_status_t got = {-1, -1, 0};
    (void)arg;
    am_status_t st = out && in ? token_ring(ctx, &token) : AM_ERR_SYSTEM;
    if (st == AM_OK) st = shift(ctx, out, in, &got);
    if (st != AM_OK) {
        fprintf(stderr, "msg_c: %s\n", am_last_error(ctx));
        (void)am_abort(ctx, "msg_c failed");
    } else {
        size_t wrong = got.bytes == BLOCK_BYTES ? 0 : BLOCK_BYTES;
        for (size_t i = 0; i < BLOCK_BYTES; ++i) wrong += in[i] != (unsigned char)(got.source + i);
        const uint64_t want = (uint64_t)LAPS * (uint64_t)size * (uint64_t)(size - 1) / 2;
        if (rank == 0) {
            printf("rank 0: token after %d laps = %" PRIu64 " (expected %" PRIu64 ")\n", LAPS,
                   token, want);
        }
        printf("rank %d: %zu bytes from rank %d, %zu wrong\n", rank, got.bytes, got.source, wrong);
        fflush(stdout);
        if (wrong != 0 || (rank == 0 && token != want)) (void)am_abort(ctx, "msg_c: wrong data");
    }
    free(out);
    free(in);
}

int main(int argc, char** argv) {
    return am_run(argc, argv, rank_main, NULL);
}
