/* pmix_method.h - what pmix.c and pmix_missing.c share.  Internal to
 * libjob/bootstrap. */
#ifndef DDP_PMIX_METHOD_H
#define DDP_PMIX_METHOD_H

#include <stddef.h>
#include <pmix.h>

#include "method.h"

/* Our own deadline for a fence comes this long after the one we give the
 * server (PMIX_TIMEOUT), so that the server's answer, when it gives one,
 * is the one seen.  On a node where every rank arrived the server does
 * not time out (it waits on the other nodes), so ranks there give up this
 * much later than ranks on the node that misses one. */
#define PMIX_FENCE_SLACK 1.0

/* This process, once PMIx_Init succeeded. */
extern pmix_proc_t ddpi_pmix_me;

/* The fence of a round timed out; mark is the key every rank put (local
 * to its node) before it: say which ranks did not arrive, as far as this
 * node's PMIx server and the roll call across nodes (rollcall.h) can
 * tell, in err.  Returns DDP_ETIMEDOUT. */
int ddpi_pmix_missing_error (struct bootstrap *b, const char *mark, char *err,
                             size_t errlen);

#endif /* DDP_PMIX_METHOD_H */
