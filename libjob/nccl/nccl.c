/* nccl.c - the NCCL backend of libddp (design: doc/nccl.md): its life
 * and its table (nccl_backend.h).  What each file of the backend owns:
 * nccl_ctx.h.
 *
 * create(): pick the GPU, publish host + GPU identity (+ a unique id on the
 * root ranks) in exactly one bootstrap exchange, check the result (every
 * rank reached the fence, same settings, one GPU per rank) before NCCL is
 * called, then create the communicator non-blocking and poll it against the
 * DDP_TIMEOUT deadline (nccl_wait.c); start this rank's watch (watch.h),
 * which names a rank that is gone or late after an error.  destroy():
 * finalize within a short bound, abort if stuck.  abort(): ddp_abort.  The
 * barrier and the collectives are nccl_coll.c's.  The core checks every
 * argument and owns the NCCL section of ddp.h; this file supplies its
 * operations (nccl_op_coll for the plain and _stream collectives, gpu_ops
 * for the rest).
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ddp.h"
#include "ddp_internal.h"
#include "backend.h"
#include "bootstrap.h"
#include "nccl_backend.h"
#include "nccl_ctx.h"
#include "nccl_util.h"
#include "watch.h"

#define FINALIZE_TIMEOUT 5.0 /* seconds, at most, for ncclCommFinalize */

/* ---- abort / create / destroy ------------------------------------------- */

static void op_abort (void *ctx)
{
    struct nccl_ctx *c = ctx;

    if (!c)
        return;
    /* Peers that ask from now on hear that this rank called ddp_abort. */
    c->sticky |= NCCL_ST_ABORTED;
    nccl_show (c, false);
    nccl_comm_break (c, DDP_EPEER);
}

static void ctx_free (struct nccl_ctx *c)
{
    if (!c)
        return;
    if (c->device >= 0)
        DL (cudaSetDevice) (c->device);
    c->call = NCCL_CALL_FINALIZE;
    nccl_show (c, true);
    if (c->comm) {
        /* Flush, then free; abort if stuck.  After the core's final barrier
         * every rank finalizes at about the same time, so a short bound
         * keeps a dead peer from holding ddp_finalize() for DDP_TIMEOUT. */
        c->cap_s = FINALIZE_TIMEOUT;
        if (nccl_settle (c, DL (ncclCommFinalize) (c->comm), "ncclCommFinalize")
                == 0
            && c->comm) {
            DL (ncclCommDestroy) (c->comm);
            c->comm = NULL;
        }
    }
    if (c->stream)
        DL (cudaStreamDestroy) (c->stream);
    if (c->flag)
        DL (cudaFree) (c->flag);
    if (c->scratch)
        DL (cudaFree) (c->scratch);
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

/* Make c->device current (creating its CUDA context) and put its identity
 * in me.  Returns 0, or -1 with the failure in me. */
static int use_device (struct nccl_ctx *c, struct nccl_blob *me)
{
    struct cudaDeviceProp prop;
    cudaError_t e;

    me->device = c->device;
    if ((e = DL (cudaSetDevice) (c->device)) != cudaSuccess
        || (e = DL (cudaFree) (NULL)) != cudaSuccess) { /* creates the context */
        blob_fail (me, DDP_ECUDA, "cudaSetDevice (%d): %s", c->device,
                   DL (cudaGetErrorString) (e));
        return -1;
    }
    if (DL (cudaDeviceGetPCIBusId) (me->busid, sizeof (me->busid), c->device)
        != cudaSuccess)
        me->busid[0] = '\0';
    if (DL (cudaGetDeviceProperties) (&prop, c->device) == cudaSuccess)
        memcpy (me->uuid, prop.uuid.bytes, sizeof (me->uuid));
    (void)DL (cudaGetLastError) ();
    return 0;
}

/* Everything this rank does before the fence: choose (unless c->device
 * is set already: a group's, its parent's) and set the GPU, read
 * its identity, and create a unique id when it is a root.  Failures go into
 * the blob (the rank still joins the fence, so every rank learns of it). */
static void local_setup (struct nccl_ctx *c, const struct bootstrap_info *bi,
                         int nroots, struct nccl_blob *me)
{
    char why[128], cause[160];
    const char *cvd = getenv ("CUDA_VISIBLE_DEVICES"), *hint;
    cudaError_t e;
    int ndev = 0;
    ncclResult_t r;

    me->device = -1;
    if ((e = DL (cudaGetDeviceCount) (&ndev)) != cudaSuccess) {
        (void)DL (cudaGetLastError) ();
        nccl_dl_cuda_cause (e, cause, sizeof (cause), &hint);
        blob_fail (me, DDP_ECUDA, "%s: %s", cause, hint);
        return;
    }
    if (c->device < 0
        && (c->device = nccl_choose_device (ndev, cvd, bi->local_rank, why,
                                            sizeof (why))) < 0) {
        blob_fail (me, DDP_ECUDA, "%s", why);
        return;
    }
    if (use_device (c, me) < 0)
        return;
    if (nroots > 0 && nccl_root_index (bi->rank, bi->size, nroots) >= 0) {
        if ((r = DL (ncclGetUniqueId) (&me->id)) != ncclSuccess) {
            blob_fail (me, DDP_ENCCL, "ncclGetUniqueId: %s",
                       DL (ncclGetErrorString) (r));
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
    long v = NCCL_DEFAULT_RANKS_PER_ROOT;

    if (ddpi_env_long ("DDP_NCCL_RANKS_PER_ROOT", &v) < 0) {
        blob_fail (me, DDP_EINVAL, "%s", ddpi_last_error ());
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

    int failed = nccl_blob_failed (all, c->size, c->rank);

    if (failed >= 0)
        return ddpi_error (failed == c->rank ? all[failed].status
                                             : DDP_EREMOTE,
                          "nccl: rank %d (host %s) cannot use NCCL: %s",
                          failed, all[failed].host, all[failed].reason);
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

/* Does the loaded NCCL create a communicator from several roots' ids? */
static bool scalable (void)
{
#ifdef HAVE_NCCL_SCALABLE_INIT
    return DL (ncclCommInitRankScalable) != NULL;
#else
    return false;
#endif
}

/* Create the communicator without blocking and poll it to the deadline. */
static int comm_init (struct nccl_ctx *c, int nroots, ncclUniqueId *ids)
{
    ncclResult_t r;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;

    config.blocking = 0;
#ifdef HAVE_NCCL_SCALABLE_INIT
    if (DL (ncclCommInitRankScalable))
        r = DL (ncclCommInitRankScalable) (&c->comm, c->size, c->rank, nroots,
                                           ids, &config);
    else
#endif
        r = DL (ncclCommInitRankConfig) (&c->comm, c->size, ids[0], c->rank,
                                         &config);
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_fail (c, r, "communicator init");
    if (r == ncclSuccess && c->comm
        && DL (ncclCommGetAsyncError) (c->comm, &r) != ncclSuccess)
        r = ncclInternalError;
    return nccl_settle (c, r, "communicator init");
}

/* The device resources of the collectives.  (The core runs a first barrier
 * after create(), which proves the communicator works.) */
static int comm_ready (struct nccl_ctx *c)
{
    cudaError_t e;

    if ((e = DL (cudaStreamCreate) (&c->stream)) != cudaSuccess)
        return nccl_cuda_error (e, "cudaStreamCreate");
    if ((e = DL (cudaMalloc) ((void **)&c->flag, sizeof (int))) != cudaSuccess
        || (e = DL (cudaMemset) (c->flag, 0, sizeof (int))) != cudaSuccess)
        return nccl_cuda_error (e, "cudaMalloc");
    return 0;
}

/* A context for rank of a communicator of size ranks, shown to the peers
 * as in call (NCCL_CALL_INIT, NCCL_CALL_SPLIT), with its watch started,
 * and this rank's blob begun in me: what every rank publishes, failures
 * included (a bad DDP_NCCL_BUFFER_CACHE fails every rank alike, through
 * the blobs).  NULL when out of memory. */
static struct nccl_ctx *ctx_new (int rank, int size,
                                 const struct ddp_config *cfg, int call,
                                 struct nccl_blob *me)
{
    struct nccl_ctx *c = calloc (1, sizeof (*c));
    bool cache = true;

    memset (me, 0, sizeof (*me));
    me->magic = NCCL_BLOB_MAGIC;
    me->device = -1;
    if (!c)
        return NULL;
    c->rank = rank;
    c->size = size;
    c->device = -1;
    c->cfg = cfg;
    c->cap_s = DDPI_TIMEOUT_MAX;
    if (gethostname (me->host, sizeof (me->host) - 1) < 0)
        snprintf (me->host, sizeof (me->host), "unknown");
    if (ddpi_env_flag ("DDP_NCCL_BUFFER_CACHE", &cache) < 0)
        blob_fail (me, DDP_EINVAL, "%s", ddpi_last_error ());
    c->no_cache = !cache;
    c->call = call;
    nccl_show (c, true);
    watch_start (c, me);
    return c;
}

/* A set-up failed with rc: abort what NCCL made, release the rest.
 * Returns rc. */
static int ctx_fail (struct nccl_ctx *c, int rc)
{
    if (c->comm)
        nccl_comm_break (c, rc);
    ctx_free (c);
    return rc;
}

/* The one fence of a set-up and its checks: publish me on b, check every
 * rank's blob, collect the nroots unique ids into ids (none for a split),
 * tell the watch where the peers' watches are.  Returns 0 or a DDP_E*
 * code (check_blobs). */
static int fence (struct nccl_ctx *c, struct bootstrap *b,
                  const struct nccl_blob *me, int nroots, ncclUniqueId *ids)
{
    struct nccl_blob *all;
    int rc;

    if (!(all = exchange (c, b, me, &rc)))
        return rc;
    rc = check_blobs (c, all, nroots, ids);
    if (rc == 0 && c->watch && nccl_watch_peers (c->watch, all) < 0)
        ddpi_debug ("nccl: out of memory for the peers' watch addresses:"
                    " a dead or late rank will not be named");
    free (all);
    return rc;
}

/* Load CUDA and NCCL and put this rank's NCCL version and
 * DDP_NCCL_RANKS_PER_ROOT in me (a failure too: the rank still joins the
 * fence, so that every rank learns why).  Returns the number of unique
 * ids (roots) the communicator is made from (0 after a bad
 * DDP_NCCL_RANKS_PER_ROOT), or -1 when CUDA or NCCL did not load. */
static int nccl_settings (struct nccl_blob *me, int size)
{
    char why[sizeof (me->reason)];
    int rpr;

    if (nccl_dl_load (why, sizeof (why)) < 0) {
        blob_fail (me, DDP_ECUDA, "%s", why);
        return -1;
    }
    DL (ncclGetVersion) (&me->nccl_version);
    if ((rpr = ranks_per_root (me)) < 1)
        return 0;
    me->ranks_per_root = rpr;
    return scalable () ? nccl_num_roots (size, rpr) : 1;
}

/* A communicator of b's ranks from unique ids: create(), and a group's
 * without ncclCommSplit (call NCCL_CALL_SPLIT, device its parent's; -1:
 * chosen as create() chooses). */
static int create_on (struct bootstrap *b, const struct ddp_config *cfg,
                      int call, int device, void **ctxp)
{
    const struct bootstrap_info *bi = bootstrap_info (b);
    struct nccl_blob me;
    struct nccl_ctx *c = ctx_new (bi->rank, bi->size, cfg, call, &me);
    ncclUniqueId *ids = NULL;
    double t0 = ddpi_now (), t1, t2, t3, t4;
    int nroots, rc;

    if (!c)
        return ddpi_error (DDP_ENOMEM, "nccl: out of memory");
    c->device = device;
    if ((nroots = nccl_settings (&me, c->size)) >= 0)
        local_setup (c, bi, nroots, &me);
    else
        nroots = 0;
    if (!(ids = calloc (nroots > 0 ? (size_t)nroots : 1, sizeof (*ids))))
        blob_fail (&me, DDP_ENOMEM, "out of memory");
    t1 = ddpi_now ();
    if ((rc = fence (c, b, &me, nroots, ids)) < 0)
        goto error;
    t2 = ddpi_now ();
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
               me.host, me.nccl_version, nroots, c->size);
    ddpi_debug ("nccl: init phases: local setup %.3f s, exchange %.3f s,"
               " communicator %.3f s, stream %.3f s, total %.3f s", t1 - t0,
               t2 - t1, t3 - t2, t4 - t3, t4 - t0);
    free (ids);
    *ctxp = c;
    return 0;
error:
    free (ids);
    return ctx_fail (c, rc);
}

static int op_create (struct bootstrap *b, const struct ddp_config *cfg,
                      void **ctxp)
{
    return create_on (b, cfg, NCCL_CALL_INIT, -1, ctxp);
}

/* ---- split: a group's communicator from its parent's ------------------- */

/* Does the loaded NCCL split communicators (ncclCommSplit, >= 2.18)? */
static bool can_split (void)
{
#ifdef NCCL_DL_HAVE_SPLIT
    return DL (ncclCommSplit) != NULL;
#else
    return false;
#endif
}

/* Take part in ncclCommSplit on the parent p with colour (>= 0, or
 * NCCL_SPLIT_NOCOLOR: c is NULL) and key; the new communicator becomes
 * c->comm.  Waits for the parent's part, then for the new communicator,
 * both non-blocking, to the deadline.  A failure of the parent's part
 * aborts the parent (its ranks may be left inside the split), one of the
 * new communicator only that.  Returns 0 or a DDP_E* code. */
static int comm_split (struct nccl_ctx *p, struct nccl_ctx *c, int colour,
                       int key)
{
#ifdef NCCL_DL_HAVE_SPLIT
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclComm_t nc = NULL;
    ncclResult_t r;
    int rc;

    config.blocking = 0;
    r = DL (ncclCommSplit) (p->comm, colour, key, &nc, &config);
    if (c)
        c->comm = nc;
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_fail (p, r, "ncclCommSplit");
    if ((rc = nccl_settle (p, r, "ncclCommSplit")) < 0 || !c || !c->comm)
        return rc;
    if (DL (ncclCommGetAsyncError) (c->comm, &r) != ncclSuccess)
        r = ncclInternalError;
    return nccl_settle (c, r, "ncclCommSplit (the group's communicator)");
#else
    (void)p, (void)c, (void)colour, (void)key;
    return ddpi_error (DDP_ENCCL, "nccl: built without ncclCommSplit");
#endif
}

/* This rank joins the group of colour: a context like create()'s on the
 * parent's GPU, one fence on the group's bootstrap sub (the group's ranks
 * learn whether every one of them can go on, and where the others' watches
 * are), then ncclCommSplit on the parent, with the colour when the fence
 * found no failure, else with none (the group's ranks agree on which, and
 * none leaves the parent's other ranks waiting inside the split). */
static int split_join (struct nccl_ctx *p, int colour, int key,
                       struct bootstrap *sub, const struct ddp_config *cfg,
                       void **ctxp)
{
    const struct bootstrap_info *bi = bootstrap_info (sub);
    struct nccl_blob me;
    struct nccl_ctx *c = ctx_new (bi->rank, bi->size, cfg, NCCL_CALL_SPLIT,
                                  &me);
    char first[512];
    int rc, src;

    if (!c) {
        (void)bootstrap_fence (sub, first, sizeof (first));
        nccl_call_enter (p, NCCL_CALL_SPLIT, false);
        (void)comm_split (p, NULL, NCCL_SPLIT_NOCOLOR, key);
        return ddpi_error (DDP_ENOMEM, "nccl: out of memory");
    }
    DL (ncclGetVersion) (&me.nccl_version);
    c->device = p->device;
    (void)use_device (c, &me);
    rc = fence (c, sub, &me, 0, NULL);
    if (rc < 0) /* the split's own error must not replace this one */
        snprintf (first, sizeof (first), "%s", ddpi_last_error ());
    /* The fence's rounds may be the parent's own collectives (the core's
     * group bootstrap): the split is the parent's call only from here. */
    nccl_call_enter (p, NCCL_CALL_SPLIT, false);
    src = comm_split (p, c, rc == 0 ? colour : NCCL_SPLIT_NOCOLOR, key);
    if (rc < 0)
        return ctx_fail (c, ddpi_error (rc, "%s", first));
    if ((rc = src) < 0 || (rc = comm_ready (c)) < 0)
        return ctx_fail (c, rc);
    ddpi_debug ("nccl: group of colour %d: rank %d of %d, GPU %d, through"
                " ncclCommSplit", colour, c->rank, c->size, c->device);
    *ctxp = c;
    return 0;
}

/* backend.h's split.  With ncclCommSplit every rank of the parent takes
 * part in it (DDP_UNDEFINED with NCCL_SPLIT_NOCOLOR), as a collective of
 * the parent's; without it (NCCL < 2.18) the group's communicator is made
 * as create() makes one, from the group's bootstrap, on the parent's GPU
 * (the group's local ranks are not the world's: choosing again could take
 * another rank's), and the parent is not used. */
static int op_split (void *parent, int colour, int key, struct bootstrap *sub,
                     const struct ddp_config *cfg, void **ctxp)
{
    struct nccl_ctx *p = parent;
    bool bad = colour < 0 ? colour != DDP_UNDEFINED : !sub;
    int rc;

    if (!can_split ()) {
        if (bad)
            return ddpi_error (DDP_EINVAL, "nccl: split: colour %d without"
                               " a group", colour);
        return colour == DDP_UNDEFINED
                   ? 0
                   : create_on (sub, cfg, NCCL_CALL_SPLIT, p->device, ctxp);
    }
    if (p->broken)
        return nccl_broken_error (p);
    /* A call the core should not make still takes part, as DDP_UNDEFINED,
     * so that the parent's other ranks are not left inside the split;
     * and a rank without a group takes the one round the groups' ranks
     * take on theirs (their fence) on its own bootstrap, when the core
     * gave one (backend.h). */
    if (colour == DDP_UNDEFINED || bad) {
        char err[256];
        if (sub)
            (void)bootstrap_fence (sub, err, sizeof (err));
        nccl_call_enter (p, NCCL_CALL_SPLIT, false);
        rc = comm_split (p, NULL, NCCL_SPLIT_NOCOLOR, key);
    }
    else
        rc = split_join (p, colour, key, sub, cfg, ctxp);
    if (bad && rc == 0)
        rc = ddpi_error (DDP_EINVAL, "nccl: split: colour %d without a"
                         " group", colour);
    nccl_show (p, false);
    return rc;
}

/* backend.h's join: a group its members make alone, from unique ids on
 * the parent's GPU (ncclCommSplit would need every rank of the parent). */
static int op_join (const void *parent, struct bootstrap *sub,
                    const struct ddp_config *cfg, void **ctxp)
{
    const struct nccl_ctx *p = parent;

    return create_on (sub, cfg, NCCL_CALL_SPLIT, p->device, ctxp);
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
        return nccl_broken_error (c);
    /* The peers see this rank in its last call until the wait is over. */
    nccl_show (c, true);
    snprintf (what, sizeof (what), "ddp_stream_synchronize (after %s)",
              nccl_call_name (c, name, sizeof (name)));
    rc = nccl_stream_wait (c, (cudaStream_t)stream, what);
    nccl_show (c, false);
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
    .split = op_split, .join = op_join, .barrier = nccl_op_barrier, .coll = nccl_op_coll,
    .abort = op_abort, .gpu = &gpu_ops,
};

int nccl_backend_probe (char *why, size_t whylen)
{
    char cause[160];
    int n = 0;
    cudaError_t e;

    if (nccl_dl_load (why, whylen) < 0)
        return DDP_ECUDA;
    if ((e = DL (cudaGetDeviceCount) (&n)) != cudaSuccess) {
        (void)DL (cudaGetLastError) ();
        snprintf (why, whylen, "no usable CUDA device: %s",
                  nccl_dl_cuda_cause (e, cause, sizeof (cause), NULL));
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
    char why[256];
    size_t f = 0, t = 0;
    int n = 0;
    cudaError_t e;

    if (nccl_dl_load (why, sizeof (why)) < 0)
        return ddpi_error (DDP_ENOTSUP, "ddp_gpu_mem_info: %s", why);
    if (DL (cudaGetDeviceCount) (&n) != cudaSuccess || n < 1) {
        (void)DL (cudaGetLastError) ();
        return ddpi_error (DDP_ENOTSUP, "ddp_gpu_mem_info: no CUDA device");
    }
    if ((e = DL (cudaMemGetInfo) (&f, &t)) != cudaSuccess)
        return nccl_cuda_error (e, "cudaMemGetInfo");
    if (used)
        *used = t - f;
    if (total)
        *total = t;
    return 0;
}

const char *nccl_backend_describe (char *buf, size_t len)
{
    return nccl_dl_describe (buf, len);
}
