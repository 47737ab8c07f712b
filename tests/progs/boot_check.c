/* boot_check.c - the bootstrap's rounds on a real launcher (srun's PMIx,
 * or the local launcher): the layout, the all-to-all exchange, and the
 * sparse round a backend's set-up needs (every rank a node-local blob,
 * each node's first rank a global one; each rank reads its node's blobs
 * and the first ranks' ones), checked and timed.
 *
 * The layout is checked after a first exchange (under PMIx it comes with
 * it, and is refused before).
 *
 * Usage: boot_check [-i] [ROUNDS]   (ROUNDS: 1 to 64, default 5)
 * Prints one line per rank:
 *   boot_check rank R/N node D/M METHOD: fence F ms, exchange E ms (gets
 *   G ms for N blobs), sparse S ms (gets H ms for K blobs) FAILS failed
 * with the median time of each over the rounds, after a fence that absorbs
 * the ranks' start-up skew ("fence": a round with no data, what every
 * round costs at least; "gets": the reads after the round's fence, the
 * part of a round that grows with what a rank reads); exits 0 when every
 * check passed on this rank.  With -i it first times ddp_init() (from the
 * start of main, so the launch's skew is in it), then, after a barrier and
 * ddp_finalize(), a second ddp_init() of ranks that start together:
 *   boot_check rank R/N init: first F ms, again A ms
 * Links libddp's internal convenience library (bootstrap.h, and ddp.h
 * with it).
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap.h"
#include "ddp.h"
#include "ddp_internal.h"

static int fails;
static char err[512];

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fails++;                                                          \
            fprintf (stderr, "boot_check: FAIL: ");                           \
            fprintf (stderr, __VA_ARGS__);                                    \
            fputc ('\n', stderr);                                             \
        }                                                                     \
    } while (0)

/* A 64-byte blob that says whose it is and of which round. */
struct blob {
    int32_t rank, round, kind;
    char pad[52];
};

static void layout_check (struct bootstrap *b, int **lead)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    int *seen = calloc ((size_t)in->size, sizeof (int));
    int *where = calloc ((size_t)in->size, sizeof (int));
    int node, i, n, *ranks;

    *lead = calloc ((size_t)in->num_nodes, sizeof (int));
    if (!seen || !where || !*lead)
        goto out;
    CHECK (bootstrap_layout (b, where, err, sizeof (err)) == 0, "layout: %s",
           err);
    for (node = 0; node < in->num_nodes; node++) {
        CHECK (bootstrap_node_ranks (b, node, &ranks, &n, err, sizeof (err))
               == 0 && n > 0, "node_ranks %d: %s", node, err);
        if (!ranks)
            continue;
        (*lead)[node] = ranks[0];
        for (i = 0; i < n; i++) {
            CHECK (ranks[i] >= 0 && ranks[i] < in->size && !seen[ranks[i]]
                   && (i == 0 || ranks[i] > ranks[i - 1]),
                   "node %d lists rank %d", node, ranks[i]);
            if (ranks[i] >= 0 && ranks[i] < in->size) {
                seen[ranks[i]]++;
                CHECK (where[ranks[i]] == node, "layout puts rank %d on node "
                       "%d, node_ranks on %d", ranks[i], where[ranks[i]],
                       node);
            }
        }
        if (node == in->node_rank)
            CHECK (n == in->local_size && memcmp (ranks, in->local_ranks,
                                                  (size_t)n * sizeof (int))
                   == 0, "node %d's ranks are not this node's", node);
        free (ranks);
    }
    for (i = 0; i < in->size; i++)
        CHECK (seen[i] == 1, "rank %d is on %d nodes", i, seen[i]);
out:
    free (seen);
    free (where);
}

/* A round with no data; returns its time. */
static double fence_round (struct bootstrap *b)
{
    double t0 = ddpi_now ();

    CHECK (bootstrap_fence (b, err, sizeof (err)) == 0, "fence: %s", err);
    return ddpi_now () - t0;
}

/* bootstrap_exchange, checked; returns its time. */
static double exchange_round (struct bootstrap *b, int round)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    struct blob mine = { in->rank, round, 0, "" };
    size_t *off = calloc ((size_t)in->size, sizeof (size_t));
    size_t *len = calloc ((size_t)in->size, sizeof (size_t));
    void *all = NULL;
    double t0 = ddpi_now (), t;

    CHECK (off && len && bootstrap_exchange (b, &mine, sizeof (mine), &all,
                                             off, len, err, sizeof (err))
           == 0, "exchange: %s", err);
    t = ddpi_now () - t0;
    for (int r = 0; all && r < in->size; r++) {
        struct blob *x = (struct blob *)((char *)all + off[r]);
        CHECK (len[r] == sizeof (mine) && x->rank == r && x->round == round,
               "exchange: rank %d's blob", r);
    }
    free (all);
    free (off);
    free (len);
    return t;
}

/* Read rank's blob of scope; it must be (rank, round, kind). */
static void get_one (struct bootstrap *b, int rank, enum bootstrap_scope sc,
                     int round)
{
    void *p = NULL;
    size_t len = 0;
    struct blob x;

    CHECK (bootstrap_get (b, rank, sc, &p, &len, err, sizeof (err)) == 0
           && len == sizeof (x), "get %s of rank %d: %s",
           sc == BOOTSTRAP_LOCAL ? "local" : "global", rank, err);
    if (p && len == sizeof (x)) {
        memcpy (&x, p, sizeof (x));
        CHECK (x.rank == rank && x.round == round && x.kind == (int)sc,
               "the %s blob of rank %d", sc == BOOTSTRAP_LOCAL ? "local"
               : "global", rank);
    }
    free (p);
}

/* The exchange by hand: every rank's global blob, every one read;
 * returns the time of the reads. */
static double dense_gets (struct bootstrap *b, int round)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    struct blob glob = { in->rank, round, BOOTSTRAP_GLOBAL, "" };
    double t0;

    CHECK (bootstrap_put (b, BOOTSTRAP_GLOBAL, &glob, sizeof (glob), err,
                          sizeof (err)) == 0, "put global: %s", err);
    CHECK (bootstrap_sync (b, err, sizeof (err)) == 0, "sync: %s", err);
    t0 = ddpi_now ();
    for (int r = 0; r < in->size; r++)
        get_one (b, r, BOOTSTRAP_GLOBAL, round);
    return ddpi_now () - t0;
}

/* One sparse round; *gets_s the reads' share, *ngets how many. */
static double sparse_round (struct bootstrap *b, const int *lead, int round,
                            double *gets_s, int *ngets)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    struct blob loc = { in->rank, round, BOOTSTRAP_LOCAL, "" };
    struct blob glob = { in->rank, round, BOOTSTRAP_GLOBAL, "" };
    double t0 = ddpi_now (), t1;
    int i;

    CHECK (bootstrap_put (b, BOOTSTRAP_LOCAL, &loc, sizeof (loc), err,
                          sizeof (err)) == 0, "put local: %s", err);
    if (in->local_rank == 0)
        CHECK (bootstrap_put (b, BOOTSTRAP_GLOBAL, &glob, sizeof (glob), err,
                              sizeof (err)) == 0, "put global: %s", err);
    CHECK (bootstrap_sync (b, err, sizeof (err)) == 0, "sync: %s", err);
    t1 = ddpi_now ();
    *ngets = 0;
    for (i = 0; i < in->local_size; i++, (*ngets)++)
        get_one (b, in->local_ranks[i], BOOTSTRAP_LOCAL, round);
    for (i = 0; i < in->num_nodes; i++, (*ngets)++)
        get_one (b, lead[i], BOOTSTRAP_GLOBAL, round);
    *gets_s = ddpi_now () - t1;
    return ddpi_now () - t0;
}

static int cmp (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median (double *v, int n)
{
    qsort (v, (size_t)n, sizeof (double), cmp);
    return v[n / 2];
}

/* ddp_init() timed: from t0, then again after ddp_finalize().  Returns
 * 0, or 1 with the reason on stderr. */
static int time_init (double t0)
{
    double first, again;
    int rc;

    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "boot_check: ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    first = ddpi_now () - t0;
    if ((rc = ddp_barrier ()) != 0 || (rc = ddp_finalize ()) != 0) {
        fprintf (stderr, "boot_check: barrier/finalize: %s\n",
                 ddp_strerror (rc));
        return 1;
    }
    t0 = ddpi_now ();
    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "boot_check: ddp_init again: %s\n",
                 ddp_strerror (rc));
        return 1;
    }
    again = ddpi_now () - t0;
    printf ("boot_check rank %d/%d init: first %.1f ms, again %.1f ms\n",
            ddp_rank (), ddp_world_size (), first * 1e3, again * 1e3);
    ddp_finalize ();
    return 0;
}

/* The command line: -i and ROUNDS.  Returns 0, or 1 with the usage on
 * stderr. */
static int parse_args (int argc, char **argv, bool *init, int *rounds)
{
    long v = 5;
    int i = 1;

    *init = argc > i && strcmp (argv[i], "-i") == 0;
    if (*init)
        i++;
    if ((argc > i && ddpi_parse_long (argv[i++], 1, 64, &v) < 0)
        || argc > i) {
        fprintf (stderr, "boot_check: usage: boot_check [-i] [ROUNDS]  "
                 "(ROUNDS: a whole number from 1 to 64)\n");
        return 1;
    }
    *rounds = (int)v;
    return 0;
}

int main (int argc, char **argv)
{
    int rounds, ngets = 0, *lead = NULL;
    double fe[64], ex[64], dg[64], sp[64], sg[64], t0 = ddpi_now ();
    struct bootstrap *b = NULL;
    const struct bootstrap_info *in;
    bool init;

    if (parse_args (argc, argv, &init, &rounds) != 0)
        return 2;
    if (init && time_init (t0) != 0)
        return 1;
    if (bootstrap_create (&b, 60.0, err, sizeof (err)) < 0) {
        fprintf (stderr, "boot_check: %s\n", err);
        return 1;
    }
    in = bootstrap_info (b);
    /* Under PMIx the node layout comes with the first exchange
     * (bootstrap.h): before it, asking for it is refused. */
    if (strcmp (in->method, "pmix") == 0) {
        int *where = calloc ((size_t)in->size, sizeof (int));
        CHECK (where && bootstrap_layout (b, where, err, sizeof (err))
               == DDP_EINVAL, "pmix: a layout before the first exchange");
        free (where);
    }
    exchange_round (b, -1);
    layout_check (b, &lead);
    CHECK (lead, "out of memory");
    CHECK (bootstrap_fence (b, err, sizeof (err)) == 0, "fence: %s", err);
    for (int r = 0; r < rounds && lead; r++) {
        fe[r] = fence_round (b);
        ex[r] = exchange_round (b, 3 * r);
        dg[r] = dense_gets (b, 3 * r + 1);
        sp[r] = sparse_round (b, lead, 3 * r + 2, &sg[r], &ngets);
    }
    if (lead)
        printf ("boot_check rank %d/%d node %d/%d %s: fence %.3f ms, "
                "exchange %.3f ms (gets %.3f ms for %d blobs), sparse %.3f ms "
                "(gets %.3f ms for %d blobs) %d failed\n", in->rank, in->size,
                in->node_rank, in->num_nodes, in->method,
                median (fe, rounds) * 1e3, median (ex, rounds) * 1e3,
                median (dg, rounds) * 1e3, in->size, median (sp, rounds) * 1e3,
                median (sg, rounds) * 1e3, ngets, fails);
    free (lead);
    bootstrap_destroy (b);
    return fails ? 1 : 0;
}
