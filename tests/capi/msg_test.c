/* SPDX-License-Identifier: MIT */
/*
 * Tagged send and receive from C (am/am_msg.h). `msg_test <scenario>` runs one scenario on
 * every rank through am_run (transport and rank count from AM_TRANSPORT / AM_RANKS) and exits
 * non-zero when any check fails on any rank: a failing rank prints "msg_test: FAILED ..." and
 * calls am_abort. AM_CAPI_VERBOSE=1 prints each error message that was checked.
 *
 * Every rank sends to its right neighbour and receives from its left (itself with one rank).
 * Sizes cover the three wire forms: up to 24 bytes in a short message, up to AM_EAGER_BYTES
 * in a medium one, and larger by request-to-send / ready / data.
 */
#include <am/am.h>
#include <am/am_msg.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BIG 100003u /* a rendezvous message: several medium chunks, an odd tail */

typedef struct rank_state {
    CHECK_RANK_FIELDS;
    unsigned bad;
    /* the handler part of sendrecv */
    am_handler_t h_post;
    am_msg_request_t* h_send; /* the handler's isend back to its requester */
    am_msg_request_t* h_recv; /* the handler's irecv from its requester */
    unsigned char h_buf[32];
    unsigned char h_out[16]; /* the handler's isend data: lives until its request completes */
    am_counter_t handled;
} rank_state;

static unsigned char pattern(int source, size_t len, size_t i) {
    return (unsigned char)((size_t)source * 131u + len * 3u + i * 7u);
}

static void fill(unsigned char* p, int source, size_t len) {
    for (size_t i = 0; i < len; ++i) p[i] = pattern(source, len, i);
}

static int intact(const unsigned char* p, int source, size_t len) {
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != pattern(source, len, i)) return 0;
    }
    return 1;
}

static int status_is(const am_msg_status_t* st, int source, int tag, size_t bytes) {
    return st->source == source && st->tag == tag && st->bytes == bytes;
}

/* ---------------------------------------------------------------------------- sendrecv */

/* Runs on the right neighbour of its requester: answers with an isend (eager by default; its
 * data outlives the handler, as a three-phase send reads it later), posts a receive for a
 * message the requester sends later, and checks that the blocking calls are refused here. */
static void post_in_handler(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_state* s = user;
    (void)args, (void)nargs;
    am_context_t* ctx = am_token_context(t);
    const int from = am_token_source(t);
    unsigned char hello[4] = {1, 2, 3, 4};
    fill(s->h_out, s->rank, sizeof s->h_out);
    CHECK(s, am_msg_send_nb(ctx, from, 77, s->h_out, sizeof s->h_out, &s->h_send) == AM_OK);
    CHECK(s, am_msg_recv_nb(ctx, from, 99, s->h_buf, sizeof s->h_buf, &s->h_recv) == AM_OK);
    EXPECT_ERR(s, "am_msg_wait", am_msg_wait(s->h_recv, NULL), AM_ERR_BAD_CONTEXT, "handler");
    EXPECT_ERR(s, "am_msg_send", am_msg_send(ctx, from, 5, hello, 4), AM_ERR_BAD_CONTEXT,
               "handler");
    EXPECT_ERR(s, "am_msg_recv", am_msg_recv(ctx, from, 5, hello, 4, NULL), AM_ERR_BAD_CONTEXT,
               "handler");
    am_counter_add(&s->handled, 1);
}

/* Blocking send and receive of every size class, with status. */
static int sizes(rank_state* s, unsigned char* out, unsigned char* in) {
    static const size_t lens[] = {0, 5, 24, 25, 1000, 8192, 8193, BIG};
    const size_t nlens = sizeof lens / sizeof lens[0];
    am_msg_status_t st;
    for (size_t i = 0; i < nlens; ++i) {
        const size_t len = lens[i];
        const int tag = (int)i + 1;
        am_msg_request_t* r = NULL;
        fill(out, s->rank, len);
        memset(in, 0, BIG);
        /* Posted first, so the large send to the right (which waits for its receive) cannot
         * deadlock the ring. */
        REQUIRE_OK(s, am_msg_recv_nb(s->ctx, s->left, tag, len ? in : NULL, len, &r));
        REQUIRE_OK(s, am_msg_send(s->ctx, s->right, tag, len ? out : NULL, len));
        memset(out, 0, len); /* reusable once am_msg_send returned */
        const am_status_t w = am_msg_wait(r, &st);
        am_msg_free(r);
        REQUIRE_OK(s, w);
        REQUIRE(s, status_is(&st, s->left, tag, len) && intact(in, s->left, len));
        /* and the other way round: isend, blocking receive (any source) */
        fill(out, s->rank, len);
        REQUIRE_OK(s, am_msg_send_nb(s->ctx, s->right, 100 + tag, out, len, &r));
        REQUIRE_OK(s, am_msg_recv(s->ctx, AM_MSG_ANY_SOURCE, 100 + tag, in, BIG, &st));
        REQUIRE(s, status_is(&st, s->left, 100 + tag, len) && intact(in, s->left, len));
        const am_status_t ws = am_msg_wait(r, &st);
        am_msg_free(r);
        REQUIRE_OK(s, ws);
        REQUIRE(s, status_is(&st, s->right, 100 + tag, len));
    }
    return 0;
}

/* Non-overtaking: messages from one source with one tag are received in the order sent,
 * whatever their sizes (a large one first, then small ones that arrive before its data). */
static int order(rank_state* s, unsigned char* out, unsigned char* in) {
    am_msg_request_t* big = NULL;
    am_msg_status_t st;
    fill(out, s->rank, BIG);
    REQUIRE_OK(s, am_msg_send_nb(s->ctx, s->right, 7, out, BIG, &big));
    for (uint64_t v = 1; v <= 3; ++v) REQUIRE_OK(s, am_msg_send(s->ctx, s->right, 7, &v, sizeof v));
    REQUIRE_OK(s, am_msg_recv(s->ctx, s->left, AM_MSG_ANY_TAG, in, BIG, &st));
    REQUIRE(s, status_is(&st, s->left, 7, BIG) && intact(in, s->left, BIG));
    for (uint64_t v = 1; v <= 3; ++v) {
        uint64_t got = 0;
        REQUIRE_OK(s, am_msg_recv(s->ctx, s->left, 7, &got, sizeof got, &st));
        REQUIRE(s, got == v && status_is(&st, s->left, 7, sizeof got));
    }
    REQUIRE_OK(s, am_msg_wait(big, NULL));
    am_msg_free(big);

    /* An eager isend is complete at once; a test loop completes a receive. */
    am_msg_request_t *r = NULL, *sr = NULL;
    int done = 0;
    uint32_t word = 0xC0FFEEu + (uint32_t)s->rank, got = 0;
    REQUIRE_OK(s, am_msg_recv_nb(s->ctx, AM_MSG_ANY_SOURCE, 8, &got, sizeof got, &r));
    REQUIRE_OK(s, am_msg_send_nb(s->ctx, s->right, 8, &word, sizeof word, &sr));
    REQUIRE_OK(s, am_msg_test(sr, &done, &st));
    REQUIRE(s, done == 1 && status_is(&st, s->right, 8, sizeof word));
    am_msg_free(sr);
    for (done = 0; !done;) REQUIRE_OK(s, am_msg_test(r, &done, &st));
    REQUIRE(s, status_is(&st, s->left, 8, sizeof got) && got == 0xC0FFEEu + (uint32_t)s->left);
    REQUIRE_OK(s, am_msg_test(r, &done, NULL)); /* over: the same answer again */
    REQUIRE(s, done == 1);
    am_msg_free(r);
    return 0;
}

static int scenario_sendrecv(rank_state* s) {
    REQUIRE_OK(s, am_register_short(s->ctx, post_in_handler, 0, s, &s->h_post));
    REQUIRE_OK(s, am_barrier(s->ctx));
    unsigned char* out = malloc(BIG);
    unsigned char* in = malloc(BIG);
    REQUIRE(s, out != NULL && in != NULL);
    const int failed = sizes(s, out, in) || order(s, out, in);
    free(out);
    free(in);
    if (failed) return 1;

    /* From a handler: the right neighbour's handler isends tag 77 here and posts a receive of
     * tag 99 from here, which this rank then sends. */
    am_msg_status_t st;
    unsigned char hello[16], note[32];
    REQUIRE_OK(s, am_request_short(s->ctx, s->right, s->h_post, NULL, 0));
    REQUIRE_OK(s, am_msg_recv(s->ctx, s->right, 77, hello, sizeof hello, &st));
    REQUIRE(s, status_is(&st, s->right, 77, sizeof hello) && intact(hello, s->right, 16));
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->handled, 1)); /* the left's request ran here */
    fill(note, s->rank, sizeof note);
    REQUIRE_OK(s, am_msg_send(s->ctx, s->right, 99, note, sizeof note));
    REQUIRE_OK(s, am_msg_wait(s->h_recv, &st));
    REQUIRE(s, status_is(&st, s->left, 99, sizeof note) && intact(s->h_buf, s->left, 32));
    REQUIRE_OK(s, am_msg_wait(s->h_send, &st));
    REQUIRE(s, status_is(&st, s->left, 77, 16));
    am_msg_free(s->h_send);
    am_msg_free(s->h_recv);
    return s->bad != 0;
}

/* ------------------------------------------------------------------------------ errors */

/* Argument errors, and too small a buffer: the receive fails naming both sizes, and the
 * message is still delivered, whole, to the next receive that fits. */
static int scenario_errors(rank_state* s) {
    unsigned char small[10], mid[1000];
    am_msg_request_t *r = NULL, *r_small = NULL, *r_fit = NULL, *r_gone = NULL;
    am_msg_status_t st;
    int done = 0;
    char bad_rank[64];
    snprintf(bad_rank, sizeof bad_rank, "destination %d out of range [0, %d)", s->size, s->size);
    EXPECT_ERR(s, "am_msg_send", am_msg_send(s->ctx, s->size, 0, small, 1), AM_ERR_BAD_RANK,
               bad_rank);
    EXPECT_ERR(s, "am_msg_send_nb", am_msg_send_nb(s->ctx, -1, 0, small, 1, &r), AM_ERR_BAD_RANK,
               "destination -1");
    REQUIRE(s, r == NULL);
    EXPECT_ERR(s, "am_msg_send", am_msg_send(s->ctx, s->right, -2, small, 1),
               AM_ERR_INVALID_ARGUMENT, "tag -2 is negative");
    EXPECT_ERR(s, "am_msg_recv", am_msg_recv(s->ctx, s->size, 0, small, 1, NULL), AM_ERR_BAD_RANK,
               "and not AM_MSG_ANY_SOURCE");
    EXPECT_ERR(s, "am_msg_recv_nb", am_msg_recv_nb(s->ctx, 0, -5, small, 1, &r),
               AM_ERR_INVALID_ARGUMENT, "tag -5 is negative and not AM_MSG_ANY_TAG");
    EXPECT_ERR(s, "am_msg_send", am_msg_send(s->ctx, s->right, 0, NULL, 4), AM_ERR_INVALID_ARGUMENT,
               "null data pointer");
    EXPECT_ERR(s, "am_msg_recv", am_msg_recv(s->ctx, s->left, 0, NULL, 4, NULL),
               AM_ERR_INVALID_ARGUMENT, "null receive buffer");
    EXPECT_ERR(s, "am_msg_recv_nb", am_msg_recv_nb(s->ctx, s->left, 0, small, 1, NULL),
               AM_ERR_INVALID_ARGUMENT, "null pointer for the request");
    REQUIRE(s, am_msg_send(NULL, 0, 0, NULL, 0) == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_msg_wait(NULL, NULL) == AM_ERR_INVALID_ARGUMENT);
    am_msg_free(NULL);

    /* Posted before the senders start (the barrier): a too small receive of a large message
     * (tag 2), a too small and a fitting receive of a medium one (tag 3), and a receive of tag
     * 4 that is freed unmatched, so it takes nothing. */
    unsigned char* big = malloc(BIG);
    unsigned char* back = malloc(BIG);
    REQUIRE(s, big != NULL && back != NULL);
    REQUIRE_OK(s, am_msg_recv_nb(s->ctx, s->left, 2, mid, sizeof mid, &r));
    REQUIRE_OK(s, am_msg_recv_nb(s->ctx, s->left, 3, small, sizeof small, &r_small));
    REQUIRE_OK(s, am_msg_recv_nb(s->ctx, s->left, 3, mid, sizeof mid, &r_fit));
    REQUIRE_OK(s, am_msg_recv_nb(s->ctx, s->left, 4, small, sizeof small, &r_gone));
    am_msg_free(r_gone);
    REQUIRE_OK(s, am_barrier(s->ctx));

    /* Non-blocking sends, so that none waits for a receive the right posts only later, even
     * when AM_EAGER_BYTES makes them all three-phase. Tag 1 is unexpected when it arrives. */
    static const int tags[4] = {2, 3, 4, 1};
    static const size_t lens[4] = {BIG, 1000, 8, 100};
    unsigned char* data[4] = {big, back, back + 1000, back + 2000};
    am_msg_request_t* sent[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; ++i) {
        fill(data[i], s->rank, lens[i]);
        REQUIRE_OK(s, am_msg_send_nb(s->ctx, s->right, tags[i], data[i], lens[i], &sent[i]));
    }
    unsigned char* into = malloc(BIG);
    REQUIRE(s, into != NULL);

    EXPECT_ERR(s, "am_msg_wait", am_msg_wait(r, &st), AM_ERR_TOO_LARGE, "100003 bytes",
               "receive buffer of 1000 bytes", "stays queued");
    EXPECT_ERR(s, "am_msg_wait", am_msg_wait(r, &st), AM_ERR_TOO_LARGE, "100003 bytes");
    EXPECT_ERR(s, "am_msg_test", am_msg_test(r, &done, &st), AM_ERR_TOO_LARGE, "100003 bytes");
    REQUIRE(s, done == 1);
    am_msg_free(r);
    REQUIRE_OK(s, am_msg_recv(s->ctx, s->left, 2, into, BIG, &st));
    REQUIRE(s, status_is(&st, s->left, 2, BIG) && intact(into, s->left, BIG));

    EXPECT_ERR(s, "am_msg_wait", am_msg_wait(r_small, NULL), AM_ERR_TOO_LARGE,
               "1000 bytes, more than the receive buffer of 10 bytes");
    am_msg_free(r_small);
    REQUIRE_OK(s, am_msg_wait(r_fit, &st));
    REQUIRE(s, status_is(&st, s->left, 3, 1000) && intact(mid, s->left, 1000));
    am_msg_free(r_fit);
    REQUIRE_OK(s, am_msg_recv(s->ctx, s->left, 4, small, sizeof small, &st));
    REQUIRE(s, status_is(&st, s->left, 4, 8));

    /* A blocking receive too small for a queued message fails and leaves it queued. */
    EXPECT_ERR(s, "am_msg_recv", am_msg_recv(s->ctx, s->left, 1, small, sizeof small, &st),
               AM_ERR_TOO_LARGE, "has 100 bytes, more than the receive buffer of 10 bytes");
    REQUIRE_OK(s, am_msg_recv(s->ctx, AM_MSG_ANY_SOURCE, AM_MSG_ANY_TAG, mid, sizeof mid, &st));
    REQUIRE(s, status_is(&st, s->left, 1, 100) && intact(mid, s->left, 100));
    for (int i = 0; i < 4; ++i) {
        REQUIRE_OK(s, am_msg_wait(sent[i], &st));
        REQUIRE(s, status_is(&st, s->right, tags[i], lens[i]));
        am_msg_free(sent[i]);
    }
    free(into);
    free(big);
    free(back);
    return s->bad != 0;
}

/* -------------------------------------------------------------------------------- main */

static const char* const names[] = {"sendrecv", "errors"};
static int (*const runs[])(rank_state*) = {scenario_sendrecv, scenario_errors};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    const int failed = runs[sc](&s) != 0;
    check_end(ctx, names[sc], failed || s.bad != 0);
}

int main(int argc, char** argv) {
    return check_main(argc, argv, "msg_test", names, sizeof names / sizeof names[0], rank_main);
}
