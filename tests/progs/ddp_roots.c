/* ddp_roots.c - ranks that name different roots, then one more call.
 *
 * Usage: ddp_roots KIND CASE BYTES NEXT
 *   KIND   bcast, gather or reduce (SUM) of BYTES / 4 float32
 *   CASE   self    every rank names itself the root
 *          one     rank 1 names 1, the others 0
 *          local0  every rank names its node's local rank 0 (the global
 *                  rank of the node's first rank in a block layout:
 *                  node x ranks per node)
 *          same    every rank names 0 (nothing differs)
 *   NEXT   barrier, allreduce, bcast0 (a bcast of 2 float32 from rank 0)
 *          or finalize: the call after it
 * After a first all-reduce that every rank makes alike (the case's call
 * is every rank's collective #3), each rank makes the case's call, then
 * NEXT, and prints "rank R: call: RC", "rank R: next: RC" and "rank R:
 * finalize: RC" (ddp_finalize last whatever NEXT is: when NEXT is
 * finalize, its code is both), and
 * "rank R: data: D" with the first float it holds after a bcast (rank
 * r's data is r + 1).  Exits 0 whatever the calls returned (the test
 * reads the lines), 2 on a usage or init error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp.h"

/* The root rank r names in case c, or -1 for an unknown case. */
static int root_of (const char *c, int r)
{
    if (strcmp (c, "self") == 0)
        return r;
    if (strcmp (c, "one") == 0)
        return r == 1 ? 1 : 0;
    if (strcmp (c, "local0") == 0)
        return ddp_node_rank () * ddp_local_world_size ();
    if (strcmp (c, "same") == 0)
        return 0;
    return -1;
}

/* The case's call: KIND k with root over n floats in a (b: room for
 * every rank's). */
static int call (const char *k, int root, float *a, float *b, size_t n)
{
    if (strcmp (k, "bcast") == 0)
        return ddp_bcast (a, n, DDP_FLOAT32, root);
    if (strcmp (k, "gather") == 0)
        return ddp_gather (a, b, n, DDP_FLOAT32, root);
    return ddp_reduce (a, b, n, DDP_FLOAT32, DDP_SUM, root);
}

/* The call after it: NEXT x. */
static int next (const char *x, float *a, float *b)
{
    if (strcmp (x, "barrier") == 0)
        return ddp_barrier ();
    if (strcmp (x, "allreduce") == 0)
        return ddp_allreduce (a, b, 2, DDP_FLOAT32, DDP_SUM);
    if (strcmp (x, "bcast0") == 0)
        return ddp_bcast (a, 2, DDP_FLOAT32, 0);
    return ddp_finalize ();
}

static int usage (void)
{
    fprintf (stderr, "usage: ddp_roots bcast|gather|reduce "
             "self|one|local0|same BYTES barrier|allreduce|bcast0|finalize, "
             "2 ranks or more\n");
    return 2;
}

int main (int argc, char **argv)
{
    const char *k = argc > 4 ? argv[1] : "", *c = argc > 4 ? argv[2] : "";
    const char *x = argc > 4 ? argv[4] : "";
    size_t n = argc > 4 ? strtoul (argv[3], NULL, 10) / sizeof (float) : 0;
    float *a, *b, one = 1, sum;
    int rc, r, size;

    if (strcmp (k, "bcast") && strcmp (k, "gather") && strcmp (k, "reduce"))
        return usage ();
    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "ddp_roots: init: %s\n", ddp_strerror (rc));
        return 2;
    }
    r = ddp_rank ();
    size = ddp_world_size ();
    a = calloc (n ? n : 2, sizeof (*a));
    b = calloc ((n ? n : 2) * (size_t)size, sizeof (*b));
    if (!a || !b || size < 2 || n == 0 || root_of (c, r) < 0)
        return usage ();
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(r + 1);
    if ((rc = ddp_allreduce (&one, &sum, 1, DDP_FLOAT32, DDP_SUM)) == 0)
        rc = call (k, root_of (c, r), a, b, n);
    printf ("rank %d: call: %d\n", r, rc);
    if (strcmp (k, "bcast") == 0)
        printf ("rank %d: data: %g\n", r, (double)a[0]);
    fflush (stdout);
    rc = next (x, a, b);
    printf ("rank %d: next: %d\n", r, rc);
    if (strcmp (x, "finalize") != 0)
        rc = ddp_finalize ();
    printf ("rank %d: finalize: %d\n", r, rc);
    free (a);
    free (b);
    return 0;
}
