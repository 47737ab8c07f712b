/* nccl.c - the NCCL backend of libddp (design: doc/nccl.md).
 *
 * create(): pick the GPU, publish host + GPU identity (+ a unique id on the
 * root ranks) in exactly one bootstrap exchange, check the result (every
 * rank reached the fence, same settings, one GPU per rank) before NCCL is
 * called, then create the communicator non-blocking and poll it against the
 * DDP_TIMEOUT deadline.  Collectives enqueue on a stream and wait for it by
 * polling, so an NCCL asynchronous error or a missing peer becomes an error
 * return (after ncclCommAbort) instead of a hang.  Host buffers are staged
 * through a device scratch buffer.  After such an error or deadline the
 * watch (watch.h) finds out which rank is gone or late and what it was
 * doing, for the message.  The core checks every argument and owns
 * the NCCL section of ddp.h; this file supplies its operations (op_coll for
 * the plain and _stream collectives, gpu_ops for the rest).
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "ddp.h"
#include "ddp_internal.h"
#include "backend.h"
#include "bootstrap.h"
#include "nccl_backend.h"
#include "nccl_util.h"
#include "wait.h"
#include "watch.h"

#define SCRATCH_ALIGN 256
#define FINALIZE_TIMEOUT 5.0 /* seconds, at most, for ncclCommFinalize */
/* Waits spin this long, then yield, then nap longer as they go on
 * (wait.h): a GPU collective usually completes within the spin, and a long
 * one (or a communicator init at scale) does not keep a core busy. */
#define SPIN_US 1000
/* How long each step of asking the peers after a failure may take: a
 * tenth of the timeout in force, within these bounds (seconds). */
#define ASK_WINDOW_MIN 0.25
#define ASK_WINDOW_MAX 1.0

struct nccl_ctx {
    int rank;
    int size;
    int device;          /* CUDA device index in this process's view */
    const struct ddp_config *cfg;   /* its timeout_s is the bound in force */
    double cap_s;        /* a shorter bound of our own (finalize) */
    ncclComm_t comm;     /* NULL once aborted */
    cudaStream_t stream; /* the library's stream */
    int *flag;           /* one device int: the barrier's payload */
    void *scratch;       /* device staging buffer for host pointers */
    size_t scratch_size;
    int broken;          /* 0, or the DDP_E* code that aborted comm */
    struct nccl_known known; /* buffers NCCL can use as is (classify) */
    bool no_cache;       /* DDP_NCCL_BUFFER_CACHE=0 */
    /* What this rank is doing, for its peers' questions (watch.h): the
     * number of its last barrier or collective, which call, _stream or
     * not; sticky flags (failed, ddp_abort); the word the watch answers. */
    uint64_t num;
    int call;            /* enum nccl_call */
    bool on_stream;
    unsigned sticky;
    _Atomic uint64_t state;
    struct nccl_watch *watch; /* NULL in a world of one, or without */
};

/* ---- what this rank is doing ------------------------------------------- */

/* Show the current call to the watch, in it or not: a relaxed store, the
 * one cost of the watch on the hot path. */
static void show (struct nccl_ctx *c, bool in)
{
    unsigned fl = c->sticky | (in ? NCCL_ST_IN : 0)
                  | (c->on_stream ? NCCL_ST_STREAM : 0);

    atomic_store_explicit (&c->state, NCCL_STATE (c->num, c->call, fl),
                           memory_order_relaxed);
}

/* A barrier or collective begins: count it (as the host backend does, the
 * one of ddp_init included). */
static void call_enter (struct nccl_ctx *c, int call, bool on_stream)
{
    c->num++;
    c->call = call;
    c->on_stream = on_stream;
    show (c, true);
}

/* The current call as a user knows it ("ddp_allreduce #12"). */
static const char *call_name (const struct nccl_ctx *c, char *buf, size_t len)
{
    return nccl_state_name (atomic_load_explicit (&c->state,
                                                  memory_order_relaxed),
                            buf, len);
}

/* ---- errors and waiting ------------------------------------------------ */

static int cuda_error (cudaError_t e, const char *what)
{
    return ddpi_error (DDP_ECUDA, "nccl: %s: %s", what, cudaGetErrorString (e));
}

/* Abort the communicator (peers' pending operations then fail or time out
 * instead of waiting for us) and remember why.  Returns code. */
static int comm_break (struct nccl_ctx *c, int code)
{
    if (c->comm) {
        ncclCommAbort (c->comm);
        c->comm = NULL;
    }
    if (!c->broken)
        c->broken = code;
    return code;
}

/* The communicator failed (already aborted, so that the peers' waits end
 * too): ask the peers who is gone or late and what they were doing, into
 * who (len bytes; "" without a watch).  Not while finalizing: peers that
 * are done may have exited, as they should. */
static void diagnose (struct nccl_ctx *c, char *who, size_t len)
{
    double window = 0.1 * c->cfg->timeout_s;

    who[0] = '\0';
    if (!c->watch || c->call == NCCL_CALL_FINALIZE)
        return;
    window = window < ASK_WINDOW_MIN ? ASK_WINDOW_MIN
             : window > ASK_WINDOW_MAX ? ASK_WINDOW_MAX
                                       : window;
    c->sticky |= NCCL_ST_FAILED;
    show (c, true);
    (void)nccl_watch_diagnose (c->watch,
                               atomic_load_explicit (&c->state,
                                                     memory_order_relaxed),
                               window, who, len);
}

/* Can r mean that a peer is gone or stuck (not a mistake of this rank's)? */
static bool peer_error (ncclResult_t r)
{
    return r == ncclRemoteError || r == ncclSystemError
           || r == ncclInternalError;
}

/* NCCL returned r != ncclSuccess for what: abort, record it with who is at
 * fault when a peer may be and NCCL's own words at the end, return the
 * code. */
static int nccl_fail (struct nccl_ctx *c, ncclResult_t r, const char *what)
{
    int code = r == ncclRemoteError ? DDP_EPEER : DDP_ENCCL;
    const char *last = c->comm ? ncclGetLastError (c->comm) : NULL;
    char said[384], who[512] = "", name[64];

    if (!what)
        what = call_name (c, name, sizeof (name));
    /* NCCL's words first: the abort may reuse their buffer. */
    snprintf (said, sizeof (said), "%s%s%s%s", ncclGetErrorString (r),
              last && *last ? " (" : "", last && *last ? last : "",
              last && *last ? ")" : "");
    comm_break (c, code);
    if (peer_error (r))
        diagnose (c, who, sizeof (who));
    if (who[0])
        return ddpi_error (code, "nccl: %s: %s; NCCL: %s", what, who, said);
    return ddpi_error (code, "nccl: %s: %s", what, said);
}

/* The bound of a wait now: the core's (it switches from the init timeout
 * to the collectives' after init), at most our own cap. */
static double bound (const struct nccl_ctx *c)
{
    return c->cfg->timeout_s < c->cap_s ? c->cfg->timeout_s : c->cap_s;
}

static int timed_out (struct nccl_ctx *c, const char *what)
{
    char who[512], name[64];
    double limit = bound (c);

    if (!what)
        what = call_name (c, name, sizeof (name));
    comm_break (c, DDP_ETIMEDOUT);
    diagnose (c, who, sizeof (who));
    return ddpi_error (DDP_ETIMEDOUT, "nccl: %s did not complete within"
                       " %s=%g s: %s; communicator aborted", what,
                       c->cfg->timeout_name ? c->cfg->timeout_name
                                            : "DDP_TIMEOUT", limit,
                       who[0] ? who : "a peer is missing, hung or"
                       " unreachable (NCCL_DEBUG=WARN may say more)");
}

static int broken_error (struct nccl_ctx *c)
{
    return ddpi_error (c->broken, "nccl: the communicator was aborted after"
                      " an earlier error (%s)", ddp_strerror (c->broken));
}

/* r is the result of a call on a non-blocking communicator: wait while it
 * is ncclInProgress.  what names it in messages (NULL: the current call).
 * Returns 0 or a DDP_E* code (communicator aborted). */
static int nccl_settle (struct nccl_ctx *c, ncclResult_t r, const char *what)
{
    struct ddpi_waiter w;

    if (r == ncclSuccess) /* the common case: nothing to wait for */
        return 0;
    ddpi_wait_init (&w, bound (c), SPIN_US);
    while (r == ncclInProgress) {
        if (ddpi_wait_step (&w) < 0)
            return timed_out (c, what);
        if (ncclCommGetAsyncError (c->comm, &r) != ncclSuccess)
            r = ncclInternalError;
    }
    return r == ncclSuccess ? 0 : nccl_fail (c, r, what);
}

/* Wait for everything on stream s, watching NCCL's asynchronous error state
 * (every few milliseconds) and the deadline; what as for nccl_settle.
 * Returns 0 or a DDP_E* code (communicator aborted). */
static int stream_wait (struct nccl_ctx *c, cudaStream_t s, const char *what)
{
    struct ddpi_waiter w;
    cudaError_t e;

    ddpi_wait_init (&w, bound (c), SPIN_US);
    while ((e = cudaStreamQuery (s)) == cudaErrorNotReady) {
        ncclResult_t ar = ncclSuccess;
        int step = ddpi_wait_step (&w);
        if (step < 0)
            return timed_out (c, what);
        if (step == 1 && c->comm
            && ncclCommGetAsyncError (c->comm, &ar) == ncclSuccess
            && ar != ncclSuccess && ar != ncclInProgress)
            return nccl_fail (c, ar, what);
    }
    if (e != cudaSuccess) {
        char name[64];
        cuda_error (e, what ? what : call_name (c, name, sizeof (name)));
        return comm_break (c, DDP_ECUDA);
    }
    return 0;
}

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
    e = cudaPointerGetAttributes (&a, p);
    if (e != cudaSuccess) {
        (void)cudaGetLastError (); /* unknown to CUDA: plain host memory */
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
        cudaFree (c->scratch); /* synchronizes: nothing may still use it */
        c->scratch = NULL;
        c->scratch_size = 0;
    }
    if ((e = cudaMalloc (&p, bytes)) != cudaSuccess)
        return cuda_error (e, "cudaMalloc (staging buffer)");
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
    if (cudaMemcpyAsync (dr, ds, k->send_bytes, cudaMemcpyDeviceToDevice, s)
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
            return ncclBroadcast (dr, dr, k->count, k->dt, k->root, c->comm,
                                  s);
        case DDP_COLL_REDUCE:
            return ncclReduce (ds, dr, k->count, k->dt, k->op, k->root,
                               c->comm, s);
        case DDP_COLL_ALLREDUCE:
            return ncclAllReduce (ds, dr, k->count, k->dt, k->op, c->comm, s);
        case DDP_COLL_ALLGATHER:
            return ncclAllGather (ds, dr, k->count, k->dt, c->comm, s);
        case DDP_COLL_GATHER:
            break;
    }
    /* Gather: NCCL has none; the root receives from every peer. */
    if (c->rank == k->root) {
        char *own = (char *)dr + (size_t)c->rank * b;
        if (own != ds
            && cudaMemcpyAsync (own, ds, b, cudaMemcpyDeviceToDevice, s)
                   != cudaSuccess)
            return ncclUnhandledCudaError;
    }
    if ((r = ncclGroupStart ()) != ncclSuccess)
        return r;
    if (c->rank == k->root) {
        for (int p = 0; p < c->size; p++)
            if (p != c->rank
                && (r = ncclRecv ((char *)dr + (size_t)p * b, k->count, k->dt,
                                  p, c->comm, s)) != ncclSuccess)
                break;
    }
    else
        r = ncclSend (ds, k->count, k->dt, k->root, c->comm, s);
    ncclResult_t g = ncclGroupEnd ();
    return r != ncclSuccess ? r : g;
}

/* Where each side lives on the device: ds/dr point at the user's buffers
 * or into the scratch buffer.  Host data is copied in on stream s. */
static int coll_stage_in (struct nccl_ctx *c, const struct coll *k,
                          bool sdev, bool rdev, const void **ds, void **dr,
                          cudaStream_t s)
{
    /* One scratch region serves both sides of an in-place (all)reduce. */
    bool inplace = k->sendbuf == k->recvbuf
                   && (k->kind == DDP_COLL_REDUCE || k->kind == DDP_COLL_ALLREDUCE);
    bool send_scratch = k->send_bytes && !sdev;
    bool recv_scratch = k->recv_bytes && !rdev;
    size_t soff = 0, roff = 0, need = 0;
    cudaError_t e;
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
    if (send_scratch && k->send_bytes) {
        e = cudaMemcpyAsync ((void *)*ds, k->sendbuf, k->send_bytes,
                             sdev ? cudaMemcpyDeviceToDevice
                                  : cudaMemcpyHostToDevice, s);
        if (e != cudaSuccess)
            return cuda_error (e, "cudaMemcpyAsync (staging in)");
    }
    return 0;
}

/* Run k on stream s.  With device buffers only and !wait it returns once
 * enqueued; otherwise once complete (host results copied back). */
static int coll_run (struct nccl_ctx *c, struct coll *k, cudaStream_t s,
                     bool wait)
{
    bool sdev, rdev, staged;
    const void *ds;
    void *dr;
    int rc;

    if (c->broken)
        return broken_error (c);
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
    if ((rc = coll_stage_in (c, k, sdev, rdev, &ds, &dr, s)) < 0)
        return rc;
    rc = nccl_settle (c, coll_enqueue (c, k, ds, dr, s), k->name);
    if (rc < 0)
        return rc;
    staged = (k->recv_bytes && !rdev) || (k->send_bytes && !sdev);
    if (!wait && !staged)
        return 0;
    /* The operation must finish before a copy into pageable host memory is
     * issued: that copy blocks the CPU with no deadline. */
    if ((rc = stream_wait (c, s, k->name)) < 0)
        return rc;
    if (k->recv_bytes && !rdev) {
        cudaError_t e = cudaMemcpyAsync (k->recvbuf, dr, k->recv_bytes,
                                         cudaMemcpyDeviceToHost, s);
        if (e != cudaSuccess)
            return cuda_error (e, "cudaMemcpyAsync (staging out)");
        if ((rc = stream_wait (c, s, k->name)) < 0)
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

/* ---- backend operations ------------------------------------------------ */

static int op_barrier (void *ctx)
{
    struct nccl_ctx *c = ctx;
    int rc;

    if (c->broken)
        return broken_error (c);
    call_enter (c, NCCL_CALL_BARRIER, false);
    rc = nccl_settle (c, ncclAllReduce (c->flag, c->flag, 1, ncclInt32,
                                        ncclSum, c->comm, c->stream),
                      NULL);
    if (rc == 0)
        rc = stream_wait (c, c->stream, NULL);
    show (c, false);
    return rc;
}

/* Which call each collective is, to the watch and in messages. */
static const int coll_calls[] = {
    [DDP_COLL_BCAST] = NCCL_CALL_BCAST,
    [DDP_COLL_REDUCE] = NCCL_CALL_REDUCE,
    [DDP_COLL_ALLREDUCE] = NCCL_CALL_ALLREDUCE,
    [DDP_COLL_GATHER] = NCCL_CALL_GATHER,
    [DDP_COLL_ALLGATHER] = NCCL_CALL_ALLGATHER,
};

/* Every collective, for the core API (on the library's stream, waiting) and
 * the _stream calls (on the caller's stream). */
static int op_coll (void *ctx, const struct ddp_coll *d)
{
    struct nccl_ctx *c = ctx;
    struct coll k = {.kind = d->kind, .name = NULL,
                     .sendbuf = d->sendbuf, .recvbuf = d->recvbuf,
                     .count = d->count, .root = d->root};
    bool with_op = d->kind == DDP_COLL_REDUCE || d->kind == DDP_COLL_ALLREDUCE;
    int rc;

    if ((rc = coll_types (&k, d->dtype, d->op, with_op)) < 0)
        return rc;
    coll_sizes (c, &k, ddp_dtype_size (d->dtype));
    call_enter (c, coll_calls[d->kind], d->on_stream);
    rc = coll_run (c, &k, d->on_stream ? (cudaStream_t)d->stream : c->stream,
                   !d->on_stream);
    show (c, false);
    return rc;
}

static void op_abort (void *ctx)
{
    struct nccl_ctx *c = ctx;

    if (!c)
        return;
    /* Peers that ask from now on hear that this rank called ddp_abort. */
    c->sticky |= NCCL_ST_ABORTED;
    show (c, false);
    comm_break (c, DDP_EPEER);
}

/* ---- create / destroy -------------------------------------------------- */

static void ctx_free (struct nccl_ctx *c)
{
    if (!c)
        return;
    if (c->device >= 0)
        cudaSetDevice (c->device);
    c->call = NCCL_CALL_FINALIZE;
    show (c, true);
    if (c->comm) {
        /* Flush, then free; abort if stuck.  After the core's final barrier
         * every rank finalizes at about the same time, so a short bound
         * keeps a dead peer from holding ddp_finalize() for DDP_TIMEOUT. */
        c->cap_s = FINALIZE_TIMEOUT;
        if (nccl_settle (c, ncclCommFinalize (c->comm), "ncclCommFinalize")
                == 0
            && c->comm) {
            ncclCommDestroy (c->comm);
            c->comm = NULL;
        }
    }
    if (c->stream)
        cudaStreamDestroy (c->stream);
    if (c->flag)
        cudaFree (c->flag);
    if (c->scratch)
        cudaFree (c->scratch);
    nccl_watch_stop (c->watch);
    free (c);
}

static void op_destroy (void *ctx)
{
    ctx_free (ctx);
}

/* Fill b->status/reason (keeps the first failure).  Returns code. */
static int blob_fail (struct nccl_blob *b, int code, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
static int blob_fail (struct nccl_blob *b, int code, const char *fmt, ...)
{
    va_list ap;

    if (b->status == 0) {
        b->status = code;
        va_start (ap, fmt);
        vsnprintf (b->reason, sizeof (b->reason), fmt, ap);
        va_end (ap);
    }
    return code;
}

/* Everything this rank does before the fence: choose and set the GPU, read
 * its identity, and create a unique id when it is a root.  Failures go into
 * the blob (the rank still joins the fence, so every rank learns of it). */
static void local_setup (struct nccl_ctx *c, const struct bootstrap_info *bi,
                         int nroots, struct nccl_blob *me)
{
    char why[128];
    const char *cvd = getenv ("CUDA_VISIBLE_DEVICES");
    struct cudaDeviceProp prop;
    cudaError_t e;
    int ndev = 0;
    ncclResult_t r;

    if (gethostname (me->host, sizeof (me->host) - 1) < 0)
        snprintf (me->host, sizeof (me->host), "unknown");
    me->device = -1;
    if ((e = cudaGetDeviceCount (&ndev)) != cudaSuccess) {
        (void)cudaGetLastError ();
        blob_fail (me, DDP_ECUDA, "cudaGetDeviceCount: %s",
                   cudaGetErrorString (e));
        return;
    }
    if ((c->device = nccl_choose_device (ndev, cvd, bi->local_rank, why,
                                         sizeof (why))) < 0) {
        blob_fail (me, DDP_ECUDA, "%s", why);
        return;
    }
    me->device = c->device;
    if ((e = cudaSetDevice (c->device)) != cudaSuccess
        || (e = cudaFree (NULL)) != cudaSuccess) { /* creates the context */
        blob_fail (me, DDP_ECUDA, "cudaSetDevice (%d): %s", c->device,
                   cudaGetErrorString (e));
        return;
    }
    if (cudaDeviceGetPCIBusId (me->busid, sizeof (me->busid), c->device)
        != cudaSuccess)
        me->busid[0] = '\0';
    if (cudaGetDeviceProperties (&prop, c->device) == cudaSuccess)
        memcpy (me->uuid, prop.uuid.bytes, sizeof (me->uuid));
    (void)cudaGetLastError ();
    if (nroots > 0 && nccl_root_index (bi->rank, bi->size, nroots) >= 0) {
        if ((r = ncclGetUniqueId (&me->id)) != ncclSuccess) {
            blob_fail (me, DDP_ENCCL, "ncclGetUniqueId: %s",
                       ncclGetErrorString (r));
            return;
        }
        me->has_id = 1;
    }
}

/* In a world of several ranks, start this rank's watch (watch.h) and put
 * its address in me.  Without one (an error, said with DDP_DEBUG) the
 * backend works the same, but its messages cannot name a dead or late
 * rank. */
static void watch_start (struct nccl_ctx *c, struct nccl_blob *me)
{
    char why[256];

    if (c->size > 1
        && nccl_watch_start (c->rank, c->size, &c->state, &me->watch,
                             &c->watch, why, sizeof (why)) < 0)
        ddpi_debug ("nccl: no watch (a dead or late rank will not be"
                    " named): %s", why);
}

/* Read DDP_NCCL_RANKS_PER_ROOT.  Returns the value, or -1 (reason in me). */
static int ranks_per_root (struct nccl_blob *me)
{
    const char *s = getenv ("DDP_NCCL_RANKS_PER_ROOT");
    long v;

    if (!s)
        return NCCL_DEFAULT_RANKS_PER_ROOT;
    if (ddpi_parse_long (s, 1, INT_MAX, &v) < 0) {
        blob_fail (me, DDP_EINVAL, "DDP_NCCL_RANKS_PER_ROOT='%s' is not a"
                   " positive integer", s);
        return -1;
    }
    return (int)v;
}

/* Check every rank's blob; collect the unique ids in root order into ids.
 * Returns 0 or a DDP_E* code (the same on every rank, except that the rank
 * at fault returns its own code where the others return DDP_EREMOTE). */
static int check_blobs (struct nccl_ctx *c, const struct nccl_blob *all,
                        int nroots, ncclUniqueId *ids)
{
    char msg[512];

    for (int r = 0; r < c->size; r++)
        if (all[r].status != 0)
            return ddpi_error (r == c->rank ? all[r].status : DDP_EREMOTE,
                              "nccl: rank %d (host %s) cannot use NCCL: %s",
                              r, all[r].host, all[r].reason);
    for (int r = 1; r < c->size; r++) {
        if (all[r].ranks_per_root != all[0].ranks_per_root)
            return ddpi_error (DDP_EMISMATCH, "nccl: DDP_NCCL_RANKS_PER_ROOT"
                              " differs: %d on rank 0, %d on rank %d",
                              all[0].ranks_per_root, all[r].ranks_per_root, r);
        if (all[r].nccl_version != all[0].nccl_version)
            return ddpi_error (DDP_EMISMATCH, "nccl: NCCL versions differ:"
                              " %d on rank 0 (host %s), %d on rank %d (host"
                              " %s)", all[0].nccl_version, all[0].host,
                              all[r].nccl_version, r, all[r].host);
    }
    switch (nccl_find_duplicate_gpu (all, c->size, msg, sizeof (msg))) {
    case 0:
        break;
    case 1:
        return ddpi_error (DDP_ENCCL, "nccl: %s", msg);
    default:
        return ddpi_error (DDP_ENOMEM, "nccl: %s", msg);
    }
    for (int i = 0; i < nroots; i++) {
        int r = nccl_root_rank (i, c->size, nroots);
        if (r < 0 || !all[r].has_id)
            return ddpi_error (DDP_EMISMATCH, "nccl: rank %d did not publish"
                              " NCCL unique id %d", r, i);
        ids[i] = all[r].id;
    }
    return 0;
}

/* The one fence: publish me and return every rank's blob, decoded (free
 * it), or NULL with the DDP_E* code in *rc. */
static struct nccl_blob *exchange (struct nccl_ctx *c, struct bootstrap *b,
                                   const struct nccl_blob *me, int *rc)
{
    char err[256];
    void *raw = NULL;
    size_t *off = calloc ((size_t)c->size, sizeof (*off));
    size_t *len = calloc ((size_t)c->size, sizeof (*len));
    struct nccl_blob *all = calloc ((size_t)c->size, sizeof (*all));
    struct nccl_blob *done = NULL;

    if (!off || !len || !all) {
        *rc = ddpi_error (DDP_ENOMEM, "nccl: out of memory");
        goto out;
    }
    *rc = bootstrap_exchange (b, me, sizeof (*me), &raw, off, len, err,
                              sizeof (err));
    if (*rc < 0) {
        ddpi_error (*rc, "nccl: bootstrap exchange: %s", err);
        goto out;
    }
    for (int r = 0; r < c->size; r++)
        if (nccl_blob_decode ((char *)raw + off[r], len[r], &all[r], err,
                              sizeof (err)) < 0) {
            *rc = ddpi_error (DDP_EMISMATCH, "nccl: rank %d: %s", r, err);
            goto out;
        }
    done = all;
    all = NULL;
out:
    free (raw);
    free (off);
    free (len);
    free (all);
    return done;
}

/* Create the communicator without blocking and poll it to the deadline. */
static int comm_init (struct nccl_ctx *c, int nroots, ncclUniqueId *ids)
{
    ncclResult_t r;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;

    config.blocking = 0;
#endif
#ifdef HAVE_NCCL_SCALABLE_INIT
    r = ncclCommInitRankScalable (&c->comm, c->size, c->rank, nroots, ids,
                                  &config);
#elif NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    (void)nroots;
    r = ncclCommInitRankConfig (&c->comm, c->size, ids[0], c->rank, &config);
#else
    (void)nroots;
    r = ncclCommInitRank (&c->comm, c->size, ids[0], c->rank);
#endif
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_fail (c, r, "communicator init");
    if (r == ncclSuccess && c->comm
        && ncclCommGetAsyncError (c->comm, &r) != ncclSuccess)
        r = ncclInternalError;
    return nccl_settle (c, r, "communicator init");
}

/* The device resources of the collectives.  (The core runs a first barrier
 * after create(), which proves the communicator works.) */
static int comm_ready (struct nccl_ctx *c)
{
    cudaError_t e;

    if ((e = cudaStreamCreate (&c->stream)) != cudaSuccess)
        return cuda_error (e, "cudaStreamCreate");
    if ((e = cudaMalloc ((void **)&c->flag, sizeof (int))) != cudaSuccess
        || (e = cudaMemset (c->flag, 0, sizeof (int))) != cudaSuccess)
        return cuda_error (e, "cudaMalloc");
    return 0;
}

static int op_create (struct bootstrap *b, const struct ddp_config *cfg,
                      void **ctxp)
{
    const struct bootstrap_info *bi = bootstrap_info (b);
    struct nccl_ctx *c = calloc (1, sizeof (*c));
    struct nccl_blob me;
    struct nccl_blob *all = NULL;
    ncclUniqueId *ids = NULL;
    double t0 = ddpi_now (), t1, t2, t3, t4;
    int rpr, nroots = 0, version = 0, rc;

    if (!c)
        return ddpi_error (DDP_ENOMEM, "nccl: out of memory");
    c->rank = bi->rank;
    c->size = bi->size;
    c->device = -1;
    c->cfg = cfg;
    c->cap_s = DDPI_TIMEOUT_MAX;
    c->no_cache = getenv ("DDP_NCCL_BUFFER_CACHE")
                  && strcmp (getenv ("DDP_NCCL_BUFFER_CACHE"), "0") == 0;
    memset (&me, 0, sizeof (me));
    me.magic = NCCL_BLOB_MAGIC;
    ncclGetVersion (&version);
    me.nccl_version = version;
    if ((rpr = ranks_per_root (&me)) > 0) {
#ifdef HAVE_NCCL_SCALABLE_INIT
        nroots = nccl_num_roots (c->size, rpr);
#else
        nroots = 1;
#endif
    }
    me.ranks_per_root = rpr;
    c->call = NCCL_CALL_INIT;
    show (c, true);
    watch_start (c, &me);
    local_setup (c, bi, nroots, &me);
    t1 = ddpi_now ();
    if (!(all = exchange (c, b, &me, &rc)))
        goto error;
    t2 = ddpi_now ();
    if (!(ids = calloc (nroots > 0 ? (size_t)nroots : 1, sizeof (*ids)))) {
        rc = ddpi_error (DDP_ENOMEM, "nccl: out of memory");
        goto error;
    }
    if ((rc = check_blobs (c, all, nroots, ids)) < 0)
        goto error;
    if (c->watch && nccl_watch_peers (c->watch, all) < 0)
        ddpi_debug ("nccl: out of memory for the peers' watch addresses:"
                    " a dead or late rank will not be named");
    if ((rc = comm_init (c, nroots, ids)) < 0)
        goto error;
    t3 = ddpi_now ();
    if ((rc = comm_ready (c)) < 0)
        goto error;
    t4 = ddpi_now ();
    ddpi_debug ("nccl: GPU %d of this task's view (%s, CUDA_VISIBLE_DEVICES=%s)"
               " on %s; NCCL %d, %d root(s) of %d ranks", c->device, me.busid,
               getenv ("CUDA_VISIBLE_DEVICES") ? getenv ("CUDA_VISIBLE_DEVICES")
                                               : "unset",
               me.host, version, nroots, c->size);
    ddpi_debug ("nccl: init phases: local setup %.3f s, exchange %.3f s,"
               " communicator %.3f s, stream %.3f s, total %.3f s", t1 - t0,
               t2 - t1, t3 - t2, t4 - t3, t4 - t0);
    free (all);
    free (ids);
    *ctxp = c;
    return 0;
error:
    if (c->comm)
        comm_break (c, rc);
    free (all);
    free (ids);
    ctx_free (c);
    return rc;
}

/* ---- the NCCL section of ddp.h, through the core ------------------------ */

static void *gpu_comm (void *ctx)
{
    struct nccl_ctx *c = ctx;
    return c->broken ? NULL : (void *)c->comm;
}

static void *gpu_stream (void *ctx)
{
    return (void *)((struct nccl_ctx *)ctx)->stream;
}

static int gpu_device (void *ctx)
{
    return ((struct nccl_ctx *)ctx)->device;
}

static int gpu_synchronize (void *ctx, void *stream)
{
    struct nccl_ctx *c = ctx;
    char what[96], name[64];
    int rc;

    if (c->broken)
        return broken_error (c);
    /* The peers see this rank in its last call until the wait is over. */
    show (c, true);
    snprintf (what, sizeof (what), "ddp_stream_synchronize (after %s)",
              call_name (c, name, sizeof (name)));
    rc = stream_wait (c, (cudaStream_t)stream, what);
    show (c, false);
    return rc;
}

static const struct ddp_gpu_ops gpu_ops = {
    .comm = gpu_comm,
    .stream = gpu_stream,
    .device = gpu_device,
    .synchronize = gpu_synchronize,
};

const struct ddp_backend ddpi_backend_nccl = {
    .name = "nccl", .create = op_create, .destroy = op_destroy,
    .barrier = op_barrier, .coll = op_coll, .abort = op_abort,
    .gpu = &gpu_ops,
};

int nccl_backend_probe (char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount (&n);

    if (e != cudaSuccess) {
        (void)cudaGetLastError ();
        snprintf (why, whylen, "no usable CUDA device: cudaGetDeviceCount: %s",
                  cudaGetErrorString (e));
        return DDP_ECUDA;
    }
    if (n < 1) {
        snprintf (why, whylen, "no CUDA device visible");
        return DDP_ECUDA;
    }
    return 0;
}

int nccl_backend_mem_info (size_t *used, size_t *total)
{
    size_t f = 0, t = 0;
    int n = 0;
    cudaError_t e;

    if (cudaGetDeviceCount (&n) != cudaSuccess || n < 1) {
        (void)cudaGetLastError ();
        return ddpi_error (DDP_ENOTSUP, "ddp_gpu_mem_info: no CUDA device");
    }
    if ((e = cudaMemGetInfo (&f, &t)) != cudaSuccess)
        return cuda_error (e, "cudaMemGetInfo");
    if (used)
        *used = t - f;
    if (total)
        *total = t;
    return 0;
}
