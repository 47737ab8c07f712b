/* nccl_ctx.h - what the files of the NCCL backend share (internal to
 * libjob/nccl; design: doc/nccl.md): the state of one communicator
 * (struct nccl_ctx), what this rank shows its peers' watch, and the error
 * and wait helpers every call of the backend ends in.
 *
 * The files, each calling only those below it:
 *   nccl.c       create, destroy, abort, the NCCL section of ddp.h and the
 *                backend's table (nccl_backend.h)
 *   nccl_coll.c  the barrier and the collectives: buffer kinds, staging
 *                through the scratch buffer, NCCL's calls
 *   nccl_wait.c  errors and waiting: abort the communicator, ask the watch
 *                who is gone or late, poll a call or a stream to the
 *                deadline
 *   watch.c, nccl_util.c  the watch and the pure parts, below all three
 *
 * Shows CUDA's and NCCL's types: included by this folder's files only.
 */
#ifndef DDP_NCCL_CTX_H
#define DDP_NCCL_CTX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "backend.h"
#include "nccl_dl.h"
#include "nccl_util.h"

struct nccl_watch;

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
 * one cost of the watch on the hot path (inline, as it was in one file). */
static inline void nccl_show (struct nccl_ctx *c, bool in)
{
    unsigned fl = c->sticky | (in ? NCCL_ST_IN : 0)
                  | (c->on_stream ? NCCL_ST_STREAM : 0);

    atomic_store_explicit (&c->state, NCCL_STATE (c->num, c->call, fl),
                           memory_order_relaxed);
}

/* A barrier or collective begins: count it (as the host backend does, the
 * one of ddp_init included). */
static inline void nccl_call_enter (struct nccl_ctx *c, int call,
                                    bool on_stream)
{
    c->num++;
    c->call = call;
    c->on_stream = on_stream;
    nccl_show (c, true);
}

/* ---- errors and waiting (nccl_wait.c) ----------------------------------- */

/* The current call as a user knows it ("ddp_allreduce #12"), in buf. */
const char *nccl_call_name (const struct nccl_ctx *c, char *buf, size_t len);

/* Record "nccl: what: CUDA's words for e"; returns DDP_ECUDA. */
int nccl_cuda_error (cudaError_t e, const char *what);

/* Abort the communicator (peers' pending operations then fail or time out
 * instead of waiting for us) and remember why (the first code).  Returns
 * code. */
int nccl_comm_break (struct nccl_ctx *c, int code);

/* NCCL returned r != ncclSuccess for what (NULL: the current call): abort,
 * record it with who is at fault when a peer may be and NCCL's own words,
 * return the code (DDP_EPEER or DDP_ENCCL). */
int nccl_fail (struct nccl_ctx *c, ncclResult_t r, const char *what);

/* Record that the communicator was aborted earlier; returns that code. */
int nccl_broken_error (struct nccl_ctx *c);

/* r is the result of a call on a non-blocking communicator: wait while it
 * is ncclInProgress, to the deadline in force.  what names it in messages
 * (NULL: the current call).  Returns 0 or a DDP_E* code (communicator
 * aborted). */
int nccl_settle (struct nccl_ctx *c, ncclResult_t r, const char *what);

/* Wait for everything on stream s, watching NCCL's asynchronous error state
 * and the deadline; what as for nccl_settle.  Returns 0 or a DDP_E* code
 * (communicator aborted). */
int nccl_stream_wait (struct nccl_ctx *c, cudaStream_t s, const char *what);

/* ---- the barrier and the collectives (nccl_coll.c) ---------------------- */

/* The backend's barrier and collective operations (backend.h's contract):
 * 0 or a DDP_E* code, the communicator aborted on a fault. */
int nccl_op_barrier (void *ctx);
int nccl_op_coll (void *ctx, const struct ddp_coll *d);

#endif /* DDP_NCCL_CTX_H */
