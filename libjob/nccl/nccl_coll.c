/* nccl_coll.c - the barrier and the collectives of the NCCL backend
 * (nccl_ctx.h): which kind of memory each buffer is (kept for the ranges
 * NCCL could use), host buffers staged through a device scratch buffer,
 * NCCL's calls enqueued on a stream (gather as grouped sends and
 * receives, reduce-scatter's own in-place layout, the AVG workaround), and
 * the wait for them (nccl_wait.c).
 * The core has checked every argument.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ddp.h"
#include "ddp_internal.h"
#include "backend.h"
#include "nccl_ctx.h"
#include "nccl_util.h"

#define SCRATCH_ALIGN 256

/* ---- buffers ----------------------------------------------------------- */

/* What kind of memory a buffer is decides whether NCCL gets it as is
 * (device memory of this GPU, managed memory), is refused (device memory
 * of another GPU) or is staged (host memory).  cudaPointerGetAttributes
 * answers, but it costs more than the rest of a pipelined call together
 * (a driver call under a lock), so the answers "NCCL can use it" are kept
 * for the ranges the calls used, and a later call whose buffer lies inside
 * a kept range asks nothing.
 *
 * The rule, and its limit: a kept range stays valid as long as the memory
 * under it is not freed and handed out again as memory of another kind.
 * libddp cannot see the program's cudaFree.  What it relies on: CUDA's
 * allocators (cudaMalloc, cudaMallocAsync pools, the caching allocators of
 * the frameworks) give a freed device address back as device memory of the
 * same GPU, or as managed memory, which NCCL uses the same way; CUDA keeps
 * the address range of device memory reserved while the context lives, so
 * host memory does not get those addresses in practice.  Not caught: a
 * buffer freed and allocated again at the same address on another GPU (no
 * DDP_EINVAL then), or as host memory.  Either way NCCL gets a pointer its
 * GPU cannot use and the call fails with a CUDA/NCCL error (an illegal
 * address) instead of DDP_EINVAL: loud, never a silent wrong result.
 * Only positive answers are kept: host buffers and refusals ask every
 * time (host buffers are staged, which costs far more than the query).
 * DDP_NCCL_BUFFER_CACHE=0 keeps nothing.  The ranges: nccl_util.h's
 * struct nccl_known (NCCL_KNOWN_MAX of them, touching ones merge). */

/* Is the buffer p, of which a call uses len bytes, memory NCCL can use as
 * is (device memory of our GPU, or managed)?  Returns 0 and sets *dev, or
 * DDP_EINVAL for memory of another GPU. */
static int classify (struct nccl_ctx *c, const void *p, size_t len, bool *dev)
{
    struct cudaPointerAttributes a;
    cudaError_t e;

    *dev = false;
    if (!p)
        return 0;
    if (nccl_known_find (&c->known, (uintptr_t)p, len)) {
        *dev = true;
        return 0;
    }
    e = DL (cudaPointerGetAttributes) (&a, p);
    if (e != cudaSuccess) {
        (void)DL (cudaGetLastError) (); /* unknown to CUDA: plain host memory */
        return 0;
    }
    if (a.type == cudaMemoryTypeManaged)
        *dev = true;
    else if (a.type == cudaMemoryTypeDevice) {
        if (a.device != c->device)
            return ddpi_error (DDP_EINVAL, "nccl: buffer %p is on CUDA device"
                              " %d but the communicator uses device %d", p,
                              a.device, c->device);
        *dev = true;
    }
    if (*dev && !c->no_cache)
        nccl_known_add (&c->known, (uintptr_t)p, len);
    return 0;
}

static size_t align_up (size_t n)
{
    return (n + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
}

/* Make the scratch buffer at least bytes long.  Returns 0 or DDP_ECUDA. */
static int scratch_reserve (struct nccl_ctx *c, size_t bytes)
{
    void *p;
    cudaError_t e;

    if (bytes <= c->scratch_size)
        return 0;
    if (c->scratch) {
        DL (cudaFree) (c->scratch); /* synchronizes: nothing may still use it */
        c->scratch = NULL;
        c->scratch_size = 0;
    }
    if ((e = DL (cudaMalloc) (&p, bytes)) != cudaSuccess)
        return nccl_cuda_error (e, "cudaMalloc (staging buffer)");
    c->scratch = p;
    c->scratch_size = bytes;
    return 0;
}

/* ---- one collective ---------------------------------------------------- */

struct coll {
    enum ddp_coll_kind kind;
    const char *name;    /* for messages; NULL: the current call */
    const void *sendbuf; /* user's send buffer (bcast: buf) */
    void *recvbuf;       /* user's receive buffer, NULL where unused */
    size_t send_bytes;   /* bytes read from sendbuf on this rank */
    size_t recv_bytes;   /* bytes written to recvbuf on this rank */
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    int root;
    /* Set by coll_stage_in or rs_stage_in: */
    bool staged;         /* the scratch buffer is used: wait before return */
    void *dev_out;       /* a reduce-scatter's device recvbuf that NCCL does
                            not write (its result is copied there), or NULL */
};

/* Which bytes this rank reads/writes, given the collective's shape. */
static void coll_sizes (struct nccl_ctx *c, struct coll *k, size_t es)
{
    size_t b = k->count * es;
    bool root = c->rank == k->root;

    switch (k->kind) {
        case DDP_COLL_BCAST:
            k->send_bytes = root ? b : 0;
            k->recv_bytes = root ? 0 : b;
            break;
        case DDP_COLL_REDUCE:
            k->send_bytes = b;
            k->recv_bytes = root ? b : 0;
            break;
        case DDP_COLL_ALLREDUCE:
            k->send_bytes = b;
            k->recv_bytes = b;
            break;
        case DDP_COLL_GATHER:
            k->send_bytes = b;
            k->recv_bytes = root ? b * (size_t)c->size : 0;
            break;
        case DDP_COLL_ALLGATHER:
            k->send_bytes = b;
            k->recv_bytes = b * (size_t)c->size;
            break;
        case DDP_COLL_REDUCE_SCATTER:
            k->send_bytes = b * (size_t)c->size;
            k->recv_bytes = b;
            break;
    }
    if (k->recv_bytes == 0 && k->kind != DDP_COLL_BCAST)
        k->recvbuf = NULL;
}

static bool overlap (const void *a, size_t alen, const void *b, size_t blen)
{
    const char *pa = a, *pb = b;
    return a && b && alen && blen && pa < pb + blen && pb < pa + alen;
}

/* An out-of-place average, done in place.  NCCL 2.28.3 (seen on an H100,
 * world size 1, float16/bfloat16/float32/float64): ncclAllReduce and
 * ncclReduce with ncclAvg and sendbuff != recvbuff leave the last elements
 * of recvbuff unwritten for some counts above 2^20 (1048579: from 1048576
 * on; 4194307: from 4194304), so the caller's buffer keeps its old bytes
 * and no error is reported.  In place, and every other op, are right.  So
 * where nccl_avg_in_place() says so, copy ds to dr on stream s and let the
 * collective read and write dr: one device copy of the buffer, on the
 * same stream (ordered, no wait).  Decided by the call itself, not by
 * NCCL's version: a fixed NCCL costs only the copy, and an NCCL we have
 * not seen is not trusted with the case we know fails.  Returns the send
 * pointer to give NCCL (dr or ds), or NULL when the copy failed. */
static const void *avg_send (const struct coll *k, const void *ds, void *dr,
                             cudaStream_t s)
{
    if (!nccl_avg_in_place (k->op, ds, dr, k->send_bytes))
        return ds;
    if (DL (cudaMemcpyAsync) (dr, ds, k->send_bytes, cudaMemcpyDeviceToDevice, s)
        != cudaSuccess)
        return NULL;
    return dr;
}

/* Enqueue the NCCL call(s) of k on s with device pointers ds, dr. */
static ncclResult_t coll_enqueue (struct nccl_ctx *c, const struct coll *k,
                                  const void *ds, void *dr, cudaStream_t s)
{
    size_t b = k->send_bytes;
    ncclResult_t r;

    if (k->kind == DDP_COLL_REDUCE || k->kind == DDP_COLL_ALLREDUCE) {
        /* dr is NULL on a reduce's non-root: it sends ds as is. */
        if (!(ds = avg_send (k, ds, dr, s)))
            return ncclUnhandledCudaError;
    }
    switch (k->kind) {
        case DDP_COLL_BCAST:
            return DL (ncclBroadcast) (dr, dr, k->count, k->dt, k->root, c->comm,
                                  s);
        case DDP_COLL_REDUCE:
            return DL (ncclReduce) (ds, dr, k->count, k->dt, k->op, k->root,
                               c->comm, s);
        case DDP_COLL_ALLREDUCE:
            return DL (ncclAllReduce) (ds, dr, k->count, k->dt, k->op, c->comm, s);
        case DDP_COLL_ALLGATHER:
            return DL (ncclAllGather) (ds, dr, k->count, k->dt, c->comm, s);
        case DDP_COLL_REDUCE_SCATTER:
            /* In place or not as coll_stage_in laid it out. */
            return DL (ncclReduceScatter) (ds, dr, k->count, k->dt, k->op,
                                           c->comm, s);
        case DDP_COLL_GATHER:
            break;
    }
    /* Gather: NCCL has none; the root receives from every peer. */
    if (c->rank == k->root) {
        char *own = (char *)dr + (size_t)c->rank * b;
        if (own != ds
            && DL (cudaMemcpyAsync) (own, ds, b, cudaMemcpyDeviceToDevice, s)
                   != cudaSuccess)
            return ncclUnhandledCudaError;
    }
    if ((r = DL (ncclGroupStart) ()) != ncclSuccess)
        return r;
    if (c->rank == k->root) {
        for (int p = 0; p < c->size; p++)
            if (p != c->rank
                && (r = DL (ncclRecv) ((char *)dr + (size_t)p * b, k->count, k->dt,
                                  p, c->comm, s)) != ncclSuccess)
                break;
    }
    else
        r = DL (ncclSend) (ds, k->count, k->dt, k->root, c->comm, s);
    ncclResult_t g = DL (ncclGroupEnd) ();
    return r != ncclSuccess ? r : g;
}

/* Copy len bytes from the user's buffer src (on the device when dev) to
 * the scratch buffer's dst on stream s.  Returns 0 or DDP_ECUDA. */
static int stage_copy (void *dst, const void *src, size_t len, bool dev,
                       cudaStream_t s)
{
    cudaError_t e = DL (cudaMemcpyAsync) (dst, src, len,
                                          dev ? cudaMemcpyDeviceToDevice
                                              : cudaMemcpyHostToDevice, s);

    return e == cudaSuccess ? 0
                            : nccl_cuda_error (e, "cudaMemcpyAsync (staging in)");
}

/* A reduce-scatter's layout (ncclReduceScatter is in place when recvbuff
 * is this rank's block of sendbuff).  Device buffers in that layout, or
 * disjoint ones, go to NCCL as they are.  Otherwise the send side is
 * copied into the scratch buffer and NCCL runs in place there, its result
 * at this rank's block of the copy; from there it goes to recvbuf (a host
 * one by coll_run's copy out, a device one by a device copy on s, dev_out).
 * That is the case of host send buffers (staged anyway), of buffers that
 * overlap otherwise (outside NCCL's contract), and of an out-of-place
 * average: NCCL 2.28.3 leaves the tail of out-of-place ncclAvg reductions
 * unwritten (avg_send), so it runs in place, as allreduce's does.  A host
 * recv buffer with a device send buffer (not AVG) gets its own scratch. */
static int rs_stage_in (struct nccl_ctx *c, struct coll *k, bool sdev,
                        bool rdev, const void **ds, void **dr, cudaStream_t s)
{
    size_t own = (size_t)c->rank * k->recv_bytes;
    bool inplace = (const char *)k->sendbuf + own == (char *)k->recvbuf;
    bool copy = !sdev
                || (!inplace
                    && (nccl_avg_in_place (k->op, k->sendbuf, k->recvbuf,
                                           k->recv_bytes)
                        || overlap (k->sendbuf, k->send_bytes, k->recvbuf,
                                    k->recv_bytes)));
    int rc;

    *ds = k->sendbuf;
    *dr = k->recvbuf;
    if (copy) {
        if ((rc = scratch_reserve (c, k->send_bytes)) < 0
            || (rc = stage_copy (c->scratch, k->sendbuf, k->send_bytes, sdev,
                                 s)) < 0)
            return rc;
        *ds = c->scratch;
        *dr = (char *)c->scratch + own;
        k->dev_out = rdev && !inplace ? k->recvbuf : NULL;
        k->staged = true;
    }
    else if (!rdev) {
        if ((rc = scratch_reserve (c, k->recv_bytes)) < 0)
            return rc;
        *dr = c->scratch;
        k->staged = true;
    }
    return 0;
}

/* Where each side lives on the device: ds/dr point at the user's buffers
 * or into the scratch buffer.  Host data is copied in on stream s; sets
 * k->staged when the scratch buffer is used. */
static int coll_stage_in (struct nccl_ctx *c, struct coll *k, bool sdev,
                          bool rdev, const void **ds, void **dr,
                          cudaStream_t s)
{
    /* One scratch region serves both sides of an in-place (all)reduce. */
    bool inplace = k->sendbuf == k->recvbuf
                   && (k->kind == DDP_COLL_REDUCE || k->kind == DDP_COLL_ALLREDUCE);
    bool send_scratch = k->send_bytes && !sdev;
    bool recv_scratch = k->recv_bytes && !rdev;
    size_t soff = 0, roff = 0, need = 0;
    int rc;

    /* NCCL's in-place gather layout is sendbuf == recvbuf + rank * count;
     * any other overlap of the two is staged apart. */
    if ((k->kind == DDP_COLL_GATHER || k->kind == DDP_COLL_ALLGATHER) && !send_scratch
        && overlap (k->sendbuf, k->send_bytes, k->recvbuf, k->recv_bytes)
        && (!recv_scratch && (const char *)k->sendbuf
            != (char *)k->recvbuf + (size_t)c->rank * k->send_bytes))
        send_scratch = true;
    if (k->kind == DDP_COLL_BCAST) {
        send_scratch = recv_scratch = !sdev && (k->send_bytes || k->recv_bytes);
        inplace = true;
    }
    if (inplace && send_scratch && recv_scratch)
        need = align_up (k->send_bytes > k->recv_bytes ? k->send_bytes
                                                       : k->recv_bytes);
    else {
        if (send_scratch)
            need = align_up (k->send_bytes);
        roff = need;
        if (recv_scratch)
            need += align_up (k->recv_bytes);
    }
    if (need && (rc = scratch_reserve (c, need)) < 0)
        return rc;
    *ds = send_scratch ? (char *)c->scratch + soff : k->sendbuf;
    *dr = recv_scratch ? (char *)c->scratch + roff : k->recvbuf;
    if (k->kind == DDP_COLL_BCAST)
        *dr = send_scratch ? c->scratch : k->recvbuf;
    k->staged = send_scratch || recv_scratch;
    if (send_scratch && k->send_bytes)
        return stage_copy ((void *)*ds, k->sendbuf, k->send_bytes, sdev, s);
    return 0;
}

/* Run k on stream s.  With device buffers only and !wait it returns once
 * enqueued; otherwise once complete (host results copied back). */
static int coll_run (struct nccl_ctx *c, struct coll *k, cudaStream_t s,
                     bool wait)
{
    bool sdev, rdev;
    const void *ds;
    void *dr;
    int rc;

    if (c->broken)
        return nccl_broken_error (c);
    /* A bcast's one buffer, an in-place reduction's: one question. */
    if (k->sendbuf == k->recvbuf) {
        size_t len = k->send_bytes > k->recv_bytes ? k->send_bytes
                                                   : k->recv_bytes;
        if ((rc = classify (c, k->sendbuf, len, &sdev)) < 0)
            return rc;
        rdev = sdev;
    }
    else if ((rc = classify (c, k->sendbuf, k->send_bytes, &sdev)) < 0
             || (rc = classify (c, k->recvbuf, k->recv_bytes, &rdev)) < 0)
        return rc;
    rc = k->kind == DDP_COLL_REDUCE_SCATTER
             ? rs_stage_in (c, k, sdev, rdev, &ds, &dr, s)
             : coll_stage_in (c, k, sdev, rdev, &ds, &dr, s);
    if (rc < 0)
        return rc;
    rc = nccl_settle (c, coll_enqueue (c, k, ds, dr, s), k->name);
    if (rc < 0)
        return rc;
    if (k->dev_out) {
        cudaError_t e = DL (cudaMemcpyAsync) (k->dev_out, dr, k->recv_bytes,
                                              cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess)
            return nccl_cuda_error (e, "cudaMemcpyAsync (staging out)");
    }
    /* The scratch buffer is free again only once the stream is past it. */
    if (!wait && !k->staged)
        return 0;
    /* The operation must finish before a copy into pageable host memory is
     * issued: that copy blocks the CPU with no deadline. */
    if ((rc = nccl_stream_wait (c, s, k->name)) < 0)
        return rc;
    if (k->recv_bytes && !rdev) {
        cudaError_t e = DL (cudaMemcpyAsync) (k->recvbuf, dr, k->recv_bytes,
                                         cudaMemcpyDeviceToHost, s);
        if (e != cudaSuccess)
            return nccl_cuda_error (e, "cudaMemcpyAsync (staging out)");
        if ((rc = nccl_stream_wait (c, s, k->name)) < 0)
            return rc;
    }
    return 0;
}

/* Fill in the NCCL types of k from dtype/op.  Returns 0 or DDP_EINVAL. */
static int coll_types (struct coll *k, ddp_dtype_t dtype, ddp_op_t op,
                       bool with_op)
{
    if (nccl_map_dtype (dtype, &k->dt) < 0)
        return ddpi_error (DDP_EINVAL, "nccl: unknown dtype %d", (int)dtype);
    if (with_op && nccl_map_op (op, &k->op) < 0)
        return ddpi_error (DDP_EINVAL, "nccl: op %d not supported", (int)op);
    return 0;
}

/* ---- the backend's operations (nccl_ctx.h) ----------------------------- */

int nccl_op_barrier (void *ctx)
{
    struct nccl_ctx *c = ctx;
    int rc;

    if (c->broken)
        return nccl_broken_error (c);
    nccl_call_enter (c, NCCL_CALL_BARRIER, false);
    rc = nccl_settle (c, DL (ncclAllReduce) (c->flag, c->flag, 1, ncclInt32,
                                        ncclSum, c->comm, c->stream),
                      NULL);
    if (rc == 0)
        rc = nccl_stream_wait (c, c->stream, NULL);
    nccl_show (c, false);
    return rc;
}

/* Which call each collective is, to the watch and in messages. */
static const int coll_calls[] = {
    [DDP_COLL_BCAST] = NCCL_CALL_BCAST,
    [DDP_COLL_REDUCE] = NCCL_CALL_REDUCE,
    [DDP_COLL_ALLREDUCE] = NCCL_CALL_ALLREDUCE,
    [DDP_COLL_GATHER] = NCCL_CALL_GATHER,
    [DDP_COLL_ALLGATHER] = NCCL_CALL_ALLGATHER,
    [DDP_COLL_REDUCE_SCATTER] = NCCL_CALL_REDUCE_SCATTER,
};

/* Every collective, for the core API (on the library's stream, waiting) and
 * the _stream calls (on the caller's stream). */
int nccl_op_coll (void *ctx, const struct ddp_coll *d)
{
    struct nccl_ctx *c = ctx;
    struct coll k = {.kind = d->kind, .name = NULL,
                     .sendbuf = d->sendbuf, .recvbuf = d->recvbuf,
                     .count = d->count, .root = d->root};
    int rc;

    if ((rc = coll_types (&k, d->dtype, d->op, ddp_coll_has_op (d->kind))) < 0)
        return rc;
    coll_sizes (c, &k, ddp_dtype_size (d->dtype));
    nccl_call_enter (c, coll_calls[d->kind], d->on_stream);
    rc = coll_run (c, &k, d->on_stream ? (cudaStream_t)d->stream : c->stream,
                   !d->on_stream);
    nccl_show (c, false);
    return rc;
}
