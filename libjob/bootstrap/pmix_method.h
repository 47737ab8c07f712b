/* pmix_method.h - what the PMIx method's files share: pmix.c above
 * pmix_job.c and pmix_missing.c, above pmix_get.c.  Internal to
 * libjob/bootstrap. */
#ifndef DDP_PMIX_METHOD_H
#define DDP_PMIX_METHOD_H

#include <stdbool.h>
#include <stddef.h>
#include <pmix.h>

#include "method.h"

/* Our own deadline for a fence comes this long after the one we give the
 * server (PMIX_TIMEOUT), so that the server's answer, when it gives one,
 * is the one seen.  On a node where every rank arrived the server does
 * not time out (it waits on the other nodes), so ranks there give up this
 * much later than ranks on the node that misses one. */
#define PMIX_FENCE_SLACK 1.0

/* Qualifiers a ddpi_pmix_get_by takes, at most. */
#define PMIX_GET_QUALS 2

/* Read proc's key, waiting until deadline (ddpi_now()'s clock) at most,
 * with the nquals qualifiers quals (copied; at most PMIX_GET_QUALS, else
 * PMIX_ERR_BAD_PARAM).  immediate: ask this node's PMIx server only (PMIX_IMMEDIATE: what its
 * store holds, never a request to another node); otherwise the server may
 * fetch it from proc's node (a direct modex), told the seconds left
 * (PMIX_TIMEOUT).  Returns PMIX_SUCCESS with *v set (PMIX_VALUE_RELEASE
 * it), PMIx's own status (PMIX_ERR_NOT_FOUND: the answer is that there is
 * no such key), or PMIX_ERR_TIMEOUT when the deadline passed first (the
 * request is then left to PMIx; its answer is freed when it comes). */
pmix_status_t ddpi_pmix_get_by (const pmix_proc_t *proc, const char *key,
                                const pmix_info_t *quals, size_t nquals,
                                bool immediate, double deadline,
                                pmix_value_t **v);

/* Fill b->info's rank, size, local_size, local_ranks (malloc'd) and
 * local_rank, and b->node_id, from the server's job data, each get
 * bounded by b->timeout_s (pmix_job.c).  Sets b->ids_pending: the node
 * layout comes from the first exchange; until then b->info's node_rank
 * and num_nodes are the server's where they make sense on this rank,
 * else -1 and 0.  Returns 0, or DDP_EPMIX / DDP_ENOMEM with err. */
int ddpi_pmix_read_job (struct bootstrap *b, char *err, size_t errlen);

/* This process, once PMIx_Init succeeded (defined in pmix_get.c). */
extern pmix_proc_t ddpi_pmix_me;

/* The fence of a round timed out; mark is the key every rank put (local
 * to its node) before it: say which ranks did not arrive, as far as this
 * node's PMIx server and the roll call across nodes (rollcall.h) can
 * tell, in err.  Returns DDP_ETIMEDOUT. */
int ddpi_pmix_missing_error (struct bootstrap *b, const char *mark, char *err,
                             size_t errlen);

#endif /* DDP_PMIX_METHOD_H */
