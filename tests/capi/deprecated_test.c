/* SPDX-License-Identifier: MIT */
/*
 * The C names from before docs/api.md's naming rule (am/am_deprecated.h) still compile and
 * forward to the current ones for one release: every old function, type and constant is used
 * here (built with -Wno-deprecated-declarations) and checked against the new name it stands
 * for — an old put read back by a new get and the reverse, old send/receive, an old epoch's
 * sum and statistics, an old future's result, old callback types registered and run.
 * `deprecated_test forwarders` runs it on every rank through am_run.
 */
#include <am/am.h> /* first: for one release it also brings <am/am_rpc.h> */
#include <am/am_msg.h>
#include <am/am_splitc.h>
#include <am/am_typed.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define WORDS 8

typedef struct rank_state {
    CHECK_RANK_FIELDS;
    unsigned bad;
    am_counter_t pinged;  /* handlers (registered through the old callback types) run here */
    uint64_t typed_items; /* items the typed handler (an am_typed_fn) received */
    am_handler_t ping, medium, along;
    am_rpc_t twice;
} rank_state;

static void on_ping(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    (void)t;
    (void)args;
    (void)nargs;
    am_counter_add(&((rank_state*)user)->pinged, 1);
}

static void on_medium(am_token_t* t, const void* payload, size_t len, const uint64_t* args,
                      unsigned nargs, void* user) {
    (void)payload;
    (void)len;
    on_ping(t, args, nargs, user);
}

static void on_long(am_token_t* t, void* data, size_t len, const uint64_t* args, unsigned nargs,
                    void* user) {
    on_medium(t, data, len, args, nargs, user);
}

/* Remote function: answers its 8-byte argument doubled. */
static void rpc_twice(am_context_t* ctx, int source, const void* args, size_t len,
                      am_rpc_reply_t* reply, void* user) {
    (void)ctx;
    (void)source;
    (void)user;
    uint64_t v = 0;
    if (len == sizeof v) memcpy(&v, args, sizeof v);
    v *= 2;
    (void)am_rpc_reply_set(reply, &v, sizeof v);
}

static void on_items(am_context_t* ctx, int source, const void* items, size_t count, void* user) {
    (void)ctx;
    (void)source;
    (void)items;
    ((rank_state*)user)->typed_items += count;
}

static void keep_max(void* acc, const void* item, void* user) {
    (void)user;
    uint64_t a, b;
    memcpy(&a, acc, sizeof a);
    memcpy(&b, item, sizeof b);
    if (b > a) memcpy(acc, &b, sizeof b);
}

/* Core: the old callback types register and run. */
static int old_core(rank_state* s) {
    am_short_fn fn = on_ping;
    am_medium_fn mfn = on_medium;
    am_long_fn lfn = on_long;
    am_rpc_fn rfn = rpc_twice;
    REQUIRE_OK(s, am_register_short(s->ctx, fn, 0, s, &s->ping));
    REQUIRE_OK(s, am_register_medium(s->ctx, mfn, 0, s, &s->medium));
    REQUIRE_OK(s, am_register_long(s->ctx, lfn, 0, s, &s->along));
    REQUIRE_OK(s, am_rpc_register(s->ctx, rfn, NULL, &s->twice));
    REQUIRE_OK(s, am_barrier(s->ctx));
    const char byte = 'x';
    REQUIRE_OK(s, am_request_short(s->ctx, s->right, s->ping, NULL, 0));
    REQUIRE_OK(s, am_request_medium(s->ctx, s->right, s->medium, &byte, 1, NULL, 0));
    REQUIRE_OK(s, am_request_long(s->ctx, s->right, s->along, &byte, 1, 0, NULL, 0));
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->pinged, 3));
    return 0;
}

/* Split-C shapes: the 8 words of `out` as 2 strided rows of 4 and as 8 indexed elements,
 * through the old blocking and split-phase calls, each read back and compared. */
static int old_splitc_shapes(rank_state* s, am_gptr_t there, const uint64_t* out) {
    const size_t n = WORDS * sizeof *out, row = n / 2;
    const uint64_t index[WORDS] = {7, 6, 5, 4, 3, 2, 1, 0};
    uint64_t back[WORDS], got_back[3][WORDS];
    am_flag_t *done = NULL, *got = NULL;
    REQUIRE_OK(s, am_put_strided(s->ctx, there, row, out, row, row, 2));
    REQUIRE_OK(s, am_get_strided(s->ctx, back, row, there, row, row, 2));
    REQUIRE(s, memcmp(out, back, n) == 0);
    REQUIRE_OK(s, am_put_indexed(s->ctx, there, index, WORDS, out, sizeof *out));
    REQUIRE_OK(s, am_get_indexed(s->ctx, back, there, index, WORDS, sizeof *out));
    REQUIRE(s, memcmp(out, back, n) == 0);
    REQUIRE_OK(s, am_flag_create(s->ctx, &done));
    REQUIRE_OK(s, am_flag_create(s->ctx, &got));
    REQUIRE_OK(s, am_put_strided_nb(s->ctx, there, row, out, row, row, 2, NULL, done));
    REQUIRE_OK(s, am_flag_wait(done, 1));
    REQUIRE_OK(s, am_put_indexed_nb(s->ctx, there, index, WORDS, out, sizeof *out, NULL, done));
    REQUIRE_OK(s, am_flag_wait(done, 2));
    REQUIRE_OK(s, am_get_nb(s->ctx, got_back[0], there, n, got));
    REQUIRE_OK(s, am_get_strided_nb(s->ctx, got_back[1], row, there, row, row, 2, got));
    REQUIRE_OK(s, am_get_indexed_nb(s->ctx, got_back[2], there, index, WORDS, sizeof *out, got));
    REQUIRE_OK(s, am_flag_wait(got, 3));
    /* The indexed put reversed the words there; the indexed get reverses them back. */
    for (unsigned i = 0; i < WORDS; ++i) back[i] = out[index[i]];
    REQUIRE(s, memcmp(back, got_back[0], n) == 0 && memcmp(back, got_back[1], n) == 0);
    REQUIRE(s, memcmp(out, got_back[2], n) == 0);
    am_flag_free(got);
    am_flag_free(done);
    return 0;
}

/* Split-C: old put read back by a new get, new put read back by an old get, old split-phase
 * put counted on an old flag, and the old pointer helpers equal to the new ones. */
static int old_splitc(rank_state* s) {
    am_gptr_t mine, *all = calloc((size_t)s->size, sizeof *all);
    uint64_t out[WORDS], back[WORDS];
    REQUIRE(s, all != NULL);
    REQUIRE_OK(s, am_allocate(s->ctx, 2 * sizeof out, 0, &mine));
    REQUIRE_OK(s, am_exchange(s->ctx, mine, all));
    REQUIRE(s, all[s->rank].rank == mine.rank && all[s->rank].offset == mine.offset);
    const am_gptr_t there = all[s->right], there2 = am_gptr_add(there, sizeof out);
    REQUIRE(s, !am_gptr_is_null(there) && am_gptr_is_null(am_gptr(-1, 0)));
    REQUIRE(s, am_splitc_gptr_add(there, sizeof out).offset == there2.offset);
    for (unsigned i = 0; i < WORDS; ++i) out[i] = (uint64_t)s->rank * 1000 + i;
    REQUIRE_OK(s, am_put(s->ctx, there, out, sizeof out));
    REQUIRE_OK(s, am_splitc_get(s->ctx, back, there, sizeof back));
    REQUIRE(s, memcmp(out, back, sizeof out) == 0);
    out[0] += 1;
    REQUIRE_OK(s, am_splitc_put(s->ctx, there2, out, sizeof out));
    REQUIRE_OK(s, am_get(s->ctx, back, there2, sizeof back));
    REQUIRE(s, memcmp(out, back, sizeof out) == 0);
    am_flag_t* done = NULL;
    REQUIRE_OK(s, am_flag_create(s->ctx, &done));
    REQUIRE_OK(s, am_put_nb(s->ctx, there, out, sizeof out, NULL, done));
    REQUIRE_OK(s, am_flag_wait(done, 1));
    REQUIRE(s, am_flag_value(done) == 1 && am_splitc_flag_value(done) == 1);
    am_flag_reset(done);
    am_flag_add(done, 2);
    REQUIRE(s, am_flag_value(done) == 2);
    am_flag_free(done);
    if (old_splitc_shapes(s, there, out)) return 1;
    REQUIRE(s, am_local(s->ctx, mine, sizeof out) == am_splitc_local(s->ctx, mine, sizeof out));
    am_gptr_t again;
    REQUIRE_OK(s, am_to_global(s->ctx, am_local(s->ctx, mine, 8), 8, &again));
    REQUIRE(s, again.rank == mine.rank && again.offset == mine.offset);
    REQUIRE(s, AM_MAX_FLAGS == AM_SPLITC_MAX_FLAGS);
    REQUIRE_OK(s, am_barrier(s->ctx)); /* nobody puts into `mine` any more */
    REQUIRE_OK(s, am_deallocate(s->ctx, mine));
    free(all);
    return 0;
}

/* Send and receive: old blocking and non-blocking calls, old wildcards. */
static int old_msg(rank_state* s) {
    uint64_t v = (uint64_t)s->rank + 7, got = 0;
    am_msg_status_t st;
    REQUIRE_OK(s, am_send(s->ctx, s->right, 3, &v, sizeof v));
    REQUIRE_OK(s, am_recv(s->ctx, AM_ANY_SOURCE, AM_ANY_TAG, &got, sizeof got, &st));
    REQUIRE(s, got == (uint64_t)s->left + 7 && st.source == s->left && st.tag == 3);
    am_msg_request_t *snd = NULL, *rcv = NULL;
    REQUIRE_OK(s, am_irecv(s->ctx, s->left, 4, &got, sizeof got, &rcv));
    REQUIRE_OK(s, am_isend(s->ctx, s->right, 4, &v, sizeof v, &snd));
    REQUIRE_OK(s, am_msg_wait(snd, NULL));
    REQUIRE_OK(s, am_msg_wait(rcv, &st));
    REQUIRE(s, got == (uint64_t)s->left + 7 && st.bytes == sizeof got);
    am_msg_free(snd);
    am_msg_free(rcv);
    return 0;
}

/* RPC: an old future's test, wait and get. */
static int old_rpc(rank_state* s) {
    const uint64_t arg = (uint64_t)s->rank + 5;
    uint64_t res = 0;
    size_t len = 0;
    int ready = 0;
    am_future_t* f = NULL;
    REQUIRE_OK(s, am_rpc_call(s->ctx, s->right, s->twice, &arg, sizeof arg, &f));
    REQUIRE_OK(s, am_future_wait(f));
    REQUIRE_OK(s, am_future_test(f, &ready));
    REQUIRE_OK(s, am_future_get(f, &res, sizeof res, &len));
    REQUIRE(s, ready == 1 && len == sizeof res && res == 2 * arg);
    am_future_free(f);
    return 0;
}

/* Typed: old callback types and an old epoch's sum and statistics. */
static int old_typed(rank_state* s) {
    am_typed_fn fn = on_items;
    am_combine_fn combine = keep_max;
    am_typed_t* type = NULL;
    am_typed_layer_t* reduce = NULL;
    REQUIRE_OK(s, am_typed_create(s->ctx, sizeof(uint64_t), fn, s, "deprecated", &type));
    REQUIRE_OK(s, am_typed_reduce(type, NULL, 0, sizeof(uint64_t), combine, NULL, 0, &reduce));
    REQUIRE_OK(s, am_epoch_begin(s->ctx, 0));
    const uint64_t item = 42;
    REQUIRE_OK(s, am_typed_send(type, &item, 1, s->right));
    REQUIRE_OK(s, am_typed_layer_send(reduce, &item, s->right));
    REQUIRE_OK(s, am_typed_layer_send(reduce, &item, s->right)); /* combined into the first */
    uint64_t sum = 0;
    am_epoch_stats_t stats;
    REQUIRE_OK(s, am_epoch_end(s->ctx, 1, &sum, &stats));
    REQUIRE(s, sum == (uint64_t)s->size && stats.epoch == 1 && stats.combined == 1);
    REQUIRE(s, s->typed_items == 2);
    am_typed_layer_free(reduce);
    return 0;
}

static int scenario_forwarders(rank_state* s) {
    if (old_core(s) || old_splitc(s) || old_msg(s) || old_rpc(s) || old_typed(s)) return 1;
    REQUIRE_OK(s, am_barrier(s->ctx)); /* every call answered before the state goes */
    return 0;
}

static const char* const names[] = {"forwarders"};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    check_end(ctx, names[sc], scenario_forwarders(&s) != 0 || s.bad != 0);
}

int main(int argc, char** argv) {
    am_rank_fn old = rank_main;
    return check_main(argc, argv, "deprecated_test", names, 1, old);
}
