/* reduce_scatter.c - the host backend's reduce-scatter on several ranks
 * (ranks.h): every dtype and op against the all-reduce's block, bitwise,
 * on 1 to 4 simulated nodes, uneven and interleaved, with the thresholds
 * moved so that every algorithm runs; and what it moves between nodes,
 * counted. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "backend.h"
#include "bootstrap.h"
#include "ddp_internal.h"
#include "host_core.h"
#include "localjob.h"
#include "reduce.h"

#include "ranks.h"

/* Every dtype and op at every count of arg (a 0-ended list): prints how
 * many reduce-scatters rank 0 checked. */
static int rank_rs (int rank, void *arg)
{
    const size_t *counts = arg;
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, 30.0);
    int calls = 0;

    if (!ctx)
        return 2;
    for (size_t k = 0; counts[k] && !tap_rank_fails; k++)
        for (int dt = 0; dt < DDP_NUM_DTYPES; dt++)
            for (int op = 0; op < DDP_NUM_OPS; op++)
                rs_one (ctx, rank, counts[k], (ddp_dtype_t)dt, (ddp_op_t)op,
                        &calls);
    if (rank == 0)
        fprintf (stderr, "rank 0: %d reduce-scatters checked\n", calls);
    teardown (ctx, b, true);
    return tap_rank_fails ? 1 : 0;
}

/* Reduce-scatter, every dtype and op, counts 1 to more than a slot
 * (20000 a rank: 80000 elements, in 64 KiB slots), on each layout: one
 * node (single copy, and the slots), nodes of one rank, uneven and
 * interleaved nodes, 3 nodes (one folds in recursive doubling and
 * halving), with the thresholds moved so that small counts take halving
 * and the ring too, and small slots with two lanes. */
static void reduce_scatters (void)
{
    static const size_t counts[] = { 1, 7, 1000, 20000, 0 };
    static const int three_one[SIZE] = { 0, 0, 0, 1 };
    static const int one_three[SIZE] = { 0, 1, 1, 1 };
    static const int inter[SIZE] = { 0, 1, 0, 1 };
    static const int three[SIZE] = { 0, 0, 1, 2 };
    static const int three_inter[SIZE] = { 0, 1, 2, 0 };
    static const struct {
        int nodes;
        const int *node_of;
        const char *env;    /* NAME=VALUE ... set for this run */
        const char *what;
    } c[] = {
        { 1, NULL, "", "1 node (single copy from 256 KiB)" },
        { 1, NULL, "DDP_CMA=0", "1 node through the slots (DDP_CMA=0)" },
        { 1, NULL, "DDP_CMA=0 DDP_SHM_SLOT=4096",
          "1 node in 4 KiB slots (many steps)" },
        { 2, NULL, "", "2 nodes of 2" },
        { 2, three_one, "", "nodes of 3 and 1" },
        { 2, one_three, "", "nodes of 1 and 3" },
        { 2, inter, "", "2 nodes, ranks interleaved" },
        { 2, NULL, "DDP_SHM_SLOT=4096 DDP_LANE_MIN=4096",
          "2 nodes of 2, two lanes, 4 KiB slots" },
        { 3, three, "DDP_SMALL_MAX=256 DDP_RING_MIN=4096",
          "3 nodes of 2, 1, 1 (a fold; halving and ring from small "
          "counts)" },
        { 3, three_inter, "DDP_SMALL_MAX=256 DDP_RING_MIN=4096",
          "3 nodes, ranks interleaved (rank 3 on node 0)" },
        { 4, NULL, "DDP_SMALL_MAX=256 DDP_RING_MIN=4096",
          "4 nodes of 1 (halving and ring from small counts)" },
        { 4, NULL, "", "4 nodes of 1" },
    };
    int st[SIZE], rc;

    for (size_t k = 0; k < sizeof (c) / sizeof (c[0]); k++) {
        char env[128], *save = NULL;
        setenv ("DDP_SHM_SLOT", "65536", 1);
        snprintf (env, sizeof (env), "%s", c[k].env);
        for (char *t = strtok_r (env, " ", &save); t;
             t = strtok_r (NULL, " ", &save)) {
            char *eq = strchr (t, '=');
            *eq = '\0';
            setenv (t, eq + 1, 1);
        }
        rc = run_layout (c[k].nodes, c[k].node_of, rank_rs, (void *)counts,
                         st);
        is_int (rc, 0, "reduce-scatter, every dtype and op, 1 to 20000 "
                "a rank, in and out of place, bitwise the all-reduce's "
                "block: %s%s%s", c[k].what, rc ? ": " : "", rc ? err : "");
        snprintf (env, sizeof (env), "%s", c[k].env);
        for (char *t = strtok_r (env, " ", &save); t;
             t = strtok_r (NULL, " ", &save)) {
            *strchr (t, '=') = '\0';
            unsetenv (t);
        }
        unsetenv ("DDP_SHM_SLOT");
    }
}

/* One all-reduce of SIZE x *arg floats, then one reduce-scatter of the
 * same (the counters go to DDP_STATS at destroy). */
static int rank_traffic (int rank, void *arg)
{
    size_t n = *(const size_t *)arg;
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, 30.0);
    float *send = calloc (n * SIZE, sizeof (float));
    float *recv = calloc (n * SIZE, sizeof (float));

    (void)rank;
    if (!ctx || !send || !recv)
        return 2;
    RANK_CHECK (be->allreduce (ctx, send, recv, n * SIZE, DDP_FLOAT32,
                               DDP_SUM) == 0
                && be->reduce_scatter (ctx, send, recv, n, DDP_FLOAT32,
                                       DDP_SUM) == 0,
                "%s", ddpi_last_error ());
    teardown (ctx, b, true);
    free (send);
    free (recv);
    return tap_rank_fails ? 1 : 0;
}

/* The payload bytes every rank received in calls of kind, from the
 * counters' lines in path (ddp-stats ... kind=calls,ms,bs,mr,br). */
static unsigned long long bytes_in (const char *path, const char *kind)
{
    unsigned long long sum = 0, c, ms, bs, mr, br;
    char line[1024], key[64];
    FILE *f = fopen (path, "r");

    snprintf (key, sizeof (key), " %s=", kind);
    while (f && fgets (line, sizeof (line), f)) {
        const char *p = strstr (line, key);
        if (p && sscanf (p + strlen (key), "%llu,%llu,%llu,%llu,%llu", &c,
                         &ms, &bs, &mr, &br) == 5)
            sum += br;
    }
    if (f)
        fclose (f);
    return sum;
}

/* What a reduce-scatter moves between nodes, counted (DDP_STATS) on 4
 * nodes of one rank against the all-reduce of the same data: as much in
 * recursive doubling (full vectors every step), half with halving and
 * with the ring, whose reduce-scatter halves leave each node its own
 * block: their allgather halves move nothing (was 2/3 while the
 * all-reduce's order left node v with another node's block). */
static void reduce_scatter_traffic (void)
{
    static const struct {
        size_t n;
        const char *ring_min;
        int num, den;       /* the most the reduce-scatter may take */
        const char *what;
    } c[] = {
        { 1000, NULL, 1, 1, "recursive doubling (16 KB): as much" },
        { 100000, NULL, 1, 2, "halving (1.6 MB): half" },
        { 100000, "65536", 1, 2, "ring (1.6 MB): half" },
    };
    char path[] = "/tmp/reduce-scatter-stats-XXXXXX";
    int st[SIZE], rc, fd;

    for (size_t k = 0; k < sizeof (c) / sizeof (c[0]); k++) {
        unsigned long long ar, rs;
        if ((fd = mkstemp (path)) < 0) {
            ok (0, "mkstemp: %s", strerror (errno));
            return;
        }
        close (fd);
        setenv ("DDP_STATS", path, 1);
        if (c[k].ring_min)
            setenv ("DDP_RING_MIN", c[k].ring_min, 1);
        rc = run_on (SIZE, rank_traffic, (void *)&c[k].n, st);
        unsetenv ("DDP_STATS");
        unsetenv ("DDP_RING_MIN");
        ar = bytes_in (path, "allreduce");
        rs = bytes_in (path, "reduce_scatter");
        unlink (path);
        snprintf (path, sizeof (path), "/tmp/reduce-scatter-stats-XXXXXX");
        ok (rc == 0 && ar > 0 && rs > 0
            && rs * (unsigned)c[k].den <= ar * (unsigned)c[k].num,
            "reduce-scatter on 4 nodes of one rank, %s of the all-reduce's "
            "bytes: %llu against %llu%s%s", c[k].what, rs, ar,
            rc ? ": " : "", rc ? err : "");
    }
}

int main (void)
{
    plan (NO_PLAN);
    signal (SIGPIPE, SIG_IGN);
    unsetenv ("DDP_BOOTSTRAP");
    reduce_scatters ();
    reduce_scatter_traffic ();
    done_testing ();
    return 0;
}
