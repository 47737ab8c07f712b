/* host.c - the host backend: set-up, and the collectives in three phases
 * over the node segment (shm.c) and the lanes' links (algo.c, tcp.c).
 * host.h has the design, the reduction order and the memory formula.
 * What a wait on the segment reports (HOST_EVENT) goes to fault.c, which
 * decides (wait_flag() and the like below). */
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
#include "host.h"
#include "reduce.h"
#include "schedule.h"

#define BLOB_MAGIC 0x6464702d686f7374ULL    /* "ddp-host" */
#define SPLIT_MIN (32 * 1024)
#define LANES_MAX 16        /* ranks that listen, in case they are lanes */

struct host_blob {
    uint64_t magic;
    int32_t pid, node, lrank, lsize, memfd, pad;
    uint64_t host;      /* hash of the machine's boot id */
    struct host_tune tune;
    struct host_addr addr;
};

static void host_destroy (void *ctx);

/* ------------------------------------------------------------- set-up */

/* A value identifying this machine (its boot id), so that "nodes" that
 * share one machine (containers, test clusters) are counted together. */
static uint64_t machine_id (void)
{
    char buf[64] = "";
    FILE *f = fopen ("/proc/sys/kernel/random/boot_id", "r");

    if (f) {
        if (!fgets (buf, sizeof (buf), f))
            buf[0] = '\0';
        fclose (f);
    }
    if (!buf[0])
        gethostname (buf, sizeof (buf) - 1);
    return ddpi_hash_str (buf);
}

/* How long a waiter spins before it yields: long (2 ms, like MPI's busy
 * polling, so a rank keeps its core across a peer's memcpy) when every rank
 * on this machine can have a CPU; not at all when they are oversubscribed,
 * where spinning only delays the peer we wait for.  DDP_SPIN=MICROSECONDS
 * overrides. */
static unsigned spin_default (int on_machine)
{
    const char *s = getenv ("DDP_SPIN");
    long ncpu = sysconf (_SC_NPROCESSORS_ONLN);
    long v;

    if (s && ddpi_parse_long (s, 0, 10000000, &v) == 0)
        return (unsigned)v;
    return ncpu > 0 && on_machine > ncpu ? 0 : 2000;
}

/* One tuning variable name whose value is s: unset or empty keeps *v; a
 * bad value is an error. */
static int tune_var (const char *name, const char *s, long min, long max,
                     uint32_t *v)
{
    long x;

    if (!s || !*s)
        return 0;
    if (ddpi_parse_long (s, min, max, &x) < 0)
        return ddpi_error (DDP_EINVAL, "%s='%s' is not a whole number from "
                           "%ld to %ld", name, s, min, max);
    *v = (uint32_t)x;
    return 0;
}

/* The defaults were picked by measurement (doc/benchmarks.md). */
static int read_tune (struct host_tune *t)
{
    int rc;

    *t = (struct host_tune){ .lanes = 4, .lane_min = 256 * 1024,
                             .small_max = 32 * 1024, .ring_min = 4 << 20,
                             .segment = 256 * 1024 };
    if ((rc = tune_var ("DDP_LANES", getenv ("DDP_LANES"), 1, LANES_MAX,
                        &t->lanes)) < 0
        || (rc = tune_var ("DDP_LANE_MIN", getenv ("DDP_LANE_MIN"), 1,
                           1L << 30, &t->lane_min)) < 0
        || (rc = tune_var ("DDP_SMALL_MAX", getenv ("DDP_SMALL_MAX"), 0,
                           1L << 30, &t->small_max)) < 0
        || (rc = tune_var ("DDP_RING_MIN", getenv ("DDP_RING_MIN"), 0,
                           1L << 30, &t->ring_min)) < 0
        || (rc = tune_var ("DDP_SEGMENT", getenv ("DDP_SEGMENT"), 64,
                           1L << 30, &t->segment)) < 0)
        return rc;
    return 0;
}

/* Set-up, one bootstrap round, sparse (bootstrap.h): every rank puts its
 * blob for its node (LOCAL); the ranks that may be lanes, and rank 0 (whose
 * tuning every rank follows), also put it for every rank (GLOBAL).  After
 * the one fence a rank reads its node's blobs, rank 0's, and the lanes of
 * its partner nodes; the layout (which rank is on which node) is the
 * launcher's, read without an exchange.  Per rank, with W ranks, N nodes,
 * P ranks on this node, L lanes and q <= 3 ceil(log2 N) + 3 partner nodes
 * (sched_partners_max):
 *   fences  1 (PMIx: collecting, of the GLOBAL blobs only: at most
 *           min(P, 16) per node, so N min(P, 16) + 1 blobs reach each node)
 *   gets    (P - 1) + 1 + L q blobs of sizeof (struct host_blob) bytes
 *           (rank 0's from its node's copy when it is local)
 *   layout  N reads of the launcher's job data (bootstrap_layout), O(W)
 *           work for the W-entry tables the collectives use
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
    for (n = 0; n < h->nnodes; n++) {
        if (!(h->node_ranks[n] = calloc ((size_t)h->node_size[n],
                                         sizeof (int))))
            return ddpi_error (DDP_ENOMEM, "out of memory");
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
            if (l == 0)
                p->machine = bl.host;
        }
    }
    return 0;
}

/* How long to spin: from the ranks on this machine that this rank knows
 * of (its node's and those of its partner nodes on the same machine: all
 * of them on a real cluster, a lower bound where simulated nodes share a
 * machine). */
static void set_spin (struct host *h)
{
    int n = h->lsize;

    for (int i = 0; i < h->npart; i++)
        if (h->part[i].machine == h->machine)
            n += h->node_size[h->part[i].node];
    h->spin_us = spin_default (n);
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
    if (!h->local_ranks || !h->lpids || !h->pidfds || !h->rank_node
        || !h->rank_lrank || !h->node_size || !h->node_ranks)
        return ddpi_error (DDP_ENOMEM, "out of memory");
    memcpy (h->local_ranks, in->local_ranks, ls * sizeof (int));
    for (size_t i = 0; i < ls; i++)
        h->pidfds[i] = -1;
    return 0;
}

static struct host *host_new (const struct bootstrap_info *in,
                              const struct ddp_config *cfg)
{
    struct host *h = calloc (1, sizeof (*h));

    if (!h) {
        ddpi_error (DDP_ENOMEM, "out of memory");
        return NULL;
    }
    h->rank = in->rank;
    h->size = in->size;
    h->lrank = in->local_rank;
    h->lsize = in->local_size;
    h->node = in->node_rank;
    h->nnodes = in->num_nodes;
    h->cfg = cfg;
    h->strag = ddpi_debug_enabled ()
               || (getenv ("DDP_STRAGGLERS")
                   && strcmp (getenv ("DDP_STRAGGLERS"), "1") == 0);
    h->memfd = h->listen_fd = -1;
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
    blob->host = h->machine = machine_id ();
    if ((rc = read_tune (&blob->tune)) < 0)
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

    if (!(h = host_new (in, cfg)))
        return DDP_ENOMEM;
    if ((rc = alloc_tables (h, in)) < 0 || (rc = node_tables (h, b)) < 0
        || (rc = make_blob (h, &blob)) < 0 || (rc = publish (h, b, &blob)) < 0
        || (rc = connect_all (h, b, &blob)) < 0)
        goto out;
    ddpi_debug ("host: node %d/%d local %d/%d, %zu-byte slots, spin %u us, "
                "%d lane%s%s, %d partner nodes", h->node, h->nnodes, h->lrank,
                h->lsize, h->slot_bytes, h->spin_us, h->lanes,
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

/* ---------------------------------------------------------- statistics */

static const char *const kind_names[HOST_KINDS] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "allgather", "other",
};

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
                               kind_names[k], (unsigned long long)s->calls,
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

static void host_destroy (void *ctx)
{
    struct host *h = ctx;
    int i;

    if (!h)
        return;
    if (h->hdr)
        stats_report (h);
    host_tcp_close (h);
    host_shm_destroy (h);
    for (i = 0; h->pidfds && i < h->lsize; i++)
        if (h->pidfds[i] >= 0)
            close (h->pidfds[i]);
    for (i = 0; h->node_ranks && i < h->nnodes; i++)
        free (h->node_ranks[i]);
    for (i = 0; h->part && i < h->npart; i++)
        free (h->part[i].addr);
    free (h->part);
    free (h->node_ranks);
    free (h->local_ranks);
    free (h->lpids);
    free (h->pidfds);
    free (h->rank_node);
    free (h->rank_lrank);
    free (h->node_size);
    for (i = 0; i < 3; i++)
        free (h->scratch[i]);
    free (h);
}

/* ---------------------------------------------------------- stragglers */

/* An arrival stamp: the low 24 bits of the call number, then the low 40
 * bits of the monotonic clock in ns (18 minutes around: differences of
 * arrivals at one call are far smaller). */
#define STRAG_NS_BITS 40
#define STRAG_NS_MASK ((UINT64_C(1) << STRAG_NS_BITS) - 1)
#define STRAG_STAMP(c, ns) \
    ((uint64_t)(c) << STRAG_NS_BITS | ((uint64_t)(ns) & STRAG_NS_MASK))
#define STRAG_CALL(st) ((st) >> STRAG_NS_BITS)

static uint64_t mono_ns (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This rank's collective h->call succeeded: if every local rank's stamp of
 * it is there and none is later than this rank's (ties go to the higher
 * local rank), this rank was the node's last: count it and how long after
 * the node's first it came.  A local rank is never 3 calls ahead of one
 * still in a call (each call has a node step, and a step waits for every
 * local rank to have finished the step before), so arrive[c % 3] is
 * either c's stamp or an older one: a rank not yet arrived. */
static void strag_count (struct host *h)
{
    int slot = (int)(h->call % 3);
    uint64_t tag = h->call & ((UINT64_C(1) << (64 - STRAG_NS_BITS)) - 1);
    uint64_t mine = atomic_load (&h->flags[h->lrank].arrive[slot]);
    uint64_t late = 0;

    for (int lr = 0; lr < h->lsize; lr++) {
        uint64_t st = atomic_load (&h->flags[lr].arrive[slot]);
        uint64_t d = (mine - st) & STRAG_NS_MASK;   /* how much earlier */
        if (lr == h->lrank)
            continue;
        if (STRAG_CALL (st) != tag || d > STRAG_NS_MASK / 2
            || (d == 0 && lr > h->lrank))
            return;
        if (d > late)
            late = d;
    }
    h->strag_last++;
    h->strag_late_ns += late;
}

/* At finalize (every rank, the straggler report on): find the 3 ranks
 * that were last most often, by rounds of a 2-element allreduce (MAX):
 * element 0 is (count << 32 | ~rank) of the ranks not yet picked, element
 * 1 the average lateness (us) of the rank picked in the round before.  The
 * traffic does not grow with the world size.  Rank 0 logs them. */
static int strag_report (struct host *h)
{
    uint64_t calls = h->call, v[2], key[3] = { 0 }, avg[3] = { 0 };
    uint64_t me = h->strag_last << 32 | (UINT32_MAX - (uint32_t)h->rank);
    char out[512];
    size_t at;
    int rc;

    for (int i = 0; i <= 3; i++) {
        bool picked = false, prev = false;
        for (int j = 0; j < i; j++)
            picked |= key[j] == me;
        prev = i > 0 && key[i - 1] == me;
        v[0] = i < 3 && !picked ? me : 0;
        v[1] = prev && h->strag_last
                   ? h->strag_late_ns / h->strag_last / 1000 : 0;
        rc = ddpi_backend_host.allreduce (h, v, v, 2, DDP_UINT64, DDP_MAX);
        if (rc < 0)
            return rc;
        if (i < 3)
            key[i] = v[0];
        if (i > 0)
            avg[i - 1] = v[1];
    }
    if (h->rank != 0)
        return 0;
    at = (size_t)snprintf (out, sizeof (out),
                           "stragglers over %llu collectives:",
                           (unsigned long long)calls);
    for (int i = 0; i < 3 && key[i] >> 32 && at < sizeof (out); i++) {
        int r = (int)(UINT32_MAX - (uint32_t)key[i]);
        unsigned long long n = key[i] >> 32;
        at += (size_t)snprintf (out + at, sizeof (out) - at,
                                "%s rank %d (node %d) last in %llu (%llu%%), "
                                "%.1f ms late on average", i ? ";" : "", r,
                                h->rank_node[r], n, calls ? n * 100 / calls : 0,
                                (double)avg[i] / 1e3);
    }
    if (!(key[0] >> 32) && at < sizeof (out))
        snprintf (out + at, sizeof (out) - at,
                  " none (no node has two ranks)");
    ddpi_log ("%s", out);
    return 0;
}

/* ------------------------------------------------------------ steps */

/* The segment's waits (transport.h); an event one reports becomes the
 * fault's code. */
static int wait_flag (struct host *h, int lr, int which, uint64_t s)
{
    return host_fault_rc (h, host_wait_flag (h, lr, which, s));
}

static int wait_first (struct host *h, int n, int which, uint64_t s)
{
    return host_fault_rc (h, host_wait_first (h, n, which, s));
}

static int wait_all (struct host *h, int which, uint64_t s)
{
    return host_fault_rc (h, host_wait_all (h, which, s));
}

/* Start a collective of kind: counts it, numbers it, and shows it to the
 * node (the diagnosis of a timeout names it). */
static int call_begin (struct host *h, int kind)
{
    if (h->lk) {
        /* Across nodes only: a clock read is lost in a network call. */
        if (h->kind == KIND_BARRIER || h->kind == KIND_ALLREDUCE
            || h->kind == KIND_ALLGATHER)
            h->full_entry = h->entry;
        h->entry = ddpi_now ();
    }
    h->kind = kind;
    h->stats[kind].calls++;
    h->call++;
    atomic_store_explicit (&h->flags[h->lrank].state,
                           FAULT_STATE (h->call, kind, 1),
                           memory_order_relaxed);
    if (h->strag)
        atomic_store (&h->flags[h->lrank].arrive[h->call % 3],
                      STRAG_STAMP (h->call, mono_ns ()));
    return h->broken;
}

/* A collective that succeeded here: a rank that gave up on it (a timeout)
 * claimed the fault record before it returned, in this node's segment or,
 * through the FAULT frame it sent first, on a lane's links.  Then this
 * rank fails it too, so that a collective ends the same way everywhere;
 * see doc/ddp.7 (a collective's outcome) for the window that is left. */
static int call_agree (struct host *h)
{
    /* A peer that gave up on this call entered it after it finished the
     * last call in which it waited for this rank (a barrier, allreduce or
     * allgather, entered here at full_entry), and waited DDP_TIMEOUT since:
     * not before full_entry + timeout in real time.  Until then there is
     * nothing on the links to look for (a poll costs a system call on every
     * collective otherwise); 0.9 leaves room for clock rates.  This takes
     * DDP_TIMEOUT to be the same on every rank, as srun gives it. */
    if (h->lk && h->relay && h->relay->poll
        && (h->full_entry == 0
            || ddpi_now () - h->full_entry >= 0.9 * h->cfg->timeout_s))
        h->relay->poll (h);
    if (atomic_load (&h->hdr->fault_rank) == 0)
        return 0;
    ddpi_log ("ddp_%s #%llu completed here, but another rank gave up on it: "
              "it fails here too", kind_names[h->kind],
              (unsigned long long)h->call);
    return host_check_fault (h);
}

/* The collective under way ended with rc: show that it was left. */
static int call_end (struct host *h, int rc)
{
    if (rc == 0)
        rc = call_agree (h);
    atomic_store_explicit (&h->flags[h->lrank].state,
                           FAULT_STATE (h->call, h->kind, 0),
                           memory_order_relaxed);
    if (rc == 0 && h->strag && h->lsize > 1)
        strag_count (h);
    return rc;
}

/* Start step s: wait until the bank it uses is free again. */
static int step_begin (struct host *h, uint64_t *sp)
{
    if (h->broken)
        return h->broken;
    *sp = ++h->seq;
    return wait_all (h, 0, *sp - 1);
}

/* A step with nothing of this rank's in it: enter it and say so. */
static int step_enter (struct host *h, uint64_t *sp)
{
    int rc = step_begin (h, sp);

    if (rc == 0)
        host_post (h, 0, *sp);
    return rc;
}

/* ------------------------------------------------- one node: in the segment */

/* This rank's share [lo, hi) of n elements when the node splits a step. */
static void share (struct host *h, size_t n, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)h->lrank / (size_t)h->lsize;
    *hi = n * (size_t)(h->lrank + 1) / (size_t)h->lsize;
}

/* Reduce the node's slots of this step, elements [lo, lo+n), into dst
 * (accumulation type). */
static void node_reduce (struct host *h, int bank, void *dst, size_t lo,
                         size_t n, ddp_dtype_t dtype, ddp_op_t op)
{
    const void *src[h->lsize];
    size_t es = ddp_dtype_size (dtype);

    for (int lr = 0; lr < h->lsize; lr++)
        src[lr] = host_slot (h, bank, lr) + lo * es;
    ddpi_reduce_many_acc (dst, src, h->lsize, n, dtype, op);
}

#define ACC_ALIGN 64         /* bytes; a power of two */

/* Elements a reduction step on one node takes: they fit a slot, and the
 * result area holds them in dtype and, after, in the accumulation type. */
static size_t node_chunk (struct host *h, ddp_dtype_t dtype, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype);
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    size_t need = es + (at != dtype ? ddp_dtype_size (at) : 0);
    size_t a = h->slot_bytes / es;
    /* The accumulation starts aligned after the result (acc_offset). */
    size_t b = (h->res_bytes - (at != dtype ? ACC_ALIGN : 0)) / need;

    return a < b ? a : b;
}

/* Where the accumulation of n elements of es bytes starts in the result
 * area: after the result, aligned for any accumulation type (an odd count
 * of 16-bit elements would leave float32 partials misaligned: UB). */
static size_t acc_offset (size_t n, size_t es)
{
    return (n * es + ACC_ALIGN - 1) & ~(size_t)(ACC_ALIGN - 1);
}

/* One step of a reduction on one node: n elements of send; out (NULL: not
 * wanted here) gets the result.  Small steps are reduced by every rank
 * that wants them, from the slots; larger ones in shares, into the result
 * area: the result in dtype at its start, each share's accumulation after
 * it (apart when the types differ, so no share is narrowed over another's
 * partial). */
static int node_reduce_step (struct host *h, const char *send, char *out,
                             size_t n, ddp_dtype_t dtype, ddp_op_t op)
{
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    size_t es = ddp_dtype_size (dtype), aes = ddp_dtype_size (at), lo, hi;
    uint64_t s = 0;
    int rc, bank;
    char *res, *acc;

    if ((rc = step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    res = host_result (h, bank);
    acc = at == dtype ? res : res + acc_offset (n, es);
    memcpy (host_slot (h, bank, h->lrank), send, n * es);
    host_post (h, 0, s);
    if (n * es < SPLIT_MIN || h->lsize == 1) {
        void *w = at == dtype ? out : host_scratch (h, 0, n * aes);
        if (!out)
            return 0;
        if (!w)
            return DDP_ENOMEM;
        if ((rc = wait_all (h, 0, s)) < 0)
            return rc;
        node_reduce (h, bank, w, 0, n, dtype, op);
        ddpi_reduce_finish (w, n, at, op, h->size);
        ddpi_narrow (out, w, n, dtype, op);
        return 0;
    }
    share (h, n, &lo, &hi);
    if ((rc = wait_all (h, 0, s)) < 0)
        return rc;
    node_reduce (h, bank, acc + lo * aes, lo, hi - lo, dtype, op);
    ddpi_reduce_finish (acc + lo * aes, hi - lo, at, op, h->size);
    ddpi_narrow (res + lo * es, acc + lo * aes, hi - lo, dtype, op);
    host_post (h, 1, s);
    if ((rc = wait_all (h, 1, s)) < 0)
        return rc;
    if (out)
        memcpy (out, res, n * es);
    return 0;
}

/* One bcast step on one node: bytes of root's buf to the others. */
static int node_bcast_step (struct host *h, char *buf, size_t bytes, int root)
{
    uint64_t s = 0;
    int rc;
    char *res;

    if ((rc = step_begin (h, &s)) < 0)
        return rc;
    res = host_result (h, (int)(s & 1));
    if (h->rank == root)
        memcpy (res, buf, bytes);
    host_post (h, 0, s);
    if (h->rank == root)
        return 0;
    if ((rc = wait_flag (h, h->rank_lrank[root], 0, s)) < 0)
        return rc;
    memcpy (buf, res, bytes);
    return 0;
}

/* One gather step on one node: bytes of every rank's send into recv at
 * rank x stride (recv NULL: not wanted here). */
static int node_gather_step (struct host *h, const char *send, char *recv,
                             size_t bytes, size_t stride)
{
    uint64_t s = 0;
    int rc, bank;

    if ((rc = step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    memcpy (host_slot (h, bank, h->lrank), send, bytes);
    host_post (h, 0, s);
    if (!recv)
        return 0;
    if ((rc = wait_all (h, 0, s)) < 0)
        return rc;
    for (int lr = 0; lr < h->lsize; lr++)
        memcpy (recv + (size_t)h->local_ranks[lr] * stride,
                host_slot (h, bank, lr), bytes);
    return 0;
}

/* ------------------------------------------ several nodes: the three phases */

/* Lanes for a reduction of bytes: each gets DDP_LANE_MIN bytes at least. */
static int active_lanes (struct host *h, size_t count, size_t es)
{
    size_t k = count * es / (h->tune.lane_min ? h->tune.lane_min : 1);

    if (k > (size_t)h->lanes)
        k = (size_t)h->lanes;
    if (k > count)
        k = count;
    return k < 1 ? 1 : (int)k;
}

/* Lane m of La holds elements sched_block (count, La, m); step j of a
 * phase moves elements [j c, (j+1) c) of it: *lo (of count) and *n. */
static void piece (size_t count, int La, int m, size_t c, size_t j,
                   size_t *lo, size_t *n)
{
    size_t blo, bhi;

    sched_block (count, La, m, &blo, &bhi);
    *lo = blo + j * c;
    *n = *lo >= bhi ? 0 : bhi - *lo < c ? bhi - *lo : c;
}

/* Steps a phase of c elements per lane and step takes (1 at least). */
static size_t phase_steps (size_t count, int La, size_t c)
{
    size_t lo, hi;

    sched_block (count, La, La - 1, &lo, &hi);
    return hi - lo > c ? (hi - lo + c - 1) / c : 1;
}

/* In phase of a reduction: every local rank puts its data through its
 * slot, lane m's piece at m x c elements; lane l (< La; w its block in
 * the accumulation type) reduces its piece over the node's slots. */
static int reduce_in (struct host *h, const char *send, char *w, size_t count,
                      ddp_dtype_t dtype, ddp_op_t op, int La)
{
    size_t es = ddp_dtype_size (dtype);
    size_t aes = ddp_dtype_size (ddpi_acc_dtype (dtype, op));
    size_t c = h->slot_bytes / ((size_t)La * es), lo, n;
    size_t steps = phase_steps (count, La, c);
    int l = h->lrank < La ? h->lrank : -1, rc;
    uint64_t s = 0;

    for (size_t j = 0; j < steps; j++) {
        char *slot;
        if ((rc = step_begin (h, &s)) < 0)
            return rc;
        slot = host_slot (h, (int)(s & 1), h->lrank);
        for (int m = 0; m < La; m++) {
            piece (count, La, m, c, j, &lo, &n);
            memcpy (slot + (size_t)m * c * es, send + lo * es, n * es);
        }
        host_post (h, 0, s);
        if (l < 0)
            continue;
        piece (count, La, l, c, j, &lo, &n);
        if ((rc = wait_all (h, 0, s)) < 0)
            return rc;
        node_reduce (h, (int)(s & 1), w + j * c * aes, (size_t)l * c, n,
                     dtype, op);
    }
    return 0;
}

/* Out phase: lane l (< La) writes its block of the result (mine, dtype)
 * through the result area, piece by piece; every local rank with a dst
 * copies every lane's pieces into it (not its own block when that is
 * where it already lies).  reuse: the first piece goes in the last step of
 * this call's in phase (nobody reads that bank's result area then). */
static int result_out (struct host *h, const char *mine, char *dst,
                       size_t count, size_t es, int La, bool reuse)
{
    size_t c = h->res_bytes / ((size_t)La * es), lo, n;
    size_t steps = phase_steps (count, La, c);
    int l = h->lrank < La && mine ? h->lrank : -1, rc;
    uint64_t s = h->seq;

    for (size_t j = 0; j < steps; j++) {
        char *res;
        if ((j > 0 || !reuse) && (rc = step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (l >= 0) {
            piece (count, La, l, c, j, &lo, &n);
            memcpy (res + (size_t)l * c * es, mine + j * c * es, n * es);
            host_post (h, 2, s);
        }
        if (!dst)
            continue;
        if ((rc = wait_first (h, La, 2, s)) < 0)
            return rc;
        for (int m = 0; m < La; m++) {
            piece (count, La, m, c, j, &lo, &n);
            if (m != l || dst + lo * es != mine + j * c * es)
                memcpy (dst + lo * es, res + (size_t)m * c * es, n * es);
        }
    }
    return 0;
}

/* Lane l's block [*blo, *bhi) of count among La, and its buffers: the work
 * w (accumulation type: in place in in_place when the types agree, else
 * scratch 0) and, when out_place is NULL, a result in scratch 2. */
static int lane_buffers (struct host *h, size_t count, ddp_dtype_t dtype,
                         ddp_op_t op, int La, char *in_place, char *out_place,
                         char **w, char **out)
{
    size_t es = ddp_dtype_size (dtype), blo, bhi;
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);

    *w = *out = NULL;
    if (h->lrank >= La)
        return 0;
    sched_block (count, La, h->lrank, &blo, &bhi);
    *w = in_place && at == dtype ? in_place + blo * es
       : host_scratch (h, 0, (bhi - blo) * ddp_dtype_size (at));
    *out = out_place ? out_place + blo * es
         : host_scratch (h, 2, (bhi - blo) * es);
    return *w && *out ? 0 : DDP_ENOMEM;
}

static int allreduce_nodes (struct host *h, const char *send, char *recv,
                            size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype), blo, bhi;
    int La = active_lanes (h, count, es), rc;
    char *w, *out;

    if ((rc = lane_buffers (h, count, dtype, op, La, recv, recv, &w, &out)) < 0)
        return rc;
    if (h->lsize == 1) {
        ddpi_widen (w, send, count, dtype, op);
        return algo_allreduce (h, w, recv, count, dtype, op);
    }
    if ((rc = reduce_in (h, send, w, count, dtype, op, La)) < 0)
        return rc;
    if (w) {
        sched_block (count, La, h->lrank, &blo, &bhi);
        if ((rc = algo_allreduce (h, w, out, bhi - blo, dtype, op)) < 0)
            return rc;
    }
    return result_out (h, out, recv, count, es, La, true);
}

static int reduce_nodes (struct host *h, const char *send, char *recv,
                         size_t count, ddp_dtype_t dtype, ddp_op_t op,
                         int root)
{
    size_t es = ddp_dtype_size (dtype), blo, bhi;
    int La = active_lanes (h, count, es), rc, rnode = h->rank_node[root];
    bool want = h->rank == root;
    char *w, *out;

    if ((rc = lane_buffers (h, count, dtype, op, La, want ? recv : NULL,
                            want ? recv : NULL, &w, &out)) < 0)
        return rc;
    if (h->lsize == 1) {
        ddpi_widen (w, send, count, dtype, op);
        return algo_reduce (h, w, out, count, dtype, op, rnode);
    }
    if ((rc = reduce_in (h, send, w, count, dtype, op, La)) < 0)
        return rc;
    if (w) {
        sched_block (count, La, h->lrank, &blo, &bhi);
        if ((rc = algo_reduce (h, w, out, bhi - blo, dtype, op, rnode)) < 0)
            return rc;
    }
    if (h->node != rnode)
        return 0;
    return result_out (h, out, want ? recv : NULL, count, es, La, true);
}

/* In phase of a bcast: the root (not lane 0) hands buf to lane 0. */
static int bcast_in (struct host *h, char *buf, size_t bytes, int root_lr)
{
    uint64_t s = 0;
    int rc;

    for (size_t off = 0; off < bytes; off += h->slot_bytes) {
        size_t n = bytes - off < h->slot_bytes ? bytes - off : h->slot_bytes;
        char *slot;
        if ((rc = step_begin (h, &s)) < 0)
            return rc;
        slot = host_slot (h, (int)(s & 1), root_lr);
        if (h->lrank == root_lr)
            memcpy (slot, buf + off, n);
        host_post (h, 0, s);
        if (h->lrank != 0)
            continue;
        if ((rc = wait_flag (h, root_lr, 0, s)) < 0)
            return rc;
        memcpy (buf + off, slot, n);
    }
    return 0;
}

static int bcast_nodes (struct host *h, char *buf, size_t bytes, int root)
{
    int rnode = h->rank_node[root], root_lr = h->rank_lrank[root], rc;
    bool in = h->node == rnode && root_lr != 0;

    if (h->lsize == 1)
        return algo_bcast (h, buf, bytes, rnode);
    if (in && (rc = bcast_in (h, buf, bytes, root_lr)) < 0)
        return rc;
    if (h->lrank == 0 && (rc = algo_bcast (h, buf, bytes, rnode)) < 0)
        return rc;
    return result_out (h, h->lrank == 0 ? buf : NULL,
                       h->rank == root || h->lrank == 0 ? NULL : buf, bytes,
                       1, 1, in);
}

/* In phase of a gather: every local rank's bytes through its slot; lane 0
 * puts local rank lr's at dst + lr x bytes (world: at its rank's place)
 * and its own send there first. */
static int gather_in (struct host *h, const char *send, char *dst,
                      size_t bytes, bool world)
{
    uint64_t s = 0;
    int rc;

    if (h->lrank == 0)
        memmove (dst + (size_t)(world ? h->rank : 0) * bytes, send, bytes);
    for (size_t off = 0; off < bytes; off += h->slot_bytes) {
        size_t n = bytes - off < h->slot_bytes ? bytes - off : h->slot_bytes;
        if ((rc = step_begin (h, &s)) < 0)
            return rc;
        if (h->lrank != 0)
            memcpy (host_slot (h, (int)(s & 1), h->lrank), send + off, n);
        host_post (h, 0, s);
        if (h->lrank != 0)
            continue;
        if ((rc = wait_all (h, 0, s)) < 0)
            return rc;
        for (int lr = 1; lr < h->lsize; lr++)
            memcpy (dst + (size_t)(world ? h->local_ranks[lr] : lr) * bytes
                    + off, host_slot (h, (int)(s & 1), lr), n);
    }
    return 0;
}

/* Bytes [lo, hi) of a gather's output (world order) from tb (algo_gather's
 * order: nodes from rnode on, each node's ranks in local order) to dst. */
static int gather_unpack (struct host *h, const char *tb, size_t bytes,
                          int rnode, char *dst, size_t lo, size_t hi)
{
    size_t *noff = calloc ((size_t)h->nnodes, sizeof (size_t)), off = 0;

    if (!noff)
        return ddpi_error (DDP_ENOMEM, "out of memory");
    for (int j = 0; j < h->nnodes; j++) {
        noff[j] = off;
        off += (size_t)h->node_size[sched_mod ((long)rnode + j, h->nnodes)]
               * bytes;
    }
    for (size_t r = lo / bytes; r < (size_t)h->size && r * bytes < hi; r++) {
        size_t a = r * bytes > lo ? r * bytes : lo;
        size_t b = (r + 1) * bytes < hi ? (r + 1) * bytes : hi;
        int rel = sched_mod ((long)h->rank_node[r] - rnode, h->nnodes);
        const char *src = tb + noff[rel] + (size_t)h->rank_lrank[r] * bytes;
        memcpy (dst + (a - lo), src + (a - r * bytes), b - a);
    }
    free (noff);
    return 0;
}

/* Out phase of a gather on the root's node: lane 0 writes the output
 * (world order) through the result area, the root copies it. */
static int gather_out (struct host *h, const char *tb, char *recv,
                       size_t bytes, int rnode)
{
    size_t total = (size_t)h->size * bytes;
    uint64_t s = h->seq;
    int rc;

    for (size_t off = 0; off < total; off += h->res_bytes) {
        size_t n = total - off < h->res_bytes ? total - off : h->res_bytes;
        char *res;
        if (off > 0 && (rc = step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (h->lrank == 0) {
            if ((rc = gather_unpack (h, tb, bytes, rnode, res, off,
                                     off + n)) < 0)
                return rc;
            host_post (h, 2, s);
        }
        if (!recv)
            continue;
        if ((rc = wait_flag (h, 0, 2, s)) < 0)
            return rc;
        memcpy (recv + off, res, n);
    }
    return 0;
}

static int gather_nodes (struct host *h, const char *send, char *recv,
                         size_t bytes, int root)
{
    int rnode = h->rank_node[root], rc;
    char *tb = NULL;

    if (h->lrank == 0
        && !(tb = host_scratch (h, 0, algo_gather_bytes (h, bytes, rnode))))
        return DDP_ENOMEM;
    if ((rc = gather_in (h, send, tb, bytes, false)) < 0)
        return rc;
    if (h->lrank == 0 && (rc = algo_gather (h, tb, bytes, rnode)) < 0)
        return rc;
    if (h->node != rnode)
        return 0;
    /* A root that is lane 0 unpacks for itself: no out phase on the node
     * (every local rank takes the same steps). */
    if (h->rank_lrank[root] == 0)
        return h->rank == root ? gather_unpack (h, tb, bytes, rnode, recv, 0,
                                                (size_t)h->size * bytes)
                               : 0;
    return gather_out (h, tb, h->rank == root ? recv : NULL, bytes, rnode);
}

static int allgather_nodes (struct host *h, const char *send, char *recv,
                            size_t bytes)
{
    int rc;

    if ((rc = gather_in (h, send, recv, bytes, true)) < 0)
        return rc;
    if (h->lrank == 0 && (rc = algo_allgather (h, recv, bytes)) < 0)
        return rc;
    if (h->lsize == 1)
        return 0;
    return result_out (h, h->lrank == 0 ? recv : NULL,
                       h->lrank == 0 ? NULL : recv, (size_t)h->size * bytes,
                       1, 1, true);
}

/* ------------------------------------------------------------ the calls */

static int barrier_run (struct host *h)
{
    uint64_t s = 0;
    int rc;

    if ((rc = call_begin (h, KIND_BARRIER)) < 0
        || (rc = step_enter (h, &s)) < 0)
        return rc;
    if (h->nnodes == 1)
        return wait_all (h, 0, s);
    if (h->lrank != 0)
        return wait_flag (h, 0, 2, s);
    if ((rc = wait_all (h, 0, s)) < 0 || (rc = algo_barrier (h)) < 0)
        return rc;
    host_post (h, 2, s);
    return 0;
}

static int reduce_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    size_t es = ddp_dtype_size (dtype), chunk, n;
    bool want = root < 0 || root == h->rank;
    int rc;

    if ((rc = call_begin (h, root < 0 ? KIND_ALLREDUCE : KIND_REDUCE)) < 0)
        return rc;
    if (h->size == 1) {
        ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
        void *w = at == dtype ? recv : host_scratch (h, 0,
                                                     count * ddp_dtype_size (at));
        if (!w)
            return DDP_ENOMEM;
        ddpi_widen (w, send, count, dtype, op);
        ddpi_reduce_finish (w, count, at, op, 1);
        ddpi_narrow (recv, w, count, dtype, op);
        return 0;
    }
    if (h->nnodes > 1)
        return root < 0 ? allreduce_nodes (h, send, recv, count, dtype, op)
                        : reduce_nodes (h, send, recv, count, dtype, op, root);
    chunk = node_chunk (h, dtype, op);
    for (size_t off = 0; off < count; off += n) {
        n = count - off < chunk ? count - off : chunk;
        if ((rc = node_reduce_step (h, send + off * es, want ? recv + off * es
                                    : NULL, n, dtype, op)) < 0)
            return rc;
    }
    return 0;
}

static int host_barrier (void *ctx)
{
    return call_end (ctx, barrier_run (ctx));
}

static int host_allreduce (void *ctx, const void *sendbuf, void *recvbuf,
                           size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    return call_end (ctx, reduce_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       op, -1));
}

static int host_reduce (void *ctx, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    return call_end (ctx, reduce_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       op, root));
}

static int bcast_run (struct host *h, void *buf, size_t count,
                      ddp_dtype_t dtype, int root)
{
    size_t bytes = count * ddp_dtype_size (dtype), n;
    int rc;

    if ((rc = call_begin (h, KIND_BCAST)) < 0 || h->size == 1)
        return rc;
    if (h->nnodes > 1)
        return bcast_nodes (h, buf, bytes, root);
    for (size_t off = 0; off < bytes; off += n) {
        n = bytes - off < h->res_bytes ? bytes - off : h->res_bytes;
        if ((rc = node_bcast_step (h, (char *)buf + off, n, root)) < 0)
            return rc;
    }
    return 0;
}

static int host_bcast (void *ctx, void *buf, size_t count, ddp_dtype_t dtype,
                       int root)
{
    return call_end (ctx, bcast_run (ctx, buf, count, dtype, root));
}

static int gather_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, int root)
{
    size_t es = ddp_dtype_size (dtype), bytes = count * es, n;
    size_t chunk = h->slot_bytes - h->slot_bytes % es;
    int rc;

    if ((rc = call_begin (h, root < 0 ? KIND_ALLGATHER : KIND_GATHER)) < 0)
        return rc;
    if (h->size == 1) {
        if (recv && recv != send)
            memmove (recv, send, bytes);
        return 0;
    }
    if (h->nnodes > 1)
        return root < 0 ? allgather_nodes (h, send, recv, bytes)
                        : gather_nodes (h, send, recv, bytes, root);
    for (size_t off = 0; off < bytes; off += n) {
        n = bytes - off < chunk ? bytes - off : chunk;
        if ((rc = node_gather_step (h, send + off, recv ? recv + off : NULL,
                                    n, bytes)) < 0)
            return rc;
    }
    return 0;
}

static int host_gather (void *ctx, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype, int root)
{
    return call_end (ctx, gather_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       root));
}

static int host_allgather (void *ctx, const void *sendbuf, void *recvbuf,
                           size_t count, ddp_dtype_t dtype)
{
    return call_end (ctx, gather_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       -1));
}

/* ddp_finalize's barrier, then the straggler report when it is on. */
static int host_finalize (void *ctx)
{
    struct host *h = ctx;
    int rc = host_barrier (h);

    return rc < 0 || !h->strag ? rc : strag_report (h);
}

static void host_abort (void *ctx)
{
    struct host *h = ctx;
    host_fault (h, h->rank, FAULT_ABORTED);
}

const struct ddp_backend ddpi_backend_host = {
    .name = "host",
    .create = host_create,
    .destroy = host_destroy,
    .barrier = host_barrier,
    .finalize = host_finalize,
    .bcast = host_bcast,
    .reduce = host_reduce,
    .allreduce = host_allreduce,
    .gather = host_gather,
    .allgather = host_allgather,
    .abort = host_abort,
};
