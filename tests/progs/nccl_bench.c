/* nccl_bench.c - ddp collectives against raw NCCL calls in one process.
 *
 * Both sides use the same communicator and stream (ddp_nccl_comm(),
 * ddp_cuda_stream()) and device buffers, so the difference is libddp's own
 * cost: argument checks, pointer classification and the deadline-bounded
 * wait.  Two ways of timing each size:
 *   sync      one operation, then wait for it (ddp_allreduce vs
 *             ncclAllReduce + cudaStreamSynchronize), per iteration;
 *   pipelined N operations enqueued, one wait (ddp_allreduce_stream +
 *             ddp_stream_synchronize vs ncclAllReduce + one sync).
 * Prints a table (bytes, microseconds per op, ratio ddp/raw, bus bandwidth
 * with nccl-tests' definitions, from the sync time; bytes is per rank, an
 * allgather moves size times that) and checks every result.  Needs a GPU and
 * DDP_BACKEND=nccl; run alone (world size 1) or under srun with one GPU per
 * rank.  Exits 0 after a full run, 1 on an error, 77 without a GPU.
 *
 *   nccl_bench [--quick] [--max-bytes N]
 *   nccl_bench --avg-probe [--quick]
 *   nccl_bench --calls N
 *
 * --avg-probe, instead of timing: does an out-of-place average (ncclAvg,
 * DDP_AVG) write every element of the receive buffer?  NCCL 2.28.3 left
 * the last ones unwritten (doc/nccl.md).  For float16, bfloat16, float32
 * and float64, allreduce and reduce (root 0), 1048579 and 4194307 elements
 * (--quick: 1048579), raw NCCL and then libddp, on a receive buffer filled
 * with 0xff bytes; one line each ("N unwritten from I" or "all written").
 * Exits 1 when libddp left an element unwritten; raw NCCL's are reported
 * only (libddp's workaround is what is checked).
 *
 * --calls N, instead of timing: N pipelined calls each of
 * ddp_allreduce_stream, ddp_bcast_stream and ddp_allgather_stream on the
 * same 8-byte device buffers, one ddp_stream_synchronize, the results
 * checked; prints "calls: N of each, ok" (or what failed) and the time per
 * call.  On the stand-in (MOCK_CUDA_COUNTS=1) this shows how many pointer
 * queries libddp's buffer checks make (t0402).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "ddp.h"

static int rank, size, quick;

static double now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int iters_for (size_t bytes)
{
    int n = bytes <= 65536 ? 2000 : bytes <= (1 << 22) ? 200 : 40;
    return quick ? (n / 20 > 2 ? n / 20 : 2) : n;
}

enum which { ALLREDUCE, BCAST, ALLGATHER, NWHICH };
static const char *which_name[NWHICH] = {"allreduce", "bcast", "allgather"};

/* Bus bandwidth factor of nccl-tests. */
static double busbw_factor (enum which w)
{
    if (w == ALLREDUCE)
        return size > 1 ? 2.0 * (size - 1) / size : 1.0;
    if (w == ALLGATHER)
        return size > 1 ? (double)(size - 1) / size : 1.0;
    return 1.0;
}

static int raw_op (enum which w, float *s, float *r, size_t n, ncclComm_t c,
                   cudaStream_t st)
{
    ncclResult_t x = ncclSuccess;
    if (w == ALLREDUCE)
        x = ncclAllReduce (s, r, n, ncclFloat32, ncclSum, c, st);
    else if (w == BCAST)
        x = ncclBroadcast (s, s, n, ncclFloat32, 0, c, st);
    else
        x = ncclAllGather (s, r, n, ncclFloat32, c, st);
    /* A non-blocking communicator may answer ncclInProgress. */
    while (x == ncclInProgress)
        ncclCommGetAsyncError (c, &x);
    return x == ncclSuccess ? 0 : -1;
}

static int ddp_op (enum which w, float *s, float *r, size_t n, bool stream)
{
    if (w == ALLREDUCE)
        return stream ? ddp_allreduce_stream (s, r, n, DDP_FLOAT32, DDP_SUM,
                                              ddp_cuda_stream ())
                      : ddp_allreduce (s, r, n, DDP_FLOAT32, DDP_SUM);
    if (w == BCAST)
        return stream ? ddp_bcast_stream (s, n, DDP_FLOAT32, 0,
                                          ddp_cuda_stream ())
                      : ddp_bcast (s, n, DDP_FLOAT32, 0);
    return stream ? ddp_allgather_stream (s, r, n, DDP_FLOAT32,
                                          ddp_cuda_stream ())
                  : ddp_allgather (s, r, n, DDP_FLOAT32);
}

/* Seconds per operation; sync: wait after each, else once at the end. */
static double time_raw (enum which w, float *s, float *r, size_t n, int it,
                        bool sync)
{
    ncclComm_t c = ddp_nccl_comm ();
    cudaStream_t st = ddp_cuda_stream ();
    double t0;

    for (int i = 0; i < 3; i++)
        raw_op (w, s, r, n, c, st);
    cudaStreamSynchronize (st);
    ddp_barrier ();
    t0 = now ();
    for (int i = 0; i < it; i++) {
        if (raw_op (w, s, r, n, c, st) < 0)
            return -1;
        if (sync)
            cudaStreamSynchronize (st);
    }
    cudaStreamSynchronize (st);
    return (now () - t0) / it;
}

static double time_ddp (enum which w, float *s, float *r, size_t n, int it,
                        bool sync)
{
    double t0;

    for (int i = 0; i < 3; i++)
        ddp_op (w, s, r, n, false);
    ddp_barrier ();
    t0 = now ();
    for (int i = 0; i < it; i++)
        if (ddp_op (w, s, r, n, !sync) < 0)
            return -1;
    if (!sync && ddp_stream_synchronize (ddp_cuda_stream ()) < 0)
        return -1;
    return (now () - t0) / it;
}

/* Fill s with rank+1, run once through ddp, check the result on the host. */
static bool verify (enum which w, float *s, float *r, size_t n, float *h)
{
    size_t total = w == ALLGATHER ? n * (size_t)size : n;
    float want;

    for (size_t i = 0; i < n; i++)
        h[i] = (float)(rank + 1);
    cudaMemcpy (s, h, n * sizeof (float), cudaMemcpyHostToDevice);
    if (ddp_op (w, s, r, n, false) < 0)
        return false;
    cudaMemcpy (h, w == BCAST ? s : r, total * sizeof (float),
                cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < total; i++) {
        want = w == ALLREDUCE ? (float)size * (size + 1) / 2
               : w == BCAST   ? 1.0f
                              : (float)(i / n + 1);
        if (h[i] != want)
            return false;
    }
    return true;
}

/* ---- --avg-probe ---------------------------------------------------- */

static const struct {
    const char *name;
    ncclDataType_t nccl;
    ddp_dtype_t ddp;
    size_t size;
} probe_types[] = {
    {"float16", ncclFloat16, DDP_FLOAT16, 2},
    {"bfloat16", ncclBfloat16, DDP_BFLOAT16, 2},
    {"float32", ncclFloat32, DDP_FLOAT32, 4},
    {"float64", ncclFloat64, DDP_FLOAT64, 8},
};
static const size_t probe_counts[] = {(1u << 20) + 3, (1u << 22) + 3};

/* One out-of-place average of n elements of type ti from s into r (filled
 * with 0xff first), raw or through libddp; reduce: to root 0.  Returns the
 * number of elements of r still all 0xff bytes (on a reduce's root or an
 * allreduce; 0 elsewhere) and their first index in *first, or -1 when a
 * call failed. */
static long probe_one (int ti, bool reduce, bool raw, size_t n, char *s,
                       char *r, unsigned char *h, size_t *first)
{
    size_t es = probe_types[ti].size, bytes = n * es;
    ncclComm_t c = ddp_nccl_comm ();
    cudaStream_t st = ddp_cuda_stream ();
    ncclResult_t x = ncclSuccess;
    long left = 0;
    int rc = 0;

    if (cudaMemset (s, 0x3c, bytes) != cudaSuccess /* finite in each type */
        || cudaMemset (r, 0xff, bytes) != cudaSuccess)
        return -1;
    if (raw) {
        x = reduce ? ncclReduce (s, r, n, probe_types[ti].nccl, ncclAvg, 0, c,
                                 st)
                   : ncclAllReduce (s, r, n, probe_types[ti].nccl, ncclAvg, c,
                                    st);
        while (x == ncclInProgress)
            ncclCommGetAsyncError (c, &x);
        if (x != ncclSuccess || cudaStreamSynchronize (st) != cudaSuccess)
            return -1;
    }
    else {
        rc = reduce ? ddp_reduce (s, r, n, probe_types[ti].ddp, DDP_AVG, 0)
                    : ddp_allreduce (s, r, n, probe_types[ti].ddp, DDP_AVG);
        if (rc < 0)
            return -1;
    }
    if (reduce && rank != 0)
        return 0;
    if (cudaMemcpy (h, r, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < es && h[i * es + j] == 0xff)
            j++;
        if (j == es && left++ == 0)
            *first = i;
    }
    return left;
}

static void probe_line (bool raw, bool reduce, int ti, size_t n, long left,
                        size_t first)
{
    char what[64];

    if (left < 0)
        snprintf (what, sizeof (what), "call failed");
    else if (left == 0)
        snprintf (what, sizeof (what), "all written");
    else
        snprintf (what, sizeof (what), "%ld unwritten from %zu", left, first);
    printf ("  avg-probe %-3s %-9s %-8s n=%-7zu rank %d: %s\n",
            raw ? "raw" : "ddp", reduce ? "reduce" : "allreduce",
            probe_types[ti].name, n, rank, what);
}

/* Every case of --avg-probe.  Returns 0 when libddp wrote every element,
 * 1 otherwise (or on an error). */
static int avg_probe (void)
{
    size_t nc = quick ? 1 : sizeof (probe_counts) / sizeof (probe_counts[0]);
    size_t maxb = probe_counts[nc - 1] * 8;
    char *s = NULL, *r = NULL;
    unsigned char *h = malloc (maxb);
    int cases = 0, raw_bad = 0, ddp_bad = 0, failed = 0;

    if (rank == 0) {
        int v = 0;
        ncclGetVersion (&v);
        printf ("# avg-probe: %d rank(s), NCCL %d\n", size, v);
    }
    if (!h || cudaMalloc ((void **)&s, maxb) != cudaSuccess
        || cudaMalloc ((void **)&r, maxb) != cudaSuccess) {
        fprintf (stderr, "nccl_bench: --avg-probe: out of memory\n");
        failed = 1;
        goto out;
    }
    for (size_t ci = 0; ci < nc; ci++)
        for (int ti = 0; ti < 4; ti++)
            for (int red = 0; red < 2; red++)
                for (int raw = 1; raw >= 0; raw--) {
                    size_t first = 0;
                    long left = probe_one (ti, red, raw, probe_counts[ci], s,
                                           r, h, &first);
                    cases += raw;
                    if (left < 0)
                        failed = 1;
                    else if (left > 0)
                        (raw ? raw_bad++ : ddp_bad++);
                    if (left != 0 || rank == 0)
                        probe_line (raw, red, ti, probe_counts[ci], left,
                                    first);
                }
    printf ("# avg-probe rank %d: raw NCCL left elements unwritten in %d of"
            " %d cases, libddp in %d of %d%s\n", rank, raw_bad, cases,
            ddp_bad, cases, failed ? "; a call failed" : "");
out:
    cudaFree (s);
    cudaFree (r);
    free (h);
    return failed || ddp_bad ? 1 : 0;
}

/* ---- --calls ---------------------------------------------------------- */

/* n pipelined calls of each stream collective on the same device buffers
 * (2 floats: one element each, the allgather's receive buffer size of
 * them).  Returns 0 when every call and the result were right, else 1. */
static int calls (long n)
{
    float *s = NULL, *r = NULL, h[2] = {0, 0};
    void *st = ddp_cuda_stream ();
    double t0;
    long i;
    int rc = 0, failed = 1;

    if (cudaMalloc ((void **)&s, 2 * sizeof (float)) != cudaSuccess
        || cudaMalloc ((void **)&r, 2 * sizeof (float) * (size_t)size)
               != cudaSuccess) {
        fprintf (stderr, "nccl_bench: --calls: out of memory\n");
        goto out;
    }
    h[0] = 1.0f;
    cudaMemcpy (s, h, sizeof (float), cudaMemcpyHostToDevice);
    t0 = now ();
    for (i = 0; i < n && rc == 0; i++)
        if ((rc = ddp_allreduce_stream (s, r, 1, DDP_FLOAT32, DDP_SUM, st))
                == 0
            && (rc = ddp_bcast_stream (s, 1, DDP_FLOAT32, 0, st)) == 0)
            rc = ddp_allgather_stream (s, r, 1, DDP_FLOAT32, st);
    if (rc == 0)
        rc = ddp_stream_synchronize (st);
    if (rc < 0) {
        printf ("calls: call %ld failed: %d (%s)\n", i, rc,
                ddp_strerror (rc));
        goto out;
    }
    cudaMemcpy (h, r, sizeof (float), cudaMemcpyDeviceToHost);
    if (h[0] != 1.0f) {
        printf ("calls: wrong result %g, want 1\n", (double)h[0]);
        goto out;
    }
    printf ("calls: %ld of each, ok, %.3f us per call\n", n,
            (now () - t0) / (3.0 * (double)n) * 1e6);
    failed = 0;
out:
    cudaFree (s);
    cudaFree (r);
    return failed;
}

int main (int argc, char **argv)
{
    size_t max_bytes = 64u << 20;
    long ncalls = 0;
    bool probe = false;
    float *s = NULL, *r = NULL, *h = NULL;
    int ndev = 0, rc;
    double t0, tinit;

    for (int i = 1; i < argc; i++) {
        if (strcmp (argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp (argv[i], "--max-bytes") == 0 && i + 1 < argc)
            max_bytes = strtoull (argv[++i], NULL, 10);
        else if (strcmp (argv[i], "--avg-probe") == 0)
            probe = true;
        else if (strcmp (argv[i], "--calls") == 0 && i + 1 < argc
                 && (ncalls = strtol (argv[++i], NULL, 10)) > 0)
            ;
        else {
            fprintf (stderr, "usage: nccl_bench [--quick] [--max-bytes N]"
                     " [--avg-probe] [--calls N]\n");
            return 2;
        }
    }
    if (cudaGetDeviceCount (&ndev) != cudaSuccess || ndev < 1) {
        printf ("nccl_bench: skipped: no usable GPU\n");
        return 77;
    }
    t0 = now ();
    if ((rc = ddp_init ()) < 0) {
        fprintf (stderr, "nccl_bench: ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    tinit = now () - t0;
    rank = ddp_rank ();
    size = ddp_world_size ();
    if (!ddp_nccl_comm ()) {
        fprintf (stderr, "nccl_bench: backend is %s, set DDP_BACKEND=nccl\n",
                 ddp_backend_name ());
        return 1;
    }
    if (probe || ncalls > 0) {
        rc = probe ? avg_probe () : calls (ncalls);
        return ddp_finalize () < 0 ? 1 : rc;
    }
    if (cudaMalloc ((void **)&s, max_bytes) != cudaSuccess
        || cudaMalloc ((void **)&r, max_bytes * (size_t)size) != cudaSuccess
        || !(h = malloc (max_bytes * (size_t)size))) {
        fprintf (stderr, "nccl_bench: out of memory\n");
        return 1;
    }
    if (rank == 0) {
        int v = 0;
        ncclGetVersion (&v);
        printf ("# nccl_bench: %d rank(s), NCCL %d, ddp_init %.3f s%s\n",
                size, v, tinit, quick ? ", quick" : "");
        printf ("# %-9s %10s %6s %10s %10s %7s %10s %10s %7s %9s\n", "op",
                "bytes", "iters", "raw_us", "ddp_us", "ratio", "rawpipe_us",
                "ddppipe_us", "ratio", "busbw_GBs");
    }
    for (int w = 0; w < NWHICH; w++)
        for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
            size_t n = bytes / sizeof (float);
            int it = iters_for (bytes);
            double traw, tddp, praw, pddp;

            if (!verify (w, s, r, n, h)) {
                fprintf (stderr, "nccl_bench: %s of %zu bytes: wrong result\n",
                         which_name[w], bytes);
                return 1;
            }
            traw = time_raw (w, s, r, n, it, true);
            tddp = time_ddp (w, s, r, n, it, true);
            praw = time_raw (w, s, r, n, it, false);
            pddp = time_ddp (w, s, r, n, it, false);
            if (traw < 0 || tddp < 0 || praw < 0 || pddp < 0) {
                fprintf (stderr, "nccl_bench: %s failed\n", which_name[w]);
                return 1;
            }
            if (rank == 0)
                printf ("  %-9s %10zu %6d %10.2f %10.2f %7.3f %10.2f %10.2f"
                        " %7.3f %9.2f\n", which_name[w], bytes, it,
                        traw * 1e6, tddp * 1e6, tddp / traw, praw * 1e6,
                        pddp * 1e6, pddp / praw,
                        (double)bytes * (w == ALLGATHER ? size : 1) / tddp
                            * busbw_factor (w) / 1e9);
        }
    cudaFree (s);
    cudaFree (r);
    free (h);
    rc = ddp_finalize ();
    return rc < 0 ? 1 : 0;
}
