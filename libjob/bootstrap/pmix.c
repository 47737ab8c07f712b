/* pmix.c - the PMIx bootstrap method (method.h): identity and layout from
 * the PMIx server, blobs through PMIx_Put, fences with collected data.
 * What a timed-out fence tells about the missing ranks is in
 * pmix_missing.c. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pmix.h>

#include "ddp_internal.h"
#include "method.h"
#include "pmix_method.h"

/* PMIx stays initialized from the first ddp_init() to the end of the
 * process: a PMIx client finalized and initialized again no longer sees the
 * job's data (PMIX_NODEID ...), and ddp_init() may follow ddp_finalize(). */
static bool pmix_up;
pmix_proc_t ddpi_pmix_me;

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

/* Read an unsigned integer of any PMIx integer type (info: qualifiers). */
static int get_uint (pmix_proc_t *p, const char *key, pmix_info_t *info,
                     size_t ninfo, unsigned long *out)
{
    pmix_value_t *v = NULL;
    int rc = 0;

    if (PMIx_Get (p, key, info, ninfo, &v) != PMIX_SUCCESS || !v)
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

/* Parse a PMIX_LOCAL_PEERS list ("0,1,5") of ranks below size into out
 * (room for max); sorted, no duplicates.  Returns the count, or -1. */
static int parse_peers (const char *s, int size, int *out, int max)
{
    int i = 0;
    long v;
    char tok[32];

    while (*s) {
        size_t len = strcspn (s, ",");
        if (len == 0 || len >= sizeof (tok) || i >= max)
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
    ddpi_sort_ranks (out, i);
    for (int j = 1; j < i; j++)
        if (out[j] == out[j - 1])
            return -1;
    return i;
}

/* The ranks of a node, from PMIX_LOCAL_PEERS: this node's (node < 0), or
 * node's (a node-qualified get of job data the server holds: no traffic).
 * Returns the count, or -1. */
static int peers_of (int node, int size, int *out, int max)
{
    pmix_proc_t wild;
    pmix_info_t q[2];
    pmix_value_t *v = NULL;
    uint32_t id = (uint32_t)node;
    bool yes = true;
    size_t nq = 0;
    int n = -1;

    memset (q, 0, sizeof (q));
    PMIX_LOAD_PROCID (&wild, ddpi_pmix_me.nspace, PMIX_RANK_WILDCARD);
    if (node >= 0) {
        PMIX_INFO_LOAD (&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
        PMIX_INFO_LOAD (&q[1], PMIX_NODEID, &id, PMIX_UINT32);
        nq = 2;
    }
    if (PMIx_Get (&wild, PMIX_LOCAL_PEERS, nq ? q : NULL, nq, &v)
            == PMIX_SUCCESS
        && v && v->type == PMIX_STRING && v->data.string)
        n = parse_peers (v->data.string, size, out, max);
    if (v)
        PMIX_VALUE_RELEASE (v);
    for (size_t i = 0; i < nq; i++)
        PMIX_INFO_DESTRUCT (&q[i]);
    return n;
}

/* Size, node and node count from the server's job data. */
static int read_job (struct bootstrap *b, char *err, size_t errlen)
{
    pmix_proc_t wild;
    unsigned long size, nodeid, nnodes, lsize;

    PMIX_LOAD_PROCID (&wild, ddpi_pmix_me.nspace, PMIX_RANK_WILDCARD);
    if (get_uint (&wild, PMIX_JOB_SIZE, NULL, 0, &size) < 0 || size < 1
        || size > INT_MAX || ddpi_pmix_me.rank >= size)
        return bootstrap_err (err, errlen, DDP_EPMIX,
                              "PMIx: no valid PMIX_JOB_SIZE");
    if (get_uint (&ddpi_pmix_me, PMIX_NODEID, NULL, 0, &nodeid) < 0)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: no PMIX_NODEID");
    if (get_uint (&wild, PMIX_NUM_NODES, NULL, 0, &nnodes) < 0 || nnodes < 1
        || nodeid >= nnodes)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: no valid "
                              "PMIX_NUM_NODES (node id %lu)", nodeid);
    if (get_uint (&wild, PMIX_LOCAL_SIZE, NULL, 0, &lsize) < 0 || lsize < 1
        || lsize > size)
        return bootstrap_err (err, errlen, DDP_EPMIX,
                              "PMIx: no valid PMIX_LOCAL_SIZE");
    b->info.rank = (int)ddpi_pmix_me.rank;
    b->info.size = (int)size;
    b->info.node_rank = (int)nodeid;
    b->info.num_nodes = (int)nnodes;
    b->info.local_size = (int)lsize;
    return 0;
}

/* This node's ranks and our place among them. */
static int read_local (struct bootstrap *b, char *err, size_t errlen)
{
    int i, n;

    if (!(b->info.local_ranks = calloc ((size_t)b->info.local_size,
                                        sizeof (int))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    n = peers_of (-1, b->info.size, b->info.local_ranks, b->info.local_size);
    if (n != b->info.local_size)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: no valid "
                              "PMIX_LOCAL_PEERS for %d local ranks",
                              b->info.local_size);
    b->info.local_rank = -1;
    for (i = 0; i < n; i++)
        if (b->info.local_ranks[i] == b->info.rank)
            b->info.local_rank = i;
    if (b->info.local_rank < 0)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: rank %d is not "
                              "among its node's local peers", b->info.rank);
    return 0;
}

static int pmix_create (struct bootstrap *b, char *err, size_t errlen)
{
    int rc;

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
    if ((rc = read_job (b, err, errlen)) < 0
        || (rc = read_local (b, err, errlen)) < 0)
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
    if ((rc = fence_start (b, collect, err, errlen)) < 0)
        return rc;
    rc = fence_wait (b, err, errlen);
    if (rc == DDP_ETIMEDOUT)
        rc = ddpi_pmix_missing_error (b, mark, err, errlen);
    return rc;
}

/* After a collecting fence every blob this rank may read is local:
 * PMIX_OPTIONAL keeps a missing one (a rank that put nothing, or died
 * before it put anything, which Slurm's fence does not always wait for)
 * from turning into a request to another node, which could block. */
static int pmix_get (struct bootstrap *b, int rank, const char *key,
                     void **blob, size_t *len, char *err, size_t errlen)
{
    pmix_value_t *v = NULL;
    pmix_info_t opt;
    pmix_proc_t p;
    bool yes = true;
    int rc;

    (void)b;
    PMIX_LOAD_PROCID (&p, ddpi_pmix_me.nspace, (pmix_rank_t)rank);
    PMIX_INFO_CONSTRUCT (&opt);
    PMIX_INFO_LOAD (&opt, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    rc = PMIx_Get (&p, key, &opt, 1, &v);
    PMIX_INFO_DESTRUCT (&opt);
    if (rc == PMIX_ERR_NOT_FOUND)
        rc = 1;
    else if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT
             || v->data.bo.size > BOOTSTRAP_MAX_BLOB)
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

static int pmix_node_ranks (struct bootstrap *b, int node, int *ranks,
                            int *n, char *err, size_t errlen)
{
    if (node == b->info.node_rank) {
        memcpy (ranks, b->info.local_ranks,
                (size_t)b->info.local_size * sizeof (int));
        *n = b->info.local_size;
        return 0;
    }
    if ((*n = peers_of (node, b->info.size, ranks, b->info.size)) < 1)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: no valid "
                              "PMIX_LOCAL_PEERS for node %d", node);
    return 0;
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
