/* bench.c - the measurement loop shared by ddp-bench and mpi-bench.
 *
 * What is timed, and how:
 *  - init: the implementation's init call (ddp_init / MPI_Init), on every
 *    rank, from just before the call to its return.  Reported: the slowest
 *    rank (time to "everyone ready"), the median and the fastest rank.  When
 *    the fence counter (ddp-bench-fences.so, LD_PRELOAD) is loaded, the
 *    number of PMIx fences the init made is reported too.
 *  - memory: VmRSS before and after init, after 1000 warm-up 8-byte
 *    allreduces, and after --mem more (default 100000); the largest value
 *    over the ranks is reported.
 *  - settle: after init every rank sleeps --settle ms (default 500), then a
 *    barrier, so that the timed calls start once the launch is done with
 *    the CPUs (settle() below says what it cost without).
 *  - barrier and bcast / allreduce / allgather / gather over sizes: each call
 *    is timed on its own (clock_gettime, ~25 ns here) after warm-up calls;
 *    calls follow each other with nothing in between but the (untimed)
 *    check writes.  Per rank the median and mean over the iterations are
 *    taken; the table shows the slowest rank's (the max over ranks).  With
 *    --time, one reduction between the warm-up and the timed calls agrees
 *    on fewer iterations when the warm-up calls were slow.
 *  - bytes: the size of the buffer for bcast and (group_)allreduce; the
 *    size of the whole receive buffer (nranks * per-rank) for allgather and
 *    gather, and of the whole send buffer for reduce_scatter, as nccl-tests
 *    does.  algbw = bytes / time; busbw = algbw * 2(n-1)/n for allreduce,
 *    (n-1)/n for allgather, gather and reduce_scatter, 1 for bcast
 *    (nccl-tests); group_allreduce: 2(g-1)/g for its groups of g.  GB/s
 *    are 1e9 bytes per second.
 *  - overlap: run_overlap() below.
 *  - traffic: when the implementation counts the bytes it sends to other
 *    nodes (bench_impl_bytes_sent), the busiest rank's bytes per call.
 *  - checks: check.h; every --check-every'th timed call (default: every
 *    call) is checked, and one untimed call before them in full.
 * The tables: report.h.
 */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "check.h"
#include "opts.h"
#include "report.h"

struct ctx {
    struct bench_opts o;
    struct report rep;
    struct check chk;
    char prog[32];      /* "ddp-bench" */
    double *samples;
    bool failed;
};

static double now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Resident set size of this process in bytes, or -1. */
static long rss_bytes (void)
{
    FILE *f = fopen ("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    if (!f)
        return -1;
    while (fgets (line, sizeof (line), f)) {
        if (strncmp (line, "VmRSS:", 6) == 0) {
            kib = strtol (line + 6, NULL, 10);
            break;
        }
    }
    fclose (f);
    return kib < 0 ? -1 : kib * 1024;
}

/* PMIx fences made so far, from the LD_PRELOADed counter, or -1. */
static long pmix_fences (void)
{
    long (*fn) (void);

    *(void **)&fn = dlsym (RTLD_DEFAULT, "ddp_bench_pmix_fences");
    return fn ? fn () : -1;
}

/* A time (us) from the LD_PRELOADed counter (its function name), or -1. */
static double pmix_time (const char *name)
{
    double (*fn) (void);

    *(void **)&fn = dlsym (RTLD_DEFAULT, name);
    return fn ? fn () : -1;
}

/* Die on a failed call: say what failed on stderr and end the job. */
static void fail_call (struct ctx *c, const char *what, size_t bytes, int rc)
{
    char msg[256];

    snprintf (msg, sizeof (msg), "%s: rank %d: %s (%zu bytes) failed: %s",
              c->prog, c->chk.rank, what, bytes, bench_impl_strerror (rc));
    fprintf (stderr, "%s\n", msg);
    bench_impl_abort (1, msg);
    exit (1);
}

/* Die on a local failure (no implementation error code). */
static void fail_local (struct ctx *c, const char *what)
{
    char msg[256];

    snprintf (msg, sizeof (msg), "%s: rank %d: %s failed", c->prog,
              c->chk.rank, what);
    fprintf (stderr, "%s\n", msg);
    bench_impl_abort (1, msg);
    exit (1);
}

/* Element-wise max of v[0..n-1] over ranks; dies if it fails (what: for
 * the message). */
static void max_over_ranks (struct ctx *c, double *v, size_t n,
                            const char *what, size_t bytes)
{
    int rc;

    if ((rc = bench_impl_max_f64 (v, n)) != 0)
        fail_call (c, what, bytes, rc);
}

/* Reduce per-rank statistics to the slowest rank's (errors: the worst
 * rank's count; sent: the busiest rank's). */
static void reduce_result (struct ctx *c, struct result *r, size_t bytes)
{
    double v[5] = { r->median_us, r->mean_us, -r->min_us, (double)r->errors,
                    r->sent };

    max_over_ranks (c, v, 5, "statistics reduction after", bytes);
    r->median_us = v[0];
    r->mean_us = v[1];
    r->min_us = -v[2];
    r->errors = (long)v[3];
    r->sent = v[4];
}

/* ---- the loops --------------------------------------------------------- */

/* Whether op k's size is nranks blocks of count elements (the whole
 * receive buffer of a gather, the whole send buffer of a reduce-scatter). */
static bool blocks (enum bench_op k)
{
    return k == BENCH_ALLGATHER || k == BENCH_GATHER
           || k == BENCH_REDUCE_SCATTER;
}

/* Start a nonblocking allreduce and wait for it, with nothing between. */
static int iallreduce (const float *send, float *recv, size_t count)
{
    int rc = bench_impl_iallreduce_start (send, recv, count);

    return rc != 0 ? rc : bench_impl_iallreduce_wait ();
}

/* One call of op k (BENCH_NOPS: barrier) on count elements per rank
 * (overlap: its nonblocking allreduce, without the compute). */
static int call (struct ctx *c, enum bench_op k, size_t count)
{
    float *send = c->chk.send, *recv = c->chk.recv;

    switch (k) {
        case BENCH_BCAST: return bench_impl_bcast (send, count);
        case BENCH_ALLREDUCE: return bench_impl_allreduce (send, recv, count);
        case BENCH_ALLGATHER: return bench_impl_allgather (send, recv, count);
        case BENCH_GATHER: return bench_impl_gather (send, recv, count);
        case BENCH_REDUCE_SCATTER:
            return bench_impl_reduce_scatter (send, recv, count);
        case BENCH_GROUP_ALLREDUCE:
            return bench_impl_group_allreduce (send, recv, count);
        case BENCH_OVERLAP: return iallreduce (send, recv, count);
        default: return bench_impl_barrier ();
    }
}

/* Timed iterations for a size: the byte budget's, within the bounds. */
static int iters_for (const struct bench_opts *o, size_t bytes)
{
    size_t n = bytes ? o->budget / bytes : (size_t)o->iters;

    if (n > (size_t)o->iters)
        n = (size_t)o->iters;
    if (n < (size_t)o->min_iters)
        n = (size_t)o->min_iters;
    return (int)n;
}

static int warmup_for (const struct bench_opts *o, int iters)
{
    int w = iters / 10;

    if (w < 2)
        w = 2;
    if (w > o->warmup)
        w = (int)o->warmup;
    return w;
}

/* --time: the iterations that fit in the limit at the slowest rank's
 * warm-up pace (warm calls took warm_us here), within the bounds. */
static int iters_in_time (struct ctx *c, int iters, int warm, double warm_us,
                          size_t bytes)
{
    double pace = warm_us / warm, n;

    max_over_ranks (c, &pace, 1, "statistics reduction (--time)", bytes);
    n = pace > 0 ? c->o.time_limit * 1e6 / pace : iters;
    if (n < iters)
        iters = (int)n;
    if (iters < c->o.min_iters)
        iters = (int)c->o.min_iters;
    return iters;
}

/* One call of op k in iteration it (< 0: warm-up): checked when it is a
 * checked round; returns the call's time (us), adds wrong elements to r. */
static double one_call (struct ctx *c, enum bench_op k, size_t count,
                        size_t bytes, int it, struct result *r)
{
    bool sampled = k != BENCH_NOPS && c->o.check_every && it >= 0
                   && it % c->o.check_every == 0;
    size_t pos[CHECK_NPOS];
    double t0, t1;
    int rc;

    if (sampled) {
        check_positions (count, it, pos);
        check_sample_prepare (&c->chk, k, count, it + 1, pos);
    }
    t0 = now_us ();
    rc = call (c, k, count);
    t1 = now_us ();
    if (rc != 0)
        fail_call (c, bench_op_name (k), bytes, rc);
    if (sampled) {
        if (c->o.inject)
            check_inject (&c->chk, k);
        r->errors += check_sample (&c->chk, k, count, it + 1, pos);
    }
    return t1 - t0;
}

/* One untimed call of op k with every element checked. */
static void full_call (struct ctx *c, enum bench_op k, size_t count,
                       size_t bytes, struct result *r)
{
    int rc;

    check_full_prepare (&c->chk, k, count);
    if ((rc = call (c, k, count)) != 0)
        fail_call (c, bench_op_name (k), bytes, rc);
    if (c->o.inject)
        check_inject (&c->chk, k);
    r->errors += check_full (&c->chk, k, count);
}

/* A rank alone's calls are timed in batches of at least this many us:
 * this machine's clock reads in steps of 10 ns and costs 20-30 ns a read,
 * as much as a lone rank's 8-byte call (a batch's time / its calls is
 * one sample). */
#define BATCH_US 2.0

/* Does every rank run op k on a communicator of its own alone (the world
 * of one, or the halves of group_allreduce on 2 ranks)?  No other rank
 * waits on its calls, so a batch times what one call costs. */
static bool alone (const struct ctx *c, enum bench_op k)
{
    return c->chk.size == 1 || (k == BENCH_GROUP_ALLREDUCE && c->chk.size <= 2);
}

/* iters timed calls of op k in batches of the calls that take BATCH_US
 * at warm-up's pace (warm_us a call): one sample a batch into c->samples
 * (returns their number), each batch after one untimed call that is
 * checked as one_call checks (sampled). */
static int run_batches (struct ctx *c, enum bench_op k, size_t count,
                        size_t bytes, int iters, double warm_us,
                        struct result *r, long *calls)
{
    int batch = warm_us > 0 ? (int)(BATCH_US / warm_us) + 1 : 1, n = 0;

    if (batch > iters)
        batch = iters;
    for (int it = 0; it + batch <= iters; it += batch) {
        double t0;
        int rc = 0;

        one_call (c, k, count, bytes, it, r);
        t0 = now_us ();
        for (int j = 0; j < batch && rc == 0; j++)
            rc = call (c, k, count);
        c->samples[n++] = (now_us () - t0) / batch;
        if (rc != 0)
            fail_call (c, bench_op_name (k), bytes, rc);
        *calls += batch + 1;
    }
    return n;
}

/* Measure op k (BENCH_NOPS: barrier) at bytes and report it. */
static void run (struct ctx *c, enum bench_op k, size_t bytes)
{
    int n = c->chk.size;
    size_t count = bytes / sizeof (float) / (size_t)(blocks (k) ? n : 1);
    int iters = iters_for (&c->o, bytes), warm = warmup_for (&c->o, iters);
    double sent0 = bench_impl_bytes_sent (), skip = 0, t0, warm_us;
    struct result r = { 0 };
    long calls = 0;
    int samples = iters;

    if (k != BENCH_NOPS && count == 0)
        return;                 /* smaller than one element per rank */
    if (blocks (k))
        bytes = count * sizeof (float) * (size_t)n;
    if (k != BENCH_NOPS && c->o.check_every) {
        full_call (c, k, count, bytes, &r);
        calls++;
    }
    t0 = now_us ();
    for (int it = -warm; it < 0; it++)
        one_call (c, k, count, bytes, it, &r);
    warm_us = (now_us () - t0) / (warm > 0 ? warm : 1);
    if (c->o.time_limit > 0 && warm > 0) {
        double s = bench_impl_bytes_sent ();
        iters = iters_in_time (c, iters, warm, warm_us * warm, bytes);
        skip = bench_impl_bytes_sent () - s;   /* the reduction's own */
    }
    calls += warm;
    if (alone (c, k))
        samples = run_batches (c, k, count, bytes, iters, warm_us, &r, &calls);
    else {
        for (int it = 0; it < iters; it++)
            c->samples[it] = one_call (c, k, count, bytes, it, &r);
        calls += iters;
        samples = iters;
    }
    r.sent = sent0 < 0 ? -1 : (bench_impl_bytes_sent () - sent0 - skip) / calls;
    r.sent_calls = calls;
    report_summarize (c->samples, samples, &r);
    reduce_result (c, &r, bytes);
    if (r.errors)
        c->failed = true;
    report_row (&c->rep, k, bytes, count, &r);
}

/* ---- overlap: a nonblocking allreduce hidden behind compute ----------- */

/* The compute loop: units x 64 independent multiply-adds on an array in
 * L1, so that it needs the CPU and not the memory the collective moves. */
static volatile float compute_sink;

static void compute (long units)
{
    float a[64];

    for (int i = 0; i < 64; i++)
        a[i] = (float)i;
    for (long u = 0; u < units; u++)
        for (int i = 0; i < 64; i++)
            a[i] = a[i] * 0.999f + 0.001f;
    compute_sink = a[0] + a[63];
}

/* The units of compute that take target_us on the slowest rank: the
 * loop's pace is measured here (doubling the units until a run takes a
 * millisecond or a tenth of the target, then the fastest of three runs of
 * that many, so that a rank descheduled once does not count), the slowest
 * rank's taken, so every rank does the same work.  At least 1. */
static long calibrate (struct ctx *c, double target_us, size_t bytes)
{
    double pace, t0, t = 0, enough = target_us / 10;
    long units = 256, w;

    if (enough < 1000)
        enough = 1000;
    for (;;) {
        t0 = now_us ();
        compute (units);
        t = now_us () - t0;
        if (t >= enough || units > (1L << 40))
            break;
        units *= 2;
    }
    for (int i = 0; i < 3; i++) {
        t0 = now_us ();
        compute (units);
        t0 = now_us () - t0;
        if (t0 < t)
            t = t0;
    }
    pace = t / (double)units;
    max_over_ranks (c, &pace, 1, "statistics reduction (overlap)", bytes);
    w = pace > 0 ? (long)(target_us / pace) : 1;
    return w < 1 ? 1 : w;
}

/* What one timed round of overlap does. */
enum overlap_mode {
    OV_COMPUTE,         /* the compute loop alone */
    OV_SEQ,             /* the blocking allreduce, then the loop */
    OV_OVERLAP,         /* start the iallreduce, the loop, wait */
};

/* One round in mode m on count elements, units of compute, iteration it
 * (< 0: warm-up): checked as one_call() checks (not the compute alone);
 * returns its time (us), adds wrong elements to r. */
static double overlap_call (struct ctx *c, enum overlap_mode m, size_t count,
                            long units, size_t bytes, int it,
                            struct result *r)
{
    bool sampled = m != OV_COMPUTE && c->o.check_every && it >= 0
                   && it % c->o.check_every == 0;
    float *send = c->chk.send, *recv = c->chk.recv;
    size_t pos[CHECK_NPOS];
    double t0, t1;
    int rc = 0;

    if (sampled) {
        check_positions (count, it, pos);
        check_sample_prepare (&c->chk, BENCH_OVERLAP, count, it + 1, pos);
    }
    t0 = now_us ();
    if (m == OV_SEQ)
        rc = bench_impl_allreduce (send, recv, count);
    else if (m == OV_OVERLAP)
        rc = bench_impl_iallreduce_start (send, recv, count);
    if (rc == 0)
        compute (units);
    if (rc == 0 && m == OV_OVERLAP)
        rc = bench_impl_iallreduce_wait ();
    t1 = now_us ();
    if (rc != 0)
        fail_call (c, m == OV_SEQ ? "allreduce (overlap)" : "overlap", bytes,
                   rc);
    if (sampled) {
        if (c->o.inject)
            check_inject (&c->chk, BENCH_OVERLAP);
        r->errors += check_sample (&c->chk, BENCH_OVERLAP, count, it + 1, pos);
    }
    return t1 - t0;
}

/* The slowest rank's statistics of n samples of one series. */
static void summarize (struct ctx *c, double *samples, int n,
                       struct result *r, size_t bytes)
{
    report_summarize (samples, n, r);
    r->sent = -1;
    reduce_result (c, r, bytes);
}

/* overlap at bytes: (1) the blocking allreduce timed as its own rows are;
 * (2) the compute loop calibrated to take as long (slowest rank); (3)
 * rounds of the loop alone, the allreduce then the loop, and the
 * iallreduce with the loop inside it, each timed, one after the other so
 * that drift hits all three alike.  The hidden share of the allreduce is
 * (sequential - overlapped) / allreduce (report_overlap). */
static void run_overlap (struct ctx *c, size_t bytes)
{
    size_t count = bytes / sizeof (float);
    int iters = iters_for (&c->o, bytes), warm = warmup_for (&c->o, iters);
    struct result comm = { 0 }, comp = { 0 }, seq = { 0 }, ovl = { 0 };
    double *sm[3], t0;
    long units;

    if (count == 0)
        return;
    bytes = count * sizeof (float);
    if (c->o.check_every)
        full_call (c, BENCH_OVERLAP, count, bytes, &ovl);
    /* (1) */
    t0 = now_us ();
    for (int it = -warm; it < 0; it++)
        one_call (c, BENCH_ALLREDUCE, count, bytes, it, &comm);
    if (c->o.time_limit > 0 && warm > 0)
        iters = iters_in_time (c, iters, warm, (now_us () - t0) * 5, bytes);
    for (int it = 0; it < iters; it++)
        c->samples[it] = one_call (c, BENCH_ALLREDUCE, count, bytes, it, &comm);
    summarize (c, c->samples, iters, &comm, bytes);
    /* (2) */
    units = calibrate (c, comm.median_us, bytes);
    /* (3) */
    for (int m = 0; m < 3; m++)
        if (!(sm[m] = calloc ((size_t)iters, sizeof (double))))
            fail_local (c, "calloc (overlap)");
    for (int it = -warm; it < iters; it++)
        for (int m = 0; m < 3; m++) {
            double us = overlap_call (c, (enum overlap_mode)m, count, units,
                                      bytes, it, m == OV_SEQ ? &seq : &ovl);
            if (it >= 0)
                sm[m][it] = us;
        }
    summarize (c, sm[OV_COMPUTE], iters, &comp, bytes);
    summarize (c, sm[OV_SEQ], iters, &seq, bytes);
    summarize (c, sm[OV_OVERLAP], iters, &ovl, bytes);
    for (int m = 0; m < 3; m++)
        free (sm[m]);
    if (comm.errors || seq.errors || ovl.errors)
        c->failed = true;
    report_overlap (&c->rep, bytes, count, &(struct overlap_stats){
        .comm = comm, .compute = comp, .seq = seq, .overlap = ovl,
        .units = units });
}

/* 8-byte allreduces: warm-up, then RSS growth over c->o.mem more, each
 * result checked. */
static void run_mem (struct ctx *c, long rss_before, long rss_after_init)
{
    const char *what = "allreduce (memory check)";
    struct check *k = &c->chk;
    float s[2], r[2];
    long errors = 0, base = -1, after;
    double v[4];
    int rc;

    for (long i = 0; i < 1000 + c->o.mem; i++) {
        int tag = (int)(i % 1000);
        if (i == 1000)
            base = rss_bytes ();
        s[0] = check_val (k->rank, 0, tag);
        s[1] = check_val (k->rank, 1, tag);
        r[0] = r[1] = -1;
        if ((rc = bench_impl_allreduce (s, r, 2)) != 0)
            fail_call (c, what, 8, rc);
        for (int j = 0; j < 2; j++) {
            float want = 0;
            for (int q = 0; q < k->size; q++)
                want += check_val (q, (size_t)j, tag);
            if (r[j] != want)
                errors += check_mismatch (k, what, (size_t)j, r[j], want);
        }
    }
    after = rss_bytes ();
    if (c->o.mem == 0)
        base = after;
    v[0] = (double)(rss_after_init - rss_before);
    v[1] = (double)base;
    v[2] = (double)(after - base);
    v[3] = (double)errors;
    max_over_ranks (c, v, 4, "statistics reduction (memory)", 0);
    if (v[3] > 0)
        c->failed = true;
    report_mem (&c->rep, &(struct mem_stats){ .init_added = v[0],
        .base = v[1], .growth = v[2], .count = c->o.mem, .errors = (long)v[3] });
}

/* Init statistics: every rank's time reaches rank 0 through one
 * max-reduction of one-hot vectors, with the fence counter's numbers. */
static void run_init_stats (struct ctx *c, double init_us,
                            struct init_stats *s)
{
    int n = c->chk.size;
    double *v = calloc ((size_t)n + 3, sizeof (double));

    if (!v)
        fail_local (c, "calloc (init statistics)");
    v[c->chk.rank] = init_us;
    v[n] = (double)s->fences;
    v[n + 1] = s->pmix_init_us;
    v[n + 2] = s->fence_us;
    max_over_ranks (c, v, (size_t)n + 3, "statistics reduction (init)", 0);
    s->fences = (long)v[n];
    s->pmix_init_us = v[n + 1];
    s->fence_us = v[n + 2];
    s->max_us = s->min_us = v[0];
    for (int i = 1; i < n; i++) {
        if (v[i] > s->max_us)
            s->max_us = v[i];
        if (v[i] < s->min_us)
            s->min_us = v[i];
    }
    s->median_us = bench_median (v, n);
    report_init (&c->rep, s);
    free (v);
}

static int alloc_buffers (struct ctx *c)
{
    size_t max = 0, n = (size_t)c->o.iters;

    for (int i = 0; i < c->o.nsizes; i++)
        if (c->o.sizes[i] > max)
            max = c->o.sizes[i];
    max = (max + 4095) & ~(size_t)4095;
    if (max == 0)
        max = 4096;
    c->chk.send = aligned_alloc (4096, max);
    c->chk.recv = aligned_alloc (4096, max);
    if ((size_t)c->o.min_iters > n)
        n = (size_t)c->o.min_iters;
    c->samples = calloc (n, sizeof (double));
    if (!c->chk.send || !c->chk.recv || !c->samples)
        return -1;
    memset (c->chk.send, 0, max);
    memset (c->chk.recv, 0, max);
    return 0;
}

/* ---- main -------------------------------------------------------------- */

/* Init, timed, with the RSS and the fence counter around it; returns the
 * implementation's code, and the fences and times in s. */
static int timed_init (int *argc, char ***argv, double *init_us,
                       long rss[2], struct init_stats *s)
{
    double fu0, fu1, t0;
    long f0, f1;
    int rc;

    rss[0] = rss_bytes ();
    f0 = pmix_fences ();
    fu0 = pmix_time ("ddp_bench_pmix_fence_us");
    t0 = now_us ();
    rc = bench_impl_init (argc, argv);
    *init_us = now_us () - t0;
    f1 = pmix_fences ();
    fu1 = pmix_time ("ddp_bench_pmix_fence_us");
    rss[1] = rss_bytes ();
    s->fences = f0 >= 0 ? f1 - f0 : -1;
    s->fence_us = fu0 >= 0 ? fu1 - fu0 : -1;
    s->pmix_init_us = pmix_time ("ddp_bench_pmix_init_us");
    return rc;
}

/* Who this process is, and where rank 0 writes (after init). */
static void setup (struct ctx *c)
{
    const char *tsv = c->o.tsv;

    c->chk.rank = bench_impl_rank ();
    c->chk.size = bench_impl_size ();
    c->chk.prog = c->prog;
    c->rep = (struct report){ .impl = bench_impl_name, .rank = c->chk.rank,
                              .size = c->chk.size, .nnodes = bench_impl_nnodes (),
                              .text = !c->o.quiet };
    if (c->chk.rank != 0 || !tsv)
        return;
    if (strcmp (tsv, "-") == 0)
        c->rep.tsv = stdout;
    else if (!(c->rep.tsv = fopen (tsv, "w")))
        fprintf (stderr, "%s: %s: %s\n", c->prog, tsv, strerror (errno));
    if (c->rep.tsv == stdout)
        c->rep.text = false;
}

/* Sleep --settle milliseconds, then a barrier: the calls after init are
 * timed once the launch is done with the machine.  Measured on 4 x 1 (2
 * CPUs, networked cluster): barriers right after ddp_init took 95-136 us
 * for their first 1000-1500 (slurmstepd and the PMIx server still at work
 * on the same CPUs) and 50 us after; after 0.3 s of sleep none was slow
 * in 6 runs.  Without it the peer whose init is faster (ddp_init 53 ms,
 * MPI_Init 85) timed its first op in the launch's tail. */
static void settle (struct ctx *c)
{
    struct timespec ts = { c->o.settle_ms / 1000,
                           c->o.settle_ms % 1000 * 1000000L };
    int rc;

    if (c->o.settle_ms == 0)
        return;
    while (nanosleep (&ts, &ts) != 0 && errno == EINTR)
        ;
    if ((rc = bench_impl_barrier ()) != 0)
        fail_call (c, "barrier (after --settle)", 0, rc);
}

static void run_all (struct ctx *c, long rss[2])
{
    int rc;

    settle (c);
    if (c->o.mem > 0)
        run_mem (c, rss[0], rss[1]);
    if (alloc_buffers (c) < 0)
        fail_local (c, "allocating buffers");
    report_columns (&c->rep);
    if (c->o.ops[BENCH_GROUP_ALLREDUCE]
        && (rc = bench_impl_group_setup ()) != 0)
        fail_call (c, "group set-up (split by rank % 2)", 0, rc);
    if (c->o.barrier)
        run (c, BENCH_NOPS, 0);
    for (int k = 0; k < BENCH_NOPS; k++) {
        if (!c->o.ops[k])
            continue;
        for (int i = 0; i < c->o.nsizes; i++) {
            if (k == BENCH_OVERLAP)
                run_overlap (c, c->o.sizes[i]);
            else
                run (c, (enum bench_op)k, c->o.sizes[i]);
        }
    }
}

int main (int argc, char **argv)
{
    struct ctx c = { 0 };
    struct init_stats s = { 0 };
    double init_us;
    long rss[2];
    int rc;

    snprintf (c.prog, sizeof (c.prog), "%s-bench", bench_impl_name);
    if (bench_opts_parse (&c.o, argc, argv) < 0)
        return 2;
    if ((rc = timed_init (&argc, &argv, &init_us, rss, &s)) != 0) {
        fprintf (stderr, "%s: init failed: %s\n", c.prog,
                 bench_impl_strerror (rc));
        return 1;
    }
    setup (&c);
    report_header (&c.rep, bench_impl_backend ());
    run_init_stats (&c, init_us, &s);
    if (!c.o.init_only)
        run_all (&c, rss);
    if (c.rep.tsv && c.rep.tsv != stdout)
        fclose (c.rep.tsv);
    free (c.chk.send);
    free (c.chk.recv);
    free (c.samples);
    if ((rc = bench_impl_finalize ()) != 0) {
        fprintf (stderr, "%s: finalize failed: %s\n", c.prog,
                 bench_impl_strerror (rc));
        return 1;
    }
    if (c.failed && c.chk.rank == 0)
        fprintf (stderr, "%s: CHECKS FAILED\n", c.prog);
    return c.failed ? 1 : 0;
}
