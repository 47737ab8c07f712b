/* host.c - the host backend's entry (ddpi_backend_host): set-up (the
 * layout, the bootstrap round, the segment, the links), the traffic
 * counters, destroy and abort.  The collectives are coll.c's.  host.h has
 * the design, the reduction order and the memory formula;
 * doc/host-backend.md the layers. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "net.h"
#include "host.h"
#include "schedule.h"
#include "wait.h"

#define BLOB_MAGIC 0x6464702d686f7374ULL    /* "ddp-host" */
#define LANES_MAX DDPI_LANES_MAX /* ranks that listen, in case they are
                                    lanes (DDP_LANES' maximum) */

struct host_blob {
    uint64_t magic;
    int32_t pid, node, lrank, lsize, memfd, pad;
    uint64_t host;      /* hash of the machine's boot id */
    uint64_t net;       /* hash of it and the network namespace */
    struct host_tune tune;
    struct host_addr addr;
};

static void host_destroy (void *ctx);

/* ------------------------------------------------------------- set-up */

/* How long a waiter spins before it yields: long (2 ms, like MPI's busy
 * polling, so a rank keeps its core across a peer's memcpy) when every rank
 * on this machine can have a CPU; not at all when they are oversubscribed,
 * where spinning only delays the peer we wait for (ncpu: the CPUs online,
 * <= 0 unknown). */
static unsigned spin_default (int on_machine, long ncpu)
{
    return ncpu > 0 && on_machine > ncpu ? 0 : 2000;
}

/* One tuning variable name (its range is env.c's): unset or empty keeps
 * *v; a bad value is an error. */
static int tune_var (const char *name, uint32_t *v)
{
    long x;
    int rc = ddpi_env_long (name, &x);

    if (rc == 1)
        *v = (uint32_t)x;
    return rc < 0 ? rc : 0;
}

/* DDP_CMA (single copy between local ranks, shm.c): this rank's own
 * wish, not rank 0's (one rank's 0 is a no for its node), so it is not
 * in the tuning rank 0 hands to all. */
static int read_cma_var (struct host *h)
{
    bool on = true;
    int rc = ddpi_env_flag ("DDP_CMA", &on);

    h->cma_refused = !on;
    return rc < 0 ? rc : 0;
}

/* One wait variable name (microseconds, at most 10 s) into *us: -1 when
 * unset or empty; a bad value is an error. */
static int wait_var (const char *name, long *us)
{
    int rc = ddpi_env_long (name, us);

    if (rc <= 0)
        *us = -1;
    return rc < 0 ? rc : 0;
}

/* DDP_SPIN and DDP_YIELD (set_spin), read before the node's ranks meet,
 * so that a bad value fails every rank the same way. */
static int read_wait_vars (struct host *h)
{
    int rc = wait_var ("DDP_SPIN", &h->spin_env);

    return rc < 0 ? rc : wait_var ("DDP_YIELD", &h->yield_env);
}

/* The defaults were picked by measurement (doc/benchmarks.md). */
static int read_tune (struct host_tune *t)
{
    int rc;

    *t = (struct host_tune){ .lanes = 4, .lane_min = 256 * 1024,
                             .small_max = 32 * 1024, .ring_min = 4 << 20,
                             .segment = 256 * 1024, .tcp_piece = 60 * 1024,
                             .tcp_ahead = 32 * 1024,
                             .tcp_sndbuf = HOST_SNDBUF_AUTO };
    if ((rc = tune_var ("DDP_LANES", &t->lanes)) < 0
        || (rc = tune_var ("DDP_LANE_MIN", &t->lane_min)) < 0
        || (rc = tune_var ("DDP_SMALL_MAX", &t->small_max)) < 0
        || (rc = tune_var ("DDP_RING_MIN", &t->ring_min)) < 0
        || (rc = tune_var ("DDP_SEGMENT", &t->segment)) < 0
        || (rc = tune_var ("DDP_TCP_PIECE", &t->tcp_piece)) < 0
        || (rc = tune_var ("DDP_TCP_READAHEAD", &t->tcp_ahead)) < 0
        || (rc = tune_var ("DDP_TCP_SNDBUF", &t->tcp_sndbuf)) < 0)
        return rc;
    return 0;
}

/* Set-up, one bootstrap round, sparse (bootstrap.h): every rank puts its
 * blob for its node (LOCAL); the ranks that may be lanes, and rank 0 (whose
 * tuning every rank follows), also put it for every rank (GLOBAL).  After
 * the one fence a rank reads its node's blobs, rank 0's, and the lanes of
 * its partner nodes; the layout (which rank is on which node) is the
 * bootstrap's, known without another exchange.  Per rank, with W ranks, N nodes,
 * P ranks on this node, L lanes and q <= 3 ceil(log2 N) + 3 partner nodes
 * (sched_partners_max):
 *   fences  1 (PMIx: collecting, of the GLOBAL blobs only: at most
 *           min(P, 16) per node, so N min(P, 16) + 1 blobs reach each node)
 *   gets    (P - 1) + 1 + L q blobs of sizeof (struct host_blob) bytes
 *           (rank 0's from its node's copy when it is local)
 *   layout  O(W) work (bootstrap_layout: PMIx's came with the backend
 *           vote) for the W-entry tables the collectives use
 * so a rank's set-up grows with P + L log N, not with W, and nothing is
 * read from another node after the fence. */

/* Is every node's set of ranks consecutive, nodes in order? */
static bool is_block_layout (struct host *h)
{
    int next = 0;

    for (int n = 0; n < h->nnodes; n++)
        for (int i = 0; i < h->node_size[n]; i++)
            if (h->node_ranks[n][i] != next++)
                return false;
    return true;
}

/* Node tables from the launcher's layout; every node has local ranks
 * 0..n-1 in rank order. */
static int node_tables (struct host *h, struct bootstrap *b)
{
    char err[256];
    int r, n, rc;

    if ((rc = bootstrap_layout (b, h->rank_node, err, sizeof (err))) < 0)
        return ddpi_error (rc, "host backend setup: %s", err);
    for (r = 0; r < h->size; r++)
        h->node_size[h->rank_node[r]]++;
    /* Each node's list is a slice of one table (alloc_tables), node by
     * node: no allocation per node. */
    for (n = 0, r = 0; n < h->nnodes; n++) {
        h->node_ranks[n] = h->node_rank_all + r;
        r += h->node_size[n];
        h->node_size[n] = 0;
    }
    for (r = 0; r < h->size; r++) {
        n = h->rank_node[r];
        h->rank_lrank[r] = h->node_size[n];
        h->node_ranks[n][h->node_size[n]++] = r;
    }
    if (h->node_size[h->node] != h->lsize
        || memcmp (h->node_ranks[h->node], h->local_ranks,
                   (size_t)h->lsize * sizeof (int)) != 0)
        return ddpi_error (DDP_EMISMATCH, "local peers disagree with the "
                           "launcher's layout");
    h->block_layout = is_block_layout (h);
    return 0;
}

/* How many ranks of each node may become lanes (and so listen and put a
 * GLOBAL blob): 0 on one node. */
static int lane_candidates (const struct host *h)
{
    int min = LANES_MAX;

    if (h->nnodes < 2)
        return 0;
    for (int n = 0; n < h->nnodes; n++)
        min = h->node_size[n] < min ? h->node_size[n] : min;
    return min;
}

/* Read rank's blob of scope into *out and check that it is one, of the
 * node and local rank the layout says.  Returns 0 or a DDP_E* code after
 * ddpi_error(). */
static int read_blob (struct host *h, struct bootstrap *b, int rank,
                      enum bootstrap_scope scope, struct host_blob *out)
{
    char err[256];
    void *raw = NULL;
    size_t len = 0;
    int rc;

    rc = bootstrap_get (b, rank, scope, &raw, &len, err, sizeof (err));
    if (rc == DDP_EMISMATCH)
        return ddpi_error (DDP_EPEER, "host backend setup: rank %d never "
                           "reached ddp_init (no setup data from it: it died "
                           "or was not started)", rank);
    if (rc < 0)
        return ddpi_error (rc, "host backend setup: %s", err);
    h->setup_gets++;
    h->setup_bytes += len;
    if (len == sizeof (*out))
        memcpy (out, raw, sizeof (*out));
    free (raw);
    if (len != sizeof (*out))
        return ddpi_error (DDP_EMISMATCH, "rank %d sent a %zu-byte setup "
                           "blob (another libddp version?)", rank, len);
    if (out->magic != BLOB_MAGIC || out->node != h->rank_node[rank]
        || out->lrank != h->rank_lrank[rank]
        || out->lsize != h->node_size[out->node])
        return ddpi_error (DDP_EMISMATCH, "rank %d sent an invalid setup "
                           "blob (node %d, local rank %d of %d; the launcher "
                           "says %d, %d of %d)", rank, (int)out->node,
                           (int)out->lrank, (int)out->lsize,
                           h->rank_node[rank], h->rank_lrank[rank],
                           h->node_size[h->rank_node[rank]]);
    return 0;
}

/* This node's blobs: the local ranks' pids, local rank 0's memfd and
 * blob (*first). */
static int read_node (struct host *h, struct bootstrap *b,
                      const struct host_blob *mine, struct host_blob *first)
{
    struct host_blob bl;
    int rc;

    for (int lr = 0; lr < h->lsize; lr++) {
        if (lr == h->lrank)
            bl = *mine;
        else if ((rc = read_blob (h, b, h->local_ranks[lr], BOOTSTRAP_LOCAL,
                                  &bl)) < 0)
            return rc;
        h->lpids[lr] = bl.pid;
        if (lr == 0)
            *first = bl;
    }
    return 0;
}

/* Rank 0's tuning (from *first when rank 0 is on this node), and the
 * lanes. */
static int read_tuning (struct host *h, struct bootstrap *b,
                        const struct host_blob *first)
{
    struct host_blob r0 = *first;
    int rc;

    if (h->rank_node[0] != h->node
        && (rc = read_blob (h, b, 0, BOOTSTRAP_GLOBAL, &r0)) < 0)
        return rc;
    h->tune = r0.tune;
    h->lanes = h->nnodes > 1 ? lane_candidates (h) : 1;
    if (h->lanes > (int)h->tune.lanes)
        h->lanes = (int)h->tune.lanes;
    return 0;
}

/* The partner nodes and their lanes' addresses. */
static int setup_partners (struct host *h, struct bootstrap *b)
{
    int max = sched_partners_max (h->nnodes), nodes[max > 0 ? max : 1], rc;
    struct host_blob bl;

    h->npart = sched_partners (h->node, h->nnodes, nodes, max);
    if (!(h->part = calloc ((size_t)h->npart + 1, sizeof (*h->part))))
        return ddpi_error (DDP_ENOMEM, "out of memory");
    for (int i = 0; i < h->npart; i++) {
        struct host_partner *p = &h->part[i];
        p->node = nodes[i];
        if (!(p->addr = calloc ((size_t)h->lanes, sizeof (*p->addr))))
            return ddpi_error (DDP_ENOMEM, "out of memory");
        for (int l = 0; l < h->lanes; l++) {
            if ((rc = read_blob (h, b, h->node_ranks[p->node][l],
                                 BOOTSTRAP_GLOBAL, &bl)) < 0)
                return rc;
            p->addr[l] = bl.addr;
            if (l == 0) {
                p->machine = bl.host;
                p->net = bl.net;
            }
        }
    }
    return 0;
}

/* How long a node wait yields before it sleeps: 20 ms, unless this machine
 * has more than YIELD_MAX_LOAD ranks a CPU.  Measured with 64 ranks on 2
 * CPUs (16 simulated nodes x 4): while 60 waiters yield, the node leaders
 * that carry the exchange between nodes hardly run: barrier medians of
 * 85-100 ms in 3 runs of 4 (1 ms in the other), allreduce of 256 KiB 92-112
 * ms; napping (50 us sleeps) at once, 1.0-1.1 ms and 12 ms in every run.
 * At 4-16 ranks a CPU yielding stays ahead (1 x 4 barrier 2.6 against 135
 * us, 8 x 4 161 against 380 us).  On the AMD machine (2026-11-27) the
 * 50 us naps themselves swamped 2 CPUs at 16 x 4 (barrier medians 27-288
 * ms, Open MPI 35); asleep on the flag's futex until the post, 2.4-4.2 ms.
 * Sleeping at once also at 4 ranks a CPU (DDP_YIELD=0) did not beat
 * yielding (1 x 4 barrier 25 against 15-20 us). */
#define YIELD_MAX_LOAD 24

/* How long to spin and to yield: from the ranks on this machine that this
 * rank knows of (its node's and those of its partner nodes on the same
 * machine: all of them on a real cluster, a lower bound where simulated
 * nodes share a machine), or the whole job's when every partner node is
 * on this machine (simulated nodes: the others are too, as a rule).
 * DDP_SPIN and DDP_YIELD (read_wait_vars) override. */
static void set_spin (struct host *h)
{
    int n = h->lsize, same = 0;
    long ncpu = sysconf (_SC_NPROCESSORS_ONLN);
    long spin, yield_us;

    for (int i = 0; i < h->npart; i++)
        if (h->part[i].machine == h->machine) {
            n += h->node_size[h->part[i].node];
            same++;
        }
    if (h->npart > 0 && same == h->npart)
        n = h->size;
    spin = h->spin_env >= 0 ? h->spin_env : (long)spin_default (n, ncpu);
    yield_us = h->yield_env >= 0 ? h->yield_env
               : ncpu > 0 && n > YIELD_MAX_LOAD * ncpu
                   ? 0 : (long)(DDPI_WAIT_YIELD_S * 1e6);
    h->spin_us = (unsigned)spin;
    h->yield_s = (double)yield_us * 1e-6;
    h->post_fence = spin == 0;
}

static int open_pidfds (struct host *h)
{
    int lr;

    for (lr = 0; lr < h->lsize; lr++) {
        h->pidfds[lr] = -1;
#ifdef SYS_pidfd_open
        if (lr != h->lrank)
            h->pidfds[lr] = (int)syscall (SYS_pidfd_open, h->lpids[lr], 0);
        if (h->pidfds[lr] < 0 && lr != h->lrank && errno == ESRCH)
            return ddpi_error (DDP_EPEER, "rank %d (pid %d) died during init",
                               h->local_ranks[lr], (int)h->lpids[lr]);
#endif
    }
    return 0;
}

static int alloc_tables (struct host *h, const struct bootstrap_info *in)
{
    size_t sz = (size_t)h->size, nn = (size_t)h->nnodes, ls = (size_t)h->lsize;

    h->local_ranks = calloc (ls, sizeof (int));
    h->lpids = calloc (ls, sizeof (pid_t));
    h->pidfds = calloc (ls, sizeof (int));
    h->rank_node = calloc (sz, sizeof (int));
    h->rank_lrank = calloc (sz, sizeof (int));
    h->node_size = calloc (nn, sizeof (int));
    h->node_ranks = calloc (nn, sizeof (int *));
    h->node_rank_all = calloc (sz, sizeof (int));
    h->ring_at = calloc (ls, sizeof (uint64_t));
    h->ring_line = calloc (HOST_RING_LINES, sizeof (uint64_t));
    h->ring_off = calloc (ls, sizeof (size_t));
    if (!h->local_ranks || !h->lpids || !h->pidfds || !h->rank_node
        || !h->rank_lrank || !h->node_size || !h->node_ranks
        || !h->node_rank_all || !h->ring_at || !h->ring_line
        || !h->ring_off)
        return ddpi_error (DDP_ENOMEM, "out of memory");
    memcpy (h->local_ranks, in->local_ranks, ls * sizeof (int));
    for (size_t i = 0; i < ls; i++)
        h->pidfds[i] = -1;
    return 0;
}

/* A new host for in and cfg, or NULL with the error recorded (*rc: a
 * DDP_STRAGGLERS that is not 0 or 1, or no memory). */
static struct host *host_new (const struct bootstrap_info *in,
                              const struct ddp_config *cfg, int *rc)
{
    struct host *h;
    bool strag = false;

    if ((*rc = ddpi_env_flag ("DDP_STRAGGLERS", &strag)) < 0)
        return NULL;
    if (!(h = calloc (1, sizeof (*h)))) {
        *rc = ddpi_error (DDP_ENOMEM, "out of memory");
        return NULL;
    }
    h->rank = in->rank;
    h->size = in->size;
    h->lrank = in->local_rank;
    h->lsize = in->local_size;
    h->node = in->node_rank;
    h->nnodes = in->num_nodes;
    h->cfg = cfg;
    h->strag = ddpi_debug_enabled () || strag;
    h->memfd = h->listen_fd = -1;
    h->mm_rank = -1;
    h->relay = &host_flood_relay;
    h->kind = KIND_OTHER;
    if (getrandom (&h->cookie, sizeof (h->cookie), 0) != sizeof (h->cookie))
        h->cookie = (uint64_t)getpid () * 0x9e3779b97f4a7c15ULL
                  ^ (uint64_t)(ddpi_now () * 1e9);
    return h;
}

/* This rank's blob, made before the exchange: the segment (local rank 0)
 * and a listening socket (ranks that may be lanes) come first. */
static int make_blob (struct host *h, struct host_blob *blob)
{
    int rc;

    memset (blob, 0, sizeof (*blob));
    blob->magic = BLOB_MAGIC;
    blob->pid = (int32_t)getpid ();
    blob->node = h->node;
    blob->lrank = h->lrank;
    blob->lsize = h->lsize;
    blob->memfd = -1;
    blob->host = h->machine = ddpi_machine_id ();
    blob->net = h->net = ddpi_net_id (h->machine);
    if ((rc = read_tune (&blob->tune)) < 0 || (rc = read_cma_var (h)) < 0
        || (rc = read_wait_vars (h)) < 0)
        return rc;
    h->tune = blob->tune;
    if (h->lrank == 0) {
        if ((rc = host_shm_create (h)) < 0)
            return rc;
        blob->memfd = h->memfd;
    }
    if (h->lrank < lane_candidates (h)
        && (rc = host_tcp_listen (h, &blob->addr)) < 0)
        return rc;
    return 0;
}

/* The round: put the blob (globally too when the others may need it),
 * then the fence. */
static int publish (struct host *h, struct bootstrap *b,
                    const struct host_blob *blob)
{
    char err[256];
    int rc;

    if ((rc = bootstrap_put (b, BOOTSTRAP_LOCAL, blob, sizeof (*blob), err,
                             sizeof (err))) < 0
        || ((h->rank == 0 || h->lrank < lane_candidates (h))
            && (rc = bootstrap_put (b, BOOTSTRAP_GLOBAL, blob, sizeof (*blob),
                                    err, sizeof (err))) < 0)
        || (rc = bootstrap_sync (b, err, sizeof (err))) < 0)
        return ddpi_error (rc, "host backend setup exchange: %s", err);
    return 0;
}

/* After the exchange: read what this rank needs, attach, link the lanes,
 * wait for the node. */
static int connect_all (struct host *h, struct bootstrap *b,
                        const struct host_blob *mine)
{
    struct host_blob first;
    int rc;

    if ((rc = read_node (h, b, mine, &first)) < 0
        || (rc = read_tuning (h, b, &first)) < 0
        || (h->nnodes > 1 && (rc = setup_partners (h, b)) < 0)
        || (rc = open_pidfds (h)) < 0)
        return rc;
    set_spin (h);
    if (h->lrank != 0
        && (rc = host_shm_attach (h, h->lpids[0], first.memfd)) < 0)
        return rc;
    host_cma_offer (h);
    if (h->lrank >= h->lanes && h->listen_fd >= 0) {
        close (h->listen_fd);
        h->listen_fd = -1;
    }
    if (h->nnodes > 1 && h->lrank < h->lanes && (rc = host_tcp_connect (h)) < 0)
        return rc;
    if (h->lrank == 0
        && (rc = host_fault_rc (h, host_shm_wait_attached (h))) < 0)
        return rc;
    return 0;
}

static int host_create (struct bootstrap *b, const struct ddp_config *cfg,
                        void **ctxp)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    struct host_blob blob;
    struct host *h;
    int rc;

    if (!(h = host_new (in, cfg, &rc)))
        return rc;
    if ((rc = alloc_tables (h, in)) < 0 || (rc = node_tables (h, b)) < 0
        || (rc = make_blob (h, &blob)) < 0 || (rc = publish (h, b, &blob)) < 0
        || (rc = connect_all (h, b, &blob)) < 0)
        goto out;
    ddpi_debug ("host: node %d/%d local %d/%d, %zu-byte slots, spin %u us, "
                "yield %g s, %d lane%s%s, %d partner nodes", h->node,
                h->nnodes, h->lrank, h->lsize, h->slot_bytes, h->spin_us,
                h->yield_s, h->lanes,
                h->lanes > 1 ? "s" : "", h->lk ? " (one of them)" : "",
                h->npart);
    ddpi_debug ("host: set-up read %d blobs (%zu bytes) in one fence; local "
                "size %d, lanes %d, nodes %d, ranks %d", h->setup_gets,
                h->setup_bytes, h->lsize, h->lanes, h->nnodes, h->size);
    *ctxp = h;
    h = NULL;
    rc = 0;
out:
    if (h)
        host_destroy (h);
    return rc;
}

/* backend.h's join (and split): a group's context is made as the
 * world's, from the group's bootstrap, but waits as its parent does: how
 * long to spin and yield depends on how many ranks share this machine's
 * CPUs, and a group that counted only its own would spin while its
 * parent's other ranks (other groups' members) need the CPUs (seen: a
 * 2-node group's 8-byte all-reduce at 1.2-4.9 ms median beside the other
 * group, 4 ranks on 2 CPUs). */
static int host_join (const void *parent, struct bootstrap *sub,
                      const struct ddp_config *cfg, void **ctxp)
{
    const struct host *p = parent;
    struct host *h;
    int rc;

    if ((rc = host_create (sub, cfg, ctxp)) < 0)
        return rc;
    h = *ctxp;
    h->spin_us = p->spin_us;    /* fixed when the parent was made */
    h->yield_s = p->yield_s;
    h->post_fence = p->post_fence;
    return 0;
}

static int host_split (void *parent, int colour, int key,
                       struct bootstrap *sub, const struct ddp_config *cfg,
                       void **ctxp)
{
    (void)key;
    if (colour == DDP_UNDEFINED)
        return 0;
    return host_join (parent, sub, cfg, ctxp);
}

/* ---------------------------------------------------------- statistics */


/* The counters as one line: "rank=R node=N ... allreduce=C,MS,BS,MR,BR". */
static void stats_line (struct host *h, char *buf, size_t len)
{
    size_t o = (size_t)snprintf (buf, len, "ddp-stats rank=%d size=%d "
                                 "node=%d nnodes=%d lrank=%d lsize=%d "
                                 "lanes=%d lane=%d", h->rank, h->size,
                                 h->node, h->nnodes, h->lrank, h->lsize,
                                 h->lanes, h->lk ? h->lrank : -1);
    for (int k = 0; k < HOST_KINDS && o < len; k++) {
        const struct host_stats *s = &h->stats[k];
        o += (size_t)snprintf (buf + o, len - o, " %s=%llu,%llu,%llu,%llu,%llu",
                               host_kind_names[k], (unsigned long long)s->calls,
                               (unsigned long long)s->msgs_sent,
                               (unsigned long long)s->bytes_sent,
                               (unsigned long long)s->msgs_recv,
                               (unsigned long long)s->bytes_recv);
    }
}

/* DDP_STATS=PATH: append the counters' line to PATH (one write, so lines
 * of ranks sharing a file do not mix); DDP_DEBUG: log it. */
static void stats_report (struct host *h)
{
    const char *path = getenv ("DDP_STATS");
    char line[1024];
    int fd;

    if (!path && !ddpi_debug_enabled ())
        return;
    stats_line (h, line, sizeof (line) - 1);
    ddpi_debug ("%s", line);
    if (!path || !*path)
        return;
    strcat (line, "\n");
    fd = open (path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || write (fd, line, strlen (line)) != (ssize_t)strlen (line))
        ddpi_log ("DDP_STATS=%s: cannot write the counters: %s", path,
                  strerror (errno));
    if (fd >= 0)
        close (fd);
}

/* How long a rank that saw a mismatch waits at destroy for its FAULT
 * frames to leave, and then for its peers to close their side (seconds,
 * each; host_tcp_linger). */
#define MISMATCH_LINGER 0.3

static void host_destroy (void *ctx)
{
    struct host *h = ctx;
    int i;

    if (!h)
        return;
    if (h->hdr)
        stats_report (h);
    /* A mismatch (the ranks' results differ) must reach every rank: the
     * FAULT frames this rank queued go out, and no reset drops them. */
    if (h->broken == DDP_EMISMATCH && h->lk) {
        if (h->relay && h->relay->flush)
            h->relay->flush (h, MISMATCH_LINGER);
        host_tcp_linger (h, MISMATCH_LINGER);
    }
    host_tcp_close (h);
    host_shm_destroy (h);
    for (i = 0; h->pidfds && i < h->lsize; i++)
        if (h->pidfds[i] >= 0)
            close (h->pidfds[i]);
    for (i = 0; h->part && i < h->npart; i++)
        free (h->part[i].addr);
    free (h->part);
    free (h->node_ranks);
    free (h->node_rank_all);
    free (h->local_ranks);
    free (h->lpids);
    free (h->pidfds);
    free (h->rank_node);
    free (h->rank_lrank);
    free (h->node_size);
    free (h->ring_at);
    free (h->ring_line);
    free (h->ring_off);
    for (i = 0; i < 3; i++)
        free (h->scratch[i]);
    free (h);
}

static void host_abort (void *ctx)
{
    struct host *h = ctx;
    host_fault (h, h->rank, FAULT_ABORTED);
}

const struct ddp_backend ddpi_backend_host = {
    .name = "host",
    .create = host_create,
    .split = host_split,
    .join = host_join,
    .destroy = host_destroy,
    .barrier = host_barrier,
    .finalize = host_finalize,
    .bcast = host_bcast,
    .reduce = host_reduce,
    .allreduce = host_allreduce,
    .gather = host_gather,
    .allgather = host_allgather,
    .reduce_scatter = host_reduce_scatter,
    .abort = host_abort,
};
