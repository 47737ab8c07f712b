/* ddp-bench - time libddp's init and collectives under srun.
 *
 *   srun --ddp=host -N2 -n2 ddp-bench [--short] [--tsv FILE]
 *   srun --mpi=pmix -N1 -n2 ddp-bench -s 8,1M -o allreduce
 *
 * The loop, the checks and the tables are bench.c's, shared with mpi-bench
 * so the two measure the same way; this file maps them onto libddp.
 * DDP_BACKEND picks the backend as for any libddp program.
 */
#include "config.h"
#include <stdlib.h>

#include "ddp.h"
#include "bench.h"

static int b_init (int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return ddp_init ();
}

static void b_abort (int code, const char *msg)
{
    ddp_abort (code, msg);
}

static int b_bcast (float *buf, size_t count, int root)
{
    return ddp_bcast (buf, count, DDP_FLOAT32, root);
}

static int b_allreduce (const float *sendbuf, float *recvbuf, size_t count)
{
    return ddp_allreduce (sendbuf, recvbuf, count, DDP_FLOAT32, DDP_SUM);
}

static int b_allgather (const float *sendbuf, float *recvbuf, size_t count)
{
    return ddp_allgather (sendbuf, recvbuf, count, DDP_FLOAT32);
}

static int b_gather (const float *sendbuf, float *recvbuf, size_t count,
                     int root)
{
    return ddp_gather (sendbuf, recvbuf, count, DDP_FLOAT32, root);
}

static int b_max_f64 (double *inout, size_t n)
{
    return ddp_allreduce (inout, inout, n, DDP_FLOAT64, DDP_MAX);
}

static const struct bench_impl impl = {
    .name = "ddp",
    .init = b_init,
    .finalize = ddp_finalize,
    .abort = b_abort,
    .rank = ddp_rank,
    .size = ddp_world_size,
    .nnodes = ddp_num_nodes,
    .backend = ddp_backend_name,
    .barrier = ddp_barrier,
    .bcast = b_bcast,
    .allreduce = b_allreduce,
    .allgather = b_allgather,
    .gather = b_gather,
    .max_f64 = b_max_f64,
    .strerror = ddp_strerror,
};

int main (int argc, char **argv)
{
    return bench_main (&impl, argc, argv);
}
