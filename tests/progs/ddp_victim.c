/* ddp_victim.c - a job the failure tests (tests/t08NN-*.t) break on purpose.
 *
 *   ddp_victim MODE DIR
 *
 * Every rank writes DIR/pid.RANK ("PID HOST JOBID NODE" and a newline, NODE
 * being SLURMD_NODENAME; written to a temporary name and renamed, so a reader
 * never sees half of it) once it is in the phase the test wants to break, and
 * DIR/exit.RANK with how it ended.
 * Modes:
 *   barrier    init, then ddp_barrier() in a loop
 *   allreduce  init, then a large ddp_allreduce() (DDP_VICTIM_COUNT floats,
 *              default 8 Mi = 32 MiB) in a loop
 *   preinit    the ranks in DDP_VICTIM_RANKS (default "1") write their pid
 *              file and sleep before ddp_init(); the others init at once
 *   skip       init and one barrier; then the ranks in DDP_VICTIM_RANKS do
 *              not enter the next barrier (they stay away until every
 *              other rank ended, at most DDP_VICTIM_SKIP_SLEEP seconds,
 *              default 2 x DDP_TIMEOUT + 1, then exit 0); the others do
 *   abort      init and one barrier; the ranks in DDP_VICTIM_RANKS call
 *              ddp_abort(3, ...), the others loop on ddp_barrier()
 *   late       init, then ddp_barrier() in a loop; the ranks in
 *              DDP_VICTIM_RANKS stay away (as in skip) before the
 *              DDP_VICTIM_AT-th barrier of the loop (default 5), then exit 0
 *   slow       init, then DDP_VICTIM_AT (default 50) allreduces of one
 *              float, the ranks in DDP_VICTIM_RANKS sleeping 20 ms before
 *              each; then ddp_finalize() and exit 0 (the straggler
 *              report's test)
 *   late-first init; the ranks in DDP_VICTIM_RANKS sleep 1.5 s, then every
 *              rank makes one ddp_allreduce() (SUM of 1 over the ranks)
 *              and prints "ddp_victim: rank R: allreduce RC VALUE"; exit 0
 *   fail-main  ddp_run_on_main() whose function fails on rank 0
 *   fail-first ddp_rank0_first() whose function fails on rank 0
 *   until      init, then one-float ddp_allreduce()s (MAX of "my
 *              DDP_VICTIM_SECS are up") until every rank agrees that they
 *              are; prints "ddp_victim: rank R: done" and exits 0 (a test
 *              stops and resumes a rank meanwhile: nobody may fail)
 * Loops stop after DDP_VICTIM_SECS seconds (default 60): a rank that gets
 * there never noticed its peer's death, prints "NOT NOTICED" and exits 4.
 * A failing call prints "ddp_victim: rank R: CALL failed: MESSAGE (CODE)" on
 * stdout, writes "CALL CODE SECONDS NODE" (how long that call took, and
 * SLURMD_NODENAME) to DIR/exit.RANK and exits 2.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp.h"

static const char *dir;
static int my_rank = -1;
static double call_start;   /* when the call in progress started */

static double now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Write "TEXT\n" to DIR/NAME.RANK through a temporary file and a rename. */
static void put_file (const char *name, const char *text)
{
    char tmp[4096], path[4096];
    FILE *f;

    snprintf (tmp, sizeof (tmp), "%s/.%s.%d.tmp", dir, name, my_rank);
    snprintf (path, sizeof (path), "%s/%s.%d", dir, name, my_rank);
    if (!(f = fopen (tmp, "w"))) {
        fprintf (stderr, "ddp_victim: %s: %s\n", tmp, strerror (errno));
        exit (5);
    }
    fprintf (f, "%s\n", text);
    if (fclose (f) != 0 || rename (tmp, path) < 0) {
        fprintf (stderr, "ddp_victim: %s: %s\n", path, strerror (errno));
        exit (5);
    }
}

/* The Slurm node this rank runs on ("-" outside Slurm). */
static const char *node_name (void)
{
    const char *node = getenv ("SLURMD_NODENAME");
    return node && *node ? node : "-";
}

static void ready (void)
{
    char text[512], host[256] = "?";

    const char *job = getenv ("SLURM_JOB_ID");

    gethostname (host, sizeof (host) - 1);
    snprintf (text, sizeof (text), "%d %s %s %s", (int)getpid (), host,
              job ? job : "-", node_name ());
    put_file ("pid", text);
}

static void finish (int code, const char *what)
{
    put_file ("exit", what);
    fflush (stdout);
    exit (code);
}

static void failed (const char *call, int rc)
{
    char what[256];

    double took = now () - call_start;

    printf ("ddp_victim: rank %d: %s failed: %s (%d)\n", my_rank, call,
            ddp_strerror (rc), rc);
    snprintf (what, sizeof (what), "%s %d %.2f %s", call, rc, took,
              node_name ());
    finish (2, what);
}

static double env_double (const char *name, double dflt)
{
    const char *s = getenv (name);
    char *end;
    double v;

    if (!s || !*s)
        return dflt;
    v = strtod (s, &end);
    return *end == '\0' && v >= 0 ? v : dflt;
}

/* Is R in the comma-separated list DDP_VICTIM_RANKS (default "1")? */
static bool is_victim (int r)
{
    const char *s = getenv ("DDP_VICTIM_RANKS");
    char *end;

    if (!s)
        s = "1";
    while (*s) {
        long v = strtol (s, &end, 10);
        if (end == s)
            return false;
        if (v == r)
            return true;
        s = *end == ',' ? end + 1 : end;
    }
    return false;
}

/* The rank before ddp_init(): what the plugin (or srun) put in the env. */
static int env_rank (void)
{
    const char *s = getenv ("RANK");

    if (!s)
        s = getenv ("SLURM_PROCID");
    return s ? atoi (s) : 0;
}

static void init (void)
{
    int rc;

    call_start = now ();
    rc = ddp_init ();

    if (rc < 0)
        failed ("ddp_init", rc);
    my_rank = ddp_rank ();
}

static void loop_barrier (double secs)
{
    double end = now () + secs;
    int rc;

    while ((call_start = now ()) < end) {
        if ((rc = ddp_barrier ()) < 0)
            failed ("ddp_barrier", rc);
    }
    printf ("ddp_victim: rank %d: NOT NOTICED\n", my_rank);
    finish (4, "not noticed");
}

static void loop_allreduce (double secs)
{
    size_t count = (size_t)env_double ("DDP_VICTIM_COUNT", 8 << 20);
    float *buf = calloc (count ? count : 1, sizeof (float));
    double end = now () + secs;
    bool first = true;
    int rc;

    if (!buf)
        finish (5, "out of memory");
    while ((call_start = now ()) < end) {
        if ((rc = ddp_allreduce (buf, buf, count, DDP_FLOAT32, DDP_SUM)) < 0) {
            free (buf);
            failed ("ddp_allreduce", rc);
        }
        if (first)
            ready ();
        first = false;
    }
    free (buf);
    printf ("ddp_victim: rank %d: NOT NOTICED\n", my_rank);
    finish (4, "not noticed");
}

/* Stay away (an absent or late rank) for up to SECS seconds, but no longer
 * than it takes every other rank to end (its DIR/exit.RANK is written just
 * before it exits): the test then does not wait out the whole absence
 * after the others gave up, and they gave up while this rank was still
 * alive, as the scenario needs.  Polls every 50 ms. */
static void stay_away (double secs)
{
    double end = now () + secs;
    int n = ddp_world_size ();

    while (now () < end) {
        int r;
        for (r = 0; r < n; r++) {
            char path[4096];
            if (is_victim (r))
                continue;
            snprintf (path, sizeof (path), "%s/exit.%d", dir, r);
            if (access (path, F_OK) != 0)
                break;
        }
        if (r == n)
            return;
        usleep (50000);
    }
}

static void loop_late (double secs, double timeout)
{
    int at = (int)env_double ("DDP_VICTIM_AT", 5), rc;
    double end = now () + secs;

    ready ();
    for (int i = 1; (call_start = now ()) < end; i++) {
        if (i == at && is_victim (my_rank)) {
            stay_away (env_double ("DDP_VICTIM_SKIP_SLEEP", 2 * timeout + 1));
            finish (0, "late");
        }
        if ((rc = ddp_barrier ()) < 0)
            failed ("ddp_barrier", rc);
    }
    printf ("ddp_victim: rank %d: NOT NOTICED\n", my_rank);
    finish (4, "not noticed");
}

static void loop_slow (void)
{
    int n = (int)env_double ("DDP_VICTIM_AT", 50), rc;
    float x = 1.0f;

    ready ();
    for (int i = 0; i < n; i++) {
        if (is_victim (my_rank))
            usleep (20000);
        call_start = now ();
        if ((rc = ddp_allreduce (&x, &x, 1, DDP_FLOAT32, DDP_MAX)) < 0)
            failed ("ddp_allreduce", rc);
    }
    if ((rc = ddp_finalize ()) < 0)
        failed ("ddp_finalize", rc);
    finish (0, "done");
}

static void late_first (void)
{
    float x = 1.0f;
    int rc;

    ready ();
    if (is_victim (my_rank))
        usleep (1500000);
    rc = ddp_allreduce (&x, &x, 1, DDP_FLOAT32, DDP_SUM);
    printf ("ddp_victim: rank %d: allreduce %d %g\n", my_rank, rc, x);
    finish (0, "done");
}

/* Mode until: the ranks agree on when to stop, so that none is left in a
 * call the others never make. */
static void loop_until (double secs)
{
    double end = now () + secs;
    float up = 0.0f;
    int rc;

    ready ();
    while (up == 0.0f) {
        up = now () >= end ? 1.0f : 0.0f;
        call_start = now ();
        if ((rc = ddp_allreduce (&up, &up, 1, DDP_FLOAT32, DDP_MAX)) < 0)
            failed ("ddp_allreduce", rc);
    }
    printf ("ddp_victim: rank %d: done\n", my_rank);
    finish (0, "done");
}

static int fail_on_main (void *arg)
{
    (void)arg;
    return ddp_is_main () ? 1 : 0;
}

static int post_ok (void *arg)
{
    (void)arg;
    return 0;
}

int main (int argc, char **argv)
{
    const char *mode;
    double secs, timeout;
    int rc;

    if (argc != 3) {
        fprintf (stderr, "usage: ddp_victim MODE DIR\n");
        return 5;
    }
    mode = argv[1];
    dir = argv[2];
    setvbuf (stdout, NULL, _IOLBF, 0);
    secs = env_double ("DDP_VICTIM_SECS", 60);
    timeout = env_double ("DDP_TIMEOUT", 30);

    if (strcmp (mode, "preinit") == 0) {
        my_rank = env_rank ();
        if (is_victim (my_rank)) {
            ready ();
            sleep ((unsigned)secs);
            finish (4, "victim not killed");
        }
        init ();
        ready ();
        loop_barrier (secs);
    }
    init ();
    if (strcmp (mode, "barrier") == 0) {
        call_start = now ();
        if ((rc = ddp_barrier ()) < 0)
            failed ("ddp_barrier", rc);
        ready ();
        loop_barrier (secs);
    }
    if (strcmp (mode, "allreduce") == 0)
        loop_allreduce (secs);
    if (strcmp (mode, "late-first") == 0)
        late_first ();
    if (strcmp (mode, "slow") == 0)
        loop_slow ();
    if (strcmp (mode, "late") == 0)
        loop_late (secs, timeout);
    if (strcmp (mode, "until") == 0)
        loop_until (secs);
    call_start = now ();
    if ((rc = ddp_barrier ()) < 0)
        failed ("ddp_barrier", rc);
    ready ();
    if (strcmp (mode, "skip") == 0) {
        if (is_victim (my_rank)) {
            stay_away (env_double ("DDP_VICTIM_SKIP_SLEEP", 2 * timeout + 1));
            finish (0, "skipped");
        }
        call_start = now ();
        if ((rc = ddp_barrier ()) < 0)
            failed ("ddp_barrier", rc);
        printf ("ddp_victim: rank %d: NOT NOTICED\n", my_rank);
        finish (4, "not noticed");
    }
    if (strcmp (mode, "abort") == 0) {
        if (is_victim (my_rank)) {
            rc = ddp_abort (3, "ddp_victim: aborting on purpose");
            printf ("ddp_victim: rank %d: ddp_abort returned %d\n", my_rank, rc);
            finish (6, "abort returned");
        }
        loop_barrier (secs);
    }
    if (strcmp (mode, "fail-main") == 0) {
        call_start = now ();
        if ((rc = ddp_run_on_main (fail_on_main, NULL, post_ok, NULL, true)) < 0)
            failed ("ddp_run_on_main", rc);
        printf ("ddp_victim: rank %d: NOT NOTICED\n", my_rank);
        finish (4, "not noticed");
    }
    if (strcmp (mode, "fail-first") == 0) {
        call_start = now ();
        if ((rc = ddp_rank0_first (fail_on_main, NULL)) < 0)
            failed ("ddp_rank0_first", rc);
        printf ("ddp_victim: rank %d: NOT NOTICED\n", my_rank);
        finish (4, "not noticed");
    }
    fprintf (stderr, "ddp_victim: unknown mode '%s'\n", mode);
    return 5;
}
