/* core.c - libddp's public entry points: init/finalize, identity, argument
 * checks, and dispatch of the collectives on a communicator (comm.h) to
 * its backend context (backend.h), the NCCL section of ddp.h included
 * (DDP_ENOTSUP where the backend has no GPU operations or libddp was built
 * without NCCL).  The world is the communicator ddp_init makes; split.c
 * makes groups, request.c runs nonblocking calls. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "bootstrap.h"
#include "check.h"
#include "choice.h"
#include "comm.h"
#include "ddp_internal.h"
#include "wait.h"
#ifdef HAVE_NCCL
#include "nccl_backend.h"
#endif

#define DEFAULT_TIMEOUT 30.0
/* Seconds of start-up skew the default init timeout allows per rank:
 * launching thousands of ranks, and their programs' own start (imports
 * from a shared file system), spread their arrival at ddp_init over
 * minutes, while a collective's peers are all there already. */
#define INIT_SECONDS_PER_RANK 0.05
/* The longest ddp_abort waits for slurmstepd to read its last words from
 * the stderr pipe before the step is ended (ddpi_wait_pipe_read). */
#define ABORT_DRAIN_S 1.0

/* The library's state: the world communicator, and what is the job's
 * rather than a communicator's. */
static struct {
    _Atomic bool init;
    bool finalized; /* ddp_finalize was called, ddp_init not since */
    struct bootstrap *boot;
    struct ddp_config cfg;
    int rank, size, lrank, lsize, node, nnodes;
    bool check;     /* DDP_CHECK=1 on every rank (check.h) */
    struct ddp_comm world;  /* its calls: ddp_init's barrier the first */
    pthread_mutex_t lock;   /* guards groups */
    struct ddp_comm *groups; /* made by ddp_comm_split, not freed yet */
} g = { .size = 1, .lsize = 1, .nnodes = 1,
        .lock = PTHREAD_MUTEX_INITIALIZER };

struct ddp_comm *core_world (void) { return &g.world; }
const struct ddp_config *core_config (void) { return &g.cfg; }
struct bootstrap *core_boot (void) { return g.boot; }

struct ddp_comm *core_comm (ddp_comm_t *comm)
{
    if (!g.init)
        return NULL;
    return comm ? comm : &g.world;
}

ddp_comm_t *ddp_comm_world (void)
{
    return g.init ? &g.world : NULL;
}

void core_add_group (struct ddp_comm *c)
{
    pthread_mutex_lock (&g.lock);
    c->next = g.groups;
    g.groups = c;
    pthread_mutex_unlock (&g.lock);
}

void core_remove_group (struct ddp_comm *c)
{
    pthread_mutex_lock (&g.lock);
    for (struct ddp_comm **p = &g.groups; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    pthread_mutex_unlock (&g.lock);
}

/* Is c the world or a group not yet freed?  (A freed group's memory may
 * be anything: its magic is cleared first, which catches the common
 * mistake, not every one.) */
static bool known_comm (const struct ddp_comm *c)
{
    return c == &g.world || c->magic == CORE_COMM_MAGIC;
}

/* A timeout variable: unset or empty leaves *out alone.  Returns 0 or
 * DDP_EINVAL saying what is allowed (env.c). */
static int read_timeout (const char *name, double *out)
{
    int rc = ddpi_env_timeout (name, out);

    return rc < 0 ? rc : 0;
}

double ddpi_coll_timeout (void)
{
    return g.init ? g.cfg.coll_timeout_s : DEFAULT_TIMEOUT;
}

/* Every DDP_* variable is checked first (env.c), so that a malformed one
 * fails ddp_init at once, named, whichever part would read it later. */
static int read_config (struct ddp_config *cfg)
{
    int rc;

    if ((rc = ddpi_env_check ()) < 0)
        return rc;
    cfg->debug = ddpi_debug_enabled ();
    cfg->coll_timeout_s = DEFAULT_TIMEOUT;
    cfg->init_timeout_s = 0;
    if ((rc = read_timeout ("DDP_TIMEOUT", &cfg->coll_timeout_s)) < 0
        || (rc = read_timeout ("DDP_INIT_TIMEOUT", &cfg->init_timeout_s)) < 0)
        return rc;
    /* Until the world size is known (bootstrap_create's own waits). */
    cfg->timeout_s = cfg->init_timeout_s > 0 ? cfg->init_timeout_s
                                             : cfg->coll_timeout_s;
    cfg->timeout_name = "DDP_INIT_TIMEOUT";
    return 0;
}

/* The init timeout of a world of size ranks: DDP_INIT_TIMEOUT, else
 * DDP_TIMEOUT or INIT_SECONDS_PER_RANK per rank, the longer. */
static void set_init_timeout (struct ddp_config *cfg, int size)
{
    double scaled = INIT_SECONDS_PER_RANK * size;

    if (cfg->init_timeout_s <= 0)
        cfg->init_timeout_s = scaled > cfg->coll_timeout_s
                              ? (scaled < DDPI_TIMEOUT_MAX ? scaled
                                                           : DDPI_TIMEOUT_MAX)
                              : cfg->coll_timeout_s;
    cfg->timeout_s = cfg->init_timeout_s;
    cfg->timeout_name = "DDP_INIT_TIMEOUT";
}

/* Init is over: from now on the collectives' bound. */
static void set_coll_timeout (struct ddp_config *cfg, struct bootstrap *b)
{
    cfg->timeout_s = cfg->coll_timeout_s;
    cfg->timeout_name = "DDP_TIMEOUT";
    bootstrap_set_timeout (b, cfg->timeout_s, cfg->timeout_name);
}

/* This rank's vote for the backend (choice.h): DDP_BACKEND, and for auto
 * whether CUDA reports a device here (a missing or too old driver, or no
 * device, counts as none). */
static void local_vote (struct choice_vote *v)
{
    char host[64] = "unknown";

    if (gethostname (host, sizeof (host) - 1) < 0)
        snprintf (host, sizeof (host), "unknown");
#ifdef HAVE_NCCL
    choice_local (v, getenv ("DDP_BACKEND"), host, nccl_backend_probe);
#else
    choice_local (v, getenv ("DDP_BACKEND"), host, NULL);
#endif
    choice_local_check (v, getenv ("DDP_CHECK"));
}

/* One exchange of votes: every rank ends on the same backend, or fails
 * with the same reason (choice.h).  Returns 0 and sets *bep, or a DDP_E*
 * code. */
static int agree_backend (const struct choice_vote *mine,
                          const struct ddp_backend **bep)
{
    char buf[CHOICE_WIRE_MAX], err[256];
    size_t len = choice_encode (mine, buf);
    size_t *off = calloc ((size_t)g.size, sizeof (*off));
    size_t *lens = calloc ((size_t)g.size, sizeof (*lens));
    struct choice ch = {.code = 0};
    void *raw = NULL;
    int rc;

    if (!off || !lens)
        rc = ddpi_error (DDP_ENOMEM, "init: out of memory");
    else if ((rc = bootstrap_exchange (g.boot, buf, len, &raw, off, lens, err,
                                       sizeof (err))) < 0)
        ddpi_error (rc, "init: choosing the backend: %s", err);
    else if ((rc = choice_decide (raw, off, lens, g.size, g.rank, &ch)) < 0)
        ddpi_error (rc, "%s", ch.msg);
    free (raw);
    free (off);
    free (lens);
    if (rc < 0)
        return rc;
    g.check = ch.check;
    if (ch.warn && g.rank == 0)
        ddpi_log ("warning: %s", ch.msg);
    else if (ch.msg[0])
        ddpi_debug ("%s", ch.msg);
#ifdef HAVE_NCCL
    *bep = ch.nccl ? &ddpi_backend_nccl : &ddpi_backend_host;
#else
    *bep = &ddpi_backend_host;
#endif
    return 0;
}

static void reset_identity (void)
{
    g.rank = g.lrank = g.node = 0;
    g.size = g.lsize = g.nnodes = 1;
    ddpi_log_set_identity (-1, 0);
}

/* Init failures are always logged: the program may not print the code. */
static int init_failed (int rc)
{
    if (!ddpi_last_error_logged ())
        ddpi_log ("error: %s", ddpi_last_error ());
    return rc;
}

int ddp_init (void)
{
    const struct bootstrap_info *in;
    struct choice_vote vote;
    char err[512];
    double t0 = ddpi_now (), t1, tc, t2, t3;
    int rc;

    if (g.init)
        return 0;
    g.world = (struct ddp_comm){ .rank = 0, .size = 1 };
    g.finalized = false;
    if ((rc = read_config (&g.cfg)) < 0)
        return init_failed (rc);
    local_vote (&vote);
    if ((rc = bootstrap_create (&g.boot, g.cfg.timeout_s, err,
                                sizeof (err))) < 0) {
        if (vote.status) /* the first mistake, as without a launcher */
            return init_failed (ddpi_error (vote.status, "%s", vote.reason));
        return init_failed (ddpi_error (rc, "init: %s", err));
    }
    in = bootstrap_info (g.boot);
    set_init_timeout (&g.cfg, in->size);
    bootstrap_set_timeout (g.boot, g.cfg.timeout_s, g.cfg.timeout_name);
    g.rank = in->rank;
    g.size = in->size;
    g.lrank = in->local_rank;
    g.lsize = in->local_size;
    ddpi_log_set_identity (g.rank, g.size);
    t1 = ddpi_now ();
    if ((rc = agree_backend (&vote, &g.world.be)) < 0)
        goto error;
    /* Known after the first exchange (bootstrap.h). */
    g.node = in->node_rank;
    g.nnodes = in->num_nodes;
    tc = ddpi_now ();
    if ((rc = g.world.be->create (g.boot, &g.cfg, &g.world.ctx)) < 0)
        goto error;
    t2 = ddpi_now ();
    if ((rc = g.world.be->barrier (g.world.ctx)) < 0) {
        g.world.be->destroy (g.world.ctx);
        goto error;
    }
    t3 = ddpi_now ();
    g.world.rank = g.rank;
    g.world.size = g.size;
    g.world.calls = 1; /* that barrier: numbered as the backends number
                          calls */
    g.init = true;
    set_coll_timeout (&g.cfg, g.boot);
    ddpi_debug ("init: libddp %s, bootstrap %s (job %s), rank %d/%d, local "
                "%d/%d, node %d/%d, backend %s, timeout %g s (init %g s)",
                PACKAGE_VERSION, in->method, in->job_id, g.rank, g.size,
                g.lrank, g.lsize, g.node, g.nnodes, g.world.be->name,
                g.cfg.timeout_s, g.cfg.init_timeout_s);
    ddpi_debug ("init: bootstrap %.3f ms, backend choice %.3f ms, backend "
                "setup %.3f ms, first barrier %.3f ms, total %.3f ms",
                (t1 - t0) * 1e3, (tc - t1) * 1e3, (t2 - tc) * 1e3,
                (t3 - t2) * 1e3, (t3 - t0) * 1e3);
    return 0;
error:
    g.world = (struct ddp_comm){ .rank = 0, .size = 1 };
    bootstrap_destroy (g.boot);
    g.boot = NULL;
    /* Logged while the prefix still names this rank ("[ddp rank 3/4]"). */
    init_failed (rc);
    reset_identity ();
    return rc;
}

/* The blocking calls' path, inlined (HOT_INLINE: check_comm, check_args,
 * run_checked, run_backend, run_each): as calls, their entries and exits
 * were a third of a rank alone's 8-byte all-reduce (issue 49's rows of one
 * rank: 415 instructions a call before, 278 after, callgrind). */
#define HOT_INLINE static inline __attribute__ ((always_inline))

/* Run k on c's backend, its arguments valid (backend.h). */
HOT_INLINE int run_each (struct ddp_comm *c, const struct ddp_coll *k);

HOT_INLINE int run_backend (struct ddp_comm *c, const struct ddp_coll *k)
{
    return c->be->coll ? c->be->coll (c->ctx, k) : run_each (c, k);
}

/* DDP_CHECK (check.h): does every rank of c enter the call this one is
 * about to run (kind; k: its arguments, NULL for a barrier, ddp_finalize,
 * a split or a free)?  Counts the call.  0; DDP_EMISMATCH naming each
 * rank's call, logged the same on every rank; or the code of the check's
 * own collectives, which the backend names as an all-reduce or
 * all-gather. */
static int check_call (struct ddp_comm *c, const char *fn, int kind,
                       const struct ddp_coll *k)
{
    /* A communicator of one agrees with itself: its call is counted, and
     * no collective runs for the check (it was half of a rank alone's
     * 8-byte all-reduce: issue 49's copy rows). */
    if (c->size == 1) {
        c->calls++;
        return 0;
    }
    struct check_sig me = check_sig_make (kind, k ? k->count : 0,
                                          k ? k->dtype : DDP_INT8,
                                          k ? k->op : DDP_SUM,
                                          k ? k->root : 0, ++c->calls);
    uint64_t v[2 * CHECK_CMP], m[2 * CHECK_CMP] = { 0 };
    struct ddp_coll x = {.kind = DDP_COLL_ALLREDUCE, .sendbuf = v,
                         .recvbuf = m, .count = 2 * CHECK_CMP,
                         .dtype = DDP_UINT64, .op = DDP_MAX};
    struct check_sig *all;
    char list[360]; /* with the words around it, within a message's 512 */
    int rc, i;

    /* The maximum of each word and of its complement: the maximum and the
     * minimum, equal where every rank has the same word. */
    for (i = 0; i < CHECK_CMP; i++) {
        v[i] = me.w[i];
        v[CHECK_CMP + i] = ~me.w[i];
    }
    if ((rc = run_backend (c, &x)) < 0)
        return rc;
    for (i = 0; i < CHECK_CMP && m[i] == ~m[CHECK_CMP + i]; i++)
        ;
    if (i == CHECK_CMP)
        return 0;
    if (!(all = malloc ((size_t)c->size * sizeof (*all))))
        return ddpi_error (DDP_ENOMEM, "%s: the ranks' calls differ "
                           "(DDP_CHECK); no memory to tell how", fn);
    x = (struct ddp_coll){.kind = DDP_COLL_ALLGATHER, .sendbuf = me.w,
                          .recvbuf = all, .count = CHECK_CMP + 1,
                          .dtype = DDP_UINT64};
    if ((rc = run_backend (c, &x)) == 0) {
        check_report (list, sizeof (list), all, c->size);
        rc = ddpi_error (DDP_EMISMATCH, "%s: the ranks' calls differ "
                         "(DDP_CHECK): %s; every rank must make the same "
                         "calls (count, dtype, op, root)", fn, list);
    }
    free (all);
    return rc;
}

/* comm.h. */
int core_vote (struct ddp_comm *c, const char *fn, int kind)
{
    return g.check ? core_done (c, check_call (c, fn, kind, NULL)) : 0;
}

/* Free every group still there, without the barrier: the program did not
 * free them, so their peers may be anywhere. */
static void release_groups (void)
{
    struct ddp_comm *c;

    while ((c = g.groups))
        split_release (c, false);
}

int ddp_finalize (void)
{
    struct ddp_comm *w = &g.world;
    int rc = 0, broken;

    if (!g.init)
        return DDP_ENOINIT;
    release_groups ();
    request_stop (w);
    broken = w->broken;
    if (!broken && g.check)
        broken = check_call (w, "ddp_finalize", CHECK_FINALIZE, NULL);
    if (!broken)
        rc = w->be->finalize ? w->be->finalize (w->ctx)
                             : w->be->barrier (w->ctx);
    /* Only a disagreement is the caller's business here: results it
     * already took were wrong (ddp.h).  A peer gone at the end is not. */
    rc = rc == DDP_EMISMATCH ? rc : 0;
    w->be->destroy (w->ctx);
    bootstrap_destroy (g.boot);
    g.boot = NULL;
    g.init = false;
    g.world = (struct ddp_comm){ .rank = 0, .size = 1 };
    g.finalized = true;
    reset_identity ();
    return rc;
}

int ddp_rank (void) { return g.rank; }
int ddp_world_size (void) { return g.size; }
int ddp_local_rank (void) { return g.lrank; }
int ddp_local_world_size (void) { return g.lsize; }
int ddp_node_rank (void) { return g.node; }
int ddp_num_nodes (void) { return g.nnodes; }
bool ddp_is_main (void) { return g.rank == 0; }
bool ddp_is_local_main (void) { return g.lrank == 0; }
bool ddp_is_distributed (void) { return g.init && g.size > 1; }

const char *ddp_backend_name (void)
{
    return g.init ? g.world.be->name : "none";
}

/* Every communicator's peers hear that this rank aborts. */
static void abort_all (void)
{
    struct ddp_comm *w = &g.world;

    if (w->be->abort) {
        pthread_mutex_lock (&g.lock);
        for (struct ddp_comm *c = g.groups; c; c = c->next)
            if (c->ctx)
                w->be->abort (c->ctx);
        pthread_mutex_unlock (&g.lock);
        w->be->abort (w->ctx);
    }
    w->broken = DDP_EPEER;
}

int ddp_abort (int errcode, const char *msg)
{
    int rc;

    ddpi_error (DDP_EPEER, "ddp_abort (%d)%s%s", errcode, msg ? ": " : "",
                msg ? msg : "");
    fflush (NULL);
    (void) ddpi_wait_pipe_read (STDERR_FILENO, ABORT_DRAIN_S);
    if (g.init) {
        abort_all ();
        rc = bootstrap_abort (g.boot, errcode, msg);
        if (rc == 0 || rc == DDP_ENOTSUP) {
            fflush (NULL);
            _exit (errcode);
        }
        return rc;
    }
    fflush (NULL);
    _exit (errcode);
}

int ddp_exit_reason (const char *why)
{
    if (!g.init)
        return DDP_ENOINIT;
    if (!why)
        return DDP_EINVAL;
    if (!g.world.broken)      /* a victim's reason repeats its error */
        ddpi_log ("this rank ends: it %s", why);
    return bootstrap_reason (g.boot, why);
}

/* core_check's and core_check_args' bodies, inlined into the blocking
 * calls (run). */
HOT_INLINE int check_comm (struct ddp_comm *c, const char *fn)
{
    int broken;

    if (!g.init)
        return ddpi_error (DDP_ENOINIT, "%s: called %s", fn,
                           g.finalized ? "after ddp_finalize"
                                       : "before ddp_init");
    if (!c || !known_comm (c))
        return ddpi_error (DDP_EINVAL, "%s: not a communicator of this job "
                           "(freed already, or never made by "
                           "ddp_comm_split)", fn);
    if ((broken = c->broken))
        return ddpi_error_quiet (broken, "%s: an earlier failure (%s) "
                                 "broke the collectives of this %s", fn,
                                 ddp_strerror (broken),
                                 c->id ? "group" : "job");
    return 0;
}

/* comm.h. */
int core_check (struct ddp_comm *c, const char *fn)
{
    return check_comm (c, fn);
}

/* A buffer of count elements of es bytes (the dtype's, checked), times
 * mult. */
static int check_buf (const char *fn, const char *what, const void *p,
                      size_t count, size_t es, size_t mult)
{
    size_t bytes;

    /* Multiplications, not SIZE_MAX / es / mult: two divisions cost more
     * than the rest of a pipelined call's checks together. */
    if (__builtin_mul_overflow (count, es, &bytes)
        || __builtin_mul_overflow (bytes, mult, &bytes))
        return ddpi_error (DDP_EINVAL, "%s: count %zu is too large", fn, count);
    if (count > 0 && !p)
        return ddpi_error (DDP_EINVAL, "%s: %s is NULL with count %zu", fn,
                           what, count);
    return 0;
}

static int check_op (const char *fn, ddp_op_t op)
{
    if ((unsigned)op >= DDP_NUM_OPS)
        return ddpi_error (DDP_EINVAL, "%s: unknown op %d", fn, (int)op);
    return 0;
}

static int check_root (struct ddp_comm *c, const char *fn, int root)
{
    if (root < 0 || root >= c->size)
        return ddpi_error (DDP_EINVAL, "%s: root %d is not a rank of 0..%d%s",
                           fn, root, c->size - 1,
                           c->id ? " (the group's ranks)" : "");
    return 0;
}

/* A group's message names the group's ranks (the backend knows no
 * others): say which world ranks they are, ahead of it, in what
 * ddp_last_error() returns, and in a line of its own after the logged
 * one. */
static void name_group_ranks (struct ddp_comm *c, int rc)
{
    char list[200], why[512];

    ddpi_format_ranks (list, sizeof (list), c->world_ranks, c->size);
    snprintf (why, sizeof (why), "%s", ddp_last_error ());
    if (ddpi_last_error_logged ())
        ddpi_log ("(in that message, ranks are group %u's: its ranks 0..%d "
                  "are world ranks %s)", c->id, c->size - 1, list);
    ddpi_error_quiet (rc, "in group %u (its ranks 0..%d are world ranks %s): "
                      "%s", c->id, c->size - 1, list, why);
}

/* comm.h.  A mismatch is sticky too: the host backend's node-mates are
 * out of step after one.  The first fault tells the launcher that this
 * rank is a victim, in the backend's words (which name the rank at
 * fault): ddp-run then names the rank that failed first, not the first
 * to exit. */
int core_done (struct ddp_comm *c, int rc)
{
    int healthy = 0;

    if (rc == DDP_EPEER || rc == DDP_ETIMEDOUT || rc == DDP_ETRANSPORT
        || rc == DDP_EMISMATCH) {
        if (atomic_compare_exchange_strong (&c->broken, &healthy, rc)) {
            if (c->id)
                name_group_ranks (c, rc);
            if (g.boot)
                (void)bootstrap_victim (g.boot, ddp_last_error ());
        }
    }
    return rc;
}

/* The NCCL section of ddp.h needs a backend with GPU operations. */
static int check_gpu (const char *fn)
{
#ifdef HAVE_NCCL
    int rc = core_check (&g.world, fn);

    if (rc == 0 && !g.world.be->gpu)
        rc = ddpi_error (DDP_ENOTSUP, "%s: the %s backend is in use, not nccl",
                         fn, g.world.be->name);
    return rc;
#else
    (void)fn;
    return ddpi_error (DDP_ENOTSUP, "libddp was built without NCCL"
                       " (configure found no CUDA/NCCL, or --without-nccl)");
#endif
}

/* Only the root of these uses a receive buffer. */
static bool root_receives (enum ddp_coll_kind kind)
{
    return kind == DDP_COLL_REDUCE || kind == DDP_COLL_GATHER;
}

/* core_check_args (comm.h): order: send buffer, the receive buffer of a
 * collective without a root, op, root, the root's receive buffer.  Leaves
 * a non-root's receive buffer of reduce/gather NULL. */
HOT_INLINE int check_args (struct ddp_comm *c, const char *fn,
                           struct ddp_coll *k)
{
    bool rooted = ddp_coll_has_root (k->kind);
    bool reduces = ddp_coll_has_op (k->kind);
    bool gathers = k->kind == DDP_COLL_GATHER || k->kind == DDP_COLL_ALLGATHER;
    bool scatters = k->kind == DDP_COLL_REDUCE_SCATTER;
    size_t mult = gathers ? (size_t)c->size : 1;
    size_t es = ddpi_dtype_bytes (k->dtype);
    int rc;

    if (es == 0)
        return ddpi_error (DDP_EINVAL, "%s: unknown dtype %d", fn,
                           (int)k->dtype);
    if ((rc = check_buf (fn, k->kind == DDP_COLL_BCAST ? "buf" : "sendbuf",
                         k->sendbuf, k->count, es,
                         scatters ? (size_t)c->size : 1)) < 0
        || (!rooted && (rc = check_buf (fn, "recvbuf", k->recvbuf, k->count,
                                        es, mult)) < 0)
        || (reduces && (rc = check_op (fn, k->op)) < 0)
        || (rooted && (rc = check_root (c, fn, k->root)) < 0)
        || (root_receives (k->kind) && c->rank == k->root
            && (rc = check_buf (fn, "recvbuf", k->recvbuf, k->count, es,
                                mult)) < 0))
        return rc;
    if (root_receives (k->kind) && c->rank != k->root)
        k->recvbuf = NULL;
    return 0;
}

/* comm.h. */
int core_check_args (struct ddp_comm *c, const char *fn, struct ddp_coll *k)
{
    return check_args (c, fn, k);
}

/* Hand a checked collective to a backend without coll. */
HOT_INLINE int run_each (struct ddp_comm *c, const struct ddp_coll *k)
{
    const struct ddp_backend *be = c->be;

    switch (k->kind) {
    case DDP_COLL_BCAST:
        return be->bcast (c->ctx, k->recvbuf, k->count, k->dtype, k->root);
    case DDP_COLL_REDUCE:
        return be->reduce (c->ctx, k->sendbuf, k->recvbuf, k->count, k->dtype,
                           k->op, k->root);
    case DDP_COLL_ALLREDUCE:
        return be->allreduce (c->ctx, k->sendbuf, k->recvbuf, k->count,
                              k->dtype, k->op);
    case DDP_COLL_GATHER:
        return be->gather (c->ctx, k->sendbuf, k->recvbuf, k->count, k->dtype,
                           k->root);
    case DDP_COLL_ALLGATHER:
        return be->allgather (c->ctx, k->sendbuf, k->recvbuf, k->count,
                              k->dtype);
    case DDP_COLL_REDUCE_SCATTER:
        if (!be->reduce_scatter)
            return ddpi_error (DDP_ENOTSUP, "ddp_reduce_scatter: the %s "
                               "backend has none", be->name);
        return be->reduce_scatter (c->ctx, k->sendbuf, k->recvbuf, k->count,
                                   k->dtype, k->op);
    }
    return ddpi_error (DDP_EINVAL, "unknown collective %d", (int)k->kind);
}

/* core_run (comm.h), inlined into the blocking calls (run). */
HOT_INLINE int run_checked (struct ddp_comm *c, const char *fn, int kind,
                            struct ddp_coll *k)
{
    int rc, broken;

    if ((broken = c->broken))   /* a request queued behind a fault */
        return ddpi_error_quiet (broken, "%s: an earlier failure (%s) broke "
                                 "the collectives of this %s", fn,
                                 ddp_strerror (broken),
                                 c->id ? "group" : "job");
    /* A call of count 0 too: it is one of the calls every rank makes. */
    if (g.check && (rc = check_call (c, fn, kind, k)) < 0)
        return core_done (c, rc);
    if (kind == CORE_BARRIER)
        return core_done (c, c->be->barrier (c->ctx));
    if (k->count == 0)
        return 0;
    /* core_done acts on failures only: a success skips the call (a rank
     * alone's 8-byte all-reduce is some 30 ns in all). */
    return (rc = run_backend (c, k)) < 0 ? core_done (c, rc) : rc;
}

/* comm.h. */
int core_run (struct ddp_comm *c, const char *fn, int kind,
              struct ddp_coll *k)
{
    return run_checked (c, fn, kind, k);
}

/* A blocking collective, plain or _stream: check, wait for the requests
 * before it, run. */
static int run (struct ddp_comm *c, const char *fn, struct ddp_coll *k)
{
    int rc;

    if ((rc = k->on_stream ? check_gpu (fn) : check_comm (c, fn)) < 0
        || (rc = check_args (c, fn, k)) < 0)
        return rc;
    if (c->worker)      /* requests were started on it (request_drain) */
        request_drain (c);
    return run_checked (c, fn, (int)k->kind, k);
}

/* The public collectives describe their call; stream is NULL for the core
 * API, else points at the caller's cudaStream_t. */
static int coll (ddp_comm_t *comm, const char *fn, enum ddp_coll_kind kind,
                 const void *sendbuf, void *recvbuf, size_t count,
                 ddp_dtype_t dtype, ddp_op_t op, int root, void *const *stream)
{
    struct ddp_coll k = {.kind = kind, .sendbuf = sendbuf, .recvbuf = recvbuf,
                         .count = count, .dtype = dtype, .op = op,
                         .root = root, .on_stream = stream != NULL,
                         .stream = stream ? *stream : NULL};
    struct ddp_comm *c = core_comm (comm);

    return run (c ? c : &g.world, fn, &k);
}

int ddp_comm_barrier (ddp_comm_t *comm)
{
    struct ddp_comm *c = core_comm (comm);
    int rc;

    if ((rc = core_check (c ? c : &g.world, "ddp_barrier")) < 0)
        return rc;
    request_drain (c);
    return core_run (c, "ddp_barrier", CORE_BARRIER, NULL);
}

int ddp_barrier (void)
{
    return ddp_comm_barrier (NULL);
}

int ddp_bcast (void *buf, size_t count, ddp_dtype_t dtype, int root)
{
    return coll (NULL, "ddp_bcast", DDP_COLL_BCAST, buf, buf, count, dtype,
                 DDP_SUM, root, NULL);
}

int ddp_reduce (const void *sendbuf, void *recvbuf, size_t count,
                ddp_dtype_t dtype, ddp_op_t op, int root)
{
    return coll (NULL, "ddp_reduce", DDP_COLL_REDUCE, sendbuf, recvbuf, count,
                 dtype, op, root, NULL);
}

int ddp_allreduce (const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype, ddp_op_t op)
{
    return coll (NULL, "ddp_allreduce", DDP_COLL_ALLREDUCE, sendbuf, recvbuf,
                 count, dtype, op, 0, NULL);
}

int ddp_gather (const void *sendbuf, void *recvbuf, size_t count,
                ddp_dtype_t dtype, int root)
{
    return coll (NULL, "ddp_gather", DDP_COLL_GATHER, sendbuf, recvbuf, count,
                 dtype, DDP_SUM, root, NULL);
}

int ddp_allgather (const void *sendbuf, void *recvbuf, size_t count,
                   ddp_dtype_t dtype)
{
    return coll (NULL, "ddp_allgather", DDP_COLL_ALLGATHER, sendbuf, recvbuf,
                 count, dtype, DDP_SUM, 0, NULL);
}

int ddp_reduce_scatter (const void *sendbuf, void *recvbuf, size_t recvcount,
                        ddp_dtype_t dtype, ddp_op_t op)
{
    return coll (NULL, "ddp_reduce_scatter", DDP_COLL_REDUCE_SCATTER, sendbuf,
                 recvbuf, recvcount, dtype, op, 0, NULL);
}

int ddp_comm_bcast (ddp_comm_t *comm, void *buf, size_t count,
                    ddp_dtype_t dtype, int root)
{
    return coll (comm, "ddp_comm_bcast", DDP_COLL_BCAST, buf, buf, count,
                 dtype, DDP_SUM, root, NULL);
}

int ddp_comm_reduce (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                     size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    return coll (comm, "ddp_comm_reduce", DDP_COLL_REDUCE, sendbuf, recvbuf,
                 count, dtype, op, root, NULL);
}

int ddp_comm_allreduce (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    return coll (comm, "ddp_comm_allreduce", DDP_COLL_ALLREDUCE, sendbuf,
                 recvbuf, count, dtype, op, 0, NULL);
}

int ddp_comm_gather (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                     size_t count, ddp_dtype_t dtype, int root)
{
    return coll (comm, "ddp_comm_gather", DDP_COLL_GATHER, sendbuf, recvbuf,
                 count, dtype, DDP_SUM, root, NULL);
}

int ddp_comm_allgather (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype)
{
    return coll (comm, "ddp_comm_allgather", DDP_COLL_ALLGATHER, sendbuf,
                 recvbuf, count, dtype, DDP_SUM, 0, NULL);
}

int ddp_comm_reduce_scatter (ddp_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t recvcount,
                             ddp_dtype_t dtype, ddp_op_t op)
{
    return coll (comm, "ddp_comm_reduce_scatter", DDP_COLL_REDUCE_SCATTER,
                 sendbuf, recvbuf, recvcount, dtype, op, 0, NULL);
}

int ddp_comm_rank (const ddp_comm_t *comm)
{
    return comm ? comm->rank : g.rank;
}

int ddp_comm_size (const ddp_comm_t *comm)
{
    return comm ? comm->size : g.size;
}

int ddp_comm_world_rank (const ddp_comm_t *comm, int r)
{
    int size = ddp_comm_size (comm);

    if (r < 0 || r >= size)
        return ddpi_error (DDP_EINVAL, "ddp_comm_world_rank: %d is not a "
                           "rank of 0..%d", r, size - 1);
    return comm && comm->world_ranks ? comm->world_ranks[r] : r;
}

/* ---- the NCCL section of ddp.h ----------------------------------------- */

/* The running backend's GPU operations, or NULL. */
static const struct ddp_gpu_ops *gpu_ops (void)
{
    return g.init ? g.world.be->gpu : NULL;
}

void *ddp_nccl_comm (void)
{
    const struct ddp_gpu_ops *o = gpu_ops ();

    return o ? o->comm (g.world.ctx) : NULL;
}

void *ddp_cuda_stream (void)
{
    const struct ddp_gpu_ops *o = gpu_ops ();

    return o ? o->stream (g.world.ctx) : NULL;
}

int ddp_cuda_device (void)
{
    const struct ddp_gpu_ops *o = gpu_ops ();

    return o ? o->device (g.world.ctx) : -1;
}

int ddp_bcast_stream (void *buf, size_t count, ddp_dtype_t dtype, int root,
                      void *stream)
{
    return coll (NULL, "ddp_bcast_stream", DDP_COLL_BCAST, buf, buf, count, dtype,
                 DDP_SUM, root, &stream);
}

int ddp_reduce_stream (const void *sendbuf, void *recvbuf, size_t count,
                       ddp_dtype_t dtype, ddp_op_t op, int root, void *stream)
{
    return coll (NULL, "ddp_reduce_stream", DDP_COLL_REDUCE, sendbuf, recvbuf, count,
                 dtype, op, root, &stream);
}

int ddp_allreduce_stream (const void *sendbuf, void *recvbuf, size_t count,
                          ddp_dtype_t dtype, ddp_op_t op, void *stream)
{
    return coll (NULL, "ddp_allreduce_stream", DDP_COLL_ALLREDUCE, sendbuf, recvbuf,
                 count, dtype, op, 0, &stream);
}

int ddp_gather_stream (const void *sendbuf, void *recvbuf, size_t count,
                       ddp_dtype_t dtype, int root, void *stream)
{
    return coll (NULL, "ddp_gather_stream", DDP_COLL_GATHER, sendbuf, recvbuf, count,
                 dtype, DDP_SUM, root, &stream);
}

int ddp_allgather_stream (const void *sendbuf, void *recvbuf, size_t count,
                          ddp_dtype_t dtype, void *stream)
{
    return coll (NULL, "ddp_allgather_stream", DDP_COLL_ALLGATHER, sendbuf, recvbuf,
                 count, dtype, DDP_SUM, 0, &stream);
}

int ddp_stream_synchronize (void *stream)
{
    int rc = check_gpu ("ddp_stream_synchronize");

    if (rc < 0)
        return rc;
    request_drain (&g.world);
    return core_done (&g.world,
                      g.world.be->gpu->synchronize (g.world.ctx, stream));
}

const char *ddp_nccl_info (char *buf, size_t len)
{
    if (!buf || len == 0)
        return NULL;
#ifdef HAVE_NCCL
    return nccl_backend_describe (buf, len);
#else
    snprintf (buf, len, "not built (host backend only)");
    return buf;
#endif
}

int ddp_gpu_mem_info (size_t *used, size_t *total)
{
#ifdef HAVE_NCCL
    return nccl_backend_mem_info (used, total);
#else
    (void)used, (void)total;
    return check_gpu ("ddp_gpu_mem_info");
#endif
}
