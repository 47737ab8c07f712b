/* backend.h - the internal interface between libddp's core and a backend.
 *
 * The core (core.c) owns the public API, the NCCL section of ddp.h
 * included: it checks every argument once for the plain and the _stream
 * calls (NULL buffers with count > 0, sizes that overflow, dtype/op/root
 * range, init state), handles count == 0 where no synchronization is
 * promised, and then calls the backend chosen by DDP_BACKEND (host, nccl,
 * auto).  A backend therefore sees only valid arguments: dtype <
 * DDP_NUM_DTYPES, op < DDP_NUM_OPS, 0 <= root < world size, count > 0,
 * sizes that fit in size_t (count * element size, times the world size for
 * what a gather's root or an allgather receives), non-NULL buffers (recvbuf
 * of reduce/gather is NULL on non-root ranks).
 *
 * Every backend function returns 0 or a negative DDP_E* code, and on failure
 * records why with ddpi_error() (ddp_internal.h), naming the rank(s) at fault
 * where it knows them.  After DDP_EPEER / DDP_ETIMEDOUT / DDP_ETRANSPORT the
 * core marks the library broken: later collectives fail with the same code
 * without calling the backend again.  Every wait is bounded by
 * cfg->timeout_s, the bound in force: read it at each wait, never keep a
 * copy, since the core switches it from the init timeout to the
 * collectives' one after create() and the first barrier.  Collectives must give bitwise identical results on every
 * rank (a fixed reduction order); reduce.h has the element arithmetic.
 *
 * Contexts: one per communicator (the world's from create(), a group's
 * from split() or create() on the group's bootstrap); a backend keeps no
 * state outside its contexts that one communicator could disturb in
 * another.  Ranks in a context are that communicator's (0 .. size-1);
 * the core translates them to world ranks in what it tells the user.
 *
 * Threading: the core calls a context from one thread at a time, not
 * always the same one (nonblocking calls run on the communicator's
 * worker thread); different contexts may be called from different
 * threads at once.
 */
#ifndef DDP_BACKEND_H
#define DDP_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "ddp.h"
#include "bootstrap.h"

/* Settings read once by ddp_init() from the environment. */
struct ddp_config {
    /* The bound in force on every wait, in seconds: init_timeout_s during
     * create() and the first barrier, coll_timeout_s after.  At most
     * DDPI_TIMEOUT_MAX (what "inf" stands for). */
    double timeout_s;
    const char *timeout_name;   /* "DDP_INIT_TIMEOUT" or "DDP_TIMEOUT",
                                   for messages (NULL: "DDP_TIMEOUT") */
    double coll_timeout_s;  /* DDP_TIMEOUT (default 30) */
    double init_timeout_s;  /* DDP_INIT_TIMEOUT, by default DDP_TIMEOUT or
                               0.05 s per rank, the longer */
    bool debug;             /* DDP_DEBUG */
};

/* One collective as the caller described it, after the core's checks. */
enum ddp_coll_kind {
    DDP_COLL_BCAST,
    DDP_COLL_REDUCE,
    DDP_COLL_ALLREDUCE,
    DDP_COLL_GATHER,
    DDP_COLL_ALLGATHER,
    DDP_COLL_REDUCE_SCATTER, /* count: the block each rank receives */
};

/* How many kinds there are (a backend's own kinds, such as the host
 * backend's barrier, number from here). */
#define DDP_COLL_NKINDS (DDP_COLL_REDUCE_SCATTER + 1)

/* Does a collective of kind take a root (bcast, reduce, gather)? */
static inline bool ddp_coll_has_root (enum ddp_coll_kind kind)
{
    return kind == DDP_COLL_BCAST || kind == DDP_COLL_REDUCE
           || kind == DDP_COLL_GATHER;
}

/* Does it take an op (reduce, all-reduce)? */
static inline bool ddp_coll_has_op (enum ddp_coll_kind kind)
{
    return kind == DDP_COLL_REDUCE || kind == DDP_COLL_ALLREDUCE
           || kind == DDP_COLL_REDUCE_SCATTER;
}

struct ddp_coll {
    enum ddp_coll_kind kind;
    const void *sendbuf; /* bcast: the buffer (as recvbuf) */
    void *recvbuf;       /* NULL on non-root ranks of reduce and gather */
    size_t count;        /* elements per rank, > 0 (reduce-scatter: the
                            block each rank receives; sendbuf holds size
                            blocks) */
    ddp_dtype_t dtype;
    ddp_op_t op;         /* reduce and allreduce only */
    int root;            /* bcast, reduce and gather only */
    bool on_stream;      /* a _stream call: enqueue on stream */
    void *stream;        /* the caller's cudaStream_t when on_stream */
};

/* The NCCL section of ddp.h, for a backend that runs on CUDA streams.  ctx
 * is what create() made. */
struct ddp_gpu_ops {
    void *(*comm) (void *ctx);   /* the ncclComm_t, NULL once aborted */
    void *(*stream) (void *ctx); /* the library's cudaStream_t */
    int (*device) (void *ctx);   /* the CUDA device index in use */
    /* Wait for everything on the cudaStream_t stream, bounded by the
     * timeout.  Returns 0 or a DDP_E* code. */
    int (*synchronize) (void *ctx, void *stream);
};

struct ddp_backend {
    const char *name;   /* "host", "nccl": what ddp_backend_name() returns */

    /* Connect this rank to its peers.  b is the bootstrap handle (its
     * exchange is the only way to publish setup data; it stays valid until
     * destroy; the core's backend vote was its first exchange, so its node
     * layout is known: bootstrap.h).  On success sets *ctxp and returns 0; on failure returns a
     * negative DDP_E* code after ddpi_error(), leaving nothing behind (no
     * segment, socket or thread). */
    int (*create) (struct bootstrap *b, const struct ddp_config *cfg,
                   void **ctxp);

    /* Release everything create() made.  The core has already run a final
     * barrier when the peers were alive; destroy must not wait for peers. */
    void (*destroy) (void *ctx);

    int (*barrier) (void *ctx);

    /* ddp_finalize()'s last collective: a barrier, and whatever report the
     * backend makes at the end (every rank calls it when no fault is
     * known).  Returns 0 or a negative DDP_E* code.  May be NULL: barrier. */
    int (*finalize) (void *ctx);

    /* Make the context of a group: called on every rank of the parent
     * communicator (parent: its context), in the same order as the
     * parent's collectives, with colour and key as ddp_comm_split() got
     * them.  sub is a bootstrap of the group's ranks (bootstrap.h: the
     * "group" method), whose rounds are lock-step rounds of every rank of
     * the parent, carried by the parent's collectives (core/split.c): a
     * round waits for the group's ranks only, but no collective of the
     * backend's own on parent may run while another rank is in a round.
     * Colour DDP_UNDEFINED: this rank joins no group (*ctxp is left NULL),
     * and sub is a bootstrap of this rank alone on the same rounds: a
     * backend whose group ranks take rounds before a collective call on
     * the parent (ncclCommSplit) takes as many on it first.  Returns 0 or
     * a DDP_E* code after ddpi_error(), leaving nothing behind; the core
     * then agrees on the outcome over the parent and destroys the groups
     * made if any rank failed.  NULL: the core calls create (sub, cfg,
     * ctxp) on the ranks with a colour. */
    int (*split) (void *parent, int colour, int key, struct bootstrap *sub,
                  const struct ddp_config *cfg, void **ctxp);

    /* Make the context of a group that its members create without the
     * parent's other ranks (ddp_comm_create_group): called on the members
     * only, sub a bootstrap of the group's ranks whose rounds are the
     * caller's all-gather among them.  parent (its context) may only be
     * read, for settings fixed when it was made: another thread may be
     * running its calls.  Returns as split.  NULL: the core calls
     * create (sub, cfg, ctxp). */
    int (*join) (const void *parent, struct bootstrap *sub,
                 const struct ddp_config *cfg, void **ctxp);

    /* The collectives, either as one function taking the call's description
     * (coll, which also serves the _stream calls: with !k->on_stream it runs
     * on the backend's own means and returns when complete), or as the six
     * functions below it (used when coll is NULL). */
    int (*coll) (void *ctx, const struct ddp_coll *k);
    int (*bcast) (void *ctx, void *buf, size_t count, ddp_dtype_t dtype,
                  int root);
    /* recvbuf is NULL on non-root ranks when the caller passed NULL. */
    int (*reduce) (void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype, ddp_op_t op, int root);
    int (*allreduce) (void *ctx, const void *sendbuf, void *recvbuf,
                      size_t count, ddp_dtype_t dtype, ddp_op_t op);
    int (*gather) (void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype, int root);
    int (*allgather) (void *ctx, const void *sendbuf, void *recvbuf,
                      size_t count, ddp_dtype_t dtype);
    /* sendbuf holds size * recvcount elements; recvbuf may be this rank's
     * block of it (in place).  NULL: the core answers DDP_ENOTSUP. */
    int (*reduce_scatter) (void *ctx, const void *sendbuf, void *recvbuf,
                           size_t recvcount, ddp_dtype_t dtype, ddp_op_t op);

    /* Best effort, must not block: tell the peers this rank is aborting so
     * their pending and next collectives fail with DDP_EPEER naming it.  Called
     * by ddp_abort() before the launcher is asked to end the job.  May be
     * NULL. */
    void (*abort) (void *ctx);

    /* NULL, or (NCCL) the NCCL section of ddp.h; such a backend has coll.
     * Without it the core answers that section with DDP_ENOTSUP. */
    const struct ddp_gpu_ops *gpu;
};

/* The host backend (shared memory within a node, TCP between nodes). */
extern const struct ddp_backend ddpi_backend_host;

#endif /* DDP_BACKEND_H */
