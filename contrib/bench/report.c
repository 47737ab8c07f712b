/* report.c - the statistics and the tables (see report.h). */
#include "config.h"
#include <stdlib.h>

#include "report.h"

/* One TSV row; the fields not set are 0. */
struct row {
    const char *op;
    size_t bytes;
    long count;
    int iters;          /* 0: 1 (a single measurement) */
    double time_us, mean_us, min_us;
    double algbw, busbw;
    const char *check;  /* NULL: "ok" */
};

static int cmp_double (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median (double *v, int n)
{
    qsort (v, (size_t)n, sizeof (double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void report_summarize (double *samples, int n, struct result *r)
{
    double sum = 0, min = samples[0];

    for (int i = 0; i < n; i++) {
        sum += samples[i];
        if (samples[i] < min)
            min = samples[i];
    }
    r->iters = n;
    r->mean_us = sum / n;
    r->min_us = min;
    r->median_us = bench_median (samples, n);
}

static void tsv_row (const struct report *rep, const struct row *w)
{
    if (rep->rank != 0 || !rep->tsv)
        return;
    fprintf (rep->tsv, "%s\t%s\t%d\t%d\t%zu\t%ld\t%d\t%.3f\t%.3f\t%.3f\t"
             "%.4f\t%.4f\t%s\n", rep->impl, w->op, rep->size, rep->nnodes,
             w->bytes, w->count, w->iters ? w->iters : 1, w->time_us,
             w->mean_us, w->min_us, w->algbw, w->busbw,
             w->check ? w->check : "ok");
    fflush (rep->tsv);
}

static bool text (const struct report *rep)
{
    return rep->rank == 0 && rep->text;
}

void report_header (const struct report *rep, const char *backend)
{
    if (text (rep)) {
        printf ("# %s-bench: backend=%s ranks=%d nodes=%d\n", rep->impl,
                backend, rep->size, rep->nnodes);
        printf ("# time_us: per-call median over the iterations (mean_us: "
                "mean, min_us: fastest call), slowest rank; GB/s = 1e9 B/s;\n"
                "# busbw as nccl-tests; allgather/gather bytes = whole receive "
                "buffer, reduce_scatter's whole send buffer; FLOAT32, SUM\n");
    }
    if (rep->rank == 0 && rep->tsv)
        fprintf (rep->tsv, "impl\top\tnranks\tnnodes\tbytes\tcount\titers\t"
                 "time_us\tmean_us\tmin_us\talgbw_GBps\tbusbw_GBps\tcheck\n");
}

void report_columns (const struct report *rep)
{
    if (!text (rep))
        return;
    printf ("%10s %12s %7s %11s %11s %11s %11s %11s  %s\n", "op", "bytes",
            "iters", "time_us", "mean_us", "min_us", "algbw_GB/s", "busbw_GB/s",
            "check");
}

void report_init (const struct report *rep, const struct init_stats *s)
{
    tsv_row (rep, &(struct row){ .op = "init", .time_us = s->max_us,
                                 .mean_us = s->median_us, .min_us = s->min_us });
    tsv_row (rep, &(struct row){ .op = "init_fences", .count = s->fences });
    tsv_row (rep, &(struct row){ .op = "init_pmix_init",
                                 .time_us = s->pmix_init_us });
    tsv_row (rep, &(struct row){ .op = "init_pmix_fence",
                                 .time_us = s->fence_us });
    if (!text (rep))
        return;
    printf ("# init: %.3f ms slowest rank, %.3f ms median, %.3f ms fastest",
            s->max_us / 1e3, s->median_us / 1e3, s->min_us / 1e3);
    if (s->fences >= 0)
        printf ("; PMIx fences during init: %ld (max over ranks)\n"
                "# of which PMIx_Init %.3f ms; PMIx fences in flight %.3f ms"
                " (slowest rank)\n", s->fences, s->pmix_init_us / 1e3,
                s->fence_us / 1e3);
    else
        printf ("; PMIx fences not counted (LD_PRELOAD ddp-bench-fences.so)\n");
}

static void check_str (long errors, char *buf, size_t len)
{
    if (errors)
        snprintf (buf, len, "FAIL:%ld", errors);
    else
        snprintf (buf, len, "ok");
}

void report_mem (const struct report *rep, const struct mem_stats *m)
{
    char chk[32];

    check_str (m->errors, chk, sizeof (chk));
    tsv_row (rep, &(struct row){ .op = "rss_init",
        .bytes = (size_t)(m->init_added > 0 ? m->init_added : 0) });
    tsv_row (rep, &(struct row){ .op = "rss_base", .bytes = (size_t)m->base,
                                 .count = 1000 });
    tsv_row (rep, &(struct row){ .op = "rss_growth",
        .bytes = (size_t)(m->growth > 0 ? m->growth : 0), .count = m->count,
        .check = chk });
    if (text (rep))
        printf ("# memory (max over ranks): init added %.0f KiB RSS; %.0f KiB "
                "after 1000 8-byte allreduces; %+.0f KiB over %ld more (%s)\n",
                m->init_added / 1024, m->base / 1024, m->growth / 1024,
                m->count, m->errors ? "CHECK FAILED" : "results ok");
}

/* busbw / algbw for op k on n ranks, as nccl-tests counts it. */
static double bus_factor (enum bench_op k, int n)
{
    int g = (n + 1) / 2;    /* rank 0's group: the even ranks */

    switch (k) {
        case BENCH_ALLREDUCE:
        case BENCH_OVERLAP: return 2.0 * (n - 1) / n;
        case BENCH_GROUP_ALLREDUCE: return 2.0 * (g - 1) / g;
        case BENCH_ALLGATHER:
        case BENCH_GATHER:
        case BENCH_REDUCE_SCATTER: return (double)(n - 1) / n;
        default: return 1.0;
    }
}

/* The OP_sent row of a collective whose traffic was counted. */
static void sent_row (const struct report *rep, enum bench_op k, size_t bytes,
                      const struct result *r)
{
    char op[32];

    snprintf (op, sizeof (op), "%s_sent", bench_op_name (k));
    tsv_row (rep, &(struct row){ .op = op, .bytes = bytes,
                                 .count = (long)(r->sent + 0.5),
                                 .iters = (int)r->sent_calls, .check = "-" });
    if (text (rep))
        printf ("# %s %zu: the busiest rank sent %.0f bytes per call to other "
                "nodes\n", bench_op_name (k), bytes, r->sent);
}

/* One measured row named op, its bandwidths those of op k (BENCH_NOPS:
 * none); check NULL: the row's own. */
static void measured_row (const struct report *rep, const char *op,
                          enum bench_op k, size_t bytes, long count,
                          const struct result *r, const char *check)
{
    double algbw = 0, busbw = 0;
    char chk[32];

    if (bytes > 0 && r->median_us > 0 && k != BENCH_NOPS) {
        algbw = bytes / (r->median_us * 1e3);   /* bytes/us/1e3 = GB/s */
        busbw = algbw * bus_factor (k, rep->size);
    }
    check_str (r->errors, chk, sizeof (chk));
    if (!check)
        check = chk;
    tsv_row (rep, &(struct row){ .op = op, .bytes = bytes, .count = count,
        .iters = r->iters, .time_us = r->median_us, .mean_us = r->mean_us,
        .min_us = r->min_us, .algbw = algbw, .busbw = busbw, .check = check });
    if (text (rep)) {
        printf ("%10s %12zu %7d %11.2f %11.2f %11.2f %11.3f %11.3f  %s\n",
                op, bytes, r->iters, r->median_us, r->mean_us, r->min_us,
                algbw, busbw, check);
        fflush (stdout);
    }
}

void report_row (const struct report *rep, enum bench_op k, size_t bytes,
                 size_t count, const struct result *r)
{
    if (rep->rank != 0)
        return;
    measured_row (rep, bench_op_name (k), k, bytes, (long)count, r, NULL);
    if (r->sent >= 0 && k != BENCH_NOPS)
        sent_row (rep, k, bytes, r);
}

void report_overlap (const struct report *rep, size_t bytes, size_t count,
                     const struct overlap_stats *s)
{
    double comm = s->comm.median_us, hidden;

    if (rep->rank != 0)
        return;
    measured_row (rep, "overlap_allreduce", BENCH_ALLREDUCE, bytes,
                  (long)count, &s->comm, NULL);
    /* The loop moves nothing and has nothing to check. */
    measured_row (rep, "overlap_compute", BENCH_NOPS, bytes, s->units,
                  &s->compute, "-");
    measured_row (rep, "overlap_seq", BENCH_NOPS, bytes, (long)count, &s->seq,
                  NULL);
    measured_row (rep, "overlap", BENCH_OVERLAP, bytes, (long)count,
                  &s->overlap, NULL);
    if (!text (rep) || comm <= 0)
        return;
    hidden = (s->seq.median_us - s->overlap.median_us) / comm;
    printf ("# overlap %zu: allreduce %.2f us, compute %.2f us (%ld units), "
            "one after the other %.2f us, overlapped %.2f us: %.0f%% of the "
            "allreduce hidden\n", bytes, comm, s->compute.median_us, s->units,
            s->seq.median_us, s->overlap.median_us, hidden * 100);
    fflush (stdout);
}
