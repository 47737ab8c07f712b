/* report.h - the statistics and the tables of ddp-bench and mpi-bench.
 *
 * Rank 0 prints a text table on stdout (unless quiet) and writes the same
 * rows as TSV (--tsv FILE), one header line and one row per measurement:
 *   impl op nranks nnodes bytes count iters time_us mean_us min_us
 *   algbw_GBps busbw_GBps check
 * op is
 *  - init: time_us, mean_us, min_us = the slowest, median and fastest
 *    rank's init;
 *  - init_fences: count = PMIx fences made by init (max over ranks, -1 when
 *    not counted); init_pmix_init / init_pmix_fence: time_us = the time in
 *    PMIx_Init / with PMIx fences in flight during init (slowest rank, -1
 *    when not timed);
 *  - rss_init / rss_base / rss_growth: bytes = RSS added by init / RSS after
 *    the warm-up / RSS growth over count collectives (max over ranks);
 *  - barrier or a collective: the slowest rank's median (time_us), mean and
 *    fastest call over iters timed calls; check is "ok" or "FAIL:N" (N
 *    wrong elements on the worst rank);
 *  - reduce_scatter: bytes = the whole send buffer (nranks x count per
 *    rank), as allgather's is its whole receive buffer (nccl-tests);
 *    busbw = algbw x (n-1)/n;
 *  - group_allreduce: the allreduce on the group of this rank's parity
 *    (colour rank % 2); busbw = algbw x 2(g-1)/g, g = ceil(n/2), the size
 *    of rank 0's group;
 *  - overlap, at each size four rows (bench.c): overlap_allreduce, the
 *    blocking allreduce alone; overlap_compute, the compute loop alone
 *    (count = its units); overlap_seq, the allreduce then the loop;
 *    overlap, the iallreduce started, the loop, its wait.  The share of
 *    the allreduce hidden = (overlap_seq - overlap) / overlap_allreduce
 *    (1: all of it, 0: none), printed in the text table;
 *  - OP_sent (only when the implementation counts its traffic): count =
 *    bytes the busiest rank sent to other nodes per call of OP at this size,
 *    iters = the calls counted; check is "-".
 */
#ifndef DDP_BENCH_REPORT_H
#define DDP_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "opts.h"

/* Where and how rank 0 reports; every function below does nothing on the
 * other ranks. */
struct report {
    const char *impl;   /* "ddp" or "mpi": the first TSV column */
    int rank;
    int size;
    int nnodes;
    FILE *tsv;          /* NULL: no TSV */
    bool text;          /* print the human-readable table on stdout */
};

/* One measured size of one op, over ranks. */
struct result {
    double median_us;   /* the slowest rank's median call */
    double mean_us;     /* the slowest rank's mean */
    double min_us;      /* the fastest call of any rank */
    long errors;        /* wrong elements on the worst rank */
    int iters;
    double sent;        /* bytes sent per call by the busiest rank; < 0:
                           not counted */
    long sent_calls;    /* the calls sent was counted over */
};

struct init_stats {
    double max_us, median_us, min_us;   /* init over ranks */
    long fences;        /* PMIx fences during init; < 0: not counted */
    double pmix_init_us; /* slowest rank; < 0: not timed */
    double fence_us;    /* slowest rank; < 0: not timed */
};

struct mem_stats {
    double init_added;  /* bytes of RSS init added (max over ranks) */
    double base;        /* RSS after the warm-up */
    double growth;      /* RSS growth over count more collectives */
    long count;
    long errors;        /* wrong results in the memory check */
};

/* overlap's four series at one size (each over ranks, as a row's). */
struct overlap_stats {
    struct result comm;     /* the blocking allreduce alone */
    struct result compute;  /* the compute loop alone */
    struct result seq;      /* the allreduce, then the loop */
    struct result overlap;  /* iallreduce started, the loop, wait */
    long units;             /* the loop's size (the same on every rank) */
};

/* The median of v[0..n-1] (n >= 1); sorts v. */
double bench_median (double *v, int n);

/* Fill r's times from one rank's n (>= 1) call times (us); sorts them. */
void report_summarize (double *samples, int n, struct result *r);

/* The title lines (backend: the transport's name) and the TSV header. */
void report_header (const struct report *rep, const char *backend);

/* The text table's column names. */
void report_columns (const struct report *rep);

/* The rows of init's and the memory check's statistics. */
void report_init (const struct report *rep, const struct init_stats *s);
void report_mem (const struct report *rep, const struct mem_stats *m);

/* The row of op k (BENCH_NOPS: barrier) at bytes (count elements per
 * rank), and its OP_sent row when r->sent was counted. */
void report_row (const struct report *rep, enum bench_op k, size_t bytes,
                 size_t count, const struct result *r);

/* overlap's four rows at bytes (count elements) and, in the text table,
 * the share of the allreduce that was hidden. */
void report_overlap (const struct report *rep, size_t bytes, size_t count,
                     const struct overlap_stats *s);

#endif /* DDP_BENCH_REPORT_H */
