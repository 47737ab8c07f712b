/* fences.c - ddp-bench-fences.so: count the PMIx fences a process makes.
 *
 *   LD_PRELOAD=.../ddp-bench-fences.so srun --mpi=pmix ... ddp-bench
 *
 * Wraps PMIx_Fence and PMIx_Fence_nb (a blocking fence that the library
 * implements with the non-blocking one counts once) and exports
 * ddp_bench_pmix_fences(), which bench.c finds with dlsym to report how many
 * fences ddp_init or MPI_Init made.  Only a measuring aid: nothing else in
 * the project uses it.
 */
#include "config.h"
#include <dlfcn.h>
#include <stdatomic.h>
#include <pmix.h>

typedef pmix_status_t (*fence_fn) (const pmix_proc_t *, size_t,
                                   const pmix_info_t *, size_t);
typedef pmix_status_t (*fence_nb_fn) (const pmix_proc_t *, size_t,
                                      const pmix_info_t *, size_t,
                                      pmix_op_cbfunc_t, void *);

static atomic_long fences;
static _Thread_local int in_fence;

/* Fences made so far by this process. */
long ddp_bench_pmix_fences (void);

long ddp_bench_pmix_fences (void)
{
    return atomic_load (&fences);
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
    atomic_fetch_add (&fences, 1);
    in_fence++;
    rc = real (procs, nprocs, info, ninfo);
    in_fence--;
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
    if (!in_fence)
        atomic_fetch_add (&fences, 1);
    return real (procs, nprocs, info, ninfo, cbfunc, cbdata);
}
