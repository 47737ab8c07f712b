/* pingpong.c - how long a cache line takes between two of this machine's
 * CPUs, for compare.sh's report header.
 *
 * Two threads pass a counter back and forth through two cache lines, each
 * writing its own and spinning on the other's; the mean round trip is
 * printed in nanoseconds.  On the 2-CPU VMs this project is measured on it
 * changed from ~600 to ~160 ns and back within one session (the host
 * placing the two vCPUs nearer or farther), and one node's small
 * collectives moved with it: a report's 1 x 2 small rows are read with
 * this number beside them (doc/benchmarks.md).
 *
 *   ddp-pingpong [ROUND_TRIPS]     (default 200000)
 *
 * Exit status 0, or 1 with a message when the thread cannot be started or
 * the argument is not a count. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct line {
    _Alignas (64) _Atomic long v;
    char pad[64 - sizeof (long)];
};

static struct line ping, pong;
static long trips = 200000;

/* Spin until *l reaches want; yield now and then, so that two threads on
 * one CPU (taskset) still finish. */
static void await (struct line *l, long want)
{
    unsigned spins = 0;

    while (atomic_load_explicit (&l->v, memory_order_acquire) < want)
        if (++spins % 100000 == 0)
            sched_yield ();
}

static void *responder (void *arg)
{
    (void)arg;
    for (long i = 1; i <= trips; i++) {
        await (&ping, i);
        atomic_store_explicit (&pong.v, i, memory_order_release);
    }
    return NULL;
}

static double now_ns (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main (int argc, char **argv)
{
    pthread_t t;
    double t0, t1;
    char *end;
    int rc;

    if (argc > 2 || (argc == 2 && ((trips = strtol (argv[1], &end, 10)) < 1
                                   || *end != '\0'))) {
        fprintf (stderr, "usage: ddp-pingpong [ROUND_TRIPS] (a count >= 1)\n");
        return 1;
    }
    if ((rc = pthread_create (&t, NULL, responder, NULL)) != 0) {
        fprintf (stderr, "ddp-pingpong: pthread_create: %s\n", strerror (rc));
        return 1;
    }
    t0 = now_ns ();
    for (long i = 1; i <= trips; i++) {
        atomic_store_explicit (&ping.v, i, memory_order_release);
        await (&pong, i);
    }
    t1 = now_ns ();
    pthread_join (t, NULL);
    printf ("%.0f\n", (t1 - t0) / (double)trips);
    return 0;
}
