/* SPDX-License-Identifier: MIT */
/*
 * A level-synchronous BFS written against aml.h the way the Graph500 MPI reference's simple
 * kernel is: vertices dealt round-robin to the ranks, a visited bitmap per rank, a handler that
 * marks a vertex visited, records its predecessor and queues it for the next level, and one
 * aml_barrier per level. The graph (random, sparse, with isolated vertices and several
 * components) is generated identically on every rank, which also runs a sequential BFS: the
 * levels must match exactly and every predecessor must be a tree edge one level up.
 *
 *   mpirun -n 4 aml_bfs_test [vertices = 6000] [edges = 8400]
 * Prints "aml_bfs: rank R ok ..." per rank, or "aml_bfs: rank R FAILED: ..." and exits 1.
 */
#include "aml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BITS_PER_WORD (8 * sizeof(unsigned long))

/* ------------------------------------------------------------------------ the graph */

static int64_t nverts, nedges;
static int64_t* row_start; /* CSR over all vertices: neighbours of v at adj[row_start[v]..] */
static int64_t* adj;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) { /* xorshift64*: the same sequence on every rank */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static void make_graph(void) {
    int64_t* src = malloc(sizeof(int64_t) * (size_t)nedges);
    int64_t* dst = malloc(sizeof(int64_t) * (size_t)nedges);
    int64_t* fill = calloc((size_t)nverts + 1, sizeof(int64_t));
    row_start = calloc((size_t)nverts + 1, sizeof(int64_t));
    for (int64_t e = 0; e < nedges; ++e) {
        /* A fifth of the vertices (those >= 4/5 nverts) get no edges at all. */
        src[e] = (int64_t)(next_random() % (uint64_t)(nverts * 4 / 5));
        dst[e] = (int64_t)(next_random() % (uint64_t)(nverts * 4 / 5));
        ++row_start[src[e] + 1];
        ++row_start[dst[e] + 1];
    }
    for (int64_t v = 0; v < nverts; ++v) row_start[v + 1] += row_start[v];
    adj = malloc(sizeof(int64_t) * (size_t)(2 * nedges));
    for (int64_t e = 0; e < nedges; ++e) { /* undirected: both directions */
        adj[row_start[src[e]] + fill[src[e]]++] = dst[e];
        adj[row_start[dst[e]] + fill[dst[e]]++] = src[e];
    }
    free(src);
    free(dst);
    free(fill);
}

static int has_edge(int64_t a, int64_t b) {
    for (int64_t i = row_start[a]; i < row_start[a + 1]; ++i) {
        if (adj[i] == b) return 1;
    }
    return 0;
}

static void sequential_bfs(int64_t root, int64_t* level) {
    int64_t* queue = malloc(sizeof(int64_t) * (size_t)nverts);
    int64_t head = 0, tail = 0;
    for (int64_t v = 0; v < nverts; ++v) level[v] = -1;
    level[root] = 0;
    queue[tail++] = root;
    while (head < tail) {
        const int64_t v = queue[head++];
        for (int64_t i = row_start[v]; i < row_start[v + 1]; ++i) {
            if (level[adj[i]] < 0) {
                level[adj[i]] = level[v] + 1;
                queue[tail++] = adj[i];
            }
        }
    }
    free(queue);
}

/* ------------------------------------------------------------------- the AML kernel */

static int me, npes;
static int64_t nlocal;
#define VERTEX_OWNER(v) ((int)((v) % npes))
#define VERTEX_LOCAL(v) ((v) / npes)
#define VERTEX_TO_GLOBAL(l) ((l)*npes + me)

static unsigned long* visited;
static int64_t visited_words;
static int64_t* pred;  /* per local vertex */
static int64_t* level; /* per local vertex */
static int64_t *q1, *q2, q1c, q2c, current_level;

#define TEST_VISITED(l) ((visited[(l) / BITS_PER_WORD] >> ((l) % BITS_PER_WORD)) & 1ul)
#define SET_VISITED(l) (visited[(l) / BITS_PER_WORD] |= 1ul << ((l) % BITS_PER_WORD))

struct visit_msg {
    int64_t vloc;
    int64_t parent;
};

static void visit_handler(int from, void* data, int nbytes) {
    (void)from;
    (void)nbytes;
    const struct visit_msg* m = data;
    if (TEST_VISITED(m->vloc)) return;
    SET_VISITED(m->vloc);
    q2[q2c++] = m->vloc;
    pred[m->vloc] = m->parent;
    level[m->vloc] = current_level + 1;
}

static void run_bfs(int64_t root) {
    aml_register_handler(visit_handler, 1);
    memset(visited, 0, sizeof(unsigned long) * (size_t)visited_words);
    for (int64_t l = 0; l < nlocal; ++l) pred[l] = level[l] = -1;
    q1c = q2c = 0;
    current_level = 0;
    if (VERTEX_OWNER(root) == me) {
        const int64_t l = VERTEX_LOCAL(root);
        SET_VISITED(l);
        pred[l] = root;
        level[l] = 0;
        q1[q1c++] = l;
    }
    for (;;) {
        for (int64_t i = 0; i < q1c; ++i) {
            const int64_t v = VERTEX_TO_GLOBAL(q1[i]);
            for (int64_t j = row_start[v]; j < row_start[v + 1]; ++j) {
                struct visit_msg m = {VERTEX_LOCAL(adj[j]), v};
                aml_send(&m, 1, (int)sizeof m, VERTEX_OWNER(adj[j]));
            }
        }
        aml_barrier();
        int64_t next = q2c;
        aml_long_allsum(&next);
        if (next == 0) break;
        int64_t* t = q1;
        q1 = q2;
        q2 = t;
        q1c = q2c;
        q2c = 0;
        ++current_level;
    }
}

/* Compares the distributed result with the sequential BFS; returns the number of errors. */
static int64_t check(int64_t root, const int64_t* seq, int64_t* reached) {
    int64_t errors = 0;
    *reached = 0;
    for (int64_t l = 0; l < nlocal; ++l) {
        const int64_t v = VERTEX_TO_GLOBAL(l);
        const int64_t p = pred[l];
        const char* what = NULL;
        if (level[l] != seq[v]) {
            what = "level differs from the sequential BFS";
        } else if (seq[v] < 0) {
            if (p != -1) what = "unreached vertex has a predecessor";
        } else if (seq[v] == 0) {
            if (p != root) what = "root is not its own predecessor";
        } else if (p < 0 || p >= nverts) {
            what = "predecessor out of range";
        } else if (seq[p] != seq[v] - 1) {
            what = "predecessor is not one level up";
        } else if (!has_edge(p, v)) {
            what = "predecessor is not a neighbour";
        }
        if (seq[v] >= 0) ++*reached;
        if (what != NULL && errors++ < 5) {
            printf(
                "aml_bfs: rank %d FAILED: root %lld vertex %lld: %s (level %lld, expected "
                "%lld, predecessor %lld)\n",
                me, (long long)root, (long long)v, what, (long long)level[l], (long long)seq[v],
                (long long)p);
        }
    }
    return errors;
}

int main(int argc, char** argv) {
    aml_init(&argc, &argv);
    me = my_pe();
    npes = num_pes();
    nverts = argc > 1 ? atoll(argv[1]) : 6000;
    nedges = argc > 2 ? atoll(argv[2]) : nverts * 7 / 5;
    make_graph();
    nlocal = (nverts - me + npes - 1) / npes;
    visited_words = (nlocal + (int64_t)BITS_PER_WORD - 1) / (int64_t)BITS_PER_WORD + 1;
    visited = malloc(sizeof(unsigned long) * (size_t)visited_words);
    pred = malloc(sizeof(int64_t) * (size_t)(nlocal + 1));
    level = malloc(sizeof(int64_t) * (size_t)(nlocal + 1));
    q1 = malloc(sizeof(int64_t) * (size_t)(nlocal + 1));
    q2 = malloc(sizeof(int64_t) * (size_t)(nlocal + 1));
    int64_t* seq = malloc(sizeof(int64_t) * (size_t)nverts);

    /* A vertex of the big component, another one, and an isolated vertex. */
    const int64_t roots[3] = {adj[0], nverts / 3, nverts - 1};
    int64_t errors = 0, depth[3], reached[3];
    for (int r = 0; r < 3; ++r) {
        sequential_bfs(roots[r], seq);
        run_bfs(roots[r]);
        int64_t mine = 0;
        errors += check(roots[r], seq, &mine);
        int64_t total = mine, expected = 0;
        for (int64_t v = 0; v < nverts; ++v) expected += seq[v] >= 0;
        aml_long_allsum(&total);
        depth[r] = current_level;
        reached[r] = total;
        if (total != expected) {
            printf("aml_bfs: rank %d FAILED: root %lld: %lld vertices reached, expected %lld\n", me,
                   (long long)roots[r], (long long)total, (long long)expected);
            ++errors;
        }
    }
    if (reached[0] < nverts / 2 || depth[0] < 5 || reached[2] != 1) {
        printf(
            "aml_bfs: rank %d FAILED: the test graph is not what the test needs (reached "
            "%lld in %lld levels from the first root)\n",
            me, (long long)reached[0], (long long)depth[0]);
        ++errors;
    }
    aml_long_allsum(&errors);
    if (errors == 0) {
        printf(
            "aml_bfs: rank %d ok: %lld vertices, roots reach %lld/%lld/%lld vertices in "
            "%lld/%lld/%lld levels\n",
            me, (long long)nverts, (long long)reached[0], (long long)reached[1],
            (long long)reached[2], (long long)depth[0], (long long)depth[1], (long long)depth[2]);
    }
    fflush(stdout);
    aml_finalize();
    return errors == 0 ? 0 : 1;
}
