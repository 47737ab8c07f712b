/* pmix_fence.c - is a PMIx fence a barrier?  What the step's PMIx server
 * does, asked plainly (t0125).  No libddp.
 *
 *   pmix_fence collect|nocollect ITERS
 *
 * ITERS times: every rank puts a fresh key and commits; every rank but the
 * last then sleeps LAG (20 ms) and fences; the last rank fences at once and
 * times its wait.  A fence that is a barrier keeps it at least about LAG.
 * "collect" fences with PMIX_COLLECT_DATA (libddp's bootstrap rounds),
 * "nocollect" without.  The last rank prints one line:
 *
 *   fence WAY iters N early E min_ms M
 *
 * E: fences that kept it under LAG / 2.  Every rank exits 0 when PMIx
 * answered every call (whatever E is: the test judges), 1 if a call
 * failed, 2 when PMIx could not start.
 *
 * Seen under Slurm 22.05 with PMIx 4.2.2 (2026-11-28, 5 runs of 20 each):
 * "nocollect" kept a rank that is alone on its node 0.02 ms, every time
 * (-N2 -n4 and -N2 -n2), while with two ranks on each node it kept them
 * 19.9 ms or more; "collect" kept it 11.6 ms or more (the others leave
 * the previous fence a little before it).  Slurm's mpi/pmix runs a fence
 * that collects nothing on its tree collective, one that collects on its
 * ring. */
#include "config.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pmix.h>

#define LAG 0.020 /* seconds the other ranks come late by */

static double now (void)
{
    struct timespec t;

    clock_gettime (CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Put a fresh 8-byte key of iteration i and commit.  Returns PMIx's
 * status. */
static pmix_status_t put_fresh (int i)
{
    char key[32];
    uint64_t word = (uint64_t)i;
    pmix_value_t val;
    pmix_status_t rc;

    snprintf (key, sizeof (key), "fence.%d", i);
    PMIX_VALUE_CONSTRUCT (&val);
    val.type = PMIX_UINT64;
    val.data.uint64 = word;
    rc = PMIx_Put (PMIX_GLOBAL, key, &val);
    return rc == PMIX_SUCCESS ? PMIx_Commit () : rc;
}

int main (int argc, char **argv)
{
    pmix_proc_t me, wild;
    pmix_value_t *v = NULL;
    pmix_info_t q;
    pmix_status_t rc = PMIX_SUCCESS;
    bool yes = true, collect;
    const struct timespec lag = {0, (long)(LAG * 1e9)};
    double min_wait = 1e9;
    uint32_t size = 0;
    int iters, early = 0, i;

    if (argc != 3 || (strcmp (argv[1], "collect") != 0
                      && strcmp (argv[1], "nocollect") != 0)
        || (iters = atoi (argv[2])) < 1) {
        fprintf (stderr, "usage: pmix_fence collect|nocollect ITERS\n");
        return 2;
    }
    collect = strcmp (argv[1], "collect") == 0;
    if (PMIx_Init (&me, NULL, 0) != PMIX_SUCCESS) {
        printf ("fence - init failed\n");
        return 2;
    }
    PMIX_LOAD_PROCID (&wild, me.nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get (&wild, PMIX_JOB_SIZE, NULL, 0, &v) == PMIX_SUCCESS && v
        && v->type == PMIX_UINT32)
        size = v->data.uint32;
    if (v)
        PMIX_VALUE_RELEASE (v);
    PMIX_INFO_CONSTRUCT (&q);
    PMIX_INFO_LOAD (&q, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    for (i = 0; i < iters && size > 0 && rc == PMIX_SUCCESS; i++) {
        double t;
        if ((rc = put_fresh (i)) != PMIX_SUCCESS)
            break;
        if (me.rank != size - 1)
            nanosleep (&lag, NULL);
        t = now ();
        rc = PMIx_Fence (NULL, 0, collect ? &q : NULL, collect ? 1 : 0);
        t = now () - t;
        if (t < min_wait)
            min_wait = t;
        if (t < LAG / 2)
            early++;
    }
    /* Leave together: a collecting fence on a fresh key. */
    if (rc == PMIX_SUCCESS && size > 0
        && (rc = put_fresh (iters)) == PMIX_SUCCESS)
        rc = PMIx_Fence (NULL, 0, &q, 1);
    PMIX_INFO_DESTRUCT (&q);
    if (rc != PMIX_SUCCESS || size == 0)
        printf ("fence %u %s at %d: %s\n", me.rank, argv[1], i,
                size ? PMIx_Error_string (rc) : "no job size");
    else if (me.rank == size - 1)
        printf ("fence %s iters %d early %d min_ms %.2f\n", argv[1], iters,
                early, min_wait * 1e3);
    fflush (stdout);
    PMIx_Finalize (NULL, 0);
    return rc == PMIX_SUCCESS && size > 0 ? 0 : 1;
}
