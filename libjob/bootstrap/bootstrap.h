/* bootstrap.h - how a rank finds its peers (internal to libddp).
 *
 * A chain of methods tried in order, each probing its environment before it
 * commits (flux-core's upmi idea):
 *   pmix   - PMIX_NAMESPACE or PMIX_SERVER_URI* in the environment: PMIx_Init,
 *            identity from the PMIx server, exchanges through PMIx fences;
 *   single - no launcher: rank 0 of 1, exchanges are local copies.
 * If the environment says the world is larger than one (WORLD_SIZE, srun's
 * SLURM_STEP_NUM_TASKS, mpirun's OMPI_COMM_WORLD_SIZE, PMI_SIZE) but no PMIx
 * server is there, bootstrap_create() fails with DDP_ENOLAUNCH and a message
 * saying how to launch.  DDP_BOOTSTRAP=pmix|single forces a method.
 *
 * The handle is used by backends for their one-time setup (addresses, shared
 * memory names, NCCL unique ids); never for per-collective data.
 */
#ifndef DDP_BOOTSTRAP_H
#define DDP_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

struct bootstrap;

/* What the launcher told us.  Filled by bootstrap_create(); read-only. */
struct bootstrap_info {
    int rank;            /* 0 .. size-1 */
    int size;            /* >= 1 */
    int local_rank;      /* index of this rank among local_ranks[] */
    int local_size;      /* ranks on this node, >= 1 */
    int node_rank;       /* this node's index, 0 .. num_nodes-1 */
    int num_nodes;       /* >= 1 */
    int *local_ranks;    /* local_size global ranks on this node, ascending */
    const char *method;  /* "pmix" or "single" */
    const char *job_id;  /* a string unique to the job (PMIx nspace, or
                            "single.<pid>"); stable for the handle's life */
};

/* Run the chain and connect to the launcher.  timeout_s bounds every wait
 * (fences included, where the method allows).  On success *bp is a new handle
 * and 0 is returned.  On failure returns a negative DDP_E* code (DDP_ENOLAUNCH,
 * DDP_EPMIX, DDP_EINVAL for a malformed environment value, DDP_ENOMEM) with a
 * human-readable reason in err (errlen bytes), and *bp is untouched. */
int bootstrap_create (struct bootstrap **bp, double timeout_s, char *err,
                      size_t errlen);

/* The identity of this rank; valid until bootstrap_destroy(). */
const struct bootstrap_info *bootstrap_info (struct bootstrap *b);

/* One all-to-all exchange of small blobs (one PMIx put + fence with
 * collect + a get per rank): every rank passes its blob (len bytes, may be 0,
 * at most 64 KiB) and receives all ranks' blobs.  On success *all is one
 * malloc'd block (free() it) holding size blobs, blob r at all_off[r] with
 * length all_len[r] (all_off and all_len are arrays of size entries owned by
 * the caller), and 0 is returned.  Every rank must call it the same number of
 * times in the same order: each call uses a key no earlier call used, so a
 * stale value can never be read.  On failure returns DDP_EPMIX,
 * DDP_ETIMEDOUT or DDP_ENOMEM with a reason in err; *all is NULL. */
int bootstrap_exchange (struct bootstrap *b, const void *blob, size_t len,
                        void **all, size_t *all_off, size_t *all_len,
                        char *err, size_t errlen);

/* A fence with no data (every rank must call it).  Returns 0 or DDP_EPMIX /
 * DDP_ETIMEDOUT with a reason in err. */
int bootstrap_fence (struct bootstrap *b, char *err, size_t errlen);

/* Ask the launcher to end the whole job with exit status errcode, logging
 * msg (may be NULL).  Returns only when the launcher could not be told:
 * DDP_EPMIX, or DDP_ENOTSUP for the single method (the caller then exits). */
int bootstrap_abort (struct bootstrap *b, int errcode, const char *msg);

/* Free the handle (NULL is a no-op).  A PMIx client stays connected until
 * the process exits: a re-initialized one no longer sees the job data. */
void bootstrap_destroy (struct bootstrap *b);

#endif /* DDP_BOOTSTRAP_H */
