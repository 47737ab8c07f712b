/* helpers_check.c - run every libddp helper on every rank of a step and
 * check the results against values computed here; failures are injected
 * on chosen ranks to check that they reach every rank.
 *
 * Usage: helpers_check DIR [big|die|slow|log|bench]
 *   DIR: a directory every rank can see (files show who ran first).
 *   big: also move tens of MiB through the variable-size paths.
 *   die: main exits inside run_on_main (the others must not hang).
 *   slow: callbacks run longer than DDP_TIMEOUT (set it to 1).
 *   log: every rank logs 400 long lines at once.
 *   bench: time each helper next to the collectives it is built on.
 * Prints "rank R/W NAME ok" or "rank R/W NAME FAIL: why" per check, then
 * "rank R/W done failures=N"; exits 0 only if N is 0.  The checks run in
 * the same order on every rank, and the failure checks are followed by
 * more collectives: a failure leaves the ranks in step.
 */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ddp.h"
#include "stubs.h"

static int me, world, failures;
static void check_in_step (void);
static const char *dir;

static void check (bool cond, const char *name, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

static void check (bool cond, const char *name, const char *fmt, ...)
{
    char why[512] = "";
    va_list ap;

    if (!cond) {
        va_start (ap, fmt);
        vsnprintf (why, sizeof (why), fmt, ap);
        va_end (ap);
        failures++;
        printf ("rank %d/%d %s FAIL: %s\n", me, world, name, why);
    }
    else
        printf ("rank %d/%d %s ok\n", me, world, name);
    fflush (stdout);
}

/* The code a rank expects when 'who' fails with 'own' and others learn. */
static int expect (bool i_failed, int own)
{
    return i_failed ? own : DDP_EREMOTE;
}

static void path (char *buf, size_t size, const char *name)
{
    snprintf (buf, size, "%s/%s", dir, name);
}

static bool exists (const char *name)
{
    char p[4096];
    struct stat sb;
    path (p, sizeof (p), name);
    return stat (p, &sb) == 0;
}

static int touch (const char *name)
{
    char p[4096];
    FILE *f;
    path (p, sizeof (p), name);
    if (!(f = fopen (p, "w")))
        return -1;
    fclose (f);
    return 0;
}

/* ---- callbacks ---- */

static int main_writes (void *arg)
{
    runs++;
    usleep (200000);            /* the others must wait for this */
    return touch ((const char *) arg);
}

static int post_reads (void *arg)
{
    post_runs++;
    return exists ((const char *) arg) ? 0 : 1;
}

/* rank0_first: rank 0 creates the file, the others require it. */
static int first_writes (void *arg)
{
    runs++;
    if (me == 0) {
        usleep (200000);
        return touch ((const char *) arg);
    }
    return exists ((const char *) arg) ? 0 : 1;
}

static int local_first_writes (void *arg)
{
    char name[256];
    runs++;
    snprintf (name, sizeof (name), "%s.node%d", (const char *) arg,
              ddp_node_rank ());
    if (ddp_is_local_main ()) {
        usleep (200000);
        return touch (name);
    }
    return exists (name) ? 0 : 1;
}

/* local main of node 1 (or 0 on one node) fails */
static int local_fail (void *arg)
{
    int node = *(int *) arg;
    runs++;
    return ddp_is_local_main () && ddp_node_rank () == node ? 1 : 0;
}

/* A non-commutative op: acc = acc * 31 + in, so rank order matters. */
static void op_horner (void *inout, const void *in, size_t count, void *ctx)
{
    (void) ctx;
    for (size_t i = 0; i < count; i++)
        ((uint64_t *) inout)[i] = ((uint64_t *) inout)[i] * 31
                                  + ((const uint64_t *) in)[i];
}

static uint64_t horner_val (int r, size_t i)
{
    return (uint64_t) r * 1000003u + i * 7u + 1u;
}

/* ---- checks ---- */

static void check_bcast_bytes (bool big)
{
    size_t sizes[] = { 0, 1, 239, 240, 241, 100000, 3u << 20, 40u << 20 };
    size_t nsizes = sizeof (sizes) / sizeof (sizes[0]) - (big ? 0 : 1);
    int roots[] = { 0, world - 1 };
    char name[128];

    for (int ri = 0; ri < 2; ri++) {
        int root = roots[ri];
        for (size_t i = 0; i < nsizes; i++) {
            size_t n = sizes[i];
            void *b = NULL;
            size_t len = 12345;
            unsigned char *src = NULL;
            int rc;

            snprintf (name, sizeof (name), "bcast_bytes root=%d len=%zu", root,
                      n);
            if (me == root) {
                b = src = make_buf (root, n);
                len = n;
            }
            rc = ddp_bcast_bytes (&b, &len, root);
            if (me == root)
                check (rc == 0 && b == src && len == n, name,
                       "root: rc %d, buffer %s", rc,
                       b == src ? "kept" : "changed");
            else
                check (rc == 0 && len == n && (n == 0 ? b == NULL
                                                      : buf_ok (b, root, n)),
                       name, "rc %d len %zu", rc, len);
            if (me != root)
                free (b);
            free (src);
        }
    }
    /* root passes a bad buffer: root DDP_EINVAL, others DDP_EREMOTE */
    size_t lens[] = { 5, 1000 };
    for (int i = 0; i < 2; i++) {
        void *b = NULL;
        size_t len = lens[i];
        int rc = ddp_bcast_bytes (&b, &len, 0);
        snprintf (name, sizeof (name), "bcast_bytes root NULL len=%zu", lens[i]);
        check (rc == expect (me == 0, DDP_EINVAL) && (me == 0 || b == NULL),
               name, "rc %d (%s)", rc, ddp_strerror (rc));
    }
}

static void check_gatherv (bool big)
{
    char name[128];
    /* scenario: len of rank r */
    enum { S_VARIED, S_ZERO, S_EQUAL, S_BIG_ONE, S_MIXED, S_NUM };
    const char *sname[] = { "varied", "all-empty", "equal-1000",
                            "one-rank-25MiB", "mixed-100k" };

    for (int s = 0; s < S_NUM; s++) {
        if (s == S_BIG_ONE && !big)
            continue;
        for (int all = 0; all < 2; all++) {
            int root = all ? 0 : world - 1;
            size_t mylen, want_total = 0;
            size_t lens_of[1024];
            unsigned char *src;
            void *out = (void *) 1;
            size_t *lens = (size_t *) 1;
            bool good = true;
            int rc;

            for (int r = 0; r < world && r < 1024; r++) {
                size_t l = 0;
                switch (s) {
                case S_VARIED: l = (size_t) r * 7; break;    /* rank 0: 0 */
                case S_ZERO: l = 0; break;
                case S_EQUAL: l = 1000; break;
                case S_BIG_ONE: l = r == world - 1 ? (25u << 20) + 13 : 3; break;
                case S_MIXED: l = r % 2 ? 100000 + (size_t) r : 0; break;
                }
                lens_of[r] = l;
                want_total += l;
            }
            mylen = lens_of[me];
            src = make_buf (me, mylen);
            if (all)
                rc = ddp_allgatherv_bytes (src, mylen, &out, &lens);
            else
                rc = ddp_gatherv_bytes (src, mylen, &out, &lens, root);
            snprintf (name, sizeof (name), "%s %s", all ? "allgatherv"
                      : "gatherv", sname[s]);
            if (rc != 0)
                good = false;
            else if (all || me == root) {
                size_t off = 0;
                if (!lens || (want_total == 0) != (out == NULL))
                    good = false;
                for (int r = 0; good && r < world; r++) {
                    if (lens[r] != lens_of[r]
                        || !buf_ok ((unsigned char *) out + off, r, lens[r]))
                        good = false;
                    off += lens_of[r];
                }
                free (out);
                free (lens);
            }
            else if (out != NULL || lens != NULL)
                good = false;
            check (good, name, "rc %d (%s)", rc, ddp_strerror (rc));
            free (src);
        }
    }
    /* a bad argument on the last rank reaches everyone */
    for (int all = 0; all < 2; all++) {
        int bad = world - 1;
        void *out = NULL;
        size_t *lens = NULL;
        size_t len = me == bad ? 10 : 5;
        const void *b = me == bad ? NULL : "abcde";
        int rc = all ? ddp_allgatherv_bytes (b, len, &out, &lens)
                     : ddp_gatherv_bytes (b, len, &out, &lens, 0);
        snprintf (name, sizeof (name), "%s NULL buffer on rank %d",
                  all ? "allgatherv" : "gatherv", bad);
        check (rc == expect (me == bad, DDP_EINVAL) && out == NULL
               && lens == NULL, name, "rc %d (%s)", rc, ddp_strerror (rc));
    }
}

static void check_run_on_main (void)
{
    int rc, last = world - 1;

    runs = post_runs = 0;
    rc = ddp_run_on_main (main_writes, "main.done", post_reads, "main.done",
                          false);
    check (rc == 0 && runs == (me == 0) && post_runs == (me != 0),
           "run_on_main", "rc %d runs %d post_runs %d", rc, runs, post_runs);
    runs = post_runs = 0;
    rc = ddp_run_on_main (main_writes, "main2.done", post_reads, "main2.done",
                          true);
    check (rc == 0 && runs == (me == 0) && post_runs == 1,
           "run_on_main post_on_main", "rc %d runs %d post_runs %d", rc, runs,
           post_runs);
    runs = post_runs = 0;
    rc = ddp_run_on_main (fn_fail, NULL, post_reads, "main.done", true);
    check (rc == expect (me == 0, DDP_EUSER) && post_runs == 0,
           "run_on_main main fails: EUSER on main, EREMOTE elsewhere, no post",
           "rc %d (%s) post_runs %d", rc, ddp_strerror (rc), post_runs);
    post_runs = 0;
    rc = ddp_run_on_main (fn_ok, NULL, post_fail_on, &last, false);
    check (rc == (world == 1 ? 0 : expect (me == last, DDP_EUSER)),
           "run_on_main post_fn fails on the last rank: shared",
           "rc %d (%s)", rc, ddp_strerror (rc));
    runs = 0;
    rc = ddp_main_only (main_writes, "only.done");
    check (rc == 0 && runs == (me == 0) && exists ("only.done"), "main_only",
           "rc %d runs %d", rc, runs);
    rc = ddp_main_only (fn_fail, NULL);
    check (rc == expect (me == 0, DDP_EUSER), "main_only main fails",
           "rc %d (%s)", rc, ddp_strerror (rc));
    rc = ddp_main_only (me == 0 ? NULL : fn_ok, NULL);
    check (rc == expect (me == 0, DDP_EINVAL), "main_only NULL fn on main",
           "rc %d (%s)", rc, ddp_strerror (rc));
}

/* Call helper (fn, arg) with the run count reset: it must return want,
 * with fn run want_runs times on this rank. */
static void check_call (int (*helper) (ddp_fn_t, void *), ddp_fn_t fn,
                        void *arg, int want, int want_runs, const char *name)
{
    int rc;

    runs = 0;
    rc = helper (fn, arg);
    check (rc == want && runs == want_runs, name, "rc %d (%s) runs %d node %d",
           rc, ddp_strerror (rc), runs, ddp_node_rank ());
}

static void check_first (void)
{
    int last = world - 1, zero = 0;
    int fail_node = ddp_num_nodes () > 1 ? 1 : 0;
    bool local_main = ddp_is_local_main ();

    check_call (ddp_rank0_first, first_writes, "first.done", 0, 1,
                "rank0_first: rank 0 ran before the others");
    check_call (ddp_rank0_first, fail_on, &zero, expect (me == 0, DDP_EUSER),
                me == 0,
                "rank0_first rank 0 fails: the others do not run fn, EREMOTE");
    check_call (ddp_rank0_first, fail_on, &last,
                world == 1 ? DDP_EUSER : expect (me == last, DDP_EUSER), 1,
                "rank0_first last rank fails: shared");
    check_call (ddp_local_rank0_first, local_first_writes, "lfirst", 0, 1,
                "local_rank0_first: local rank 0 first");
    check_call (ddp_local_rank0_first, local_fail, &fail_node,
                expect (local_main && ddp_node_rank () == fail_node,
                        DDP_EUSER), local_main,
                "local_rank0_first a node's local main fails: nobody else "
                "runs fn");
}

static void check_compute (void)
{
    size_t sizes[] = { 0, 17, 300000 };
    char name[128];

    for (size_t i = 0; i < 3; i++) {
        int root = i % 2 ? world - 1 : 0;
        void *out = NULL;
        size_t len = 99;
        int rc;
        runs = 0;
        rc = ddp_compute_and_bcast (compute_ok, &sizes[i], root, &out, &len);
        snprintf (name, sizeof (name), "compute_and_bcast root=%d len=%zu",
                  root, sizes[i]);
        check (rc == 0 && runs == (me == root) && len == sizes[i]
               && (len == 0 || buf_ok (out, root, len)), name,
               "rc %d (%s) runs %d len %zu", rc, ddp_strerror (rc), runs, len);
        free (out);
    }
    void *out = (void *) 1;
    size_t len = 5;
    runs = 0;
    int rc = ddp_compute_and_bcast (compute_fail, NULL, world - 1, &out, &len);
    check (rc == expect (me == world - 1, DDP_EUSER) && out == NULL,
           "compute_and_bcast root fails: EREMOTE elsewhere", "rc %d (%s)", rc,
           ddp_strerror (rc));
}

static void check_reduce (void)
{
    size_t counts[] = { 0, 1, 1000, 200000 };
    int rc;

    for (size_t c = 0; c < 4; c++) {
        size_t n = counts[c];
        uint64_t *v = calloc (n + 1, sizeof (*v));
        bool good = true;
        char name[64];

        for (size_t i = 0; i < n; i++)
            v[i] = horner_val (me, i);
        rc = ddp_reduce_bcast (v, n, sizeof (*v), op_horner, NULL);
        for (size_t i = 0; i < n && good; i++) {
            uint64_t acc = horner_val (0, i);
            for (int r = 1; r < world; r++)
                acc = acc * 31 + horner_val (r, i);
            if (v[i] != acc)
                good = false;
        }
        snprintf (name, sizeof (name), "reduce_bcast count=%zu in rank order", n);
        check (rc == 0 && good, name, "rc %d (%s)", rc, ddp_strerror (rc));
        free (v);
    }
    uint64_t v[4] = { 1, 2, 3, 4 };
    rc = ddp_reduce_bcast (v, me == world - 1 ? 4 : 3, sizeof (v[0]),
                           op_horner, NULL);
    check (rc == (world == 1 ? 0 : DDP_EMISMATCH),
           "reduce_bcast count differs on the last rank: EMISMATCH everywhere",
           "rc %d (%s)", rc, ddp_strerror (rc));

    double d[5];
    for (int i = 0; i < 5; i++)
        d[i] = me + 1 + i * 0.5;
    rc = ddp_average (d, 5, DDP_FLOAT64);
    bool good = rc == 0;
    for (int i = 0; i < 5; i++) {
        double want = (world + 1) / 2.0 + i * 0.5;
        if (d[i] < want - 1e-12 || d[i] > want + 1e-12)
            good = false;
    }
    check (good, "average float64", "rc %d d[0] %g", rc, d[0]);
    int32_t iv[2] = { me * 10, -me * 10 };
    rc = ddp_average (iv, 2, DDP_INT32);
    check (rc == 0 && iv[0] == 10 * (world - 1) / 2
           && iv[1] == -(10 * (world - 1) / 2), "average int32 (truncated)",
           "rc %d got %d %d", rc, iv[0], iv[1]);

    ddp_named_value_t nv[3] = { { "loss", me * 2.0 }, { "acc", 1.0 },
                                { "lr", me == 0 ? 4.0 : 0.0 } };
    rc = ddp_average_named (nv, 3);
    check (rc == 0 && nv[0].value == (world - 1) * 1.0 && nv[1].value == 1.0
           && nv[2].value == 4.0 / world, "average_named",
           "rc %d got %g %g %g", rc, nv[0].value, nv[1].value, nv[2].value);
    ddp_named_value_t bad[2] = { { "loss", 1 },
                                 { me == world - 1 ? "acc2" : "acc", 2 } };
    rc = ddp_average_named (bad, 2);
    check (rc == (world == 1 ? 0 : DDP_EMISMATCH) && bad[0].value == 1,
           "average_named a name differs on the last rank: EMISMATCH everywhere",
           "rc %d (%s)", rc, ddp_strerror (rc));
    ddp_named_value_t swap[2] = { { me == 0 ? "b" : "a", 1 },
                                  { me == 0 ? "a" : "b", 2 } };
    rc = ddp_average_named (swap, 2);
    check (rc == (world == 1 ? 0 : DDP_EMISMATCH),
           "average_named names in another order on rank 0: EMISMATCH",
           "rc %d (%s)", rc, ddp_strerror (rc));

    double *all = calloc ((size_t) world * 2, sizeof (double));
    ddp_named_value_t two[2] = { { "x", me * 1.0 }, { "y", -me * 1.0 } };
    rc = ddp_allgather_named (two, 2, all);
    good = rc == 0;
    for (int r = 0; r < world; r++)
        if (all[r * 2] != r || all[r * 2 + 1] != -r)
            good = false;
    check (good, "allgather_named", "rc %d (%s)", rc, ddp_strerror (rc));
    two[1].name = me == 0 ? "z" : "y";
    rc = ddp_allgather_named (two, 2, all);
    check (rc == (world == 1 ? 0 : DDP_EMISMATCH),
           "allgather_named a name differs on rank 0: EMISMATCH everywhere",
           "rc %d (%s)", rc, ddp_strerror (rc));
    free (all);

    double *g = calloc ((size_t) world, sizeof (double));
    rc = ddp_gather_scalar (me * 1.5, me == world - 1 ? g : NULL, world - 1);
    good = rc == 0;
    if (me == world - 1)
        for (int r = 0; r < world; r++)
            if (g[r] != r * 1.5)
                good = false;
    check (good, "gather_scalar to the last rank", "rc %d (%s)", rc,
           ddp_strerror (rc));
    free (g);
}

/* The sampler on real ranks: gathered, the ranks' indices are the epoch's
 * padded list (every item at least once, at most twice), the same on
 * every rank. */
static void check_sampler (void)
{
    uint64_t sizes[] = { 0, 1, 10, 1001 };
    char name[128];

    for (size_t i = 0; i < 4; i++) {
        for (int drop = 0; drop < 2; drop++) {
            uint64_t n = sizes[i];
            ddp_sampler_t s;
            uint64_t *mine, *all = NULL;
            int *seen = calloc (n + 1, sizeof (int));
            bool good;
            int rc;

            rc = ddp_sampler_init (&s, n, world, me, true, 77, drop);
            ddp_sampler_set_epoch (&s, 3);
            mine = calloc (s.num_samples + 1, sizeof (*mine));
            all = calloc (s.total_size + 1, sizeof (*all));
            rc = rc ? rc : ddp_sampler_indices (&s, mine, s.num_samples);
            rc = rc ? rc : ddp_allgather (mine, all, s.num_samples, DDP_UINT64);
            good = rc == 0;
            for (uint64_t j = 0; good && j < s.total_size; j++) {
                if (all[j] >= n)
                    good = false;
                else
                    seen[all[j]]++;
            }
            for (uint64_t k = 0; good && k < n; k++) {
                int want_min = drop ? 0 : 1;
                if (seen[k] < want_min || seen[k] > (drop ? 1 : 1 + world))
                    good = false;
            }
            if (good && !drop && s.total_size != (n + world - 1) / world * world)
                good = false;
            snprintf (name, sizeof (name), "sampler N=%ju drop_last=%d: ranks "
                      "cover the epoch", (uintmax_t) n, drop);
            check (good, name, "rc %d (%s)", rc, ddp_strerror (rc));
            free (seen);
            free (mine);
            free (all);
        }
    }
}

/* After all the injected failures the ranks are still in step. */
static void check_in_step (void)
{
    int64_t v = me + 1, sum = 0;
    int rc = ddp_allreduce (&v, &sum, 1, DDP_INT64, DDP_SUM);
    check (rc == 0 && sum == (int64_t) world * (world + 1) / 2,
           "still in step after the failures", "rc %d sum %lld", rc,
           (long long) sum);
}

static int fn_noop (void *arg)
{
    (void) arg;
    return 0;
}

static double now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Microseconds per call of each helper next to the plain collectives it is
 * built on (the slowest rank's time, best batch), printed by rank 0. */
static int bench (void)
{
    enum { ITERS = 2000 };
    ddp_named_value_t nv[4] = { { "loss", 1 }, { "acc", 2 }, { "lr", 3 },
                                { "grad_norm", 4 } };
    double d[4], t;
    char msg[100] = "x";
    int rc = 0;

/* The best of 10 batches of ITERS / 10 calls: the test machine is shared. */
#define BENCH(label, expr)                                                  \
    do {                                                                    \
        double best_ = 1e30;                                                \
        for (int b_ = 0; b_ < 10 && rc == 0; b_++) {                        \
            ddp_barrier ();                                                 \
            t = now ();                                                     \
            for (int i_ = 0; i_ < ITERS / 10 && rc == 0; i_++)              \
                rc = (expr);                                                \
            t = (now () - t) / (ITERS / 10) * 1e6;                          \
            (void) ddp_allreduce (&t, &t, 1, DDP_FLOAT64, DDP_MAX);         \
            if (t < best_)                                                  \
                best_ = t;                                                  \
        }                                                                   \
        if (me == 0)                                                        \
            printf ("bench world=%d %-44s %8.1f us\n", world, label, best_); \
    } while (0)

    BENCH ("ddp_barrier", ddp_barrier ());
    BENCH ("ddp_allreduce 4 x f64 MAX", ddp_allreduce (d, d, 4, DDP_FLOAT64,
                                                       DDP_MAX));
    BENCH ("ddp_main_only (noop)", ddp_main_only (fn_noop, NULL));
    BENCH ("ddp_run_on_main (noop, post noop)",
           ddp_run_on_main (fn_noop, NULL, fn_noop, NULL, true));
    BENCH ("ddp_rank0_first (noop)", ddp_rank0_first (fn_noop, NULL));
    BENCH ("ddp_average_named (4 values, 1 collective)",
           ddp_average_named (nv, 4));
    BENCH ("4 x ddp_allreduce AVG (virtex, per key)",
           ddp_allreduce (d, d, 1, DDP_FLOAT64, DDP_AVG)
           || ddp_allreduce (d + 1, d + 1, 1, DDP_FLOAT64, DDP_AVG)
           || ddp_allreduce (d + 2, d + 2, 1, DDP_FLOAT64, DDP_AVG)
           || ddp_allreduce (d + 3, d + 3, 1, DDP_FLOAT64, DDP_AVG));
    BENCH ("ddp_bcast 100 B (fixed size)", ddp_bcast (msg, 100, DDP_UINT8, 0));
    BENCH ("ddp_bcast_bytes 100 B (size unknown)", ({
               void *b = me == 0 ? msg : NULL;
               size_t l = 100;
               int r_ = ddp_bcast_bytes (&b, &l, 0);
               if (me != 0)
                   free (b);
               r_;
           }));
    BENCH ("ddp_gather_scalar", ddp_gather_scalar (1.0, d, 0));
    if (rc != 0)
        fprintf (stderr, "bench: %s\n", ddp_strerror (rc));
    return rc == 0 ? 0 : 1;
#undef BENCH
}

static int sleep_ok (void *arg)
{
    runs++;
    usleep ((useconds_t) (*(double *) arg * 1e6));
    return 0;
}

static int sleep_fail (void *arg)
{
    runs++;
    usleep ((useconds_t) (*(double *) arg * 1e6));
    return 1;
}

static int compute_slow (void *arg, void **out, size_t *len)
{
    usleep ((useconds_t) (*(double *) arg * 1e6));
    runs++;
    *out = make_buf (me, 1000);
    *len = 1000;
    return 0;
}

/* Callbacks longer than DDP_TIMEOUT (the test sets it to 1 s): the waiting
 * ranks must neither time out nor break the job. */
static int slow (void)
{
    double secs = 2.5;
    void *out = NULL;
    size_t len = 0;
    int rc;

    runs = post_runs = 0;
    rc = ddp_run_on_main (sleep_ok, &secs, post_reads, ".", false);
    check (rc == 0 && runs == (me == 0) && post_runs == (me != 0),
           "slow run_on_main (main 2.5 s, DDP_TIMEOUT 1 s)", "rc %d (%s)", rc,
           ddp_strerror (rc));
    runs = 0;
    rc = ddp_rank0_first (sleep_ok, &secs);
    check (rc == 0 && runs == 1, "slow rank0_first (every rank 2.5 s)",
           "rc %d (%s)", rc, ddp_strerror (rc));
    runs = 0;
    rc = ddp_compute_and_bcast (compute_slow, &secs, world - 1, &out, &len);
    check (rc == 0 && len == 1000 && buf_ok (out, world - 1, 1000),
           "slow compute_and_bcast (root 2.5 s)", "rc %d (%s)", rc,
           ddp_strerror (rc));
    free (out);
    rc = ddp_main_only (sleep_fail, &secs);
    check (rc == expect (me == 0, DDP_EUSER), "slow main_only that fails",
           "rc %d (%s)", rc, ddp_strerror (rc));
    check_in_step ();
    printf ("rank %d/%d done failures=%d\n", me, world, failures);
    return failures ? 1 : 0;
}

/* Many ranks logging at once: every line must come out whole. */
static int log_storm (void)
{
    char body[201];

    memset (body, 'a' + me % 26, 200);
    body[200] = '\0';
    for (int i = 0; i < 300; i++) {
        if (i % 3 == 0)
            ddp_log ("line %d %s\nline %d+ %s", i, body, i, body);
        else
            ddp_log ("line %d %s", i, body);
    }
    ddp_log_main ("main says %d", world);
    return 0;
}

static int fn_exit (void *arg)
{
    (void) arg;
    usleep (100000);
    _exit (3);
}

/* Main dies inside run_on_main: the others must learn it, not hang. */
static int die_on_main (void)
{
    int rc = ddp_run_on_main (fn_exit, NULL, NULL, NULL, false);
    printf ("rank %d/%d run_on_main after main died: rc=%d (%s)\n", me, world,
            rc, ddp_strerror (rc));
    fflush (stdout);
    return rc == 0 ? 0 : 1;
}

int main (int argc, char **argv)
{
    bool big = argc > 2 && strcmp (argv[2], "big") == 0;
    int rc;

    if (argc < 2) {
        fprintf (stderr, "usage: helpers_check DIR [big|die|log|slow|bench|"
                 "slow-setenv VALUE]\n");
        return 2;
    }
    dir = argv[1];
    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    me = ddp_rank ();
    world = ddp_world_size ();
    if (argc > 2 && strcmp (argv[2], "die") == 0)
        return die_on_main ();
    if (argc > 2 && strcmp (argv[2], "log") == 0) {
        rc = log_storm ();
        ddp_finalize ();
        return rc;
    }
    /* slow, with DDP_TIMEOUT set to argv[3] after ddp_init: the rounds
     * must keep the timeout ddp_init took, whatever the variable says now. */
    if (argc > 3 && strcmp (argv[2], "slow-setenv") == 0) {
        setenv ("DDP_TIMEOUT", argv[3], 1);
        rc = slow ();
        ddp_finalize ();
        return rc;
    }
    if (argc > 2 && strcmp (argv[2], "slow") == 0) {
        rc = slow ();
        ddp_finalize ();
        return rc;
    }
    if (argc > 2 && strcmp (argv[2], "bench") == 0) {
        rc = bench ();
        ddp_finalize ();
        return rc;
    }
    double t0 = now ();
    ddp_log_main ("helpers_check: world %d, %d nodes", world, ddp_num_nodes ());
    check_bcast_bytes (big);
    check_gatherv (big);
    check_run_on_main ();
    check_first ();
    check_compute ();
    check_reduce ();
    check_sampler ();
    check_in_step ();
    printf ("rank %d/%d elapsed %.0f s\n", me, world, now () - t0);
    printf ("rank %d/%d done failures=%d\n", me, world, failures);
    fflush (stdout);
    ddp_finalize ();
    return failures ? 1 : 0;
}

/* vi: ts=4 sw=4 expandtab
 */
