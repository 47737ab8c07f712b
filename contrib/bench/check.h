/* check.h - the result checks ddp-bench and mpi-bench make while measuring.
 *
 * Rank r contributes bench_val (r, i, tag) at element i in round tag: small
 * integers, so FLOAT32 sums over up to 16k ranks are exact and a result is
 * compared for equality.  Two kinds of check:
 *  - full: before the timed calls of a size, the whole receive side is
 *    poisoned, one call made, and every element checked;
 *  - sampled: in a timed call, four positions (first, last, two
 *    pseudo-random ones, the same on every rank) get fresh values in the
 *    send buffer and poison in the receive buffer, and are checked after.
 * Bcast works in place on the send buffer (root 0).  reduce_scatter's
 * count is per rank (the send side holds size blocks of it, a position p
 * is checked in every block); group_allreduce sums the ranks of this
 * rank's parity; overlap's calls are checked as allreduces.
 */
#ifndef DDP_BENCH_CHECK_H
#define DDP_BENCH_CHECK_H

#include <stddef.h>

#include "opts.h"

#define CHECK_NPOS 4

/* The buffers one process checks, and who it is. */
struct check {
    const char *prog;   /* "ddp-bench": the prefix of mismatch messages */
    int rank;
    int size;
    float *send;
    float *recv;
    long reported;      /* mismatches printed so far (at most 5 are) */
};

/* The value rank r contributes at element i in round tag (>= 1, exact). */
float check_val (int r, size_t i, int tag);

/* Count one wrong element (idx of what, got instead of want), printing
 * the first few on stderr.  Returns 1. */
long check_mismatch (struct check *c, const char *what, size_t idx, float got,
                     float want);

/* Full check of op k on count elements per rank: check_full_prepare fills
 * the send side (tag 0) and poisons the receive side before the call;
 * check_full, after it, returns the number of wrong elements and leaves
 * the buffers with the base pattern (tag 0) for the sampled checks. */
void check_full_prepare (struct check *c, enum bench_op k, size_t count);
long check_full (struct check *c, enum bench_op k, size_t count);

/* The positions of round it's sampled check on count elements (count >= 1),
 * the same on every rank. */
void check_positions (size_t count, int it, size_t pos[CHECK_NPOS]);

/* Sampled check of op k in round tag (>= 1) at pos: check_sample_prepare
 * before the call; check_sample after it returns the number of wrong
 * elements and restores the base pattern at pos. */
void check_sample_prepare (struct check *c, enum bench_op k, size_t count,
                           int tag, const size_t pos[CHECK_NPOS]);
long check_sample (struct check *c, enum bench_op k, size_t count, int tag,
                   const size_t pos[CHECK_NPOS]);

/* --inject-error: spoil element 0 of what the next check of op k reads. */
void check_inject (struct check *c, enum bench_op k);

#endif /* DDP_BENCH_CHECK_H */
