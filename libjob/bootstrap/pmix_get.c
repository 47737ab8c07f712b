/* pmix_get.c - a PMIx_Get bounded by our own deadline (pmix_method.h).
 *
 * PMIx_Get blocks until the server answers, and an answer that needs
 * another node (a direct modex) can take as long as that node's launcher
 * takes: Slurm's slurmstepd retries a send to a node whose tasks are gone
 * for about 30 s (22.05).  The non-blocking PMIx_Get_nb with a wait of our
 * own keeps every read within the bootstrap's timeout.  A request given up
 * on may still be answered later, into memory the library was given: the
 * request (key, qualifiers, result) is shared by the caller and the
 * callback, and whoever of the two is last frees it.
 *
 * Also this process's name in PMIx (ddpi_pmix_me): kept here, at the
 * bottom of the PMIx files (pmix.c fills it in at PMIx_Init; pmix_job.c
 * and pmix_missing.c read it), so that none of them calls back up into
 * pmix.c. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pmix.h>

#include "ddp_internal.h"
#include "pmix_method.h"

pmix_proc_t ddpi_pmix_me;

struct get_req {
    pthread_mutex_t lock;
    pthread_cond_t cond;        /* on CLOCK_MONOTONIC */
    int refs;                   /* caller and callback: 2, then 1, then 0 */
    bool done;
    pmix_status_t status;
    pmix_value_t *value;        /* the answer, until the caller takes it */
    char key[PMIX_MAX_KEYLEN + 1];
    pmix_info_t info[PMIX_GET_QUALS + 2];
    size_t ninfo;
};

static void req_free (struct get_req *r)
{
    if (r->value)
        PMIX_VALUE_RELEASE (r->value);
    for (size_t i = 0; i < r->ninfo; i++)
        PMIX_INFO_DESTRUCT (&r->info[i]);
    pthread_cond_destroy (&r->cond);
    pthread_mutex_destroy (&r->lock);
    free (r);
}

/* Drop one reference; the last one frees. */
static void req_put (struct get_req *r)
{
    int left;

    pthread_mutex_lock (&r->lock);
    left = --r->refs;
    pthread_mutex_unlock (&r->lock);
    if (left == 0)
        req_free (r);
}

static void req_cb (pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    struct get_req *r = cbdata;

    pthread_mutex_lock (&r->lock);
    r->status = status;
    /* The value is ours (the library copied it for this request). */
    r->value = kv;
    r->done = true;
    pthread_cond_broadcast (&r->cond);
    pthread_mutex_unlock (&r->lock);
    req_put (r);
}

/* A request for key with its qualifiers: the caller's (copied), then
 * PMIX_IMMEDIATE, or a PMIX_TIMEOUT of the seconds left (at least one:
 * PMIx takes whole seconds, 0 meaning none). */
static struct get_req *req_new (const char *key, const pmix_info_t *quals,
                                size_t nquals, bool immediate, double left)
{
    struct get_req *r = calloc (1, sizeof (*r));
    pthread_condattr_t a;
    bool yes = true;
    int tmo;

    if (!r)
        return NULL;
    pthread_mutex_init (&r->lock, NULL);
    pthread_condattr_init (&a);
    pthread_condattr_setclock (&a, CLOCK_MONOTONIC);
    pthread_cond_init (&r->cond, &a);
    pthread_condattr_destroy (&a);
    r->refs = 2;
    snprintf (r->key, sizeof (r->key), "%s", key);
    for (size_t i = 0; i < PMIX_GET_QUALS + 2; i++)
        PMIX_INFO_CONSTRUCT (&r->info[i]);
    for (size_t i = 0; i < nquals && i < PMIX_GET_QUALS; i++)
        PMIX_INFO_XFER (&r->info[r->ninfo++], &quals[i]);
    if (immediate)
        PMIX_INFO_LOAD (&r->info[r->ninfo++], PMIX_IMMEDIATE, &yes,
                        PMIX_BOOL);
    tmo = left < 1.0 ? 1 : left > 1e6 ? 1000000 : (int)(left + 0.999);
    PMIX_INFO_LOAD (&r->info[r->ninfo++], PMIX_TIMEOUT, &tmo, PMIX_INT);
    return r;
}

/* Wait until the answer came or the deadline (ddpi_now() clock) passed;
 * returns whether it came.  r->lock is held. */
static bool req_wait (struct get_req *r, double deadline)
{
    struct timespec ts;
    double left = deadline - ddpi_now ();

    if (left < 0)
        left = 0;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)left;
    ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (!r->done
           && pthread_cond_timedwait (&r->cond, &r->lock, &ts) != ETIMEDOUT)
        ;
    return r->done;
}

pmix_status_t ddpi_pmix_get_by (const pmix_proc_t *proc, const char *key,
                                const pmix_info_t *quals, size_t nquals,
                                bool immediate, double deadline,
                                pmix_value_t **v)
{
    struct get_req *r;

    *v = NULL;
    if (nquals > PMIX_GET_QUALS)
        return PMIX_ERR_BAD_PARAM;
    r = req_new (key, quals, nquals, immediate, deadline - ddpi_now ());
    pmix_status_t rc;

    if (!r)
        return PMIX_ERR_NOMEM;
    rc = PMIx_Get_nb (proc, r->key, r->info, r->ninfo, req_cb, r);
    if (rc != PMIX_SUCCESS) {
        /* The callback will not come: both references are ours. */
        r->refs = 1;
        req_put (r);
        return rc;
    }
    pthread_mutex_lock (&r->lock);
    if (req_wait (r, deadline)) {
        rc = r->status;
        *v = r->value;
        r->value = NULL;
    }
    else
        rc = PMIX_ERR_TIMEOUT;
    pthread_mutex_unlock (&r->lock);
    req_put (r);
    if (rc != PMIX_SUCCESS && *v) {
        PMIX_VALUE_RELEASE (*v);
        *v = NULL;
    }
    return rc;
}
