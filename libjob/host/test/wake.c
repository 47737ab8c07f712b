/* wake.c - node-mates asleep on a flag (shm.c): a post wakes those counted
 * as asleep on that flag and makes no call when none is; a wait with
 * neither spinning nor yielding sleeps on the flag (counted while it
 * does) and returns once the flag is posted.  Threads stand for the local
 * ranks of one node; the flags live in shared memory as in a segment. */
#include "config.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "host.h"
#include "transport.h"

static struct shm_flags *flags;
static struct ddp_config cfg = { .timeout_s = 20.0, .debug = false };

/* Local rank lr of a 2-rank node whose flags are the shared ones. */
static struct host *new_host (int lr)
{
    struct host *h = calloc (1, sizeof (*h));

    h->hdr = calloc (1, sizeof (*h->hdr));
    h->flags = flags;
    h->lrank = lr;
    h->lsize = 2;
    h->size = 2;
    h->cfg = &cfg;
    h->lpids = calloc (2, sizeof (pid_t));
    h->pidfds = calloc (2, sizeof (int));
    h->local_ranks = calloc (2, sizeof (int));
    for (int i = 0; i < 2; i++) {
        h->lpids[i] = getpid ();
        h->pidfds[i] = -1;
        h->local_ranks[i] = i;
    }
    return h;
}

static void free_host (struct host *h)
{
    free (h->local_ranks);
    free (h->pidfds);
    free (h->lpids);
    free (h->hdr);
    free (h);
}

static double now (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- a post and a raw futex sleeper ------------------------------------ */

struct sleeper {
    _Atomic uint64_t *flag;
    double timeout_s;
    _Atomic int asleep;
    long rc;
    int err;
};

/* Sleep on the low half of *flag while it holds 0 (the kernel's own wait,
 * so that only host_post can end it before the timeout). */
static void *sleep_raw (void *arg)
{
    struct sleeper *s = arg;
    struct timespec ts = { (time_t)s->timeout_s, 0 };

    atomic_store (&s->asleep, 1);
    s->rc = syscall (SYS_futex, (uint32_t *)s->flag, FUTEX_WAIT, 0u, &ts,
                     NULL, 0);
    s->err = errno;
    return NULL;
}

/* Until the sleeper is about to sleep, and some time more. */
static void wait_asleep (struct sleeper *s)
{
    while (!atomic_load (&s->asleep))
        usleep (1000);
    /* The thread's state is not read portably; a sleep this long leaves
     * it in FUTEX_WAIT (EAGAIN from the kernel would show otherwise). */
    usleep (100000);
}

static void test_post_wakes (void)
{
    struct host *h = new_host (0);
    struct sleeper s = { &flags[0].fin, 10.0, 0, 0, 0 };
    pthread_t t;
    double t0;

    atomic_store (&flags[0].fin, 0);
    atomic_store (&flags[0].sleepers[2], 1);    /* as nap_on_flag counts */
    pthread_create (&t, NULL, sleep_raw, &s);
    wait_asleep (&s);
    t0 = now ();
    host_post (h, 2, 1);
    pthread_join (t, NULL);
    ok (s.rc == 0, "a post wakes a node-mate counted asleep on that flag "
        "(futex: %ld, %s, after %.3f s)", s.rc, s.rc ? strerror (s.err) : "",
        now () - t0);
    is_int ((int)atomic_load (&flags[0].fin), 1, "... and the flag holds the "
            "step");
    atomic_store (&flags[0].sleepers[2], 0);
    free_host (h);
}

static void test_post_quiet (void)
{
    struct host *h = new_host (0);
    struct sleeper s = { &flags[0].red, 0.5, 0, 0, 0 };
    pthread_t t;

    /* Asleep but not counted: a post must not call the kernel for it (no
     * wake, so the sleeper reaches its timeout). */
    atomic_store (&flags[0].red, 0);
    pthread_create (&t, NULL, sleep_raw, &s);
    wait_asleep (&s);
    host_post (h, 1, 1);
    pthread_join (t, NULL);
    ok (s.rc < 0 && s.err == ETIMEDOUT, "with no node-mate counted asleep a "
        "post makes no wake call (the uncounted sleeper timed out: %s)",
        s.rc < 0 ? strerror (s.err) : "woken");
    free_host (h);
}

/* ---- a wait asleep through host_wait_flag ------------------------------ */

struct waiter {
    struct host *h;
    uint64_t step;
    int rc;
    double done;
};

static void *wait_fin (void *arg)
{
    struct waiter *w = arg;

    w->rc = host_wait_flag (w->h, 0, 2, w->step);
    w->done = now ();
    return NULL;
}

static void test_wait_sleeps (void)
{
    struct host *h0 = new_host (0), *h1 = new_host (1);
    struct waiter w = { h1, 5, -1, 0 };
    double t0, posted;
    unsigned counted = 0;
    pthread_t t;

    h1->spin_us = 0;
    h1->yield_s = 0;
    atomic_store (&flags[0].fin, 4);
    pthread_create (&t, NULL, wait_fin, &w);
    t0 = now ();
    while (now () - t0 < 5.0
           && (counted = atomic_load (&flags[0].sleepers[2])) == 0)
        usleep (100);
    ok (counted == 1, "a wait with no spinning and no yielding counts itself "
        "asleep on the flag it waits for (%u)", counted);
    usleep (50000);
    host_post (h0, 2, 4);       /* not yet its step */
    usleep (50000);
    ok (w.done == 0, "... a post of an earlier step does not end it");
    posted = now ();
    host_post (h0, 2, 5);
    pthread_join (t, NULL);
    is_int (w.rc, 0, "... the post of its step does");
    is_int ((int)atomic_load (&flags[0].sleepers[2]), 0,
            "... and it no longer counts itself asleep");
    diag ("woke %.0f us after the post", (w.done - posted) * 1e6);
    free_host (h0);
    free_host (h1);
}

int main (void)
{
    plan (NO_PLAN);
    flags = mmap (NULL, 2 * sizeof (*flags), PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (flags == MAP_FAILED)
        bail_out ("mmap of the shared flags failed");
    memset (flags, 0, 2 * sizeof (*flags));
    test_post_wakes ();
    test_post_quiet ();
    test_wait_sleeps ();
    munmap (flags, 2 * sizeof (*flags));
    done_testing ();
    return 0;
}
