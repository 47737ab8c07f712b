/* fences.c - ddp-bench-fences.so: count the PMIx fences a process makes.
 *
 *   srun --mpi=pmix ... env LD_PRELOAD=.../ddp-bench-fences.so ddp-bench
 *
 * Wraps PMIx_Fence and PMIx_Fence_nb (a blocking fence that the library
 * implements with the non-blocking one counts once), and PMIx_Init, and
 * exports counters that bench.c finds with dlsym to report how many fences
 * ddp_init or MPI_Init made and how much of their time PMIx_Init and the
 * blocking fences took.  Only a measuring aid: nothing else in the project
 * uses it.
 */
#include "config.h"
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <pmix.h>

typedef pmix_status_t (*fence_fn) (const pmix_proc_t *, size_t,
                                   const pmix_info_t *, size_t);
typedef pmix_status_t (*fence_nb_fn) (const pmix_proc_t *, size_t,
                                      const pmix_info_t *, size_t,
                                      pmix_op_cbfunc_t, void *);

typedef pmix_status_t (*init_fn) (pmix_proc_t *, pmix_info_t *, size_t);

static atomic_long fences;
static _Thread_local int in_fence;
static double init_us = -1;     /* time in PMIx_Init (first call) */
static atomic_long fence_ns;    /* time fences were in flight */

/* A non-blocking fence in flight: the caller's callback, and when. */
struct nb_fence {
    pmix_op_cbfunc_t cbfunc;
    void *cbdata;
    double start_us;
};

/* Fences made so far by this process. */
long ddp_bench_pmix_fences (void);
/* Microseconds the first PMIx_Init call took, or -1 if none was made. */
double ddp_bench_pmix_init_us (void);
/* Microseconds fences were in flight so far (blocking ones: the call;
 * non-blocking ones: from the call to their completion callback). */
double ddp_bench_pmix_fence_us (void);

long ddp_bench_pmix_fences (void)
{
    return atomic_load (&fences);
}

double ddp_bench_pmix_init_us (void)
{
    return init_us;
}

static double now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double ddp_bench_pmix_fence_us (void)
{
    return atomic_load (&fence_ns) / 1e3;
}

static void add_fence_time (double start_us)
{
    atomic_fetch_add (&fence_ns, (long)((now_us () - start_us) * 1e3));
}

static void nb_fence_done (pmix_status_t status, void *cbdata)
{
    struct nb_fence *f = cbdata;
    pmix_op_cbfunc_t cb = f->cbfunc;
    void *arg = f->cbdata;

    add_fence_time (f->start_us);
    free (f);
    cb (status, arg);
}

pmix_status_t PMIx_Init (pmix_proc_t *proc, pmix_info_t info[], size_t ninfo)
{
    static init_fn real;
    pmix_status_t rc;
    double t0;

    if (!real)
        *(void **)&real = dlsym (RTLD_NEXT, "PMIx_Init");
    if (!real)
        return PMIX_ERR_NOT_SUPPORTED;
    t0 = now_us ();
    rc = real (proc, info, ninfo);
    if (init_us < 0)
        init_us = now_us () - t0;
    return rc;
}

pmix_status_t PMIx_Fence (const pmix_proc_t procs[], size_t nprocs,
                          const pmix_info_t info[], size_t ninfo)
{
    static fence_fn real;
    pmix_status_t rc;

    if (!real)
        *(void **)&real = dlsym (RTLD_NEXT, "PMIx_Fence");
    if (!real)
        return PMIX_ERR_NOT_SUPPORTED;
    double t0 = now_us ();

    atomic_fetch_add (&fences, 1);
    in_fence++;
    rc = real (procs, nprocs, info, ninfo);
    in_fence--;
    add_fence_time (t0);
    return rc;
}

pmix_status_t PMIx_Fence_nb (const pmix_proc_t procs[], size_t nprocs,
                             const pmix_info_t info[], size_t ninfo,
                             pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    static fence_nb_fn real;

    if (!real)
        *(void **)&real = dlsym (RTLD_NEXT, "PMIx_Fence_nb");
    if (!real)
        return PMIX_ERR_NOT_SUPPORTED;
    struct nb_fence *f;
    pmix_status_t rc;

    if (in_fence || !cbfunc || !(f = malloc (sizeof (*f)))) {
        if (!in_fence)
            atomic_fetch_add (&fences, 1);
        return real (procs, nprocs, info, ninfo, cbfunc, cbdata);
    }
    atomic_fetch_add (&fences, 1);
    f->cbfunc = cbfunc;
    f->cbdata = cbdata;
    f->start_us = now_us ();
    rc = real (procs, nprocs, info, ninfo, nb_fence_done, f);
    if (rc != PMIX_SUCCESS)
        free (f);       /* not started: the callback will not run */
    return rc;
}
