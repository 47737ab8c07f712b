/* ddp_loop.c - a loop of collectives in timed phases, its rate in each
 * (t0265-ddp-strangers.t: the rate with and without strangers holding
 * connections to the ranks' listening ports).
 *
 * Usage: ddp_loop SECONDS PHASES PHASE_FILE [LATE]
 * One iteration: a 1 MiB float32 all-reduce, an 8-byte all-reduce that
 * carries rank 0's phase to every rank, a barrier.  Rank 0 starts phase p
 * at p x SECONDS after ddp_init returns, writes p into PHASE_FILE when it
 * does (the test's flooder reads it; "end" after the last), and prints
 * "ddp_loop phase P iters N seconds S rate R cpu_us C" for each (C: the
 * CPU time of all ranks together per iteration, in microseconds), counting
 * from SETTLE seconds (or a third of the phase) into the phase (the
 * flooder has its connections up by then).  Every rank checks the all-reduces' results; exits 0 when all
 * were right.  With LATE, the task of the highest SLURM_PROCID sleeps
 * LATE seconds before ddp_init: the others wait for it inside ddp_init,
 * listening (a window for the test's strangers to connect in set-up). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ddp.h"

#define SETTLE 0.5  /* at most; a third of a phase when shorter */

static double now (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds this process used so far. */
static double cpu_now (void)
{
    struct rusage ru;

    if (getrusage (RUSAGE_SELF, &ru) < 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6
           + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* Write what into path, whole (a reader never sees half of it). */
static void put_phase (const char *path, const char *what)
{
    char tmp[4096];
    FILE *f;

    snprintf (tmp, sizeof (tmp), "%s.tmp", path);
    if (!(f = fopen (tmp, "w")))
        return;
    fprintf (f, "%s\n", what);
    fclose (f);
    rename (tmp, path);
}

#define CHECK(x)                                                              \
    do {                                                                      \
        int rc_ = (x);                                                        \
        if (rc_ != 0) {                                                       \
            fprintf (stderr, "ddp_loop: %s: %s\n", #x, ddp_strerror (rc_));   \
            exit (1);                                                         \
        }                                                                     \
    } while (0)

int main (int argc, char **argv)
{
    double secs = argc > 1 ? atof (argv[1]) : 3;
    int phases = argc > 2 ? atoi (argv[2]) : 3, phase = -1, bad = 0;
    const char *file = argc > 3 ? argv[3] : "/dev/null";
    size_t big = (1u << 20) / sizeof (float);
    float *a = malloc (big * sizeof (float)), *b = malloc (big * sizeof (float));
    long *iters = calloc ((size_t)phases + 1, sizeof (long));
    double *span = calloc ((size_t)phases + 1, sizeof (double));
    double *cpu = calloc ((size_t)phases + 1, sizeof (double));
    double *cpu_all = calloc ((size_t)phases + 1, sizeof (double));
    double t0, from = 0, c_from = 0;
    bool counting = false;
    int64_t mine, p;
    char buf[32];

    if (!a || !b || !iters || !span || !cpu || !cpu_all || phases < 1
        || secs <= 0)
        return 2;
    for (size_t i = 0; i < big; i++)
        a[i] = 1.0f;
    if (argc > 4 && getenv ("SLURM_PROCID") && getenv ("SLURM_NTASKS")
        && atoi (getenv ("SLURM_PROCID")) == atoi (getenv ("SLURM_NTASKS")) - 1)
        usleep ((useconds_t)(atof (argv[4]) * 1e6));
    CHECK (ddp_init ());
    t0 = now ();
    for (;;) {
        double t = now ();
        mine = ddp_rank () == 0 ? (int64_t)((t - t0) / secs) : 0;
        CHECK (ddp_allreduce (&mine, &p, 1, DDP_INT64, DDP_SUM));
        if (p != phase) {   /* every rank sees the same p */
            if (phase >= 0) {
                span[phase] = t - from;
                cpu[phase] = cpu_now () - c_from;
            }
            if (p >= phases)
                break;
            phase = (int)p;
            from = t + (secs / 3 < SETTLE ? secs / 3 : SETTLE);
            counting = false;
            if (ddp_rank () == 0) {
                snprintf (buf, sizeof (buf), "%d", phase);
                put_phase (file, buf);
            }
        }
        CHECK (ddp_allreduce (a, b, big, DDP_FLOAT32, DDP_SUM));
        bad += b[0] != (float)ddp_world_size ()
               || b[big - 1] != (float)ddp_world_size ();
        CHECK (ddp_barrier ());
        if (t >= from) {
            if (!counting) {
                counting = true;
                c_from = cpu_now ();
            }
            iters[phase]++;
        }
    }
    CHECK (ddp_allreduce (cpu, cpu_all, phases, DDP_FLOAT64, DDP_SUM));
    if (ddp_rank () == 0) {
        put_phase (file, "end");
        for (int i = 0; i < phases; i++)
            printf ("ddp_loop phase %d iters %ld seconds %.3f rate %.2f "
                    "cpu_us %.0f\n", i, iters[i], span[i],
                    span[i] > 0 ? iters[i] / span[i] : 0,
                    iters[i] > 0 ? cpu_all[i] / iters[i] * 1e6 : 0);
    }
    if (bad)
        fprintf (stderr, "ddp_loop: rank %d: %d wrong results\n", ddp_rank (),
                 bad);
    printf ("ddp_loop rank %d: %s\n", ddp_rank (), bad ? "WRONG" : "ok");
    ddp_finalize ();
    free (a);
    free (b);
    free (iters);
    free (span);
    free (cpu);
    free (cpu_all);
    return bad ? 1 : 0;
}
