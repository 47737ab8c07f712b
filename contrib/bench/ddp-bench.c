/* ddp-bench - time libddp's init and collectives under srun.
 *
 *   srun --ddp=host -N2 -n2 ddp-bench [--short] [--tsv FILE]
 *   srun --mpi=pmix -N1 -n2 ddp-bench -s 8,1M -o allreduce
 *
 * The loop, the checks and the tables are the driver's (bench.c), shared
 * with mpi-bench so the two measure the same way; this file maps bench.h's
 * functions onto libddp.  DDP_BACKEND picks the backend as for any libddp
 * program.
 */
#include "config.h"
#include <stdlib.h>

#include "ddp.h"
#include "bench.h"

const char bench_impl_name[] = "ddp";

static ddp_comm_t *group;       /* group_allreduce's (bench.h) */
static ddp_request_t *ireq;     /* the iallreduce in flight, or NULL */

int bench_impl_init (int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return ddp_init ();
}

int bench_impl_finalize (void)
{
    int rc = ddp_comm_free (&group);

    if (ireq)
        ddp_wait (&ireq);
    if (rc != 0) {
        ddp_finalize ();
        return rc;
    }
    return ddp_finalize ();
}

void bench_impl_abort (int code, const char *msg)
{
    ddp_abort (code, msg);
}

int bench_impl_rank (void)
{
    return ddp_rank ();
}

int bench_impl_size (void)
{
    return ddp_world_size ();
}

int bench_impl_nnodes (void)
{
    return ddp_num_nodes ();
}

const char *bench_impl_backend (void)
{
    return ddp_backend_name ();
}

int bench_impl_barrier (void)
{
    return ddp_barrier ();
}

int bench_impl_bcast (float *buf, size_t count)
{
    return ddp_bcast (buf, count, DDP_FLOAT32, 0);
}

int bench_impl_allreduce (const float *sendbuf, float *recvbuf, size_t count)
{
    return ddp_allreduce (sendbuf, recvbuf, count, DDP_FLOAT32, DDP_SUM);
}

int bench_impl_allgather (const float *sendbuf, float *recvbuf, size_t count)
{
    return ddp_allgather (sendbuf, recvbuf, count, DDP_FLOAT32);
}

int bench_impl_gather (const float *sendbuf, float *recvbuf, size_t count)
{
    return ddp_gather (sendbuf, recvbuf, count, DDP_FLOAT32, 0);
}

int bench_impl_reduce_scatter (const float *sendbuf, float *recvbuf,
                               size_t count)
{
    return ddp_reduce_scatter (sendbuf, recvbuf, count, DDP_FLOAT32, DDP_SUM);
}

int bench_impl_group_setup (void)
{
    int rank = ddp_rank ();

    if (group)
        return 0;
    return ddp_comm_split (NULL, rank % 2, rank, &group);
}

int bench_impl_group_allreduce (const float *sendbuf, float *recvbuf,
                                size_t count)
{
    if (!group)
        return DDP_EINVAL;
    return ddp_comm_allreduce (group, sendbuf, recvbuf, count, DDP_FLOAT32,
                               DDP_SUM);
}

int bench_impl_iallreduce_start (const float *sendbuf, float *recvbuf,
                                 size_t count)
{
    if (ireq)
        return DDP_EINVAL;
    return ddp_comm_iallreduce (NULL, sendbuf, recvbuf, count, DDP_FLOAT32,
                                DDP_SUM, &ireq);
}

int bench_impl_iallreduce_wait (void)
{
    return ddp_wait (&ireq);
}

int bench_impl_max_f64 (double *inout, size_t n)
{
    return ddp_allreduce (inout, inout, n, DDP_FLOAT64, DDP_MAX);
}

const char *bench_impl_strerror (int rc)
{
    return ddp_strerror (rc);
}

/* The hook for libddp's traffic counters: libddp does not count the bytes
 * it sends yet.  When it does, return this process's count here (bytes
 * sent to other nodes since ddp_init) and the report gets its "sent per
 * leader" column. */
double bench_impl_bytes_sent (void)
{
    return -1;
}
