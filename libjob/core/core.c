/* core.c - libddp's public entry points: init/finalize, identity, argument
 * checks, and dispatch of the collectives to the backend (backend.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "bootstrap.h"
#include "ddp_internal.h"
#ifdef HAVE_NCCL
#include "nccl_backend.h"
#endif

#define DEFAULT_TIMEOUT 30.0
/* Seconds of start-up skew the default init timeout allows per rank:
 * launching thousands of ranks, and their programs' own start (imports
 * from a shared file system), spread their arrival at ddp_init over
 * minutes, while a collective's peers are all there already. */
#define INIT_SECONDS_PER_RANK 0.05

/* Backends by name.  "auto" picks the first one whose probe accepts; the
 * NCCL backend goes first in this list once it exists. */
static const struct ddp_backend *const backends[] = {
    &ddpi_backend_host,
#ifdef HAVE_NCCL
    &ddpi_backend_nccl,
#endif
    NULL,
};

static struct {
    bool init;
    struct bootstrap *boot;
    const struct ddp_backend *be;
    void *ctx;
    struct ddp_config cfg;
    int rank, size, lrank, lsize, node, nnodes;
    int broken;     /* sticky failure code, 0 if healthy */
} g = { .size = 1, .lsize = 1, .nnodes = 1 };

/* A timeout variable: unset leaves *out alone.  Returns 0 or DDP_EINVAL
 * saying what is allowed. */
static int read_timeout (const char *name, double *out)
{
    const char *s = getenv (name);
    int rc;

    if (!s || (rc = ddpi_parse_timeout (s, out)) == 0)
        return 0;
    if (rc == -2)
        return ddpi_error (DDP_EINVAL, "%s='%s' is too long: give at most "
                           "%.0f seconds (about 11 days), or inf for no "
                           "timeout", name, s, DDPI_TIMEOUT_MAX);
    return ddpi_error (DDP_EINVAL, "%s='%s' is not a number of seconds: "
                       "give one in (0, %.0f], or inf for no timeout", name,
                       s, DDPI_TIMEOUT_MAX);
}

static int read_config (struct ddp_config *cfg)
{
    int rc;

    cfg->debug = ddpi_debug_enabled ();
    cfg->coll_timeout_s = DEFAULT_TIMEOUT;
    cfg->init_timeout_s = 0;
    if ((rc = read_timeout ("DDP_TIMEOUT", &cfg->coll_timeout_s)) < 0
        || (rc = read_timeout ("DDP_INIT_TIMEOUT", &cfg->init_timeout_s)) < 0)
        return rc;
    /* Until the world size is known (bootstrap_create's own waits). */
    cfg->timeout_s = cfg->init_timeout_s > 0 ? cfg->init_timeout_s
                                             : cfg->coll_timeout_s;
    cfg->timeout_name = "DDP_INIT_TIMEOUT";
    return 0;
}

/* The init timeout of a world of size ranks: DDP_INIT_TIMEOUT, else
 * DDP_TIMEOUT or INIT_SECONDS_PER_RANK per rank, the longer. */
static void set_init_timeout (struct ddp_config *cfg, int size)
{
    double scaled = INIT_SECONDS_PER_RANK * size;

    if (cfg->init_timeout_s <= 0)
        cfg->init_timeout_s = scaled > cfg->coll_timeout_s
                              ? (scaled < DDPI_TIMEOUT_MAX ? scaled
                                                           : DDPI_TIMEOUT_MAX)
                              : cfg->coll_timeout_s;
    cfg->timeout_s = cfg->init_timeout_s;
    cfg->timeout_name = "DDP_INIT_TIMEOUT";
}

/* Init is over: from now on the collectives' bound. */
static void set_coll_timeout (struct ddp_config *cfg, struct bootstrap *b)
{
    cfg->timeout_s = cfg->coll_timeout_s;
    cfg->timeout_name = "DDP_TIMEOUT";
    bootstrap_set_timeout (b, cfg->timeout_s, cfg->timeout_name);
}

static int pick_backend (const struct ddp_backend **bep)
{
    const char *s = getenv ("DDP_BACKEND");
    int i;

    if (!s || !*s || strcmp (s, "auto") == 0) {
        *bep = backends[0];
#ifdef HAVE_NCCL
        char why[256]; /* NCCL hook: nccl when a GPU is visible */
        if (nccl_backend_probe (why, sizeof (why)) == 0)
            *bep = &ddpi_backend_nccl;
        else
            ddpi_debug ("auto: host backend: %s", why);
#endif
        return 0;
    }
    for (i = 0; backends[i]; i++)
        if (strcmp (s, backends[i]->name) == 0) {
            *bep = backends[i];
            return 0;
        }
    if (strcmp (s, "nccl") == 0)
        return ddpi_error (DDP_ENOTSUP, "DDP_BACKEND=nccl: this libddp has "
                           "no NCCL backend");
    return ddpi_error (DDP_EINVAL, "DDP_BACKEND='%s' is not one of auto, "
                       "host, nccl", s);
}

static void reset_identity (void)
{
    g.rank = g.lrank = g.node = 0;
    g.size = g.lsize = g.nnodes = 1;
    ddpi_log_set_identity (-1, 0);
}

/* Init failures are always logged: the program may not print the code. */
static int init_failed (int rc)
{
    if (!ddpi_last_error_logged ())
        ddpi_log ("error: %s", ddpi_last_error ());
    return rc;
}

int ddp_init (void)
{
    const struct bootstrap_info *in;
    char err[512];
    double t0 = ddpi_now (), t1, t2, t3;
    int rc;

    if (g.init)
        return 0;
    g.broken = 0;
    if ((rc = read_config (&g.cfg)) < 0 || (rc = pick_backend (&g.be)) < 0)
        return init_failed (rc);
    if ((rc = bootstrap_create (&g.boot, g.cfg.timeout_s, err,
                                sizeof (err))) < 0)
        return init_failed (ddpi_error (rc, "init: %s", err));
    in = bootstrap_info (g.boot);
    set_init_timeout (&g.cfg, in->size);
    bootstrap_set_timeout (g.boot, g.cfg.timeout_s, g.cfg.timeout_name);
    g.rank = in->rank;
    g.size = in->size;
    g.lrank = in->local_rank;
    g.lsize = in->local_size;
    g.node = in->node_rank;
    g.nnodes = in->num_nodes;
    ddpi_log_set_identity (g.rank, g.size);
    t1 = ddpi_now ();
    if ((rc = g.be->create (g.boot, &g.cfg, &g.ctx)) < 0)
        goto error;
    t2 = ddpi_now ();
    if ((rc = g.be->barrier (g.ctx)) < 0) {
        g.be->destroy (g.ctx);
        goto error;
    }
    t3 = ddpi_now ();
    g.init = true;
    set_coll_timeout (&g.cfg, g.boot);
    ddpi_debug ("init: libddp %s, bootstrap %s (job %s), rank %d/%d, local "
                "%d/%d, node %d/%d, backend %s, timeout %g s (init %g s)",
                PACKAGE_VERSION, in->method, in->job_id, g.rank, g.size,
                g.lrank, g.lsize, g.node, g.nnodes, g.be->name,
                g.cfg.timeout_s, g.cfg.init_timeout_s);
    ddpi_debug ("init: bootstrap %.3f ms, backend setup %.3f ms, first "
                "barrier %.3f ms, total %.3f ms", (t1 - t0) * 1e3,
                (t2 - t1) * 1e3, (t3 - t2) * 1e3, (t3 - t0) * 1e3);
    return 0;
error:
    g.ctx = NULL;
    bootstrap_destroy (g.boot);
    g.boot = NULL;
    g.be = NULL;
    reset_identity ();
    return init_failed (rc);
}

int ddp_finalize (void)
{
    if (!g.init)
        return DDP_ENOINIT;
    if (!g.broken)
        (void)g.be->barrier (g.ctx);
    g.be->destroy (g.ctx);
    bootstrap_destroy (g.boot);
    g.ctx = NULL;
    g.boot = NULL;
    g.be = NULL;
    g.init = false;
    g.broken = 0;
    reset_identity ();
    return 0;
}

int ddp_rank (void) { return g.rank; }
int ddp_world_size (void) { return g.size; }
int ddp_local_rank (void) { return g.lrank; }
int ddp_local_world_size (void) { return g.lsize; }
int ddp_node_rank (void) { return g.node; }
int ddp_num_nodes (void) { return g.nnodes; }
bool ddp_is_main (void) { return g.rank == 0; }
bool ddp_is_local_main (void) { return g.lrank == 0; }
bool ddp_is_distributed (void) { return g.init && g.size > 1; }

const char *ddp_backend_name (void)
{
    return g.init ? g.be->name : "none";
}

const char *ddp_strerror (int err)
{
    switch (err) {
    case DDP_OK: return "success";
    case DDP_EINVAL: return "invalid argument";
    case DDP_ENOINIT: return "libddp is not initialized (call ddp_init)";
    case DDP_ENOMEM: return "out of memory";
    case DDP_ENOLAUNCH: return "world size > 1 but no PMIx server "
                               "(launch with srun --ddp)";
    case DDP_EPMIX: return "a PMIx call failed";
    case DDP_ETRANSPORT: return "the host transport failed";
    case DDP_ETIMEDOUT: return "a peer did not arrive within DDP_TIMEOUT";
    case DDP_EPEER: return "a peer died or aborted";
    case DDP_EREMOTE: return "the operation failed on another rank";
    case DDP_EUSER: return "a user callback failed";
    case DDP_ENOTSUP: return "not supported";
    case DDP_ENCCL: return "an NCCL call failed";
    case DDP_ECUDA: return "a CUDA call failed";
    case DDP_EMISMATCH: return "ranks disagree";
    }
    return "unknown error";
}

int ddp_abort (int errcode, const char *msg)
{
    int rc;

    ddpi_error (DDP_EPEER, "ddp_abort (%d)%s%s", errcode, msg ? ": " : "",
                msg ? msg : "");
    if (g.init) {
        if (g.be->abort)
            g.be->abort (g.ctx);
        g.broken = DDP_EPEER;
        rc = bootstrap_abort (g.boot, errcode, msg);
        if (rc == 0 || rc == DDP_ENOTSUP) {
            fflush (NULL);
            _exit (errcode);
        }
        return rc;
    }
    fflush (NULL);
    _exit (errcode);
}

/* Checks shared by every collective; returns 0 to go on. */
static int check_common (const char *fn)
{
    if (!g.init)
        return ddpi_error (DDP_ENOINIT, "%s: called before ddp_init", fn);
    if (g.broken)
        return ddpi_error_quiet (g.broken, "%s: an earlier failure (%s) "
                                 "broke the job's collectives", fn,
                                 ddp_strerror (g.broken));
    return 0;
}

static int check_buf (const char *fn, const char *what, const void *p,
                      size_t count, ddp_dtype_t dtype, size_t mult)
{
    size_t es = ddp_dtype_size (dtype);

    if (es == 0)
        return ddpi_error (DDP_EINVAL, "%s: unknown dtype %d", fn, (int)dtype);
    if (count > SIZE_MAX / es / mult)
        return ddpi_error (DDP_EINVAL, "%s: count %zu is too large", fn, count);
    if (count > 0 && !p)
        return ddpi_error (DDP_EINVAL, "%s: %s is NULL with count %zu", fn,
                           what, count);
    return 0;
}

static int check_op (const char *fn, ddp_op_t op)
{
    if ((unsigned)op >= DDP_NUM_OPS)
        return ddpi_error (DDP_EINVAL, "%s: unknown op %d", fn, (int)op);
    return 0;
}

static int check_root (const char *fn, int root)
{
    if (root < 0 || root >= g.size)
        return ddpi_error (DDP_EINVAL, "%s: root %d is not a rank of 0..%d",
                           fn, root, g.size - 1);
    return 0;
}

/* After a backend call: a fault is sticky. */
static int done (int rc)
{
    if (rc == DDP_EPEER || rc == DDP_ETIMEDOUT || rc == DDP_ETRANSPORT)
        g.broken = rc;
    return rc;
}

int ddp_barrier (void)
{
    int rc;

    if ((rc = check_common ("ddp_barrier")) < 0)
        return rc;
    return done (g.be->barrier (g.ctx));
}

int ddp_bcast (void *buf, size_t count, ddp_dtype_t dtype, int root)
{
    static const char fn[] = "ddp_bcast";
    int rc;

    if ((rc = check_common (fn)) < 0
        || (rc = check_buf (fn, "buf", buf, count, dtype, 1)) < 0
        || (rc = check_root (fn, root)) < 0)
        return rc;
    if (count == 0)
        return 0;
    return done (g.be->bcast (g.ctx, buf, count, dtype, root));
}

int ddp_reduce (const void *sendbuf, void *recvbuf, size_t count,
                ddp_dtype_t dtype, ddp_op_t op, int root)
{
    static const char fn[] = "ddp_reduce";
    int rc;

    if ((rc = check_common (fn)) < 0
        || (rc = check_buf (fn, "sendbuf", sendbuf, count, dtype, 1)) < 0
        || (rc = check_op (fn, op)) < 0 || (rc = check_root (fn, root)) < 0
        || (g.rank == root
            && (rc = check_buf (fn, "recvbuf", recvbuf, count, dtype, 1)) < 0))
        return rc;
    if (count == 0)
        return 0;
    return done (g.be->reduce (g.ctx, sendbuf, g.rank == root ? recvbuf : NULL,
                               count, dtype, op, root));
}

int ddp_allreduce (const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype, ddp_op_t op)
{
    static const char fn[] = "ddp_allreduce";
    int rc;

    if ((rc = check_common (fn)) < 0
        || (rc = check_buf (fn, "sendbuf", sendbuf, count, dtype, 1)) < 0
        || (rc = check_buf (fn, "recvbuf", recvbuf, count, dtype, 1)) < 0
        || (rc = check_op (fn, op)) < 0)
        return rc;
    if (count == 0)
        return 0;
    return done (g.be->allreduce (g.ctx, sendbuf, recvbuf, count, dtype, op));
}

int ddp_gather (const void *sendbuf, void *recvbuf, size_t count,
                ddp_dtype_t dtype, int root)
{
    static const char fn[] = "ddp_gather";
    int rc;

    if ((rc = check_common (fn)) < 0
        || (rc = check_buf (fn, "sendbuf", sendbuf, count, dtype, 1)) < 0
        || (rc = check_root (fn, root)) < 0
        || (g.rank == root
            && (rc = check_buf (fn, "recvbuf", recvbuf, count, dtype,
                                (size_t)g.size)) < 0))
        return rc;
    if (count == 0)
        return 0;
    return done (g.be->gather (g.ctx, sendbuf, g.rank == root ? recvbuf : NULL,
                               count, dtype, root));
}

int ddp_allgather (const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype)
{
    static const char fn[] = "ddp_allgather";
    int rc;

    if ((rc = check_common (fn)) < 0
        || (rc = check_buf (fn, "sendbuf", sendbuf, count, dtype, 1)) < 0
        || (rc = check_buf (fn, "recvbuf", recvbuf, count, dtype,
                            (size_t)g.size)) < 0)
        return rc;
    if (count == 0)
        return 0;
    return done (g.be->allgather (g.ctx, sendbuf, recvbuf, count, dtype));
}
