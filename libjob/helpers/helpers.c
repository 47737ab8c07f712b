/* helpers.c - the main-process helpers (run on main, rank 0 first,
 * compute and broadcast, reduce and broadcast, averaging, gathering named
 * values and scalars), built only on libddp's public API.  Each step ends
 * with the same answer on every rank (sync.h); variable-size data and the
 * broadcast ddp_compute_and_bcast uses are bytes.c's.
 *
 * A failure on one rank (a callback, a bad argument, an allocation) becomes
 * an error on every rank, carried by the collective that ends the step: the
 * rank that failed returns its own code, every other rank DDP_EREMOTE.  How
 * this compares with the Python helpers it replaces, and what each helper
 * costs in collectives: doc/api-map.md.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ddp.h"
#include "bytes.h"
#include "sync.h"

#define NAMED_STACK 64              /* doubles on the stack for average_named */
#define NAMED_HASH_SLOTS 6          /* 3 16-bit hash pieces and their squares */

/* Depth of main-only callbacks running on this thread: a helper called
 * from inside one runs locally, like speechbrain's MAIN_PROC_ONLY guard. */
static __thread int main_only_depth;

/* Run a callback; a non-zero return becomes DDP_EUSER. */
static int call (ddp_fn_t fn, void *arg, bool main_only)
{
    int rc;

    if (main_only)
        main_only_depth++;
    rc = fn (arg);
    if (main_only)
        main_only_depth--;
    return rc != 0 ? DDP_EUSER : 0;
}

struct call_args {
    ddp_fn_t fn;
    void *arg;
    bool main_only;
};

static int run_call (void *arg)
{
    struct call_args *c = arg;
    return c->fn ? call (c->fn, c->arg, c->main_only) : DDP_EINVAL;
}

/* ---- Main-process helpers --------------------------------------------- */

int ddp_run_on_main (ddp_fn_t fn, void *arg, ddp_fn_t post_fn, void *post_arg,
                     bool post_on_main)
{
    bool is_main = ddp_is_main (), any_post = false;
    struct call_args c;
    int rc;

    if (!helpers_initialized ())
        return DDP_ENOINIT;
    if (main_only_depth > 0) {
        /* Nested in a main-only callback: only main is here; run locally. */
        if (!fn)
            return DDP_EINVAL;
        if ((rc = call (fn, arg, true)) < 0 || !post_fn || !post_on_main)
            return rc;
        return call (post_fn, post_arg, false);
    }
    /* Only main needs fn; its status ends the step on every rank. */
    c = (struct call_args){ .fn = fn, .arg = arg, .main_only = true };
    rc = helpers_run_synced ("ddp_run_on_main", is_main, run_call, &c, 0, 0,
                             post_fn != NULL, &any_post);
    if (rc < 0 || !any_post)
        return rc;
    c = (struct call_args){ .fn = post_fn, .arg = post_arg };
    return helpers_run_synced ("ddp_run_on_main post_fn",
                               post_fn && (!is_main || post_on_main),
                               run_call, &c, 0, 0, false, NULL);
}

int ddp_main_only (ddp_fn_t fn, void *arg)
{
    return ddp_run_on_main (fn, arg, NULL, NULL, false);
}

/* fn runs first where 'first' is true; the others run it once all of those
 * succeeded. */
static int first_then_rest (const char *what, ddp_fn_t fn, void *arg,
                            bool first)
{
    struct call_args c = { .fn = fn, .arg = arg };
    int st = fn ? 0 : DDP_EINVAL, rc;

    if (!helpers_initialized ())
        return DDP_ENOINIT;
    if (main_only_depth > 0)    /* nested on main: only main is here */
        return fn ? call (fn, arg, false) : DDP_EINVAL;
    if ((rc = helpers_run_synced (what, first, run_call, &c, st, 0, false,
                                  NULL)) < 0)
        return rc;
    return helpers_run_synced (what, !first, run_call, &c, st, 0, false, NULL);
}

int ddp_rank0_first (ddp_fn_t fn, void *arg)
{
    return first_then_rest ("ddp_rank0_first", fn, arg, ddp_is_main ());
}

int ddp_local_rank0_first (ddp_fn_t fn, void *arg)
{
    return first_then_rest ("ddp_local_rank0_first", fn, arg,
                            ddp_is_local_main ());
}

struct compute_args {
    ddp_compute_fn_t fn;
    void *arg;
    void *out;
    size_t len;
};

static int run_compute (void *arg)
{
    struct compute_args *c = arg;

    if (!c->fn)
        return DDP_EINVAL;
    if (c->fn (c->arg, &c->out, &c->len) != 0 || (!c->out && c->len > 0)) {
        c->out = NULL;      /* not examined after a failure */
        c->len = 0;
        return DDP_EUSER;
    }
    return 0;
}

/* The root's status is shared by helpers_run_synced() (the computation
 * may take longer than DDP_TIMEOUT), then the result is broadcast. */
int ddp_compute_and_bcast (ddp_compute_fn_t fn, void *arg, int root,
                           void **out, size_t *len)
{
    struct compute_args c = { .fn = fn, .arg = arg };
    int st = 0, rc;
    bool is_root;

    if ((rc = helpers_check_root (root, &is_root)) < 0)
        return rc;
    if (!out || !len)
        st = DDP_EINVAL;
    else {
        *out = NULL;
        *len = 0;
    }
    rc = helpers_run_synced ("ddp_compute_and_bcast", is_root, run_compute,
                             &c, st, 0, false, NULL);
    if (rc == 0)
        rc = helpers_bcast_bytes ("ddp_compute_and_bcast", &c.out, &c.len,
                                  root, 0);
    if (rc < 0) {
        if (is_root)
            free (c.out);
        return rc;
    }
    *out = c.out;
    *len = c.len;
    return 0;
}

int ddp_reduce_bcast (void *buf, size_t count, size_t elem_size,
                      ddp_user_op_t op, void *ctx)
{
    int world = ddp_world_size (), st = 0, rc;
    bool is_root = ddp_rank () == 0;
    unsigned char *scratch = NULL;
    size_t n = 0;

    if (!helpers_initialized ())
        return DDP_ENOINIT;
    if (elem_size != 0 && count > SIZE_MAX / elem_size)
        st = DDP_EINVAL;
    else
        n = count * elem_size;
    if (!op || (!buf && n > 0) || (elem_size == 0 && count > 0))
        st = DDP_EINVAL;
    if (st == 0 && is_root && n > 0) {
        if (n > SIZE_MAX / (size_t) world
            || !(scratch = malloc (n * (size_t) world)))
            st = DDP_ENOMEM;
    }
    /* n must agree everywhere: a mismatch is reported, not a hang. */
    if ((rc = helpers_sync_status ("ddp_reduce_bcast", st, n, false,
                                   NULL)) < 0)
        goto out;
    if (n == 0)
        goto out;
    if ((rc = ddp_gather (buf, scratch, n, DDP_UINT8, 0)) < 0)
        goto out;
    if (is_root) {
        for (int r = 1; r < world; r++)
            op (scratch, scratch + (size_t) r * n, count, ctx);
        memcpy (buf, scratch, n);
    }
    rc = ddp_bcast (buf, n, DDP_UINT8, 0);
out:
    free (scratch);
    return rc;
}

int ddp_average (void *buf, size_t count, ddp_dtype_t dtype)
{
    if (!helpers_initialized ())
        return DDP_ENOINIT;
    return ddp_allreduce (buf, buf, count, dtype, DDP_AVG);
}

/* FNV-1a over n and every name (with its terminating NUL). */
static uint64_t names_hash (const ddp_named_value_t *v, size_t n)
{
    uint64_t h = UINT64_C (0xcbf29ce484222325);
    const uint64_t prime = UINT64_C (0x100000001b3);

    for (size_t i = 0; i < sizeof (n); i++) {
        h ^= (n >> (8 * i)) & 0xff;
        h *= prime;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = v[i].name;
        do {
            h ^= (unsigned char) *s;
            h *= prime;
        } while (*s++);
    }
    return h;
}

/* The names check rides in the same SUM allreduce as the values: for each
 * 16-bit piece p of the names' hash a rank adds p and p*p.  All ranks agree
 * iff W * sum(p^2) == (sum p)^2 (Cauchy-Schwarz, equality iff every p is
 * the same).  The sums are integers below 2^53 (W < 2^21), exact in double
 * whatever the reduction order. */
static bool names_agree (const double *slot, int world)
{
    for (int k = 0; k < NAMED_HASH_SLOTS; k += 2) {
        unsigned __int128 s1 = (uint64_t) slot[k];
        unsigned __int128 s2 = (uint64_t) slot[k + 1];
        if (s2 * (unsigned) world != s1 * s1)
            return false;
    }
    return true;
}

int ddp_average_named (ddp_named_value_t *values, size_t n)
{
    double stackbuf[NAMED_STACK];
    double *buf = stackbuf;
    int world = ddp_world_size (), st = 0, rc;
    uint64_t h = UINT64_C (0x5bd1e9955bd1e995); /* poison: a local error */
    size_t m;

    if (!helpers_initialized ())
        return DDP_ENOINIT;
    if (n > SIZE_MAX / sizeof (double) - NAMED_HASH_SLOTS)
        return DDP_EINVAL;
    m = n + NAMED_HASH_SLOTS;
    if (m > NAMED_STACK && !(buf = malloc (m * sizeof (double))))
        return DDP_ENOMEM;  /* cannot take part: peers time out */
    if (!values && n > 0)
        st = DDP_EINVAL;
    for (size_t i = 0; st == 0 && i < n; i++)
        if (!values[i].name)
            st = DDP_EINVAL;
    if (st == 0)
        h = names_hash (values, n);
    for (size_t i = 0; i < n; i++)
        buf[i] = st == 0 ? values[i].value : 0.;
    for (int k = 0; k < NAMED_HASH_SLOTS / 2; k++) {
        double p = (double) ((h >> (16 * k)) & 0xffff);
        buf[n + 2 * k] = p;
        buf[n + 2 * k + 1] = p * p;
    }
    if ((rc = ddp_allreduce (buf, buf, m, DDP_FLOAT64, DDP_SUM)) < 0)
        goto out;
    if ((rc = st) < 0)
        goto out;
    if (!names_agree (buf + n, world)) {
        if (helpers_debug ())
            ddp_log ("ddp_average_named: ranks passed different names");
        rc = DDP_EMISMATCH;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        values[i].value = buf[i] / (double) world;
out:
    if (buf != stackbuf)
        free (buf);
    return rc;
}

/* Each rank's slot: [status, names hash (bits), values...]. */
int ddp_allgather_named (const ddp_named_value_t *values, size_t n,
                         double *out)
{
    int world = ddp_world_size (), me = ddp_rank (), st = 0, rc;
    size_t m = n + 2;
    double *all = NULL;
    uint64_t h = 0, hr;

    if (!helpers_initialized ())
        return DDP_ENOINIT;
    if (n > SIZE_MAX / sizeof (double) / (size_t) world - 2)
        return DDP_EINVAL;
    if (!(all = calloc ((size_t) world * m, sizeof (double))))
        return DDP_ENOMEM;  /* cannot take part: peers time out */
    if (!out || (!values && n > 0))
        st = DDP_EINVAL;
    for (size_t i = 0; st == 0 && i < n; i++)
        if (!values[i].name)
            st = DDP_EINVAL;
    double *mine = all + (size_t) me * m;
    mine[0] = (double) -st;
    if (st == 0) {
        h = names_hash (values, n);
        memcpy (&mine[1], &h, sizeof (h));
        for (size_t i = 0; i < n; i++)
            mine[2 + i] = values[i].value;
    }
    if ((rc = ddp_allgather (mine, all, m, DDP_FLOAT64)) < 0)
        goto out;
    if ((rc = st) < 0)
        goto out;
    for (int r = 0; r < world; r++) {
        const double *slot = all + (size_t) r * m;
        if (slot[0] != 0.) {
            if (helpers_debug ())
                ddp_log ("ddp_allgather_named: rank %d failed: %s", r,
                         ddp_strerror (-(int) slot[0]));
            rc = DDP_EREMOTE;
            goto out;
        }
        memcpy (&hr, &slot[1], sizeof (hr));
        if (hr != h) {
            if (helpers_debug ())
                ddp_log ("ddp_allgather_named: rank %d passed other names", r);
            rc = DDP_EMISMATCH;
            goto out;
        }
    }
    for (int r = 0; r < world; r++)
        memcpy (out + (size_t) r * n, all + (size_t) r * m + 2,
                n * sizeof (double));
out:
    free (all);
    return rc;
}

int ddp_gather_scalar (double value, double *out, int root)
{
    double *recv = out, *scratch = NULL;
    int st = 0, rc;
    bool is_root;

    if ((rc = helpers_check_root (root, &is_root)) < 0)
        return rc;
    if (is_root && !out) {
        /* Still take part so that the senders are not left waiting. */
        st = DDP_EINVAL;
        if (!(recv = scratch = calloc ((size_t) ddp_world_size (),
                                       sizeof (double))))
            return DDP_ENOMEM;
    }
    rc = ddp_gather (&value, recv, 1, DDP_FLOAT64, root);
    free (scratch);
    return rc < 0 ? rc : st;
}

/* vi: ts=4 sw=4 expandtab
 */
