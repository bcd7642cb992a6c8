/* SPDX-License-Identifier: MIT */
/*
 * What the C tests of the C APIs share (capi_test.c, rpc_test.c, typed_test.c, splitc_test.c,
 * msg_test.c, deprecated_test.c): checks that print "<prog>: FAILED: rank R: line L: ..." and count
 * the failure, a check of a failed call's status and am_last_error message, and the main that runs
 * one scenario, or all, through am_run. Header-only (static inline functions, so that a program
 * need not use them all), C11.
 *
 * The macros take a pointer `s` to the program's rank state, which has the fields
 * `am_context_t* ctx`, `int rank` and `unsigned bad`. A program calls check_main (or
 * check_main_expecting), or, with a main of its own, check_init first.
 */
#ifndef AM_TESTS_CAPI_CHECK_H
#define AM_TESTS_CAPI_CHECK_H

#include <am/am.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* check_prog = "capi_test"; /* the program, as failures name it */
static int check_verbose;                    /* AM_CAPI_VERBOSE: print every checked error */

/* Names the program in every message (`prog`, e.g. "rpc_test") and reads AM_CAPI_VERBOSE. */
static inline void check_init(const char* prog) {
    check_prog = prog;
    check_verbose = getenv("AM_CAPI_VERBOSE") != NULL;
}

static inline void check_fail(int rank, unsigned* bad, int line, const char* fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: FAILED: rank %d: line %d: %s\n", check_prog, rank, line, what);
    (*bad)++;
}

/* Anywhere: report a failure described by printf-style arguments, do not return. */
#define FAIL(s, ...) check_fail((s)->rank, &(s)->bad, __LINE__, __VA_ARGS__)

/* In rank code: report and return 1 from the calling function. */
#define REQUIRE(s, cond)                                                           \
    do {                                                                           \
        if (!(cond)) {                                                             \
            check_fail((s)->rank, &(s)->bad, __LINE__, "check failed: %s", #cond); \
            return 1;                                                              \
        }                                                                          \
    } while (0)

#define REQUIRE_OK(s, expr)                                                         \
    do {                                                                            \
        am_status_t st_ = (expr);                                                   \
        if (st_ != AM_OK) {                                                         \
            check_fail((s)->rank, &(s)->bad, __LINE__, "%s returned %s: %s", #expr, \
                       am_status_string(st_), am_last_error((s)->ctx));             \
            return 1;                                                               \
        }                                                                           \
    } while (0)

/* In handlers: report, do not return. */
#define CHECK(s, cond)                                                                      \
    do {                                                                                    \
        if (!(cond)) check_fail((s)->rank, &(s)->bad, __LINE__, "check failed: %s", #cond); \
    } while (0)

/* `got` must be `want`, and am_last_error must read "<call>: rank <rank>: ..." and contain
 * every string of `needles` (the limit, the offending value). */
static inline void check_err(am_context_t* ctx, int rank, unsigned* bad, int line, const char* call,
                             am_status_t got, am_status_t want, const char* const* needles) {
    const char* msg = am_last_error(ctx);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s: rank %d: ", call, rank);
    if (got != want) {
        check_fail(rank, bad, line, "%s returned %s, expected %s (last error: %s)", call,
                   am_status_string(got), am_status_string(want), msg);
        return;
    }
    if (strncmp(msg, prefix, strlen(prefix)) != 0) {
        check_fail(rank, bad, line, "error \"%s\" does not start with \"%s\"", msg, prefix);
        return;
    }
    for (; *needles != NULL; ++needles) {
        if (strstr(msg, *needles) == NULL) {
            check_fail(rank, bad, line, "error \"%s\" does not mention \"%s\"", msg, *needles);
            return;
        }
    }
    if (check_verbose) fprintf(stderr, "%s: rank %d: expected error: %s\n", check_prog, rank, msg);
}

#define EXPECT_ERR(s, call, expr, want, ...)                                    \
    check_err((s)->ctx, (s)->rank, &(s)->bad, __LINE__, (call), (expr), (want), \
              (const char* const[]){__VA_ARGS__, NULL})

/* The fields every rank state starts with: this rank, the job's size and the ring
 * neighbours (the rank itself when alone). */
#define CHECK_RANK_FIELDS \
    am_context_t* ctx;    \
    int rank, size, left, right

#define CHECK_RANK_INIT(s, context)                          \
    do {                                                     \
        (s)->ctx = (context);                                \
        (s)->rank = am_rank(context);                        \
        (s)->size = am_size(context);                        \
        (s)->left = ((s)->rank + (s)->size - 1) % (s)->size; \
        (s)->right = ((s)->rank + 1) % (s)->size;            \
    } while (0)

static const char* check_job_failure; /* the scenario that must bring the job down, or NULL */

/* Ends a scenario on a rank: when it failed, says so and brings the job down (unless the
 * scenario is the one expected to do that itself). */
static inline void check_end(am_context_t* ctx, const char* scenario, int failed) {
    if (!failed) return;
    fprintf(stderr, "%s: FAILED: rank %d: scenario %s\n", check_prog, am_rank(ctx), scenario);
    if (check_job_failure == NULL || strcmp(scenario, check_job_failure) != 0) {
        (void)am_abort(ctx, "check failed");
    }
}

/* Runs scenario `i` of `names` through am_run; 0 when am_run returned as expected (non-zero
 * for the scenario `check_job_failure`, 0 for the others). */
static inline int check_run_one(char** argv, const char* const* names, size_t* i,
                                am_rank_fn_t rank_main) {
    fflush(stdout); /* ranks may be forked */
    const int rc = am_run(1, argv, rank_main, i);
    const int must_fail = check_job_failure != NULL && strcmp(names[*i], check_job_failure) == 0;
    const int ok = must_fail ? rc != 0 : rc == 0;
    fprintf(stderr, "%s: %s: %s (am_run returned %d)\n", check_prog, names[*i],
            ok ? "ok" : "FAILED", rc);
    return !ok;
}

/* `prog all|<scenario>`: runs the scenario named by argv[1] (or each in turn) through am_run;
 * `rank_main` gets a pointer to the scenario's index in `names`. `job_failure` (or NULL) names
 * the scenario that must make am_run fail. Returns the exit status. */
static inline int check_main_expecting(int argc, char** argv, const char* prog,
                                       const char* const* names, size_t n, am_rank_fn_t rank_main,
                                       const char* job_failure) {
    check_init(prog);
    check_job_failure = job_failure;
    if (argc != 2) {
        fprintf(stderr, "usage: %s all|<scenario>; scenarios:", argv[0]);
        for (size_t i = 0; i < n; ++i) fprintf(stderr, " %s", names[i]);
        fputc('\n', stderr);
        return 2;
    }
    int failures = 0, found = 0;
    for (size_t i = 0; i < n; ++i) {
        if (strcmp(argv[1], "all") != 0 && strcmp(argv[1], names[i]) != 0) continue;
        found = 1;
        failures += check_run_one(argv, names, &i, rank_main);
    }
    if (!found) {
        fprintf(stderr, "%s: unknown scenario \"%s\"\n", prog, argv[1]);
        return 2;
    }
    return failures != 0;
}

/* As check_main_expecting, every scenario expected to succeed. */
static inline int check_main(int argc, char** argv, const char* prog, const char* const* names,
                             size_t n, am_rank_fn_t rank_main) {
    return check_main_expecting(argc, argv, prog, names, n, rank_main, NULL);
}

#endif /* AM_TESTS_CAPI_CHECK_H */
