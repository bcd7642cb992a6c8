/* SPDX-License-Identifier: MIT */
/* Over 500 lines on purpose: every C scenario in one program, so one binary runs them all. */
/*
 * The C API, used from C. `capi_test <scenario>` runs one scenario on every rank through
 * am_run (transport and rank count from AM_TRANSPORT / AM_RANKS) and exits non-zero when any
 * check fails on any rank: a failing rank prints "capi_test: FAILED ..." and calls am_abort.
 * `capi_test all` runs every scenario in turn. AM_CAPI_VERBOSE=1 prints each error message
 * that was checked.
 *
 * Every rank sends to its right neighbour and waits for everything it will receive before it
 * returns, so no handler runs after the rank's state (on its stack) is gone.
 */
#include <am/am.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define ROUNDS 100u
#define MAX_CHECKS 16u

/* ------------------------------------------------------------------------ rank state */

typedef struct rank_state {
    am_context_t* ctx;
    int rank, size, left, right;
    am_counter_t requests; /* request handlers run on this rank */
    am_counter_t replies;  /* reply handlers run on this rank */
    am_counter_t sunk;     /* sink handlers run on this rank */
    am_counter_t checks;   /* error checks done inside handlers */
    unsigned bad;          /* failed checks */
    unsigned char* seg;
    size_t seg_bytes;
    size_t max_medium;
    unsigned char* big; /* max_medium + 1 bytes */
    am_handler_t reply_short[AM_MAX_ARGS + 1];
    am_handler_t reply_medium, reply_long;
    am_handler_t ping, pong, sink_medium, sink_long;
} rank_state;

static uint64_t arg_pattern(int source, unsigned i, unsigned nargs) {
    return ((uint64_t)(source + 1) * UINT64_C(0x9E3779B97F4A7C15)) ^ ((uint64_t)i << 48) ^
           (uint64_t)nargs;
}

static unsigned char byte_pattern(int source, size_t i, size_t len) {
    return (unsigned char)((size_t)source * 131u + i * 7u + len);
}

static void fill(unsigned char* p, int source, size_t len) {
    for (size_t i = 0; i < len; ++i) p[i] = byte_pattern(source, i, len);
}

/* Index of the first wrong byte, or len when all are right. */
static size_t first_wrong(const unsigned char* p, int source, size_t len) {
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != byte_pattern(source, i, len)) return i;
    }
    return len;
}

static void common_handler_checks(rank_state* s, am_token_t* t, int want_request, int source) {
    CHECK(s, am_token_context(t) == s->ctx);
    CHECK(s, (am_token_is_request(t) != 0) == (want_request != 0));
    CHECK(s, am_token_source(t) == source);
}

/* ------------------------------------------------------------------ short ping-pong */

static void short_request(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_state* s = user;
    uint64_t echo[AM_MAX_ARGS];
    common_handler_checks(s, t, 1, s->left);
    for (unsigned i = 0; i < nargs; ++i) {
        CHECK(s, args[i] == arg_pattern(s->left, i, nargs));
        echo[i] = ~args[i];
    }
    am_status_t st = am_reply_short(t, s->reply_short[nargs], echo, nargs);
    if (st != AM_OK) FAIL(s, "am_reply_short: %s", am_last_error(s->ctx));
    am_counter_add(&s->requests, 1);
}

static void short_reply(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_state* s = user;
    common_handler_checks(s, t, 0, s->right);
    for (unsigned i = 0; i < nargs; ++i) CHECK(s, args[i] == ~arg_pattern(s->rank, i, nargs));
    am_counter_add(&s->replies, 1);
}

static int scenario_short(rank_state* s) {
    static const unsigned counts[] = {0, 1, AM_MAX_ARGS};
    am_handler_t req[3];
    for (unsigned k = 0; k < 3; ++k) {
        REQUIRE_OK(s, am_register_short(s->ctx, short_request, counts[k], s, &req[k]));
        REQUIRE_OK(
            s, am_register_short(s->ctx, short_reply, counts[k], s, &s->reply_short[counts[k]]));
    }
    REQUIRE_OK(s, am_barrier(s->ctx));
    uint64_t sent = 0;
    for (unsigned k = 0; k < 3; ++k) {
        uint64_t args[AM_MAX_ARGS];
        for (unsigned i = 0; i < counts[k]; ++i) args[i] = arg_pattern(s->rank, i, counts[k]);
        for (unsigned r = 0; r < ROUNDS; ++r) {
            REQUIRE_OK(
                s, am_request_short(s->ctx, s->right, req[k], counts[k] ? args : NULL, counts[k]));
            REQUIRE_OK(s, am_counter_wait(s->ctx, &s->replies, ++sent));
        }
    }
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->requests, sent));
    REQUIRE(s, am_counter_value(&s->replies) == 3 * ROUNDS);
    return 0;
}

/* ------------------------------------------------------------------- medium echo */

/* What both medium handlers check: the token (a message from `from`), the one argument (the
 * length) and the payload (the pattern of rank `owner`). */
static void check_medium(rank_state* s, am_token_t* t, int is_request, int from, int owner,
                         const void* payload, size_t len, const uint64_t* args, unsigned nargs) {
    common_handler_checks(s, t, is_request, from);
    CHECK(s, nargs == 1 && args[0] == len);
    size_t bad_at = first_wrong(payload, owner, len);
    if (bad_at != len) {
        FAIL(s, "medium %s of %zu bytes: byte %zu wrong", is_request ? "request" : "reply", len,
             bad_at);
    }
}

static void medium_request(am_token_t* t, const void* payload, size_t len, const uint64_t* args,
                           unsigned nargs, void* user) {
    rank_state* s = user;
    check_medium(s, t, 1, s->left, s->left, payload, len, args, nargs);
    /* Echo the payload: it is valid during the handler, and the reply copies it. */
    am_status_t st = am_reply_medium(t, s->reply_medium, payload, len, args, 1);
    if (st != AM_OK) FAIL(s, "am_reply_medium: %s", am_last_error(s->ctx));
    am_counter_add(&s->requests, 1);
}

static void medium_reply(am_token_t* t, const void* payload, size_t len, const uint64_t* args,
                         unsigned nargs, void* user) {
    rank_state* s = user;
    check_medium(s, t, 0, s->right, s->rank, payload, len, args, nargs);
    am_counter_add(&s->replies, 1);
}

static int scenario_medium(rank_state* s) {
    const size_t sizes[] = {0, 1, 7, 100, 4096, s->max_medium - 1, s->max_medium};
    am_handler_t req;
    REQUIRE_OK(s, am_register_medium(s->ctx, medium_request, 1, s, &req));
    REQUIRE_OK(s, am_register_medium(s->ctx, medium_reply, 1, s, &s->reply_medium));
    REQUIRE_OK(s, am_barrier(s->ctx));
    uint64_t sent = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const size_t len = sizes[k];
        if (len > s->max_medium) continue;
        for (unsigned r = 0; r < 3; ++r) {
            fill(s->big, s->rank, len);
            const uint64_t arg = len;
            REQUIRE_OK(s,
                       am_request_medium(s->ctx, s->right, req, len ? s->big : NULL, len, &arg, 1));
            memset(s->big, 0xee, len); /* the payload was copied: reusing it is harmless */
            REQUIRE_OK(s, am_counter_wait(s->ctx, &s->replies, ++sent));
        }
    }
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->requests, sent));
    return 0;
}

/* --------------------------------------------------------------- long into segment */

#define REQUEST_OFFSET ((size_t)4099) /* deliberately unaligned */
static size_t reply_offset(const rank_state* s) {
    return s->seg_bytes / 2 + 13;
}

static void long_request(am_token_t* t, void* data, size_t len, const uint64_t* args,
                         unsigned nargs, void* user) {
    rank_state* s = user;
    common_handler_checks(s, t, 1, s->left);
    CHECK(s, nargs == 1 && args[0] == len);
    CHECK(s, (unsigned char*)data == s->seg + REQUEST_OFFSET);
    size_t bad_at = first_wrong(data, s->left, len);
    if (bad_at != len) FAIL(s, "long request of %zu bytes: byte %zu wrong", len, bad_at);
    /* Echo it from this segment into the requester's, at the reply offset. */
    am_status_t st = am_reply_long(t, s->reply_long, data, len, reply_offset(s), args, 1);
    if (st != AM_OK) FAIL(s, "am_reply_long: %s", am_last_error(s->ctx));
    am_counter_add(&s->requests, 1);
}

static void long_reply(am_token_t* t, void* data, size_t len, const uint64_t* args, unsigned nargs,
                       void* user) {
    rank_state* s = user;
    common_handler_checks(s, t, 0, s->right);
    CHECK(s, nargs == 1 && args[0] == len);
    CHECK(s, (unsigned char*)data == s->seg + reply_offset(s));
    size_t bad_at = first_wrong(data, s->rank, len);
    if (bad_at != len) FAIL(s, "long reply of %zu bytes: byte %zu wrong", len, bad_at);
    am_counter_add(&s->replies, 1);
}

static int scenario_long(rank_state* s) {
    const size_t sizes[] = {0, 1, 4097, (size_t)1 << 20};
    am_handler_t req;
    REQUIRE_OK(s, am_register_long(s->ctx, long_request, 1, s, &req));
    REQUIRE_OK(s, am_register_long(s->ctx, long_reply, 1, s, &s->reply_long));
    REQUIRE_OK(s, am_barrier(s->ctx));
    unsigned char* src = malloc(sizes[3]);
    REQUIRE(s, src != NULL);
    uint64_t sent = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const size_t len = sizes[k];
        if (REQUEST_OFFSET + len > s->seg_bytes / 2) continue; /* a small AM_SEGMENT_BYTES */
        for (unsigned r = 0; r < 2; ++r) {
            fill(src, s->rank, len);
            const uint64_t arg = len;
            REQUIRE_OK(s,
                       am_request_long(s->ctx, s->right, req, src, len, REQUEST_OFFSET, &arg, 1));
            memset(src, 0xee, len); /* the source may be reused once the call returns */
            REQUIRE_OK(s, am_counter_wait(s->ctx, &s->replies, ++sent));
            /* The reply's data is in this rank's segment, where the rank itself can read it. */
            REQUIRE(s, first_wrong(s->seg + reply_offset(s), s->rank, len) == len);
        }
    }
    free(src);
    REQUIRE(s, sent >= 6);
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->requests, sent));
    return 0;
}

/* ------------------------------------------------------------------- error paths */

/* What the request handler of `ping` does besides replying once. */
enum ping_mode {
    PLAIN = 0,
    REPLY_TOO_MANY_ARGS = 1,
    SECOND_REPLY = 2,
    REPLY_MEDIUM_TOO_LARGE = 3,
    REPLY_LONG_OUTSIDE = 4,
    REPLY_BAD_HANDLER = 5,
    MISUSE_IN_REPLY_HANDLER = 6
};

static void ping_handler(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_state* s = user;
    uint64_t many[AM_MAX_ARGS + 1] = {0};
    char limit[64];
    common_handler_checks(s, t, 1, s->left);
    CHECK(s, nargs == 1);
    switch ((enum ping_mode)args[0]) {
        case REPLY_TOO_MANY_ARGS:
            EXPECT_ERR(s, "am_reply_short", am_reply_short(t, s->pong, many, AM_MAX_ARGS + 1),
                       AM_ERR_TOO_LARGE, "17 arguments exceed the limit of 16");
            break;
        case REPLY_MEDIUM_TOO_LARGE:
            snprintf(limit, sizeof limit, "am_max_medium() = %zu", s->max_medium);
            EXPECT_ERR(s, "am_reply_medium",
                       am_reply_medium(t, s->sink_medium, s->big, s->max_medium + 1, NULL, 0),
                       AM_ERR_TOO_LARGE, limit);
            break;
        case REPLY_LONG_OUTSIDE:
            snprintf(limit, sizeof limit, "segment of %zu bytes", s->seg_bytes);
            EXPECT_ERR(s, "am_reply_long",
                       am_reply_long(t, s->sink_long, s->big, 2, s->seg_bytes - 1, NULL, 0),
                       AM_ERR_OUT_OF_SEGMENT, limit);
            break;
        case REPLY_BAD_HANDLER:
            EXPECT_ERR(s, "am_reply_short", am_reply_short(t, 999, args, 1), AM_ERR_BAD_HANDLER,
                       "handler 999 is not registered");
            EXPECT_ERR(s, "am_reply_short", am_reply_short(t, 3, args, 1), AM_ERR_BAD_HANDLER,
                       "handler 3 is not registered");
            break;
        default:
            break;
    }
    if (args[0] != PLAIN && args[0] != SECOND_REPLY && args[0] != MISUSE_IN_REPLY_HANDLER) {
        am_counter_add(&s->checks, 1);
    }
    am_status_t st = am_reply_short(t, s->pong, args, 1);
    if (st != AM_OK) FAIL(s, "am_reply_short: %s", am_last_error(s->ctx));
    if (args[0] == SECOND_REPLY) {
        EXPECT_ERR(s, "am_reply_short", am_reply_short(t, s->pong, args, 1), AM_ERR_BAD_REPLY,
                   "second reply", "at most one reply per request");
        am_counter_add(&s->checks, 1);
    }
    am_counter_add(&s->requests, 1);
}

/* A reply handler may not reply, send requests, wait, barrier or register. */
static void misuse_in_reply_handler(rank_state* s, am_token_t* t, const uint64_t* args) {
    am_handler_t h = 0;
    size_t handled = 1;
    EXPECT_ERR(s, "am_reply_short", am_reply_short(t, s->pong, args, 1), AM_ERR_BAD_REPLY,
               "reply handler");
    EXPECT_ERR(s, "am_request_short", am_request_short(s->ctx, s->right, s->ping, args, 1),
               AM_ERR_BAD_CONTEXT, "reply handler");
    EXPECT_ERR(s, "am_counter_wait", am_counter_wait(s->ctx, &s->replies, 0), AM_ERR_BAD_CONTEXT,
               "from a handler");
    EXPECT_ERR(s, "am_barrier", am_barrier(s->ctx), AM_ERR_BAD_CONTEXT, "from a handler");
    EXPECT_ERR(s, "am_register_short", am_register_short(s->ctx, short_reply, 0, s, &h),
               AM_ERR_BAD_CONTEXT, "from a handler");
    CHECK(s, h == AM_HANDLER_INVALID);
    CHECK(s, am_poll(s->ctx, &handled) == AM_OK && handled == 0); /* handlers do not nest */
    am_counter_add(&s->checks, 1);
}

static void pong_handler(am_token_t* t, const uint64_t* args, unsigned nargs, void* user) {
    rank_state* s = user;
    common_handler_checks(s, t, 0, s->right);
    CHECK(s, nargs == 1);
    if (args[0] == MISUSE_IN_REPLY_HANDLER) misuse_in_reply_handler(s, t, args);
    am_counter_add(&s->replies, 1);
}

static void sink_medium(am_token_t* t, const void* payload, size_t len, const uint64_t* args,
                        unsigned nargs, void* user) {
    rank_state* s = user;
    (void)payload, (void)len, (void)args, (void)nargs;
    common_handler_checks(s, t, 1, s->left);
    am_counter_add(&s->sunk, 1);
}

static void sink_long(am_token_t* t, void* data, size_t len, const uint64_t* args, unsigned nargs,
                      void* user) {
    rank_state* s = user;
    (void)args, (void)nargs;
    common_handler_checks(s, t, 1, s->left);
    CHECK(s, (unsigned char*)data >= s->seg && (unsigned char*)data + len <= s->seg + s->seg_bytes);
    am_counter_add(&s->sunk, 1);
}

static int setup_errors(rank_state* s) {
    REQUIRE_OK(s, am_register_short(s->ctx, ping_handler, 1, s, &s->ping));
    REQUIRE_OK(s, am_register_short(s->ctx, pong_handler, 1, s, &s->pong));
    REQUIRE_OK(s, am_register_medium(s->ctx, sink_medium, 0, s, &s->sink_medium));
    REQUIRE_OK(s, am_register_long(s->ctx, sink_long, 0, s, &s->sink_long));
    REQUIRE_OK(s, am_barrier(s->ctx));
    return 0;
}

static int ping(rank_state* s, enum ping_mode mode) {
    const uint64_t arg = (uint64_t)mode;
    REQUIRE_OK(s, am_request_short(s->ctx, s->right, s->ping, &arg, 1));
    return 0;
}

/* Every ping is answered, every sink message handled, every handler check done: nothing sent
 * before (or after) a failing call was lost. */
static int expect_delivered(rank_state* s, uint64_t pings, uint64_t sunk, uint64_t checks) {
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->replies, pings));
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->requests, pings));
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->sunk, sunk));
    REQUIRE_OK(s, am_counter_wait(s->ctx, &s->checks, checks));
    REQUIRE(s, am_counter_value(&s->replies) == pings);
    REQUIRE(s, am_counter_value(&s->sunk) == sunk);
    return 0;
}

static int scenario_bad_rank(rank_state* s) {
    if (setup_errors(s)) return 1;
    const uint64_t arg = PLAIN;
    char dest[64], range[64];
    snprintf(range, sizeof range, "out of range [0, %d)", s->size);
    for (int i = 0; i < 3; ++i) {
        if (ping(s, PLAIN)) return 1;
    }
    snprintf(dest, sizeof dest, "destination %d ", s->size);
    EXPECT_ERR(s, "am_request_short", am_request_short(s->ctx, s->size, s->ping, &arg, 1),
               AM_ERR_BAD_RANK, dest, range);
    EXPECT_ERR(s, "am_request_short", am_request_short(s->ctx, -1, s->ping, &arg, 1),
               AM_ERR_BAD_RANK, "destination -1 ", range);
    EXPECT_ERR(s, "am_request_medium",
               am_request_medium(s->ctx, s->size, s->sink_medium, "x", 1, NULL, 0), AM_ERR_BAD_RANK,
               dest, range);
    snprintf(dest, sizeof dest, "destination %d ", s->size + 3);
    EXPECT_ERR(s, "am_request_long",
               am_request_long(s->ctx, s->size + 3, s->sink_long, "x", 1, 0, NULL, 0),
               AM_ERR_BAD_RANK, dest, range);
    if (ping(s, PLAIN)) return 1;
    return expect_delivered(s, 4, 0, 0);
}

static int scenario_too_many_args(rank_state* s) {
    uint64_t many[AM_MAX_ARGS + 1] = {0};
    am_handler_t h = 0;
    const char* limit = "17 arguments exceed the limit of 16";
    EXPECT_ERR(s, "am_register_short", am_register_short(s->ctx, short_reply, 17, s, &h),
               AM_ERR_TOO_LARGE, limit);
    REQUIRE(s, h == AM_HANDLER_INVALID);
    EXPECT_ERR(s, "am_register_medium", am_register_medium(s->ctx, sink_medium, 17, s, &h),
               AM_ERR_TOO_LARGE, limit);
    EXPECT_ERR(s, "am_register_long", am_register_long(s->ctx, sink_long, 17, s, &h),
               AM_ERR_TOO_LARGE, limit);
    if (setup_errors(s)) return 1; /* the failed registrations left the tables alike */
    if (ping(s, PLAIN) || ping(s, PLAIN)) return 1;
    EXPECT_ERR(s, "am_request_short",
               am_request_short(s->ctx, s->right, s->ping, many, AM_MAX_ARGS + 1), AM_ERR_TOO_LARGE,
               limit);
    /* The exact wording promised by the documentation. */
    char exact[128];
    snprintf(exact, sizeof exact, "am_request_short: rank %d: %s", s->rank, limit);
    REQUIRE(s, strcmp(am_last_error(s->ctx), exact) == 0);
    EXPECT_ERR(s, "am_request_medium",
               am_request_medium(s->ctx, s->right, s->sink_medium, "x", 1, many, 17),
               AM_ERR_TOO_LARGE, limit);
    EXPECT_ERR(s, "am_request_long",
               am_request_long(s->ctx, s->right, s->sink_long, "x", 1, 0, many, 300),
               AM_ERR_TOO_LARGE, "300 arguments exceed the limit of 16");
    if (ping(s, REPLY_TOO_MANY_ARGS) || ping(s, PLAIN)) return 1;
    return expect_delivered(s, 4, 0, 1);
}

static int scenario_medium_too_large(rank_state* s) {
    if (setup_errors(s)) return 1;
    char limit[96], size[64];
    snprintf(limit, sizeof limit, "exceeds am_max_medium() = %zu", s->max_medium);
    snprintf(size, sizeof size, "medium payload of %zu bytes", s->max_medium + 1);
    for (int i = 0; i < 2; ++i) { /* exactly the limit is fine */
        REQUIRE_OK(
            s, am_request_medium(s->ctx, s->right, s->sink_medium, s->big, s->max_medium, NULL, 0));
    }
    EXPECT_ERR(
        s, "am_request_medium",
        am_request_medium(s->ctx, s->right, s->sink_medium, s->big, s->max_medium + 1, NULL, 0),
        AM_ERR_TOO_LARGE, size, limit);
    EXPECT_ERR(s, "am_request_medium",
               am_request_medium(s->ctx, s->right, s->sink_medium, s->big, (size_t)-1, NULL, 0),
               AM_ERR_TOO_LARGE, limit);
    if (ping(s, REPLY_MEDIUM_TOO_LARGE)) return 1;
    REQUIRE_OK(s, am_request_medium(s->ctx, s->right, s->sink_medium, NULL, 0, NULL, 0));
    return expect_delivered(s, 1, 3, 1);
}

static int scenario_long_outside_segment(rank_state* s) {
    if (setup_errors(s)) return 1;
    const size_t seg = s->seg_bytes;
    char limit[96], range[96];
    snprintf(limit, sizeof limit, "rank %d's segment of %zu bytes", s->right, seg);
    for (int i = 0; i < 2; ++i) { /* ending exactly at the end of the segment is fine */
        REQUIRE_OK(s,
                   am_request_long(s->ctx, s->right, s->sink_long, s->big, 16, seg - 16, NULL, 0));
    }
    snprintf(range, sizeof range, "11 bytes at offset %zu", seg - 10);
    EXPECT_ERR(s, "am_request_long",
               am_request_long(s->ctx, s->right, s->sink_long, s->big, 11, seg - 10, NULL, 0),
               AM_ERR_OUT_OF_SEGMENT, range, limit);
    EXPECT_ERR(s, "am_request_long",
               am_request_long(s->ctx, s->right, s->sink_long, s->big, 0, seg + 1, NULL, 0),
               AM_ERR_OUT_OF_SEGMENT, limit);
    EXPECT_ERR(s, "am_request_long", /* offset + len wraps around */
               am_request_long(s->ctx, s->right, s->sink_long, s->big, 2, (size_t)-1, NULL, 0),
               AM_ERR_OUT_OF_SEGMENT, limit);
    if (ping(s, REPLY_LONG_OUTSIDE)) return 1;
    REQUIRE_OK(s, am_request_long(s->ctx, s->right, s->sink_long, NULL, 0, seg, NULL, 0));
    return expect_delivered(s, 1, 3, 1);
}

static int scenario_bad_handler(rank_state* s) {
    if (setup_errors(s)) return 1;
    const uint64_t args[2] = {PLAIN, 0};
    am_handler_t late = AM_HANDLER_INVALID;
    char table[96];
    /* The program's four handlers follow the library's own in the table. */
    snprintf(table, sizeof table,
             "handler 999 is not registered (4 handlers; valid indices %u to %u)",
             (unsigned)s->ping, (unsigned)s->ping + 3);
    if (ping(s, PLAIN) || ping(s, PLAIN)) return 1;
    EXPECT_ERR(s, "am_request_short", am_request_short(s->ctx, s->right, 999, args, 1),
               AM_ERR_BAD_HANDLER, table);
    EXPECT_ERR(s, "am_request_short",
               am_request_short(s->ctx, s->right, AM_HANDLER_INVALID, args, 1), AM_ERR_BAD_HANDLER,
               "not registered");
    /* The library's own handlers sit below the program's: never reachable from C, whatever
     * their signature (index 3 was an rma handler taking short messages). */
    for (am_handler_t h = 0; h < s->ping; ++h) {
        char which[64];
        snprintf(which, sizeof which, "handler %u is not registered", (unsigned)h);
        for (unsigned n = 0; n <= 3; ++n) {
            EXPECT_ERR(s, "am_request_short", am_request_short(s->ctx, s->right, h, args, n),
                       AM_ERR_BAD_HANDLER, which, table + strlen("handler 999 is not registered "));
        }
        EXPECT_ERR(s, "am_request_medium", am_request_medium(s->ctx, s->right, h, "x", 1, args, 2),
                   AM_ERR_BAD_HANDLER, which);
        EXPECT_ERR(s, "am_request_long", am_request_long(s->ctx, s->right, h, "x", 1, 0, args, 1),
                   AM_ERR_BAD_HANDLER, which);
    }
    EXPECT_ERR(s, "am_request_short", am_request_short(s->ctx, s->right, s->ping, args, 2),
               AM_ERR_BAD_HANDLER, "takes short messages with 1 arguments, not short with 2");
    EXPECT_ERR(s, "am_request_medium",
               am_request_medium(s->ctx, s->right, s->ping, "x", 1, args, 1), AM_ERR_BAD_HANDLER,
               "takes short messages with 1 arguments, not medium with 1");
    EXPECT_ERR(s, "am_request_long",
               am_request_long(s->ctx, s->right, s->sink_medium, "x", 1, 0, NULL, 0),
               AM_ERR_BAD_HANDLER, "not long");
    /* Registered but not yet enabled by a barrier. */
    REQUIRE_OK(s, am_register_medium(s->ctx, sink_medium, 0, s, &late));
    REQUIRE(s, late == s->ping + 4);
    EXPECT_ERR(s, "am_request_medium", am_request_medium(s->ctx, s->right, late, NULL, 0, NULL, 0),
               AM_ERR_BAD_HANDLER, "not yet enabled", "am_barrier()");
    if (ping(s, REPLY_BAD_HANDLER)) return 1;
    REQUIRE_OK(s, am_barrier(s->ctx)); /* now it is */
    REQUIRE_OK(s, am_request_medium(s->ctx, s->right, late, NULL, 0, NULL, 0));
    return expect_delivered(s, 3, 1, 1);
}

static int scenario_reply_misuse(rank_state* s) {
    if (setup_errors(s)) return 1;
    if (ping(s, SECOND_REPLY) || ping(s, SECOND_REPLY) || ping(s, MISUSE_IN_REPLY_HANDLER)) {
        return 1;
    }
    if (expect_delivered(s, 3, 0, 3)) return 1;
    /* A second reply (or a request from the reply handler) that slipped through would arrive
     * by now: the barrier orders it before, since every rank has finished its handlers. */
    REQUIRE_OK(s, am_barrier(s->ctx));
    for (int i = 0; i < 100; ++i) REQUIRE_OK(s, am_poll(s->ctx, NULL));
    REQUIRE(s, am_counter_value(&s->replies) == 3);
    REQUIRE(s, am_counter_value(&s->requests) == 3);
    return 0;
}

/* ------------------------------------------------------------- basics and abort */

static int scenario_basics(rank_state* s) {
    static const am_status_t all[] = {AM_OK,
                                      AM_ERR_BAD_RANK,
                                      AM_ERR_BAD_HANDLER,
                                      AM_ERR_TOO_LARGE,
                                      AM_ERR_BAD_REPLY,
                                      AM_ERR_BAD_CONTEXT,
                                      AM_ERR_OUT_OF_SEGMENT,
                                      AM_ERR_HANDLER_MISMATCH,
                                      AM_ERR_ABORTED,
                                      AM_ERR_SYSTEM,
                                      AM_ERR_INVALID_ARGUMENT,
                                      AM_ERR_NO_MEMORY};
    static const char* const names[] = {"AM_OK:",
                                        "AM_ERR_BAD_RANK:",
                                        "AM_ERR_BAD_HANDLER:",
                                        "AM_ERR_TOO_LARGE:",
                                        "AM_ERR_BAD_REPLY:",
                                        "AM_ERR_BAD_CONTEXT:",
                                        "AM_ERR_OUT_OF_SEGMENT:",
                                        "AM_ERR_HANDLER_MISMATCH:",
                                        "AM_ERR_ABORTED:",
                                        "AM_ERR_SYSTEM:",
                                        "AM_ERR_INVALID_ARGUMENT:",
                                        "AM_ERR_NO_MEMORY:"};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; ++i) {
        REQUIRE(s, (unsigned)all[i] == i); /* the values of am::errc */
        REQUIRE(s, strncmp(am_status_string(all[i]), names[i], strlen(names[i])) == 0);
    }
    REQUIRE(s, strcmp(am_status_string((am_status_t)99), "unknown am_status_t value") == 0);

    const char* ranks = getenv("AM_RANKS");
    REQUIRE(s, s->rank >= 0 && s->rank < s->size);
    REQUIRE(s, ranks == NULL || atoi(ranks) == s->size);
    REQUIRE(s, s->max_medium > 0 && s->seg != NULL && s->seg_bytes > 0);
    REQUIRE(s, strcmp(am_last_error(s->ctx), "") == 0);
    REQUIRE(s, am_rank(NULL) == -1 && am_size(NULL) == 0 && am_max_medium(NULL) == 0);
    size_t bytes = 1;
    REQUIRE(s, am_segment(NULL, &bytes) == NULL && bytes == 0);
    REQUIRE(s, am_poll(NULL, NULL) == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_reply_short(NULL, 0, NULL, 0) == AM_ERR_INVALID_ARGUMENT);
    REQUIRE(s, am_token_source(NULL) == -1 && am_token_context(NULL) == NULL);

    am_handler_t h = 0;
    EXPECT_ERR(s, "am_register_short", am_register_short(s->ctx, NULL, 0, s, &h),
               AM_ERR_INVALID_ARGUMENT, "null handler function");
    EXPECT_ERR(s, "am_register_short", am_register_short(s->ctx, short_reply, 0, s, NULL),
               AM_ERR_INVALID_ARGUMENT, "null handler id pointer");
    if (setup_errors(s)) return 1;
    EXPECT_ERR(s, "am_request_short", am_request_short(s->ctx, s->right, s->ping, NULL, 1),
               AM_ERR_INVALID_ARGUMENT, "null argument pointer");
    EXPECT_ERR(s, "am_request_medium",
               am_request_medium(s->ctx, s->right, s->sink_medium, NULL, 5, NULL, 0),
               AM_ERR_INVALID_ARGUMENT, "null payload pointer");
    EXPECT_ERR(s, "am_request_long",
               am_request_long(s->ctx, s->right, s->sink_long, NULL, 5, 0, NULL, 0),
               AM_ERR_INVALID_ARGUMENT, "null payload pointer");
    EXPECT_ERR(s, "am_counter_wait", am_counter_wait(s->ctx, NULL, 1), AM_ERR_INVALID_ARGUMENT,
               "null counter");

    am_counter_t c = AM_COUNTER_INIT;
    am_counter_add(&c, 5);
    am_counter_add(&c, 2);
    REQUIRE(s, am_counter_value(&c) == 7);
    REQUIRE_OK(s, am_counter_wait(s->ctx, &c, 7));
    am_counter_reset(&c);
    REQUIRE(s, am_counter_value(&c) == 0);
    size_t handled = 99;
    REQUIRE_OK(s, am_poll(s->ctx, &handled));
    REQUIRE(s, handled == 0);
    REQUIRE_OK(s, am_barrier(s->ctx));
    return 0;
}

/* The last rank aborts; every other rank's wait returns AM_ERR_ABORTED with the reason. */
static int scenario_abort(rank_state* s) {
    REQUIRE_OK(s, am_barrier(s->ctx));
    if (s->rank == s->size - 1) {
        EXPECT_ERR(s, "am_abort", am_abort(s->ctx, "deliberate abort by the test"), AM_ERR_ABORTED,
                   "deliberate abort by the test");
        /* With a progress thread a poll may find it busy and return at once; a later one
         * notices the abort. */
        am_status_t st = AM_OK;
        for (long i = 0; i < 10000000 && st == AM_OK; ++i) st = am_poll(s->ctx, NULL);
        REQUIRE(s, st == AM_ERR_ABORTED);
    } else {
        EXPECT_ERR(s, "am_counter_wait", am_counter_wait(s->ctx, &s->replies, 1), AM_ERR_ABORTED,
                   "job aborted", "deliberate abort by the test");
    }
    return s->bad != 0;
}

/* -------------------------------------------------------------------------- main */

static const char* const names[] = {"basics",
                                    "short",
                                    "medium",
                                    "long",
                                    "bad_rank",
                                    "too_many_args",
                                    "medium_too_large",
                                    "long_outside_segment",
                                    "bad_handler",
                                    "reply_misuse",
                                    "abort"};
static int (*const runs[])(rank_state*) = {scenario_basics,
                                           scenario_short,
                                           scenario_medium,
                                           scenario_long,
                                           scenario_bad_rank,
                                           scenario_too_many_args,
                                           scenario_medium_too_large,
                                           scenario_long_outside_segment,
                                           scenario_bad_handler,
                                           scenario_reply_misuse,
                                           scenario_abort};

static void rank_main(am_context_t* ctx, void* arg) {
    const size_t sc = *(const size_t*)arg;
    rank_state s;
    memset(&s, 0, sizeof s);
    CHECK_RANK_INIT(&s, ctx);
    s.seg = am_segment(ctx, &s.seg_bytes);
    s.max_medium = am_max_medium(ctx);
    s.big = calloc(s.max_medium + 1, 1);
    check_end(ctx, names[sc], s.big == NULL || runs[sc](&s) != 0 || s.bad != 0);
    free(s.big);
}

int main(int argc, char** argv) {
    return check_main_expecting(argc, argv, "capi_test", names, sizeof names / sizeof names[0],
                                rank_main, "abort");
}
