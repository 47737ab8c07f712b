/* bootstrap.h - how a rank finds its peers (internal to libddp).
 *
 * A chain of methods tried in order, each probing its environment before it
 * commits (flux-core's upmi idea; one file per method behind method.h):
 *   local  - DDP_LOCAL_FD in the environment: a rank of a job started on
 *            this machine by the local launcher (localjob.h,
 *            ddp-run, contrib/ddp-run/), which gives rank, size and a
 *            layout of simulated nodes and serves the exchanges;
 *   pmix   - PMIX_NAMESPACE or PMIX_SERVER_URI* in the environment: PMIx_Init,
 *            identity from the PMIx server, exchanges through PMIx fences;
 *            the node layout from the node ids the ranks' first
 *            bootstrap_exchange() carries (layout.h: Open MPI's mpirun
 *            numbers nodes in a way only each node understands);
 *   single - no launcher: rank 0 of 1, exchanges are local copies.
 * The first method whose probe accepts is the one used: if it then fails,
 * bootstrap_create() fails (no silent fall back to a world of one).  If the
 * environment says the world is larger than one (WORLD_SIZE, srun's
 * SLURM_STEP_NUM_TASKS, mpirun's OMPI_COMM_WORLD_SIZE, PMI_SIZE) but only
 * the single method is offered, bootstrap_create() fails with DDP_ENOLAUNCH
 * and a message saying how to launch.  DDP_BOOTSTRAP=local|pmix|single
 * forces a method (no probe).  With DDP_DEBUG every try is logged.
 *
 * The handle is used by backends for their one-time setup (addresses, shared
 * memory names, NCCL unique ids); never for per-collective data.
 *
 * Exchanges go in rounds that every rank takes in the same order: either
 * bootstrap_exchange() (everyone's blob to everyone: simple, but each rank
 * reads size blobs), or the sparse calls bootstrap_put(), bootstrap_sync(),
 * bootstrap_get(): each rank publishes what it has, with one fence, and
 * reads only the blobs it needs (its node's, a few partners'), so that a
 * rank's work does not grow with the world.  bootstrap_fence() is a round
 * with no data.
 *
 * The node layout (node_rank, num_nodes, bootstrap_node_ranks(),
 * bootstrap_layout()) is known when bootstrap_create() returns under the
 * local and single methods, and under pmix once the first
 * bootstrap_exchange() returned (libddp's first exchange, the backend
 * vote, is one): that exchange also carries each rank's node id, 4 bytes,
 * so it stays the one round it was.
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
    int node_rank;       /* this node's index, 0 .. num_nodes-1 (pmix:
                            until the first exchange, the launcher's
                            numbering where it is one here, else -1) */
    int num_nodes;       /* >= 1 (pmix: until the first exchange, the
                            launcher's count, or 0 with node_rank -1) */
    int *local_ranks;    /* local_size global ranks on this node, ascending */
    const char *method;  /* "local", "pmix" or "single" */
    const char *job_id;  /* a string unique to the job (PMIx nspace,
                            "local.<launcher pid>", "single.<pid>"); stable
                            for the handle's life */
};

/* Who may read a blob put with bootstrap_put(). */
enum bootstrap_scope {
    BOOTSTRAP_GLOBAL = 1,   /* every rank */
    BOOTSTRAP_LOCAL = 2,    /* the ranks of this node only */
};

/* Run the chain and connect to the launcher.  timeout_s (> 0) bounds every
 * wait until bootstrap_set_timeout() says otherwise; messages name it
 * DDP_TIMEOUT.  On success *bp is a new handle and 0 is returned.  On
 * failure returns a negative DDP_E* code (DDP_ENOLAUNCH, DDP_EPMIX,
 * DDP_ETRANSPORT, DDP_EINVAL for a malformed environment value,
 * DDP_ENOTSUP for a method not built in, DDP_ENOMEM) with a human-readable
 * reason in err (errlen bytes), and *bp is untouched. */
int bootstrap_create (struct bootstrap **bp, double timeout_s, char *err,
                      size_t errlen);

/* From now on every wait of b is bounded by timeout_s (> 0) seconds, and
 * messages call that bound name (e.g. "DDP_INIT_TIMEOUT"; at most 31
 * characters are kept). */
void bootstrap_set_timeout (struct bootstrap *b, double timeout_s,
                            const char *name);

/* The identity of this rank; valid until bootstrap_destroy(). */
const struct bootstrap_info *bootstrap_info (struct bootstrap *b);

/* One all-to-all exchange of small blobs (a round: one put, a fence with
 * collect, a get per rank): every rank passes its blob (len bytes, may be
 * 0, at most 64 KiB) and receives all ranks' blobs.  On success *all is
 * one malloc'd block (free() it) holding size blobs, blob r at all_off[r]
 * with length all_len[r] (all_off and all_len are arrays of size entries
 * owned by the caller), and 0 is returned.  Every rank must call it the
 * same number of times in the same order: each round uses keys no earlier
 * round used, so a stale value can never be read.  Under pmix the first
 * exchange of a handle also settles the node layout (above): bootstrap_info
 * then has node_rank and num_nodes, the same on every rank for a node.
 * On failure returns DDP_EINVAL (blob too large), DDP_EPMIX (also: the
 * ranks that share this rank's node id are not the ones its PMIx server
 * says share its node), DDP_ETRANSPORT, DDP_ETIMEDOUT, DDP_EPEER (a rank
 * known to have died or put nothing) or DDP_ENOMEM with a reason in err;
 * *all is NULL. */
int bootstrap_exchange (struct bootstrap *b, const void *blob, size_t len,
                        void **all, size_t *all_off, size_t *all_len,
                        char *err, size_t errlen);

/* A fence with no data (a round; every rank must call it).  Returns 0 or
 * DDP_EPMIX / DDP_ETRANSPORT / DDP_ETIMEDOUT / DDP_EPEER with a reason in
 * err. */
int bootstrap_fence (struct bootstrap *b, char *err, size_t errlen);

/* Sparse exchange, step 1: publish this rank's blob (len bytes, at most
 * 64 KiB; blob may be NULL when len is 0) for the open round, readable
 * after the round's bootstrap_sync() by every rank (BOOTSTRAP_GLOBAL) or
 * only by the ranks of this node (BOOTSTRAP_LOCAL: under PMIx it never
 * leaves the node).  At most one blob per scope per round; a rank may put
 * none.  Returns 0, DDP_EINVAL (a second put of that scope in the round,
 * a blob too large, an unknown scope) or DDP_EPMIX / DDP_ETRANSPORT /
 * DDP_ENOMEM with a reason in err. */
int bootstrap_put (struct bootstrap *b, enum bootstrap_scope scope,
                   const void *blob, size_t len, char *err, size_t errlen);

/* Sparse exchange, step 2: close the round with one fence of every rank
 * (bounded by the timeout) that also brings every GLOBAL blob of the round
 * to this node (PMIx: PMIX_COLLECT_DATA), so that no later get has to ask
 * another node (a PMIx direct-modex request can stall a Slurm node for
 * about 30 s when the target node's tasks are gone).  Afterwards
 * bootstrap_get() reads this round until the next round is synced.
 * Returns 0 or DDP_ETIMEDOUT (naming the ranks that did not arrive as far
 * as the method can tell), DDP_EPEER, DDP_EPMIX, DDP_ETRANSPORT with a
 * reason in err; the round is closed either way. */
int bootstrap_sync (struct bootstrap *b, char *err, size_t errlen);

/* Sparse exchange, step 3: rank's blob of scope from the last synced
 * round, as a malloc'd *blob (free() it) of *len bytes.  Answered from
 * this node's data: costs no traffic to other nodes.  Returns 0, or
 * DDP_EINVAL (no round synced yet, rank out of range, a LOCAL blob of a
 * rank on another node), DDP_EMISMATCH (rank put no blob of that scope in
 * the round), DDP_EPMIX, DDP_ENOMEM with a reason in err; *blob is then
 * NULL. */
int bootstrap_get (struct bootstrap *b, int rank, enum bootstrap_scope scope,
                   void **blob, size_t *len, char *err, size_t errlen);

/* The global ranks of node (0 .. num_nodes-1), ascending, as a malloc'd
 * *ranks (free() it) of *n entries, from the node layout (above) without
 * any exchange: the launcher's (local), or the table the first exchange
 * made (pmix: O(size) work, no get).  Returns 0, or DDP_EINVAL (node out
 * of range; pmix: before the first exchange), DDP_ENOMEM with a reason in
 * err; *ranks is then NULL. */
int bootstrap_node_ranks (struct bootstrap *b, int node, int **ranks, int *n,
                          char *err, size_t errlen);

/* The node of every rank (the launcher's layout, as bootstrap_node_ranks
 * gives it node by node) into rank_node (room for size entries), without
 * any exchange, O(size) work.  Returns 0, or DDP_EINVAL (pmix: before the
 * first exchange), DDP_EPMIX (the local launcher's layout: a node with no
 * ranks, a rank on two nodes or on none), DDP_ENOMEM with a reason in
 * err. */
int bootstrap_layout (struct bootstrap *b, int *rank_node, char *err,
                      size_t errlen);

/* Ask the launcher to end the whole job with exit status errcode, logging
 * msg (may be NULL).  Returns 0 when the launcher was told (the caller then
 * exits), DDP_EPMIX / DDP_ETRANSPORT when it could not be told, or
 * DDP_ENOTSUP for the single method (the caller then exits). */
int bootstrap_abort (struct bootstrap *b, int errcode, const char *msg);

/* Tell the launcher that this rank's collectives failed because of another
 * rank, in words (why: libddp's message, naming it), so that the launcher
 * does not name this rank as the one that failed first when it ends.
 * Returns within 0.1 s: 0 when told, DDP_ETRANSPORT when it could not be,
 * DDP_ENOTSUP where the launcher has no use for it (PMIx, single). */
int bootstrap_victim (struct bootstrap *b, const char *why);

/* Tell the launcher why this rank is about to end badly (why: "raised
 * ValueError: bad batch 7"), so that the launcher names that, not the exit
 * status alone, when this rank failed first.  Returns within 0.1 s as
 * bootstrap_victim() does. */
int bootstrap_reason (struct bootstrap *b, const char *why);

/* A group's round (bootstrap_create_group): every rank of the group
 * passes its message (len bytes) and receives every group rank's, as
 * bootstrap_exchange() returns them (*all malloc'd; all_off and all_len:
 * the group's size entries, by group rank).  Returns 0 or a DDP_E* code
 * with a reason in err.  A group rank that sent nothing in the round
 * (it left the set-up) gets a 0-byte message. */
typedef int (*bootstrap_round_fn) (void *arg, const void *blob, size_t len,
                                   void **all, size_t *all_off,
                                   size_t *all_len, char *err, size_t errlen);

/* What a group is (ddp_comm_split): this rank's rank in it, its size, the
 * node of each group rank (0 .. nodes-1, every number used), a job id
 * unique to the group, and the function that carries its rounds. */
struct bootstrap_group {
    int rank, size;
    const int *rank_node;
    const char *job_id;
    bootstrap_round_fn round;
    void *arg;
};

/* A handle for the ranks of a group (method "group", never probed): its
 * info describes the group (local ranks: the group's ranks on this node),
 * its layout is spec's, and its exchanges, puts and syncs run as rounds of
 * spec->round.  abort, victim and reason answer DDP_ENOTSUP (the world's
 * handle tells the launcher).  Returns 0 and sets *bp, or DDP_EINVAL /
 * DDP_ENOMEM with err. */
int bootstrap_create_group (struct bootstrap **bp,
                            const struct bootstrap_group *spec,
                            double timeout_s, const char *timeout_name,
                            char *err, size_t errlen);

/* The group's set-up is over: its round function is not called again
 * (a later round fails with DDP_EINVAL).  NULL or another method's
 * handle: nothing. */
void bootstrap_group_close (struct bootstrap *b);

/* Free the handle (NULL is a no-op).  The connection to the launcher stays
 * until the process exits (a PMIx client re-initialized no longer sees the
 * job data), so that a later bootstrap_create() finds it again. */
void bootstrap_destroy (struct bootstrap *b);

#endif /* DDP_BOOTSTRAP_H */
