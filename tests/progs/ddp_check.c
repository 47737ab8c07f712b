/* ddp_check.c - check every libddp collective, dtype and op against a
 * reference computed here, independently of the library.
 *
 * Every rank can compute every other rank's input (a formula of rank and
 * index), so the expected result is computed locally, in plain C arithmetic
 * (16-bit floats through the references of tests/lib/fpref.h).  The
 * inputs are chosen so that the float results are exact in any order; a
 * second pass with random floats checks that every rank gets bitwise the
 * same result (hashes compared with an allgather), and that a
 * reduce-scatter gives bitwise the all-reduce's block (host backend).
 *
 * Usage: ddp_check [-q] [-r] [-l COUNT]   (-q: fewer sizes; -l: large
 * count, default 2200000 elements, 0 skips it; -r: after ddp_finalize,
 * init again and check an allreduce).  Prints one summary line per rank
 * and exits 0 when every check passed on every rank, 1 otherwise.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ddp.h"
#include "fpref.h"

static int rank, size, nfail, nchecks;

/* The most ranks the expected results are exact for (see expect()). */
#define MAX_RANKS 192

#define FAIL(...)                                                             \
    do {                                                                      \
        if (nfail++ < 20) {                                                   \
            fprintf (stderr, "FAIL rank %d: ", rank);                         \
            fprintf (stderr, __VA_ARGS__);                                    \
            fputc ('\n', stderr);                                             \
        }                                                                     \
    } while (0)

static const char *dtname[] = { "int8", "uint8", "int32", "uint32", "int64",
                                "uint64", "float16", "bfloat16", "float32",
                                "float64" };
static const char *opname[] = { "sum", "prod", "min", "max", "avg" };

/* The input of rank r at index i for op: small integers (-5..5, or 0..10
 * unsigned; -2..2 or 0..4 for PROD) on the first WIDE_RANKS ranks, and
 * -1..1 (0..2, 0..1 for PROD) on the others, so that every partial result
 * of any reduction order stays exact in every dtype for up to MAX_RANKS
 * ranks (see expect()). */
#define WIDE_RANKS 15
static long input (int r, size_t i, ddp_op_t op, int is_unsigned)
{
    long v = (long)((r * 7 + (long)(i % 1000003) * 13) % 11);
    bool wide = r < WIDE_RANKS;

    if (op == DDP_PROD)
        v = wide ? v % 5 : v % (is_unsigned ? 2 : 3);
    else if (!wide)
        v = v % 3;
    if (!is_unsigned)
        v -= op == DDP_PROD ? (wide ? 2 : 1) : (wide ? 5 : 1);
    return v;
}

static int is_unsigned (ddp_dtype_t dt)
{
    return dt == DDP_UINT8 || dt == DDP_UINT32 || dt == DDP_UINT64;
}

/* acc as the integer dtype dt holds it (two's complement wrap). */
static long wrap (long acc, ddp_dtype_t dt)
{
    switch (dt) {
    case DDP_INT8: return (int8_t)(uint8_t)acc;
    case DDP_UINT8: return (uint8_t)acc;
    case DDP_INT32: return (int32_t)(uint32_t)acc;
    case DDP_UINT32: return (long)(uint32_t)acc;
    default: return acc;    /* 64 bits: the inputs never overflow a long */
    }
}

/* The expected reduction at index i, written into ref[i].  Computed in
 * double, which is exact here, and so is every partial result of the
 * library in any order: a PROD has at most WIDE_RANKS factors other than
 * 0 and +-1, each at most 4 in magnitude (|product| <= 2^15 signed, within
 * binary16; 4^15 unsigned, within uint32; int8/uint8 wrap exactly); a SUM
 * is at most 5 * WIDE_RANKS + (MAX_RANKS - WIDE_RANKS) = 252 in magnitude,
 * an integer that bfloat16's 8-bit significand holds exactly.  A product
 * with a zero factor gets IEEE's sign (-0.0) whatever the order, as the
 * float dtypes do. */
static void expect (void *ref, size_t i, ddp_dtype_t dt, ddp_op_t op)
{
    int u = is_unsigned (dt);
    double d = (double)input (0, i, op, u);
    long acc;

    for (int r = 1; r < size; r++)
        d = fpref_combine (op, d, (double)input (r, i, op, u));
    if (dt >= DDP_FLOAT16) {
        if (op == DDP_AVG && dt != DDP_FLOAT64)
            fpref_put (dt, ref, i, (float)d / (float)size);
        else if (op == DDP_AVG)
            fpref_put (dt, ref, i, d / size);
        else
            fpref_put (dt, ref, i, d);
        return;
    }
    acc = (long)d;
    /* AVG: the SUM wraps in the dtype first (ddp.h), then the division
     * truncates toward zero, like the library (many ranks of uint8 inputs
     * overflow it). */
    if (op == DDP_AVG)
        acc = wrap (acc, dt) / size;
    /* Integers wrap. */
    switch (dt) {
    case DDP_INT8: ((int8_t *)ref)[i] = (int8_t)(uint8_t)acc; break;
    case DDP_UINT8: ((uint8_t *)ref)[i] = (uint8_t)acc; break;
    case DDP_INT32: ((int32_t *)ref)[i] = (int32_t)acc; break;
    case DDP_UINT32: ((uint32_t *)ref)[i] = (uint32_t)acc; break;
    case DDP_INT64: ((int64_t *)ref)[i] = (int64_t)acc; break;
    case DDP_UINT64: ((uint64_t *)ref)[i] = (uint64_t)acc; break;
    default: break;
    }
}

static void fill (void *buf, size_t n, int r, ddp_dtype_t dt, ddp_op_t op)
{
    for (size_t i = 0; i < n; i++)
        fpref_put (dt, buf, i, (double)input (r, i, op, is_unsigned (dt)));
}

static void *xmalloc (size_t n)
{
    void *p = malloc (n ? n : 1);
    if (!p) {
        fprintf (stderr, "out of memory\n");
        exit (1);
    }
    return p;
}

static void check_mem (const char *what, const void *got, const void *want,
                       size_t n, size_t es, ddp_dtype_t dt, ddp_op_t op)
{
    nchecks++;
    if (memcmp (got, want, n * es) != 0) {
        size_t i;
        for (i = 0; i < n; i++)
            if (memcmp ((const char *)got + i * es, (const char *)want + i * es,
                        es) != 0)
                break;
        FAIL ("%s %s %s count %zu: first difference at %zu", what, dtname[dt],
              op < DDP_NUM_OPS ? opname[op] : "-", n, i);
    }
}

static void rc_ok (int rc, const char *what)
{
    nchecks++;
    if (rc != 0)
        FAIL ("%s returned %d (%s)", what, rc, ddp_strerror (rc));
}

static void test_reductions (size_t n, ddp_dtype_t dt, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dt);
    char *send = xmalloc (n * es), *recv = xmalloc (n * es);
    char *ref = xmalloc (n * es), *orig = xmalloc (n * es);
    int root = (int)((n + (size_t)op) % (size_t)size);

    fill (send, n, rank, dt, op);
    memcpy (orig, send, n * es);
    for (size_t i = 0; i < n; i++)
        expect (ref, i, dt, op);
    memset (recv, 0xa5, n * es);
    rc_ok (ddp_allreduce (send, recv, n, dt, op), "allreduce");
    check_mem ("allreduce", recv, ref, n, es, dt, op);
    check_mem ("allreduce leaves sendbuf", send, orig, n, es, dt, op);
    /* In place. */
    rc_ok (ddp_allreduce (send, send, n, dt, op), "allreduce in place");
    check_mem ("allreduce in place", send, ref, n, es, dt, op);
    /* Reduce to root; non-root passes NULL on odd counts. */
    memset (recv, 0xa5, n * es);
    rc_ok (ddp_reduce (orig, (rank != root && n % 2) ? NULL : recv, n, dt, op,
                       root), "reduce");
    if (rank == root)
        check_mem ("reduce", recv, ref, n, es, dt, op);
    free (send);
    free (recv);
    free (ref);
    free (orig);
}

/* Does the backend have ddp_reduce_scatter?  The host backend does; the
 * nccl backend not yet (nccl_coll.c), and ddp_check runs on it too. */
static int have_reduce_scatter (void)
{
    return strcmp (ddp_backend_name (), "host") == 0;
}

/* Reduce-scatter of n elements a rank: every rank's send holds size
 * blocks (index i of the whole at i), rank r gets block r of the
 * reduction; out of place (sendbuf left alone) and in place (recvbuf is
 * this rank's block of sendbuf). */
static void test_reduce_scatter (size_t n, ddp_dtype_t dt, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dt), all = n * (size_t)size;
    size_t me = (size_t)rank * n;
    char *send = xmalloc (all * es), *orig = xmalloc (all * es);
    char *recv = xmalloc (n * es), *ref = xmalloc (all * es);

    if (!have_reduce_scatter ())
        goto out;
    fill (send, all, rank, dt, op);
    memcpy (orig, send, all * es);
    for (size_t i = me; i < me + n; i++)
        expect (ref, i, dt, op);
    memset (recv, 0xa5, n * es);
    rc_ok (ddp_reduce_scatter (send, recv, n, dt, op), "reduce_scatter");
    check_mem ("reduce_scatter", recv, ref + me * es, n, es, dt, op);
    check_mem ("reduce_scatter leaves sendbuf", send, orig, all, es, dt, op);
    rc_ok (ddp_reduce_scatter (send, send + me * es, n, dt, op),
           "reduce_scatter in place");
    check_mem ("reduce_scatter in place", send + me * es, ref + me * es, n,
               es, dt, op);
out:
    free (send);
    free (orig);
    free (recv);
    free (ref);
}

static void test_moves (size_t n, ddp_dtype_t dt)
{
    size_t es = ddp_dtype_size (dt), ws = (size_t)size;
    char *buf = xmalloc (n * es), *ref = xmalloc (n * es * ws);
    char *all = xmalloc (n * es * ws);
    int root = (int)(n % ws), r;

    /* bcast: root's data everywhere. */
    fill (buf, n, rank == root ? root + 100 : rank, dt, DDP_SUM);
    fill (ref, n, root + 100, dt, DDP_SUM);
    rc_ok (ddp_bcast (buf, n, dt, root), "bcast");
    check_mem ("bcast", buf, ref, n, es, dt, DDP_NUM_OPS);
    /* allgather and gather: rank order. */
    for (r = 0; r < size; r++)
        fill (ref + (size_t)r * n * es, n, r, dt, DDP_SUM);
    fill (buf, n, rank, dt, DDP_SUM);
    memset (all, 0x5a, n * es * ws);
    rc_ok (ddp_allgather (buf, all, n, dt), "allgather");
    check_mem ("allgather", all, ref, n * ws, es, dt, DDP_NUM_OPS);
    memset (all, 0x5a, n * es * ws);
    rc_ok (ddp_gather (buf, rank == root ? all : NULL, n, dt, root), "gather");
    if (rank == root)
        check_mem ("gather", all, ref, n * ws, es, dt, DDP_NUM_OPS);
    /* allgather in place (sendbuf is this rank's block of recvbuf). */
    memset (all, 0x5a, n * es * ws);
    memcpy (all + (size_t)rank * n * es, buf, n * es);
    rc_ok (ddp_allgather (all + (size_t)rank * n * es, all, n, dt),
           "allgather in place");
    check_mem ("allgather in place", all, ref, n * ws, es, dt, DDP_NUM_OPS);
    free (buf);
    free (ref);
    free (all);
}

static uint64_t fnv (const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ULL;
    while (n--)
        h = (h ^ *c++) * 1099511628211ULL;
    return h;
}

/* Random floats: results must be bitwise identical on every rank. */
static void test_identical (size_t n, ddp_dtype_t dt, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dt);
    char *buf = xmalloc (n * es);
    uint64_t h, *all = xmalloc (sizeof (uint64_t) * (size_t)size);
    unsigned s = 12345u + (unsigned)rank * 7919u;

    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        fpref_put (dt, buf, i, ((double)(s >> 8) / (1 << 24) - 0.5) * 3.7);
    }
    rc_ok (ddp_allreduce (buf, buf, n, dt, op), "allreduce random");
    h = fnv (buf, n * es);
    rc_ok (ddp_allgather (&h, all, 1, DDP_UINT64), "allgather hashes");
    nchecks++;
    for (int r = 0; r < size; r++)
        if (all[r] != h) {
            FAIL ("allreduce %s %s count %zu: rank %d got a different result",
                  dtname[dt], opname[op], n, r);
            break;
        }
    free (buf);
    free (all);
}

/* Random floats: a reduce-scatter gives bitwise the block of an
 * all-reduce of the same data (the same reduction order). */
static void test_rs_identical (size_t n, ddp_dtype_t dt, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dt), all = n * (size_t)size;
    char *buf = xmalloc (all * es), *ar = xmalloc (all * es);
    char *recv = xmalloc (n * es);
    unsigned s = 54321u + (unsigned)rank * 7919u;

    if (!have_reduce_scatter ())
        goto out;
    for (size_t i = 0; i < all; i++) {
        s = s * 1103515245u + 12345u;
        fpref_put (dt, buf, i, ((double)(s >> 8) / (1 << 24) - 0.5) * 3.7);
    }
    rc_ok (ddp_allreduce (buf, ar, all, dt, op), "allreduce random");
    rc_ok (ddp_reduce_scatter (buf, recv, n, dt, op),
           "reduce_scatter random");
    nchecks++;
    if (memcmp (recv, ar + (size_t)rank * n * es, n * es) != 0)
        FAIL ("reduce_scatter %s %s count %zu: not bitwise the allreduce's "
              "block", dtname[dt], opname[op], n);
out:
    free (buf);
    free (ar);
    free (recv);
}

int main (int argc, char **argv)
{
    size_t sizes_full[] = { 0, 1, 2, 7, 63, 1001, 40000, 300001 };
    size_t sizes_quick[] = { 0, 1, 7, 1001 };
    size_t *sizes = sizes_full, nsizes = 8, large = 2200000;
    int opt, rc, dt, op, again = 0;
    long total;

    while ((opt = getopt (argc, argv, "qrl:")) != -1) {
        if (opt == 'q') {
            sizes = sizes_quick;
            nsizes = 4;
        }
        else if (opt == 'r')
            again = 1;
        else if (opt == 'l')
            large = strtoul (optarg, NULL, 10);
        else {
            fprintf (stderr, "usage: ddp_check [-q] [-r] [-l COUNT]\n");
            return 2;
        }
    }
    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    rank = ddp_rank ();
    size = ddp_world_size ();
    if (size > MAX_RANKS) {
        if (rank == 0)
            fprintf (stderr, "ddp_check: the references are exact for up to "
                     "%d ranks, this step has %d: run it with fewer\n",
                     MAX_RANKS, size);
        ddp_finalize ();
        return 2;
    }
    rc_ok (ddp_barrier (), "barrier");
    for (size_t k = 0; k < nsizes; k++) {
        for (dt = 0; dt < DDP_NUM_DTYPES; dt++) {
            for (op = 0; op < DDP_NUM_OPS; op++) {
                test_reductions (sizes[k], (ddp_dtype_t)dt, (ddp_op_t)op);
                test_reduce_scatter (sizes[k], (ddp_dtype_t)dt,
                                     (ddp_op_t)op);
            }
            test_moves (sizes[k], (ddp_dtype_t)dt);
        }
        rc_ok (ddp_barrier (), "barrier");
    }
    for (dt = DDP_FLOAT16; dt <= DDP_FLOAT64; dt++) {
        test_identical (1001, (ddp_dtype_t)dt, DDP_SUM);
        test_identical (70001, (ddp_dtype_t)dt, DDP_SUM);
        test_identical (1001, (ddp_dtype_t)dt, DDP_AVG);
        test_identical (333, (ddp_dtype_t)dt, DDP_PROD);
        test_rs_identical (1001, (ddp_dtype_t)dt, DDP_SUM);
        test_rs_identical (70001, (ddp_dtype_t)dt, DDP_AVG);
    }
    if (large) {
        /* Chunked through the segment: several steps per call. */
        test_reductions (large, DDP_FLOAT32, DDP_SUM);
        test_reductions (large, DDP_INT64, DDP_MAX);
        test_reductions (large + 1, DDP_BFLOAT16, DDP_AVG);
        test_moves (large / (size_t)size + 3, DDP_FLOAT32);
        test_reduce_scatter (large / (size_t)size + 3, DDP_FLOAT32,
                             DDP_SUM);
        test_rs_identical (large / (size_t)size + 1, DDP_FLOAT32, DDP_SUM);
        test_identical (large, DDP_FLOAT32, DDP_SUM);
    }
    total = nfail;
    rc = ddp_allreduce (&total, &total, 1, DDP_INT64, DDP_SUM);
    if (rc != 0) {
        fprintf (stderr, "final allreduce: %s\n", ddp_strerror (rc));
        total = 1;
    }
    printf ("ddp_check rank %d/%d local %d/%d node %d/%d backend %s: %d checks, "
            "%d failed here, %ld failed in all\n", rank, size, ddp_local_rank (),
            ddp_local_world_size (), ddp_node_rank (), ddp_num_nodes (),
            ddp_backend_name (), nchecks, nfail, total);
    rc = ddp_finalize ();
    if (rc != 0)
        fprintf (stderr, "ddp_finalize: %s\n", ddp_strerror (rc));
    if (again && rc == 0) {
        long sum = 0, want = (long)size * (size - 1) / 2;
        long me;
        if ((rc = ddp_init ()) == 0) {
            me = ddp_rank ();
            rc = ddp_allreduce (&me, &sum, 1, DDP_INT64, DDP_SUM);
            printf ("ddp_check rank %d: init again: allreduce %s\n", rank,
                    rc == 0 && sum == want ? "ok" : "FAILED");
            if (rc == 0 && sum != want)
                rc = -1;
            if (ddp_finalize () != 0)
                rc = -1;
        }
        else
            fprintf (stderr, "ddp_init again: %s\n", ddp_strerror (rc));
    }
    return total == 0 && rc == 0 ? 0 : 1;
}
