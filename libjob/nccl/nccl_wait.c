/* nccl_wait.c - errors and waiting in the NCCL backend (nccl_ctx.h):
 * abort the communicator and record why, ask the peers' watches (watch.h)
 * who is gone or late after a failure or a deadline, and poll a
 * non-blocking NCCL call or a stream against the deadline in force, so
 * that an asynchronous NCCL error or a missing peer becomes an error return
 * instead of a hang.  Calls nothing of the backend above it.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>

#include "ddp.h"
#include "ddp_internal.h"
#include "nccl_ctx.h"
#include "nccl_util.h"
#include "wait.h"
#include "watch.h"

/* Waits spin this long, then yield, then nap longer as they go on
 * (wait.h): a GPU collective usually completes within the spin, and a long
 * one (or a communicator init at scale) does not keep a core busy. */
#define SPIN_US 1000
/* How long each step of asking the peers after a failure may take: a
 * tenth of the timeout in force, within these bounds (seconds). */
#define ASK_WINDOW_MIN 0.25
#define ASK_WINDOW_MAX 1.0

/* The current call as a user knows it ("ddp_allreduce #12"). */
const char *nccl_call_name (const struct nccl_ctx *c, char *buf, size_t len)
{
    return nccl_state_name (atomic_load_explicit (&c->state,
                                                  memory_order_relaxed),
                            buf, len);
}

int nccl_cuda_error (cudaError_t e, const char *what)
{
    return ddpi_error (DDP_ECUDA, "nccl: %s: %s", what, DL (cudaGetErrorString) (e));
}

/* Abort the communicator (peers' pending operations then fail or time out
 * instead of waiting for us) and remember why.  Returns code. */
int nccl_comm_break (struct nccl_ctx *c, int code)
{
    if (c->comm) {
        DL (ncclCommAbort) (c->comm);
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
    nccl_show (c, true);
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
int nccl_fail (struct nccl_ctx *c, ncclResult_t r, const char *what)
{
    int code = r == ncclRemoteError ? DDP_EPEER : DDP_ENCCL;
    const char *last = c->comm ? DL (ncclGetLastError) (c->comm) : NULL;
    char said[384], who[512] = "", name[64];

    if (!what)
        what = nccl_call_name (c, name, sizeof (name));
    /* NCCL's words first: the abort may reuse their buffer. */
    snprintf (said, sizeof (said), "%s%s%s%s", DL (ncclGetErrorString) (r),
              last && *last ? " (" : "", last && *last ? last : "",
              last && *last ? ")" : "");
    nccl_comm_break (c, code);
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
        what = nccl_call_name (c, name, sizeof (name));
    nccl_comm_break (c, DDP_ETIMEDOUT);
    diagnose (c, who, sizeof (who));
    return ddpi_error (DDP_ETIMEDOUT, "nccl: %s did not complete within"
                       " %s=%g s: %s; communicator aborted", what,
                       c->cfg->timeout_name ? c->cfg->timeout_name
                                            : "DDP_TIMEOUT", limit,
                       who[0] ? who : "a peer is missing, hung or"
                       " unreachable (NCCL_DEBUG=WARN may say more)");
}

int nccl_broken_error (struct nccl_ctx *c)
{
    return ddpi_error (c->broken, "nccl: the communicator was aborted after"
                      " an earlier error (%s)", ddp_strerror (c->broken));
}

/* r is the result of a call on a non-blocking communicator: wait while it
 * is ncclInProgress.  what names it in messages (NULL: the current call).
 * Returns 0 or a DDP_E* code (communicator aborted). */
int nccl_settle (struct nccl_ctx *c, ncclResult_t r, const char *what)
{
    struct ddpi_waiter w;

    if (r == ncclSuccess) /* the common case: nothing to wait for */
        return 0;
    ddpi_wait_init (&w, bound (c), SPIN_US);
    while (r == ncclInProgress) {
        if (ddpi_wait_step (&w) < 0)
            return timed_out (c, what);
        if (DL (ncclCommGetAsyncError) (c->comm, &r) != ncclSuccess)
            r = ncclInternalError;
    }
    return r == ncclSuccess ? 0 : nccl_fail (c, r, what);
}

/* Wait for everything on stream s, watching NCCL's asynchronous error state
 * (every few milliseconds) and the deadline; what as for nccl_settle.
 * Returns 0 or a DDP_E* code (communicator aborted). */
int nccl_stream_wait (struct nccl_ctx *c, cudaStream_t s, const char *what)
{
    struct ddpi_waiter w;
    cudaError_t e;

    ddpi_wait_init (&w, bound (c), SPIN_US);
    while ((e = DL (cudaStreamQuery) (s)) == cudaErrorNotReady) {
        ncclResult_t ar = ncclSuccess;
        int step = ddpi_wait_step (&w);
        if (step < 0)
            return timed_out (c, what);
        if (step == 1 && c->comm
            && DL (ncclCommGetAsyncError) (c->comm, &ar) == ncclSuccess
            && ar != ncclSuccess && ar != ncclInProgress)
            return nccl_fail (c, ar, what);
    }
    if (e != cudaSuccess) {
        char name[64];
        nccl_cuda_error (e, what ? what
                                 : nccl_call_name (c, name, sizeof (name)));
        return nccl_comm_break (c, DDP_ECUDA);
    }
    return 0;
}
