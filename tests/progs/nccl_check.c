/* nccl_check.c - the NCCL backend against a CPU reference (prints TAP).
 *
 * Run with DDP_BACKEND=nccl, alone (world size 1, the singleton path) or
 * under srun with one GPU per rank.  For every collective, dtype and op, on
 * device, managed, pinned and plain host buffers and several counts, the
 * result is compared with a reference computed here from the values every
 * rank is known to contribute (reduce-scatter too, in and out of place,
 * without a _stream form: the core has none).  Also: in-place forms, the explicit-stream
 * variants, barrier, the accessors and the argument checks.
 *
 *   nccl_check --probe   exit 0 if a CUDA device is visible, else print why
 *                        and exit 1 (the sharness test skips on that); with
 *                        a device also print, one line each, the first
 *                        device's name and PCI bus id, the CUDA runtime and
 *                        driver versions, and libddp's version (for
 *                        contrib/gpu-check.sh's report)
 *   nccl_check [-v] [--quick] [--count N] [--op NAME]
 *                        run the checks (--quick: no 1M-element counts;
 *                        --count: that count only; --op: the reductions
 *                        with that op only, no bcast/gather); exit 0 when
 *                        all passed
 *
 * The full run's count 1048579 (2^20 + 3) is the one where NCCL 2.28.3's
 * out-of-place ncclAvg left the last elements unwritten (doc/nccl.md):
 * every reduction of every dtype is checked there, in and out of place,
 * on every buffer kind, for allreduce, reduce and reduce-scatter.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "ddp.h"
#include "fpref.h"
#include "tap.h"

enum kind { K_DEVICE, K_MANAGED, K_PINNED, K_HOST, K_NUM };
static const char *kind_name[K_NUM] = {"device", "managed", "pinned", "host"};
static const char *dtype_name[DDP_NUM_DTYPES] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "bfloat16", "float32", "float64"};
static const char *op_name[DDP_NUM_OPS] = {"sum", "prod", "min", "max", "avg"};
static size_t counts[] = {1, 7, 1031, (1u << 20) + 3};
static size_t ncounts = sizeof (counts) / sizeof (counts[0]);
static int only_op = -1; /* --op: that op's reductions only */

static int rank, size, verbose;

static bool is_float (ddp_dtype_t t)
{
    return t >= DDP_FLOAT16;
}

static bool is_signed (ddp_dtype_t t)
{
    return t == DDP_INT8 || t == DDP_INT32 || t == DDP_INT64 || is_float (t);
}

/* What rank r contributes at index i: small integers, exact in every dtype
 * and without overflow for any op up to 8 ranks; negative for signed types
 * so AVG's truncation toward zero is exercised. */
static double val (ddp_dtype_t t, ddp_op_t op, size_t i, int r)
{
    if (op == DDP_PROD)
        return (double)((i + (size_t)r) % 2 + 1);
    double v = (double)((i * 7 + (size_t)r * 3) % 5 + 1);
    return is_signed (t) ? v - 3 : v;
}

static double reduce_ref (ddp_dtype_t t, ddp_op_t op, size_t i)
{
    double acc = val (t, op, i, 0);
    for (int r = 1; r < size; r++)
        acc = fpref_combine (op, acc, val (t, op, i, r));
    if (op == DDP_AVG)
        acc = is_float (t) ? acc / size : trunc (acc / size);
    return acc;
}

static bool close_to (ddp_dtype_t t, double got, double want)
{
    double tol = t == DDP_FLOAT16 ? 1e-3 : t == DDP_BFLOAT16 ? 1e-2
                 : t == DDP_FLOAT32 ? 1e-6 : 1e-12;
    if (!is_float (t))
        return got == want;
    return fabs (got - want) <= tol * (fabs (want) > 1 ? fabs (want) : 1);
}

/* ---- buffers ----------------------------------------------------------- */

struct buf {
    enum kind kind;
    size_t bytes;
    void *p;     /* what the collective is given */
    void *host;  /* host copy for filling and checking */
};

static int buf_alloc (struct buf *b, enum kind k, size_t bytes)
{
    cudaError_t e = cudaSuccess;
    b->kind = k;
    b->bytes = bytes;
    b->p = NULL;
    if (!(b->host = calloc (1, bytes ? bytes : 1)))
        return -1;
    switch (k) {
        case K_DEVICE: e = cudaMalloc (&b->p, bytes ? bytes : 1); break;
        case K_MANAGED: e = cudaMallocManaged (&b->p, bytes ? bytes : 1,
                                               cudaMemAttachGlobal); break;
        case K_PINNED: e = cudaMallocHost (&b->p, bytes ? bytes : 1); break;
        case K_HOST: b->p = malloc (bytes ? bytes : 1); break;
        default: break;
    }
    return e == cudaSuccess && b->p ? 0 : -1;
}

static void buf_free (struct buf *b)
{
    if (b->kind == K_DEVICE || b->kind == K_MANAGED)
        cudaFree (b->p);
    else if (b->kind == K_PINNED)
        cudaFreeHost (b->p);
    else
        free (b->p);
    free (b->host);
}

static int buf_push (struct buf *b)
{
    return cudaMemcpy (b->p, b->host, b->bytes, cudaMemcpyDefault)
                   == cudaSuccess ? 0 : -1;
}

static int buf_pull (struct buf *b)
{
    return cudaMemcpy (b->host, b->p, b->bytes, cudaMemcpyDefault)
                   == cudaSuccess ? 0 : -1;
}

/* ---- the checks -------------------------------------------------------- */

/* Compare n elements of got with want(i); report the first mismatch. */
#define CHECK_ELEMS(t, got, n, wantexpr, label)                              \
    do {                                                                     \
        size_t bad_ = (size_t)-1;                                            \
        double g_ = 0, w_ = 0;                                               \
        for (size_t i = 0; i < (n); i++) {                                   \
            g_ = fpref_get ((t), (got), i);                                  \
            w_ = (wantexpr);                                                 \
            if (!close_to ((t), g_, w_)) {                                   \
                bad_ = i;                                                    \
                break;                                                       \
            }                                                                \
        }                                                                    \
        if (bad_ != (size_t)-1)                                              \
            diag ("%s: element %zu is %g, want %g", (label), bad_, g_, w_);  \
        good = good && bad_ == (size_t)-1;                                   \
    } while (0)

/* The value put into every element before a collective writes it. */
#define POISON 99

/* The buffers of a collective on kind k: s with ns elements of this rank's
 * values for op, r with nr elements of POISON, both copied to where the
 * collective reads them.  Returns 0, or -1 with a diagnostic when an
 * allocation fails. */
static int pair_setup (struct buf *s, struct buf *r, ddp_dtype_t t,
                       ddp_op_t op, enum kind k, size_t ns, size_t nr,
                       const char *label)
{
    size_t es = ddp_dtype_size (t);

    if (buf_alloc (s, k, ns * es) < 0 || buf_alloc (r, k, nr * es) < 0) {
        diag ("%s: allocation failed", label);
        return -1;
    }
    for (size_t i = 0; i < ns; i++)
        fpref_put (t, s->host, i, val (t, op, i, rank));
    for (size_t i = 0; i < nr; i++)
        fpref_put (t, r->host, i, POISON);
    buf_push (s);
    buf_push (r);
    return 0;
}

static bool check_allreduce (ddp_dtype_t t, ddp_op_t op, enum kind k,
                             size_t n, bool inplace, bool stream)
{
    struct buf s, r;
    bool good = true;
    char label[128];
    int rc;

    snprintf (label, sizeof (label), "allreduce%s%s %s %s %s n=%zu",
              inplace ? " in-place" : "", stream ? " stream" : "",
              dtype_name[t], op_name[op], kind_name[k], n);
    if (pair_setup (&s, &r, t, op, k, n, n, label) < 0)
        return false;
    if (stream) {
        rc = ddp_allreduce_stream (s.p, inplace ? s.p : r.p, n, t, op, NULL);
        if (rc == 0)
            rc = ddp_stream_synchronize (NULL);
    }
    else
        rc = ddp_allreduce (s.p, inplace ? s.p : r.p, n, t, op);
    if (rc != 0) {
        diag ("%s: rc=%d (%s)", label, rc, ddp_strerror (rc));
        good = false;
    }
    else {
        struct buf *out = inplace ? &s : &r;
        buf_pull (out);
        CHECK_ELEMS (t, out->host, n, reduce_ref (t, op, i), label);
    }
    if (verbose || !good)
        diag ("%s: %s", label, good ? "ok" : "FAILED");
    buf_free (&s);
    buf_free (&r);
    return good;
}

static bool check_reduce (ddp_dtype_t t, ddp_op_t op, enum kind k, size_t n,
                          int root)
{
    struct buf s, r;
    bool good = true;
    char label[128];
    int rc;

    snprintf (label, sizeof (label), "reduce root=%d %s %s %s n=%zu", root,
              dtype_name[t], op_name[op], kind_name[k], n);
    if (pair_setup (&s, &r, t, op, k, n, n, label) < 0)
        return false;
    rc = ddp_reduce (s.p, r.p, n, t, op, root);
    if (rc != 0) {
        diag ("%s: rc=%d (%s)", label, rc, ddp_strerror (rc));
        good = false;
    }
    else {
        buf_pull (&r);
        if (rank == root)
            CHECK_ELEMS (t, r.host, n, reduce_ref (t, op, i), label);
        else
            CHECK_ELEMS (t, r.host, n, POISON, label);
    }
    buf_free (&s);
    buf_free (&r);
    return good;
}

/* Reduce-scatter of n elements per rank: this rank's block of the reduced
 * size * n elements, out of place, or in place (recvbuf = this rank's
 * block of sendbuf). */
static bool check_reduce_scatter (ddp_dtype_t t, ddp_op_t op, enum kind k,
                                  size_t n, bool inplace)
{
    size_t es = ddp_dtype_size (t), own = (size_t)rank * n;
    struct buf s, r;
    bool good = true;
    char label[128];
    int rc;

    snprintf (label, sizeof (label), "reduce_scatter%s %s %s %s n=%zu",
              inplace ? " in-place" : "", dtype_name[t], op_name[op],
              kind_name[k], n);
    if (pair_setup (&s, &r, t, op, k, n * (size_t)size, n, label) < 0)
        return false;
    rc = ddp_reduce_scatter (s.p, inplace ? (char *)s.p + own * es : r.p, n,
                             t, op);
    if (rc != 0) {
        diag ("%s: rc=%d (%s)", label, rc, ddp_strerror (rc));
        good = false;
    }
    else if (inplace) {
        buf_pull (&s);
        CHECK_ELEMS (t, (char *)s.host + own * es, n,
                     reduce_ref (t, op, own + i), label);
    }
    else {
        buf_pull (&r);
        CHECK_ELEMS (t, r.host, n, reduce_ref (t, op, own + i), label);
    }
    if (verbose || !good)
        diag ("%s: %s", label, good ? "ok" : "FAILED");
    buf_free (&s);
    buf_free (&r);
    return good;
}

static bool check_bcast (ddp_dtype_t t, enum kind k, size_t n, int root,
                         bool stream)
{
    size_t es = ddp_dtype_size (t);
    struct buf b;
    bool good = true;
    char label[128];
    int rc;

    snprintf (label, sizeof (label), "bcast%s root=%d %s %s n=%zu",
              stream ? " stream" : "", root, dtype_name[t], kind_name[k], n);
    if (buf_alloc (&b, k, n * es) < 0)
        return diag ("%s: allocation failed", label), false;
    for (size_t i = 0; i < n; i++)
        fpref_put (t, b.host, i, rank == root ? val (t, DDP_SUM, i, root) : POISON);
    buf_push (&b);
    if (stream) {
        rc = ddp_bcast_stream (b.p, n, t, root, NULL);
        if (rc == 0)
            rc = ddp_stream_synchronize (NULL);
    }
    else
        rc = ddp_bcast (b.p, n, t, root);
    if (rc != 0) {
        diag ("%s: rc=%d (%s)", label, rc, ddp_strerror (rc));
        good = false;
    }
    else {
        buf_pull (&b);
        CHECK_ELEMS (t, b.host, n, val (t, DDP_SUM, i, root), label);
    }
    buf_free (&b);
    return good;
}

/* gather (root >= 0) or allgather (root < 0). */
static bool check_gather (ddp_dtype_t t, enum kind k, size_t n, int root,
                          bool stream)
{
    size_t total = n * (size_t)size;
    struct buf s, r;
    bool good = true, gets = root < 0 || rank == root;
    char label[128];
    int rc;

    snprintf (label, sizeof (label), "%s%s %s %s n=%zu",
              root < 0 ? "allgather" : "gather", stream ? " stream" : "",
              dtype_name[t], kind_name[k], n);
    if (pair_setup (&s, &r, t, DDP_SUM, k, n, total, label) < 0)
        return false;
    if (root < 0)
        rc = stream ? ddp_allgather_stream (s.p, r.p, n, t, NULL)
                    : ddp_allgather (s.p, r.p, n, t);
    else
        rc = stream ? ddp_gather_stream (s.p, r.p, n, t, root, NULL)
                    : ddp_gather (s.p, r.p, n, t, root);
    if (rc == 0 && stream)
        rc = ddp_stream_synchronize (NULL);
    if (rc != 0) {
        diag ("%s: rc=%d (%s)", label, rc, ddp_strerror (rc));
        good = false;
    }
    else {
        buf_pull (&r);
        if (gets)
            CHECK_ELEMS (t, r.host, total, val (t, DDP_SUM, i % n,
                                                (int)(i / n)), label);
        else
            CHECK_ELEMS (t, r.host, total, POISON, label);
    }
    buf_free (&s);
    buf_free (&r);
    return good;
}

static void check_all_reductions (void)
{
    for (int t = 0; t < DDP_NUM_DTYPES; t++)
        for (int op = 0; op < DDP_NUM_OPS; op++)
            for (int k = 0; k < K_NUM && (only_op < 0 || op == only_op);
                 k++) {
                bool good = true;
                for (size_t c = 0; c < ncounts; c++) {
                    size_t n = counts[c];
                    good &= check_allreduce (t, op, k, n, false, false);
                    good &= check_allreduce (t, op, k, n, true, false);
                    good &= check_reduce (t, op, k, n, 0);
                    good &= check_reduce (t, op, k, n, size - 1);
                }
                good &= check_allreduce (t, op, k, 1031, false, true);
                ok (good, "allreduce/reduce %s %s on %s buffers",
                    dtype_name[t], op_name[op], kind_name[k]);
            }
    for (int t = 0; t < DDP_NUM_DTYPES; t++)
        for (int op = 0; op < DDP_NUM_OPS; op++)
            for (int k = 0; k < K_NUM && (only_op < 0 || op == only_op);
                 k++) {
                bool good = true;
                for (size_t c = 0; c < ncounts; c++) {
                    good &= check_reduce_scatter (t, op, k, counts[c], false);
                    good &= check_reduce_scatter (t, op, k, counts[c], true);
                }
                ok (good, "reduce_scatter %s %s on %s buffers",
                    dtype_name[t], op_name[op], kind_name[k]);
            }
}

static void check_all_moves (void)
{
    for (int t = 0; t < DDP_NUM_DTYPES; t++)
        for (int k = 0; k < K_NUM; k++) {
            bool good = true;
            for (size_t c = 0; c < ncounts; c++) {
                size_t n = counts[c];
                good &= check_bcast (t, k, n, 0, false);
                good &= check_bcast (t, k, n, size - 1, false);
                good &= check_gather (t, k, n, -1, false);
                good &= check_gather (t, k, n, 0, false);
                good &= check_gather (t, k, n, size - 1, false);
            }
            good &= check_bcast (t, k, 1031, 0, true);
            good &= check_gather (t, k, 1031, -1, true);
            good &= check_gather (t, k, 1031, 0, true);
            ok (good, "bcast/gather/allgather %s on %s buffers",
                dtype_name[t], kind_name[k]);
        }
}

/* With more than one GPU visible: memory of another GPU is refused, also
 * right after this GPU's buffers were used (libddp keeps what it learned of
 * them) and when this GPU's kept buffer is on the other side of the call. */
static void check_other_gpu (void)
{
    int ndev = 0, me = ddp_cuda_device (), rc1, rc2, rc3;
    double *mine = NULL, *other = NULL;

    if (cudaGetDeviceCount (&ndev) != cudaSuccess || ndev < 2 || me < 0)
        return;
    if (cudaMalloc ((void **)&mine, 2 * sizeof (double)) != cudaSuccess
        || cudaSetDevice ((me + 1) % ndev) != cudaSuccess
        || cudaMalloc ((void **)&other, 2 * sizeof (double)) != cudaSuccess
        || cudaSetDevice (me) != cudaSuccess) {
        ok (false, "memory on GPUs %d and %d", me, (me + 1) % ndev);
        cudaSetDevice (me);
        cudaFree (mine);
        cudaFree (other);
        return;
    }
    rc1 = ddp_allreduce (mine, mine + 1, 1, DDP_FLOAT64, DDP_SUM);
    rc2 = ddp_allreduce (other, other + 1, 1, DDP_FLOAT64, DDP_SUM);
    rc3 = ddp_allreduce_stream (mine, other, 1, DDP_FLOAT64, DDP_SUM,
                                ddp_cuda_stream ());
    ok (rc1 == 0 && rc2 == DDP_EINVAL && rc3 == DDP_EINVAL,
        "memory of GPU %d is refused (rc %d, %d), this GPU's is not (rc %d)",
        (me + 1) % ndev, rc2, rc3, rc1);
    cudaFree (mine);
    cudaFree (other);
}

/* A sum of rank + 1 over the ranks in buf (n doubles, in place) on the
 * library stream, waited for.  Returns true when every element is right. */
static bool sum_in (double *buf, size_t n)
{
    double want = (double)size * (size + 1) / 2;
    double *h = calloc (n, sizeof (double));
    bool good = h != NULL;

    for (size_t i = 0; good && i < n; i++)
        h[i] = rank + 1;
    good = good
           && cudaMemcpy (buf, h, n * sizeof (double), cudaMemcpyDefault)
                  == cudaSuccess
           && ddp_allreduce (buf, buf, n, DDP_FLOAT64, DDP_SUM) == 0
           && cudaMemcpy (h, buf, n * sizeof (double), cudaMemcpyDefault)
                  == cudaSuccess;
    for (size_t i = 0; good && i < n; i++)
        good = h[i] == want;
    free (h);
    return good;
}

/* A device buffer used (libddp keeps its range), freed, and the memory
 * allocated again as managed memory (often at the same address): the
 * results stay right.  Then one of host memory. */
static void check_reuse (void)
{
    size_t n = 4096;
    double *d = NULL, *m = NULL, *h = NULL;
    bool good;

    if (cudaMalloc ((void **)&d, n * sizeof (double)) != cudaSuccess) {
        ok (false, "cudaMalloc");
        return;
    }
    good = sum_in (d, n);
    cudaFree (d);
    if (cudaMallocManaged ((void **)&m, n * sizeof (double),
                           cudaMemAttachGlobal) != cudaSuccess) {
        ok (false, "cudaMallocManaged");
        return;
    }
    good = good && sum_in (m, n);
    ok (good, "a device buffer freed, then managed memory%s: right sums",
        m == d ? " at the same address" : "");
    cudaFree (m);
    h = malloc (n * sizeof (double));
    ok (h && sum_in (h, n), "then host memory: right sums");
    free (h);
}

static void check_misc (void)
{
    size_t used = 0, total = 0;
    double x = 1, y = 0;
    void *d = NULL;

    char info[1024];
    const char *loaded = "loaded at run time: NCCL ";

    ok (strcmp (ddp_backend_name (), "nccl") == 0, "backend is nccl (%s)",
        ddp_backend_name ());
    /* libddp dlopens CUDA and NCCL (nccl_dl.c): which files it took is
     * the line gpu-check.sh reports ("# nccl: ..."). */
    ddp_nccl_info (info, sizeof (info));
    diag ("nccl: %s", info);
    ok (strncmp (info, loaded, strlen (loaded)) == 0,
        "libddp says which NCCL and CUDA runtime it loaded");
    ok (ddp_nccl_comm () != NULL, "ddp_nccl_comm() is set");
    ok (ddp_cuda_stream () != NULL, "ddp_cuda_stream() is set");
    ok (ddp_cuda_device () >= 0, "ddp_cuda_device() = %d", ddp_cuda_device ());
    is_int (ddp_barrier (), 0, "barrier");
    ok (ddp_gpu_mem_info (&used, &total) == 0 && total > 0 && used <= total,
        "gpu_mem_info: %zu of %zu MiB in use", used >> 20, total >> 20);
    is_int (ddp_allreduce (NULL, NULL, 0, DDP_FLOAT32, DDP_SUM), 0,
            "count 0 with NULL buffers");
    is_int (ddp_allreduce_stream (&x, &y, 1, DDP_NUM_DTYPES, DDP_SUM, NULL),
            DDP_EINVAL, "stream variant: unknown dtype is EINVAL");
    is_int (ddp_allreduce_stream (&x, &y, 1, DDP_FLOAT64, DDP_NUM_OPS, NULL),
            DDP_EINVAL, "stream variant: unknown op is EINVAL");
    is_int (ddp_allreduce_stream (NULL, &y, 1, DDP_FLOAT64, DDP_SUM, NULL),
            DDP_EINVAL, "stream variant: NULL buffer is EINVAL");
    is_int (ddp_bcast_stream (&x, 1, DDP_FLOAT64, size, NULL), DDP_EINVAL,
            "stream variant: root out of range is EINVAL");
    is_int (ddp_bcast_stream (&x, 1, DDP_FLOAT64, -1, NULL), DDP_EINVAL,
            "stream variant: negative root is EINVAL");
    /* The core's checks, the size overflow included, serve both forms. */
    is_int (ddp_allreduce_stream (&x, &y, SIZE_MAX / 4, DDP_FLOAT64, DDP_SUM,
                                  NULL),
            DDP_EINVAL, "stream variant: a count whose size overflows is EINVAL");
    is_int (ddp_allgather_stream (&x, &y, SIZE_MAX / 8 / (size_t)size + 1,
                                  DDP_INT64, NULL),
            DDP_EINVAL, "stream variant: count * world size overflowing is "
            "EINVAL");
    is_int (ddp_stream_synchronize (ddp_cuda_stream ()), 0,
            "synchronize the library stream");
    /* Mixed: host send buffer, device receive buffer. */
    if (cudaMalloc (&d, sizeof (double)) == cudaSuccess) {
        x = rank + 1;
        int rc = ddp_allreduce (&x, d, 1, DDP_FLOAT64, DDP_SUM);
        cudaMemcpy (&y, d, sizeof (double), cudaMemcpyDeviceToHost);
        ok (rc == 0 && y == (double)size * (size + 1) / 2,
            "host send, device receive: rc=%d sum=%g", rc, y);
        cudaFree (d);
    }
    check_other_gpu ();
    check_reuse ();
}

/* "MAJOR.MINOR" of a CUDA version number (13000 -> "13.0"). */
static const char *cuda_version (int v, char *buf, size_t len)
{
    if (v <= 0)
        snprintf (buf, len, "unknown");
    else
        snprintf (buf, len, "%d.%d", v / 1000, v % 1000 / 10);
    return buf;
}

/* --probe with ndev >= 1 devices: what they are.  Returns 0. */
static int probe_report (int ndev)
{
    struct cudaDeviceProp prop;
    char bus[32] = "?", rt[16], drv[16];
    int vr = 0, vd = 0;

    printf ("%d GPU(s)\n", ndev);
    if (cudaGetDeviceProperties (&prop, 0) == cudaSuccess)
        printf ("device 0: %s\n", prop.name);
    else
        printf ("device 0: name unknown\n");
    if (cudaDeviceGetPCIBusId (bus, sizeof (bus), 0) == cudaSuccess)
        printf ("device 0 bus: %s\n", bus);
    (void)cudaRuntimeGetVersion (&vr);
    (void)cudaDriverGetVersion (&vd);
    (void)cudaGetLastError ();
    printf ("CUDA runtime: %s\n", cuda_version (vr, rt, sizeof (rt)));
    printf ("CUDA driver API: %s\n", cuda_version (vd, drv, sizeof (drv)));
    printf ("libddp: %s\n", ddp_version ());
    return 0;
}

/* The options after --probe.  Returns 0, or -1 after a usage message. */
static int parse_args (int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *end = NULL;

        if (strcmp (argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp (argv[i], "--quick") == 0)
            ncounts = ncounts == 1 ? 1 : 3; /* --count wins */
        else if (strcmp (argv[i], "--count") == 0 && i + 1 < argc) {
            unsigned long long n = strtoull (argv[++i], &end, 10);
            if (!*argv[i] || *end || n < 1 || n > (1u << 28)) {
                fprintf (stderr, "nccl_check: --count %s: want 1..2^28\n",
                         argv[i]);
                return -1;
            }
            counts[0] = (size_t)n;
            ncounts = 1;
        }
        else if (strcmp (argv[i], "--op") == 0 && i + 1 < argc) {
            ++i;
            for (only_op = 0; only_op < DDP_NUM_OPS; only_op++)
                if (strcmp (argv[i], op_name[only_op]) == 0)
                    break;
            if (only_op == DDP_NUM_OPS) {
                fprintf (stderr, "nccl_check: --op %s: want sum, prod, min,"
                         " max or avg\n", argv[i]);
                return -1;
            }
        }
        else {
            fprintf (stderr, "usage: nccl_check [--probe] [-v] [--quick]"
                     " [--count N] [--op sum|prod|min|max|avg]\n");
            return -1;
        }
    }
    return 0;
}

int main (int argc, char **argv)
{
    int ndev = 0, rc;
    cudaError_t e = cudaGetDeviceCount (&ndev);

    if (argc > 1 && strcmp (argv[1], "--probe") == 0) {
        if (e != cudaSuccess || ndev < 1) {
            printf ("no usable GPU: %s\n", e != cudaSuccess
                                                ? cudaGetErrorString (e)
                                                : "cudaGetDeviceCount is 0");
            return 1;
        }
        return probe_report (ndev);
    }
    if (parse_args (argc, argv) < 0)
        return 2;
    if (e != cudaSuccess || ndev < 1) {
        char why[256];
        snprintf (why, sizeof (why), "no usable GPU (%s)",
                  e != cudaSuccess ? cudaGetErrorString (e)
                                   : "cudaGetDeviceCount is 0");
        skip_all (why);
    }
    plan (NO_PLAN);
    if ((rc = ddp_init ()) != 0) {
        ok (0, "ddp_init: %d (%s)", rc, ddp_strerror (rc));
        return done_testing ();
    }
    rank = ddp_rank ();
    size = ddp_world_size ();
    diag ("rank %d of %d, CUDA device %d", rank, size, ddp_cuda_device ());
    check_misc ();
    check_all_reductions ();
    if (only_op < 0)
        check_all_moves ();
    is_int (ddp_finalize (), 0, "finalize");
    ok (ddp_nccl_comm () == NULL && ddp_cuda_stream () == NULL,
        "no communicator or stream after finalize");
    return done_testing ();
}
