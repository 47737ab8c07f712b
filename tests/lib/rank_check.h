/* rank_check.h - the checks of a test program that runs as every rank of a
 * job (tests/progs/ddp_groups.c, ddp_members.c): CHECK counts a condition
 * and, when it is false, writes "FAIL rank R line L: MESSAGE" to stderr;
 * OK checks that a libddp call returned 0 and names ddp_last_error().  The
 * program defines `rank` (set once it knows it) and ends with a line
 * saying nfail and nchecks, which the test script reads.
 *
 * Everything is static: include it once per test program.
 */
#ifndef DDP_RANK_CHECK_H
#define DDP_RANK_CHECK_H

#include <stdio.h>
#include <time.h>

#include "ddp.h"

static int rank, nfail, nchecks;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        nchecks++;                                                            \
        if (!(cond)) {                                                        \
            nfail++;                                                          \
            fprintf (stderr, "FAIL rank %d line %d: ", rank, __LINE__);       \
            fprintf (stderr, __VA_ARGS__);                                    \
            fputc ('\n', stderr);                                             \
        }                                                                     \
    } while (0)

#define OK(call) CHECK ((call) == 0, "%s: %s", #call, ddp_last_error ())

/* CLOCK_MONOTONIC in seconds. */
static inline double now (void)
{
    struct timespec t;

    clock_gettime (CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

#endif /* DDP_RANK_CHECK_H */
