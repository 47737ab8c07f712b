/* sync.c - how a helper's step ends with the same answer on every rank
 * (sync.h): the checks before a helper's first collective, the status
 * allreduce that ends its step, and the rounds of it that let a callback
 * on one rank run longer than DDP_TIMEOUT while the others wait (with the
 * watchdog thread that takes the rank's part meanwhile).  Built on
 * libddp's public API, but for two values the core owns: DDP_DEBUG and the
 * DDP_TIMEOUT in force (ddp_internal.h, env.c: one grammar, read once);
 * below helpers.c and bytes.c.
 */
#include "config.h"
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/ddp_internal.h"
#include "ddp.h"
#include "sync.h"

bool helpers_initialized (void)
{
    return strcmp (ddp_backend_name (), "none") != 0;
}

bool helpers_debug (void)
{
    return ddpi_debug_enabled ();
}

/* The checks a helper with a root makes before any collective, with the
 * same answer on every rank: DDP_ENOINIT before ddp_init, DDP_EINVAL for a
 * root that is not a rank, else 0 with *is_root set. */
int helpers_check_root (int root, bool *is_root)
{
    if (!helpers_initialized ())
        return DDP_ENOINIT;
    if (root < 0 || root >= ddp_world_size ())
        return DDP_EINVAL;
    *is_root = ddp_rank () == root;
    return 0;
}

/* What one rank tells the others at the end of a step (allreduce MAX). */
enum {
    ST_CODE,      /* -DDP_E* of a failed rank, 0 if fine */
    ST_RANK,      /* world_size - rank of a failed rank: MAX -> lowest rank */
    ST_CHECK,     /* a value every rank must agree on ... */
    ST_NCHECK,    /* ... and its complement: MAX of both gives MIN and MAX */
    ST_FLAG,      /* any rank sets a flag */
    ST_BUSY,      /* a rank still runs its callback (helpers_run_synced) */
    ST_WORDS
};

static void st_fill (uint64_t *w, int local, uint64_t check, bool flag_in,
                     bool busy)
{
    memset (w, 0, ST_WORDS * sizeof (*w));
    if (local < 0) {
        w[ST_CODE] = (uint64_t) -local;
        w[ST_RANK] = (uint64_t) (ddp_world_size () - ddp_rank ());
    }
    w[ST_CHECK] = check;
    w[ST_NCHECK] = ~check;
    w[ST_FLAG] = flag_in ? 1 : 0;
    w[ST_BUSY] = busy ? 1 : 0;
}

/* Read the reduced words: see helpers_sync_status(). */
static int st_eval (const char *what, const uint64_t *w, int local,
                    bool *flag)
{
    if (flag)
        *flag = w[ST_FLAG] != 0;
    if (local < 0)
        return local;
    if (w[ST_CODE] != 0) {
        if (helpers_debug ())
            ddp_log ("%s: rank %d failed: %s", what,
                     ddp_world_size () - (int) w[ST_RANK],
                     ddp_strerror (-(int) w[ST_CODE]));
        return DDP_EREMOTE;
    }
    if (w[ST_CHECK] != ~w[ST_NCHECK]) {
        if (helpers_debug ())
            ddp_log ("%s: ranks passed different arguments", what);
        return DDP_EMISMATCH;
    }
    return 0;
}

/* Share this rank's status 'local' (0 or a DDP_E* code) and learn
 * everyone's.  Returns the collective's error if it failed; else 'local' if
 * this rank failed; DDP_EREMOTE if another did; DDP_EMISMATCH if 'check'
 * differs across ranks; else 0.  *flag (may be NULL) is set to whether any
 * rank passed flag_in true. */
int helpers_sync_status (const char *what, int local, uint64_t check,
                        bool flag_in, bool *flag)
{
    uint64_t w[ST_WORDS];
    int rc;

    st_fill (w, local, check, flag_in, false);
    if ((rc = ddp_allreduce (w, w, ST_WORDS, DDP_UINT64, DDP_MAX)) < 0)
        return rc;
    return st_eval (what, w, local, flag);
}

/* ---- Callbacks that may take longer than DDP_TIMEOUT -------------------
 *
 * While one rank runs a callback (main downloading a data set for minutes)
 * the others wait in a collective, and the core bounds every wait by
 * DDP_TIMEOUT (30 s by default): a plain status allreduce after the
 * callback would fail with DDP_ETIMEDOUT on the waiting ranks, and break
 * the job, whenever the callback runs longer.
 *
 * So a status exchange is a series of rounds of the status allreduce, and
 * every rank repeats them until no rank reports "busy"; all ranks leave in
 * the same round, with everyone's status.  A rank whose callback returns
 * quickly does one round itself after it: one allreduce, as before.  If the
 * callback is still running after DDP_TIMEOUT/4 (at most 2 s), a watchdog
 * thread (started once per process, asleep otherwise) takes the rank's part
 * in the rounds, marked busy, one every DDP_TIMEOUT/4, and is woken the
 * moment the callback returns to report its status.  A rank that dies still
 * ends the others' wait (the core reports DDP_EPEER).  The caller's thread
 * makes no collective call while the watchdog does (the core's
 * one-thread-at-a-time rule): callbacks must not call collectives, which
 * would deadlock anyway since the other ranks are not there. */

enum { S_IDLE, S_RUNNING, S_ROUNDS, S_FINISHED };

struct synced {
    const char *what;
    int state;              /* S_*: who does this rank's rounds */
    double start;           /* when the callback started (monotonic s) */
    bool done;              /* this rank's callback returned (or none) */
    int status;             /* its result once done */
    uint64_t check;
    bool flag_in, flag;
    int rc;                 /* the outcome, as helpers_sync_status() */
};

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;   /* protects everything here and in cur */
    pthread_cond_t cond;    /* CLOCK_MONOTONIC */
    bool running;           /* the watchdog thread exists */
    double period;          /* seconds between rounds while busy */
    struct synced *cur;     /* the callback in progress, or NULL */
} wd = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static double mono_now (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Wait on wd.cond (wd.lock held) until 'until' (monotonic seconds);
 * returns false once the time has come. */
static bool wait_until (double until)
{
    struct timespec ts;

    ts.tv_sec = (time_t) until;
    ts.tv_nsec = (long) ((until - (double) ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
    return pthread_cond_timedwait (&wd.cond, &wd.lock, &ts) == 0;
}

/* A quarter of the timeout the collectives wait (at most 2 s, at least
 * 5 ms): the value ddp_init took, never the environment read again, so a
 * waiting rank's round always comes within its bound. */
static double round_period (void)
{
    double p = ddpi_coll_timeout () / 4;

    return p > 2. ? 2. : p < 0.005 ? 0.005 : p;
}

/* Take part in status rounds for s until no rank is busy; sets s->rc.
 * While this rank's callback runs, one round per period, marked busy (only
 * then are wd.cond and wd.period used: watchdog_start() has set them). */
static void rounds (struct synced *s)
{
    uint64_t w[ST_WORDS];

    for (;;) {
        bool done;
        int st, rc;

        pthread_mutex_lock (&wd.lock);
        if (!s->done) {
            double until = mono_now () + wd.period;
            while (!s->done && wait_until (until))
                ;
        }
        done = s->done;
        st = s->status;
        pthread_mutex_unlock (&wd.lock);
        st_fill (w, done ? st : 0, s->check, s->flag_in, !done);
        if ((rc = ddp_allreduce (w, w, ST_WORDS, DDP_UINT64, DDP_MAX)) < 0) {
            s->rc = rc;
            return;
        }
        if (w[ST_BUSY] == 0) {
            s->rc = st_eval (s->what, w, st, &s->flag);
            return;
        }
    }
}

/* The CUDA device is per thread: with the NCCL backend the watchdog must
 * use the device ddp_init() chose for this rank.  libcudart is looked up at
 * run time, so builds without CUDA need nothing. */
static void follow_cuda_device (void)
{
    int dev = ddp_cuda_device ();
    int (*set_device) (int);

    if (dev < 0)
        return;
    *(void **) &set_device = dlsym (RTLD_DEFAULT, "cudaSetDevice");
    if (set_device)
        (void) set_device (dev);
}

static void *watchdog (void *arg)
{
    (void) arg;
    pthread_mutex_lock (&wd.lock);
    for (;;) {
        struct synced *s = wd.cur;
        if (s && s->state == S_RUNNING && mono_now () - s->start >= wd.period) {
            s->state = S_ROUNDS;
            pthread_mutex_unlock (&wd.lock);
            follow_cuda_device ();
            rounds (s);
            pthread_mutex_lock (&wd.lock);
            s->state = S_FINISHED;
            pthread_cond_broadcast (&wd.cond);
        }
        (void) wait_until (mono_now () + wd.period / 2);
    }
    return NULL;
}

static void watchdog_start (void)
{
    pthread_condattr_t ca;
    sigset_t all, old;
    pthread_t t;

    wd.period = round_period ();
    pthread_condattr_init (&ca);
    pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
    pthread_cond_init (&wd.cond, &ca);
    pthread_condattr_destroy (&ca);
    sigfillset (&all);      /* signals stay with the program's threads */
    pthread_sigmask (SIG_SETMASK, &all, &old);
    if (pthread_create (&t, NULL, watchdog, NULL) == 0) {
        pthread_detach (t);
        wd.running = true;
    }
    pthread_sigmask (SIG_SETMASK, &old, NULL);
}

/* Run run(arg) on this rank if 'runs' (it returns 0 or a DDP_E* code),
 * then return as helpers_sync_status() with the callback's result (or
 * 'local', if that is already a failure and run is not called) as this
 * rank's status, however long the callbacks take (see above). */
int helpers_run_synced (const char *what, bool runs, int (*run) (void *),
                        void *arg, int local, uint64_t check, bool flag_in,
                        bool *flag)
{
    struct synced s = { .what = what, .done = true, .status = local,
                        .check = check, .flag_in = flag_in };
    int st;

    if (runs && local == 0) {
        pthread_once (&wd.once, watchdog_start);
        pthread_mutex_lock (&wd.lock);
        s.done = false;
        s.state = S_RUNNING;
        s.start = mono_now ();
        if (wd.running)
            wd.cur = &s;
        pthread_mutex_unlock (&wd.lock);
        st = run (arg);
        pthread_mutex_lock (&wd.lock);
        s.status = st;
        s.done = true;
        pthread_cond_broadcast (&wd.cond);
        while (s.state == S_ROUNDS)     /* the watchdog finishes the rounds */
            pthread_cond_wait (&wd.cond, &wd.lock);
        wd.cur = NULL;
        pthread_mutex_unlock (&wd.lock);
    }
    if (s.state != S_FINISHED)
        rounds (&s);
    if (flag)
        *flag = s.flag;
    return s.rc;
}

/* vi: ts=4 sw=4 expandtab
 */
