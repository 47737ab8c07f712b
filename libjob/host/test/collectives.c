/* collectives.c - the host backend on several ranks without Slurm: ranks
 * started on this machine by the local launcher (bootstrap/localjob.h),
 * grouped into simulated nodes, drive the backend through its interface
 * (backend.h: ddpi_backend_host's create, collectives, destroy) over the
 * local bootstrap method.  Shared memory within a node, TCP between the
 * nodes' leaders, as on a cluster.
 *
 * Every collective, several dtypes and ops, sizes that take one step and
 * many (a small DDP_SHM_SLOT), sends in pieces and reads ahead cut
 * anywhere, roots on either node; reduce-scatter for every dtype and op
 * against the all-reduce's block, bitwise, on 1 to 4 nodes, uneven and
 * interleaved; then the faults: a
 * rank killed in a barrier loop, one killed from outside in a large
 * all-reduce, one that never comes (timeout); on one node, the ring of
 * small bcasts and gathers (node.c), its run-ahead, a rank killed or
 * absent while a root runs ahead.  Each rank checks its own
 * results and errors and exits 0 when all is as expected; this test
 * asserts every rank's exit. */
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

#define SIZE 4
#define NODES 2


static const struct ddp_backend *be = &ddpi_backend_host;

/* A rank's set-up without the first barrier: bootstrap (local method)
 * and the backend.  Returns the context or NULL. */
static void *create (struct bootstrap **bp, struct ddp_config *cfg,
                     double timeout)
{
    char err[512];
    void *ctx = NULL;
    int rc;

    cfg->timeout_s = timeout;
    cfg->debug = false;
    if ((rc = bootstrap_create (bp, timeout, err, sizeof (err))) < 0) {
        fprintf (stderr, "rank %s: bootstrap: %s\n", getenv ("RANK"), err);
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
static void *setup (struct bootstrap **bp, struct ddp_config *cfg,
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

static void teardown (void *ctx, struct bootstrap *b, bool barrier)
{
    if (barrier)
        RANK_CHECK (be->barrier (ctx) == 0, "final barrier: %s",
                    ddpi_last_error ());
    be->destroy (ctx);
    bootstrap_destroy (b);
}

/* Rank r's input at index i: small integers, exact in every dtype. */
static int32_t input (int r, size_t i)
{
    return (int32_t)((r * 5 + (int)(i % 97) * 3) % 13) - 6;
}

/* What an all-reduce of every rank's input (SUM, MAX or AVG) gives at i. */
static double want_of (ddp_op_t op, size_t i)
{
    double v = op == DDP_MAX ? input (0, i) : 0;

    for (int r = 0; r < SIZE; r++)
        v = op == DDP_MAX ? (input (r, i) > v ? input (r, i) : v)
                          : v + input (r, i);
    return op == DDP_AVG ? v / SIZE : v;
}

/* All-reduce src (n elements of dtype: int32 or float64) into dst under
 * op, and check every element. */
static void allreduce_one (void *ctx, const void *src, void *dst, size_t n,
                           ddp_dtype_t dtype, ddp_op_t op, const char *what)
{
    RANK_CHECK (be->allreduce (ctx, src, dst, n, dtype, op) == 0,
                "allreduce %s: %s", what, ddpi_last_error ());
    for (size_t i = 0; i < n; i++) {
        double got = dtype == DDP_INT32 ? ((int32_t *)dst)[i]
                                        : ((double *)dst)[i];
        if (got != want_of (op, i)) {
            RANK_CHECK (0, "allreduce %s of %zu at %zu: %g, not %g", what, n,
                        i, got, want_of (op, i));
            break;
        }
    }
}

static void check_allreduce (void *ctx, int me, size_t n)
{
    int32_t *a = calloc (n, sizeof (int32_t)), *s = calloc (n, 4);
    double *d = calloc (n, sizeof (double)), *x = calloc (n, 8);
    size_t i;

    for (i = 0; a && d && i < n; i++) {
        a[i] = input (me, i);
        d[i] = input (me, i);
    }
    RANK_CHECK (a && s && d && x, "out of memory");
    if (a && s && d && x) {
        allreduce_one (ctx, a, s, n, DDP_INT32, DDP_SUM, "sum");
        allreduce_one (ctx, a, s, n, DDP_INT32, DDP_MAX, "max");
        allreduce_one (ctx, d, x, n, DDP_FLOAT64, DDP_AVG, "avg");
    }
    free (a);
    free (s);
    free (d);
    free (x);
}

static void check_rooted (void *ctx, int me, size_t n)
{
    int32_t *a = calloc (n, 4), *g = calloc (n * SIZE, 4), *s = calloc (n, 4);
    size_t i;

    RANK_CHECK (a && g && s, "out of memory");
    if (!a || !g || !s)
        goto out;
    for (i = 0; i < n; i++)
        a[i] = me == 3 ? (int32_t)(i * 7 + 1) : -1;
    RANK_CHECK (be->bcast (ctx, a, n, DDP_INT32, 3) == 0, "bcast: %s",
                ddpi_last_error ());
    for (i = 0; i < n; i++)
        if (a[i] != (int32_t)(i * 7 + 1)) {
            RANK_CHECK (0, "bcast from 3 at %zu: %d", i, a[i]);
            break;
        }
    for (i = 0; i < n; i++)
        a[i] = input (me, i);
    RANK_CHECK (be->reduce (ctx, a, me == 1 ? s : NULL, n, DDP_INT32,
                            DDP_MIN, 1) == 0,
                "reduce: %s", ddpi_last_error ());
    for (i = 0; me == 1 && i < n; i++) {
        int32_t want = input (0, i);
        for (int r = 1; r < SIZE; r++)
            want = input (r, i) < want ? input (r, i) : want;
        if (s[i] != want) {
            RANK_CHECK (0, "reduce min to 1 at %zu", i);
            break;
        }
    }
    RANK_CHECK (be->gather (ctx, a, me == 2 ? g : NULL, n, DDP_INT32, 2) == 0,
                "gather: %s", ddpi_last_error ());
    for (i = 0; me == 2 && i < n * SIZE; i++)
        if (g[i] != input ((int)(i / n), i % n)) {
            RANK_CHECK (0, "gather to 2 at %zu", i);
            break;
        }
    memset (g, 0, n * SIZE * 4);
    RANK_CHECK (be->allgather (ctx, a, g, n, DDP_INT32) == 0, "allgather: %s",
                ddpi_last_error ());
    for (i = 0; i < n * SIZE; i++)
        if (g[i] != input ((int)(i / n), i % n)) {
            RANK_CHECK (0, "allgather at %zu", i);
            break;
        }
out:
    free (a);
    free (g);
    free (s);
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
static void rs_one (void *ctx, int me, size_t count, ddp_dtype_t dt,
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

/* Every dtype and op at every count of arg (a 0-ended list): prints how
 * many reduce-scatters rank 0 checked. */
static int rank_rs (int rank, void *arg)
{
    const size_t *counts = arg;
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, 30.0);
    int calls = 0;

    if (!ctx)
        return 2;
    for (size_t k = 0; counts[k] && !tap_rank_fails; k++)
        for (int dt = 0; dt < DDP_NUM_DTYPES; dt++)
            for (int op = 0; op < DDP_NUM_OPS; op++)
                rs_one (ctx, rank, counts[k], (ddp_dtype_t)dt, (ddp_op_t)op,
                        &calls);
    if (rank == 0)
        fprintf (stderr, "rank 0: %d reduce-scatters checked\n", calls);
    teardown (ctx, b, true);
    return tap_rank_fails ? 1 : 0;
}

static int rank_collectives (int rank, void *arg)
{
    static const size_t sizes[] = { 1, 1000, 70000 };
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, 30.0);

    (void)arg;
    if (!ctx)
        return 2;
    for (size_t k = 0; k < sizeof (sizes) / sizeof (sizes[0]); k++) {
        int calls = 0;
        check_allreduce (ctx, rank, sizes[k]);
        check_rooted (ctx, rank, sizes[k]);
        rs_one (ctx, rank, sizes[k], DDP_FLOAT32, DDP_SUM, &calls);
        rs_one (ctx, rank, sizes[k], DDP_BFLOAT16, DDP_AVG, &calls);
    }
    RANK_CHECK (be->barrier (ctx) == 0, "barrier: %s", ddpi_last_error ());
    teardown (ctx, b, true);
    return tap_rank_fails ? 1 : 0;
}

/* What rank r sends at index i of round it (rank_ring's gathers). */
static int32_t ring_input (int r, int it, size_t i)
{
    return (int32_t)(r * 100000 + it * 100 + (int)(i % 100));
}

/* Elements of round it of rank_ring: 1 to 4 (4 to 16 bytes: entries that
 * share cache lines) in rounds 100-199, else 1 to 128 (4 to 512 bytes,
 * changing every round: entries cross lines and the rings' ends). */
static size_t ring_count (int it)
{
    return it / 100 == 1 ? 1 + (size_t)(it % 4) : 1 + (size_t)(it * 37 % 128);
}

/* The rings (one node, bcasts and gathers of at most HOST_RING_BYTES):
 * many calls in a row, sizes changing, ranks held back at random; every
 * result checked.  In rounds 0-99 and 200-299 the roots rotate and a
 * reduction and an allgather (steps that wait for everyone) come now and
 * then; in the others rank 0 is the bcast's root and rank 1 the gather's,
 * so rank 0 waits for nobody but the rings and runs ahead until they hold
 * it (without that hold its entries would be overwritten unread: rounds
 * 300-399 go round a ring every 30 or so steps). */
static int rank_ring (int rank, void *arg)
{
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, 30.0);
    int32_t a[128], g[128 * SIZE], sum;
    unsigned seed = 12345u + (unsigned)rank;

    (void)arg;
    if (!ctx)
        return 2;
    for (int it = 0; it < 400 && !tap_rank_fails; it++) {
        size_t n = ring_count (it);
        bool fixed = it / 100 % 2 == 1;
        int root = fixed ? 0 : it % SIZE;

        if (rand_r (&seed) % (fixed && rank != 0 ? 4 : 16) == 0)
            usleep (200 + rand_r (&seed) % 800);
        for (size_t i = 0; i < n; i++)
            a[i] = rank == root ? (int32_t)(it * 1000 + (int)i) : -1;
        RANK_CHECK (be->bcast (ctx, a, n, DDP_INT32, root) == 0,
                    "bcast %d: %s", it, ddpi_last_error ());
        for (size_t i = 0; i < n; i++)
            if (a[i] != (int32_t)(it * 1000 + (int)i)) {
                RANK_CHECK (0, "bcast %d from %d at %zu: %d", it, root, i,
                            a[i]);
                break;
            }
        for (size_t i = 0; i < n; i++)
            a[i] = ring_input (rank, it, i);
        root = fixed ? 1 : (it + 1) % SIZE;
        RANK_CHECK (be->gather (ctx, a, rank == root ? g : NULL, n,
                                DDP_INT32, root) == 0,
                    "gather %d: %s", it, ddpi_last_error ());
        for (size_t i = 0; rank == root && i < n * SIZE; i++)
            if (g[i] != ring_input ((int)(i / n), it, i % n)) {
                RANK_CHECK (0, "gather %d to %d at %zu: %d", it, root, i,
                            g[i]);
                break;
            }
        if (!fixed && it % 13 == 0) {
            sum = rank;
            RANK_CHECK (be->allreduce (ctx, &sum, &sum, 1, DDP_INT32,
                                       DDP_SUM) == 0
                        && sum == SIZE * (SIZE - 1) / 2,
                        "allreduce %d: %d", it, sum);
        }
        if (!fixed && it % 7 == 0) {
            RANK_CHECK (be->allgather (ctx, a, g, n, DDP_INT32) == 0,
                        "allgather %d: %s", it, ddpi_last_error ());
            for (size_t i = 0; i < n * SIZE; i++)
                if (g[i] != ring_input ((int)(i / n), it, i % n)) {
                    RANK_CHECK (0, "allgather %d at %zu", it, i);
                    break;
                }
        }
    }
    teardown (ctx, b, true);
    return tap_rank_fails ? 1 : 0;
}

/* ---- faults ------------------------------------------------------------ */

struct fault {
    int victim;
    const char *how;    /* "die": raise SIGKILL after 50 barriers; "absent":
                           sleep before barrier 50; "wait": loop on large
                           all-reduces until killed from outside;
                           "gather": raise SIGKILL after 50 allgathers of
                           256 KiB a rank (one node: single copy);
                           "reduce": raise SIGKILL after 50 all-reduces
                           of 1 MiB (one node: single copy);
                           "ring": raise SIGKILL after 50 bcasts of 8
                           bytes from rank 0 (one node: the ring, the
                           root runs ahead); "ring-absent": sleep before
                           the 50th of them */
    int code;           /* what the others must see */
    double timeout;
};

/* The others: loop until a call fails; it must fail with the expected
 * code, naming the victim, within the bound. */
static int rank_fault (int rank, void *arg)
{
    const struct fault *f = arg;
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, f->timeout);
    size_t n = 1u << 18;
    float *a = calloc (n, sizeof (float)), *g = calloc (n, sizeof (float));
    char name[32];
    double t0 = 0, took;
    int i, rc = 0;

    if (!ctx || !a || !g)
        return 2;
    for (i = 0; i < 100000 && rc == 0; i++) {
        if (i == 50 && rank == f->victim && strcmp (f->how, "die") == 0)
            raise (SIGKILL);
        if (i == 50 && rank == f->victim
            && (strcmp (f->how, "absent") == 0
                || strcmp (f->how, "ring-absent") == 0)) {
            sleep ((unsigned)(3 * f->timeout + 2));
            free (a);
            free (g);
            _exit (0);
        }
        if (i == 50)
            t0 = ddpi_now ();
        if (i == 50 && rank == f->victim
            && (strcmp (f->how, "gather") == 0
                || strcmp (f->how, "reduce") == 0
                || strcmp (f->how, "ring") == 0))
            raise (SIGKILL);
        if (strcmp (f->how, "wait") == 0 || strcmp (f->how, "reduce") == 0)
            rc = be->allreduce (ctx, a, a, n, DDP_FLOAT32, DDP_SUM);
        else if (strcmp (f->how, "gather") == 0)
            rc = be->allgather (ctx, a, g, n / SIZE, DDP_FLOAT32);
        else if (strncmp (f->how, "ring", 4) == 0)
            rc = be->bcast (ctx, a, 2, DDP_FLOAT32, 0);
        else
            rc = be->barrier (ctx);
    }
    took = t0 ? ddpi_now () - t0 : 0;
    snprintf (name, sizeof (name), "rank %d", f->victim);
    RANK_CHECK (rc == f->code, "failed with %d, not %d: %s", rc, f->code,
                ddpi_last_error ());
    RANK_CHECK (strstr (ddpi_last_error (), name) != NULL,
                "the error does not name %s: %s", name, ddpi_last_error ());
    RANK_CHECK (took < f->timeout + 20, "took %.1f s", took);
    fprintf (stderr, "rank %d: %d after %.2f s: %s\n", rank, rc, took,
             ddpi_last_error ());
    teardown (ctx, b, false);
    free (a);
    free (g);
    return tap_rank_fails ? 1 : 0;
}

/* A bad tuning variable fails the set-up, saying what is wrong with it
 * (arg: what the error must contain, e.g. "DDP_CMA='yes'"). */
static int rank_bad_var (int rank, void *arg)
{
    const char *want = arg;
    struct bootstrap *b = NULL;
    struct ddp_config cfg = { .timeout_s = 30.0 };
    char e[512];
    void *ctx = NULL;
    int rc;

    (void)rank;
    if (bootstrap_create (&b, 30.0, e, sizeof (e)) < 0)
        return 2;
    rc = be->create (b, &cfg, &ctx);
    RANK_CHECK (rc == DDP_EINVAL, "create gave %d, not DDP_EINVAL", rc);
    RANK_CHECK (strstr (ddpi_last_error (), want) != NULL,
                "the error does not name %s: %s", want, ddpi_last_error ());
    if (rc == 0)
        be->destroy (ctx);
    bootstrap_destroy (b);
    return tap_rank_fails ? 1 : 0;
}

/* A rank passing another count to a call than the others, at the 50th
 * of a loop of them: on the same path (the ring's tag, or the step tag of
 * the banks, single copy and the phases across nodes, node.c) or on
 * different ones (the counts fall in different paths' ranges), on one
 * node or across two (then also the frames' sizes, fault.c). */
struct mismatch {
    const char *how;    /* "bcast": from rank 0; "gather", "reduce": to
                           rank 0; "allreduce"; "reduce_scatter" (n a
                           rank's block) */
    int nodes;          /* simulated nodes */
    size_t n, vn;       /* floats the ranks pass (a rank's, to a gather),
                           and the victim at the 50th call */
    int victim;
    /* What errors may say, alternatives apart by '|': the pair the
     * record names ("ranks 0,2"; where several ranks see it, each claims
     * with itself, and the first claim stands), and what a rank that saw
     * it says (the call each made, as the flags, a frame or a tag tell;
     * its node-mates may say the same, "noticed by" another rank). */
    const char *pair;
    const char *says;
    /* A rank that sleeps 0.2 s before the 49th call (0: none; never the
     * root), so that the others see the mismatch while it is still in
     * the 49th: that call must succeed there (it completed everywhere),
     * a later one fail. */
    int late;
};

/* The SO_SNDBUF of this process's connected TCP sockets (its links: the
 * bootstrap's are AF_UNIX) must be *arg when it is > 0, else not 2 x
 * 256 KiB (mesh.c's loopback choice; Linux reports twice the value set);
 * every rank of node 0's lane 0 (rank 0) must have links. */
static int rank_sndbuf (int rank, void *arg)
{
    int want = *(const int *)arg, links = 0;
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, 30.0);
    DIR *d;
    struct dirent *e;

    if (!ctx)
        return 2;
    if (!(d = opendir ("/proc/self/fd")))
        return 2;
    while ((e = readdir (d))) {
        int fd = atoi (e->d_name), v = 0, dom = 0;
        socklen_t vl = sizeof (v), dl = sizeof (dom);
        struct sockaddr_in sin;
        socklen_t sl = sizeof (sin);

        if (e->d_name[0] == '.' || fd == dirfd (d)
            || getsockopt (fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) < 0
            || dom != AF_INET
            || getpeername (fd, (struct sockaddr *)&sin, &sl) < 0
            || getsockopt (fd, SOL_SOCKET, SO_SNDBUF, &v, &vl) < 0)
            continue;
        links++;
        if (want > 0)
            RANK_CHECK (v == 2 * want, "link fd %d: SO_SNDBUF %d, not %d",
                        fd, v, 2 * want);
        else
            RANK_CHECK (v != 2 * HOST_LOOPBACK_SNDBUF, "link fd %d: SO_SNDBUF %d "
                        "(DDP_TCP_SNDBUF=0: the kernel's)", fd, v);
    }
    closedir (d);
    if (rank == 0)
        RANK_CHECK (links > 0, "rank 0 has no links");
    teardown (ctx, b, true);
    return tap_rank_fails ? 1 : 0;
}

/* Does s contain one of alts (apart by '|')? */
static bool has_one (const char *s, const char *alts)
{
    char one[256];

    while (*alts) {
        size_t n = strcspn (alts, "|");
        snprintf (one, sizeof (one), "%.*s", (int)n, alts);
        if (strstr (s, one))
            return true;
        alts += n + (alts[n] == '|');
    }
    return false;
}

/* Loop until a call fails: every rank's must, with DDP_EMISMATCH; a rank
 * that saw it names what each of the two passed, or the frame, the others
 * the pair (the fault record). */
static int rank_mismatch (int rank, void *arg)
{
    const struct mismatch *m = arg;
    bool late = m->late > 0 && rank == m->late;
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = create (&b, &cfg, 30);
    size_t max = m->n > m->vn ? m->n : m->vn;
    float *a = calloc (max, sizeof (float));
    float *g = calloc (max * SIZE, sizeof (float));
    const char *e;
    int i, rc;

    if (!ctx || !a || !g)
        return 2;
    /* The first barrier in the loop: a rank late out of it meets there
     * the record of a mismatch the others already saw. */
    rc = be->barrier (ctx);
    for (i = 0; i < 100000 && rc == 0; i++) {
        size_t n = i == 50 && rank == m->victim ? m->vn : m->n;
        if (i == 49 && late)
            usleep (200000);
        if (strcmp (m->how, "bcast") == 0)
            rc = be->bcast (ctx, a, n, DDP_FLOAT32, 0);
        else if (strcmp (m->how, "gather") == 0)
            rc = be->gather (ctx, a, rank == 0 ? g : NULL, n, DDP_FLOAT32, 0);
        else if (strcmp (m->how, "reduce") == 0)
            rc = be->reduce (ctx, a, rank == 0 ? g : NULL, n, DDP_FLOAT32,
                             DDP_SUM, 0);
        else if (strcmp (m->how, "reduce_scatter") == 0)
            rc = be->reduce_scatter (ctx, g, a, n, DDP_FLOAT32, DDP_SUM);
        else
            rc = be->allreduce (ctx, a, g, n, DDP_FLOAT32, DDP_SUM);
    }
    e = ddpi_last_error ();
    RANK_CHECK (rc == DDP_EMISMATCH, "failed with %d, not DDP_EMISMATCH: %s",
                rc, e);
    /* A rank that saw it fails at the 50th call; the others at any (a
     * rank that starts late meets the record at its first), the late
     * rank at the 50th too: it completed every call before, as the others
     * did.  Only a bcast across nodes may take it further: its node
     * agrees with the root, which may send it more before it sees the
     * record. */
    if (has_one (e, m->says) && !strstr (e, "(noticed by rank"))
        RANK_CHECK (i == 51, "saw it at loop call %d, not 51", i);
    else {
        bool further = strcmp (m->how, "bcast") == 0 && m->nodes > 1;

        RANK_CHECK (!late || i == 51 || (further && i > 51),
                    "failed at loop call %d, not 51%s", i,
                    further ? " or later" : "");
        RANK_CHECK (has_one (e, m->pair)
                    && strstr (e, "disagree on a collective call"),
                    "the error names neither \"%s\" nor the pair (%s): %s",
                    m->says, m->pair, e);
    }
    fprintf (stderr, "rank %d: %d at call %d: %s\n", rank, rc, i, e);
    teardown (ctx, b, false);
    free (a);
    free (g);
    return tap_rank_fails ? 1 : 0;
}

static char err[512];

/* Run fn on SIZE ranks on nodes simulated nodes. */
static int run_on (int nodes, ddpi_ljob_fn fn, void *arg, int *st)
{
    struct ddpi_ljob_opts o = { SIZE, nodes, NULL, 120, "collectives.t" };
    struct ddpi_ljob *j = ddpi_ljob_start (&o, fn, arg, err, sizeof (err));

    if (!j) {
        diag ("start: %s", err);
        return -1;
    }
    return ddpi_ljob_wait (j, st, err, sizeof (err));
}

static int run (ddpi_ljob_fn fn, void *arg, int *st)
{
    return run_on (NODES, fn, arg, st);
}

/* name=value fails the set-up on nodes simulated nodes, naming it; then
 * name is unset. */
static void bad_var (const char *name, const char *value, int nodes)
{
    char want[96];
    int st[SIZE], rc;

    snprintf (want, sizeof (want), "%s='%s'", name, value);
    setenv (name, value, 1);
    rc = run_on (nodes, rank_bad_var, want, st);
    is_int (rc, 0, "%s=%s: set-up fails, naming it%s%s", name, value,
            rc ? ": " : "", rc ? err : "");
    unsetenv (name);
}

/* Links between simulated nodes are on this machine: 256 KiB send
 * buffers unless DDP_TCP_SNDBUF says otherwise (0: the kernel's). */
static void sndbufs (void)
{
    static const struct {
        const char *env;        /* DDP_TCP_SNDBUF, NULL: unset */
        int want;               /* rank_sndbuf's argument */
        const char *what;
    } c[] = {
        { NULL, HOST_LOOPBACK_SNDBUF,
          "links within one machine: SO_SNDBUF 256 KiB" },
        { "0", 0, "DDP_TCP_SNDBUF=0: the kernel's send buffers" },
        { "65536", 65536, "DDP_TCP_SNDBUF=65536: every link's" },
    };
    int st[SIZE], rc, want;

    for (size_t i = 0; i < sizeof (c) / sizeof (c[0]); i++) {
        if (c[i].env)
            setenv ("DDP_TCP_SNDBUF", c[i].env, 1);
        want = c[i].want;
        rc = run (rank_sndbuf, &want, st);
        is_int (rc, 0, "%s%s%s", c[i].what, rc ? ": " : "", rc ? err : "");
        unsetenv ("DDP_TCP_SNDBUF");
    }
}

/* Run fn on SIZE ranks over nodes simulated nodes, rank r on node_of[r]
 * (NULL: in blocks). */
static int run_layout (int nodes, const int *node_of, ddpi_ljob_fn fn,
                       void *arg, int *st)
{
    struct ddpi_ljob_opts o = { SIZE, nodes, node_of, 120, "collectives.t" };
    struct ddpi_ljob *j = ddpi_ljob_start (&o, fn, arg, err, sizeof (err));

    if (!j) {
        diag ("start: %s", err);
        return -1;
    }
    return ddpi_ljob_wait (j, st, err, sizeof (err));
}

/* Reduce-scatter, every dtype and op, counts 1 to more than a slot
 * (20000 a rank: 80000 elements, in 64 KiB slots), on each layout: one
 * node (single copy, and the slots), nodes of one rank, uneven and
 * interleaved nodes, 3 nodes (one folds in recursive doubling and
 * halving), with the thresholds moved so that small counts take halving
 * and the ring too, and small slots with two lanes. */
static void reduce_scatters (void)
{
    static const size_t counts[] = { 1, 7, 1000, 20000, 0 };
    static const int three_one[SIZE] = { 0, 0, 0, 1 };
    static const int one_three[SIZE] = { 0, 1, 1, 1 };
    static const int inter[SIZE] = { 0, 1, 0, 1 };
    static const int three[SIZE] = { 0, 0, 1, 2 };
    static const int three_inter[SIZE] = { 0, 1, 2, 0 };
    static const struct {
        int nodes;
        const int *node_of;
        const char *env;    /* NAME=VALUE ... set for this run */
        const char *what;
    } c[] = {
        { 1, NULL, "", "1 node (single copy from 256 KiB)" },
        { 1, NULL, "DDP_CMA=0", "1 node through the slots (DDP_CMA=0)" },
        { 1, NULL, "DDP_CMA=0 DDP_SHM_SLOT=4096",
          "1 node in 4 KiB slots (many steps)" },
        { 2, NULL, "", "2 nodes of 2" },
        { 2, three_one, "", "nodes of 3 and 1" },
        { 2, one_three, "", "nodes of 1 and 3" },
        { 2, inter, "", "2 nodes, ranks interleaved" },
        { 2, NULL, "DDP_SHM_SLOT=4096 DDP_LANE_MIN=4096",
          "2 nodes of 2, two lanes, 4 KiB slots" },
        { 3, three, "DDP_SMALL_MAX=256 DDP_RING_MIN=4096",
          "3 nodes of 2, 1, 1 (a fold; halving and ring from small "
          "counts)" },
        { 3, three_inter, "DDP_SMALL_MAX=256 DDP_RING_MIN=4096",
          "3 nodes, ranks interleaved (rank 3 on node 0)" },
        { 4, NULL, "DDP_SMALL_MAX=256 DDP_RING_MIN=4096",
          "4 nodes of 1 (halving and ring from small counts)" },
        { 4, NULL, "", "4 nodes of 1" },
    };
    int st[SIZE], rc;

    for (size_t k = 0; k < sizeof (c) / sizeof (c[0]); k++) {
        char env[128], *save = NULL;
        setenv ("DDP_SHM_SLOT", "65536", 1);
        snprintf (env, sizeof (env), "%s", c[k].env);
        for (char *t = strtok_r (env, " ", &save); t;
             t = strtok_r (NULL, " ", &save)) {
            char *eq = strchr (t, '=');
            *eq = '\0';
            setenv (t, eq + 1, 1);
        }
        rc = run_layout (c[k].nodes, c[k].node_of, rank_rs, (void *)counts,
                         st);
        is_int (rc, 0, "reduce-scatter, every dtype and op, 1 to 20000 "
                "a rank, in and out of place, bitwise the all-reduce's "
                "block: %s%s%s", c[k].what, rc ? ": " : "", rc ? err : "");
        snprintf (env, sizeof (env), "%s", c[k].env);
        for (char *t = strtok_r (env, " ", &save); t;
             t = strtok_r (NULL, " ", &save)) {
            *strchr (t, '=') = '\0';
            unsetenv (t);
        }
        unsetenv ("DDP_SHM_SLOT");
    }
}

/* One all-reduce of SIZE x *arg floats, then one reduce-scatter of the
 * same (the counters go to DDP_STATS at destroy). */
static int rank_traffic (int rank, void *arg)
{
    size_t n = *(const size_t *)arg;
    struct bootstrap *b = NULL;
    struct ddp_config cfg;
    void *ctx = setup (&b, &cfg, 30.0);
    float *send = calloc (n * SIZE, sizeof (float));
    float *recv = calloc (n * SIZE, sizeof (float));

    (void)rank;
    if (!ctx || !send || !recv)
        return 2;
    RANK_CHECK (be->allreduce (ctx, send, recv, n * SIZE, DDP_FLOAT32,
                               DDP_SUM) == 0
                && be->reduce_scatter (ctx, send, recv, n, DDP_FLOAT32,
                                       DDP_SUM) == 0,
                "%s", ddpi_last_error ());
    teardown (ctx, b, true);
    free (send);
    free (recv);
    return tap_rank_fails ? 1 : 0;
}

/* The payload bytes every rank received in calls of kind, from the
 * counters' lines in path (ddp-stats ... kind=calls,ms,bs,mr,br). */
static unsigned long long bytes_in (const char *path, const char *kind)
{
    unsigned long long sum = 0, c, ms, bs, mr, br;
    char line[1024], key[64];
    FILE *f = fopen (path, "r");

    snprintf (key, sizeof (key), " %s=", kind);
    while (f && fgets (line, sizeof (line), f)) {
        const char *p = strstr (line, key);
        if (p && sscanf (p + strlen (key), "%llu,%llu,%llu,%llu,%llu", &c,
                         &ms, &bs, &mr, &br) == 5)
            sum += br;
    }
    if (f)
        fclose (f);
    return sum;
}

/* What a reduce-scatter moves between nodes, counted (DDP_STATS) on 4
 * nodes of one rank against the all-reduce of the same data: as much in
 * recursive doubling (full vectors every step), 2/3 with halving and
 * with the ring, whose allgather halves bring each node its block only
 * (one hop on the ring). */
static void reduce_scatter_traffic (void)
{
    static const struct {
        size_t n;
        const char *ring_min;
        int num, den;       /* the most the reduce-scatter may take */
        const char *what;
    } c[] = {
        { 1000, NULL, 1, 1, "recursive doubling (16 KB): as much" },
        { 100000, NULL, 2, 3, "halving (1.6 MB): 2/3" },
        { 100000, "65536", 2, 3, "ring (1.6 MB): 2/3" },
    };
    char path[] = "/tmp/collectives-stats-XXXXXX";
    int st[SIZE], rc, fd;

    for (size_t k = 0; k < sizeof (c) / sizeof (c[0]); k++) {
        unsigned long long ar, rs;
        if ((fd = mkstemp (path)) < 0) {
            ok (0, "mkstemp: %s", strerror (errno));
            return;
        }
        close (fd);
        setenv ("DDP_STATS", path, 1);
        if (c[k].ring_min)
            setenv ("DDP_RING_MIN", c[k].ring_min, 1);
        rc = run_on (SIZE, rank_traffic, (void *)&c[k].n, st);
        unsetenv ("DDP_STATS");
        unsetenv ("DDP_RING_MIN");
        ar = bytes_in (path, "allreduce");
        rs = bytes_in (path, "reduce_scatter");
        unlink (path);
        snprintf (path, sizeof (path), "/tmp/collectives-stats-XXXXXX");
        ok (rc == 0 && ar > 0 && rs > 0
            && rs * (unsigned)c[k].den <= ar * (unsigned)c[k].num,
            "reduce-scatter on 4 nodes of one rank, %s of the all-reduce's "
            "bytes: %llu against %llu%s%s", c[k].what, rs, ar,
            rc ? ": " : "", rc ? err : "");
    }
}

static void survivors_ok (const int *st, int victim, const char *what)
{
    for (int r = 0; r < SIZE; r++)
        if (r != victim)
            ok (WIFEXITED (st[r]) && WEXITSTATUS (st[r]) == 0,
                "%s: rank %d saw it, named it, in time", what, r);
}

/* The mismatches: every rank fails, none hangs; a rank that saw it says
 * what each passed, or what came. */
static void mismatches (void)
{
    /* Paths by bytes on one node (node.c): the ring up to 512 (a rank's,
     * for a gather), then single copy from 16 KiB (bcast), 8 KiB (gather)
     * and 256 KiB (all-reduce) where the node votes for it, the banks
     * otherwise; reductions inline up to 16 bytes, then the slots, split
     * from 32 KiB.  Ranks 0-1 are node 0, 2-3 node 1 on two. */
    static const struct mismatch ms[] = {
        { "bcast", 1, 2, 4, 2, "ranks 0,2",
          "ddp_bcast #52: rank 0: ddp_bcast of 2 float32 (its tag; it went "
          "on since); rank 2: ddp_bcast of 4 float32 from root 0", 0 },
        { "gather", 1, 2, 1, 3, "ranks 0,3",
          "ddp_gather #52: rank 3: ddp_gather of 1 float32 (its tag; it went "
          "on since); rank 0: ddp_gather of 2 float32 to root 0", 0 },
        { "bcast", 1, 128, 256, 2, "ranks 0,2",
          "ddp_bcast #52: rank 0's data is not where rank 2 expects it|"
          "rank 0: ddp_bcast of 128 float32 from root 0 (its collective "
          "#52); rank 2: ddp_bcast of 256 float32 from root 0 (its "
          "collective #52)", 0 },
        { "bcast", 1, 256, 128, 2, "ranks 0,2",
          "ddp_bcast #52: rank 0's data is not where rank 2 expects it|"
          "rank 0: ddp_bcast of 256 float32 from root 0 (its collective "
          "#52); rank 2: ddp_bcast of 128 float32 from root 0 (its "
          "collective #52)", 0 },
        { "bcast", 1, 512, 1024, 2, "ranks 0,2",
          "rank 0: ddp_bcast of 512 float32 from root 0 (its collective "
          "#52); rank 2: ddp_bcast of 1024 float32 from root 0 (its "
          "collective #52)", 0 },
        /* The victim's count takes it to single copy: where the node has
         * not voted yet, the vote's step meets the root's bank step. */
        { "bcast", 1, 1024, 8192, 1, "ranks 0-1",
          "rank 0: ddp_bcast of 1024 float32 from root 0 (its collective "
          "#52); rank 1: ddp_bcast of 8192 float32 from root 0 (its "
          "collective #52)|"
          "ddp_bcast #52: rank 0's data is not where rank 1 expects it", 0 },
        { "gather", 1, 128, 256, 3, "ranks 0,3",
          "rank 0: ddp_gather of 128 float32 to root 0 (its collective "
          "#52); rank 3: ddp_gather of 256 float32 to root 0 (its "
          "collective #52)|"
          "ddp_gather #52: rank 3: ddp_gather of 256 float32 (its tag|"
          "ddp_gather #52: rank 3's data is not where rank 0 expects it", 0 },
        { "gather", 1, 512, 4096, 1, "ranks 0-1",
          "rank 0: ddp_gather of 512 float32 to root 0 (its collective "
          "#52); rank 1: ddp_gather of 4096 float32 to root 0 (its "
          "collective #52)|"
          "ddp_gather #52: rank 1's data is not where rank 0 expects it|"
          "ddp_gather #52: rank 0's data is not where rank 1 expects it", 0 },
        /* Every rank reduces a small step: each that sees it claims. */
        { "allreduce", 1, 2, 8, 1, "ranks 0-1|ranks 1-2|ranks 1,3",
          "ddp_allreduce of 2 float32 with SUM (its collective #52); rank 1: "
          "ddp_allreduce of 8 float32 with SUM (its collective #52)|"
          "rank 1: ddp_allreduce of 8 float32 with SUM (its collective "
          "#52); rank 2: ddp_allreduce of 2 float32|"
          "rank 1: ddp_allreduce of 8 float32 with SUM (its collective "
          "#52); rank 3: ddp_allreduce of 2 float32", 0 },
        /* The slots against single copy (or split steps): the vote's tag. */
        { "allreduce", 1, 4096, 65536, 2, "ranks 0,2|ranks 1-2|ranks 2-3",
          "ddp_allreduce of 4096 float32 with SUM (its collective #52); "
          "rank 2: ddp_allreduce of 65536 float32 with SUM (its collective|"
          "rank 2: ddp_allreduce of 65536 float32 with SUM (its collective "
          "#52); rank 3: ddp_allreduce of 4096 float32", 0 },
        { "reduce", 1, 2, 4, 3, "ranks 0,3",
          "rank 0: ddp_reduce of 2 float32 with SUM to root 0 (its "
          "collective #52); rank 3: ddp_reduce of 4 float32 with SUM to "
          "root 0 (its collective #52)|"
          "ddp_reduce #52: rank 3: ddp_reduce of float32 (another count, "
          "op or root) (its tag", 0 },
        /* The root runs ahead on the ring; the others see it while rank 3
         * is still in the call before. */
        { "bcast", 1, 2, 4, 0, "ranks 0-1|ranks 0,2|ranks 0,3",
          "ddp_bcast #52: rank 0: ddp_bcast of 4 float32 (its tag; it went "
          "on since)", 3 },
        /* Two nodes: in the node's phases (lane 0 checks its node-mates)
         * or between nodes (a frame of another call). */
        { "allreduce", 2, 2, 4, 1, "ranks 0-1",
          "rank 0: ddp_allreduce of 2 float32 with SUM (its collective #52); "
          "rank 1: ddp_allreduce of 4 float32 with SUM (its collective #52)",
          0 },
        { "allreduce", 2, 2, 4, 2, "ranks 2-3|ranks 0,2",
          "rank 2: ddp_allreduce of 4 float32 with SUM (its collective #52); "
          "rank 3: ddp_allreduce of 2 float32 with SUM (its collective #52)|"
          "rank 0: ddp_allreduce of 2 float32 with SUM (its collective #52); "
          "rank 2: ddp_allreduce of 4 float32 with SUM (its collective #52)",
          0 },
        { "bcast", 2, 2, 4, 3, "ranks 2-3|ranks 0,3",
          "rank 2: ddp_bcast of 2 float32 from root 0 (its collective #52); "
          "rank 3: ddp_bcast of 4 float32 from root 0 (its collective #52)|"
          "rank 0: ddp_bcast of 2 float32 from root 0 (its collective #52); "
          "rank 3: ddp_bcast of 4 float32 from root 0 (its collective #52)",
          0 },
        /* Seen on node 0 while rank 3 (node 1) is still in the call
         * before; node 1 learns it from a FAULT frame, which carries the
         * call it was seen in (fault.t checks the frame).  In an
         * all-reduce no node runs ahead of another: the window in which
         * rank 3 meets the record in the call before is narrow.  In a
         * bcast node 1 lags, by 44 calls under ASan: it meets the record
         * while it waits in an earlier call, and goes on
         * (host_record_stops). */
        { "allreduce", 2, 2, 4, 1, "ranks 0-1",
          "rank 0: ddp_allreduce of 2 float32 with SUM (its collective #52); "
          "rank 1: ddp_allreduce of 4 float32 with SUM (its collective #52)",
          3 },
        { "bcast", 2, 2, 4, 1, "ranks 0-1",
          "rank 0: ddp_bcast of 2 float32 from root 0 (its collective #52); "
          "rank 1: ddp_bcast of 4 float32 from root 0 (its collective #52)",
          3 },
        { "gather", 2, 128, 256, 1, "ranks 0-1",
          "rank 0: ddp_gather of 128 float32 to root 0 (its collective #52); "
          "rank 1: ddp_gather of 256 float32 to root 0 (its collective #52)",
          0 },
        { "reduce", 2, 8192, 16384, 3, "ranks 2-3|ranks 0,3|ranks 0,2",
          "rank 2: ddp_reduce of 8192 float32 with SUM to root 0 (its "
          "collective #52); rank 3: ddp_reduce of 16384 float32 with SUM to "
          "root 0 (its collective #52)|"
          "rank 0: ddp_reduce of 8192 float32 with SUM to root 0 (its "
          "collective #52); rank 3: ddp_reduce of 16384 float32|"
          "ddp_reduce #52: node 1 (rank ", 0 },
        /* Reduce-scatter: on one node in the slots (every rank waits
         * for every other), against single copy (the vote's step), and
         * on two nodes in the in phase or between the nodes. */
        { "reduce_scatter", 1, 2, 4, 1, "ranks 0-1|ranks 1-2|ranks 1,3",
          "rank 1: ddp_reduce_scatter of 4 float32 with SUM (its collective "
          "#52)", 0 },
        { "reduce_scatter", 1, 1024, 65536, 2,
          "ranks 0,2|ranks 1-2|ranks 2-3",
          "rank 2: ddp_reduce_scatter of 65536 float32 with SUM (its "
          "collective #52)", 0 },
        { "reduce_scatter", 2, 2, 4, 1, "ranks 0-1",
          "rank 1: ddp_reduce_scatter of 4 float32 with SUM (its collective "
          "#52)", 0 },
        { "reduce_scatter", 2, 4096, 8192, 3, "ranks 2-3|ranks 0,3",
          "rank 3: ddp_reduce_scatter of 8192 float32 with SUM (its "
          "collective #52)", 0 },
        /* Two lanes a node: the victim's slices differ too. */
        { "reduce_scatter", 2, 65536, 131072, 0,
          "ranks 0-1|ranks 0,2|ranks 0,3",
          "rank 0: ddp_reduce_scatter of 131072 float32 with SUM (its "
          "collective #52)|ddp_reduce_scatter #52: node 0 (rank ", 0 },
    };
    int st[SIZE], rc;

    for (size_t k = 0; k < sizeof (ms) / sizeof (ms[0]); k++) {
        rc = run_on (ms[k].nodes, rank_mismatch, (void *)&ms[k], st);
        is_int (rc, 0, "rank %d passes %zu floats to the 50th %s of %zu "
                "(%d node%s): every rank fails with DDP_EMISMATCH naming "
                "both%s%s", ms[k].victim, ms[k].vn, ms[k].how, ms[k].n,
                ms[k].nodes, ms[k].nodes > 1 ? "s" : "", rc ? ": " : "",
                rc ? err : "");
    }
}

static void faults (void)
{
    struct fault f;
    int st[SIZE];

    f = (struct fault){ 2, "die", DDP_EPEER, 30 };
    run (rank_fault, &f, st);
    ok (WIFSIGNALED (st[2]), "rank 2 (node 1) killed in a barrier loop");
    survivors_ok (st, 2, "killed rank 2");

    f = (struct fault){ 1, "absent", DDP_ETIMEDOUT, 1.5 };
    run (rank_fault, &f, st);
    survivors_ok (st, 1, "rank 1 absent, a 1.5 s timeout");

    f = (struct fault){ 1, "gather", DDP_EPEER, 30 };
    run_on (1, rank_fault, &f, st);
    ok (WIFSIGNALED (st[1]), "rank 1 killed in a loop of single-copy "
        "allgathers (one node)");
    survivors_ok (st, 1, "killed rank 1 (single copy)");

    f = (struct fault){ 3, "reduce", DDP_EPEER, 30 };
    run_on (1, rank_fault, &f, st);
    ok (WIFSIGNALED (st[3]), "rank 3 killed in a loop of single-copy "
        "all-reduces of 1 MiB (one node)");
    survivors_ok (st, 3, "killed rank 3 (single-copy all-reduce)");

    f = (struct fault){ 1, "ring", DDP_EPEER, 30 };
    run_on (1, rank_fault, &f, st);
    ok (WIFSIGNALED (st[1]), "rank 1 killed in a loop of 8-byte bcasts "
        "(one node: the ring)");
    survivors_ok (st, 1, "killed rank 1 (the ring)");

    f = (struct fault){ 2, "ring-absent", DDP_ETIMEDOUT, 1.5 };
    run_on (1, rank_fault, &f, st);
    survivors_ok (st, 2, "rank 2 absent from 8-byte bcasts (the ring), a "
                  "1.5 s timeout");
}

static int rank_killed (int rank, void *arg)
{
    return rank_fault (rank, arg);
}

/* Killed from outside (the test) during large all-reduces, on nodes
 * simulated nodes (one: by single copy, a read may meet the death), the
 * victim's local rank lr 0 (a leader on 2 nodes) or another. */
static void killed_outside (int nodes, int victim)
{
    struct fault f = { victim, "wait", DDP_EPEER, 30 };
    struct ddpi_ljob_opts o = { SIZE, nodes, NULL, 120, "collectives.t" };
    char what[64];
    struct ddpi_ljob *j = ddpi_ljob_start (&o, rank_killed, &f, err,
                                           sizeof (err));
    int st[SIZE];

    if (!j) {
        ok (0, "start: %s", err);
        return;
    }
    sleep (2);
    ok (ddpi_ljob_kill (j, victim, SIGKILL) == 0, "kill rank %d during "
        "all-reduces of 1 MiB on %d node%s", victim, nodes,
        nodes > 1 ? "s" : " (single copy)");
    ddpi_ljob_wait (j, st, err, sizeof (err));
    ok (WIFSIGNALED (st[victim]) && WTERMSIG (st[victim]) == SIGKILL,
        "rank %d killed", victim);
    snprintf (what, sizeof (what), "killed rank %d from outside (%d node%s)",
              victim, nodes, nodes > 1 ? "s" : "");
    survivors_ok (st, victim, what);
}

int main (void)
{
    int st[SIZE], rc;

    plan (NO_PLAN);
    signal (SIGPIPE, SIG_IGN);
    unsetenv ("DDP_BOOTSTRAP");
    rc = run (rank_collectives, NULL, st);
    is_int (rc, 0, "4 ranks on 2 nodes: every collective right%s%s",
            rc ? ": " : "", rc ? err : "");
    reduce_scatters ();
    reduce_scatter_traffic ();
    setenv ("DDP_SHM_SLOT", "4096", 1);
    rc = run (rank_collectives, NULL, st);
    is_int (rc, 0, "the same in 4 KiB slots (many steps per call)%s%s",
            rc ? ": " : "", rc ? err : "");
    unsetenv ("DDP_SHM_SLOT");
    /* Every send is cut into pieces. */
    setenv ("DDP_TCP_PIECE", "1000", 1);
    rc = run (rank_collectives, NULL, st);
    is_int (rc, 0, "the same with sends in pieces of at most 1000 bytes%s%s",
            rc ? ": " : "", rc ? err : "");
    bad_var ("DDP_TCP_PIECE", "-1", NODES);
    /* Reads that take frames ahead through a 40-byte buffer: headers,
     * payloads and FAULT lists cut at every place; and none at all. */
    setenv ("DDP_TCP_READAHEAD", "40", 1);
    rc = run (rank_collectives, NULL, st);
    is_int (rc, 0, "the same with reads ahead through 40 bytes%s%s",
            rc ? ": " : "", rc ? err : "");
    setenv ("DDP_TCP_READAHEAD", "0", 1);
    rc = run (rank_collectives, NULL, st);
    is_int (rc, 0, "the same with no reads ahead%s%s", rc ? ": " : "",
            rc ? err : "");
    bad_var ("DDP_TCP_READAHEAD", "32k", NODES);
    sndbufs ();
    /* The smallest send buffer the kernel allows: sends cut short at
     * every place. */
    setenv ("DDP_TCP_SNDBUF", "1", 1);
    rc = run (rank_collectives, NULL, st);
    is_int (rc, 0, "the same with the smallest send buffers%s%s",
            rc ? ": " : "", rc ? err : "");
    unsetenv ("DDP_TCP_SNDBUF");
    bad_var ("DDP_TCP_SNDBUF", "256k", NODES);
    rc = run_on (1, rank_collectives, NULL, st);
    is_int (rc, 0, "4 ranks on 1 node (single copy from 8 KiB): every "
            "collective right%s%s", rc ? ": " : "", rc ? err : "");
    setenv ("DDP_CMA", "0", 1);
    rc = run_on (1, rank_collectives, NULL, st);
    is_int (rc, 0, "the same with DDP_CMA=0 (through the segment)%s%s",
            rc ? ": " : "", rc ? err : "");
    bad_var ("DDP_CMA", "yes", 1);
    rc = run_on (1, rank_ring, NULL, st);
    is_int (rc, 0, "4 ranks on 1 node: 400 rounds of small bcasts and "
            "gathers through the rings, roots rotating, ranks held back at "
            "random%s%s", rc ? ": " : "", rc ? err : "");
    rc = run (rank_ring, NULL, st);
    is_int (rc, 0, "the same on 2 nodes (no ring)%s%s", rc ? ": " : "",
            rc ? err : "");
    /* Every wait asleep on its flag at once (no spinning, no yielding):
     * the posts must wake the sleepers (wake.t checks the wake itself; a
     * lost one costs a wait 2 ms here, not a wrong result). */
    setenv ("DDP_SPIN", "0", 1);
    setenv ("DDP_YIELD", "0", 1);
    rc = run_on (1, rank_ring, NULL, st);
    is_int (rc, 0, "the rings with every wait asleep on its flag "
            "(DDP_SPIN=0 DDP_YIELD=0)%s%s", rc ? ": " : "", rc ? err : "");
    rc = run (rank_collectives, NULL, st);
    is_int (rc, 0, "every collective on 2 nodes, every wait asleep%s%s",
            rc ? ": " : "", rc ? err : "");
    bad_var ("DDP_YIELD", "20ms", NODES);
    bad_var ("DDP_SPIN", "-1", NODES);
    faults ();
    mismatches ();
    killed_outside (NODES, 0);
    killed_outside (1, 2);
    done_testing ();
    return 0;
}
