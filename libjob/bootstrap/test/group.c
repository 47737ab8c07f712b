/* group.c - the group method (bootstrap_create_group): three threads are
 * the ranks of a group on two nodes (0, 0, 1), and the round function
 * swaps their messages in memory, as the core's parent collectives would:
 * puts, syncs, gets of both scopes, exchanges, the layout, and the
 * failures (a round after the set-up, a malformed message, a round that
 * fails). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bootstrap.h"
#include "ddp_internal.h"

#define N 3
static const int nodes[N] = { 0, 0, 1 };

/* The shared round: each rank's message, a barrier on either side. */
static pthread_barrier_t bar;
static const void *msgs[N];
static size_t lens[N];
static int fail_round;      /* 1: the next round fails on every rank */
static int garble;          /* 1: rank 2's next message is cut short */

struct rank_arg {
    int rank;
    int failures;
    char why[400];
};

static int round_fn (void *arg, const void *blob, size_t len, void **all,
                     size_t *off, size_t *lens_out, char *err, size_t errlen)
{
    struct rank_arg *a = arg;
    size_t total = 0, at = 0;
    char *out;

    msgs[a->rank] = blob;
    lens[a->rank] = a->rank == 2 && garble && len > 3 ? 3 : len;
    pthread_barrier_wait (&bar);
    for (int r = 0; r < N; r++)
        total += lens[r];
    out = malloc (total + 1);
    for (int r = 0; r < N; r++) {
        memcpy (out + at, msgs[r], lens[r]);
        off[r] = at;
        lens_out[r] = lens[r];
        at += lens[r];
    }
    pthread_barrier_wait (&bar);
    if (fail_round) {
        free (out);
        snprintf (err, errlen, "the parent failed");
        return DDP_ETIMEDOUT;
    }
    *all = out;
    return 0;
}

#define EXPECT(cond, ...)                                                     \
    do {                                                                      \
        if (!(cond) && a->failures++ == 0)                                    \
            snprintf (a->why, sizeof (a->why), __VA_ARGS__);                  \
    } while (0)

static void *rank_main (void *arg)
{
    struct rank_arg *a = arg;
    struct bootstrap_group spec = { .rank = a->rank, .size = N,
                                    .rank_node = nodes, .job_id = "job/0:1",
                                    .round = round_fn, .arg = a };
    struct bootstrap *b = NULL;
    const struct bootstrap_info *in;
    char err[120], mine[16], gl[16];
    void *blob = NULL, *all = NULL;
    size_t len, off[N], alen[N];
    int rank_node[N], *ranks = NULL, n = 0, rc;

    rc = bootstrap_create_group (&b, &spec, 5.0, "DDP_TIMEOUT", err,
                                 sizeof (err));
    EXPECT (rc == 0, "create: %s", err);
    if (rc)
        return NULL;
    in = bootstrap_info (b);
    EXPECT (in->rank == a->rank && in->size == N, "identity");
    EXPECT (in->node_rank == nodes[a->rank] && in->num_nodes == 2,
            "node %d of %d", in->node_rank, in->num_nodes);
    EXPECT (in->local_size == (a->rank < 2 ? 2 : 1)
            && in->local_rank == (a->rank < 2 ? a->rank : 0),
            "local %d of %d", in->local_rank, in->local_size);
    EXPECT (strcmp (in->method, "group") == 0
            && strcmp (in->job_id, "job/0:1") == 0, "method and job id");
    EXPECT (bootstrap_layout (b, rank_node, err, sizeof (err)) == 0
            && memcmp (rank_node, nodes, sizeof (nodes)) == 0, "layout");
    EXPECT (bootstrap_node_ranks (b, 0, &ranks, &n, err, sizeof (err)) == 0
            && n == 2 && ranks[0] == 0 && ranks[1] == 1, "node 0's ranks");
    free (ranks);
    /* A sparse round: a local blob from everyone, a global one from
     * ranks 0 and 2. */
    snprintf (mine, sizeof (mine), "local-%d", a->rank);
    snprintf (gl, sizeof (gl), "global-%d", a->rank);
    EXPECT (bootstrap_put (b, BOOTSTRAP_LOCAL, mine, strlen (mine) + 1, err,
                           sizeof (err)) == 0, "put local: %s", err);
    if (a->rank != 1)
        EXPECT (bootstrap_put (b, BOOTSTRAP_GLOBAL, gl, strlen (gl) + 1, err,
                               sizeof (err)) == 0, "put global: %s", err);
    EXPECT (bootstrap_sync (b, err, sizeof (err)) == 0, "sync: %s", err);
    for (int r = 0; r < N; r++) {
        rc = bootstrap_get (b, r, BOOTSTRAP_LOCAL, &blob, &len, err,
                            sizeof (err));
        if (nodes[r] == nodes[a->rank]) {
            char want[16];
            snprintf (want, sizeof (want), "local-%d", r);
            EXPECT (rc == 0 && strcmp (blob, want) == 0, "local blob of %d",
                    r);
        }
        else
            EXPECT (rc == DDP_EINVAL, "local blob of another node: %d", rc);
        free (blob);
        rc = bootstrap_get (b, r, BOOTSTRAP_GLOBAL, &blob, &len, err,
                            sizeof (err));
        EXPECT (r == 1 ? rc == DDP_EMISMATCH : rc == 0,
                "global blob of %d: %d", r, rc);
        free (blob);
    }
    /* An exchange. */
    rc = bootstrap_exchange (b, gl, strlen (gl) + 1, &all, off, alen, err,
                             sizeof (err));
    EXPECT (rc == 0, "exchange: %s", err);
    for (int r = 0; rc == 0 && r < N; r++) {
        char want[16];
        snprintf (want, sizeof (want), "global-%d", r);
        EXPECT (strcmp ((char *)all + off[r], want) == 0, "exchange [%d]", r);
    }
    free (all);
    /* A message cut short. */
    if (a->rank == 0)
        garble = 1;
    pthread_barrier_wait (&bar);
    rc = bootstrap_exchange (b, gl, strlen (gl) + 1, &all, off, alen, err,
                             sizeof (err));
    EXPECT (rc == DDP_EMISMATCH && strstr (err, "group rank 2 sent a "
                                           "malformed"), "malformed: %d %s",
            rc, err);
    pthread_barrier_wait (&bar);
    if (a->rank == 0) {
        garble = 0;
        fail_round = 1;
    }
    pthread_barrier_wait (&bar);
    rc = bootstrap_fence (b, err, sizeof (err));
    EXPECT (rc == DDP_ETIMEDOUT && strstr (err, "the parent failed"),
            "a failed round: %d %s", rc, err);
    /* After the set-up no round goes out. */
    bootstrap_group_close (b);
    rc = bootstrap_fence (b, err, sizeof (err));
    EXPECT (rc == DDP_EINVAL && strstr (err, "after its set-up"),
            "a round after the set-up: %d %s", rc, err);
    EXPECT (bootstrap_abort (b, 1, "x") == DDP_ENOTSUP, "abort");
    bootstrap_destroy (b);
    return NULL;
}

int main (void)
{
    struct rank_arg a[N];
    pthread_t t[N];
    struct bootstrap *b = NULL;
    char err[256];
    struct bootstrap_group bad = { .rank = 3, .size = N, .rank_node = nodes,
                                   .job_id = "x", .round = round_fn };

    plan (N + 1);
    pthread_barrier_init (&bar, NULL, N);
    for (int r = 0; r < N; r++) {
        a[r] = (struct rank_arg){ .rank = r };
        pthread_create (&t[r], NULL, rank_main, &a[r]);
    }
    for (int r = 0; r < N; r++) {
        pthread_join (t[r], NULL);
        ok (a[r].failures == 0, "group rank %d: every round as expected%s%s",
            r, a[r].failures ? ": first failure: " : "", a[r].why);
    }
    ok (bootstrap_create_group (&b, &bad, 1.0, "DDP_TIMEOUT", err,
                                sizeof (err)) == DDP_EINVAL && !b,
        "a rank out of the group is refused");
    pthread_barrier_destroy (&bar);
    done_testing ();
}
