/* helpers.c - the main-process helpers (run on main, rank 0 first,
 * compute and broadcast, reduce and broadcast, averaging, gathering named
 * values and scalars) and variable-size data (bcast/gatherv/allgatherv of
 * bytes), built only on libddp's public API.
 *
 * A failure on one rank (a callback, a bad argument, an allocation) becomes
 * an error on every rank, carried by the collective that ends the step: the
 * rank that failed returns its own code, every other rank DDP_EREMOTE.  How
 * this compares with the Python helpers it replaces, and what each helper
 * costs in collectives: doc/api-map.md.
 */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ddp.h"

#define BCAST_INLINE 240            /* bytes carried in the bcast header */
#define GV_INLINE 48                /* bytes carried in the gatherv header */
#define GV_SCRATCH (64u << 20)      /* receive scratch of a padded gather */
#define GV_MIN_CHUNK 64u            /* bytes per rank and round at least */
#define NAMED_STACK 64              /* doubles on the stack for average_named */
#define NAMED_HASH_SLOTS 6          /* 3 16-bit hash pieces and their squares */

/* Depth of main-only callbacks running on this thread: a helper called
 * from inside one runs locally, like speechbrain's MAIN_PROC_ONLY guard. */
static __thread int main_only_depth;

static bool initialized (void)
{
    return strcmp (ddp_backend_name (), "none") != 0;
}

static bool debug (void)
{
    const char *s = getenv ("DDP_DEBUG");
    return s && *s && strcmp (s, "0") != 0;
}

/* The checks a helper with a root makes before any collective, with the
 * same answer on every rank: DDP_ENOINIT before ddp_init, DDP_EINVAL for a
 * root that is not a rank, else 0 with *is_root set. */
static int check_root (int root, bool *is_root)
{
    if (!initialized ())
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
    ST_BUSY,      /* a rank is still running its callback (run_synced) */
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

/* Read the reduced words: see sync_status(). */
static int st_eval (const char *what, const uint64_t *w, int local,
                    bool *flag)
{
    if (flag)
        *flag = w[ST_FLAG] != 0;
    if (local < 0)
        return local;
    if (w[ST_CODE] != 0) {
        if (debug ())
            ddp_log ("%s: rank %d failed: %s", what,
                     ddp_world_size () - (int) w[ST_RANK],
                     ddp_strerror (-(int) w[ST_CODE]));
        return DDP_EREMOTE;
    }
    if (w[ST_CHECK] != ~w[ST_NCHECK]) {
        if (debug ())
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
static int sync_status (const char *what, int local, uint64_t check,
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
    int rc;                 /* the outcome, as sync_status() */
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

static double round_period (void)
{
    const char *s = getenv ("DDP_TIMEOUT");
    double t = 30., p;
    char *end;

    if (s && *s) {
        double v = strtod (s, &end);
        if (end != s && v > 0)
            t = v;
    }
    p = t / 4;
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
 * then return as sync_status() with the callback's result (or 'local', if
 * that is already a failure and run is not called) as this rank's status,
 * however long the callbacks take (see above). */
static int run_synced (const char *what, bool runs, int (*run) (void *),
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

/* Run a callback; a non-zero return becomes DDP_EUSER. */
static int call (ddp_fn_t fn, void *arg, bool main_only)
{
    int rc;

    if (main_only)
        main_only_depth++;
    rc = fn (arg);
    if (main_only)
        main_only_depth--;
    return rc != 0 ? DDP_EUSER : 0;
}

struct call_args {
    ddp_fn_t fn;
    void *arg;
    bool main_only;
};

static int run_call (void *arg)
{
    struct call_args *c = arg;
    return c->fn ? call (c->fn, c->arg, c->main_only) : DDP_EINVAL;
}

/* ---- Variable-size data ----------------------------------------------- */

struct bcast_hdr {
    uint64_t len;
    uint64_t status;                /* -DDP_E* of the root, 0 if fine */
    unsigned char data[BCAST_INLINE];
};

/* Broadcast (*buf, *len) from root.  'st' is this rank's status so far:
 * root puts its own in the header (then nothing else moves); another rank's
 * is shared in the allocation round.  On success a non-root rank has a
 * malloc'd *buf (NULL for length 0) and *len; on failure *buf is NULL
 * there.  Root's buffer is never touched. */
static int bcast_bytes (const char *what, void **buf, size_t *len, int root,
                        int st)
{
    struct bcast_hdr h;
    bool is_root = ddp_rank () == root;
    void *p = NULL;
    int rc;

    memset (&h, 0, sizeof (h));
    if (is_root) {
        h.status = st < 0 ? (uint64_t) -st : 0;
        if (st == 0) {
            h.len = *len;
            if (*len <= BCAST_INLINE && *len > 0)
                memcpy (h.data, *buf, *len);
        }
    }
    if ((rc = ddp_bcast (&h, sizeof (h), DDP_UINT8, root)) < 0)
        return rc;
    if (h.status != 0) {
        if (is_root)
            return st;
        if (debug ())
            ddp_log ("%s: root %d failed: %s", what, root,
                     ddp_strerror (-(int) h.status));
        return st < 0 ? st : DDP_EREMOTE;
    }
    if (is_root) {
        if (h.len <= BCAST_INLINE)
            return 0;
        if ((rc = sync_status (what, 0, 0, false, NULL)) < 0)
            return rc;
        return ddp_bcast (*buf, *len, DDP_UINT8, root);
    }
    if (h.len > SIZE_MAX)
        st = st < 0 ? st : DDP_ENOMEM;
    else if (st == 0 && h.len > 0 && !(p = malloc ((size_t) h.len)))
        st = DDP_ENOMEM;
    if (h.len <= BCAST_INLINE) {        /* done: no further collective */
        if (st < 0)
            goto error;
        if (h.len > 0)
            memcpy (p, h.data, (size_t) h.len);
    }
    else {
        if ((rc = sync_status (what, st, 0, false, NULL)) < 0) {
            st = rc;
            goto error;
        }
        if ((rc = ddp_bcast (p, (size_t) h.len, DDP_UINT8, root)) < 0) {
            st = rc;
            goto error;
        }
    }
    *buf = p;
    *len = (size_t) h.len;
    return 0;
error:
    free (p);
    return st;
}

int ddp_bcast_bytes (void **buf, size_t *len, int root)
{
    void *b = NULL;
    size_t l = 0;
    int st = 0, rc;
    bool is_root;

    if ((rc = check_root (root, &is_root)) < 0)
        return rc;
    if (!buf || !len)
        st = DDP_EINVAL;
    else if (is_root) {
        b = *buf;
        l = *len;
        if (!b && l > 0)
            st = DDP_EINVAL;
    }
    else {
        *buf = NULL;
        *len = 0;
    }
    rc = bcast_bytes ("ddp_bcast_bytes", &b, &l, root, st);
    if (rc == 0 && !is_root) {
        *buf = b;
        *len = l;
    }
    return rc;
}

struct gv_slot {
    uint64_t len;
    uint64_t status;
    unsigned char data[GV_INLINE];
};

struct gv {
    const unsigned char *buf;
    size_t len;
    bool all;                   /* allgather: every rank receives */
    bool recv;                  /* this rank receives */
    int root;
    int world;
    size_t max, total;
    bool equal;                 /* every rank has the same length */
    struct gv_slot *slots;
    size_t *lens, *displs;
    unsigned char *out;
    unsigned char *scratch;     /* receivers: world * chunk */
    unsigned char *pad;         /* senders: chunk */
    size_t chunk;
};

static void gv_free (struct gv *g)
{
    free (g->slots);
    free (g->lens);
    free (g->displs);
    free (g->out);
    free (g->scratch);
    free (g->pad);
}

static int gv_collective (struct gv *g, const void *send, void *recv,
                          size_t count)
{
    if (g->all)
        return ddp_allgather (send, recv, count, DDP_UINT8);
    return ddp_gather (send, recv, count, DDP_UINT8, g->root);
}

/* Exchange every rank's length and status (and data up to GV_INLINE). */
static int gv_header (struct gv *g, int st)
{
    struct gv_slot me;
    int rc;

    memset (&me, 0, sizeof (me));
    if (st < 0)
        me.status = (uint64_t) -st;
    else {
        me.len = g->len;
        if (g->len <= GV_INLINE && g->len > 0)
            memcpy (me.data, g->buf, g->len);
    }
    if ((rc = ddp_allgather (&me, g->slots, sizeof (me), DDP_UINT8)) < 0)
        return rc;
    g->max = 0;
    g->total = 0;
    g->equal = true;
    for (int r = 0; r < g->world; r++) {
        if (g->slots[r].status != 0) {
            if (st < 0)
                return st;
            if (debug ())
                ddp_log ("%s: rank %d failed: %s",
                     g->all ? "ddp_allgatherv_bytes" : "ddp_gatherv_bytes", r,
                         ddp_strerror (-(int) g->slots[r].status));
            return DDP_EREMOTE;
        }
        if (g->slots[r].len > SIZE_MAX - g->total)
            return DDP_ENOMEM;  /* the same on every rank */
        if (g->slots[r].len != g->slots[0].len)
            g->equal = false;
        if (g->slots[r].len > g->max)
            g->max = (size_t) g->slots[r].len;
        g->total += (size_t) g->slots[r].len;
    }
    return 0;
}

/* Allocate what this rank needs for the payload; returns 0 or DDP_ENOMEM. */
static int gv_alloc (struct gv *g)
{
    size_t off = 0;

    if (g->recv) {
        if (!(g->lens = calloc ((size_t) g->world, sizeof (size_t)))
            || !(g->displs = calloc ((size_t) g->world, sizeof (size_t))))
            return DDP_ENOMEM;
        for (int r = 0; r < g->world; r++) {
            g->lens[r] = (size_t) g->slots[r].len;
            g->displs[r] = off;
            off += g->lens[r];
        }
        if (g->total > 0 && !(g->out = malloc (g->total)))
            return DDP_ENOMEM;
    }
    if (g->max <= GV_INLINE || g->equal)
        return 0;
    /* world x chunk of scratch: at most GV_SCRATCH (64 bytes a rank when
     * the world is larger than 1 Mi ranks), never world x a fixed KiB. */
    g->chunk = GV_SCRATCH / (size_t) g->world;
    if (g->chunk < GV_MIN_CHUNK)
        g->chunk = GV_MIN_CHUNK;
    if (g->chunk > g->max)
        g->chunk = g->max;
    if (g->recv && !(g->scratch = malloc (g->chunk * (size_t) g->world)))
        return DDP_ENOMEM;
    if (!(g->pad = malloc (g->chunk)))
        return DDP_ENOMEM;
    return 0;
}

/* Lengths differ: move the data in rounds of 'chunk' bytes per rank, each
 * rank padding its part of a round to the full chunk. */
static int gv_padded (struct gv *g)
{
    for (size_t off = 0; off < g->max; off += g->chunk) {
        size_t n = g->max - off < g->chunk ? g->max - off : g->chunk;
        const void *src = g->pad;
        int rc;

        if (g->len >= off + n)
            src = g->buf + off;
        else {
            memset (g->pad, 0, n);
            if (g->len > off)
                memcpy (g->pad, g->buf + off, g->len - off);
        }
        if ((rc = gv_collective (g, src, g->scratch, n)) < 0)
            return rc;
        if (!g->recv)
            continue;
        for (int r = 0; r < g->world; r++) {
            if (g->lens[r] > off) {
                size_t k = g->lens[r] - off < n ? g->lens[r] - off : n;
                memcpy (g->out + g->displs[r] + off, g->scratch + (size_t) r * n,
                        k);
            }
        }
    }
    return 0;
}

static int gv_payload (struct gv *g)
{
    if (g->max <= GV_INLINE) {
        if (g->recv) {
            for (int r = 0; r < g->world; r++)
                if (g->lens[r] > 0)
                    memcpy (g->out + g->displs[r], g->slots[r].data,
                            g->lens[r]);
        }
        return 0;
    }
    if (g->equal)
        return gv_collective (g, g->buf, g->out, g->max);
    return gv_padded (g);
}

static int gatherv (const void *buf, size_t len, void **out, size_t **lens,
                    int root, bool all)
{
    struct gv g;
    int st = 0, rc;
    bool is_root;

    if ((rc = check_root (all ? 0 : root, &is_root)) < 0) /* 0: a rank */
        return rc;
    memset (&g, 0, sizeof (g));
    g.buf = buf;
    g.len = len;
    g.all = all;
    g.root = root;
    g.world = ddp_world_size ();
    g.recv = all || is_root;
    if (!out || !lens || (!buf && len > 0))
        st = DDP_EINVAL;
    else {
        *out = NULL;
        *lens = NULL;
    }
    if (!(g.slots = calloc ((size_t) g.world, sizeof (*g.slots)))) {
        rc = DDP_ENOMEM;    /* cannot take part: peers time out */
        goto out;
    }
    if ((rc = gv_header (&g, st)) < 0)
        goto out;
    st = gv_alloc (&g);
    if (g.max <= GV_INLINE) {   /* no collective left: a local failure */
        if ((rc = st) < 0)
            goto out;
    }
    else if ((rc = sync_status (all ? "ddp_allgatherv_bytes"
                                    : "ddp_gatherv_bytes", st, 0, false,
                                NULL)) < 0)
        goto out;
    if ((rc = gv_payload (&g)) < 0)
        goto out;
    if (g.recv) {
        *out = g.out;
        *lens = g.lens;
        g.out = NULL;
        g.lens = NULL;
    }
out:
    gv_free (&g);
    return rc;
}

int ddp_gatherv_bytes (const void *buf, size_t len, void **out, size_t **lens,
                       int root)
{
    return gatherv (buf, len, out, lens, root, false);
}

int ddp_allgatherv_bytes (const void *buf, size_t len, void **out,
                          size_t **lens)
{
    return gatherv (buf, len, out, lens, 0, true);
}

/* ---- Main-process helpers --------------------------------------------- */

int ddp_run_on_main (ddp_fn_t fn, void *arg, ddp_fn_t post_fn, void *post_arg,
                     bool post_on_main)
{
    bool is_main = ddp_is_main (), any_post = false;
    struct call_args c;
    int rc;

    if (!initialized ())
        return DDP_ENOINIT;
    if (main_only_depth > 0) {
        /* Nested in a main-only callback: only main is here; run locally. */
        if (!fn)
            return DDP_EINVAL;
        if ((rc = call (fn, arg, true)) < 0 || !post_fn || !post_on_main)
            return rc;
        return call (post_fn, post_arg, false);
    }
    /* Only main needs fn; its status ends the step on every rank. */
    c = (struct call_args){ .fn = fn, .arg = arg, .main_only = true };
    rc = run_synced ("ddp_run_on_main", is_main, run_call, &c, 0, 0,
                     post_fn != NULL, &any_post);
    if (rc < 0 || !any_post)
        return rc;
    c = (struct call_args){ .fn = post_fn, .arg = post_arg };
    return run_synced ("ddp_run_on_main post_fn",
                       post_fn && (!is_main || post_on_main), run_call, &c, 0,
                       0, false, NULL);
}

int ddp_main_only (ddp_fn_t fn, void *arg)
{
    return ddp_run_on_main (fn, arg, NULL, NULL, false);
}

/* fn runs first where 'first' is true; the others run it once all of those
 * succeeded. */
static int first_then_rest (const char *what, ddp_fn_t fn, void *arg,
                            bool first)
{
    struct call_args c = { .fn = fn, .arg = arg };
    int st = fn ? 0 : DDP_EINVAL, rc;

    if (!initialized ())
        return DDP_ENOINIT;
    if (main_only_depth > 0)    /* nested on main: only main is here */
        return fn ? call (fn, arg, false) : DDP_EINVAL;
    if ((rc = run_synced (what, first, run_call, &c, st, 0, false, NULL)) < 0)
        return rc;
    return run_synced (what, !first, run_call, &c, st, 0, false, NULL);
}

int ddp_rank0_first (ddp_fn_t fn, void *arg)
{
    return first_then_rest ("ddp_rank0_first", fn, arg, ddp_is_main ());
}

int ddp_local_rank0_first (ddp_fn_t fn, void *arg)
{
    return first_then_rest ("ddp_local_rank0_first", fn, arg,
                            ddp_is_local_main ());
}

struct compute_args {
    ddp_compute_fn_t fn;
    void *arg;
    void *out;
    size_t len;
};

static int run_compute (void *arg)
{
    struct compute_args *c = arg;

    if (!c->fn)
        return DDP_EINVAL;
    if (c->fn (c->arg, &c->out, &c->len) != 0 || (!c->out && c->len > 0)) {
        c->out = NULL;      /* not examined after a failure */
        c->len = 0;
        return DDP_EUSER;
    }
    return 0;
}

/* The root's status is shared by run_synced() (the computation may take
 * longer than DDP_TIMEOUT), then the result is broadcast. */
int ddp_compute_and_bcast (ddp_compute_fn_t fn, void *arg, int root,
                           void **out, size_t *len)
{
    struct compute_args c = { .fn = fn, .arg = arg };
    int st = 0, rc;
    bool is_root;

    if ((rc = check_root (root, &is_root)) < 0)
        return rc;
    if (!out || !len)
        st = DDP_EINVAL;
    else {
        *out = NULL;
        *len = 0;
    }
    rc = run_synced ("ddp_compute_and_bcast", is_root, run_compute, &c, st, 0,
                     false, NULL);
    if (rc == 0)
        rc = bcast_bytes ("ddp_compute_and_bcast", &c.out, &c.len, root, 0);
    if (rc < 0) {
        if (is_root)
            free (c.out);
        return rc;
    }
    *out = c.out;
    *len = c.len;
    return 0;
}

int ddp_reduce_bcast (void *buf, size_t count, size_t elem_size,
                      ddp_user_op_t op, void *ctx)
{
    int world = ddp_world_size (), st = 0, rc;
    bool is_root = ddp_rank () == 0;
    unsigned char *scratch = NULL;
    size_t n = 0;

    if (!initialized ())
        return DDP_ENOINIT;
    if (elem_size != 0 && count > SIZE_MAX / elem_size)
        st = DDP_EINVAL;
    else
        n = count * elem_size;
    if (!op || (!buf && n > 0) || (elem_size == 0 && count > 0))
        st = DDP_EINVAL;
    if (st == 0 && is_root && n > 0) {
        if (n > SIZE_MAX / (size_t) world
            || !(scratch = malloc (n * (size_t) world)))
            st = DDP_ENOMEM;
    }
    /* n must agree everywhere: a mismatch is reported, not a hang. */
    if ((rc = sync_status ("ddp_reduce_bcast", st, n, false, NULL)) < 0)
        goto out;
    if (n == 0)
        goto out;
    if ((rc = ddp_gather (buf, scratch, n, DDP_UINT8, 0)) < 0)
        goto out;
    if (is_root) {
        for (int r = 1; r < world; r++)
            op (scratch, scratch + (size_t) r * n, count, ctx);
        memcpy (buf, scratch, n);
    }
    rc = ddp_bcast (buf, n, DDP_UINT8, 0);
out:
    free (scratch);
    return rc;
}

int ddp_average (void *buf, size_t count, ddp_dtype_t dtype)
{
    if (!initialized ())
        return DDP_ENOINIT;
    return ddp_allreduce (buf, buf, count, dtype, DDP_AVG);
}

/* FNV-1a over n and every name (with its terminating NUL). */
static uint64_t names_hash (const ddp_named_value_t *v, size_t n)
{
    uint64_t h = UINT64_C (0xcbf29ce484222325);
    const uint64_t prime = UINT64_C (0x100000001b3);

    for (size_t i = 0; i < sizeof (n); i++) {
        h ^= (n >> (8 * i)) & 0xff;
        h *= prime;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = v[i].name;
        do {
            h ^= (unsigned char) *s;
            h *= prime;
        } while (*s++);
    }
    return h;
}

/* The names check rides in the same SUM allreduce as the values: for each
 * 16-bit piece p of the names' hash a rank adds p and p*p.  All ranks agree
 * iff W * sum(p^2) == (sum p)^2 (Cauchy-Schwarz, equality iff every p is
 * the same).  The sums are integers below 2^53 (W < 2^21), exact in double
 * whatever the reduction order. */
static bool names_agree (const double *slot, int world)
{
    for (int k = 0; k < NAMED_HASH_SLOTS; k += 2) {
        unsigned __int128 s1 = (uint64_t) slot[k];
        unsigned __int128 s2 = (uint64_t) slot[k + 1];
        if (s2 * (unsigned) world != s1 * s1)
            return false;
    }
    return true;
}

int ddp_average_named (ddp_named_value_t *values, size_t n)
{
    double stackbuf[NAMED_STACK];
    double *buf = stackbuf;
    int world = ddp_world_size (), st = 0, rc;
    uint64_t h = UINT64_C (0x5bd1e9955bd1e995); /* poison: a local error */
    size_t m;

    if (!initialized ())
        return DDP_ENOINIT;
    if (n > SIZE_MAX / sizeof (double) - NAMED_HASH_SLOTS)
        return DDP_EINVAL;
    m = n + NAMED_HASH_SLOTS;
    if (m > NAMED_STACK && !(buf = malloc (m * sizeof (double))))
        return DDP_ENOMEM;  /* cannot take part: peers time out */
    if (!values && n > 0)
        st = DDP_EINVAL;
    for (size_t i = 0; st == 0 && i < n; i++)
        if (!values[i].name)
            st = DDP_EINVAL;
    if (st == 0)
        h = names_hash (values, n);
    for (size_t i = 0; i < n; i++)
        buf[i] = st == 0 ? values[i].value : 0.;
    for (int k = 0; k < NAMED_HASH_SLOTS / 2; k++) {
        double p = (double) ((h >> (16 * k)) & 0xffff);
        buf[n + 2 * k] = p;
        buf[n + 2 * k + 1] = p * p;
    }
    if ((rc = ddp_allreduce (buf, buf, m, DDP_FLOAT64, DDP_SUM)) < 0)
        goto out;
    if ((rc = st) < 0)
        goto out;
    if (!names_agree (buf + n, world)) {
        if (debug ())
            ddp_log ("ddp_average_named: ranks passed different names");
        rc = DDP_EMISMATCH;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        values[i].value = buf[i] / (double) world;
out:
    if (buf != stackbuf)
        free (buf);
    return rc;
}

/* Each rank's slot: [status, names hash (bits), values...]. */
int ddp_allgather_named (const ddp_named_value_t *values, size_t n,
                         double *out)
{
    int world = ddp_world_size (), me = ddp_rank (), st = 0, rc;
    size_t m = n + 2;
    double *all = NULL;
    uint64_t h = 0, hr;

    if (!initialized ())
        return DDP_ENOINIT;
    if (n > SIZE_MAX / sizeof (double) / (size_t) world - 2)
        return DDP_EINVAL;
    if (!(all = calloc ((size_t) world * m, sizeof (double))))
        return DDP_ENOMEM;  /* cannot take part: peers time out */
    if (!out || (!values && n > 0))
        st = DDP_EINVAL;
    for (size_t i = 0; st == 0 && i < n; i++)
        if (!values[i].name)
            st = DDP_EINVAL;
    double *mine = all + (size_t) me * m;
    mine[0] = (double) -st;
    if (st == 0) {
        h = names_hash (values, n);
        memcpy (&mine[1], &h, sizeof (h));
        for (size_t i = 0; i < n; i++)
            mine[2 + i] = values[i].value;
    }
    if ((rc = ddp_allgather (mine, all, m, DDP_FLOAT64)) < 0)
        goto out;
    if ((rc = st) < 0)
        goto out;
    for (int r = 0; r < world; r++) {
        const double *slot = all + (size_t) r * m;
        if (slot[0] != 0.) {
            if (debug ())
                ddp_log ("ddp_allgather_named: rank %d failed: %s", r,
                         ddp_strerror (-(int) slot[0]));
            rc = DDP_EREMOTE;
            goto out;
        }
        memcpy (&hr, &slot[1], sizeof (hr));
        if (hr != h) {
            if (debug ())
                ddp_log ("ddp_allgather_named: rank %d passed other names", r);
            rc = DDP_EMISMATCH;
            goto out;
        }
    }
    for (int r = 0; r < world; r++)
        memcpy (out + (size_t) r * n, all + (size_t) r * m + 2,
                n * sizeof (double));
out:
    free (all);
    return rc;
}

int ddp_gather_scalar (double value, double *out, int root)
{
    double *recv = out, *scratch = NULL;
    int st = 0, rc;
    bool is_root;

    if ((rc = check_root (root, &is_root)) < 0)
        return rc;
    if (is_root && !out) {
        /* Still take part so that the senders are not left waiting. */
        st = DDP_EINVAL;
        if (!(recv = scratch = calloc ((size_t) ddp_world_size (),
                                       sizeof (double))))
            return DDP_ENOMEM;
    }
    rc = ddp_gather (&value, recv, 1, DDP_FLOAT64, root);
    free (scratch);
    return rc < 0 ? rc : st;
}

/* vi: ts=4 sw=4 expandtab
 */
