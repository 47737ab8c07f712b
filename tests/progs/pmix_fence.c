/* pmix_fence.c - is a PMIx fence a barrier?  What the step's PMIx server
 * does, asked plainly (t0125).  No libddp.
 *
 *   pmix_fence collect|nocollect ITERS
 *
 * ITERS times: every rank puts a fresh key and commits; every rank but the
 * last then sleeps LAG (20 ms); each notes when it enters the fence and
 * when it leaves it.  "collect" fences with PMIX_COLLECT_DATA (libddp's
 * bootstrap rounds), "nocollect" without.  Then the notes are exchanged
 * (a collecting fence) and the last rank prints one line:
 *
 *   fence WAY iters N early E margin_ms M
 *
 * E: fences that some rank left before another had entered them (not a
 * barrier); M: the smallest time from the last rank's entry to the first
 * rank's exit, over all fences (negative when E > 0).  The times come from
 * CLOCK_MONOTONIC, which the ranks share only on one machine: the test
 * cluster's nodes are all on localhost.  Exits 0 when PMIx answered every
 * call (whatever E is: the test judges), 1 if a call failed, 2 when PMIx
 * could not start.
 *
 * Seen under Slurm 22.05 with PMIx 4.2.2 and Slurm 24.11 with PMIx 5
 * (2026-11-28): "nocollect" kept a rank that is alone on its node some
 * 0.02 ms, every time (-N2 -n4 and -N2 -n2; with two ranks on each node it
 * held), so the others were still 20 ms away.  Slurm's mpi/pmix runs a
 * fence that collects nothing on its tree collective, one that collects
 * on its ring. */
#include "config.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pmix.h>

#include "pmix_progs.h"

#define LAG 0.020 /* seconds the other ranks come late by */

static pmix_proc_t me;

static double now (void)
{
    struct timespec t;

    clock_gettime (CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Rank r's notes (2 * iters times: enters, then leaves) into t. */
static pmix_status_t get_notes (uint32_t r, int iters, double *t)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    pmix_status_t rc;
    size_t len = 2 * (size_t)iters * sizeof (double);

    PMIX_LOAD_PROCID (&p, me.nspace, r);
    rc = PMIx_Get (&p, "fence.notes", NULL, 0, &v);
    if (rc == PMIX_SUCCESS
        && (!v || v->type != PMIX_BYTE_OBJECT || v->data.bo.size != len))
        rc = PMIX_ERR_BAD_PARAM;
    if (rc == PMIX_SUCCESS)
        memcpy (t, v->data.bo.bytes, len);
    if (v)
        PMIX_VALUE_RELEASE (v);
    return rc;
}

/* Judge the notes of all size ranks and print the line.  Returns PMIx's
 * status of the reads. */
static pmix_status_t judge (const char *way, uint32_t size, int iters)
{
    double *last_in = calloc ((size_t)iters, sizeof (double));
    double *first_out = calloc ((size_t)iters, sizeof (double));
    double *t = calloc (2 * (size_t)iters, sizeof (double));
    double margin = 1e9;
    pmix_status_t rc = PMIX_SUCCESS;
    int early = 0;

    if (!last_in || !first_out || !t)
        rc = PMIX_ERR_NOMEM;
    for (uint32_t r = 0; r < size && rc == PMIX_SUCCESS; r++) {
        if ((rc = get_notes (r, iters, t)) != PMIX_SUCCESS)
            break;
        for (int k = 0; k < iters; k++) {
            if (r == 0 || t[k] > last_in[k])
                last_in[k] = t[k];
            if (r == 0 || t[iters + k] < first_out[k])
                first_out[k] = t[iters + k];
        }
    }
    for (int k = 0; k < iters && rc == PMIX_SUCCESS; k++) {
        double m = first_out[k] - last_in[k];
        early += m < 0;
        margin = m < margin ? m : margin;
    }
    if (rc == PMIX_SUCCESS)
        printf ("fence %s iters %d early %d margin_ms %.2f\n", way, iters,
                early, margin * 1e3);
    free (last_in);
    free (first_out);
    free (t);
    return rc;
}

int main (int argc, char **argv)
{
    pmix_status_t rc = PMIX_SUCCESS;
    const struct timespec lag = {0, (long)(LAG * 1e9)};
    double *notes;
    uint32_t size;
    uint64_t word;
    char key[32];
    bool collect;
    int iters, i;

    if (argc != 3 || (strcmp (argv[1], "collect") != 0
                      && strcmp (argv[1], "nocollect") != 0)
        || (iters = atoi (argv[2])) < 1 || iters > 10000) {
        fprintf (stderr, "usage: pmix_fence collect|nocollect ITERS"
                 " (1 to 10000)\n");
        return 2;
    }
    collect = strcmp (argv[1], "collect") == 0;
    if (!(notes = calloc (2 * (size_t)iters, sizeof (double)))
        || PMIx_Init (&me, NULL, 0) != PMIX_SUCCESS) {
        printf ("fence - init failed\n");
        free (notes);
        return 2;
    }
    size = progs_job_size (&me);
    for (i = 0; i < iters && size > 0 && rc == PMIX_SUCCESS; i++) {
        word = (uint64_t)i;
        snprintf (key, sizeof (key), "fence.%d", i);
        rc = progs_put_commit (key, &word, sizeof (word));
        if (rc != PMIX_SUCCESS)
            break;
        if (me.rank != size - 1)
            nanosleep (&lag, NULL);
        notes[i] = now ();
        rc = progs_fence (collect);
        notes[iters + i] = now ();
    }
    /* The notes to every node, read by the last rank; then leave together
     * (a collecting fence on a fresh key), so nobody's node is gone while
     * it reads. */
    if (rc == PMIX_SUCCESS && size > 0
        && (rc = progs_put_commit ("fence.notes", notes,
                                   2 * (size_t)iters * sizeof (double)))
               == PMIX_SUCCESS
        && (rc = progs_fence (true)) == PMIX_SUCCESS && me.rank == size - 1)
        rc = judge (argv[1], size, iters);
    word = 0;
    if (rc == PMIX_SUCCESS && size > 0
        && (rc = progs_put_commit ("fence.bye", &word, sizeof (word)))
               == PMIX_SUCCESS)
        rc = progs_fence (true);
    if (rc != PMIX_SUCCESS || size == 0)
        printf ("fence %u %s at %d: %s\n", me.rank, argv[1], i,
                size ? PMIx_Error_string (rc) : "no job size");
    fflush (stdout);
    free (notes);
    PMIx_Finalize (NULL, 0);
    return rc == PMIX_SUCCESS && size > 0 ? 0 : 1;
}
