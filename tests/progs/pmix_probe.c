/* pmix_probe.c - prove a task reached a real PMIx server: PMIx_Init must give
 * a server-assigned namespace (not a singleton), a rank equal to Slurm's
 * SLURM_PROCID, and the job size.  Prints "pmix ok ..." and exits 0, or says
 * what failed and exits 1. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pmix.h>

int main (void)
{
    pmix_proc_t me, wild;
    pmix_value_t *val = NULL;
    const char *procid = getenv ("SLURM_PROCID");
    int rc;

    if (!getenv ("PMIX_NAMESPACE")) {
        printf ("pmix fail: no PMIX_NAMESPACE in the environment (no PMIx server)\n");
        return 1;
    }
    if ((rc = PMIx_Init (&me, NULL, 0)) != PMIX_SUCCESS) {
        printf ("pmix fail: PMIx_Init: %s\n", PMIx_Error_string (rc));
        return 1;
    }
    if (strncmp (me.nspace, "singleton", 9) == 0) {
        printf ("pmix fail: singleton namespace %s\n", me.nspace);
        PMIx_Finalize (NULL, 0);
        return 1;
    }
    PMIX_LOAD_PROCID (&wild, me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get (&wild, PMIX_JOB_SIZE, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val->type != PMIX_UINT32) {
        printf ("pmix fail: PMIx_Get(JOB_SIZE): %s\n", PMIx_Error_string (rc));
        PMIx_Finalize (NULL, 0);
        return 1;
    }
    /* A fence proves the server connects the whole step. */
    if ((rc = PMIx_Fence (NULL, 0, NULL, 0)) != PMIX_SUCCESS) {
        printf ("pmix fail: PMIx_Fence: %s\n", PMIx_Error_string (rc));
        PMIx_Finalize (NULL, 0);
        return 1;
    }
    printf ("pmix ok rank=%u size=%u procid=%s nspace=%s\n", me.rank,
            val->data.uint32, procid ? procid : "-", me.nspace);
    PMIX_VALUE_RELEASE (val);
    PMIx_Finalize (NULL, 0);
    return 0;
}
