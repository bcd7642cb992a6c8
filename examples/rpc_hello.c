/* SPDX-License-Identifier: MIT */
/*
 * RPC from C: every rank asks its right neighbour to greet it; the neighbour's remote function
 * first asks *its* right neighbour the same (a nested call it waits for, which blocks only that
 * function, not the rank) and answers with both greetings.
 *   AM_RANKS=4 ./rpc_hello                     (4 thread-ranks)
 *   amrun -n 4 --transport shm ./rpc_hello     (4 processes)
 */
#include <am/am_rpc.h> /* self-contained: includes <am/am.h> */

#include <stdio.h>
#include <string.h>

typedef struct rank_data {
    am_rpc_t greet, relay;
} rank_data;

/* Remote function: a greeting from this rank to the caller, as a C string. */
static void greet(am_context_t* ctx, int source, const void* args, size_t len,
                  am_rpc_reply_t* reply, void* user) {
    char text[64];
    (void)args, (void)len, (void)user;
    const int n = snprintf(text, sizeof text, "rank %d greets rank %d", am_rank(ctx), source);
    (void)am_rpc_reply_set(reply, text, (size_t)n + 1);
}

/* Remote function: this rank's greeting and the one it gets from its right neighbour. */
static void relay(am_context_t* ctx, int source, const void* args, size_t len,
                  am_rpc_reply_t* reply, void* user) {
    rank_data* d = user;
    char text[160], next[64];
    am_rpc_future_t* f = NULL;
    (void)args, (void)len;
    const int right = (am_rank(ctx) + 1) % am_size(ctx);
    if (am_rpc_call(ctx, right, d->greet, NULL, 0, &f) != AM_OK ||
        am_rpc_future_get(f, next, sizeof next, NULL) != AM_OK) {
        (void)am_rpc_reply_error(reply, am_last_error(ctx));
        am_rpc_future_free(f);
        return;
    }
    am_rpc_future_free(f);
    const int n =
        snprintf(text, sizeof text, "rank %d greets rank %d, and %s", am_rank(ctx), source, next);
    (void)am_rpc_reply_set(reply, text, (size_t)n + 1);
}

static am_status_t hello(am_context_t* ctx, rank_data* d) {
    am_status_t st;
    am_rpc_future_t* f = NULL;
    char text[160];
    /* Collective: the same functions in the same order on every rank, then a barrier. */
    if ((st = am_rpc_register(ctx, greet, d, &d->greet)) != AM_OK) return st;
    if ((st = am_rpc_register(ctx, relay, d, &d->relay)) != AM_OK) return st;
    if ((st = am_barrier(ctx)) != AM_OK) return st;
    const int right = (am_rank(ctx) + 1) % am_size(ctx);
    if ((st = am_rpc_call(ctx, right, d->relay, NULL, 0, &f)) != AM_OK) return st;
    st = am_rpc_future_get(f, text, sizeof text, NULL);
    am_rpc_future_free(f);
    if (st != AM_OK) return st;
    printf("rank %d: %s\n", am_rank(ctx), text);
    fflush(stdout);
    /* The others may still call this rank's functions, whose `user` is on this stack. */
    return am_barrier(ctx);
}

static void rank_main(am_context_t* ctx, void* arg) {
    rank_data d = {AM_RPC_INVALID, AM_RPC_INVALID};
    (void)arg;
    if (hello(ctx, &d) != AM_OK) {
        fprintf(stderr, "rpc_hello: %s\n", am_last_error(ctx));
        (void)am_abort(ctx, "rpc_hello failed");
    }
}

int main(int argc, char** argv) {
    return am_run(argc, argv, rank_main, NULL);
}
