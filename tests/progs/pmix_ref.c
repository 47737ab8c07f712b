/* pmix_ref.c - what the PMIx server of a step does, asked plainly: the
 * reference libddp's PMIx bootstrap is checked against (t0125).  No libddp.
 *
 * Every rank reads the job data libddp reads, each key for the rank and
 * for the wildcard, plainly and node-qualified where that applies, as
 * libddp does: PMIX_IMMEDIATE (what this node's server holds; asked
 * otherwise, Slurm 22.05 never answers some of them, and a get left
 * unanswered holds up every later get of the same rank).  Then, in two
 * rounds, it puts a 100-byte value under a key of the round, commits,
 * fences (collecting data unless --no-collect) and reads every peer's
 * value four ways, in this order: with PMIX_OPTIONAL (the client's own
 * store only), PMIX_IMMEDIATE (this node's server's store only),
 * PMIX_GET_REFRESH_CACHE (from the peer's node if need be, whatever was
 * fetched before: what libddp does for data its server lacks) and
 * plainly (last: a plain get left unanswered would hold up every later get
 * of the same peer).  One line a result:
 *
 *   ref RANK job KEY TARGET WAY STATUS [VALUE]
 *   ref RANK rank R KEY STATUS [VALUE]
 *   ref RANK peer PEER round K WAY STATUS [ok|bad] [after N NOT-FOUND]
 *
 * TARGET is "me" or "wild"; WAY plain, node (PMIX_NODE_INFO qualified) or
 * nodeid (also qualified by this node's PMIX_NODEID; a node qualified by
 * its PMIX_HOSTNAME is not asked: PMIx 4.2 under Slurm 22.05 then never
 * answers, even PMIX_IMMEDIATE, and holds up every later get).  The rank
 * lines are rank R's own PMIX_NODEID, PMIX_LOCAL_RANK and PMIX_HOSTNAME.
 * STATUS is PMIx's status name, or NO-ANSWER after 3 s.  A last line
 * "ref RANK done" ends a complete run, after a (collecting) fence that
 * keeps every rank until all have asked.  Exits 0 when every refresh get of
 * a peer (libddp's way) came back right, 1 if not, 2 when PMIx could not
 * start. */
#include "config.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pmix.h>

#include "pmix_progs.h"

static pmix_proc_t me;

static void show_value (const pmix_value_t *v)
{
    switch (v->type) {
    case PMIX_UINT16: printf (" %u", (unsigned)v->data.uint16); break;
    case PMIX_UINT32: printf (" %u", v->data.uint32); break;
    case PMIX_UINT64:
        printf (" %llu", (unsigned long long)v->data.uint64);
        break;
    case PMIX_INT: printf (" %d", v->data.integer); break;
    case PMIX_STRING:
        printf (" %s", v->data.string ? v->data.string : "-");
        break;
    default: printf (" type=%d", (int)v->type); break;
    }
}

/* A get's answer, filled by PMIx's progress thread. */
struct answer {
    volatile int done;
    pmix_status_t status;
    pmix_value_t *value;
};

static void answer_cb (pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    struct answer *a = cbdata;

    a->status = status;
    a->value = kv;
    __atomic_store_n (&a->done, 1, __ATOMIC_RELEASE);
}

/* PMIx_Get, but waiting 3 s at most: some servers never answer some
 * questions (Slurm 22.05 drops a direct modex for the wildcard rank).
 * Returns PMIx's status, or "NO-ANSWER" as PMIX_ERR_TIMEOUT; an abandoned
 * request's memory is left to the library (this program ends soon). */
static pmix_status_t get_bounded (const pmix_proc_t *p, const char *key,
                                  const pmix_info_t *q, size_t nq,
                                  pmix_value_t **v)
{
    struct answer *a = calloc (1, sizeof (*a));
    pmix_status_t rc;

    *v = NULL;
    if (!a)
        return PMIX_ERR_NOMEM;
    rc = PMIx_Get_nb (p, key, q, nq, answer_cb, a);
    if (rc != PMIX_SUCCESS) {
        free (a);
        return rc;
    }
    for (int i = 0; i < 3000 && !__atomic_load_n (&a->done, __ATOMIC_ACQUIRE);
         i++)
        usleep (1000);
    if (!__atomic_load_n (&a->done, __ATOMIC_ACQUIRE))
        return PMIX_ERR_TIMEOUT;
    rc = a->status;
    *v = a->value;
    free (a);
    return rc;
}

/* The ways a job key is asked for (see the opening comment). */
enum way { PLAIN, NODE, NODE_ID, NWAYS };
static const char *way_name[NWAYS] = { "plain", "node", "nodeid" };
static uint32_t my_nodeid;

/* One job key, for target (me or wild), one way. */
static void job_key (const char *key, bool wild, enum way w)
{
    pmix_proc_t p;
    pmix_info_t q[3];
    pmix_value_t *v = NULL;
    bool yes = true;
    size_t n = 0;
    pmix_status_t rc;

    PMIX_LOAD_PROCID (&p, me.nspace, wild ? PMIX_RANK_WILDCARD : me.rank);
    for (int i = 0; i < 3; i++)
        PMIX_INFO_CONSTRUCT (&q[i]);
    PMIX_INFO_LOAD (&q[n++], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    if (w != PLAIN)
        PMIX_INFO_LOAD (&q[n++], PMIX_NODE_INFO, &yes, PMIX_BOOL);
    if (w == NODE_ID)
        PMIX_INFO_LOAD (&q[n++], PMIX_NODEID, &my_nodeid, PMIX_UINT32);
    rc = get_bounded (&p, key, n ? q : NULL, n, &v);
    printf ("ref %u job %s %s %s %s", me.rank, key, wild ? "wild" : "me",
            way_name[w], rc == PMIX_ERR_TIMEOUT ? "NO-ANSWER"
                                                : PMIx_Error_string (rc));
    if (rc == PMIX_SUCCESS && v)
        show_value (v);
    printf ("\n");
    if (v)
        PMIX_VALUE_RELEASE (v);
    for (int i = 0; i < 3; i++)
        PMIX_INFO_DESTRUCT (&q[i]);
}

/* Rank r's own key (rank-level data the server holds for every rank). */
static void rank_key (const char *key, pmix_rank_t r)
{
    pmix_proc_t p;
    pmix_info_t q;
    pmix_value_t *v = NULL;
    bool yes = true;
    pmix_status_t rc;

    PMIX_LOAD_PROCID (&p, me.nspace, r);
    PMIX_INFO_CONSTRUCT (&q);
    PMIX_INFO_LOAD (&q, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    rc = get_bounded (&p, key, &q, 1, &v);
    PMIX_INFO_DESTRUCT (&q);
    printf ("ref %u rank %u %s %s", me.rank, r, key, rc == PMIX_ERR_TIMEOUT
            ? "NO-ANSWER" : PMIx_Error_string (rc));
    if (rc == PMIX_SUCCESS && v)
        show_value (v);
    printf ("\n");
    if (v)
        PMIX_VALUE_RELEASE (v);
}

/* Peer r's value of round k, one way; returns whether it came with the
 * right bytes. */
static bool peer_get (pmix_rank_t r, int k, const char *way)
{
    char key[32];
    pmix_proc_t p;
    pmix_info_t q;
    pmix_value_t *v = NULL;
    bool yes = true, good = false, refresh = strcmp (way, "refresh") == 0;
    pmix_status_t rc;
    size_t n = 0;
    int retries = 0;

    PMIX_LOAD_PROCID (&p, me.nspace, r);
    PMIX_INFO_CONSTRUCT (&q);
    if (strcmp (way, "optional") == 0)
        PMIX_INFO_LOAD (&q, PMIX_OPTIONAL, &yes, PMIX_BOOL), n = 1;
    else if (strcmp (way, "immediate") == 0)
        PMIX_INFO_LOAD (&q, PMIX_IMMEDIATE, &yes, PMIX_BOOL), n = 1;
    else if (refresh)
        PMIX_INFO_LOAD (&q, PMIX_GET_REFRESH_CACHE, &yes, PMIX_BOOL), n = 1;
    snprintf (key, sizeof (key), "ref.blob.%d", k);
    rc = get_bounded (&p, key, n ? &q : NULL, n, &v);
    /* A get that may ask another node answered NOT-FOUND can be a stale
     * answer: PMIx 4.2 under Slurm 22.05 gives one now and then for a
     * second round's direct modex, and the same get a moment later
     * succeeds.  Say so. */
    while ((n == 0 || refresh) && rc == PMIX_ERR_NOT_FOUND && retries < 30) {
        usleep (100000);
        retries++;
        rc = get_bounded (&p, key, n ? &q : NULL, n, &v);
    }
    if (rc == PMIX_SUCCESS && v && v->type == PMIX_BYTE_OBJECT
        && v->data.bo.size == 100) {
        good = true;
        for (int i = 0; i < 100; i++)
            if ((unsigned char)v->data.bo.bytes[i]
                != (unsigned char)(r + (unsigned)i + (unsigned)k))
                good = false;
    }
    printf ("ref %u peer %u round %d %s %s%s", me.rank, r, k, way,
            rc == PMIX_ERR_TIMEOUT ? "NO-ANSWER" : PMIx_Error_string (rc),
            rc == PMIX_SUCCESS ? good ? " ok" : " bad" : "");
    if (retries)
        printf (" after %d NOT-FOUND", retries);
    printf ("\n");
    if (v)
        PMIX_VALUE_RELEASE (v);
    PMIX_INFO_DESTRUCT (&q);
    return good;
}

/* Round k: put, commit, fence, then every peer's value every way.
 * Returns how many refresh gets (libddp's way) failed. */
static int exchange (uint32_t size, bool collect, int k)
{
    static const char *ways[] = { "optional", "immediate", "refresh", "plain" };
    char blob[100], key[32];
    int bad = 0;
    pmix_status_t rc;

    for (int i = 0; i < 100; i++)
        blob[i] = (char)(me.rank + (unsigned)i + (unsigned)k);
    snprintf (key, sizeof (key), "ref.blob.%d", k);
    if ((rc = progs_put_commit (key, blob, sizeof (blob))) != PMIX_SUCCESS) {
        printf ("ref %u put %s\n", me.rank, PMIx_Error_string (rc));
        return (int)size;
    }
    rc = progs_fence (collect);
    printf ("ref %u fence round %d %s %s\n", me.rank, k,
            collect ? "collect" : "nocollect", PMIx_Error_string (rc));
    if (rc != PMIX_SUCCESS)
        return (int)size;
    /* The client's own store first, then this node's server, then a plain
     * get: an answer from the server is kept in the client's store, and
     * would answer the narrower ways after it. */
    for (int w = 0; w < 4; w++)
        for (uint32_t r = 0; r < size; r++)
            if (r != me.rank && !peer_get (r, k, ways[w]) && w == 2)
                bad++;
    return bad;
}

/* A fence that every rank leaves only once all entered it: collecting,
 * on a fresh key.  Returns PMIx's status. */
static pmix_status_t final_fence (void)
{
    pmix_rank_t r = me.rank;
    pmix_status_t rc = progs_put_commit ("ref.bye", &r, sizeof (r));

    return rc == PMIX_SUCCESS ? progs_fence (true) : rc;
}

int main (int argc, char **argv)
{
    static const char *keys[] = { PMIX_JOB_SIZE, PMIX_NUM_NODES, PMIX_NODEID,
                                  PMIX_LOCAL_SIZE, PMIX_LOCAL_RANK,
                                  PMIX_LOCAL_PEERS, PMIX_HOSTNAME, NULL };
    bool collect = !(argc > 1 && strcmp (argv[1], "--no-collect") == 0);
    pmix_value_t *v = NULL;
    uint32_t size;
    pmix_status_t rc;
    int status;

    setvbuf (stdout, NULL, _IOLBF, 0);    /* every line out, even if killed */
    if ((rc = PMIx_Init (&me, NULL, 0)) != PMIX_SUCCESS) {
        printf ("ref - init %s\n", PMIx_Error_string (rc));
        return 2;
    }
    printf ("ref %u init %s version %s\n", me.rank, me.nspace,
            PMIx_Get_version ());
    size = progs_job_size (&me);
    if (PMIx_Get (&me, PMIX_NODEID, NULL, 0, &v) == PMIX_SUCCESS && v
        && v->type == PMIX_UINT32)
        my_nodeid = v->data.uint32;
    if (v)
        PMIX_VALUE_RELEASE (v);
    for (int k = 0; keys[k]; k++)
        for (int t = 0; t < 2 * NWAYS; t++)
            job_key (keys[k], t & 1, (enum way)(t / 2));
    for (uint32_t r = 0; r < size; r++) {
        rank_key (PMIX_NODEID, r);
        rank_key (PMIX_LOCAL_RANK, r);
        rank_key (PMIX_HOSTNAME, r);
    }
    /* Two rounds: a server may answer a second key of a peer whose data it
     * fetched once from what it fetched then. */
    status = !size || exchange (size, collect, 0)
             || exchange (size, collect, 1);
    /* No rank leaves while another may still ask for its data: under
     * Slurm 22.05 a node whose tasks have all exited answers no more
     * direct-modex requests (in a clean-clone CI of 2026-11-28 rank 3,
     * alone on n2, finished first and the three others' round-1 refresh
     * gets of it went unanswered, "pmixp_read_buf: Connection reset by
     * peer").  The fence that keeps them collects a fresh key: there a
     * fence without PMIX_COLLECT_DATA does not keep a rank that is alone
     * on its node at all (pmix_fence.c), which let rank 3 leave early in
     * 5 of 750 runs here.  libddp's ddp_finalize ends with a barrier of
     * its own backend for the same reason. */
    if ((rc = final_fence ()) != PMIX_SUCCESS) {
        printf ("ref %u final fence %s\n", me.rank, PMIx_Error_string (rc));
        status = 1;
    }
    printf ("ref %u done\n", me.rank);
    fflush (stdout);
    PMIx_Finalize (NULL, 0);
    return status;
}
