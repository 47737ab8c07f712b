/* pmix.c - the PMIx bootstrap method (method.h): blobs through PMIx_Put,
 * fences with collected data, and reading the blobs whatever the server's
 * data store.  Identity and layout from the server's job data are in
 * pmix_job.c, the bounded gets both use in pmix_get.c, and what a
 * timed-out fence tells about the missing ranks in pmix_missing.c.  This
 * file calls those three; they call none of it (this process's name,
 * which PMIx_Init here fills in, is kept in pmix_get.c, below all). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pmix.h>

#include "ddp_internal.h"
#include "layout.h"
#include "method.h"
#include "pmix_method.h"

/* PMIx stays initialized from the first ddp_init() to the end of the
 * process: a PMIx client finalized and initialized again no longer sees the
 * job's data (PMIX_NODEID ...), and ddp_init() may follow ddp_finalize(). */
static bool pmix_up;

/* DDP_PMIX_COLLECT=0: fences do not ask the server to collect the round's
 * data, so that every remote blob comes by direct modex (a diagnosis knob,
 * and how the tests reach that path with servers that do collect). */
static bool collect_data = true;

static void __attribute__ ((destructor)) pmix_at_exit (void)
{
    if (pmix_up)
        PMIx_Finalize (NULL, 0);
    pmix_up = false;
}

static bool pmix_probe (char *why, size_t why_len)
{
    extern char **environ;
    char **e;

    if (getenv ("PMIX_NAMESPACE")) {
        snprintf (why, why_len, "PMIX_NAMESPACE is set");
        return true;
    }
    for (e = environ; e && *e; e++)
        if (strncmp (*e, "PMIX_SERVER_URI", 15) == 0) {
            snprintf (why, why_len, "%.*s is set",
                      (int)strcspn (*e, "="), *e);
            return true;
        }
    snprintf (why, why_len, "no PMIX_NAMESPACE or PMIX_SERVER_URI* in the "
              "environment");
    return false;
}

/* The method's settings from the environment (DDP_PMIX_COLLECT). */
static int read_settings (char *err, size_t errlen)
{
    const char *s = getenv ("DDP_PMIX_COLLECT");
    char msg[DDPI_ENV_MSG];

    if (ddpi_env_explain ("DDP_PMIX_COLLECT", s, msg, sizeof (msg)) < 0)
        return bootstrap_err (err, errlen, DDP_EINVAL, "%s", msg);
    collect_data = !s || !*s || strcmp (s, "1") == 0;
    return 0;
}

static int pmix_create (struct bootstrap *b, char *err, size_t errlen)
{
    int rc;

    if ((rc = read_settings (err, errlen)) < 0)
        return rc;

    if (!pmix_up) {
        if ((rc = PMIx_Init (&ddpi_pmix_me, NULL, 0)) != PMIX_SUCCESS)
            return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx_Init: %s",
                                  PMIx_Error_string (rc));
        pmix_up = true;
    }
    if (strncmp (ddpi_pmix_me.nspace, "singleton", 9) == 0)
        return bootstrap_err (err, errlen, DDP_ENOLAUNCH, "PMIx gave a "
                              "singleton namespace (%s): the PMIx server in "
                              "the environment is not reachable",
                              ddpi_pmix_me.nspace);
    if ((rc = ddpi_pmix_read_job (b, err, errlen)) < 0)
        return rc;
    snprintf (b->job_id, sizeof (b->job_id), "%s", ddpi_pmix_me.nspace);
    return 0;
}

static int pmix_put (struct bootstrap *b, const char *key,
                     enum bootstrap_scope scope, const void *blob, size_t len,
                     char *err, size_t errlen)
{
    pmix_value_t val;
    int rc;

    (void)b;
    PMIX_VALUE_CONSTRUCT (&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)blob;
    val.data.bo.size = len;
    rc = PMIx_Put (scope == BOOTSTRAP_LOCAL ? PMIX_LOCAL : PMIX_GLOBAL, key,
                   &val);
    if (rc != PMIX_SUCCESS)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx_Put: %s",
                              PMIx_Error_string (rc));
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

/* Start the fence (collecting data or not) with the server's own bound. */
static int fence_start (struct bootstrap *b, bool collect, char *err,
                        size_t errlen)
{
    pmix_info_t info[2];
    bool yes = true;
    int tmo = (int)(b->timeout_s + 0.999);
    size_t ninfo = 0;
    int rc;

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
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx_Fence: %s",
                              PMIx_Error_string (rc));
    return 0;
}

/* Sleep until fence_cb came or timeout_s passed.  Returns whether it came
 * (its status in fence_state.status). */
static bool fence_came (double timeout_s)
{
    struct timespec ts;
    bool done;

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
    done = fence_state.done != 0;
    pthread_mutex_unlock (&fence_state.lock);
    return done;
}

/* Wait for the fence: until PMIX_FENCE_SLACK after the server's bound, so
 * that the server's answer, when it gives one, is the one seen. */
static int fence_wait (struct bootstrap *b, char *err, size_t errlen)
{
    if (!fence_came (b->timeout_s + PMIX_FENCE_SLACK)
        || fence_state.status == PMIX_ERR_TIMEOUT)
        return DDP_ETIMEDOUT;
    if (fence_state.status != PMIX_SUCCESS)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx fence: %s",
                              PMIx_Error_string (fence_state.status));
    return 0;
}

/* Reading a round's blobs.
 *
 * A collecting fence leaves every blob of the round in this node's PMIx
 * server (Slurm, PRRTE), so a get qualified PMIX_IMMEDIATE (the server's
 * own store, never a request to another node) finds it: in the shared-
 * memory store (gds ds12/ds21, shmem2) without even asking the server, in
 * the hash store (gds hash, where shared memory is unavailable, or
 * PMIX_MCA_gds=hash) by asking it.  (PMIX_OPTIONAL, which this code used
 * first, reads the client's own store only: with the hash store it finds
 * no peer's blob at all.)  A blob this node's server does not hold is:
 *   - of a rank of this node: it put nothing (its server has every blob
 *     its own ranks committed);
 *   - of a remote rank: not collected (a server that ignores
 *     PMIX_COLLECT_DATA, or DDP_PMIX_COLLECT=0), or never put (a server
 *     completes a fence without a client whose connection it lost).  It is
 *     asked of the rank's node (a direct modex) with
 *     PMIX_GET_REFRESH_CACHE (a server that fetched the rank's data in an
 *     earlier round answers from that copy otherwise, which lacks this
 *     round's key), and waited for until the round's deadline: its node
 *     may not answer at all (Slurm's slurmstepd retries a send to a node
 *     whose tasks are gone for about 30 s).  A NOT-FOUND answer is asked
 *     again for NOT_FOUND_WINDOW: PMIx 4.2 under Slurm 22.05 gives one now
 *     and then for a blob that the same get finds a moment later (seen:
 *     100 ms after; tests/progs/pmix_ref), while a rank that exited before
 *     its put stays NOT-FOUND (PMIx 5 under Slurm 24.11 completes the
 *     fence without it: t0802) and should be named soon. */
#define NOT_FOUND_WINDOW 2.0    /* seconds */
static struct round_view {
    double deadline;            /* of every get of the round */
} round_view;

/* Every rank also puts a one-byte marker, local to its node, so that after
 * a timeout its node can tell it arrived (pmix_missing.c), whatever blobs
 * the round had. */
static int pmix_sync (struct bootstrap *b, const char *key, bool collect,
                      char *err, size_t errlen)
{
    char mark[64];
    int rc;

    snprintf (mark, sizeof (mark), "%s.here", key);
    if ((rc = pmix_put (b, mark, BOOTSTRAP_LOCAL, "", 1, err, errlen)) < 0)
        return rc;
    if ((rc = PMIx_Commit ()) != PMIX_SUCCESS)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx_Commit: %s",
                              PMIx_Error_string (rc));
    if ((rc = fence_start (b, collect && collect_data, err, errlen)) < 0)
        return rc;
    rc = fence_wait (b, err, errlen);
    if (rc == DDP_ETIMEDOUT)
        rc = ddpi_pmix_missing_error (b, mark, err, errlen);
    round_view.deadline = ddpi_now () + b->timeout_s;
    return rc;
}

/* Is rank one of this node's? */
static bool is_local (const struct bootstrap *b, int rank)
{
    return ddpi_rank_in (b->info.local_ranks, b->info.local_size, rank);
}

/* Read rank's blob under key into *v: from this node's server, or from
 * rank's node (see round_view).  Returns PMIX_SUCCESS, PMIX_ERR_NOT_FOUND
 * (rank put nothing), PMIX_ERR_TIMEOUT (the round's deadline passed) or
 * another PMIx status. */
static pmix_status_t read_blob (struct bootstrap *b, int rank,
                                const char *key, pmix_value_t **v)
{
    pmix_info_t refresh;
    pmix_proc_t p;
    pmix_status_t rc;
    double nap = 0.01, last;
    bool yes = true;

    PMIX_LOAD_PROCID (&p, ddpi_pmix_me.nspace, (pmix_rank_t)rank);
    rc = ddpi_pmix_get_by (&p, key, NULL, 0, true, round_view.deadline, v);
    if (rc != PMIX_ERR_NOT_FOUND || is_local (b, rank))
        return rc;
    PMIX_INFO_CONSTRUCT (&refresh);
    PMIX_INFO_LOAD (&refresh, PMIX_GET_REFRESH_CACHE, &yes, PMIX_BOOL);
    last = ddpi_now () + NOT_FOUND_WINDOW;
    if (last > round_view.deadline)
        last = round_view.deadline;
    for (;;) {
        rc = ddpi_pmix_get_by (&p, key, &refresh, 1, false,
                               round_view.deadline, v);
        ddpi_debug ("bootstrap: pmix: %s of rank %d, from its node (direct "
                    "modex): %s", key, rank, PMIx_Error_string (rc));
        if (rc != PMIX_ERR_NOT_FOUND || ddpi_now () + nap >= last)
            break;
        nanosleep (&(struct timespec){ 0, (long)(nap * 1e9) }, NULL);
        nap = nap < 0.2 ? nap * 2 : nap;
    }
    PMIX_INFO_DESTRUCT (&refresh);
    return rc;
}

static int pmix_get (struct bootstrap *b, int rank, const char *key,
                     void **blob, size_t *len, char *err, size_t errlen)
{
    pmix_value_t *v = NULL;
    int rc;

    rc = read_blob (b, rank, key, &v);
    if (rc == PMIX_ERR_NOT_FOUND)
        rc = 1;
    else if (rc == PMIX_ERR_TIMEOUT)
        rc = bootstrap_err (err, errlen, DDP_ETIMEDOUT, "no setup data "
                            "(%s) came from rank %d's node within %g s of "
                            "the fence (%s): its PMIx server did not answer "
                            "the direct modex", key, rank, b->timeout_s,
                            b->timeout_name);
    else if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT
             || v->data.bo.size
                    > BOOTSTRAP_MAX_BLOB + BOOTSTRAP_NODE_ID_BYTES)
        rc = bootstrap_err (err, errlen, DDP_EPMIX, "PMIx_Get(%s) of rank "
                            "%d: %s", key, rank, rc != PMIX_SUCCESS
                            ? PMIx_Error_string (rc) : "not a blob");
    else if (!(*blob = malloc (v->data.bo.size ? v->data.bo.size : 1)))
        rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    else {
        if (v->data.bo.size)
            memcpy (*blob, v->data.bo.bytes, v->data.bo.size);
        *len = v->data.bo.size;
        rc = 0;
    }
    if (v)
        PMIX_VALUE_RELEASE (v);
    return rc;
}

/* Never called: this method leaves the node layout to the first exchange
 * (b->ids_pending, read_sizes in pmix_job.c), which bootstrap.c answers
 * from afterwards. */
static int pmix_node_ranks (struct bootstrap *b, int node, int *ranks,
                            int *n, char *err, size_t errlen)
{
    (void)b;
    (void)ranks;
    *n = 0;
    return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: node %d's ranks "
                          "are known from the first exchange only", node);
}

static int pmix_abort (struct bootstrap *b, int code, const char *msg)
{
    (void)b;
    if (PMIx_Abort (code, msg ? msg : "ddp_abort", NULL, 0) == PMIX_SUCCESS)
        return 0;
    return DDP_EPMIX;
}

static void pmix_destroy (struct bootstrap *b)
{
    (void)b;
}

const struct bootstrap_method bootstrap_method_pmix =
    BOOTSTRAP_METHOD (pmix, pmix_get, pmix_destroy);
