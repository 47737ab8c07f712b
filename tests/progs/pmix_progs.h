/* pmix_progs.h - the plain PMIx calls the reference programs share
 * (pmix_ref.c, pmix_fence.c): no libddp, PMIx asked as an application
 * would.  Static inline: each program takes what it uses. */
#ifndef DDP_TESTS_PMIX_PROGS_H
#define DDP_TESTS_PMIX_PROGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pmix.h>

/* The job's size (PMIX_JOB_SIZE of the wildcard rank of me's namespace),
 * or 0 when PMIx does not give one. */
static inline uint32_t progs_job_size (const pmix_proc_t *me)
{
    pmix_proc_t wild;
    pmix_value_t *v = NULL;
    uint32_t size = 0;

    PMIX_LOAD_PROCID (&wild, me->nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get (&wild, PMIX_JOB_SIZE, NULL, 0, &v) == PMIX_SUCCESS && v
        && v->type == PMIX_UINT32)
        size = v->data.uint32;
    if (v)
        PMIX_VALUE_RELEASE (v);
    return size;
}

/* Put key, a byte object of len bytes, for every node, and commit.
 * Returns PMIx's status. */
static inline pmix_status_t progs_put_commit (const char *key, void *bytes,
                                              size_t len)
{
    pmix_value_t val;
    pmix_status_t rc;

    PMIX_VALUE_CONSTRUCT (&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = bytes;
    val.data.bo.size = len;
    rc = PMIx_Put (PMIX_GLOBAL, key, &val);
    return rc == PMIX_SUCCESS ? PMIx_Commit () : rc;
}

/* A fence of every rank, with PMIX_COLLECT_DATA when collect.  Returns
 * PMIx's status. */
static inline pmix_status_t progs_fence (bool collect)
{
    pmix_info_t q;
    bool yes = true;
    pmix_status_t rc;

    PMIX_INFO_CONSTRUCT (&q);
    PMIX_INFO_LOAD (&q, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence (NULL, 0, collect ? &q : NULL, collect ? 1 : 0);
    PMIX_INFO_DESTRUCT (&q);
    return rc;
}

#endif /* DDP_TESTS_PMIX_PROGS_H */
