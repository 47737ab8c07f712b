/* ddp.h - libddp: distributed data-parallel helpers for jobs launched by Slurm.
 *
 * A program calls ddp_init() once; the library finds its rank and peers
 * through PMIx (under `srun --ddp`, or any PMIx launcher) or runs as a single
 * process (rank 0 of 1) when started without one.  Collectives follow NCCL's
 * argument order, without communicator and stream.
 *
 * Errors: every function that can fail returns 0 or a negative DDP_E* code
 * (ddp_strerror() names it; with DDP_DEBUG set the library also logs why).
 * Nothing in the library aborts the process on bad input.
 *
 * Threads: call ddp_init(), ddp_finalize() and the collectives of one
 * communicator from one thread at a time (like MPI_THREAD_SERIALIZED);
 * different communicators may be used from different threads at once
 * (see "Communicators").  The query functions
 * (ddp_rank() ... ddp_is_distributed(), ddp_strerror(), ddp_version()) are
 * safe from any thread after ddp_init() returned.
 *
 * Environment (read by ddp_init(); a malformed value is an error, never
 * ignored: DDP_EINVAL naming the variable, the value and what is allowed;
 * whole numbers in decimal digits, flags 0 or 1, seconds as in "30",
 * "0.5", "1e3" or "inf"; empty is unset; the grammar of each in ddp(3)):
 *   DDP_DEBUG=1        log what init found and how long each phase took,
 *                      and the reason of every error (rank-prefixed, stderr)
 *   DDP_TIMEOUT=SECS   bound on every wait for a peer (default 30; "0.5"
 *                      works).  A rank that does not arrive in time is named
 *                      in the error every other rank logs.
 *   DDP_BACKEND=auto|host|nccl   the backend (default auto)
 *   DDP_BOOTSTRAP=pmix|single    force the bootstrap method (default: PMIx
 *                      when PMIX_NAMESPACE / PMIX_SERVER_URI* are set)
 *   DDP_HOST_ADDR=IPv4 the address node leaders listen on and advertise
 *                      (default: DDP_SOCKET_IFNAME's pick)
 *   DDP_SOCKET_IFNAME  the interfaces whose addresses they advertise, as
 *                      NCCL_SOCKET_IFNAME: "ib,eth", "^docker,lo", "=eth0"
 *                      (default: those up with a carrier but container
 *                      bridges, loopback last; not with DDP_HOST_ADDR)
 *   RANK, WORLD_SIZE   checked when set (a mismatch with the launcher is a
 *                      warning, and the launcher's are used);
 *                      WORLD_SIZE > 1 without PMIx is DDP_ENOLAUNCH
 *   and the tuning variables of ddp(3) ENVIRONMENT (DDP_SHM_SLOT, ...)
 * Read by other calls: DDP_STOP_SIGNALS (ddp_stop_signals()),
 * SLURM_RESTART_COUNT (ddp_restart_count()).
 * Failures are always logged to stderr when they concern the job rather than
 * the call (DDP_ENOLAUNCH, DDP_EPMIX, DDP_ETRANSPORT, DDP_ETIMEDOUT,
 * DDP_EPEER, DDP_EMISMATCH, and any ddp_init() failure).
 */
#ifndef DDP_H
#define DDP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (always negative; 0 is success). */
enum {
    DDP_OK = 0,
    DDP_EINVAL = -1,     /* a bad argument (NULL buffer, root out of range, ...) */
    DDP_ENOINIT = -2,    /* called before ddp_init() or after ddp_finalize() */
    DDP_ENOMEM = -3,     /* out of memory */
    DDP_ENOLAUNCH = -4,  /* the environment says world > 1 but no PMIx server */
    DDP_EPMIX = -5,      /* a PMIx call failed */
    DDP_ETRANSPORT = -6, /* the host transport (shared memory, sockets) failed */
    DDP_ETIMEDOUT = -7,  /* a peer did not arrive within DDP_TIMEOUT */
    DDP_EPEER = -8,      /* a peer died or aborted */
    DDP_EREMOTE = -9,    /* an operation failed on another rank (e.g. main) */
    DDP_EUSER = -10,     /* a user callback returned failure on this rank */
    DDP_ENOTSUP = -11,   /* not supported by this build or backend */
    DDP_ENCCL = -12,     /* an NCCL call failed */
    DDP_ECUDA = -13,     /* a CUDA call failed */
    DDP_EMISMATCH = -14, /* ranks disagree (different counts, names, ...) */
};

/* Element types.  FLOAT16 and BFLOAT16 are stored as uint16_t bit patterns. */
typedef enum {
    DDP_INT8 = 0,
    DDP_UINT8,
    DDP_INT32,
    DDP_UINT32,
    DDP_INT64,
    DDP_UINT64,
    DDP_FLOAT16,
    DDP_BFLOAT16,
    DDP_FLOAT32,
    DDP_FLOAT64,
    DDP_NUM_DTYPES
} ddp_dtype_t;

/* Reduction operations.  AVG is SUM divided by the world size (integer
 * types: truncated toward zero). */
typedef enum {
    DDP_SUM = 0,
    DDP_PROD,
    DDP_MIN,
    DDP_MAX,
    DDP_AVG,
    DDP_NUM_OPS
} ddp_op_t;

/* ---- Setup and identity ------------------------------------------------ */

/* Start the library: find rank and peers (PMIx, else a single process),
 * connect the backend (DDP_BACKEND or auto).  Idempotent: later calls return
 * 0 at once.  Returns 0, or DDP_ENOLAUNCH (world > 1 without a PMIx server:
 * launch with `srun --ddp`), DDP_EINVAL (a malformed environment value such
 * as RANK=abc, WORLD_SIZE=0, DDP_TIMEOUT=soon), DDP_ENOTSUP (a backend this
 * build lacks), DDP_EPMIX, DDP_ETRANSPORT, DDP_ETIMEDOUT (a peer never
 * reached init), DDP_EPEER, DDP_EMISMATCH, DDP_ENCCL, DDP_ECUDA,
 * DDP_ENOMEM.  On failure nothing is left initialized and ddp_init() may be
 * called again. */
int ddp_init (void);

/* Release everything ddp_init() set up (after a final barrier when the peers
 * are alive).  Returns 0, DDP_ENOINIT if not initialized, or DDP_EMISMATCH
 * when the final barrier found that the ranks' calls differed earlier in a
 * way no earlier call could see (the roots of a bcast or gather that no
 * rank read: results may be wrong); everything is released all the same. */
int ddp_finalize (void);

/* Identity of this process.  Before ddp_init() they describe a single
 * process (rank 0 of 1). */
int ddp_rank (void);             /* 0 .. world_size-1 */
int ddp_world_size (void);       /* >= 1 */
int ddp_local_rank (void);       /* rank among the processes of this node */
int ddp_local_world_size (void); /* processes on this node */
int ddp_node_rank (void);        /* index of this node in the job, 0-based */
int ddp_num_nodes (void);        /* nodes in the job */
bool ddp_is_main (void);         /* rank 0 */
bool ddp_is_local_main (void);   /* local rank 0 */
bool ddp_is_distributed (void);  /* initialized with world_size > 1 */

/* Name of the backend in use ("host", "nccl"), or "none" before init. */
const char *ddp_backend_name (void);

/* A static, human-readable description of err (a DDP_E* code); never NULL. */
const char *ddp_strerror (int err);

/* Why the last failure libddp's core recorded on this thread happened, in
 * words (what the library logs with DDP_DEBUG: "rank 2 died", "rank 1 did
 * not arrive within DDP_TIMEOUT (2 s)"), or "" if none yet; never NULL.
 * The core records the failures of ddp_init(), ddp_finalize(), the
 * collectives and whatever a collective inside a helper meets; the
 * helpers' own argument checks (ddp_stop_signals, ddp_run_on_main's NULL
 * fn, ...) only log theirs.  Read it right after the failing call: a later
 * failure replaces it, a success leaves it as it was.  Valid until the
 * next libddp call on this thread.  For bindings and programs that report
 * errors their own way (the Python module's exceptions). */
const char *ddp_last_error (void);

/* The IPv4 addresses this rank offers its peers, best first, as libddp's
 * host backend picks them (DDP_HOST_ADDR alone when set; else those of the
 * interfaces DDP_SOCKET_IFNAME or the default lets in: up, with a carrier,
 * container bridges left out, loopback last; 127.0.0.1 when none), written
 * to buf (len bytes) in dotted decimal separated by commas: for a program
 * that serves something of its own to the other ranks.  As many whole
 * addresses as fit (256 bytes hold 16).  Needs no ddp_init().  Returns how
 * many it wrote (>= 1), DDP_EINVAL (buf NULL or shorter than 16 bytes, a
 * malformed DDP_HOST_ADDR or DDP_SOCKET_IFNAME, both set) or
 * DDP_ETRANSPORT (the interfaces could not be listed, or
 * DDP_SOCKET_IFNAME lets none in), saying why in ddp_last_error(). */
int ddp_host_addrs (char *buf, size_t len);

/* The library version, "MAJOR.MINOR.PATCH"; never NULL. */
const char *ddp_version (void);

/* How this build finds CUDA and NCCL, as one line written to buf (len
 * bytes, truncated to fit): "not built (host backend only)"; or that they
 * are loaded at run time by the steps that use them, from where, and the
 * versions the build was made with; or, once a step loaded them, the
 * files they came from ("loaded at run time: NCCL 22803 from
 * /usr/lib/...").  libddp links neither: a build made with them starts
 * where they are absent (doc/nccl.md, "Finding CUDA and NCCL").  Loads
 * nothing; needs no ddp_init().  Returns buf (an empty string when len
 * is 0 or buf NULL: then NULL). */
const char *ddp_nccl_info (char *buf, size_t len);

/* End the whole job: every other rank's pending and next collective fails
 * with DDP_EPEER naming this rank, then the step ends.  errcode is the exit
 * status the launcher reports; msg (may be NULL) is logged, and the call
 * waits (at most 1 s) until a stderr pipe has been read, so that ending the
 * step does not lose the message.  A single process (or one not
 * initialized) exits with errcode.  Returns only if it could not reach the
 * launcher (then a negative DDP_E* code). */
int ddp_abort (int errcode, const char *msg);

/* Say why this rank is about to end badly, before it exits on its own (a
 * binding's uncaught exception: "raised ValueError: bad batch 7"): a
 * launcher that names the rank which failed first (ddp-run) then says
 * "rank 1 raised ValueError: bad batch 7 (exited with status 1)" rather
 * than the exit status alone; this rank logs "this rank ends: it raised
 * ValueError: bad batch 7" (its rank in the prefix, where srun's output
 * of a traceback has none), unless a collective already failed here
 * because of another rank.  why is cut at 1024 bytes; the first reason
 * counts.  Returns 0 when the launcher was told, DDP_ENOINIT before
 * ddp_init or after ddp_finalize, DDP_EINVAL for NULL, DDP_ENOTSUP where
 * the launcher takes no reason (srun, a single process), DDP_ETRANSPORT
 * when it could not be told within 0.1 s.  Ends nothing: the process
 * exits as it would have. */
int ddp_exit_reason (const char *why);

/* ---- Collectives ------------------------------------------------------ *
 * Every rank must call the same collectives in the same order with matching
 * count, dtype, op and root.  sendbuf == recvbuf means in place (for
 * (all)gather, sendbuf may also be this rank's block of recvbuf).  count 0 is
 * valid: nothing moves and the call returns at once (only ddp_barrier()
 * synchronizes).  Each returns 0 or a negative DDP_E* code: DDP_EINVAL for
 * NULL buffers with count > 0, unknown dtype/op, root out of range;
 * DDP_ENOINIT before init; DDP_ETIMEDOUT / DDP_EPEER when a peer does not
 * arrive or died (naming it in the log), DDP_ETRANSPORT.  These three are
 * sticky: every later collective fails with the same code.
 *
 * Results are bitwise identical on every rank (a fixed reduction order).
 * Arithmetic: integers wrap (two's complement); FLOAT16/BFLOAT16 are
 * computed in float and rounded to nearest-even at each step; MIN/MAX
 * return an operand unchanged, a NaN operand wins; AVG is SUM then a
 * division by the world size (integers: truncated toward zero). */

/* Wait until every rank has called ddp_barrier(). */
int ddp_barrier (void);

/* Copy count elements of buf on root to buf on every rank. */
int ddp_bcast (void *buf, size_t count, ddp_dtype_t dtype, int root);

/* Reduce count elements of every rank's sendbuf with op into recvbuf on root
 * (recvbuf is ignored, and may be NULL, on other ranks). */
int ddp_reduce (const void *sendbuf, void *recvbuf, size_t count,
                ddp_dtype_t dtype, ddp_op_t op, int root);

/* Reduce count elements of every rank's sendbuf with op into every rank's
 * recvbuf. */
int ddp_allreduce (const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype, ddp_op_t op);

/* Gather count elements from every rank into recvbuf on root, rank order
 * (recvbuf holds world_size * count elements; ignored on other ranks). */
int ddp_gather (const void *sendbuf, void *recvbuf, size_t count,
                ddp_dtype_t dtype, int root);

/* Gather count elements from every rank into every rank's recvbuf (holds
 * world_size * count elements, rank order). */
int ddp_allgather (const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype);

/* Reduce world_size * recvcount elements of every rank's sendbuf with op
 * and leave block r of the result (elements r * recvcount ..
 * (r + 1) * recvcount - 1) in rank r's recvbuf (recvcount elements):
 * MPI_Reduce_scatter_block, ncclReduceScatter.  In place when recvbuf is
 * this rank's block of sendbuf.  Same arithmetic, order and errors as
 * ddp_allreduce(); AVG divides by the world size. */
int ddp_reduce_scatter (const void *sendbuf, void *recvbuf, size_t recvcount,
                        ddp_dtype_t dtype, ddp_op_t op);

/* Size in bytes of one element of dtype, or 0 for an unknown dtype. */
size_t ddp_dtype_size (ddp_dtype_t dtype);

/* ---- Communicators: groups of ranks ---------------------------------- *
 * A communicator is a set of ranks that make collectives together, each
 * with its own rank 0 .. size-1 in it.  The world (every rank of the job)
 * is one: ddp_comm_world(), and a NULL comm means it in every call below.
 * ddp_comm_split() makes groups of any subset (as MPI_Comm_split and
 * ncclCommSplit): data-, tensor- and pipeline-parallel groups, a node's
 * ranks, torch's new_group.  Disjoint groups run at the same time without
 * waiting for each other; a rank may be in many.
 *
 * Each communicator has its own agreement (the ranks' calls are compared
 * as the world's are), its own timeout bound (DDP_TIMEOUT) and its own
 * fault state: a rank that dies fails the pending and next calls of every
 * communicator it is in, within DDP_TIMEOUT + 1 s, naming it by its rank
 * in that communicator and in the world; a communicator it is not in goes
 * on (the world fails at its next call).  A fault is sticky per
 * communicator.  A group's messages name the group's ranks; what
 * ddp_last_error() returns then starts with the world ranks they are
 * ("in group 2 (its ranks 0..1 are world ranks 1,3): rank 1 died"), and
 * the log adds that in a line of its own.
 *
 * Threads: as for the world, one thread at a time per communicator;
 * different communicators may be used from different threads at once.
 * Requests (below) complete on a thread of the library. */
typedef struct ddp_comm ddp_comm_t;

/* The colour of a rank that joins no group in ddp_comm_split(). */
#define DDP_UNDEFINED (-1)

/* The world communicator, or NULL before ddp_init() / after
 * ddp_finalize() (where NULL also means the world: such calls then fail
 * with DDP_ENOINIT). */
ddp_comm_t *ddp_comm_world (void);

/* Collective over parent (NULL: the world): every rank of parent calls it
 * in the same order as its other calls on parent.  Ranks that pass the same
 * colour (>= 0) form one new communicator, ordered by key, then by their
 * rank in parent; a rank that passes DDP_UNDEFINED gets *newcomm = NULL.
 * Returns 0; DDP_EINVAL (newcomm NULL, colour < 0 and not DDP_UNDEFINED:
 * this rank still takes part, as DDP_UNDEFINED), DDP_ENOINIT, DDP_ENOMEM,
 * or parent's collective errors (DDP_ETIMEDOUT, DDP_EPEER, ...), or the
 * error of setting a group up on any rank (then every rank of parent fails,
 * naming it, and no group exists).  Free each with ddp_comm_free(). */
int ddp_comm_split (ddp_comm_t *parent, int colour, int key,
                    ddp_comm_t **newcomm);

/* The caller's all-gather among the members of a group that
 * ddp_comm_create_group() makes: every member passes len bytes (mine, the
 * same len on every member in a call) and gets every member's len bytes
 * in all (n * len bytes), in the order of the ranks list, its own
 * included.  arg is ddp_comm_create_group's.  Return 0, or non-zero when
 * it failed (the creation then fails on this rank with DDP_EUSER).  It is
 * called several times in one creation, by the thread that called
 * ddp_comm_create_group; each call must bring the members' bytes of that
 * call (keys of a store that count the calls, a group they share).  Its
 * waits are the creation's: bound them (a store's timeout). */
typedef int (*ddp_allgather_fn) (void *arg, const void *mine, void *all,
                                 size_t len);

/* A group of the ranks ranks[0..n-1] of parent (NULL: the world), its
 * rank g being ranks[g], made by those ranks only (MPI_Comm_create_group;
 * torch's new_group(use_local_synchronization=True)): the parent's other
 * ranks do not call it and go on with their own calls.  Every member
 * passes the same ranks in the same order and an allgather that reaches
 * the others (above); libddp's set-up messages go through it, so its
 * waits are the only waits of the set-up.  Returns 0 and *newcomm;
 * DDP_EINVAL on this rank alone, without calling allgather, when
 * allgather is NULL, ranks are not n distinct ranks of parent or do not
 * include this rank; DDP_EMISMATCH on every member when the members
 * listed different ranks, or allgather put their bytes out of order;
 * DDP_EINVAL on every member when one passed newcomm NULL; DDP_EUSER
 * when allgather failed here; DDP_EREMOTE naming the member where the
 * group's set-up failed; then no group exists.  Free it with
 * ddp_comm_free() (collective over the group). */
int ddp_comm_create_group (ddp_comm_t *parent, const int *ranks, int n,
                           ddp_allgather_fn allgather, void *arg,
                           ddp_comm_t **newcomm);

/* Collective over comm: wait for its pending requests, a final barrier
 * when its peers are alive, then release it; *comm becomes NULL.  The
 * world cannot be freed (DDP_EINVAL; ddp_finalize() does that), and
 * ddp_finalize() frees the groups not yet freed (without the barrier).
 * NULL or *comm NULL: returns 0.  Returns 0 or DDP_EINVAL; a fault in the
 * final barrier is not reported (as in ddp_finalize). */
int ddp_comm_free (ddp_comm_t **comm);

/* This rank's rank in comm (0 .. size-1), and comm's size.  NULL: the
 * world (ddp_rank(), ddp_world_size()). */
int ddp_comm_rank (const ddp_comm_t *comm);
int ddp_comm_size (const ddp_comm_t *comm);

/* The world rank of comm's rank r, or DDP_EINVAL when r is not a rank of
 * comm. */
int ddp_comm_world_rank (const ddp_comm_t *comm, int r);

/* The collectives on a communicator: the world calls above, with comm
 * first (NULL: the world); root and the rank order of (all)gather and
 * reduce-scatter are ranks of comm, AVG divides by comm's size. */
int ddp_comm_barrier (ddp_comm_t *comm);
int ddp_comm_bcast (ddp_comm_t *comm, void *buf, size_t count,
                    ddp_dtype_t dtype, int root);
int ddp_comm_reduce (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                     size_t count, ddp_dtype_t dtype, ddp_op_t op, int root);
int ddp_comm_allreduce (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op);
int ddp_comm_gather (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                     size_t count, ddp_dtype_t dtype, int root);
int ddp_comm_allgather (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype);
int ddp_comm_reduce_scatter (ddp_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t recvcount,
                             ddp_dtype_t dtype, ddp_op_t op);

/* ---- Nonblocking collectives ------------------------------------------ *
 * ddp_comm_iX() starts what ddp_comm_X() does and returns at once with a
 * request in *req; the collective runs on a thread of the library while
 * the caller computes, and completes when ddp_wait() or ddp_test() says
 * so.  Until then the buffers belong to the library: do not touch them.
 * (On the host backend a communicator of one completes a request when it
 * starts: its call is a copy.)
 * Several may be in flight on a communicator; they run, and complete, in
 * the order they were started, and a blocking call on the same
 * communicator first waits for them (it keeps its place in the order).
 * Every rank must start the same calls in the same order, as for the
 * blocking ones.  A start checks the arguments as the blocking call does
 * (DDP_EINVAL, DDP_ENOINIT, a communicator already broken: returned at
 * once, *req NULL); faults met while it runs are returned by
 * ddp_wait()/ddp_test(), bounded by DDP_TIMEOUT as always, and break the
 * communicator (its later requests fail with the same code). */
typedef struct ddp_request ddp_request_t;

int ddp_comm_ibarrier (ddp_comm_t *comm, ddp_request_t **req);
int ddp_comm_ibcast (ddp_comm_t *comm, void *buf, size_t count,
                     ddp_dtype_t dtype, int root, ddp_request_t **req);
int ddp_comm_ireduce (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                      size_t count, ddp_dtype_t dtype, ddp_op_t op, int root,
                      ddp_request_t **req);
int ddp_comm_iallreduce (ddp_comm_t *comm, const void *sendbuf,
                         void *recvbuf, size_t count, ddp_dtype_t dtype,
                         ddp_op_t op, ddp_request_t **req);
int ddp_comm_igather (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                      size_t count, ddp_dtype_t dtype, int root,
                      ddp_request_t **req);
int ddp_comm_iallgather (ddp_comm_t *comm, const void *sendbuf,
                         void *recvbuf, size_t count, ddp_dtype_t dtype,
                         ddp_request_t **req);
int ddp_comm_ireduce_scatter (ddp_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t recvcount,
                              ddp_dtype_t dtype, ddp_op_t op,
                              ddp_request_t **req);

/* Threads: a request may be waited for or tested (ddp_wait, ddp_test,
 * ddp_waitall) on any thread, one thread at a time per request, also
 * while another thread calls the request's communicator (its next
 * requests, its blocking calls); not while the communicator is being
 * freed or the library finalized.  So a thread can block on a request
 * while the one that started it goes on.
 *
 * Wait (bounded by DDP_TIMEOUT on every peer, as a blocking call) until
 * *req completed, free it and set *req to NULL.  Returns the collective's
 * result: 0 or its DDP_E* code (ddp_last_error() says why, on this
 * thread).  *req NULL: returns 0 at once.  req NULL: DDP_EINVAL. */
int ddp_wait (ddp_request_t **req);

/* Wait for n requests (reqs[i] NULL are skipped), each as ddp_wait();
 * returns 0 or the first failure's code (the rest are still waited for
 * and freed). */
int ddp_waitall (size_t n, ddp_request_t **reqs);

/* Has *req completed?  Never blocks.  Sets *done; when true, frees the
 * request, sets *req to NULL and returns the collective's result as
 * ddp_wait() does; else returns 0.  *req NULL: *done true, returns 0.
 * DDP_EINVAL for req or done NULL. */
int ddp_test (ddp_request_t **req, bool *done);

/* ---- Variable-size data (the C form of broadcasting Python objects) --- */

/* Broadcast a byte buffer whose size only root knows.  On root *buf and *len
 * are inputs (unchanged).  On other ranks *buf receives a malloc'd copy
 * (free() it; NULL when the length is 0) and *len its length.  Returns 0 or
 * a negative DDP_E* code; on failure non-root *buf is NULL. */
int ddp_bcast_bytes (void **buf, size_t *len, int root);

/* Gather a byte buffer of any length from every rank on root.  On root,
 * *out receives a malloc'd concatenation in rank order and *lens a malloc'd
 * array of world_size lengths (free() both); on other ranks both are set to
 * NULL.  Returns 0 or a negative DDP_E* code. */
int ddp_gatherv_bytes (const void *buf, size_t len, void **out, size_t **lens,
                       int root);

/* As ddp_gatherv_bytes(), with the result on every rank. */
int ddp_allgatherv_bytes (const void *buf, size_t len, void **out,
                          size_t **lens);

/* ---- Main-process helpers --------------------------------------------- *
 * A callback returns 0 on success, non-zero on failure.  A failure on the
 * rank that runs the callback is shared with every rank in the same
 * collective that ends the helper: that rank gets DDP_EUSER, every other
 * rank DDP_EREMOTE, and nobody waits forever or carries on unaware. */
typedef int (*ddp_fn_t) (void *arg);

/* Main (rank 0) runs fn(arg); every rank waits for it.  If it succeeded,
 * post_fn(post_arg) (may be NULL) then runs on every non-main rank, and on
 * main too when post_on_main is true.  Returns 0, DDP_EUSER or DDP_EREMOTE
 * (fn or post_fn failed; post_fn failures are also shared), or another
 * DDP_E* code. */
int ddp_run_on_main (ddp_fn_t fn, void *arg, ddp_fn_t post_fn, void *post_arg,
                     bool post_on_main);

/* A main-only block: main runs fn(arg), the others wait for its status. */
int ddp_main_only (ddp_fn_t fn, void *arg);

/* Rank 0 runs fn(arg) first; once it succeeded every other rank runs
 * fn(arg) (e.g. rank 0 downloads/prepares data, the others then load it).
 * If rank 0 fails the others do not run fn and get DDP_EREMOTE.  A failure
 * on any other rank is reported to all ranks as well. */
int ddp_rank0_first (ddp_fn_t fn, void *arg);

/* As ddp_rank0_first(), per node: local rank 0 of each node first. */
int ddp_local_rank0_first (ddp_fn_t fn, void *arg);

/* Produces a byte buffer: sets *out to malloc'd memory and *len; returns 0
 * on success, non-zero on failure. */
typedef int (*ddp_compute_fn_t) (void *arg, void **out, size_t *len);

/* root runs fn(arg, ...) and its result is broadcast: every rank gets a
 * malloc'd copy in *out (free() it) and its length in *len. */
int ddp_compute_and_bcast (ddp_compute_fn_t fn, void *arg, int root,
                           void **out, size_t *len);

/* A user reduction: combine count elements of in into inout. */
typedef void (*ddp_user_op_t) (void *inout, const void *in, size_t count,
                               void *ctx);

/* Reduce buf (count elements of elem_size bytes) over all ranks with op
 * applied in rank order (rank 0's data, then op with rank 1's, ...), then
 * broadcast the result into every rank's buf. */
int ddp_reduce_bcast (void *buf, size_t count, size_t elem_size,
                      ddp_user_op_t op, void *ctx);

/* In-place average of buf over all ranks (allreduce with DDP_AVG). */
int ddp_average (void *buf, size_t count, ddp_dtype_t dtype);

/* A named scalar for ddp_average_named(). */
typedef struct {
    const char *name;
    double value;
} ddp_named_value_t;

/* Average n named values over all ranks in one collective; every rank must
 * pass the same names in the same order (else DDP_EMISMATCH on all). */
int ddp_average_named (ddp_named_value_t *values, size_t n);

/* Gather one double from every rank: on root out[r] is rank r's value (out
 * holds world_size doubles; ignored elsewhere). */
int ddp_gather_scalar (double value, double *out, int root);

/* ---- Distributed sampler (PyTorch DistributedSampler semantics) ------- */
typedef struct {
    uint64_t dataset_size;
    int world_size;
    int rank;
    bool shuffle;
    bool drop_last;
    uint64_t seed;
    uint64_t epoch;
    uint64_t num_samples; /* items this rank gets per epoch */
    uint64_t total_size;  /* num_samples * world_size */
} ddp_sampler_t;

/* Set up a sampler over dataset_size items for rank of world_size.  Without
 * drop_last the index list is padded (wrapping around) to a multiple of
 * world_size; with it the tail is dropped.  Returns 0 or DDP_EINVAL. */
int ddp_sampler_init (ddp_sampler_t *s, uint64_t dataset_size, int world_size,
                      int rank, bool shuffle, uint64_t seed, bool drop_last);

/* Select the epoch: with shuffle, the permutation depends on (seed, epoch). */
void ddp_sampler_set_epoch (ddp_sampler_t *s, uint64_t epoch);

/* Write this rank's num_samples indices for the current epoch to out (room
 * for n).  Returns 0, or DDP_EINVAL if out is NULL or n < num_samples. */
int ddp_sampler_indices (const ddp_sampler_t *s, uint64_t *out, size_t n);

/* Write n indices of this rank's list for the current epoch, starting at
 * position start (0-based, of num_samples): exactly what
 * ddp_sampler_indices() writes to out[start] .. out[start + n - 1], without
 * computing the rest.  With B items per rank and step, step k of an epoch
 * reads positions k * B .. k * B + B - 1, so a run resumed at step k of
 * epoch e (ddp_sampler_set_epoch (s, e)) sees the same items as one that
 * was never stopped.  Returns 0, or DDP_EINVAL if s was not set up by
 * ddp_sampler_init(), start + n > num_samples, or out is NULL with n > 0. */
int ddp_sampler_indices_from (const ddp_sampler_t *s, uint64_t start,
                              uint64_t *out, size_t n);

/* ---- Preemption, time limits and requeue ----------------------------- *
 * Slurm asks a job to end with a signal to every task (SIGTERM on scancel,
 * preemption and requeue, then SIGKILL after KillWait; the signal of
 * --signal=SIG@SECONDS before the time limit).  A program installs the
 * stop signals once, then asks once per training step whether to stop: the
 * answer is the same on every rank at the same step, so every rank leaves
 * the loop together and can checkpoint.  See ddp_should_stop(3). */

/* Catch the stop signals: a comma-separated list of names (TERM, SIGUSR1,
 * usr2: HUP INT QUIT USR1 USR2 ALRM TERM XCPU) or numbers (also real-time
 * signals), or "none" to put back what the program had.  NULL means
 * DDP_STOP_SIGNALS when set and not empty, else "TERM,USR1,USR2".  The
 * handler records the signal and calls the handler the program had
 * installed before (if any); a second stop signal restores the default
 * action and re-raises it, ending the process.  May be called before
 * ddp_init() (to catch a signal that comes during start-up) and again to
 * change the list.  Not thread-safe with itself.  Returns 0, or DDP_EINVAL
 * (logged, naming the bad word) for a list with an unknown name, an empty
 * word, KILL or STOP, or a signal that is no stop signal (SEGV, CHLD, ...);
 * then nothing changed. */
int ddp_stop_signals (const char *signals);

/* The first stop signal this process received since ddp_stop_signals(), or
 * 0 if none.  Only this process's knowledge: use ddp_should_stop() to
 * decide.  Async-signal-safe; any thread, before init too. */
int ddp_stop_requested (void);

/* Collective: *stop is true on every rank if any rank received a stop
 * signal before it entered this call, false on every rank otherwise.  One
 * allreduce of one 8-byte word.  Every rank must call it at the same points
 * (e.g. once per step).  Returns 0, DDP_EINVAL (stop is NULL; this rank
 * still takes part), DDP_ENOINIT, or a collective's error (DDP_ETIMEDOUT,
 * DDP_EPEER, ...); on failure *stop is false. */
int ddp_should_stop (bool *stop);

/* Collective: average n doubles over all ranks in place (as ddp_average()
 * with DDP_FLOAT64) and decide the stop as ddp_should_stop(), in one
 * allreduce of n + 1 doubles: the stop rides on the loss average a step
 * makes anyway.  Every rank must pass the same n.  Returns 0, DDP_EINVAL
 * (stop NULL, or values NULL with n > 0: this rank still takes part, its
 * values count as 0), DDP_ENOMEM, DDP_ENOINIT, or a collective's error; on
 * failure *stop is false and values are unchanged. */
int ddp_average_stop (double *values, size_t n, bool *stop);

/* How many times Slurm has requeued this job: SLURM_RESTART_COUNT, 0 when
 * unset (a first run, or not under Slurm).  A program resumes from its
 * checkpoint when this is above 0.  Needs no ddp_init().  Returns the count,
 * or DDP_EINVAL (logged) when SLURM_RESTART_COUNT is not a whole number. */
int ddp_restart_count (void);

/* ---- Logging ----------------------------------------------------------- */

/* printf to stderr prefixed "[ddp rank R/W] " (a whole line, one write). */
void ddp_log (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* As ddp_log(), printed by the main rank only. */
void ddp_log_main (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* ---- NCCL backend ------------------------------------------------------ *
 * With DDP_BACKEND=nccl (or auto on a node with GPUs) the collectives above
 * run through NCCL on the GPU this rank was given, on a CUDA stream owned by
 * the library, and return once the operation completed on the GPU.  Buffers
 * may be device memory (cudaMalloc, managed) or host memory: host buffers are
 * staged through the GPU, so the same call works for both.  Every wait is
 * bounded by DDP_TIMEOUT; an NCCL asynchronous error, a dead peer or the
 * deadline aborts the communicator and every later collective fails.
 * DDP_NCCL_RANKS_PER_ROOT (default 128) sets how many ranks share one NCCL
 * bootstrap root.  See doc/nccl.md.  In a build without NCCL these exist and
 * report that NCCL is not there. */

/* The ncclComm_t of the library, or NULL when the NCCL backend is not in
 * use (not initialized, host backend, built without NCCL, or aborted).  Use
 * it for NCCL calls of your own; do not destroy it. */
void *ddp_nccl_comm (void);

/* The cudaStream_t the library's collectives run on, or NULL when the NCCL
 * backend is not in use.  Do not destroy it. */
void *ddp_cuda_stream (void);

/* The CUDA device index (in this process's view) the library chose and made
 * current in ddp_init(), or -1 when the NCCL backend is not in use. */
int ddp_cuda_device (void);

/* Explicit-stream variants of the collectives (stream is a cudaStream_t; NULL
 * is CUDA's default stream).  With device buffers the operation is only
 * enqueued on stream (like NCCL): it returns 0 at once and the result is
 * ready when stream reaches it; order it with your own kernels through the
 * stream and use ddp_stream_synchronize() to wait with the deadline.  With a
 * host buffer the call stages through the GPU and returns once done.  Returns
 * 0, DDP_EINVAL, DDP_ENOINIT, DDP_ENOTSUP (the NCCL backend is not in use),
 * DDP_ENCCL, DDP_ECUDA, or the code that broke the communicator earlier. */
int ddp_bcast_stream (void *buf, size_t count, ddp_dtype_t dtype, int root,
                      void *stream);
int ddp_reduce_stream (const void *sendbuf, void *recvbuf, size_t count,
                       ddp_dtype_t dtype, ddp_op_t op, int root, void *stream);
int ddp_allreduce_stream (const void *sendbuf, void *recvbuf, size_t count,
                          ddp_dtype_t dtype, ddp_op_t op, void *stream);
int ddp_gather_stream (const void *sendbuf, void *recvbuf, size_t count,
                       ddp_dtype_t dtype, int root, void *stream);
int ddp_allgather_stream (const void *sendbuf, void *recvbuf, size_t count,
                          ddp_dtype_t dtype, void *stream);

/* Wait until everything enqueued on stream (a cudaStream_t, NULL for the
 * default stream) has completed, polling NCCL for asynchronous errors, for
 * at most DDP_TIMEOUT.  On an NCCL error or the deadline the communicator
 * is aborted (every rank's collectives then fail rather than hang).  Returns
 * 0, DDP_ENOINIT, DDP_ENOTSUP, DDP_ECUDA, DDP_ENCCL, DDP_EPEER or
 * DDP_ETIMEDOUT. */
int ddp_stream_synchronize (void *stream);

/* GPU memory of the current CUDA device in bytes: *used (everything in use
 * on the device, by every process, as nvidia-smi counts it) and *total
 * (either pointer may be NULL).  Works with any backend once a GPU is
 * visible.  Returns 0, DDP_ENOTSUP (built without NCCL, or no GPU), or
 * DDP_ECUDA. */
int ddp_gpu_mem_info (size_t *used, size_t *total);

/* ---- Added by the helpers: capabilities found in the seed libraries --- *
 * (see doc/api-map.md for the whole seed -> C map). */

/* Write the log prefix "[ddp rank R/W] " to buf with snprintf semantics (at
 * most size bytes including the NUL; buf may be NULL when size is 0), for a
 * program that logs through its own logger (speechbrain's
 * rank_prefixed_message).  Returns the prefix length (as snprintf), or
 * DDP_EINVAL if buf is NULL and size > 0. */
int ddp_log_prefix (char *buf, size_t size);

/* As ddp_log(), with a va_list (to wrap it in a program's own logger). */
void ddp_vlog (const char *fmt, va_list ap)
    __attribute__ ((format (printf, 1, 0)));

/* Gather n named values from every rank into every rank's out (room for
 * world_size * n doubles; out[r * n + i] is rank r's values[i].value), in
 * one collective that also checks that every rank passed the same names in
 * the same order (aitoolbox's mp_sync_dict).  Returns 0; DDP_EMISMATCH on
 * every rank if names differ; DDP_EINVAL on a rank with NULL values (n > 0),
 * a NULL name or NULL out (DDP_EREMOTE on the others); DDP_ENOMEM; or
 * another DDP_E* code. */
int ddp_allgather_named (const ddp_named_value_t *values, size_t n,
                         double *out);

#ifdef __cplusplus
}
#endif
#endif /* DDP_H */
