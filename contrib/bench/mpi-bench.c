/* mpi-bench - the ddp-bench loop on MPI, the peer libddp is compared with.
 *
 *   srun --mpi=pmix -N2 -n2 mpi-bench [--short] [--tsv FILE]
 *
 * Built with mpicc (Open MPI) when configure finds it.  The loop, the checks
 * and the tables are the driver's (bench.c), so both programs measure the
 * same way; this file maps bench.h's functions onto MPI_COMM_WORLD.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "bench.h"

/* Under --enable-sanitizers (contrib/ci-extra.sh): Open MPI does not free
 * what MPI_Init allocated, thousands of blocks, many from plugins it has
 * unloaded, which LeakSanitizer can neither name nor be told to suppress.
 * Leak checking is off in this program only; ASan's other checks stay on.
 * Without a sanitizer nothing calls this. */
const char *__lsan_default_options (void);
const char *__lsan_default_options (void)
{
    return "detect_leaks=0";
}

const char bench_impl_name[] = "mpi";

static int nnodes = 0;
static char errbuf[MPI_MAX_ERROR_STRING];
static MPI_Comm group = MPI_COMM_NULL;     /* group_allreduce's (bench.h) */
static MPI_Request ireq = MPI_REQUEST_NULL; /* the iallreduce in flight */

/* Nodes in the job: ranks with local rank 0 in a split by shared memory. */
static int count_nodes (void)
{
    MPI_Comm local;
    int lrank, one, n = 1;

    if (MPI_Comm_split_type (MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                             MPI_INFO_NULL, &local) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank (local, &lrank);
    one = lrank == 0;
    MPI_Allreduce (&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free (&local);
    return n;
}

int bench_impl_init (int *argc, char ***argv)
{
    int rc = MPI_Init (argc, argv);

    if (rc != MPI_SUCCESS)
        return rc;
    /* Errors come back as codes, as libddp's do. */
    MPI_Comm_set_errhandler (MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return 0;
}

int bench_impl_finalize (void)
{
    if (ireq != MPI_REQUEST_NULL)
        MPI_Wait (&ireq, MPI_STATUS_IGNORE);
    if (group != MPI_COMM_NULL)
        MPI_Comm_free (&group);
    return MPI_Finalize ();
}

void bench_impl_abort (int code, const char *msg)
{
    (void)msg;
    MPI_Abort (MPI_COMM_WORLD, code);
}

int bench_impl_rank (void)
{
    int r = 0;
    MPI_Comm_rank (MPI_COMM_WORLD, &r);
    return r;
}

int bench_impl_size (void)
{
    int n = 1;
    MPI_Comm_size (MPI_COMM_WORLD, &n);
    return n;
}

/* Collective on first call (after init, outside the timed part). */
int bench_impl_nnodes (void)
{
    if (nnodes == 0)
        nnodes = count_nodes ();
    return nnodes;
}

const char *bench_impl_backend (void)
{
    static char name[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    char *nl;

    MPI_Get_library_version (name, &len);
    if ((nl = strchr (name, ',')))
        *nl = '\0';
    return name;
}

int bench_impl_barrier (void)
{
    return MPI_Barrier (MPI_COMM_WORLD);
}

int bench_impl_bcast (float *buf, size_t count)
{
    return MPI_Bcast (buf, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
}

int bench_impl_allreduce (const float *sendbuf, float *recvbuf, size_t count)
{
    return MPI_Allreduce (sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
}

int bench_impl_allgather (const float *sendbuf, float *recvbuf, size_t count)
{
    return MPI_Allgather (sendbuf, (int)count, MPI_FLOAT, recvbuf, (int)count,
                          MPI_FLOAT, MPI_COMM_WORLD);
}

int bench_impl_gather (const float *sendbuf, float *recvbuf, size_t count)
{
    return MPI_Gather (sendbuf, (int)count, MPI_FLOAT, recvbuf, (int)count,
                       MPI_FLOAT, 0, MPI_COMM_WORLD);
}

int bench_impl_reduce_scatter (const float *sendbuf, float *recvbuf,
                               size_t count)
{
    return MPI_Reduce_scatter_block (sendbuf, recvbuf, (int)count, MPI_FLOAT,
                                     MPI_SUM, MPI_COMM_WORLD);
}

int bench_impl_group_setup (void)
{
    int rank = bench_impl_rank (), rc;

    if (group != MPI_COMM_NULL)
        return 0;
    rc = MPI_Comm_split (MPI_COMM_WORLD, rank % 2, rank, &group);
    if (rc == MPI_SUCCESS)
        MPI_Comm_set_errhandler (group, MPI_ERRORS_RETURN);
    return rc;
}

int bench_impl_group_allreduce (const float *sendbuf, float *recvbuf,
                                size_t count)
{
    return MPI_Allreduce (sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM,
                          group);
}

/* MPI_Iallreduce, then the caller's compute without MPI_Test, then
 * MPI_Wait: what a program that does not poll gets from Open MPI (which
 * has no progress thread for ob1/tcp: most of the work may wait for
 * MPI_Wait). */
int bench_impl_iallreduce_start (const float *sendbuf, float *recvbuf,
                                 size_t count)
{
    if (ireq != MPI_REQUEST_NULL)
        return MPI_ERR_REQUEST;
    return MPI_Iallreduce (sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM,
                           MPI_COMM_WORLD, &ireq);
}

int bench_impl_iallreduce_wait (void)
{
    return MPI_Wait (&ireq, MPI_STATUS_IGNORE);
}

int bench_impl_max_f64 (double *inout, size_t n)
{
    return MPI_Allreduce (MPI_IN_PLACE, inout, (int)n, MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD);
}

const char *bench_impl_strerror (int rc)
{
    int len = 0;

    if (MPI_Error_string (rc, errbuf, &len) != MPI_SUCCESS)
        return "unknown MPI error";
    return errbuf;
}

/* Open MPI has no count of the bytes it sends that a program can read
 * without MPI_T; not counted. */
double bench_impl_bytes_sent (void)
{
    return -1;
}
