/* nccl_create.c - the NCCL backend's setup and public NCCL section in one
 * process, driven through the internal interfaces (backend.h, bootstrap.h).
 *
 * Without a GPU (CI) it checks the failure paths: the probe refuses with a
 * reason, create() fails with DDP_ECUDA after its one exchange and leaves
 * nothing behind, a bad DDP_NCCL_RANKS_PER_ROOT is refused, the accessors
 * answer NULL / DDP_ENOINIT before init.  With a GPU it also creates and
 * destroys a communicator of one rank, twice (keys never reused).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bootstrap.h"
#include "ddp.h"
#include "ddp_internal.h"
#include "nccl_backend.h"
#include "tap.h"

static struct bootstrap *single (void)
{
    struct bootstrap *b = NULL;
    char err[256];

    setenv ("DDP_BOOTSTRAP", "single", 1);
    if (bootstrap_create (&b, 10.0, err, sizeof (err)) < 0) {
        diag ("bootstrap_create: %s", err);
        return NULL;
    }
    return b;
}

static void test_before_init (void)
{
    double x = 1, y = 0;
    size_t used = 1, total = 1;

    ok (ddp_nccl_comm () == NULL, "no communicator before init");
    ok (ddp_cuda_stream () == NULL, "no stream before init");
    is_int (ddp_cuda_device (), -1, "no device before init");
    is_int (ddp_allreduce_stream (&x, &y, 1, DDP_FLOAT64, DDP_SUM, NULL),
            DDP_ENOINIT, "allreduce_stream before init: DDP_ENOINIT");
    is_int (ddp_bcast_stream (&x, 1, DDP_FLOAT64, 0, NULL), DDP_ENOINIT,
            "bcast_stream before init: DDP_ENOINIT");
    is_int (ddp_stream_synchronize (NULL), DDP_ENOINIT,
            "stream_synchronize before init: DDP_ENOINIT");
    (void)used, (void)total;
}

static void test_no_gpu (const char *why)
{
    struct ddp_config cfg = {.timeout_s = 10.0, .debug = false};
    struct bootstrap *b;
    void *ctx = (void *)&cfg;
    size_t used = 7, total = 7;
    int rc;

    ok (strlen (why) > 0, "the probe says why: %s", why);
    is_int (ddp_gpu_mem_info (&used, &total), DDP_ENOTSUP,
            "gpu_mem_info without a GPU: DDP_ENOTSUP");
    ok (used == 7 && total == 7, "and leaves its outputs alone");

    if (!(b = single ())) {
        ok (0, "single bootstrap");
        return;
    }
    rc = ddpi_backend_nccl.create (b, &cfg, &ctx);
    is_int (rc, DDP_ECUDA, "create without a GPU: DDP_ECUDA");
    ok (ctx == (void *)&cfg, "and *ctxp is untouched");
    ok (strstr (ddpi_last_error (), "rank 0") != NULL
            && strstr (ddpi_last_error (), "cannot use NCCL") != NULL,
        "the error names the rank: %s", ddpi_last_error ());
    ok (ddp_nccl_comm () == NULL, "no communicator after the failure");

    setenv ("DDP_NCCL_RANKS_PER_ROOT", "0", 1);
    rc = ddpi_backend_nccl.create (b, &cfg, &ctx);
    is_int (rc, DDP_EINVAL, "DDP_NCCL_RANKS_PER_ROOT=0: DDP_EINVAL");
    ok (strstr (ddpi_last_error (), "DDP_NCCL_RANKS_PER_ROOT='0'") != NULL,
        "named in the error: %s", ddpi_last_error ());
    setenv ("DDP_NCCL_RANKS_PER_ROOT", "12x", 1);
    is_int (ddpi_backend_nccl.create (b, &cfg, &ctx), DDP_EINVAL,
            "DDP_NCCL_RANKS_PER_ROOT=12x: DDP_EINVAL");
    unsetenv ("DDP_NCCL_RANKS_PER_ROOT");
    bootstrap_destroy (b);
}

static void test_gpu (void)
{
    struct ddp_config cfg = {.timeout_s = 60.0, .debug = false};
    struct bootstrap *b;
    void *ctx = NULL;

    if (!(b = single ())) {
        ok (0, "single bootstrap");
        return;
    }
    for (int i = 0; i < 2; i++) {
        int rc = ddpi_backend_nccl.create (b, &cfg, &ctx);
        is_int (rc, 0, "create #%d on a GPU", i + 1);
        if (rc < 0) {
            diag ("%s", ddpi_last_error ());
            break;
        }
        ok (ddpi_backend_nccl.gpu->comm (ctx) != NULL
                && ddpi_backend_nccl.gpu->stream (ctx) != NULL,
            "communicator and stream are made");
        is_int (ddpi_backend_nccl.barrier (ctx), 0, "barrier");
        ddpi_backend_nccl.destroy (ctx);
        ok (ddp_nccl_comm () == NULL, "the public accessor never saw them");
    }
    bootstrap_destroy (b);
}

int main (void)
{
    char why[256] = "";
    int probe;

    plan (NO_PLAN);
    unsetenv ("DDP_NCCL_RANKS_PER_ROOT");
    test_before_init ();
    probe = nccl_backend_probe (why, sizeof (why));
    diag ("probe: %d %s", probe, why);
    if (probe < 0) {
        is_int (probe, DDP_ECUDA, "probe without a GPU: DDP_ECUDA");
        test_no_gpu (why);
    }
    else {
        is_int (probe, 0, "probe with a GPU: 0");
        test_gpu ();
    }
    return done_testing ();
}
