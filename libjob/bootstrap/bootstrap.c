/* bootstrap.c - find rank and peers: PMIx, else a single process.
 * See bootstrap.h for the contract. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_PMIX
#include <pmix.h>
#endif

#include "bootstrap.h"
#include "ddp_internal.h"
#include "rollcall.h"

#define MAX_BLOB (64 * 1024)

struct bootstrap {
    struct bootstrap_info info;
    double timeout_s;
    bool pmix;
    char job_id[300];
#ifdef HAVE_PMIX
    pmix_proc_t me;
#endif
};

/* Exchange keys: never reused, also across ddp_init() generations. */
static unsigned long exchange_seq;

static int errf (char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));

static int errf (char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    if (err && errlen) {
        va_start (ap, fmt);
        vsnprintf (err, errlen, fmt, ap);
        va_end (ap);
    }
    return code;
}

/* Strictly parse an optional environment integer in [min, max].
 * Returns 1 and sets *out if set, 0 if unset, or DDP_EINVAL. */
static int env_int (const char *name, long min, long max, long *out,
                    char *err, size_t errlen)
{
    const char *s = getenv (name);

    if (!s)
        return 0;
    if (ddpi_parse_long (s, min, max, out) < 0)
        return errf (err, errlen, DDP_EINVAL,
                     "%s='%s' is not an integer in [%ld, %ld]", name, s, min,
                     max);
    return 1;
}

/* A hint from a launcher that does not speak PMIx to us: return the world
 * size it announces (> 1) and its variable name, or 0. */
static long foreign_world (const char **name)
{
    static const char *vars[] = { "SLURM_STEP_NUM_TASKS",
                                  "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL };
    long v;
    int i;

    for (i = 0; vars[i]; i++) {
        if (ddpi_parse_long (getenv (vars[i]), 1, INT_MAX, &v) == 0 && v > 1) {
            *name = vars[i];
            return v;
        }
    }
    return 0;
}

static bool pmix_env_present (void)
{
    extern char **environ;
    char **e;

    if (getenv ("PMIX_NAMESPACE"))
        return true;
    for (e = environ; e && *e; e++)
        if (strncmp (*e, "PMIX_SERVER_URI", 15) == 0)
            return true;
    return false;
}

static int single_create (struct bootstrap *b, char *err, size_t errlen)
{
    b->info.rank = 0;
    b->info.size = 1;
    b->info.local_rank = 0;
    b->info.local_size = 1;
    b->info.node_rank = 0;
    b->info.num_nodes = 1;
    b->info.method = "single";
    if (!(b->info.local_ranks = calloc (1, sizeof (int))))
        return errf (err, errlen, DDP_ENOMEM, "out of memory");
    snprintf (b->job_id, sizeof (b->job_id), "single.%d", (int)getpid ());
    return 0;
}

#ifdef HAVE_PMIX
/* Read an unsigned integer of any PMIx integer type. */
static int pmix_get_uint (pmix_proc_t *p, const char *key, unsigned long *out)
{
    pmix_value_t *v = NULL;
    int rc = 0;

    if (PMIx_Get (p, key, NULL, 0, &v) != PMIX_SUCCESS || !v)
        return -1;
    switch (v->type) {
    case PMIX_UINT8: *out = v->data.uint8; break;
    case PMIX_UINT16: *out = v->data.uint16; break;
    case PMIX_UINT32: *out = v->data.uint32; break;
    case PMIX_UINT64: *out = v->data.uint64; break;
    case PMIX_SIZE: *out = v->data.size; break;
    case PMIX_INT:
        if (v->data.integer < 0)
            rc = -1;
        *out = (unsigned long)v->data.integer;
        break;
    case PMIX_INT32:
        if (v->data.int32 < 0)
            rc = -1;
        *out = (unsigned long)v->data.int32;
        break;
    default: rc = -1; break;
    }
    PMIX_VALUE_RELEASE (v);
    return rc;
}

/* Parse PMIX_LOCAL_PEERS ("0,1,5") into a sorted array of local_size. */
static int parse_peers (const char *s, int size, int *out, int n)
{
    int i = 0;
    long v;
    char tok[32];

    while (*s) {
        size_t len = strcspn (s, ",");
        if (len == 0 || len >= sizeof (tok) || i >= n)
            return -1;
        memcpy (tok, s, len);
        tok[len] = '\0';
        if (ddpi_parse_long (tok, 0, size - 1, &v) < 0)
            return -1;
        out[i++] = (int)v;
        s += len;
        if (*s == ',')
            s++;
    }
    if (i != n)
        return -1;
    ddpi_sort_ranks (out, n);
    for (i = 1; i < n; i++)
        if (out[i] == out[i - 1])
            return -1;
    return 0;
}

/* PMIx stays initialized from the first ddp_init() to the end of the
 * process: a PMIx client finalized and initialized again no longer sees the
 * job's data (PMIX_NODEID ...), and ddp_init() may follow ddp_finalize(). */
static bool pmix_up;
static pmix_proc_t pmix_me;

static void __attribute__ ((destructor)) pmix_at_exit (void)
{
    if (pmix_up)
        PMIx_Finalize (NULL, 0);
    pmix_up = false;
}

static int pmix_create (struct bootstrap *b, char *err, size_t errlen)
{
    pmix_proc_t wild;
    pmix_value_t *v = NULL;
    unsigned long size, nodeid, nnodes, lsize;
    int rc, i;

    if (!pmix_up) {
        if ((rc = PMIx_Init (&pmix_me, NULL, 0)) != PMIX_SUCCESS)
            return errf (err, errlen, DDP_EPMIX, "PMIx_Init: %s",
                         PMIx_Error_string (rc));
        pmix_up = true;
    }
    b->me = pmix_me;
    b->pmix = true;
    if (strncmp (b->me.nspace, "singleton", 9) == 0)
        return errf (err, errlen, DDP_ENOLAUNCH,
                     "PMIx gave a singleton namespace (%s): the PMIx server "
                     "in the environment is not reachable", b->me.nspace);
    PMIX_LOAD_PROCID (&wild, b->me.nspace, PMIX_RANK_WILDCARD);
    if (pmix_get_uint (&wild, PMIX_JOB_SIZE, &size) < 0 || size < 1
        || size > INT_MAX || b->me.rank >= size)
        return errf (err, errlen, DDP_EPMIX, "PMIx: no valid PMIX_JOB_SIZE");
    if (pmix_get_uint (&b->me, PMIX_NODEID, &nodeid) < 0)
        return errf (err, errlen, DDP_EPMIX, "PMIx: no PMIX_NODEID");
    if (pmix_get_uint (&wild, PMIX_NUM_NODES, &nnodes) < 0 || nnodes < 1
        || nodeid >= nnodes)
        return errf (err, errlen, DDP_EPMIX,
                     "PMIx: no valid PMIX_NUM_NODES (node id %lu)", nodeid);
    if (pmix_get_uint (&wild, PMIX_LOCAL_SIZE, &lsize) < 0 || lsize < 1
        || lsize > size)
        return errf (err, errlen, DDP_EPMIX, "PMIx: no valid PMIX_LOCAL_SIZE");
    b->info.rank = (int)b->me.rank;
    b->info.size = (int)size;
    b->info.node_rank = (int)nodeid;
    b->info.num_nodes = (int)nnodes;
    b->info.local_size = (int)lsize;
    b->info.method = "pmix";
    if (!(b->info.local_ranks = calloc (lsize, sizeof (int))))
        return errf (err, errlen, DDP_ENOMEM, "out of memory");
    if (PMIx_Get (&wild, PMIX_LOCAL_PEERS, NULL, 0, &v) != PMIX_SUCCESS || !v
        || v->type != PMIX_STRING || !v->data.string
        || parse_peers (v->data.string, (int)size, b->info.local_ranks,
                        (int)lsize) < 0) {
        if (v)
            PMIX_VALUE_RELEASE (v);
        return errf (err, errlen, DDP_EPMIX,
                     "PMIx: no valid PMIX_LOCAL_PEERS for %lu local ranks",
                     lsize);
    }
    PMIX_VALUE_RELEASE (v);
    b->info.local_rank = -1;
    for (i = 0; i < (int)lsize; i++)
        if (b->info.local_ranks[i] == b->info.rank)
            b->info.local_rank = i;
    if (b->info.local_rank < 0)
        return errf (err, errlen, DDP_EPMIX,
                     "PMIx: rank %d is not among its node's local peers",
                     b->info.rank);
    snprintf (b->job_id, sizeof (b->job_id), "%s", b->me.nspace);
    return 0;
}

/* Fence completion, kept in static storage: a fence abandoned on timeout
 * may still complete later.  PMIx's progress thread signals it, so a rank
 * waiting for the slowest one sleeps instead of polling: hundreds of ranks
 * on a node polling would starve the ones still starting, and the server. */
static struct fence_state {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC, set up by fence_once */
    int done;
    int status;
} fence_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t fence_once = PTHREAD_ONCE_INIT;

static void fence_state_init (void)
{
    pthread_condattr_t a;

    pthread_condattr_init (&a);
    pthread_condattr_setclock (&a, CLOCK_MONOTONIC);
    pthread_cond_init (&fence_state.cond, &a);
    pthread_condattr_destroy (&a);
}

static void fence_cb (pmix_status_t status, void *cbdata)
{
    struct fence_state *fs = cbdata;

    pthread_mutex_lock (&fs->lock);
    fs->status = status;
    fs->done = 1;
    pthread_cond_broadcast (&fs->cond);
    pthread_mutex_unlock (&fs->lock);
}

/* Wait up to timeout_s seconds for fence_cb.  Returns 0 when it came (its
 * status in fence_state.status), -1 at the deadline. */
static int fence_wait (double timeout_s)
{
    struct timespec ts;
    int done;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)timeout_s;
    ts.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock (&fence_state.lock);
    while (!fence_state.done
           && pthread_cond_timedwait (&fence_state.cond, &fence_state.lock,
                                      &ts) != ETIMEDOUT)
        ;
    done = fence_state.done;
    pthread_mutex_unlock (&fence_state.lock);
    return done ? 0 : -1;
}

/* Our own deadline for a fence comes this long after the one we give the
 * server (PMIX_TIMEOUT), so that the server's answer, when it gives one,
 * is the one seen.  On a node where every rank arrived the server does
 * not time out (it waits on the other nodes), so ranks there give up this
 * much later than ranks on the node that misses one. */
#define FENCE_SLACK 1.0

static int pmix_fence (struct bootstrap *b, bool collect, char *err,
                       size_t errlen)
{
    pmix_info_t info[2];
    bool yes = true;
    int tmo = (int)(b->timeout_s + 0.999);
    int rc;
    size_t ninfo = 0;

    PMIX_INFO_CONSTRUCT (&info[0]);
    PMIX_INFO_CONSTRUCT (&info[1]);
    if (collect)
        PMIX_INFO_LOAD (&info[ninfo++], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD (&info[ninfo++], PMIX_TIMEOUT, &tmo, PMIX_INT);
    pthread_once (&fence_once, fence_state_init);
    pthread_mutex_lock (&fence_state.lock);
    fence_state.done = 0;
    pthread_mutex_unlock (&fence_state.lock);
    rc = PMIx_Fence_nb (NULL, 0, info, ninfo, fence_cb, &fence_state);
    PMIX_INFO_DESTRUCT (&info[0]);
    PMIX_INFO_DESTRUCT (&info[1]);
    if (rc != PMIX_SUCCESS)
        return errf (err, errlen, DDP_EPMIX, "PMIx_Fence: %s",
                     PMIx_Error_string (rc));
    if (fence_wait (b->timeout_s + FENCE_SLACK) < 0)
        return errf (err, errlen, DDP_ETIMEDOUT,
                     "PMIx fence: not every rank arrived within %g s "
                     "(DDP_TIMEOUT)", b->timeout_s);
    if (fence_state.status == PMIX_ERR_TIMEOUT)
        return errf (err, errlen, DDP_ETIMEDOUT,
                     "PMIx fence: not every rank arrived within %g s "
                     "(DDP_TIMEOUT)", b->timeout_s);
    if (fence_state.status != PMIX_SUCCESS)
        return errf (err, errlen, DDP_EPMIX, "PMIx fence: %s",
                     PMIx_Error_string (fence_state.status));
    return 0;
}

/* After a bootstrap fence timed out: which ranks never committed their
 * blob, that is never reached ddp_init()?  Slurm's fence does not say.
 *
 * Only this node's ranks are asked, with PMIX_IMMEDIATE: their server
 * answers from what it holds, without the host.  Ranks on other nodes cannot
 * be asked safely: a Get of a remote rank becomes a Slurm direct-modex
 * request, and when every task of that node is gone (the case to diagnose)
 * Slurm 22.05's slurmstepd retries the send for about 30 s inside its PMIx
 * progress thread, which stalls every PMIx client of this node and keeps
 * the step's slurmstepd alive long after srun returned (seen: 88 s).
 *
 * The Gets are non-blocking, with our own deadline; a request given up on
 * may still be answered later, so its state (and the key and info, which
 * the library keeps pointers to) is static and not freed while pending. */
#define PROBE_WINDOW 1.0    /* seconds, at most */
/* Seconds the roll call's hub waits for reports, at most: the survivors
 * of complete nodes come up to FENCE_SLACK after it started, then one
 * more second (less with a shorter DDP_TIMEOUT) for their nodes'
 * differences.  It ends as soon as every survivor called in. */
#define ROLLCALL_WINDOW(t) (FENCE_SLACK + ((t) < 1.0 ? (t) : 1.0))

static struct probe {
    char key[64];
    pmix_info_t info;
    int n;
    struct probe_slot {
        volatile int done;
        volatile int status;
    } *slot;
} probe;

static void probe_cb (pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    struct probe_slot *s = cbdata;

    /* Ours to release (OpenPMIx 4.2: LeakSanitizer showed it leaked when
     * left to the library). */
    if (kv)
        PMIX_VALUE_RELEASE (kv);
    s->status = status;
    __atomic_store_n (&s->done, 1, __ATOMIC_RELEASE);
}

static bool probe_idle (void)
{
    int i;

    for (i = 0; i < probe.n; i++)
        if (!__atomic_load_n (&probe.slot[i].done, __ATOMIC_ACQUIRE))
            return false;
    return true;
}

/* Ask this node's server whether each local rank committed KEY; wait until
 * every answer is in or the window ends.  Returns how many local ranks did
 * not (listed in missing[], local_size entries), or -1 when the probe could
 * not run. */
static int probe_local (struct bootstrap *b, const char *key, int *missing)
{
    double window = b->timeout_s < PROBE_WINDOW ? b->timeout_s : PROBE_WINDOW;
    double end;
    bool yes = true;
    pmix_proc_t p;
    int i, n = 0;

    if (probe.slot && !probe_idle ())
        return -1;  /* an earlier probe is still out: its state must stay */
    free (probe.slot);
    if (!(probe.slot = calloc ((size_t)b->info.local_size,
                               sizeof (*probe.slot))))
        return -1;
    probe.n = b->info.local_size;
    snprintf (probe.key, sizeof (probe.key), "%s", key);
    PMIX_INFO_LOAD (&probe.info, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    for (i = 0; i < probe.n; i++) {
        probe.slot[i].done = 1;
        if (i == b->info.local_rank)
            continue;
        PMIX_LOAD_PROCID (&p, b->me.nspace,
                          (pmix_rank_t)b->info.local_ranks[i]);
        probe.slot[i].done = 0;
        if (PMIx_Get_nb (&p, probe.key, &probe.info, 1, probe_cb,
                         &probe.slot[i]) != PMIX_SUCCESS) {
            probe.slot[i].status = PMIX_ERROR;
            __atomic_store_n (&probe.slot[i].done, 1, __ATOMIC_RELEASE);
        }
    }
    end = ddpi_now () + window;
    while (!probe_idle () && ddpi_now () < end) {
        struct timespec ts = { 0, 2000000 };
        nanosleep (&ts, NULL);
    }
    for (i = 0; i < probe.n; i++)
        if (i != b->info.local_rank
            && (!__atomic_load_n (&probe.slot[i].done, __ATOMIC_ACQUIRE)
                || probe.slot[i].status != PMIX_SUCCESS))
            missing[n++] = b->info.local_ranks[i];
    return n;
}

/* The ranks not on this node (ascending), for the "among" message. */
static int remote_ranks (struct bootstrap *b, int *out)
{
    int r, i = 0, n = 0;

    for (r = 0; r < b->info.size; r++) {
        if (i < b->info.local_size && b->info.local_ranks[i] == r)
            i++;
        else
            out[n++] = r;
    }
    return n;
}

/* Several nodes: pool this node's missing ranks (n, exact) with the other
 * nodes' (rollcall.h; tagged with the PMIx namespace's hash, so that it
 * never mixes with another step's) and say what they add up to.  Returns 0 with the
 * message in err, or -1 when there was no roll call. */
static int pooled_error (struct bootstrap *b, const int *missing, int n,
                         char *err, size_t errlen)
{
    struct ddpi_rollcall_in in = {
        .tag = ddpi_hash_str (b->me.nspace), .size = b->info.size,
        .nnodes = b->info.num_nodes, .node = b->info.node_rank,
        .local_ranks = b->info.local_ranks, .local_size = b->info.local_size,
        .missing = missing, .nmissing = n,
        .window = ROLLCALL_WINDOW (b->timeout_s),
    };
    struct ddpi_rollcall rc;
    char list[256], other[256];

    if (ddpi_rollcall_run (&in, &rc) < 0)
        return -1;
    ddpi_format_ranks (list, sizeof (list), rc.missing, rc.nmissing_listed);
    ddpi_format_ranks (other, sizeof (other), rc.unheard, rc.nunheard_listed);
    if (rc.nmissing > 0)
        errf (err, errlen, DDP_ETIMEDOUT, "rank%s %s%s did not reach "
              "ddp_init within %g s (DDP_TIMEOUT): exited before it, or "
              "still starting%s%s", rc.nmissing > 1 ? "s" : "", list,
              rc.nmissing > rc.nmissing_listed ? " (and more)" : "",
              b->timeout_s, rc.nunheard ? "; not heard from: the nodes of "
              "ranks " : "", rc.nunheard ? other : "");
    else if (rc.nunheard > 0)
        errf (err, errlen, DDP_ETIMEDOUT, "rank%s %s did not reach "
              "ddp_init within %g s (DDP_TIMEOUT): no rank of %s node "
              "answered, every other rank did arrive",
              rc.nunheard > 1 ? "s" : "", other, b->timeout_s,
              rc.nunheard > 1 ? "their" : "its");
    else
        errf (err, errlen, DDP_ETIMEDOUT, "every rank reached ddp_init, yet "
              "the PMIx fence did not complete within %g s (DDP_TIMEOUT)",
              b->timeout_s);
    return 0;
}

/* What this node alone can say: its ranks that never arrived (n of them,
 * in ranks[]; n < 0: not even that), or that its ranks all did. */
static void local_error (struct bootstrap *b, int *ranks, int n, char *err,
                         size_t errlen)
{
    char list[256];

    if (n > 0)
        errf (err, errlen, DDP_ETIMEDOUT, "rank%s %s of this node did not "
              "reach ddp_init within %g s (DDP_TIMEOUT): exited before it, "
              "or still starting (ranks of other nodes were not checked)",
              n > 1 ? "s" : "", ddpi_format_ranks (list, sizeof (list),
                                                   ranks, n),
              b->timeout_s);
    else if (n == 0 && b->info.num_nodes > 1) {
        n = remote_ranks (b, ranks);
        errf (err, errlen, DDP_ETIMEDOUT, "every rank of this node reached "
              "ddp_init, but not every rank of the other nodes within %g s "
              "(DDP_TIMEOUT): the missing ones are among rank%s %s",
              b->timeout_s, n > 1 ? "s" : "",
              ddpi_format_ranks (list, sizeof (list), ranks, n));
    }
}

/* The fence of exchange KEY timed out: say which ranks did not arrive, as
 * far as this node and the roll call can tell.  Returns DDP_ETIMEDOUT. */
static int fence_timeout_error (struct bootstrap *b, const char *key,
                                char *err, size_t errlen)
{
    int *ranks = calloc ((size_t)b->info.size, sizeof (int));
    int n = ranks ? probe_local (b, key, ranks) : -1;

    if (n < 0 || b->info.num_nodes == 1
        || pooled_error (b, ranks, n, err, errlen) < 0)
        local_error (b, ranks, n, err, errlen);
    ddpi_debug ("bootstrap fence timeout: %s", err ? err : "");
    free (ranks);
    return DDP_ETIMEDOUT;
}

/* Make room for need bytes in *all (of *cap bytes), doubling; returns 0
 * or -1 (out of memory; *all unchanged). */
static int grow (char **all, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : 1;
    char *p;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    if (!(p = realloc (*all, c)))
        return -1;
    *all = p;
    *cap = c;
    return 0;
}

static int pmix_exchange (struct bootstrap *b, const void *blob, size_t len,
                          char **all, size_t *all_off, size_t *all_len,
                          size_t *cap, char *err, size_t errlen)
{
    char key[64];
    pmix_value_t val, *v;
    pmix_info_t opt;
    pmix_proc_t p;
    bool yes = true;
    size_t off = 0;
    int r, rc;

    snprintf (key, sizeof (key), "ddp.x.%lu", exchange_seq++);
    PMIX_VALUE_CONSTRUCT (&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)blob;
    val.data.bo.size = len;
    if ((rc = PMIx_Put (PMIX_GLOBAL, key, &val)) != PMIX_SUCCESS)
        return errf (err, errlen, DDP_EPMIX, "PMIx_Put: %s",
                     PMIx_Error_string (rc));
    if ((rc = PMIx_Commit ()) != PMIX_SUCCESS)
        return errf (err, errlen, DDP_EPMIX, "PMIx_Commit: %s",
                     PMIx_Error_string (rc));
    if ((rc = pmix_fence (b, true, err, errlen)) < 0) {
        if (rc == DDP_ETIMEDOUT)
            rc = fence_timeout_error (b, key, err, errlen);
        return rc;
    }
    /* After a collecting fence every blob is local: PMIX_OPTIONAL keeps a
     * missing one (a rank that died before it put anything, which Slurm's
     * fence does not always wait for) from turning into a server request
     * that could block. */
    PMIX_INFO_CONSTRUCT (&opt);
    PMIX_INFO_LOAD (&opt, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    for (r = 0; r < b->info.size; r++) {
        PMIX_LOAD_PROCID (&p, b->me.nspace, (pmix_rank_t)r);
        v = NULL;
        rc = PMIx_Get (&p, key, &opt, 1, &v);
        if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT
            || v->data.bo.size > MAX_BLOB) {
            if (v)
                PMIX_VALUE_RELEASE (v);
            PMIX_INFO_DESTRUCT (&opt);
            if (rc == PMIX_ERR_NOT_FOUND)
                return errf (err, errlen, DDP_EPEER, "rank %d never reached "
                             "ddp_init (no setup data from it: it died or "
                             "was not started)", r);
            return errf (err, errlen, DDP_EPMIX, "PMIx_Get(%s) of rank %d: %s",
                         key, r, PMIx_Error_string (rc));
        }
        if (grow (all, cap, off + v->data.bo.size) < 0) {
            PMIX_VALUE_RELEASE (v);
            PMIX_INFO_DESTRUCT (&opt);
            return errf (err, errlen, DDP_ENOMEM, "out of memory");
        }
        if (v->data.bo.size)
            memcpy (*all + off, v->data.bo.bytes, v->data.bo.size);
        all_off[r] = off;
        all_len[r] = v->data.bo.size;
        off += v->data.bo.size;
        PMIX_VALUE_RELEASE (v);
    }
    PMIX_INFO_DESTRUCT (&opt);
    return 0;
}
#endif /* HAVE_PMIX */

/* The environment's own claims (RANK, WORLD_SIZE): strictly parsed here,
 * checked against the launcher's answer later. */
static int check_env (long *env_rank, long *env_size, char *err, size_t errlen)
{
    int rc;

    *env_rank = *env_size = -1;
    if ((rc = env_int ("WORLD_SIZE", 1, INT_MAX, env_size, err, errlen)) < 0)
        return rc;
    if ((rc = env_int ("RANK", 0, *env_size > 0 ? *env_size - 1 : INT_MAX,
                       env_rank, err, errlen)) < 0)
        return rc;
    return 0;
}

int bootstrap_create (struct bootstrap **bp, double timeout_s, char *err,
                      size_t errlen)
{
    struct bootstrap *b;
    const char *force = getenv ("DDP_BOOTSTRAP");
    const char *hint = "WORLD_SIZE";
    long env_rank, env_size, foreign;
    bool use_pmix;
    int rc;

    if ((rc = check_env (&env_rank, &env_size, err, errlen)) < 0)
        return rc;
    if (force && strcmp (force, "pmix") != 0 && strcmp (force, "single") != 0)
        return errf (err, errlen, DDP_EINVAL,
                     "DDP_BOOTSTRAP='%s' is not one of pmix, single", force);
    use_pmix = force ? strcmp (force, "pmix") == 0 : pmix_env_present ();
    foreign = env_size > 1 ? env_size : foreign_world (&hint);
#ifndef HAVE_PMIX
    if (foreign > 1)
        return errf (err, errlen, DDP_ENOLAUNCH,
                     "%s=%ld says this is one of %ld ranks, but libddp was "
                     "built without PMIx: rebuild it with PMIx to run "
                     "distributed", hint, foreign, foreign);
    if (force && strcmp (force, "pmix") == 0)
        return errf (err, errlen, DDP_ENOTSUP,
                     "DDP_BOOTSTRAP=pmix: libddp was built without PMIx");
    use_pmix = false;
#endif
    if (!use_pmix && foreign > 1)
        return errf (err, errlen, DDP_ENOLAUNCH,
                     "%s=%ld says this is one of %ld ranks, but there is no "
                     "PMIx server (no PMIX_NAMESPACE or PMIX_SERVER_URI* in "
                     "the environment): launch with `srun --ddp ...` (or "
                     "`srun --mpi=pmix`, or another PMIx launcher)", hint,
                     foreign, foreign);
    if (!(b = calloc (1, sizeof (*b))))
        return errf (err, errlen, DDP_ENOMEM, "out of memory");
    b->timeout_s = timeout_s;
#ifdef HAVE_PMIX
    if (use_pmix)
        rc = pmix_create (b, err, errlen);
    else
#endif
        rc = single_create (b, err, errlen);
    if (rc < 0)
        goto error;
    /* The launcher is authoritative; a stale RANK/WORLD_SIZE (another
     * launcher's leftovers) is worth a warning, not a hang of the peers
     * that agree. */
    if (env_size > 0 && env_size != b->info.size)
        ddpi_log ("warning: WORLD_SIZE=%ld but the launcher (%s) says %d "
                  "ranks; using the launcher's", env_size, b->info.method,
                  b->info.size);
    if (env_rank >= 0 && env_rank != b->info.rank)
        ddpi_log ("warning: RANK=%ld but the launcher (%s) says rank %d; "
                  "using the launcher's", env_rank, b->info.method,
                  b->info.rank);
    b->info.job_id = b->job_id;
    *bp = b;
    return 0;
error:
    bootstrap_destroy (b);
    return rc;
}

const struct bootstrap_info *bootstrap_info (struct bootstrap *b)
{
    return &b->info;
}

int bootstrap_exchange (struct bootstrap *b, const void *blob, size_t len,
                        void **all, size_t *all_off, size_t *all_len,
                        char *err, size_t errlen)
{
    size_t cap;
    char *buf;
    int rc = 0;

    *all = NULL;
    if (len > MAX_BLOB || (len && !blob))
        return errf (err, errlen, DDP_EINVAL, "bootstrap blob too large");
    /* Sized from what arrives: every rank's blob is usually as long as
     * ours (the buffer grows when it is not). */
    cap = b->pmix ? (size_t)b->info.size * (len ? len : 1) : (len ? len : 1);
    if (!(buf = malloc (cap)))
        return errf (err, errlen, DDP_ENOMEM, "out of memory");
#ifdef HAVE_PMIX
    if (b->pmix)
        rc = pmix_exchange (b, blob, len, &buf, all_off, all_len, &cap, err,
                            errlen);
    else
#endif
    {
        exchange_seq++;
        if (len)
            memcpy (buf, blob, len);
        all_off[0] = 0;
        all_len[0] = len;
    }
    if (rc < 0) {
        free (buf);
        return rc;
    }
    *all = buf;
    return 0;
}

int bootstrap_fence (struct bootstrap *b, char *err, size_t errlen)
{
#ifdef HAVE_PMIX
    if (b->pmix)
        return pmix_fence (b, false, err, errlen);
#else
    (void)err;
    (void)errlen;
#endif
    (void)b;
    return 0;
}

int bootstrap_abort (struct bootstrap *b, int errcode, const char *msg)
{
#ifdef HAVE_PMIX
    if (b->pmix) {
        if (PMIx_Abort (errcode, msg ? msg : "ddp_abort", NULL, 0)
            == PMIX_SUCCESS)
            return 0;
        return DDP_EPMIX;
    }
#else
    (void)errcode;
    (void)msg;
#endif
    (void)b;
    return DDP_ENOTSUP;
}

void bootstrap_destroy (struct bootstrap *b)
{
    if (!b)
        return;
    free (b->info.local_ranks);
    free (b);
}
