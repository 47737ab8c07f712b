/* bench.h - the measurement loop shared by ddp-bench and mpi-bench.
 *
 * One driver (bench.c) times the same loop against two implementations of a
 * small set of collectives: libddp (ddp-bench.c) and MPI (mpi-bench.c).  Each
 * program fills a struct bench_impl and calls bench_main(), so both measure
 * exactly the same way and print the same tables.
 *
 * Every collective works on FLOAT32 elements (allreduce: SUM); the values the
 * driver puts in the buffers are small integers, so sums are exact and the
 * results can be checked for equality.
 */
#ifndef DDP_BENCH_H
#define DDP_BENCH_H

#include <stddef.h>

struct bench_impl {
    const char *name;   /* "ddp" or "mpi": the first TSV column */

    /* Set up the implementation; argc/argv may be used (MPI_Init).
     * Returns 0 or an implementation error code (non-zero). */
    int (*init) (int *argc, char ***argv);
    /* Returns 0 or non-zero. */
    int (*finalize) (void);
    /* Kill the job after a failure; may not return. */
    void (*abort) (int code, const char *msg);

    /* Identity, valid after init. */
    int (*rank) (void);
    int (*size) (void);
    int (*nnodes) (void);
    /* Name of the backend/transport in use (for the table header). */
    const char *(*backend) (void);

    /* Collectives on count FLOAT32 elements; each returns 0 or non-zero. */
    int (*barrier) (void);
    int (*bcast) (float *buf, size_t count, int root);
    int (*allreduce) (const float *sendbuf, float *recvbuf, size_t count);
    int (*allgather) (const float *sendbuf, float *recvbuf, size_t count);
    int (*gather) (const float *sendbuf, float *recvbuf, size_t count,
                   int root);
    /* Element-wise MAX of n doubles over all ranks, in place (statistics).
     * Returns 0 or non-zero. */
    int (*max_f64) (double *inout, size_t n);

    /* A human-readable description of an error code from the above. */
    const char *(*strerror) (int rc);
};

/* Parse the command line, init the implementation (timed), run the
 * requested measurements with correctness checks, print the tables on rank
 * 0, finalize.  Returns the process exit status: 0 when every check passed,
 * 1 on a failed check or a failed call, 2 on a usage error. */
int bench_main (const struct bench_impl *impl, int argc, char **argv);

#endif /* DDP_BENCH_H */
