/* opts.h - the command line of ddp-bench and mpi-bench.
 *
 * One table (opts.c) describes every option: its letters, what it sets and
 * its line in --help, so the parser, the getopt string and the usage text
 * cannot drift apart.
 */
#ifndef DDP_BENCH_OPTS_H
#define DDP_BENCH_OPTS_H

#include <stdbool.h>
#include <stddef.h>

/* The collectives on buffers, in the order they are run.  The barrier has no
 * buffer and is not one of them (BENCH_NOPS stands for it where an op is
 * expected).  Those from BENCH_NDEFAULT on are run only when --ops names
 * them (the default list, and so compare.sh's collectives tables and
 * gloo-bench.py's, stays as it was):
 *  - reduce_scatter: MPI_Reduce_scatter_block's operation;
 *  - group_allreduce: an allreduce on the group of the ranks of this
 *    rank's parity (the world split in two by colour rank % 2);
 *  - overlap: a nonblocking allreduce started, a compute loop, its wait,
 *    against the blocking allreduce and the same loop one after the
 *    other (bench.c). */
enum bench_op {
    BENCH_BCAST,
    BENCH_ALLREDUCE,
    BENCH_ALLGATHER,
    BENCH_GATHER,
    BENCH_REDUCE_SCATTER,
    BENCH_GROUP_ALLREDUCE,
    BENCH_OVERLAP,
    BENCH_NOPS,
};

/* The ops run by default: those before this one. */
#define BENCH_NDEFAULT BENCH_REDUCE_SCATTER

#define BENCH_MAX_SIZES 64

struct bench_opts {
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    size_t minbytes;    /* -b -e -f: a geometric range of sizes */
    size_t maxbytes;
    long stepfactor;
    long iters;         /* most timed iterations per size */
    long min_iters;     /* fewest timed iterations per size */
    long warmup;        /* most warm-up iterations per size */
    size_t budget;      /* bytes moved per size, sets iterations */
    long time_limit;    /* most seconds of timed calls per size; 0: none */
    long check_every;   /* 0: no checks */
    bool ops[BENCH_NOPS];
    bool barrier;
    long mem;           /* collectives for the memory check; 0: none */
    long settle_ms;     /* sleep after init before the first call; 0: none */
    bool init_only;
    bool quiet;
    bool inject;        /* corrupt results on purpose (tests the checks) */
    const char *tsv;
};

/* Fill o from argv: the defaults, then --short's, then every option given
 * (so explicit options given with --short win).  Returns 0, or -1 after
 * printing what was wrong (or the usage, for --help or an unknown option)
 * on stderr: a usage error. */
int bench_opts_parse (struct bench_opts *o, int argc, char **argv);

/* The name of op k as the options and the tables spell it ("allreduce");
 * "barrier" for BENCH_NOPS. */
const char *bench_op_name (enum bench_op k);

#endif /* DDP_BENCH_OPTS_H */
