/* split.c - the NCCL backend's split (backend.h), driven directly in one
 * process: a world of one from create() on a single bootstrap, and groups
 * split from it with a second single bootstrap as the group's.
 *
 * Needs CUDA and NCCL: on a GPU, or on the stand-in (t0402 preloads
 * tests/progs/nccl_mock.so, and nccl_mock_nosplit.so for an NCCL without
 * ncclCommSplit); else it skips.  Which path split takes follows from the
 * loaded NCCL (the run-time table): ncclCommSplit on the parent, or the
 * fallback, create() on the group's bootstrap.  Checked either way: the
 * group's context is a whole one (its own communicator and stream, the
 * parent's device, also where the group's own local rank would choose
 * another), its collectives run (reduce-scatter included), an
 * undefined colour makes none, destroying it leaves the parent working, a
 * group communicator that never forms is abandoned at the deadline
 * without harm to the parent.  With ncclCommSplit also: a split that
 * fails on the parent breaks the parent (its ranks may be left inside the
 * split), and a broken parent splits no more.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bootstrap.h"
#include "ddp.h"
#include "ddp_internal.h"
#include "nccl_backend.h"
#include "nccl_dl.h"
#include "tap.h"

static const struct ddp_backend *be = &ddpi_backend_nccl;

static struct bootstrap *single (void)
{
    struct bootstrap *b = NULL;
    char err[256];

    if (bootstrap_create (&b, 10.0, err, sizeof (err)) < 0) {
        diag ("bootstrap_create: %s", err);
        return NULL;
    }
    return b;
}

/* Does the loaded NCCL have ncclCommSplit? */
static bool nccl_splits (void)
{
#ifdef NCCL_DL_HAVE_SPLIT
    return nccl_dl.ncclCommSplit != NULL;
#else
    return false;
#endif
}

/* One collective of kind on ctx with host buffers of doubles. */
static int coll (void *ctx, enum ddp_coll_kind kind, const double *s,
                 double *r, size_t n)
{
    struct ddp_coll k = {.kind = kind, .sendbuf = s, .recvbuf = r,
                         .count = n, .dtype = DDP_FLOAT64, .op = DDP_SUM};

    return be->coll (ctx, &k);
}

/* The group's context works: its own communicator and stream, the
 * parent's device, a barrier, an allreduce and a reduce-scatter. */
static void check_group (void *parent, void *g)
{
    double s[4] = {1, 2, 3, 4}, r[4] = {0};

    ok (be->gpu->comm (g) != NULL && be->gpu->comm (g) != be->gpu->comm (parent),
        "the group has its own communicator");
    ok (be->gpu->stream (g) != NULL, "and a stream");
    is_int (be->gpu->device (g), be->gpu->device (parent),
            "on the parent's device");
    is_int (be->barrier (g), 0, "barrier on the group");
    is_int (coll (g, DDP_COLL_ALLREDUCE, s, r, 4), 0, "allreduce on the group");
    ok (r[0] == 1 && r[3] == 4, "right values (%g, %g)", r[0], r[3]);
    memset (r, 0, sizeof (r));
    is_int (coll (g, DDP_COLL_REDUCE_SCATTER, s, r, 4), 0,
            "reduce-scatter on the group");
    ok (r[0] == 1 && r[3] == 4, "right values (%g, %g)", r[0], r[3]);
    is_int (coll (g, DDP_COLL_REDUCE_SCATTER, s, s, 4), 0,
            "reduce-scatter in place on the group");
}

static void test_split (void *parent, struct bootstrap *sub,
                        struct ddp_config *cfg)
{
    void *g = NULL, *none = (void *)cfg;
    double v = 2, sum = 0;

    is_int (be->split (parent, 0, 0, sub, cfg, &g), 0, "split colour 0");
    if (!g) {
        diag ("%s", ddpi_last_error ());
        return;
    }
    check_group (parent, g);
    be->destroy (g);
    is_int (coll (parent, DDP_COLL_ALLREDUCE, &v, &sum, 1), 0,
            "the parent works after the group is destroyed");
    ok (sum == 2, "right value (%g)", sum);

    g = NULL;
    is_int (be->split (parent, 7, -3, sub, cfg, &g), 0,
            "split again, colour 7 and a negative key");
    ok (g != NULL, "a group again");
    if (g)
        be->destroy (g);

    none = (void *)cfg;
    is_int (be->split (parent, DDP_UNDEFINED, 0, NULL, cfg, &none), 0,
            "split with DDP_UNDEFINED takes part");
    ok (none == (void *)cfg, "and leaves *ctxp alone");
    is_int (be->split (parent, 1, 0, NULL, cfg, &g), DDP_EINVAL,
            "a colour without the group's bootstrap: DDP_EINVAL");
    is_int (be->barrier (parent), 0, "the parent works");
}

/* The group's communicator never forms: DDP_ETIMEDOUT at the deadline,
 * nothing made, the parent unharmed. */
static void test_group_hangs (void *parent, struct bootstrap *sub,
                              struct ddp_config *cfg)
{
    void *g = NULL;
    double t0 = ddpi_now ();
    int rc;

    setenv ("MOCK_NCCL_INIT", "hang", 1);
    cfg->timeout_s = 1.0;
    rc = be->split (parent, 0, 0, sub, cfg, &g);
    unsetenv ("MOCK_NCCL_INIT");
    cfg->timeout_s = 10.0;
    is_int (rc, DDP_ETIMEDOUT, "a group that never forms: DDP_ETIMEDOUT");
    ok (ddpi_now () - t0 < 5.0, "at the deadline (%.1f s)", ddpi_now () - t0);
    diag ("%s", ddpi_last_error ());
    ok (g == NULL, "no group");
    is_int (be->barrier (parent), 0, "the parent works");
}

/* With ncclCommSplit: a split that fails breaks the parent; a broken
 * parent answers with its error. */
static void test_split_fails (void *parent, struct bootstrap *sub,
                              struct ddp_config *cfg)
{
    void *g = NULL;
    int rc;

    setenv ("MOCK_NCCL_INIT", "fail", 1);
    rc = be->split (parent, 0, 0, sub, cfg, &g);
    unsetenv ("MOCK_NCCL_INIT");
    is_int (rc, DDP_ENCCL, "ncclCommSplit fails: DDP_ENCCL");
    ok (strstr (ddpi_last_error (), "ncclCommSplit") != NULL,
        "named: %s", ddpi_last_error ());
    ok (g == NULL, "no group");
    is_int (be->barrier (parent), DDP_ENCCL, "the parent is broken");
    is_int (be->split (parent, 0, 0, sub, cfg, &g), DDP_ENCCL,
            "and splits no more");
    is_int (be->split (parent, DDP_UNDEFINED, 0, NULL, cfg, &g), DDP_ENCCL,
            "not even with DDP_UNDEFINED");
}

int main (void)
{
    struct ddp_config cfg = {.timeout_s = 10.0, .debug = false};
    struct bootstrap *world, *sub;
    char why[256] = "";
    void *parent = NULL;
    bool mock = getenv ("LD_PRELOAD") && strstr (getenv ("LD_PRELOAD"),
                                                  "nccl_mock");

    setenv ("DDP_BOOTSTRAP", "single", 1);
    unsetenv ("MOCK_NCCL_INIT");
    if (nccl_backend_probe (why, sizeof (why)) < 0)
        skip_all (why);
    plan (NO_PLAN);
    ok (be->split != NULL, "the backend has split");
    diag ("the loaded NCCL %s ncclCommSplit", nccl_splits () ? "has"
                                                             : "lacks");
    if (!(world = single ()) || !(sub = single ()))
        bail_out ("no single bootstrap");
    /* On the stand-in the world takes the second of two GPUs: a group must
     * take its parent's, not choose again from its own local rank. */
    if (mock) {
        setenv ("MOCK_CUDA_DEVICES", "2", 1);
        setenv ("DDP_DEVICE", "1", 1);
    }
    if (be->create (world, &cfg, &parent) < 0)
        bail_out (ddpi_last_error ());
    unsetenv ("DDP_DEVICE");
    if (mock)
        is_int (be->gpu->device (parent), 1, "the world is on GPU 1");
    test_split (parent, sub, &cfg);
    if (mock) { /* the stand-in's controls */
        test_group_hangs (parent, sub, &cfg);
        if (nccl_splits ())
            test_split_fails (parent, sub, &cfg);
    }
    be->destroy (parent);
    bootstrap_destroy (sub);
    bootstrap_destroy (world);
    return done_testing ();
}
