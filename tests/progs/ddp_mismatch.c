/* ddp_mismatch.c - ranks that call collectives with different arguments.
 *
 * Usage: ddp_mismatch CASE [COUNT]
 *   self     every rank passes itself as the root of a bcast
 *   swap     rank r passes (r + 1) % size as the root of a gather
 *   op       an all-reduce: rank 1 passes MAX, the others SUM
 *   kind     rank 1 calls an all-reduce where the others call a bcast
 *   skip     rank 1 leaves out a barrier before a bcast
 *   same     every rank makes the same calls (none differ)
 *   dtype    an all-reduce (SUM) of COUNT elements: float32 on rank 1,
 *            int32 on the others (the same bytes)
 *   barrier  rank 1 all-reduces COUNT int32 where the others call a
 *            barrier
 * COUNT: elements a call (default 2).  Each rank makes its call
 * of the case (after a first all-reduce that every rank makes alike, so
 * that the case's call is the job's second collective; "skip": its third
 * on the ranks that keep the barrier), then a barrier, and prints "rank
 * R: case CASE: RC (NAME)" with the first call's return code, then
 * "rank R: barrier: RC".  Exits 0 whatever the calls returned (the test
 * reads the lines), 2 on a usage or init error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp.h"

static int known (const char *c)
{
    static const char *const cases[] = { "self", "swap", "op", "kind",
                                         "skip", "same", "dtype",
                                         "barrier" };

    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
        if (strcmp (c, cases[i]) == 0)
            return 1;
    return 0;
}

static int run_case (const char *c, float *a, float *b, size_t n, int r,
                     int size)
{
    int rc;

    if (strcmp (c, "self") == 0)
        return ddp_bcast (a, n, DDP_FLOAT32, r);
    if (strcmp (c, "swap") == 0)
        return ddp_gather (a, b, n, DDP_FLOAT32, (r + 1) % size);
    if (strcmp (c, "op") == 0)
        return ddp_allreduce (a, b, n, DDP_FLOAT32, r == 1 ? DDP_MAX : DDP_SUM);
    if (strcmp (c, "kind") == 0)
        return r == 1 ? ddp_allreduce (a, b, n, DDP_FLOAT32, DDP_SUM)
                      : ddp_bcast (a, n, DDP_FLOAT32, 0);
    if (strcmp (c, "skip") == 0) {
        if (r != 1 && (rc = ddp_barrier ()) != 0)
            return rc;
        return ddp_bcast (a, n, DDP_FLOAT32, 0);
    }
    if (strcmp (c, "dtype") == 0)
        return ddp_allreduce (a, b, n, r == 1 ? DDP_FLOAT32 : DDP_INT32,
                              DDP_SUM);
    if (strcmp (c, "barrier") == 0)
        return r == 1 ? ddp_allreduce (a, b, n, DDP_INT32, DDP_SUM)
                      : ddp_barrier ();
    return ddp_bcast (a, n, DDP_FLOAT32, size - 1); /* same */
}

int main (int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    size_t n = argc > 2 ? strtoul (argv[2], NULL, 10) : 2;
    float *a, *b, one = 1, sum;
    int rc, r, size;

    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "ddp_mismatch: init: %s\n", ddp_strerror (rc));
        return 2;
    }
    r = ddp_rank ();
    size = ddp_world_size ();
    a = calloc (n ? n : 1, sizeof (*a));
    b = calloc ((n ? n : 1) * (size_t)size, sizeof (*b));
    if (!a || !b || size < 2 || !known (c)) {
        fprintf (stderr, "usage: ddp_mismatch self|swap|op|kind|skip|same|"
                 "dtype|barrier [COUNT], 2 ranks or more\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(r + 1);
    if ((rc = ddp_allreduce (&one, &sum, 1, DDP_FLOAT32, DDP_SUM)) == 0)
        rc = run_case (c, a, b, n, r, size);
    printf ("rank %d: case %s: %d (%s)\n", r, c, rc, ddp_strerror (rc));
    rc = ddp_barrier ();
    printf ("rank %d: barrier: %d\n", r, rc);
    free (a);
    free (b);
    ddp_finalize ();
    return 0;
}
