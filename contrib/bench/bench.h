/* bench.h - what an implementation gives the measurement loop.
 *
 * One driver (bench.c, with opts.c, check.c and report.c) times the same
 * loop against two implementations of a small set of collectives: libddp
 * (ddp-bench.c) and MPI (mpi-bench.c).  Each program is the driver linked
 * with one file that defines the functions below, so both measure exactly
 * the same way and print the same tables.
 *
 * Every collective works on FLOAT32 elements (allreduce: SUM); the values
 * the driver puts in the buffers are small integers, so sums are exact and
 * the results can be checked for equality (check.h).
 */
#ifndef DDP_BENCH_H
#define DDP_BENCH_H

#include <stddef.h>

/* "ddp" or "mpi": the first TSV column and the prefix of messages
 * ("ddp-bench: ..."). */
extern const char bench_impl_name[];

/* Set up the implementation (timed: this is init's time); argc and argv
 * may be used (MPI_Init).  Returns 0 or an implementation error code. */
int bench_impl_init (int *argc, char ***argv);

/* Returns 0 or an implementation error code. */
int bench_impl_finalize (void);

/* End the whole job after a failure, with msg; may not return. */
void bench_impl_abort (int code, const char *msg);

/* This process's rank, the number of ranks and of nodes; valid after init
 * (and may be collective the first time: call them on every rank). */
int bench_impl_rank (void);
int bench_impl_size (void);
int bench_impl_nnodes (void);

/* The name of the backend or transport in use (for the table's title). */
const char *bench_impl_backend (void);

/* The collectives on count FLOAT32 elements per rank (bcast and gather:
 * root 0; bcast in place).  Each returns 0 or an implementation error
 * code. */
int bench_impl_barrier (void);
int bench_impl_bcast (float *buf, size_t count);
int bench_impl_allreduce (const float *sendbuf, float *recvbuf, size_t count);
int bench_impl_allgather (const float *sendbuf, float *recvbuf, size_t count);
int bench_impl_gather (const float *sendbuf, float *recvbuf, size_t count);

/* Reduce (SUM) size * count elements of every rank's sendbuf and leave
 * block r (count elements) in rank r's recvbuf: ddp_reduce_scatter,
 * MPI_Reduce_scatter_block. */
int bench_impl_reduce_scatter (const float *sendbuf, float *recvbuf,
                               size_t count);

/* The group of group_allreduce: the world split by colour rank % 2 (key:
 * the rank), so that the ranks of a node, placed in blocks, are in both
 * groups and each group spans every node.  Collective over the world,
 * called once before the first bench_impl_group_allreduce (outside the
 * timed calls); bench_impl_finalize frees it.  Returns 0 or an
 * implementation error code. */
int bench_impl_group_setup (void);

/* Allreduce (SUM) of count elements over this rank's group. */
int bench_impl_group_allreduce (const float *sendbuf, float *recvbuf,
                                size_t count);

/* Start a nonblocking allreduce (SUM) of count elements over the world;
 * at most one is in flight.  bench_impl_iallreduce_wait waits for it.
 * Between the two the buffers are the implementation's.  Each returns 0 or
 * an implementation error code. */
int bench_impl_iallreduce_start (const float *sendbuf, float *recvbuf,
                                 size_t count);
int bench_impl_iallreduce_wait (void);

/* Element-wise MAX of n doubles over all ranks, in place (statistics).
 * Returns 0 or an implementation error code. */
int bench_impl_max_f64 (double *inout, size_t n);

/* A description of an error code from the functions above. */
const char *bench_impl_strerror (int rc);

/* Bytes this process has sent to processes on other nodes since init, as
 * the implementation counts them; -1 when it does not count them.  Read
 * outside the timed calls only. */
double bench_impl_bytes_sent (void);

#endif /* DDP_BENCH_H */
