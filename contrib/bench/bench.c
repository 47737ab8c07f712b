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
 *  - barrier and bcast / allreduce / allgather / gather over sizes: each call
 *    is timed on its own (clock_gettime, ~25 ns here) after warm-up calls;
 *    calls follow each other with nothing in between but the (untimed)
 *    check writes.  Per rank the median and mean over the iterations are
 *    taken; the table shows the slowest rank's (the max over ranks).
 *  - bytes: the size of the buffer for bcast and allreduce; the size of the
 *    whole receive buffer (nranks * per-rank) for allgather and gather, as
 *    nccl-tests does.  algbw = bytes / time; busbw = algbw * 2(n-1)/n for
 *    allreduce, (n-1)/n for allgather and gather, 1 for bcast (nccl-tests).
 *    GB/s are 1e9 bytes per second.
 *  - checks: before the first warm-up call of every size the whole
 *    receive buffer is poisoned and every element is checked after the call;
 *    then every --check-every'th timed call (default: every call) puts
 *    fresh values in a few positions (first, last, two random ones), poisons
 *    them in the receive buffer and checks them after the call.  Values are
 *    small integers in FLOAT32, so sums are exact.
 *
 * The TSV table (--tsv FILE) has one header line and one row per measurement:
 *   impl op nranks nnodes bytes count iters time_us mean_us min_us
 *   algbw_GBps busbw_GBps check
 * op is init (times over ranks: time_us max, mean_us median, min_us min),
 * init_fences (count = PMIx fences made by init, -1 when not counted),
 * init_pmix_init / init_pmix_fence (time_us = time in PMIx_Init / time
 * PMIx fences were in flight during init, slowest rank, -1 when not timed),
 * rss_init / rss_base / rss_growth (bytes = RSS added by init / RSS after
 * warm-up / RSS growth over count collectives, max over ranks), barrier, or a
 * collective.  check is "ok" or "FAIL:N" (N wrong elements on the worst rank).
 */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

enum op_kind { OP_BCAST, OP_ALLREDUCE, OP_ALLGATHER, OP_GATHER, OP_COUNT };
static const char *op_names[OP_COUNT] = {
    "bcast", "allreduce", "allgather", "gather",
};

#define MAX_SIZES 64
#define NSAMPLE_POS 4
#define POISON (-1.0f)
#define MAX_REPORTED_ERRORS 5

struct opts {
    size_t sizes[MAX_SIZES];
    int nsizes;
    int iters;          /* most timed iterations per size */
    int min_iters;      /* fewest timed iterations per size */
    int warmup;         /* most warm-up iterations per size */
    size_t budget;      /* bytes moved per size, sets iterations */
    int check_every;    /* 0: no checks */
    bool ops[OP_COUNT];
    bool barrier;
    long mem;           /* collectives for the memory check; 0: none */
    bool init_only;
    bool quiet;
    bool inject;        /* corrupt results on purpose (tests the checks) */
    const char *tsv;
};

struct result {
    double median_us;
    double mean_us;
    double min_us;
    long errors;
    int iters;
};

struct ctx {
    const struct bench_impl *impl;
    struct opts o;
    int rank;
    int size;
    int nnodes;
    float *send;
    float *recv;
    double *samples;
    long reported;       /* mismatches printed so far by this rank */
    FILE *tsv;
    bool failed;
};

static double now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The value rank r contributes at element i in round tag: a small positive
 * integer, so sums over up to 16k ranks stay exact in FLOAT32. */
static float val (int r, size_t i, int tag)
{
    uint64_t v = (uint64_t)r * 131u + (uint64_t)i * 7u + (uint64_t)tag * 13u;
    return (float)(v % 1021u + 1u);
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

/* A time (us) from the LD_PRELOADed counter (name), or -1. */
static double pmix_time (const char *name)
{
    double (*fn) (void);

    *(void **)&fn = dlsym (RTLD_DEFAULT, name);
    return fn ? fn () : -1;
}

/* ---- options ----------------------------------------------------------- */

static int parse_size (const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull (s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
        case 'k': case 'K': v <<= 10; end++; break;
        case 'm': case 'M': v <<= 20; end++; break;
        case 'g': case 'G': v <<= 30; end++; break;
        default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_size_list (struct opts *o, const char *list)
{
    char *copy = strdup (list), *tok, *save = NULL;
    int rc = -1;

    if (!copy)
        return -1;
    o->nsizes = 0;
    for (tok = strtok_r (copy, ",", &save); tok;
         tok = strtok_r (NULL, ",", &save)) {
        if (o->nsizes == MAX_SIZES || parse_size (tok, &o->sizes[o->nsizes]) < 0)
            goto out;
        o->nsizes++;
    }
    rc = o->nsizes > 0 ? 0 : -1;
out:
    free (copy);
    return rc;
}

static int make_sizes (struct opts *o, size_t min, size_t max, size_t factor)
{
    size_t s;

    if (min == 0 || max < min || factor < 2)
        return -1;
    o->nsizes = 0;
    for (s = min; s <= max && o->nsizes < MAX_SIZES; s *= factor)
        o->sizes[o->nsizes++] = s;
    return 0;
}

static int parse_ops (struct opts *o, const char *list)
{
    char *copy = strdup (list), *tok, *save = NULL;
    int rc = -1, i;

    if (!copy)
        return -1;
    memset (o->ops, 0, sizeof (o->ops));
    o->barrier = false;
    for (tok = strtok_r (copy, ",", &save); tok;
         tok = strtok_r (NULL, ",", &save)) {
        if (strcmp (tok, "barrier") == 0) {
            o->barrier = true;
            continue;
        }
        for (i = 0; i < OP_COUNT; i++)
            if (strcmp (tok, op_names[i]) == 0)
                break;
        if (i == OP_COUNT)
            goto out;
        o->ops[i] = true;
    }
    rc = 0;
out:
    free (copy);
    return rc;
}

static void usage (const char *prog)
{
    fprintf (stderr,
"Usage: srun --mpi=pmix [-N NODES -n RANKS] %s [OPTIONS]\n"
"Times init, barrier, bcast, allreduce, allgather and gather, checking results.\n"
"  -b, --minbytes SIZE     smallest size (default 8)\n"
"  -e, --maxbytes SIZE     largest size (default 64M)\n"
"  -f, --stepfactor N      multiply the size by N each step (default 2)\n"
"  -s, --sizes LIST        explicit sizes, e.g. 8,64K,1M (overrides -b -e -f)\n"
"  -n, --iters N           most timed iterations per size (default 1000)\n"
"  -m, --min-iters N       fewest timed iterations per size (default 10)\n"
"  -w, --warmup N          most warm-up iterations per size (default 100)\n"
"  -B, --budget SIZE       bytes to move per size; sets iterations (default 256M)\n"
"  -c, --check-every N     check every Nth call (default 1; 0 = no checks)\n"
"  -o, --ops LIST          of barrier,bcast,allreduce,allgather,gather (default all)\n"
"  -M, --mem N             RSS check over N 8-byte allreduces (default 100000; 0 off)\n"
"  -i, --init-only         only time init\n"
"  -S, --short             few sizes and iterations (CI): -s 8,64K,1M -n 100\n"
"                          -m 5 -w 10 -B 16M -M 10000\n"
"  -t, --tsv FILE          also write the table as TSV to FILE (rank 0)\n"
"  -q, --quiet             no human-readable table\n"
"  -X, --inject-error      corrupt one result element of every checked call\n"
"                          (shows that the checks catch it; exits 1)\n"
"Sizes take K, M, G suffixes (powers of 1024).\n", prog);
}

static void opts_default (struct opts *o)
{
    memset (o, 0, sizeof (*o));
    make_sizes (o, 8, 64u << 20, 2);
    o->iters = 1000;
    o->min_iters = 10;
    o->warmup = 100;
    o->budget = 256u << 20;
    o->check_every = 1;
    for (int i = 0; i < OP_COUNT; i++)
        o->ops[i] = true;
    o->barrier = true;
    o->mem = 100000;
}

static void opts_short (struct opts *o)
{
    parse_size_list (o, "8,64K,1M");
    o->iters = 100;
    o->min_iters = 5;
    o->warmup = 10;
    o->budget = 16u << 20;
    o->mem = 10000;
}

static int parse_int (const char *s, long min, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol (s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

/* Fill o from argv; returns 0, or -1 after printing why (usage error). */
static int parse_opts (struct opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "minbytes", required_argument, NULL, 'b' },
        { "maxbytes", required_argument, NULL, 'e' },
        { "stepfactor", required_argument, NULL, 'f' },
        { "sizes", required_argument, NULL, 's' },
        { "iters", required_argument, NULL, 'n' },
        { "min-iters", required_argument, NULL, 'm' },
        { "warmup", required_argument, NULL, 'w' },
        { "budget", required_argument, NULL, 'B' },
        { "check-every", required_argument, NULL, 'c' },
        { "ops", required_argument, NULL, 'o' },
        { "mem", required_argument, NULL, 'M' },
        { "init-only", no_argument, NULL, 'i' },
        { "short", no_argument, NULL, 'S' },
        { "tsv", required_argument, NULL, 't' },
        { "quiet", no_argument, NULL, 'q' },
        { "inject-error", no_argument, NULL, 'X' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    size_t minb = 8, maxb = 64u << 20, factor = 2;
    bool range = false;
    long v;
    int c;

    opts_default (o);
    /* --short first, so explicit options given with it win. */
    for (int i = 1; i < argc; i++)
        if (strcmp (argv[i], "-S") == 0 || strcmp (argv[i], "--short") == 0)
            opts_short (o);
    optind = 1;
    while ((c = getopt_long (argc, argv, "b:e:f:s:n:m:w:B:c:o:M:iSt:qXh",
                             longopts, NULL)) != -1) {
        switch (c) {
            case 'b':
                if (parse_size (optarg, &minb) < 0)
                    goto bad;
                range = true;
                break;
            case 'e':
                if (parse_size (optarg, &maxb) < 0)
                    goto bad;
                range = true;
                break;
            case 'f':
                if (parse_int (optarg, 2, &v) < 0)
                    goto bad;
                factor = (size_t)v;
                range = true;
                break;
            case 's':
                if (parse_size_list (o, optarg) < 0)
                    goto bad;
                break;
            case 'n':
                if (parse_int (optarg, 1, &v) < 0)
                    goto bad;
                o->iters = (int)v;
                break;
            case 'm':
                if (parse_int (optarg, 1, &v) < 0)
                    goto bad;
                o->min_iters = (int)v;
                break;
            case 'w':
                if (parse_int (optarg, 0, &v) < 0)
                    goto bad;
                o->warmup = (int)v;
                break;
            case 'B':
                if (parse_size (optarg, &o->budget) < 0)
                    goto bad;
                break;
            case 'c':
                if (parse_int (optarg, 0, &v) < 0)
                    goto bad;
                o->check_every = (int)v;
                break;
            case 'o':
                if (parse_ops (o, optarg) < 0)
                    goto bad;
                break;
            case 'M':
                if (parse_int (optarg, 0, &o->mem) < 0)
                    goto bad;
                break;
            case 'i':
                o->init_only = true;
                break;
            case 'S':
                break;
            case 't':
                o->tsv = optarg;
                break;
            case 'q':
                o->quiet = true;
                break;
            case 'X':
                o->inject = true;
                break;
            case 'h':
            default:
                usage (argv[0]);
                return -1;
        }
    }
    if (optind < argc) {
        fprintf (stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        return -1;
    }
    if (range && make_sizes (o, minb, maxb, factor) < 0) {
        fprintf (stderr, "%s: bad size range %zu..%zu x%zu\n", argv[0], minb,
                 maxb, factor);
        return -1;
    }
    if (o->min_iters > o->iters)
        o->min_iters = o->iters;
    return 0;
bad:
    fprintf (stderr, "%s: bad value '%s' for -%c\n", argv[0], optarg, c);
    return -1;
}

/* ---- statistics and output --------------------------------------------- */

static int cmp_double (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median (double *v, int n)
{
    qsort (v, (size_t)n, sizeof (double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Die on a failed call: say what failed on stderr and end the job. */
static void fail_call (struct ctx *c, const char *what, size_t bytes, int rc)
{
    char msg[256];

    snprintf (msg, sizeof (msg), "%s-bench: rank %d: %s (%zu bytes) failed: %s",
              c->impl->name, c->rank, what, bytes, c->impl->strerror (rc));
    fprintf (stderr, "%s\n", msg);
    c->impl->abort (1, msg);
    exit (1);
}

/* Die on a local failure (no implementation error code). */
static void fail_local (struct ctx *c, const char *what)
{
    char msg[256];

    snprintf (msg, sizeof (msg), "%s-bench: rank %d: %s failed", c->impl->name,
              c->rank, what);
    fprintf (stderr, "%s\n", msg);
    c->impl->abort (1, msg);
    exit (1);
}

/* Reduce per-rank statistics to the slowest rank's (errors: the worst
 * rank's count); dies if the reduction fails. */
static void reduce_result (struct ctx *c, struct result *r, size_t bytes)
{
    double v[4] = { r->median_us, r->mean_us, -r->min_us, (double)r->errors };
    int rc;

    if ((rc = c->impl->max_f64 (v, 4)) != 0)
        fail_call (c, "statistics reduction after", bytes, rc);
    r->median_us = v[0];
    r->mean_us = v[1];
    r->min_us = -v[2];
    r->errors = (long)v[3];
}

static void print_header (struct ctx *c)
{
    if (c->rank != 0)
        return;
    if (c->tsv)
        fprintf (c->tsv, "impl\top\tnranks\tnnodes\tbytes\tcount\titers\t"
                 "time_us\tmean_us\tmin_us\talgbw_GBps\tbusbw_GBps\tcheck\n");
}

static void check_str (long errors, char *buf, size_t len)
{
    if (errors)
        snprintf (buf, len, "FAIL:%ld", errors);
    else
        snprintf (buf, len, "ok");
}

static void tsv_row (struct ctx *c, const char *op, size_t bytes, long count,
                     int iters, double t, double mean, double min, double algbw,
                     double busbw, long errors)
{
    char chk[32];

    if (c->rank != 0 || !c->tsv)
        return;
    check_str (errors, chk, sizeof (chk));
    fprintf (c->tsv, "%s\t%s\t%d\t%d\t%zu\t%ld\t%d\t%.3f\t%.3f\t%.3f\t"
             "%.4f\t%.4f\t%s\n", c->impl->name, op, c->size, c->nnodes, bytes,
             count, iters, t, mean, min, algbw, busbw, chk);
    fflush (c->tsv);
}

static double bus_factor (enum op_kind k, int n)
{
    switch (k) {
        case OP_ALLREDUCE: return 2.0 * (n - 1) / n;
        case OP_ALLGATHER:
        case OP_GATHER: return (double)(n - 1) / n;
        default: return 1.0;
    }
}

static void report (struct ctx *c, const char *op, enum op_kind k,
                    size_t bytes, size_t count, const struct result *r)
{
    double algbw = 0, busbw = 0;
    char chk[32];

    if (c->rank != 0)
        return;
    if (bytes > 0 && r->median_us > 0) {
        algbw = bytes / (r->median_us * 1e3);   /* bytes/us/1e3 = GB/s */
        busbw = algbw * bus_factor (k, c->size);
    }
    tsv_row (c, op, bytes, (long)count, r->iters, r->median_us, r->mean_us,
             r->min_us, algbw, busbw, r->errors);
    if (c->o.quiet)
        return;
    check_str (r->errors, chk, sizeof (chk));
    printf ("%10s %12zu %7d %11.2f %11.2f %11.2f %11.3f %11.3f  %s\n", op,
            bytes, r->iters, r->median_us, r->mean_us, r->min_us, algbw, busbw,
            chk);
    fflush (stdout);
}

/* ---- checks ------------------------------------------------------------ */

/* Sample positions for round it of a count-element buffer: first, last and
 * two pseudo-random ones, the same on every rank. */
static void sample_pos (size_t count, int it, size_t pos[NSAMPLE_POS])
{
    uint64_t x = (uint64_t)count * 0x9e3779b97f4a7c15ull + (uint64_t)(it + 1000);

    pos[0] = 0;
    pos[1] = count - 1;
    for (int i = 2; i < NSAMPLE_POS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        pos[i] = (size_t)(x % count);
    }
}

static long mismatch (struct ctx *c, const char *op, size_t idx, float got,
                      float want)
{
    if (c->reported++ < MAX_REPORTED_ERRORS)
        fprintf (stderr, "%s-bench: rank %d: %s: element %zu is %g, expected %g\n",
                 c->impl->name, c->rank, op, idx, (double)got, (double)want);
    return 1;
}

/* Prepare a checked call of op k in round tag: fresh values in the sampled
 * positions of the send side, poison in those of the receive side. */
static void check_prepare (struct ctx *c, enum op_kind k, size_t count, int tag,
                           const size_t *pos, int npos)
{
    int n = c->size;

    for (int j = 0; j < npos; j++) {
        size_t p = pos[j];
        switch (k) {
            case OP_BCAST:
                c->send[p] = c->rank == 0 ? val (0, p, tag) : POISON;
                break;
            case OP_ALLREDUCE:
                c->send[p] = val (c->rank, p, tag);
                c->recv[p] = POISON;
                break;
            case OP_ALLGATHER:
            case OP_GATHER:
                c->send[p] = val (c->rank, p, tag);
                for (int r = 0; r < n; r++)
                    c->recv[(size_t)r * count + p] = POISON;
                break;
            default:
                break;
        }
    }
}

static long check_pos (struct ctx *c, enum op_kind k, size_t count, int tag,
                       size_t p)
{
    const char *op = op_names[k];
    long err = 0;
    float want;

    switch (k) {
        case OP_BCAST:
            want = val (0, p, tag);
            if (c->send[p] != want)
                err += mismatch (c, op, p, c->send[p], want);
            break;
        case OP_ALLREDUCE:
            want = 0;
            for (int r = 0; r < c->size; r++)
                want += val (r, p, tag);
            if (c->recv[p] != want)
                err += mismatch (c, op, p, c->recv[p], want);
            break;
        case OP_GATHER:
            if (c->rank != 0)
                break;
            /* fall through */
        case OP_ALLGATHER:
            for (int r = 0; r < c->size; r++) {
                size_t i = (size_t)r * count + p;
                want = val (r, p, tag);
                if (c->recv[i] != want)
                    err += mismatch (c, op, i, c->recv[i], want);
            }
            break;
        default:
            break;
    }
    return err;
}

/* Restore the base pattern (tag 0) in the sampled send positions. */
static void check_restore (struct ctx *c, enum op_kind k, const size_t *pos,
                           int npos)
{
    for (int j = 0; j < npos; j++) {
        size_t p = pos[j];
        c->send[p] = val (k == OP_BCAST ? 0 : c->rank, p, 0);
    }
}

/* --inject-error: spoil element 0 of what the checks read after op k. */
static void inject_error (struct ctx *c, enum op_kind k)
{
    if (k == OP_BCAST)
        c->send[0] = POISON - 1;
    else
        c->recv[0] = POISON - 1;
}

/* Fill the whole buffers for a full check of op k (tag 0). */
static void full_prepare (struct ctx *c, enum op_kind k, size_t count)
{
    size_t rcount = (k == OP_ALLGATHER || k == OP_GATHER)
                    ? count * (size_t)c->size : count;
    int src = k == OP_BCAST ? 0 : c->rank;

    for (size_t i = 0; i < count; i++)
        c->send[i] = (k == OP_BCAST && c->rank != 0) ? POISON : val (src, i, 0);
    if (k != OP_BCAST)
        for (size_t i = 0; i < rcount; i++)
            c->recv[i] = POISON;
}

/* After a full check, give bcast's non-root buffers the base pattern too. */
static void check_restore_all (struct ctx *c, enum op_kind k, size_t count)
{
    if (k == OP_BCAST && c->rank != 0)
        for (size_t i = 0; i < count; i++)
            c->send[i] = val (0, i, 0);
}

static long full_check (struct ctx *c, enum op_kind k, size_t count)
{
    long err = 0;

    for (size_t i = 0; i < count; i++)
        err += check_pos (c, k, count, 0, i);
    return err;
}

/* ---- the loops --------------------------------------------------------- */

static int call (struct ctx *c, enum op_kind k, size_t count)
{
    const struct bench_impl *im = c->impl;

    switch (k) {
        case OP_BCAST: return im->bcast (c->send, count, 0);
        case OP_ALLREDUCE: return im->allreduce (c->send, c->recv, count);
        case OP_ALLGATHER: return im->allgather (c->send, c->recv, count);
        case OP_GATHER: return im->gather (c->send, c->recv, count, 0);
        default: return -1;
    }
}

static int iters_for (const struct opts *o, size_t bytes)
{
    size_t n = bytes ? o->budget / bytes : (size_t)o->iters;

    if (n > (size_t)o->iters)
        n = (size_t)o->iters;
    if (n < (size_t)o->min_iters)
        n = (size_t)o->min_iters;
    return (int)n;
}

static int warmup_for (const struct opts *o, int iters)
{
    int w = iters / 10;

    if (w < 2)
        w = 2;
    if (w > o->warmup)
        w = o->warmup;
    return w;
}

static void summarize (struct ctx *c, int iters, struct result *r)
{
    double sum = 0, min = c->samples[0];

    for (int i = 0; i < iters; i++) {
        sum += c->samples[i];
        if (c->samples[i] < min)
            min = c->samples[i];
    }
    r->iters = iters;
    r->mean_us = sum / iters;
    r->min_us = min;
    r->median_us = median (c->samples, iters);
}

static void run_op_size (struct ctx *c, enum op_kind k, size_t bytes)
{
    size_t count = (k == OP_ALLGATHER || k == OP_GATHER)
                   ? bytes / sizeof (float) / (size_t)c->size
                   : bytes / sizeof (float);
    int iters = iters_for (&c->o, bytes);
    int warm = warmup_for (&c->o, iters);
    struct result r = { 0 };
    size_t pos[NSAMPLE_POS];
    int rc;

    if (count == 0)
        return;                 /* smaller than one element per rank */
    if (k == OP_ALLGATHER || k == OP_GATHER)
        bytes = count * sizeof (float) * (size_t)c->size;
    if (c->o.check_every) {
        /* One untimed call with every element checked. */
        full_prepare (c, k, count);
        if ((rc = call (c, k, count)) != 0)
            fail_call (c, op_names[k], bytes, rc);
        if (c->o.inject)
            inject_error (c, k);
        r.errors += full_check (c, k, count);
        check_restore_all (c, k, count);
    }
    for (int it = -warm; it < iters; it++) {
        bool sampled = c->o.check_every && it >= 0 && it % c->o.check_every == 0;
        double t0, t1;

        if (sampled) {
            sample_pos (count, it, pos);
            check_prepare (c, k, count, it + 1, pos, NSAMPLE_POS);
        }
        t0 = now_us ();
        rc = call (c, k, count);
        t1 = now_us ();
        if (rc != 0)
            fail_call (c, op_names[k], bytes, rc);
        if (it >= 0)
            c->samples[it] = t1 - t0;
        if (sampled) {
            if (c->o.inject)
                inject_error (c, k);
            for (int j = 0; j < NSAMPLE_POS; j++)
                r.errors += check_pos (c, k, count, it + 1, pos[j]);
            check_restore (c, k, pos, NSAMPLE_POS);
        }
    }
    summarize (c, iters, &r);
    reduce_result (c, &r, bytes);
    if (r.errors)
        c->failed = true;
    report (c, op_names[k], k, bytes, count, &r);
}

static void run_barrier (struct ctx *c)
{
    int iters = c->o.iters, warm = warmup_for (&c->o, iters);
    struct result r = { 0 };
    int rc;

    for (int it = -warm; it < iters; it++) {
        double t0 = now_us (), t1;
        if ((rc = c->impl->barrier ()) != 0)
            fail_call (c, "barrier", 0, rc);
        t1 = now_us ();
        if (it >= 0)
            c->samples[it] = t1 - t0;
    }
    summarize (c, iters, &r);
    reduce_result (c, &r, 0);
    report (c, "barrier", OP_COUNT, 0, 0, &r);
}

/* 8-byte allreduces: warm-up, then RSS growth over c->o.mem more, each
 * result checked. */
static void run_mem (struct ctx *c, long rss_before, long rss_after_init)
{
    float s[2], r[2];
    long errors = 0, base = -1, after;
    double v[4];
    int rc;

    for (long i = 0; i < 1000 + c->o.mem; i++) {
        if (i == 1000)
            base = rss_bytes ();
        s[0] = val (c->rank, 0, (int)(i % 1000));
        s[1] = val (c->rank, 1, (int)(i % 1000));
        r[0] = r[1] = POISON;
        if ((rc = c->impl->allreduce (s, r, 2)) != 0)
            fail_call (c, "allreduce (memory check)", 8, rc);
        for (int j = 0; j < 2; j++) {
            float want = 0;
            for (int q = 0; q < c->size; q++)
                want += val (q, (size_t)j, (int)(i % 1000));
            if (r[j] != want)
                errors += mismatch (c, "allreduce (memory check)", (size_t)j,
                                    r[j], want);
        }
    }
    after = rss_bytes ();
    if (c->o.mem == 0)
        base = after;
    v[0] = (double)(rss_after_init - rss_before);
    v[1] = (double)base;
    v[2] = (double)(after - base);
    v[3] = (double)errors;
    if ((rc = c->impl->max_f64 (v, 4)) != 0)
        fail_call (c, "statistics reduction (memory)", 0, rc);
    if (v[3] > 0)
        c->failed = true;
    tsv_row (c, "rss_init", (size_t)(v[0] > 0 ? v[0] : 0), 0, 1, 0, 0, 0, 0, 0, 0);
    tsv_row (c, "rss_base", (size_t)v[1], 1000, 1, 0, 0, 0, 0, 0, 0);
    tsv_row (c, "rss_growth", (size_t)(v[2] > 0 ? v[2] : 0), c->o.mem, 1, 0, 0,
             0, 0, 0, (long)v[3]);
    if (c->rank == 0 && !c->o.quiet) {
        printf ("# memory (max over ranks): init added %.0f KiB RSS; %.0f KiB "
                "after 1000 8-byte allreduces; %+.0f KiB over %ld more (%s)\n",
                v[0] / 1024, v[1] / 1024, v[2] / 1024, c->o.mem,
                v[3] > 0 ? "CHECK FAILED" : "results ok");
    }
}

/* Init statistics: every rank's time and fence count reach rank 0 through
 * one max-reduction of one-hot vectors. */
static void report_init (struct ctx *c, double init_us, long fences,
                         double pmix_init_us, double fence_us)
{
    int n = c->size;
    double *v = calloc ((size_t)n + 3, sizeof (double));
    double mx, med, mn, fmax, pimax, fumax;
    int rc;

    if (!v)
        fail_local (c, "calloc (init statistics)");
    v[c->rank] = init_us;
    v[n] = (double)fences;
    v[n + 1] = pmix_init_us;
    v[n + 2] = fence_us;
    if ((rc = c->impl->max_f64 (v, (size_t)n + 3)) != 0)
        fail_call (c, "statistics reduction (init)", 0, rc);
    fmax = v[n];
    pimax = v[n + 1];
    fumax = v[n + 2];
    mx = v[0];
    mn = v[0];
    for (int i = 1; i < n; i++) {
        if (v[i] > mx)
            mx = v[i];
        if (v[i] < mn)
            mn = v[i];
    }
    med = median (v, n);
    tsv_row (c, "init", 0, 0, 1, mx, med, mn, 0, 0, 0);
    tsv_row (c, "init_fences", 0, (long)fmax, 1, 0, 0, 0, 0, 0, 0);
    tsv_row (c, "init_pmix_init", 0, 0, 1, pimax, 0, 0, 0, 0, 0);
    tsv_row (c, "init_pmix_fence", 0, 0, 1, fumax, 0, 0, 0, 0, 0);
    if (c->rank == 0 && !c->o.quiet) {
        printf ("# init: %.3f ms slowest rank, %.3f ms median, %.3f ms fastest",
                mx / 1e3, med / 1e3, mn / 1e3);
        if (fmax >= 0)
            printf ("; PMIx fences during init: %.0f (max over ranks)\n"
                    "# of which PMIx_Init %.3f ms; PMIx fences in flight %.3f ms"
                    " (slowest rank)\n", fmax, pimax / 1e3, fumax / 1e3);
        else
            printf ("; PMIx fences not counted (LD_PRELOAD ddp-bench-fences.so)\n");
    }
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
    c->send = aligned_alloc (4096, max);
    c->recv = aligned_alloc (4096, max);
    if ((size_t)c->o.min_iters > n)
        n = (size_t)c->o.min_iters;
    c->samples = calloc (n, sizeof (double));
    if (!c->send || !c->recv || !c->samples)
        return -1;
    memset (c->send, 0, max);
    memset (c->recv, 0, max);
    return 0;
}

static void print_title (struct ctx *c)
{
    if (c->rank != 0 || c->o.quiet)
        return;
    printf ("# %s-bench: backend=%s ranks=%d nodes=%d\n", c->impl->name,
            c->impl->backend (), c->size, c->nnodes);
    printf ("# time_us: per-call median over the iterations (mean_us: mean, "
            "min_us: fastest call), slowest rank; GB/s = 1e9 B/s;\n"
            "# busbw as nccl-tests; allgather/gather bytes = whole receive "
            "buffer; FLOAT32, allreduce SUM\n");
}

static void print_columns (struct ctx *c)
{
    if (c->rank != 0 || c->o.quiet)
        return;
    printf ("%10s %12s %7s %11s %11s %11s %11s %11s  %s\n", "op", "bytes",
            "iters", "time_us", "mean_us", "min_us", "algbw_GB/s", "busbw_GB/s",
            "check");
}

int bench_main (const struct bench_impl *impl, int argc, char **argv)
{
    struct ctx c = { .impl = impl };
    long rss0, rss1, f0, f1;
    double t0, t1, fu0, fu1;
    int rc;

    if (parse_opts (&c.o, argc, argv) < 0)
        return 2;
    rss0 = rss_bytes ();
    f0 = pmix_fences ();
    fu0 = pmix_time ("ddp_bench_pmix_fence_us");
    t0 = now_us ();
    rc = impl->init (&argc, &argv);
    t1 = now_us ();
    f1 = pmix_fences ();
    fu1 = pmix_time ("ddp_bench_pmix_fence_us");
    rss1 = rss_bytes ();
    if (rc != 0) {
        fprintf (stderr, "%s-bench: init failed: %s\n", impl->name,
                 impl->strerror (rc));
        return 1;
    }
    c.rank = impl->rank ();
    c.size = impl->size ();
    c.nnodes = impl->nnodes ();
    if (c.rank == 0 && c.o.tsv) {
        if (strcmp (c.o.tsv, "-") == 0)
            c.tsv = stdout;
        else if (!(c.tsv = fopen (c.o.tsv, "w")))
            fprintf (stderr, "%s-bench: %s: %s\n", impl->name, c.o.tsv,
                     strerror (errno));
    }
    if (c.tsv == stdout)
        c.o.quiet = true;
    print_title (&c);
    print_header (&c);
    report_init (&c, t1 - t0, f0 >= 0 ? f1 - f0 : -1,
                 pmix_time ("ddp_bench_pmix_init_us"),
                 fu0 >= 0 ? fu1 - fu0 : -1);
    if (!c.o.init_only) {
        if (c.o.mem > 0)
            run_mem (&c, rss0, rss1);
        if (alloc_buffers (&c) < 0)
            fail_local (&c, "allocating buffers");
        print_columns (&c);
        if (c.o.barrier)
            run_barrier (&c);
        for (int k = 0; k < OP_COUNT; k++) {
            if (!c.o.ops[k])
                continue;
            for (int i = 0; i < c.o.nsizes; i++)
                run_op_size (&c, (enum op_kind)k, c.o.sizes[i]);
        }
    }
    if (c.tsv && c.tsv != stdout)
        fclose (c.tsv);
    free (c.send);
    free (c.recv);
    free (c.samples);
    if ((rc = impl->finalize ()) != 0) {
        fprintf (stderr, "%s-bench: finalize failed: %s\n", impl->name,
                 impl->strerror (rc));
        return 1;
    }
    if (c.failed && c.rank == 0)
        fprintf (stderr, "%s-bench: CHECKS FAILED\n", impl->name);
    return c.failed ? 1 : 0;
}
