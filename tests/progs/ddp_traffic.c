/* ddp_traffic.c - run each collective given once, for the traffic counters
 * (DDP_STATS) that t0260 checks against the algorithms' formulas.
 *
 * Usage: ddp_traffic KIND:BYTES[:ROOT] ...
 *   KIND  barrier, bcast, reduce, allreduce, gather, allgather
 *   BYTES the buffer of bcast, reduce and allreduce (float32, a multiple of
 *         4); each rank's part of gather and allgather
 * Results are checked (small integers, exact in any order); each rank
 * prints "ok" or what failed and exits 0 or 1 (no collective of its own
 * after them: the counters hold only the calls asked for, and the barriers
 * of ddp_init() and ddp_finalize()).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp.h"

static int rank, size;

/* One call of kind on bytes; returns the number of wrong elements, or -1
 * when the call failed. */
static long run (const char *kind, size_t bytes, int root)
{
    size_t n = bytes / sizeof (float), all = n * (size_t)size;
    float *a = calloc (all + 1, sizeof (float));
    float *b = calloc (all + 1, sizeof (float));
    long bad = 0;
    int rc = 0;

    if (!a || !b) {
        free (a);
        free (b);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (float)((size_t)rank + i % 7);
    if (strcmp (kind, "barrier") == 0)
        rc = ddp_barrier ();
    else if (strcmp (kind, "allreduce") == 0 || strcmp (kind, "reduce") == 0) {
        float base = (float)size * (float)(size - 1) / 2;
        rc = kind[0] == 'a' ? ddp_allreduce (a, b, n, DDP_FLOAT32, DDP_SUM)
                            : ddp_reduce (a, b, n, DDP_FLOAT32, DDP_SUM, root);
        for (size_t i = 0; (kind[0] == 'a' || rank == root) && i < n; i++)
            bad += b[i] != base + (float)size * (float)(i % 7);
    }
    else if (strcmp (kind, "bcast") == 0) {
        rc = ddp_bcast (a, n, DDP_FLOAT32, root);
        for (size_t i = 0; i < n; i++)
            bad += a[i] != (float)((size_t)root + i % 7);
    }
    else {
        bool ag = strcmp (kind, "allgather") == 0;
        rc = ag ? ddp_allgather (a, b, n, DDP_FLOAT32)
                : ddp_gather (a, b, n, DDP_FLOAT32, root);
        for (size_t i = 0; (ag || rank == root) && i < all; i++)
            bad += b[i] != (float)(i / n + (i % n) % 7);
    }
    free (a);
    free (b);
    if (rc != 0)
        fprintf (stderr, "rank %d: %s of %zu bytes: %s\n", rank, kind, bytes,
                 ddp_strerror (rc));
    return rc != 0 ? -1 : bad;
}

int main (int argc, char **argv)
{
    long failed = 0;
    int rc;

    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    rank = ddp_rank ();
    size = ddp_world_size ();
    for (int i = 1; i < argc; i++) {
        char kind[32];
        size_t bytes = 0;
        int root = 0;
        long r;
        if (sscanf (argv[i], "%31[a-z]:%zu:%d", kind, &bytes, &root) < 2
            || bytes % sizeof (float) || root < 0 || root >= size) {
            fprintf (stderr, "usage: ddp_traffic KIND:BYTES[:ROOT] ... (%s)\n",
                     argv[i]);
            return 2;
        }
        if ((r = run (kind, bytes, root)) != 0) {
            fprintf (stderr, "rank %d: %s:%zu: %ld wrong\n", rank, kind, bytes,
                     r);
            failed++;
        }
    }
    printf ("ddp_traffic rank %d/%d: %s\n", rank, size, failed ? "FAILED"
                                                              : "ok");
    ddp_finalize ();
    return failed != 0;
}
