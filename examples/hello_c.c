/* SPDX-License-Identifier: MIT */
/*
 * hello.cpp in C: every rank asks its right neighbour for its rank and waits for the answer.
 *   AM_RANKS=4 ./hello_c                     (4 thread-ranks)
 *   amrun -n 4 --transport shm ./hello_c     (4 processes)
 */
#include <am/am.h>

#include <stdio.h>

/* Per-rank state, passed to the handlers as `user`. It lives on the rank's stack, so the rank
 * returns only once no handler can need it any more: answered and asked. */
typedef struct rank_data {
    am_counter_t answers;
    am_counter_t asked;
    am_handler_t answer;
} rank_data;

/* Reply handler: args = {who answered, who asked}. */
static void on_answer(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_data* d = user;
    (void)nargs;
    printf("rank %d: rank %d answered (asked by %d)\n", am_rank(am_token_context(t)), (int)args[0],
           (int)args[1]);
    fflush(stdout);
    am_counter_add(&d->answers, 1);
}

/* Request handler: args = {who asks}; replies with this rank. */
static void on_ask(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_data* d = user;
    const uint64_t reply[2] = {(uint64_t)am_rank(am_token_context(t)), args[0]};
    (void)nargs;
    if (am_reply_short(t, d->answer, reply, 2) != AM_OK) {
        fprintf(stderr, "%s\n", am_last_error(am_token_context(t)));
    }
    am_counter_add(&d->asked, 1);
}

static am_status_t hello(am_context_t* ctx, rank_data* d) {
    am_handler_t ask;
    am_status_t st;
    /* Collective: the same handlers in the same order on every rank, then a barrier. */
    if ((st = am_register_short(ctx, on_answer, 2, d, &d->answer)) != AM_OK) return st;
    if ((st = am_register_short(ctx, on_ask, 1, d, &ask)) != AM_OK) return st;
    if ((st = am_barrier(ctx)) != AM_OK) return st;
    const uint64_t me = (uint64_t)am_rank(ctx);
    if ((st = am_request_short(ctx, (am_rank(ctx) + 1) % am_size(ctx), ask, &me, 1)) != AM_OK) {
        return st;
    }
    if ((st = am_counter_wait(ctx, &d->answers, 1)) != AM_OK) return st;
    return am_counter_wait(ctx, &d->asked, 1);
}

static void rank_main(am_context_t* ctx, void* arg) {
    rank_data d = {AM_COUNTER_INIT, AM_COUNTER_INIT, AM_HANDLER_INVALID};
    (void)arg;
    if (hello(ctx, &d) != AM_OK) {
        fprintf(stderr, "hello_c: %s\n", am_last_error(ctx));
        (void)am_abort(ctx, "hello_c failed");
    }
}

int main(int argc, char** argv) {
    return am_run(argc, argv, rank_main, NULL);
}
