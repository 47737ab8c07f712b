/* ranks.c - what the host backend's multi-rank tests share (ranks.h):
 * a rank's set-up and teardown through the backend's interface, the
 * local launcher's runs, and one checked reduce-scatter. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "backend.h"
#include "bootstrap.h"
#include "ddp_internal.h"
#include "host_core.h"
#include "localjob.h"
#include "reduce.h"

#include "ranks.h"

const struct ddp_backend *be = &ddpi_backend_host;

/* A rank's set-up without the first barrier: bootstrap (local method)
 * and the backend.  Returns the context or NULL. */
void *create (struct bootstrap **bp, struct ddp_config *cfg,
                     double timeout)
{
    char why[512];
    void *ctx = NULL;
    int rc;

    cfg->timeout_s = timeout;
    cfg->debug = false;
    if ((rc = bootstrap_create (bp, timeout, why, sizeof (why))) < 0) {
        fprintf (stderr, "rank %s: bootstrap: %s\n", getenv ("RANK"), why);
        return NULL;
    }
    ddpi_log_set_identity (bootstrap_info (*bp)->rank,
                           bootstrap_info (*bp)->size);
    if ((rc = be->create (*bp, cfg, &ctx)) < 0) {
        fprintf (stderr, "rank %s: create: %d %s\n", getenv ("RANK"), rc,
                 ddpi_last_error ());
        bootstrap_destroy (*bp);
        return NULL;
    }
    return ctx;
}

/* A rank's set-up: create(), then the first barrier, as ddp_init() does.
 * Returns the context or NULL. */
void *setup (struct bootstrap **bp, struct ddp_config *cfg,
                    double timeout)
{
    void *ctx = create (bp, cfg, timeout);
    int rc;

    if (ctx && (rc = be->barrier (ctx)) < 0) {
        fprintf (stderr, "rank %s: first barrier: %d %s\n", getenv ("RANK"),
                 rc, ddpi_last_error ());
        be->destroy (ctx);
        bootstrap_destroy (*bp);
        return NULL;
    }
    return ctx;
}

void teardown (void *ctx, struct bootstrap *b, bool barrier)
{
    if (barrier)
        RANK_CHECK (be->barrier (ctx) == 0, "final barrier: %s",
                    ddpi_last_error ());
    be->destroy (ctx);
    bootstrap_destroy (b);
}

/* ---- reduce-scatter ---------------------------------------------------- */

/* Rank r's element i of dtype for a reduce-scatter: pseudo-random, floats
 * in [-2, 2) with full significands (a sum in another order differs in
 * the last bits), integers of every bit (they wrap alike in any order). */
static void rs_input (void *buf, size_t n, ddp_dtype_t dt, int r)
{
    size_t es = ddp_dtype_size (dt);
    uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(r + 1);

    for (size_t i = 0; i < n; i++) {
        char *p = (char *)buf + i * es;
        float f;
        double d;
        uint16_t u16;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d = (double)(x >> 11) / (double)(1ULL << 53) * 4.0 - 2.0;
        f = (float)d;
        switch (dt) {
        case DDP_FLOAT16:
            u16 = ddpi_float_to_half (f);
            memcpy (p, &u16, 2);
            break;
        case DDP_BFLOAT16:
            u16 = ddpi_float_to_bf16 (f);
            memcpy (p, &u16, 2);
            break;
        case DDP_FLOAT32:
            memcpy (p, &f, 4);
            break;
        case DDP_FLOAT64:
            memcpy (p, &d, 8);
            break;
        default:
            memcpy (p, &x, es);
            break;
        }
    }
}

static const char *const rs_dtypes[DDP_NUM_DTYPES] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
    "bfloat16", "float32", "float64",
};
static const char *const rs_ops[DDP_NUM_OPS] = {
    "sum", "prod", "min", "max", "avg",
};

/* A reduce-scatter of count elements a rank under dt and op, out of place
 * and in place, against an all-reduce of the same data: this rank's block
 * bitwise (the same reduction order), the send buffer left alone out of
 * place.  Counts how many calls it checked in *calls. */
void rs_one (void *ctx, int me, size_t count, ddp_dtype_t dt,
                    ddp_op_t op, int *calls)
{
    size_t es = ddp_dtype_size (dt), all = count * SIZE * es, mine = count * es;
    char *send = malloc (all), *orig = malloc (all), *ar = malloc (all);
    char *in = malloc (all), *recv = malloc (mine ? mine : 1);
    const char *what = "";
    int rc;

    RANK_CHECK (send && orig && ar && in && recv, "out of memory");
    if (!send || !orig || !ar || !in || !recv)
        goto out;
    rs_input (send, count * SIZE, dt, me);
    memcpy (orig, send, all);
    memcpy (in, send, all);
    memset (recv, 0xa5, mine);
    if ((rc = be->allreduce (ctx, send, ar, count * SIZE, dt, op)) < 0)
        what = "allreduce";
    else if ((rc = be->reduce_scatter (ctx, send, recv, count, dt, op)) < 0)
        what = "reduce_scatter";
    else if ((rc = be->reduce_scatter (ctx, in, in + (size_t)me * mine,
                                       count, dt, op)) < 0)
        what = "reduce_scatter in place";
    RANK_CHECK (rc == 0, "%s of %zu %s %s: %s", what, count, rs_dtypes[dt],
                rs_ops[op], ddpi_last_error ());
    if (rc < 0)
        goto out;
    *calls += 2;
    RANK_CHECK (memcmp (recv, ar + (size_t)me * mine, mine) == 0,
                "reduce_scatter of %zu %s %s: not the all-reduce's block",
                count, rs_dtypes[dt], rs_ops[op]);
    RANK_CHECK (memcmp (in + (size_t)me * mine, ar + (size_t)me * mine, mine)
                == 0, "reduce_scatter in place of %zu %s %s: not the "
                "all-reduce's block", count, rs_dtypes[dt], rs_ops[op]);
    RANK_CHECK (memcmp (send, orig, all) == 0, "reduce_scatter of %zu %s %s "
                "changed its send buffer", count, rs_dtypes[dt], rs_ops[op]);
out:
    free (send);
    free (orig);
    free (ar);
    free (in);
    free (recv);
}

char err[512];

/* Run fn on SIZE ranks over nodes simulated nodes, rank r on node_of[r]
 * (NULL: in blocks). */
int run_layout (int nodes, const int *node_of, ddpi_ljob_fn fn, void *arg,
                int *st)
{
    struct ddpi_ljob_opts o = { SIZE, nodes, node_of, 120, "collectives.t" };
    struct ddpi_ljob *j = ddpi_ljob_start (&o, fn, arg, err, sizeof (err));

    if (!j) {
        diag ("start: %s", err);
        return -1;
    }
    return ddpi_ljob_wait (j, st, err, sizeof (err));
}

/* Run fn on SIZE ranks on nodes simulated nodes, in blocks. */
int run_on (int nodes, ddpi_ljob_fn fn, void *arg, int *st)
{
    return run_layout (nodes, NULL, fn, arg, st);
}

int run (ddpi_ljob_fn fn, void *arg, int *st)
{
    return run_on (NODES, fn, arg, st);
}
