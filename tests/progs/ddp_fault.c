/* ddp_fault.c - make one rank fail and watch the others notice.
 *
 * Usage: ddp_fault MODE RANK [OP]
 *   MODE  kill    RANK kills itself (SIGKILL) after 200 collectives
 *         abort   RANK calls ddp_abort (7, ...) after 200 collectives
 *         absent  RANK sleeps 600 s before its 201st collective
 *         early   RANK kills itself before ddp_init
 *         leave   RANK calls ddp_finalize after 200 collectives, while the
 *                 others sleep 2 s there, and exits 0; it prints "rank R:
 *                 200 calls in S s" and "rank R: left: ddp_finalize
 *                 returned CODE after S s"
 *         leavemid  the same, the others sleeping 0.3 s: they come while
 *                 RANK waits in ddp_finalize's barrier
 *         exit    RANK exits 0 after 200 collectives, without ddp_finalize
 *         after   every rank calls ddp_finalize after 200 collectives,
 *                 then OP: prints "rank R: after ddp_finalize: CODE (why)"
 *                 and exits 0 when that failed
 *   OP    barrier (default) or allreduce (4 MiB floats per call)
 * Every rank loops on OP until it fails; a surviving rank prints
 * "rank R: failed after N calls in S s: CODE (message): WHY" (WHY: its
 * ddp_last_error) and exits 3; a rank whose ddp_init failed prints "rank ?:
 * init failed after S s: CODE (message)" and exits 3.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp.h"

static double now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main (int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "kill";
    int bad = argc > 2 ? atoi (argv[2]) : 1;
    bool big = argc > 3 && strcmp (argv[3], "allreduce") == 0;
    size_t n = (4u << 20) / sizeof (float);
    float *a = calloc (n, sizeof (float));
    /* Before init only the launcher's variables say who we are. */
    const char *procid = getenv ("SLURM_PROCID") ? getenv ("SLURM_PROCID")
                                                 : getenv ("RANK");
    double t0 = 0, start;
    long i;
    int rc;

    if (!a)
        return 1;
    if (strcmp (mode, "early") == 0 && procid && atoi (procid) == bad)
        raise (SIGKILL);
    start = now ();
    if ((rc = ddp_init ()) != 0) {
        printf ("rank ?: init failed after %.1f s: %d (%s)\n", now () - start,
                rc, ddp_strerror (rc));
        free (a);
        return 3;
    }
    start = now ();
    for (i = 0;; i++) {
        if (i == 200 && strcmp (mode, "after") == 0) {
            int me = ddp_rank ();
            ddp_finalize ();
            rc = big ? ddp_allreduce (a, a, n, DDP_FLOAT32, DDP_SUM)
                     : ddp_barrier ();
            printf ("rank %d: after ddp_finalize: %d (%s)\n", me, rc,
                    ddp_last_error ());
            free (a);
            return rc == 0;
        }
        if (i == 200 && strcmp (mode, "leave") == 0 && ddp_rank () != bad)
            sleep (2);
        if (i == 200 && strcmp (mode, "leavemid") == 0 && ddp_rank () != bad)
            usleep (300 * 1000);
        if (i == 200 && ddp_rank () == bad) {
            if (strncmp (mode, "leave", 5) == 0) {
                int me = ddp_rank ();
                double t = now ();

                printf ("rank %d: 200 calls in %.1f s\n", me, t - start);
                rc = ddp_finalize ();
                printf ("rank %d: left: ddp_finalize returned %d after "
                        "%.1f s\n", me, rc, now () - t);
                free (a);
                return 0;
            }
            if (strcmp (mode, "exit") == 0) {
                fflush (stdout);
                exit (0);
            }
            if (strcmp (mode, "kill") == 0)
                raise (SIGKILL);
            if (strcmp (mode, "abort") == 0)
                ddp_abort (7, "ddp_fault: giving up on purpose");
            if (strcmp (mode, "absent") == 0)
                sleep (600);
        }
        if (i == 200)
            t0 = now ();
        rc = big ? ddp_allreduce (a, a, n, DDP_FLOAT32, DDP_SUM)
                 : ddp_barrier ();
        if (rc != 0)
            break;
        if (i > 100000000) {
            free (a);
            return 0;
        }
    }
    printf ("rank %d: failed after %ld calls in %.1f s: %d (%s): %s\n",
            ddp_rank (), i, t0 ? now () - t0 : 0, rc, ddp_strerror (rc),
            ddp_last_error ());
    fflush (stdout);
    rc = ddp_barrier ();
    printf ("rank %d: next call: %d (%s)\n", ddp_rank (), rc, ddp_strerror (rc));
    fflush (stdout);    /* srun -K may kill us once another rank has exited */
    ddp_finalize ();
    free (a);
    return 3;
}
