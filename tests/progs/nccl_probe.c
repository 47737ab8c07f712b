/* nccl_probe.c - init libddp with DDP_BACKEND as given and say what happened.
 *
 * Prints one line per rank on stdout:
 *   "init ok rank=R size=N backend=B comm=yes|no stream=yes|no device=D"
 *   "init failed rank=R rc=RC (STRERROR)"
 * then, after a successful init, the result of the NCCL-section calls that
 * need no GPU to answer:
 *   "allreduce_stream rc=RC", "gpu_mem_info rc=RC", "allreduce rc=RC sum=S".
 * With "loop N": N allreduces of one double on a host buffer instead; the
 * first failure is printed as "loop failed at I rc=RC (STRERROR) after T s",
 * then the next call's code ("again rc=RC") and whether the communicator is
 * still published ("comm after=yes|no").
 * With "rs N": two reduce-scatters (SUM, float64, host buffers) of N
 * elements per rank, where rank r sends element j = 1000 * r + j of
 * size * N, out of place and in place, each printed as
 * "rs[ in-place] rank=R rc=RC first=F last=L" (the first and last element
 * this rank received).
 * Exit status: 0 after a successful init and finalize, 1 when init failed,
 * 2 when something after init failed.  Built in every configuration.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ddp.h"

static double now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Two reduce-scatters of n elements per rank, as the header says. */
static int reduce_scatter (long n)
{
    int r = ddp_rank (), size = ddp_world_size (), rc, bad = 0;
    size_t total = (size_t)n * (size_t)size;
    double *send = malloc (total * sizeof (*send));
    double *recv = calloc ((size_t)n, sizeof (*recv));

    if (n < 1 || !send || !recv) {
        printf ("rs: bad count or out of memory\n");
        free (send);
        free (recv);
        ddp_finalize ();
        return 2;
    }
    for (int inplace = 0; inplace < 2; inplace++) {
        double *out = inplace ? send + (size_t)r * (size_t)n : recv;
        for (size_t j = 0; j < total; j++)
            send[j] = 1000.0 * r + (double)j;
        rc = ddp_reduce_scatter (send, out, (size_t)n, DDP_FLOAT64, DDP_SUM);
        printf ("rs%s rank=%d rc=%d first=%g last=%g\n",
                inplace ? " in-place" : "", r, rc, out[0], out[n - 1]);
        bad += rc < 0;
    }
    free (send);
    free (recv);
    return ddp_finalize () < 0 || bad ? 2 : 0;
}

/* n allreduces; report the first failure and what follows it. */
static int loop (long n)
{
    double v = 1, sum = 0, t0 = now ();
    int rc = 0;

    for (long i = 0; i < n; i++)
        if ((rc = ddp_allreduce (&v, &sum, 1, DDP_FLOAT64, DDP_SUM)) < 0) {
            printf ("loop failed at %ld rc=%d (%s) after %.1f s\n", i, rc,
                    ddp_strerror (rc), now () - t0);
            rc = ddp_allreduce (&v, &sum, 1, DDP_FLOAT64, DDP_SUM);
            printf ("again rc=%d\n", rc);
            printf ("comm after=%s\n", ddp_nccl_comm () ? "yes" : "no");
            ddp_finalize ();
            return 2;
        }
    printf ("loop ok %ld\n", n);
    return ddp_finalize () < 0 ? 2 : 0;
}

int main (int argc, char **argv)
{
    int rc, r = -1, ok = 1;
    size_t used = 0, total = 0;
    double v, sum = 0;

    if ((rc = ddp_init ()) < 0) {
        const char *r_env = getenv ("RANK");
        if (!r_env)
            r_env = getenv ("SLURM_PROCID");
        printf ("init failed rank=%s rc=%d (%s)\n", r_env ? r_env : "?", rc,
                ddp_strerror (rc));
        return 1;
    }
    r = ddp_rank ();
    printf ("init ok rank=%d size=%d backend=%s comm=%s stream=%s device=%d\n",
            r, ddp_world_size (), ddp_backend_name (),
            ddp_nccl_comm () ? "yes" : "no", ddp_cuda_stream () ? "yes" : "no",
            ddp_cuda_device ());
    if (argc > 2 && strcmp (argv[1], "loop") == 0)
        return loop (strtol (argv[2], NULL, 10));
    if (argc > 2 && strcmp (argv[1], "rs") == 0)
        return reduce_scatter (strtol (argv[2], NULL, 10));
    v = r + 1;
    rc = ddp_allreduce_stream (&v, &sum, 1, DDP_FLOAT64, DDP_SUM, NULL);
    printf ("allreduce_stream rc=%d (%s)\n", rc, ddp_strerror (rc));
    rc = ddp_gpu_mem_info (&used, &total);
    printf ("gpu_mem_info rc=%d (%s)\n", rc, ddp_strerror (rc));
    rc = ddp_allreduce (&v, &sum, 1, DDP_FLOAT64, DDP_SUM);
    printf ("allreduce rc=%d sum=%g\n", rc, sum);
    if (rc < 0)
        ok = 0;
    if ((rc = ddp_finalize ()) < 0) {
        printf ("finalize rc=%d (%s)\n", rc, ddp_strerror (rc));
        ok = 0;
    }
    return ok ? 0 : 2;
}
