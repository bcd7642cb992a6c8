/* SPDX-License-Identifier: MIT */
/*
 * RPC from C (am/am_rpc.h). `rpc_test <scenario>` runs one
 * scenario on every rank through am_run (transport and rank count from AM_TRANSPORT /
 * AM_RANKS) and exits non-zero when a check fails on any rank: the failing rank prints
 * "rpc_test: FAILED ..." and calls am_abort. `rpc_test all` runs every scenario in turn.
 * AM_CAPI_VERBOSE=1 prints each error message that was checked.
 *
 * Every rank calls its right neighbour and finishes with a barrier once every call it made
 * has completed, so no remote function runs after the rank's state (on its stack) is gone.
 */
#include <am/am_rpc.h> /* self-contained: includes <am/am.h> */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define IN_FLIGHT 32u /* calls outstanding at once */
#define FF_CALLS 200u

/* ------------------------------------------------------------------------ rank state */

typedef struct rank_state {
    am_context_t* ctx;
    int rank, size, left, right;
    size_t max_bytes;
    unsigned bad;             /* failed checks */
    am_counter_t served;      /* remote functions run on this rank (any kind) */
    am_counter_t ff_seen;     /* fire-and-forget calls run on this rank */
    am_counter_t release;     /* set by a RELEASE call; WAIT calls block on it */
    am_counter_t checks;      /* error checks done inside remote functions or handlers */
    am_rpc_future_t* pending; /* a future a plain handler looks at */
    am_rpc_t echo, who, chain, fail, ff, wait, release_fn, big, misuse, limited;
    am_handler_t probe;
} rank_state;

static unsigned char byte_pattern(int source, size_t i, size_t len) {
    return (unsigned char)((size_t)source * 131u + i * 7u + len);
}

static void fill(unsigned char* p, int source, size_t len) {
    for (size_t i = 0; i < len; ++i) p[i] = byte_pattern(source, i, len);
}

/* Index of the first byte that is not pattern ^ `mask`, or len when all are right. */
static size_t first_wrong(const unsigned char* p, int source, size_t len, unsigned char mask) {
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != (unsigned char)(byte_pattern(source, i, len) ^ mask)) return i;
    }
    return len;
}

static void put_u32(unsigned char* p, uint32_t v) {
    memcpy(p, &v, sizeof v);
}

static uint32_t get_u32(const unsigned char* p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void set_result(rank_state* s, am_rpc_reply_t* reply, const void* data, size_t len) {
    am_status_t st = am_rpc_reply_set(reply, data, len);
    if (st != AM_OK) FAIL(s, "am_rpc_reply_set: %s", am_last_error(s->ctx));
}

/* ------------------------------------------------------------------ remote functions */

#define MASK 0x5a

/* The argument bytes, each xor MASK: checks source, context and payload on the way. */
static void echo_fn(am_context_t* ctx, int source, const void* args, size_t len,
                    am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    CHECK(s, ctx == s->ctx);
    CHECK(s, source >= 0 && source < s->size);
    CHECK(s, len == 0 || args != NULL);
    size_t bad_at = first_wrong(args, source, len, 0);
    if (bad_at != len) FAIL(s, "arguments of %zu bytes: byte %zu wrong", len, bad_at);
    unsigned char* out = malloc(len ? len : 1);
    for (size_t i = 0; i < len; ++i)
        out[i] = (unsigned char)(((const unsigned char*)args)[i] ^ MASK);
    set_result(s, reply, out, len);
    free(out);
    am_counter_add(&s->served, 1);
}

/* {this rank, the caller}. */
static void who_fn(am_context_t* ctx, int source, const void* args, size_t len,
                   am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    unsigned char out[8];
    (void)args;
    CHECK(s, ctx == s->ctx && len == 0);
    put_u32(out, (uint32_t)am_rank(ctx));
    put_u32(out + 4, (uint32_t)source);
    set_result(s, reply, out, sizeof out);
    am_counter_add(&s->served, 1);
}

/* args = {hops left}; calls itself on the right neighbour (a nested call, waited for inside
 * this function) until no hop is left; the result is the ranks visited, this one first. */
static void chain_fn(am_context_t* ctx, int source, const void* args, size_t len,
                     am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    unsigned char out[4 * 64];
    size_t n = 0;
    (void)source;
    CHECK(s, len == 4);
    const uint32_t hops = get_u32(args);
    put_u32(out, (uint32_t)s->rank);
    if (hops > 0) {
        unsigned char next[4];
        am_rpc_future_t* f = NULL;
        put_u32(next, hops - 1);
        am_status_t st = am_rpc_call(ctx, s->right, s->chain, next, sizeof next, &f);
        if (st != AM_OK) FAIL(s, "nested am_rpc_call: %s", am_last_error(ctx));
        /* Blocks this function (not the rank): its result comes in a later poll. */
        if (st == AM_OK) st = am_rpc_future_get(f, out + 4, sizeof out - 4, &n);
        if (st != AM_OK) FAIL(s, "nested am_rpc_future_get: %s", am_last_error(ctx));
        CHECK(s, n == 4u * hops);
        am_rpc_future_free(f);
    }
    set_result(s, reply, out, 4 + n);
    am_counter_add(&s->served, 1);
}

/* Fails with a message naming this rank; a second answer is refused. */
static void fail_fn(am_context_t* ctx, int source, const void* args, size_t len,
                    am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    char msg[96];
    (void)source, (void)args, (void)len;
    snprintf(msg, sizeof msg, "deliberate failure on rank %d", s->rank);
    CHECK(s, am_rpc_reply_error(reply, msg) == AM_OK);
    EXPECT_ERR(s, "am_rpc_reply_set", am_rpc_reply_set(reply, "x", 1), AM_ERR_BAD_REPLY,
               "second answer", "am_rpc_reply_error was called already");
    EXPECT_ERR(s, "am_rpc_reply_error", am_rpc_reply_error(reply, "again"), AM_ERR_BAD_REPLY,
               "second answer");
    CHECK(s, ctx == s->ctx);
    am_counter_add(&s->checks, 1);
    am_counter_add(&s->served, 1);
}

/* Fire-and-forget target: checks its arguments, sets a result that nobody receives. */
static void ff_fn(am_context_t* ctx, int source, const void* args, size_t len,
                  am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    CHECK(s, ctx == s->ctx && source == s->left);
    size_t bad_at = first_wrong(args, source, len, 0);
    if (bad_at != len) FAIL(s, "ff arguments of %zu bytes: byte %zu wrong", len, bad_at);
    set_result(s, reply, args, len);
    am_counter_add(&s->ff_seen, 1);
    am_counter_add(&s->served, 1);
}

/* Blocks on a counter until a later RELEASE call from the same caller arrives: that call must
 * run while this one waits. Returns the release count it saw. */
static void wait_fn(am_context_t* ctx, int source, const void* args, size_t len,
                    am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    unsigned char out[4];
    (void)source;
    CHECK(s, len == 4);
    const uint32_t want = get_u32(args);
    am_status_t st = am_counter_wait(ctx, &s->release, want);
    if (st != AM_OK) FAIL(s, "am_counter_wait in a remote function: %s", am_last_error(ctx));
    put_u32(out, (uint32_t)am_counter_value(&s->release));
    set_result(s, reply, out, sizeof out);
    am_counter_add(&s->served, 1);
}

static void release_fn(am_context_t* ctx, int source, const void* args, size_t len,
                       am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    (void)ctx, (void)source, (void)args, (void)len, (void)reply;
    am_counter_add(&s->release, 1);
    am_counter_add(&s->served, 1);
}

/* args = {result length}: a result of that many pattern bytes. */
static void big_fn(am_context_t* ctx, int source, const void* args, size_t len,
                   am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    (void)ctx;
    CHECK(s, len == 4);
    const size_t n = get_u32(args);
    unsigned char* out = malloc(n ? n : 1);
    fill(out, source, n);
    set_result(s, reply, out, n);
    free(out);
    am_counter_add(&s->served, 1);
}

/* What a remote function may not do, and argument errors of the reply calls. */
static void misuse_fn(am_context_t* ctx, int source, const void* args, size_t len,
                      am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    am_rpc_t id = 0;
    char limit[96];
    am_rpc_future_t* f = NULL;
    (void)source, (void)args, (void)len;
    /* Block once first: the rules hold as well once the function has resumed. */
    CHECK(s, am_rpc_call(ctx, s->right, s->who, NULL, 0, &f) == AM_OK);
    CHECK(s, am_rpc_future_wait(f) == AM_OK);
    am_rpc_future_free(f);
    EXPECT_ERR(s, "am_barrier", am_barrier(ctx), AM_ERR_BAD_CONTEXT, "from a handler");
    EXPECT_ERR(s, "am_rpc_register", am_rpc_register(ctx, echo_fn, s, &id), AM_ERR_BAD_CONTEXT,
               "from a handler");
    CHECK(s, id == AM_RPC_INVALID);
    EXPECT_ERR(s, "am_rpc_reply_set", am_rpc_reply_set(reply, NULL, 3), AM_ERR_INVALID_ARGUMENT,
               "null data pointer");
    snprintf(limit, sizeof limit, "a result of %zu bytes exceeds am_rpc_max_bytes() = %zu",
             s->max_bytes + 1, s->max_bytes);
    {
        unsigned char* huge = calloc(s->max_bytes + 1, 1);
        EXPECT_ERR(s, "am_rpc_reply_set", am_rpc_reply_set(reply, huge, s->max_bytes + 1),
                   AM_ERR_TOO_LARGE, limit);
        free(huge);
    }
    /* The failed answers left none: this one is the first. */
    set_result(s, reply, "ok", 2);
    am_counter_add(&s->checks, 1);
    am_counter_add(&s->served, 1);
}

/* Waits like wait_fn, but answers a failed wait with its message (am_last_error). */
static void limited_fn(am_context_t* ctx, int source, const void* args, size_t len,
                       am_rpc_reply_t* reply, void* user) {
    rank_state* s = user;
    (void)source;
    CHECK(s, len == 4);
    if (am_counter_wait(ctx, &s->release, get_u32(args)) != AM_OK) {
        CHECK(s, am_rpc_reply_error(reply, am_last_error(ctx)) == AM_OK);
    }
    am_counter_add(&s->served, 1);
}

/* A plain (not optimistic) handler must not wait for a future that is not ready. */
static void probe_handler(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_state* s = user;
    int ready = 7;
    (void)t, (void)args, (void)nargs;
    EXPECT_ERR(s, "am_rpc_future_wait", am_rpc_future_wait(s->pending), AM_ERR_BAD_CONTEXT, "");
    CHECK(s, am_rpc_future_test(s->pending, &ready) == AM_OK && ready == 0);
    am_counter_add(&s->checks, 1);
}

static int register_all(rank_state* s) {
    REQUIRE_OK(s, am_rpc_register(s->ctx, echo_fn, s, &s->echo));
    REQUIRE_OK(s, am_rpc_register(s->ctx, who_fn, s, &s->who));
    REQUIRE_OK(s, am_rpc_register(s->ctx, chain_fn, s, &s->chain));
    REQUIRE_OK(s, am_rpc_register(s->ctx, fail_fn, s, &s->fail));
    REQUIRE_OK(s, am_rpc_register(s->ctx, ff_fn, s, &s->ff));
    REQUIRE_OK(s, am_register_short(s->ctx, probe_handler, 0, s, &s->probe));
    REQUIRE_OK(s, am_rpc_register(s->ctx, wait_fn, s, &s->wait));
    REQUIRE_OK(s, am_rpc_register(s->ctx, release_fn, s, &s->release_fn));
    REQUIRE_OK(s, am_rpc_register(s->ctx, big_fn, s, &s->big));
    REQUIRE_OK(s, am_rpc_register(s->ctx, misuse_fn, s, &s->misuse));
    REQUIRE_OK(s, am_rpc_register(s->ctx, limited_fn, s, &s->limited));
    REQUIRE(s, s->who == s->echo + 1 && s->misuse == s->echo + 9); /* numbered with handlers */
    REQUIRE_OK(s, am_barrier(s->ctx));
    return 0;
}

/* Every call this rank made has completed (the caller checked); the barrier makes every
 * rank's calls complete before any returns. */
static int finish(rank_state* s) {
    REQUIRE_OK(s, am_barrier(s->ctx));
    return 0;
}

/* Ends a scenario whose last call, `empty`, answers 0 bytes: checks that, frees it and
 * `other` (may be NULL), and finishes. */
static int finish_empty(rank_state* s, am_rpc_future_t* empty, am_rpc_future_t* other) {
    size_t got = 5;
    REQUIRE_OK(s, am_rpc_future_get(empty, NULL, 0, &got));
    REQUIRE(s, got == 0);
    am_rpc_future_free(empty);
    am_rpc_future_free(other);
    return finish(s);
}

static int call_ok(rank_state* s, int rank, am_rpc_t id, const void* args, size_t len,
                   am_rpc_future_t** f) {
    REQUIRE_OK(s, am_rpc_call(s->ctx, rank, id, args, len, f));
    REQUIRE(s, *f != NULL);
    return 0;
}

/* ------------------------------------------------------------------------ scenarios */

/* Calls with arguments and results of many sizes, to the right neighbour and to itself, one
 * at a time and IN_FLIGHT at once (got in reverse order). */
static int scenario_call(rank_state* s) {
    if (register_all(s)) return 1;
    const size_t sizes[] = {0, 1, 7, 100, 4096, s->max_bytes - 1, s->max_bytes};
    unsigned char* args = malloc(s->max_bytes);
    unsigned char* out = malloc(s->max_bytes);
    REQUIRE(s, args != NULL && out != NULL);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const size_t len = sizes[k];
        for (int to = 0; to < 2; ++to) {
            am_rpc_future_t* f = NULL;
            size_t got = 12345;
            fill(args, s->rank, len);
            if (call_ok(s, to ? s->right : s->rank, s->echo, len ? args : NULL, len, &f)) return 1;
            memset(args, 0xee, len); /* copied by the call: reusing it is harmless */
            REQUIRE_OK(s, am_rpc_future_wait(f));
            REQUIRE_OK(s, am_rpc_future_get(f, out, s->max_bytes, &got));
            REQUIRE(s, got == len);
            REQUIRE(s, first_wrong(out, s->rank, len, MASK) == len);
            am_rpc_future_free(f);
        }
    }
    /* Many at once; the test loop makes progress by itself. */
    am_rpc_future_t* fs[IN_FLIGHT];
    for (unsigned i = 0; i < IN_FLIGHT; ++i) {
        fill(args, s->rank, i);
        if (call_ok(s, s->right, s->echo, args, i, &fs[i])) return 1;
    }
    int ready = 0;
    for (long spins = 0; !ready; ++spins) {
        REQUIRE_OK(s, am_rpc_future_test(fs[0], &ready));
        REQUIRE(s, spins < 100000000L);
    }
    for (unsigned i = IN_FLIGHT; i-- > 0;) {
        size_t got = 0;
        REQUIRE_OK(s, am_rpc_future_get(fs[i], out, i, &got));
        REQUIRE(s, got == i && first_wrong(out, s->rank, i, MASK) == i);
        REQUIRE_OK(s, am_rpc_future_test(fs[i], &ready));
        REQUIRE(s, ready == 1);
        am_rpc_future_free(fs[i]);
    }
    /* Who ran it, and who it thinks called. */
    am_rpc_future_t* f = NULL;
    unsigned char who[8];
    size_t got = 0;
    if (call_ok(s, s->right, s->who, NULL, 0, &f)) return 1;
    REQUIRE_OK(s, am_rpc_future_get(f, who, sizeof who, &got));
    REQUIRE(
        s, got == 8 && get_u32(who) == (uint32_t)s->right && get_u32(who + 4) == (uint32_t)s->rank);
    am_rpc_future_free(f);
    free(args);
    free(out);
    return finish(s);
}

/* Fire-and-forget: FF_CALLS to the right, each run exactly once on the right with its own
 * arguments; then the left neighbour's all arrived here. */
static int scenario_ff(rank_state* s) {
    if (register_all(s)) return 1;
    unsigned char args[64];
    for (unsigned i = 0; i < FF_CALLS; ++i) {
        const size_t len = i % sizeof args;
        fill(args, s->rank, len);
        REQUIRE_OK(s, am_rpc_call_ff(s->ctx, s->right, s->ff, args, len));
    }
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->ff_seen, FF_CALLS));
    REQUIRE_OK(s, am_barrier(s->ctx)); /* nothing more arrives: exactly FF_CALLS ran */
    for (int i = 0; i < 100; ++i) REQUIRE_OK(s, am_poll(s->ctx, NULL));
    REQUIRE(s, am_counter_value(&s->ff_seen) == FF_CALLS);
    return finish(s);
}

/* Remote functions that call remote functions and wait for them: a chain of 2*size+1 hops
 * around the ring (so every rank has functions blocked on later hops, its own included),
 * several chains at once. */
static int scenario_nested(rank_state* s) {
    if (register_all(s)) return 1;
    enum { CHAINS = 4 };
    const uint32_t hops = 2u * (uint32_t)s->size + 1u;
    am_rpc_future_t* fs[CHAINS];
    unsigned char arg[4];
    put_u32(arg, hops);
    for (int c = 0; c < CHAINS; ++c) {
        if (call_ok(s, s->right, s->chain, arg, sizeof arg, &fs[c])) return 1;
    }
    for (int c = 0; c < CHAINS; ++c) {
        unsigned char out[4 * 64];
        size_t got = 0;
        REQUIRE_OK(s, am_rpc_future_get(fs[c], out, sizeof out, &got));
        REQUIRE(s, got == 4u * (hops + 1u));
        for (uint32_t h = 0; h <= hops; ++h) {
            REQUIRE(s, get_u32(out + 4 * h) == (uint32_t)((s->rank + 1 + (int)h) % s->size));
        }
        am_rpc_future_free(fs[c]);
    }
    /* A remote function blocked on a counter does not hold back the caller's next call, which
     * releases it. */
    am_rpc_future_t* w = NULL;
    am_rpc_future_t* r = NULL;
    unsigned char out[4];
    size_t got = 0;
    put_u32(arg, 1);
    if (call_ok(s, s->right, s->wait, arg, sizeof arg, &w)) return 1;
    if (call_ok(s, s->right, s->release_fn, NULL, 0, &r)) return 1;
    REQUIRE_OK(s, am_rpc_future_get(w, out, sizeof out, &got));
    REQUIRE(s, got == 4 && get_u32(out) >= 1);
    return finish_empty(s, r, w);
}

/* am_rpc_reply_error on the right: AM_ERR_REMOTE with the message, every time it is asked;
 * other calls before and after are unaffected. */
static int scenario_remote_error(rank_state* s) {
    if (register_all(s)) return 1;
    am_rpc_future_t *before = NULL, *f = NULL, *after = NULL;
    char msg[96];
    unsigned char buf[16];
    size_t got = 99;
    snprintf(msg, sizeof msg,
             "on rank %d (called by rank %d) failed: deliberate failure on rank %d", s->right,
             s->rank, s->right);
    if (call_ok(s, s->right, s->who, NULL, 0, &before)) return 1;
    if (call_ok(s, s->right, s->fail, "abc", 3, &f)) return 1;
    if (call_ok(s, s->right, s->who, NULL, 0, &after)) return 1;
    REQUIRE_OK(s, am_rpc_future_wait(f)); /* ready: the failure is the get's to report */
    /* The function is named by its symbol, or as here (static) by its place in the program. */
    EXPECT_ERR(s, "am_rpc_future_get", am_rpc_future_get(f, buf, sizeof buf, &got), AM_ERR_REMOTE,
               "C remote function ", msg);
    REQUIRE(s, got == 0);
    got = 99;
    EXPECT_ERR(s, "am_rpc_future_get", am_rpc_future_get(f, NULL, 0, &got), AM_ERR_REMOTE, msg);
    REQUIRE(s, got == 0);
    REQUIRE_OK(s, am_rpc_future_get(before, buf, sizeof buf, &got));
    REQUIRE(s, got == 8 && get_u32(buf) == (uint32_t)s->right);
    REQUIRE_OK(s, am_rpc_future_get(after, buf, sizeof buf, &got));
    REQUIRE(s, got == 8 && get_u32(buf + 4) == (uint32_t)s->rank);
    am_rpc_future_free(before);
    am_rpc_future_free(f);
    am_rpc_future_free(after);
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->checks, 1)); /* the right's second answers */
    return finish(s);
}

/* A result larger than the buffer: AM_ERR_TOO_LARGE with the length needed, nothing copied,
 * nothing lost. */
static int scenario_small_buffer(rank_state* s) {
    if (register_all(s)) return 1;
    const uint32_t n = 1000;
    unsigned char arg[4], buf[1000], sentinel[1000];
    am_rpc_future_t* f = NULL;
    size_t got = 0;
    char limit[96];
    put_u32(arg, n);
    memset(buf, 0xcd, sizeof buf);
    memcpy(sentinel, buf, sizeof buf);
    if (call_ok(s, s->right, s->big, arg, sizeof arg, &f)) return 1;
    snprintf(limit, sizeof limit, "result of %u bytes does not fit the buffer of 10 bytes", n);
    EXPECT_ERR(s, "am_rpc_future_get", am_rpc_future_get(f, buf, 10, &got), AM_ERR_TOO_LARGE,
               limit);
    REQUIRE(s, got == n && memcmp(buf, sentinel, sizeof buf) == 0);
    got = 0;
    EXPECT_ERR(s, "am_rpc_future_get", am_rpc_future_get(f, NULL, 0, &got), AM_ERR_TOO_LARGE,
               "1000 bytes");
    REQUIRE(s, got == n);
    EXPECT_ERR(s, "am_rpc_future_get", am_rpc_future_get(f, buf, n - 1, NULL), AM_ERR_TOO_LARGE,
               "999");
    REQUIRE(s, memcmp(buf, sentinel, sizeof buf) == 0);
    got = 0;
    REQUIRE_OK(s, am_rpc_future_get(f, buf, n, &got));
    REQUIRE(s, got == n && first_wrong(buf, s->rank, n, 0) == n);
    memset(buf, 0, sizeof buf);
    REQUIRE_OK(s, am_rpc_future_get(f, buf, sizeof buf, &got)); /* kept until freed */
    REQUIRE(s, got == n && first_wrong(buf, s->rank, n, 0) == n);
    am_rpc_future_free(f);
    /* An empty result fits any buffer, even none. */
    put_u32(arg, 0);
    if (call_ok(s, s->right, s->big, arg, sizeof arg, &f)) return 1;
    return finish_empty(s, f, NULL);
}

/* Bad ids, ranks, sizes and pointers: refused with the documented status, nothing sent; the
 * calls around them complete. */
static int scenario_bad_id(rank_state* s) {
    am_rpc_t id = 0;
    am_rpc_future_t* f = (am_rpc_future_t*)&id; /* must be reset to NULL by a failing call */
    char range[64], limit[96], which[96];
    EXPECT_ERR(s, "am_rpc_register", am_rpc_register(s->ctx, NULL, s, &id), AM_ERR_INVALID_ARGUMENT,
               "null function");
    REQUIRE(s, id == AM_RPC_INVALID);
    EXPECT_ERR(s, "am_rpc_register", am_rpc_register(s->ctx, echo_fn, s, NULL),
               AM_ERR_INVALID_ARGUMENT, "null id pointer");
    if (register_all(s)) return 1; /* the failed registrations left the tables alike */

    snprintf(which, sizeof which, "remote function %u is not registered", (unsigned)s->probe);
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, s->probe, NULL, 0, &f),
               AM_ERR_BAD_HANDLER, which); /* a plain handler is not a remote function */
    REQUIRE(s, f == NULL);
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, 999, NULL, 0, &f),
               AM_ERR_BAD_HANDLER, "remote function 999 is not registered");
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, AM_RPC_INVALID, NULL, 0, &f),
               AM_ERR_BAD_HANDLER, "not registered");
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, 0, NULL, 0, &f), AM_ERR_BAD_HANDLER,
               "handler 0 is not registered"); /* the library's own handlers */
    EXPECT_ERR(s, "am_rpc_call_ff", am_rpc_call_ff(s->ctx, s->right, 999, NULL, 0),
               AM_ERR_BAD_HANDLER, "not registered");

    snprintf(range, sizeof range, "out of range [0, %d)", s->size);
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->size, s->who, NULL, 0, &f), AM_ERR_BAD_RANK,
               range);
    REQUIRE(s, f == NULL);
    EXPECT_ERR(s, "am_rpc_call_ff", am_rpc_call_ff(s->ctx, -1, s->ff, NULL, 0), AM_ERR_BAD_RANK,
               range);

    unsigned char* huge = calloc(s->max_bytes + 1, 1);
    REQUIRE(s, huge != NULL);
    snprintf(limit, sizeof limit, "arguments of %zu bytes exceed am_rpc_max_bytes() = %zu",
             s->max_bytes + 1, s->max_bytes);
    REQUIRE(s, s->max_bytes > 0 && s->max_bytes < am_max_medium(s->ctx));
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, s->echo, huge, s->max_bytes + 1, &f),
               AM_ERR_TOO_LARGE, limit);
    EXPECT_ERR(s, "am_rpc_call_ff", am_rpc_call_ff(s->ctx, s->right, s->ff, huge, (size_t)-1),
               AM_ERR_TOO_LARGE, "am_rpc_max_bytes()");
    free(huge);

    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, s->echo, NULL, 3, &f),
               AM_ERR_INVALID_ARGUMENT, "null argument pointer");
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, s->echo, NULL, 0, NULL),
               AM_ERR_INVALID_ARGUMENT, "null future pointer");
    REQUIRE(s, am_rpc_call(NULL, 0, s->echo, NULL, 0, &f) == AM_ERR_INVALID_ARGUMENT && f == NULL);
    REQUIRE(s, am_rpc_call_ff(NULL, 0, s->echo, NULL, 0) == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_rpc_register(NULL, echo_fn, s, &id) == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_rpc_reply_set(NULL, NULL, 0) == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_rpc_reply_error(NULL, "x") == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_rpc_future_wait(NULL) == AM_ERR_INVALID_ARGUMENT);
    int ready = 3;
    REQUIRE(s, am_rpc_future_test(NULL, &ready) == AM_ERR_INVALID_ARGUMENT);
    size_t got = 3;
    REQUIRE(s, am_rpc_future_get(NULL, NULL, 0, &got) == AM_ERR_INVALID_ARGUMENT && got == 0);
    REQUIRE(s, am_rpc_max_bytes(NULL) == 0);
    am_rpc_future_free(NULL);

    /* Registered but not yet enabled by a barrier. */
    am_rpc_t late = AM_RPC_INVALID;
    REQUIRE_OK(s, am_rpc_register(s->ctx, who_fn, s, &late));
    REQUIRE(s, late == s->limited + 1);
    EXPECT_ERR(s, "am_rpc_call", am_rpc_call(s->ctx, s->right, late, NULL, 0, &f),
               AM_ERR_BAD_HANDLER, "not yet enabled", "am_barrier()");
    REQUIRE_OK(s, am_barrier(s->ctx));
    if (call_ok(s, s->right, late, NULL, 0, &f)) return 1;
    unsigned char buf[8];
    REQUIRE_OK(s, am_rpc_future_get(f, buf, sizeof buf, &got));
    REQUIRE(s, got == 8 && get_u32(buf) == (uint32_t)s->right);
    am_rpc_future_free(f);
    /* Nothing of the refused calls ran: only the one good call did, here and on the right. */
    REQUIRE_OK(s, am_barrier(s->ctx));
    REQUIRE(s, am_counter_value(&s->served) == 1);
    REQUIRE(s, am_counter_value(&s->ff_seen) == 0);
    return finish(s);
}

/* What remote functions and plain handlers may not do. */
static int scenario_misuse(rank_state* s) {
    if (register_all(s)) return 1;
    am_rpc_future_t* f = NULL;
    unsigned char buf[8];
    size_t got = 0;
    if (call_ok(s, s->right, s->misuse, NULL, 0, &f)) return 1;
    REQUIRE_OK(s, am_rpc_future_get(f, buf, sizeof buf, &got));
    REQUIRE(s, got == 2 && memcmp(buf, "ok", 2) == 0);
    am_rpc_future_free(f);
    /* A future that cannot be ready until this rank releases it, looked at by a plain handler
     * of this rank. */
    unsigned char arg[4];
    put_u32(arg, 1);
    if (call_ok(s, s->right, s->wait, arg, sizeof arg, &s->pending)) return 1;
    REQUIRE_OK(s, am_request_short(s->ctx, s->rank, s->probe, NULL, 0));
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->checks, 2)); /* the right's misuse_fn, the probe */
    REQUIRE_OK(s, am_rpc_call_ff(s->ctx, s->right, s->release_fn, NULL, 0));
    REQUIRE_OK(s, am_rpc_future_get(s->pending, buf, sizeof buf, &got));
    REQUIRE(s, got == 4 && get_u32(buf) == 1);
    am_rpc_future_free(s->pending);
    s->pending = NULL;
    return finish(s);
}

/* Futures freed before their result arrives: the calls still run, once each, and nothing
 * breaks when the results come back. Among them one blocked until a later call. */
static int scenario_free_unwaited(rank_state* s) {
    if (register_all(s)) return 1;
    unsigned char args[32], arg[4];
    for (unsigned i = 0; i < IN_FLIGHT; ++i) {
        am_rpc_future_t* f = NULL;
        fill(args, s->rank, sizeof args);
        if (call_ok(s, s->right, s->echo, args, sizeof args, &f)) return 1;
        am_rpc_future_free(f);
    }
    am_rpc_future_t* w = NULL;
    put_u32(arg, 1);
    if (call_ok(s, s->right, s->wait, arg, sizeof arg, &w)) return 1;
    am_rpc_future_free(w); /* its function is blocked on the right */
    REQUIRE_OK(s, am_rpc_call_ff(s->ctx, s->right, s->release_fn, NULL, 0));
    /* This rank serves as many from the left: all ran, none twice. */
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->served, IN_FLIGHT + 2));
    /* A later call is unaffected, and completes after the dropped results were handled. */
    am_rpc_future_t* f = NULL;
    unsigned char buf[8];
    size_t got = 0;
    if (call_ok(s, s->right, s->who, NULL, 0, &f)) return 1;
    REQUIRE_OK(s, am_rpc_future_get(f, buf, sizeof buf, &got));
    REQUIRE(s, got == 8 && get_u32(buf + 4) == (uint32_t)s->rank);
    am_rpc_future_free(f);
    REQUIRE_OK(s, am_barrier(s->ctx));
    REQUIRE(s, am_counter_value(&s->served) == IN_FLIGHT + 3);
    return finish(s);
}

/* With AM_OAM_MAX_THREADS=1 a second remote function that would block while one is blocked
 * on its rank gets AM_ERR_TOO_LARGE naming the limit from its blocking call, at once. */
static int scenario_limit(rank_state* s) {
    const char* limit = getenv("AM_OAM_MAX_THREADS");
    if (limit == NULL || strcmp(limit, "1") != 0) {
        fprintf(stderr, "rpc_test: limit: skipped (needs AM_OAM_MAX_THREADS=1)\n");
        return 0;
    }
    if (register_all(s)) return 1;
    am_rpc_future_t *first = NULL, *second = NULL;
    unsigned char arg[4];
    size_t got = 1;
    put_u32(arg, 1);
    if (call_ok(s, s->right, s->limited, arg, sizeof arg, &first)) return 1;
    if (call_ok(s, s->right, s->limited, arg, sizeof arg, &second)) return 1;
    /* Refused on the right while the first one waits there; it has not been released. */
    EXPECT_ERR(s, "am_rpc_future_get", am_rpc_future_get(second, NULL, 0, &got), AM_ERR_REMOTE,
               "failed: am_counter_wait: rank ", "over the limit", "AM_OAM_MAX_THREADS");
    REQUIRE(s, got == 0);
    int ready = 1;
    REQUIRE_OK(s, am_rpc_future_test(first, &ready));
    REQUIRE(s, ready == 0);
    REQUIRE_OK(s, am_rpc_call_ff(s->ctx, s->right, s->release_fn, NULL, 0));
    return finish_empty(s, first, second);
}

/* A fire-and-forget call whose function fails brings the job down: there is nobody to tell.
 * Every rank's wait returns AM_ERR_ABORTED naming the function, its rank and the message. */
static int scenario_ff_error(rank_state* s) {
    if (register_all(s)) return 1;
    if (s->rank == 0) {
        /* With one rank the function runs in this call's own poll. */
        const am_status_t st = am_rpc_call_ff(s->ctx, s->right, s->fail, NULL, 0);
        REQUIRE(s, st == AM_OK || st == AM_ERR_ABORTED);
    }
    am_counter_t never = AM_COUNTER_INIT;
    char msg[128];
    snprintf(msg, sizeof msg,
             "on rank %d (called by rank 0 with am_rpc_call_ff) failed: deliberate failure on "
             "rank %d",
             s->size > 1 ? 1 : 0, s->size > 1 ? 1 : 0);
    EXPECT_ERR(s, "am_counter_wait", am_counter_wait(s->ctx, &never, 1), AM_ERR_ABORTED,
               "C remote function ", msg);
    return 0;
}

/* ------------------------------------------------------------------------------ main */

static const char* const names[] = {"call",         "ff",      "nested", "remote_error",
                                    "small_buffer", "bad_id",  "misuse", "free_unwaited",
                                    "limit",        "ff_error"};
static int (*const runs[])(rank_state*) = {
    scenario_call,         scenario_ff,      scenario_nested, scenario_remote_error,
    scenario_small_buffer, scenario_bad_id,  scenario_misuse, scenario_free_unwaited,
    scenario_limit,        scenario_ff_error};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    s.max_bytes = am_rpc_max_bytes(ctx);
    check_end(ctx, names[sc], runs[sc](&s) != 0 || s.bad != 0);
}

int main(int argc, char** argv) {
    return check_main_expecting(argc, argv, "rpc_test", names, sizeof names / sizeof names[0],
                                rank_main, "ff_error");
}
