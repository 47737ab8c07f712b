/* helpers.c - the main-process helpers, variable-size data and logging in a
 * single process (world 1): results, every failure path (callback failure
 * -> DDP_EUSER, bad arguments -> DDP_EINVAL, before init -> DDP_ENOINIT). */
#include "config.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ddp.h"
#include "tap.h"
#include "stubs.h"
#include "testutil.h"

/* A main-only callback that calls main_only and run_on_main itself. */
static int fn_nested (void *arg)
{
    int *rc = arg;
    runs++;
    rc[0] = ddp_main_only (fn_ok, NULL);
    rc[1] = ddp_run_on_main (fn_ok, NULL, post_ok, NULL, true);
    rc[2] = ddp_rank0_first (fn_ok, NULL);
    return 0;
}

static int compute_null (void *arg, void **out, size_t *len)
{
    (void) arg;
    *out = NULL;
    *len = 10;
    runs++;
    return 0;
}

static int op_calls;

static void op_sum (void *inout, const void *in, size_t count, void *ctx)
{
    (void) ctx;
    for (size_t i = 0; i < count; i++)
        ((int64_t *) inout)[i] += ((const int64_t *) in)[i];
    op_calls++;
}

/* What a helper that takes one callback does in a single process: fn runs
 * once and its 0 comes back, a failing fn is DDP_EUSER, no fn DDP_EINVAL. */
static void check_one_fn (int (*helper) (ddp_fn_t, void *), const char *name)
{
    runs = 0;
    is_int (helper (fn_ok, NULL), 0, "%s: 0", name);
    is_int (runs, 1, "%s: fn ran once", name);
    is_int (helper (fn_fail, NULL), DDP_EUSER, "%s: fn failing is DDP_EUSER",
            name);
    is_int (helper (NULL, NULL), DDP_EINVAL, "%s: NULL fn is DDP_EINVAL",
            name);
}

static void check_before_init (void)
{
    void *b = NULL, *o = NULL;
    size_t l = 0, *lens = NULL;
    double d[2] = { 1, 2 }, g;
    ddp_named_value_t nv[1] = { { "x", 1. } };
    size_t n = 4;

    runs = 0;
    is_int (ddp_run_on_main (fn_ok, NULL, post_ok, NULL, true), DDP_ENOINIT,
            "before init: run_on_main is DDP_ENOINIT");
    is_int (ddp_main_only (fn_ok, NULL), DDP_ENOINIT,
            "before init: main_only is DDP_ENOINIT");
    is_int (ddp_rank0_first (fn_ok, NULL), DDP_ENOINIT,
            "before init: rank0_first is DDP_ENOINIT");
    is_int (ddp_local_rank0_first (fn_ok, NULL), DDP_ENOINIT,
            "before init: local_rank0_first is DDP_ENOINIT");
    is_int (ddp_compute_and_bcast (compute_ok, &n, 0, &o, &l), DDP_ENOINIT,
            "before init: compute_and_bcast is DDP_ENOINIT");
    is_int (runs, 0, "before init: no callback ran");
    is_int (ddp_bcast_bytes (&b, &l, 0), DDP_ENOINIT,
            "before init: bcast_bytes is DDP_ENOINIT");
    is_int (ddp_gatherv_bytes ("ab", 2, &o, &lens, 0), DDP_ENOINIT,
            "before init: gatherv_bytes is DDP_ENOINIT");
    is_int (ddp_allgatherv_bytes ("ab", 2, &o, &lens), DDP_ENOINIT,
            "before init: allgatherv_bytes is DDP_ENOINIT");
    is_int (ddp_reduce_bcast (d, 2, sizeof (double), op_sum, NULL),
            DDP_ENOINIT, "before init: reduce_bcast is DDP_ENOINIT");
    is_int (ddp_average (d, 2, DDP_FLOAT64), DDP_ENOINIT,
            "before init: average is DDP_ENOINIT");
    is_int (ddp_average_named (nv, 1), DDP_ENOINIT,
            "before init: average_named is DDP_ENOINIT");
    is_int (ddp_allgather_named (nv, 1, d), DDP_ENOINIT,
            "before init: allgather_named is DDP_ENOINIT");
    is_int (ddp_gather_scalar (1., &g, 0), DDP_ENOINIT,
            "before init: gather_scalar is DDP_ENOINIT");
}

static void check_run_on_main (void)
{
    int nested[3] = { -99, -99, -99 };

    runs = post_runs = 0;
    is_int (ddp_run_on_main (fn_ok, NULL, post_ok, NULL, false), 0,
            "run_on_main: 0");
    ok (runs == 1 && post_runs == 0,
        "run_on_main: fn ran once, post_fn not on main (runs %d post %d)",
        runs, post_runs);
    runs = post_runs = 0;
    is_int (ddp_run_on_main (fn_ok, NULL, post_ok, NULL, true), 0,
            "run_on_main post_on_main: 0");
    ok (runs == 1 && post_runs == 1, "run_on_main post_on_main: both ran");
    is_int (ddp_run_on_main (fn_ok, NULL, NULL, NULL, true), 0,
            "run_on_main: NULL post_fn is fine");
    runs = post_runs = 0;
    is_int (ddp_run_on_main (fn_fail, NULL, post_ok, NULL, true), DDP_EUSER,
            "run_on_main: fn failing is DDP_EUSER");
    is_int (post_runs, 0, "run_on_main: post_fn skipped after fn failed");
    is_int (ddp_run_on_main (fn_ok, NULL, post_fail, NULL, true), DDP_EUSER,
            "run_on_main: post_fn failing is DDP_EUSER");
    is_int (ddp_run_on_main (NULL, NULL, post_ok, NULL, true), DDP_EINVAL,
            "run_on_main: NULL fn is DDP_EINVAL");
    check_one_fn (ddp_main_only, "main_only");
    runs = post_runs = 0;
    is_int (ddp_main_only (fn_nested, nested), 0,
            "main_only: a callback calling helpers itself");
    ok (nested[0] == 0 && nested[1] == 0 && nested[2] == 0 && runs == 4
        && post_runs == 1,
        "nested helpers run locally (no collective only main would join): "
        "rc %d %d %d, runs %d", nested[0], nested[1], nested[2], runs);
    is_int (ddp_main_only (fn_ok, NULL), 0, "main_only after nesting: 0");
}

static int fn_slow (void *arg)
{
    runs++;
    usleep (500000);
    return *(int *) arg;
}

/* DDP_TIMEOUT is 0.2 s here: callbacks of 0.5 s go through the watchdog's
 * status rounds, and their result still comes back. */
static void check_slow (void)
{
    int zero = 0, one = 1;

    runs = post_runs = 0;
    is_int (ddp_run_on_main (fn_slow, &zero, post_ok, NULL, true), 0,
            "run_on_main: a callback longer than DDP_TIMEOUT succeeds");
    ok (runs == 1 && post_runs == 1, "slow run_on_main: fn and post_fn ran");
    is_int (ddp_main_only (fn_slow, &one), DDP_EUSER,
            "main_only: a slow callback's failure is DDP_EUSER");
    is_int (ddp_rank0_first (fn_slow, &zero), 0,
            "rank0_first: a slow callback succeeds");
    is_int (ddp_main_only (fn_ok, NULL), 0, "a fast main_only after them");
}

static void check_first (void)
{
    check_one_fn (ddp_rank0_first, "rank0_first");
    check_one_fn (ddp_local_rank0_first, "local_rank0_first");
}

static void check_compute (void)
{
    size_t sizes[] = { 0, 1, 240, 241, 1 << 20 };
    void *o;
    size_t l;

    for (size_t i = 0; i < sizeof (sizes) / sizeof (sizes[0]); i++) {
        o = NULL;
        l = 99;
        int rc = ddp_compute_and_bcast (compute_ok, &sizes[i], 0, &o, &l);
        ok (rc == 0 && l == sizes[i] && (l == 0 || buf_ok (o, 0, l)),
            "compute_and_bcast %zu bytes: result returned (rc %d)", sizes[i],
            rc);
        free (o);
    }
    o = (void *) 1;
    is_int (ddp_compute_and_bcast (compute_fail, NULL, 0, &o, &l), DDP_EUSER,
            "compute_and_bcast: fn failing is DDP_EUSER");
    ok (o == NULL, "compute_and_bcast: *out NULL after a failure");
    is_int (ddp_compute_and_bcast (compute_null, NULL, 0, &o, &l), DDP_EUSER,
            "compute_and_bcast: fn returning NULL with len > 0 is DDP_EUSER");
    is_int (ddp_compute_and_bcast (NULL, NULL, 0, &o, &l), DDP_EINVAL,
            "compute_and_bcast: NULL fn is DDP_EINVAL");
    is_int (ddp_compute_and_bcast (compute_ok, &sizes[1], 0, NULL, &l),
            DDP_EINVAL, "compute_and_bcast: NULL out is DDP_EINVAL");
    is_int (ddp_compute_and_bcast (compute_ok, &sizes[1], 1, &o, &l),
            DDP_EINVAL, "compute_and_bcast: root 1 of 1 is DDP_EINVAL");
    is_int (ddp_compute_and_bcast (compute_ok, &sizes[1], -1, &o, &l),
            DDP_EINVAL, "compute_and_bcast: root -1 is DDP_EINVAL");
}

static void check_bytes (void)
{
    char msg[] = "hello";
    void *b = msg, *o = NULL;
    size_t l = 5, *lens = NULL;
    size_t big = 300000;
    unsigned char *bb = make_buf (0, big);

    is_int (ddp_bcast_bytes (&b, &l, 0), 0, "bcast_bytes on root: 0");
    ok (b == msg && l == 5, "bcast_bytes: root's buffer and length unchanged");
    b = bb;
    l = big;
    is_int (ddp_bcast_bytes (&b, &l, 0), 0, "bcast_bytes 300 kB on root: 0");
    b = NULL;
    l = 5;
    is_int (ddp_bcast_bytes (&b, &l, 0), DDP_EINVAL,
            "bcast_bytes: NULL buffer with len > 0 on root is DDP_EINVAL");
    b = NULL;
    l = 0;
    is_int (ddp_bcast_bytes (&b, &l, 0), 0,
            "bcast_bytes: NULL buffer with len 0 is fine");
    is_int (ddp_bcast_bytes (NULL, &l, 0), DDP_EINVAL,
            "bcast_bytes: NULL buf pointer is DDP_EINVAL");
    is_int (ddp_bcast_bytes (&b, NULL, 0), DDP_EINVAL,
            "bcast_bytes: NULL len pointer is DDP_EINVAL");
    is_int (ddp_bcast_bytes (&b, &l, 1), DDP_EINVAL,
            "bcast_bytes: root out of range is DDP_EINVAL");

    is_int (ddp_gatherv_bytes ("abc", 3, &o, &lens, 0), 0, "gatherv 3 bytes");
    ok (o && lens && lens[0] == 3 && memcmp (o, "abc", 3) == 0,
        "gatherv: root gets its own bytes and length");
    free (o);
    free (lens);
    is_int (ddp_allgatherv_bytes (bb, big, &o, &lens), 0,
            "allgatherv 300 kB");
    ok (o && lens && lens[0] == big && buf_ok (o, 0, big),
        "allgatherv 300 kB: the data and length");
    free (o);
    free (lens);
    o = (void *) 1;
    is_int (ddp_gatherv_bytes (NULL, 0, &o, &lens, 0), 0, "gatherv 0 bytes");
    ok (o == NULL && lens && lens[0] == 0,
        "gatherv 0 bytes: *out NULL, length 0");
    free (lens);
    is_int (ddp_gatherv_bytes (NULL, 3, &o, &lens, 0), DDP_EINVAL,
            "gatherv: NULL buf with len > 0 is DDP_EINVAL");
    is_int (ddp_gatherv_bytes ("abc", 3, NULL, &lens, 0), DDP_EINVAL,
            "gatherv: NULL out is DDP_EINVAL");
    is_int (ddp_allgatherv_bytes ("abc", 3, &o, NULL), DDP_EINVAL,
            "allgatherv: NULL lens is DDP_EINVAL");
    is_int (ddp_gatherv_bytes ("abc", 3, &o, &lens, 2), DDP_EINVAL,
            "gatherv: root out of range is DDP_EINVAL");
    free (bb);
}

static void check_reduce (void)
{
    int64_t v[3] = { 1, -2, 3 };
    double avg[3] = { 1.5, -2., 1e300 };
    int32_t iv[2] = { 7, -7 };
    double g[1] = { 0 };
    ddp_named_value_t nv[2] = { { "loss", 0.25 }, { "acc", 0.75 } };
    ddp_named_value_t many[100];

    op_calls = 0;
    is_int (ddp_reduce_bcast (v, 3, sizeof (v[0]), op_sum, NULL), 0,
            "reduce_bcast: 0");
    ok (v[0] == 1 && v[1] == -2 && v[2] == 3 && op_calls == 0,
        "reduce_bcast on one rank: buffer unchanged, op not called");
    is_int (ddp_reduce_bcast (v, 3, sizeof (v[0]), NULL, NULL), DDP_EINVAL,
            "reduce_bcast: NULL op is DDP_EINVAL");
    is_int (ddp_reduce_bcast (NULL, 3, 8, op_sum, NULL), DDP_EINVAL,
            "reduce_bcast: NULL buf with count > 0 is DDP_EINVAL");
    is_int (ddp_reduce_bcast (v, 3, 0, op_sum, NULL), DDP_EINVAL,
            "reduce_bcast: elem_size 0 is DDP_EINVAL");
    is_int (ddp_reduce_bcast (v, SIZE_MAX / 2, 8, op_sum, NULL), DDP_EINVAL,
            "reduce_bcast: count * elem_size overflowing is DDP_EINVAL");
    is_int (ddp_reduce_bcast (NULL, 0, 8, op_sum, NULL), 0,
            "reduce_bcast: count 0 is fine");

    is_int (ddp_average (avg, 3, DDP_FLOAT64), 0, "average float64: 0");
    ok (avg[0] == 1.5 && avg[1] == -2. && avg[2] == 1e300,
        "average on one rank: values unchanged");
    is_int (ddp_average (iv, 2, DDP_INT32), 0, "average int32: 0");
    ok (iv[0] == 7 && iv[1] == -7, "average int32 on one rank: unchanged");
    is_int (ddp_average (NULL, 2, DDP_FLOAT64), DDP_EINVAL,
            "average: NULL buf is DDP_EINVAL");
    is_int (ddp_average (avg, 2, DDP_NUM_DTYPES), DDP_EINVAL,
            "average: unknown dtype is DDP_EINVAL");

    is_int (ddp_average_named (nv, 2), 0, "average_named: 0");
    ok (nv[0].value == 0.25 && nv[1].value == 0.75,
        "average_named on one rank: values unchanged");
    is_int (ddp_average_named (NULL, 0), 0, "average_named: n 0 is fine");
    is_int (ddp_average_named (NULL, 2), DDP_EINVAL,
            "average_named: NULL values is DDP_EINVAL");
    nv[1].name = NULL;
    is_int (ddp_average_named (nv, 2), DDP_EINVAL,
            "average_named: a NULL name is DDP_EINVAL");
    nv[1].name = "acc";
    for (int i = 0; i < 100; i++) {
        many[i].name = "m";
        many[i].value = i;
    }
    is_int (ddp_average_named (many, 100), 0,
            "average_named: 100 values (heap buffer)");
    ok (many[99].value == 99., "average_named 100: values kept");

    double out[2] = { 0, 0 };
    is_int (ddp_allgather_named (nv, 2, out), 0, "allgather_named: 0");
    ok (out[0] == 0.25 && out[1] == 0.75, "allgather_named: own values");
    is_int (ddp_allgather_named (nv, 2, NULL), DDP_EINVAL,
            "allgather_named: NULL out is DDP_EINVAL");

    is_int (ddp_gather_scalar (2.5, g, 0), 0, "gather_scalar: 0");
    ok (g[0] == 2.5, "gather_scalar: out[0] is the value");
    is_int (ddp_gather_scalar (2.5, NULL, 0), DDP_EINVAL,
            "gather_scalar: NULL out on root is DDP_EINVAL");
    is_int (ddp_gather_scalar (2.5, g, 1), DDP_EINVAL,
            "gather_scalar: root out of range is DDP_EINVAL");
}

/* Run f with stderr sent to a file; return what it wrote (malloc'd). */
static void log_simple (void *arg)
{
    (void) arg;
    ddp_log ("hello %d", 42);
}

static void log_lines (void *arg)
{
    (void) arg;
    ddp_log ("one\ntwo\n");
    ddp_log_main ("main %s", "only");
}

static void log_long (void *arg)
{
    (void) arg;
    char *s = malloc (5001);
    memset (s, 'x', 5000);
    s[5000] = '\0';
    ddp_log ("%s|", s);
    free (s);
}

static void check_log (void)
{
    char p[64];
    char *out;

    is_int (ddp_log_prefix (p, sizeof (p)), 15, "log_prefix: length 15");
    is_str (p, "[ddp rank 0/1] ", "log_prefix: \"[ddp rank 0/1] \"");
    is_int (ddp_log_prefix (NULL, 0), 15, "log_prefix (NULL, 0): the length");
    is_int (ddp_log_prefix (NULL, 4), DDP_EINVAL,
            "log_prefix (NULL, 4) is DDP_EINVAL");
    out = capture_stderr (log_simple, NULL);
    is_str (out, "[ddp rank 0/1] hello 42\n", "ddp_log: prefix, newline added");
    free (out);
    out = capture_stderr (log_lines, NULL);
    is_str (out, "[ddp rank 0/1] one\n[ddp rank 0/1] two\n"
            "[ddp rank 0/1] main only\n",
            "ddp_log: every line prefixed; log_main prints on main");
    free (out);
    out = capture_stderr (log_long, NULL);
    ok (strlen (out) == 15 + 5001 + 1 && strncmp (out, "[ddp rank 0/1] xxx", 18)
        == 0 && strcmp (out + strlen (out) - 3, "x|\n") == 0,
        "ddp_log: a 5000-byte message is written whole (%zu bytes)",
        strlen (out));
    free (out);
}

int main (void)
{
    int rc;

    single_process_env ("0.2");
    plan (NO_PLAN);
    check_before_init ();
    if ((rc = ddp_init ()) != 0) {
        diag ("ddp_init: %s", ddp_strerror (rc));
        bail_out ("ddp_init failed in a single process");
    }
    is_int (ddp_world_size (), 1, "a single process: world 1");
    check_run_on_main ();
    check_slow ();
    check_first ();
    check_compute ();
    check_bytes ();
    check_reduce ();
    check_log ();
    is_int (ddp_finalize (), 0, "ddp_finalize");
    is_int (ddp_main_only (fn_ok, NULL), DDP_ENOINIT,
            "after finalize: main_only is DDP_ENOINIT");
    is_int (ddp_bcast_bytes (NULL, NULL, 0), DDP_ENOINIT,
            "after finalize: bcast_bytes is DDP_ENOINIT");
    return done_testing ();
}

/* vi: ts=4 sw=4 expandtab
 */
