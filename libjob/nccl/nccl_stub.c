/* nccl_stub.c - the NCCL section of ddp.h in a build without NCCL.
 *
 * Compiled instead of nccl.c when configure did not find CUDA and NCCL
 * (or --without-nccl): the functions exist so programs link against either
 * build, and say that NCCL is not there.
 */
#include "config.h"

#include <stddef.h>

#include "ddp.h"
#include "ddp_internal.h"

static int not_built (void)
{
    return ddpi_error (DDP_ENOTSUP, "libddp was built without NCCL"
                       " (configure found no CUDA/NCCL, or --without-nccl)");
}

void *ddp_nccl_comm (void)
{
    return NULL;
}

void *ddp_cuda_stream (void)
{
    return NULL;
}

int ddp_cuda_device (void)
{
    return -1;
}

int ddp_bcast_stream (void *buf, size_t count, ddp_dtype_t dtype, int root,
                      void *stream)
{
    (void)buf, (void)count, (void)dtype, (void)root, (void)stream;
    return not_built ();
}

int ddp_reduce_stream (const void *sendbuf, void *recvbuf, size_t count,
                       ddp_dtype_t dtype, ddp_op_t op, int root, void *stream)
{
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op;
    (void)root, (void)stream;
    return not_built ();
}

int ddp_allreduce_stream (const void *sendbuf, void *recvbuf, size_t count,
                          ddp_dtype_t dtype, ddp_op_t op, void *stream)
{
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op;
    (void)stream;
    return not_built ();
}

int ddp_gather_stream (const void *sendbuf, void *recvbuf, size_t count,
                       ddp_dtype_t dtype, int root, void *stream)
{
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)root;
    (void)stream;
    return not_built ();
}

int ddp_allgather_stream (const void *sendbuf, void *recvbuf, size_t count,
                          ddp_dtype_t dtype, void *stream)
{
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)stream;
    return not_built ();
}

int ddp_stream_synchronize (void *stream)
{
    (void)stream;
    return not_built ();
}

int ddp_gpu_mem_info (size_t *used, size_t *total)
{
    (void)used, (void)total;
    return not_built ();
}
