/* method.h - the interface between the bootstrap chain (bootstrap.c) and
 * its methods, one file each: pmix.c, local.c, single.c.  Internal to
 * libjob/bootstrap.
 *
 * bootstrap.c owns the handle, the order of the chain, the environment
 * checks every method shares (RANK, WORLD_SIZE), the rounds of the
 * exchanges and their keys; a method only moves blobs.  A round is: each
 * rank puts up to one blob per scope under the round's keys, every rank
 * syncs (a fence), then any rank reads the blobs it may see.
 */
#ifndef DDP_BOOTSTRAP_METHOD_H
#define DDP_BOOTSTRAP_METHOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bootstrap.h"

/* Largest blob a put takes (bytes). */
#define BOOTSTRAP_MAX_BLOB (64 * 1024)

struct bootstrap_method;

struct bootstrap {
    struct bootstrap_info info;
    const struct bootstrap_method *m;
    double timeout_s;           /* bound of every wait */
    char timeout_name[32];      /* what set it, for messages */
    char job_id[300];
    bool put_done[2];           /* this round: put per scope (index scope-1) */
    bool synced;                /* some round completed: gets allowed */
    unsigned long read_round;   /* the round gets read */
    void *priv;                 /* the method's own state */
    /* Set by a method's create() whose launcher's node numbering cannot
     * be trusted across nodes (layout.h): node_id is this rank's node as
     * the launcher names it; the first bootstrap_exchange() carries every
     * rank's, then sets info.node_rank and info.num_nodes from them and
     * keeps every rank's node in rank_node (malloc'd, size entries), from
     * which bootstrap_node_ranks() and bootstrap_layout() answer. */
    bool ids_pending;
    uint32_t node_id;
    int *rank_node;
};

struct bootstrap_method {
    const char *name;

    /* Does the environment offer this method?  Returns true, or false
     * with the reason in why (why_len bytes) for the DDP_DEBUG trace.
     * Reads the environment only. */
    bool (*probe) (char *why, size_t why_len);

    /* Connect to the launcher and fill b->info (all but method and
     * job_id) and b->job_id; may set b->priv.  Waits at most b->timeout_s.
     * Returns 0, or a negative DDP_E* code with the reason in err; whatever
     * it allocated is then freed by destroy(). */
    int (*create) (struct bootstrap *b, char *err, size_t errlen);

    /* Publish this rank's blob (len bytes, at most BOOTSTRAP_MAX_BLOB)
     * under key, seen by every rank (BOOTSTRAP_GLOBAL) or only by the ranks
     * of this node (BOOTSTRAP_LOCAL), once the next sync() completed.
     * Returns 0 or DDP_EPMIX / DDP_ETRANSPORT / DDP_ENOMEM with err. */
    int (*put) (struct bootstrap *b, const char *key,
                enum bootstrap_scope scope, const void *blob, size_t len,
                char *err, size_t errlen);

    /* A fence of every rank, bounded by b->timeout_s.  key names the
     * round ("ddp.<n>": the puts' keys start with it; every rank passes the
     * same); with collect, every blob put
     * before it and visible to this rank is readable locally afterwards.
     * Returns 0, or DDP_ETIMEDOUT (saying which ranks did not arrive, as
     * far as the method can tell), DDP_EPEER (a rank is known to be gone),
     * DDP_EPMIX, DDP_ETRANSPORT with err. */
    int (*sync) (struct bootstrap *b, const char *key, bool collect,
                 char *err, size_t errlen);

    /* Copy rank's blob under key (a collected round) into a malloc'd
     * *blob of *len bytes (free() it; a 0-byte blob is a 1-byte buffer).
     * Returns 0, 1 when rank put nothing under key (nothing allocated),
     * or a negative DDP_E* code with err.  Never waits on another node. */
    int (*get) (struct bootstrap *b, int rank, const char *key, void **blob,
                size_t *len, char *err, size_t errlen);

    /* The global ranks of node (0 <= node < num_nodes), ascending, into
     * ranks (room for size entries); *n their count.  Returns 0 or a
     * negative DDP_E* code with err.  Not called once b->rank_node is
     * set, nor while b->ids_pending. */
    int (*node_ranks) (struct bootstrap *b, int node, int *ranks, int *n,
                       char *err, size_t errlen);

    /* Ask the launcher to end the job (bootstrap_abort's contract). */
    int (*abort) (struct bootstrap *b, int code, const char *msg);

    /* Tell the launcher this rank is a victim (bootstrap_victim's
     * contract); NULL where the launcher has no use for it. */
    int (*victim) (struct bootstrap *b, const char *why);

    /* Tell the launcher why this rank ends badly (bootstrap_reason's
     * contract); NULL where the launcher has no use for it. */
    int (*reason) (struct bootstrap *b, const char *why);

    /* Free b->priv (may be NULL); the connection may stay for a later
     * handle.  Keeps errno. */
    void (*destroy) (struct bootstrap *b);
};

/* A method's table named "PREFIX", from its functions PREFIX_probe,
 * _create, _put, _sync, _node_ranks, _abort and get_fn, destroy_fn
 * (which methods that keep blobs on this side share):
 *   const struct bootstrap_method bootstrap_method_pmix =
 *       BOOTSTRAP_METHOD (pmix, pmix_get, pmix_destroy); */
#define BOOTSTRAP_METHOD(prefix, get_fn, destroy_fn)                          \
    {                                                                         \
        .name = #prefix, .probe = prefix##_probe, .create = prefix##_create,  \
        .put = prefix##_put, .sync = prefix##_sync, .get = get_fn,            \
        .node_ranks = prefix##_node_ranks, .abort = prefix##_abort,           \
        .destroy = destroy_fn,                                                \
    }

extern const struct bootstrap_method bootstrap_method_local;
extern const struct bootstrap_method bootstrap_method_pmix;
extern const struct bootstrap_method bootstrap_method_single;

/* Format a message into err (errlen bytes; err may be NULL) and return
 * code (method.c), so that `return bootstrap_err (err, errlen, DDP_EPMIX, "...")`
 * works. */
int bootstrap_err (char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));

/* Blobs kept on this side (the single method's own, the local method's
 * collected ones), in ascending rank order. */
struct bootstrap_blob {
    int rank;
    char key[48];
    size_t len;
    char *data;
};

struct bootstrap_blobs {
    struct bootstrap_blob *v;
    size_t n, cap;
};

/* Append a copy of rank's blob under key; ranks must come in ascending
 * order (equal allowed).  Returns 0, or -1 when out of memory, the key is
 * too long or the rank out of order (t unchanged). */
int bootstrap_blobs_add (struct bootstrap_blobs *t, int rank, const char *key,
                         const void *data, size_t len);

/* Forget every blob and free the table (t stays usable). */
void bootstrap_blobs_clear (struct bootstrap_blobs *t);

/* The get() and destroy() of a method whose b->priv is a malloc'd
 * struct bootstrap_blobs (destroy: or NULL): get() as method.h says
 * (0 with a malloc'd copy, 1 when there is none, DDP_ENOMEM with err);
 * destroy() frees the table and sets b->priv to NULL. */
int bootstrap_blobs_get (struct bootstrap *b, int rank, const char *key,
                         void **blob, size_t *len, char *err, size_t errlen);
void bootstrap_blobs_destroy (struct bootstrap *b);

/* A world of several ranks announced by a launcher that gives us no
 * bootstrap (WORLD_SIZE, SLURM_STEP_NUM_TASKS, OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, in that order): returns the size (> 1) and sets *name to the
 * variable, or returns 0.  A malformed WORLD_SIZE counts as unset here
 * (bootstrap_create rejects it first).  (method.c) */
long bootstrap_foreign_world (const char **name);

#endif /* DDP_BOOTSTRAP_METHOD_H */
