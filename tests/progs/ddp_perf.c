/* ddp_perf.c - quick latency loops for libddp (a smoke benchmark).
 *
 * Usage: ddp_perf [ITERS] [MEM_ITERS]
 * Prints, on rank 0, the mean time of barrier, 8-byte allreduce, 1 MiB
 * allreduce and 1 MiB bcast.  With MEM_ITERS > 0 it instead runs that many
 * 8-byte allreduces and prints every rank's RSS growth ("rss_growth_kb=N").
 */
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

/* Resident set of process pid (0: this process) in KiB, 0 if unknown. */
static long rss_kb_of (pid_t pid)
{
    char path[64];
    long pages = 0, rss = 0;
    FILE *f;

    if (pid > 0)
        snprintf (path, sizeof (path), "/proc/%ld/statm", (long) pid);
    else
        snprintf (path, sizeof (path), "/proc/self/statm");
    if ((f = fopen (path, "r"))) {
        if (fscanf (f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose (f);
    }
    return rss * (sysconf (_SC_PAGESIZE) / 1024);
}

static long rss_kb (void)
{
    return rss_kb_of (0);
}

/* The pid of this task's slurmstepd (its parent under srun), or 0. */
static pid_t stepd_pid (void)
{
    char path[64], comm[64] = "";
    pid_t pp = getppid ();
    FILE *f;

    snprintf (path, sizeof (path), "/proc/%ld/comm", (long) pp);
    if (!(f = fopen (path, "r")))
        return 0;
    if (!fgets (comm, sizeof (comm), f))
        comm[0] = '\0';
    fclose (f);
    return strncmp (comm, "slurmstepd", 10) == 0 ? pp : 0;
}

#define CHECK(x)                                                              \
    do {                                                                      \
        int rc_ = (x);                                                        \
        if (rc_ != 0) {                                                       \
            fprintf (stderr, "%s: %s\n", #x, ddp_strerror (rc_));             \
            exit (1);                                                         \
        }                                                                     \
    } while (0)

static int memtest (long iters)
{
    double v = 1, out;
    long before, after, sbefore, safter, i;
    pid_t stepd;

    for (i = 0; i < 1000; i++)
        CHECK (ddp_allreduce (&v, &out, 1, DDP_FLOAT64, DDP_SUM));
    stepd = stepd_pid ();
    sbefore = stepd ? rss_kb_of (stepd) : 0;
    before = rss_kb ();
    for (i = 0; i < iters; i++)
        CHECK (ddp_allreduce (&v, &out, 1, DDP_FLOAT64, DDP_SUM));
    after = rss_kb ();
    safter = stepd ? rss_kb_of (stepd) : 0;
    if (out != (double)ddp_world_size ()) {
        fprintf (stderr, "wrong result %g\n", out);
        return 1;
    }
    printf ("rank %d: %ld allreduces rss_before_kb=%ld rss_after_kb=%ld "
            "rss_growth_kb=%ld\n", ddp_rank (), iters, before, after,
            after - before);
    /* The step daemon too: per-collective data must not go through the
     * PMIx server it hosts (its key-value store keeps everything). */
    if (stepd)
        printf ("rank %d: slurmstepd %ld stepd_rss_before_kb=%ld "
                "stepd_rss_after_kb=%ld stepd_rss_growth_kb=%ld\n", ddp_rank (),
                (long) stepd, sbefore, safter, safter - sbefore);
    return 0;
}

int main (int argc, char **argv)
{
    long iters = argc > 1 ? atol (argv[1]) : 20000;
    long mem = argc > 2 ? atol (argv[2]) : 0;
    size_t big = (1u << 20) / sizeof (float);
    float *a, *b;
    double v = 1, out, t;
    long i, bigit = iters / 20 > 10 ? iters / 20 : 10;
    int rc;

    CHECK (ddp_init ());
    if (mem > 0) {
        rc = memtest (mem);
        ddp_finalize ();
        return rc;
    }
    a = calloc (big, sizeof (float));
    b = calloc (big, sizeof (float));
    if (!a || !b)
        return 1;
    for (i = 0; i < 1000; i++)
        CHECK (ddp_barrier ());
    t = now ();
    for (i = 0; i < iters; i++)
        CHECK (ddp_barrier ());
    t = now () - t;
    if (ddp_is_main ())
        printf ("barrier            %8.2f us\n", t / iters * 1e6);
    CHECK (ddp_barrier ());
    t = now ();
    for (i = 0; i < iters; i++)
        CHECK (ddp_allreduce (&v, &out, 1, DDP_FLOAT64, DDP_SUM));
    t = now () - t;
    if (ddp_is_main ())
        printf ("allreduce 8 B      %8.2f us\n", t / iters * 1e6);
    CHECK (ddp_barrier ());
    for (i = 0; i < 3; i++)
        CHECK (ddp_allreduce (a, b, big, DDP_FLOAT32, DDP_SUM));
    t = now ();
    for (i = 0; i < bigit; i++)
        CHECK (ddp_allreduce (a, b, big, DDP_FLOAT32, DDP_SUM));
    t = now () - t;
    if (ddp_is_main ())
        printf ("allreduce 1 MiB    %8.2f us  (%.2f GB/s algbw)\n",
                t / bigit * 1e6, (double)(1u << 20) / (t / bigit) / 1e9);
    CHECK (ddp_barrier ());
    t = now ();
    for (i = 0; i < bigit; i++)
        CHECK (ddp_bcast (a, big, DDP_FLOAT32, 0));
    t = now () - t;
    if (ddp_is_main ())
        printf ("bcast 1 MiB        %8.2f us\n", t / bigit * 1e6);
    free (a);
    free (b);
    CHECK (ddp_finalize ());
    return 0;
}
