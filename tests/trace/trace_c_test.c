/* SPDX-License-Identifier: MIT */
/* am_trace_start / am_trace_stop from C: an unwritable path is refused at start on every rank
 * (AM_ERR_INVALID_ARGUMENT, am_last_error naming the call and the path); a traced exchange of
 * short requests gives a file with one handler-run and one send event per message. */
#include <am/am.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;
#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "trace_c_test: FAILED: %s (line %d)\n", #cond, __LINE__); \
            failed = 1;                                                               \
        }                                                                             \
    } while (0)

static void on_ping(am_token_t* token, const uint64_t* args, unsigned nargs, void* user) {
    (void)token, (void)args, (void)nargs;
    ++*(unsigned long*)user;
}

static size_t count(const char* text, const char* what) {
    size_t n = 0;
    for (const char* p = strstr(text, what); p != NULL; p = strstr(p + 1, what)) ++n;
    return n;
}

static void rank_main(am_context_t* ctx, void* arg) {
    const char* path = (const char*)arg;
    const int me = am_rank(ctx), n = am_size(ctx);
    unsigned long got = 0;
    am_handler_t ping;
    CHECK(am_trace_start(ctx, "/nonexistent-am-trace-dir/t.json") == AM_ERR_INVALID_ARGUMENT);
    CHECK(strstr(am_last_error(ctx), "am_trace_start") != NULL);
    CHECK(strstr(am_last_error(ctx), "/nonexistent-am-trace-dir/t.json") != NULL);
    CHECK(am_register_short(ctx, on_ping, 0, &got, &ping) == AM_OK);
    CHECK(am_barrier(ctx) == AM_OK);
    CHECK(am_trace_start(ctx, path) == AM_OK);
    for (int d = 0; d < n; ++d) CHECK(am_request_short(ctx, d, ping, NULL, 0) == AM_OK);
    while (got < (unsigned long)n) CHECK(am_poll(ctx, NULL) == AM_OK);
    CHECK(am_barrier(ctx) == AM_OK); /* every ping handled before the trace stops */
    CHECK(am_trace_stop(ctx) == AM_OK);
    CHECK(am_barrier(ctx) == AM_OK);
    if (me == 0) {
        FILE* f = fopen(path, "r");
        CHECK(f != NULL);
        if (f == NULL) return;
        static char text[1 << 20];
        const size_t len = fread(text, 1, sizeof text - 1, f);
        text[len] = '\0';
        fclose(f);
        CHECK(strncmp(text, "{\"displayTimeUnit\"", 18) == 0);
        /* n*n pings in the job: each one sent and run once */
        CHECK(count(text, "\"cat\":\"handler\"") == (size_t)(n * n));
        CHECK(count(text, "\"cat\":\"send\"") == (size_t)(n * n));
        remove(path);
    }
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: trace_c_test PATH\n");
        return 2;
    }
    const int rc = am_run(argc, argv, rank_main, argv[1]);
    if (rc != 0 || failed) {
        fprintf(stderr, "trace_c_test: FAILED (am_run %d)\n", rc);
        return 1;
    }
    return 0;
}
