/* host.c - the host backend: collectives over the node segment (shm.c) and
 * the leaders' TCP mesh (tcp.c).  See host.h for the step protocol.
 *
 * Reduction order, the same on every rank: within a node, local rank 0's
 * data, then op with local rank 1's, ...; across nodes, node 0's partial,
 * then op with node 1's, ...  AVG divides once, at the end, by the world
 * size.  Small buffers are reduced by every rank (single node) or by the
 * leader; from SPLIT_MIN bytes each local rank reduces its own share of the
 * elements.  Buffers larger than a slot go through in chunks (steps).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "host.h"
#include "reduce.h"

#define BLOB_MAGIC 0x6464702d686f7374ULL    /* "ddp-host" */
#define SPLIT_MIN (32 * 1024)

struct host_blob {
    uint64_t magic;
    int32_t pid, node, lrank, lsize, memfd, pad;
    uint64_t host;      /* hash of the machine's boot id */
    struct host_addr addr;
};

static void host_destroy (void *ctx);

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

static int check_blobs (struct host *h, const char *all, const size_t *off,
                        const size_t *len, struct host_blob *blobs)
{
    int r, n;

    for (r = 0; r < h->size; r++) {
        struct host_blob *bl = &blobs[r];
        if (len[r] != sizeof (*bl))
            return ddpi_error (DDP_EMISMATCH, "rank %d sent a %zu-byte setup "
                               "blob (another libddp version?)", r, len[r]);
        memcpy (bl, all + off[r], sizeof (*bl));
        if (bl->magic != BLOB_MAGIC || bl->node < 0 || bl->node >= h->nnodes
            || bl->lsize < 1 || bl->lrank < 0 || bl->lrank >= bl->lsize)
            return ddpi_error (DDP_EMISMATCH, "rank %d sent an invalid setup "
                               "blob", r);
        h->rank_node[r] = bl->node;
        h->rank_lrank[r] = bl->lrank;
        if (h->node_size[bl->node]++ == 0)
            h->node_leader[bl->node] = -1;
        if (bl->lrank == 0)
            h->node_leader[bl->node] = r;
    }
    for (n = 0; n < h->nnodes; n++) {
        if (h->node_size[n] < 1 || h->node_leader[n] < 0)
            return ddpi_error (DDP_EMISMATCH, "node %d has no ranks or no "
                               "local rank 0", n);
        if (!(h->node_ranks[n] = calloc ((size_t)h->node_size[n], sizeof (int))))
            return ddpi_error (DDP_ENOMEM, "out of memory");
        h->node_size[n] = 0;
    }
    for (r = 0; r < h->size; r++) {
        int nd = blobs[r].node;
        if (blobs[r].lrank != h->node_size[nd]
            || blobs[r].lsize != blobs[h->node_leader[nd]].lsize)
            return ddpi_error (DDP_EMISMATCH, "local ranks of node %d are not "
                               "0..%d in rank order", nd, blobs[r].lsize - 1);
        h->node_ranks[nd][h->node_size[nd]++] = r;
    }
    for (r = 0; r < h->lsize; r++) {
        if (h->node_ranks[h->node][r] != h->local_ranks[r])
            return ddpi_error (DDP_EMISMATCH, "local peers disagree with the "
                               "launcher");
        h->lpids[r] = blobs[h->local_ranks[r]].pid;
    }
    for (r = 0, n = 0; r < h->size; r++)
        if (blobs[r].host == blobs[h->rank].host)
            n++;
    h->spin_us = spin_default (n);
    return 0;
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
    h->node_leader = calloc (nn, sizeof (int));
    h->node_size = calloc (nn, sizeof (int));
    h->node_ranks = calloc (nn, sizeof (int *));
    h->sock = calloc (nn, sizeof (int));
    if (!h->local_ranks || !h->lpids || !h->pidfds || !h->rank_node
        || !h->rank_lrank || !h->node_leader || !h->node_size || !h->node_ranks
        || !h->sock)
        return ddpi_error (DDP_ENOMEM, "out of memory");
    memcpy (h->local_ranks, in->local_ranks, ls * sizeof (int));
    for (size_t i = 0; i < ls; i++)
        h->pidfds[i] = -1;
    for (size_t i = 0; i < nn; i++)
        h->sock[i] = -1;
    return 0;
}

static int host_create (struct bootstrap *b, const struct ddp_config *cfg,
                        void **ctxp)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    struct host_blob blob, *blobs = NULL;
    struct host_addr *addrs = NULL;
    size_t *off = NULL, *len = NULL;
    void *all = NULL;
    char err[256];
    struct host *h;
    int rc, n;

    if (!(h = calloc (1, sizeof (*h))))
        return ddpi_error (DDP_ENOMEM, "out of memory");
    h->rank = in->rank;
    h->size = in->size;
    h->lrank = in->local_rank;
    h->lsize = in->local_size;
    h->node = in->node_rank;
    h->nnodes = in->num_nodes;
    h->cfg = cfg;
    h->memfd = h->listen_fd = -1;
    h->relay = &host_tcp_relay;
    if ((rc = alloc_tables (h, in)) < 0)
        goto out;
    if (getrandom (&h->cookie, sizeof (h->cookie), 0) != sizeof (h->cookie))
        h->cookie = (uint64_t)getpid () * 0x9e3779b97f4a7c15ULL
                  ^ (uint64_t)(ddpi_now () * 1e9);
    memset (&blob, 0, sizeof (blob));
    blob.magic = BLOB_MAGIC;
    blob.pid = (int32_t)getpid ();
    blob.node = h->node;
    blob.lrank = h->lrank;
    blob.lsize = h->lsize;
    blob.memfd = -1;
    blob.host = machine_id ();
    if (h->lrank == 0) {
        if ((rc = host_shm_create (h)) < 0)
            goto out;
        blob.memfd = h->memfd;
        if (h->nnodes > 1 && (rc = host_tcp_listen (h, &blob.addr)) < 0)
            goto out;
    }
    off = calloc ((size_t)h->size, sizeof (size_t));
    len = calloc ((size_t)h->size, sizeof (size_t));
    blobs = calloc ((size_t)h->size, sizeof (*blobs));
    addrs = calloc ((size_t)h->nnodes, sizeof (*addrs));
    if (!off || !len || !blobs || !addrs) {
        rc = ddpi_error (DDP_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = bootstrap_exchange (b, &blob, sizeof (blob), &all, off, len, err,
                                  sizeof (err))) < 0) {
        ddpi_error (rc, "host backend setup exchange: %s", err);
        goto out;
    }
    if ((rc = check_blobs (h, all, off, len, blobs)) < 0
        || (rc = open_pidfds (h)) < 0)
        goto out;
    if (h->lrank != 0
        && (rc = host_shm_attach (h, h->lpids[0],
                                  blobs[h->local_ranks[0]].memfd)) < 0)
        goto out;
    for (n = 0; n < h->nnodes; n++)
        addrs[n] = blobs[h->node_leader[n]].addr;
    if (h->lrank == 0 && h->nnodes > 1) {
        if ((rc = host_tcp_connect (h, addrs)) < 0)
            goto out;
        if (!(h->scratch = malloc ((size_t)h->nnodes * h->res_bytes))) {
            rc = ddpi_error (DDP_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (h->lrank == 0 && (rc = host_shm_wait_attached (h)) < 0)
        goto out;
    ddpi_debug ("host: node %d/%d local %d/%d, %zu-byte slots, spin %u us%s",
                h->node, h->nnodes, h->lrank, h->lsize, h->slot_bytes,
                h->spin_us, h->nnodes > 1 && h->lrank == 0
                ? ", leader" : "");
    if (h->nnodes > 1) {
        h->leader_addr = addrs;
        addrs = NULL;
    }
    *ctxp = h;
    h = NULL;
    rc = 0;
out:
    free (all);
    free (off);
    free (len);
    free (blobs);
    free (addrs);
    if (h)
        host_destroy (h);
    return rc;
}

static void host_destroy (void *ctx)
{
    struct host *h = ctx;
    int i;

    if (!h)
        return;
    host_tcp_close (h);
    host_shm_destroy (h);
    for (i = 0; h->pidfds && i < h->lsize; i++)
        if (h->pidfds[i] >= 0)
            close (h->pidfds[i]);
    for (i = 0; h->node_ranks && i < h->nnodes; i++)
        free (h->node_ranks[i]);
    free (h->node_ranks);
    free (h->local_ranks);
    free (h->lpids);
    free (h->pidfds);
    free (h->rank_node);
    free (h->rank_lrank);
    free (h->node_leader);
    free (h->node_size);
    free (h->sock);
    free (h->leader_addr);
    free (h->scratch);
    free (h);
}

static inline void post (struct host *h, int which, uint64_t s)
{
    struct shm_flags *f = &h->flags[h->lrank];
    atomic_store_explicit (which == 0 ? &f->seq : which == 1 ? &f->red
                           : &f->fin, s, memory_order_release);
}

/* Start step s: wait until the bank it uses is free again. */
static int step_begin (struct host *h, uint64_t *sp)
{
    if (h->broken)
        return h->broken;
    *sp = ++h->seq;
    return host_wait_all (h, 0, *sp - 1);
}

static int host_barrier (void *ctx)
{
    struct host *h = ctx;
    uint64_t s = 0;
    int rc;

    if ((rc = step_begin (h, &s)) < 0)
        return rc;
    post (h, 0, s);
    if (h->nnodes == 1)
        return host_wait_all (h, 0, s);
    if (h->lrank == 0) {
        struct iovec *sv[h->nnodes];
        int sc[h->nnodes];
        void *rv[h->nnodes];
        size_t rl[h->nnodes];
        for (int n = 0; n < h->nnodes; n++) {
            sv[n] = NULL;
            sc[n] = 0;
            rv[n] = NULL;
            rl[n] = 0;
        }
        if ((rc = host_wait_all (h, 0, s)) < 0
            || (rc = host_tcp_xchg (h, s, sv, sc, rv, rl)) < 0)
            return rc;
        post (h, 2, s);
        return 0;
    }
    return host_wait_flag (h, 0, 2, s);
}

/* This rank's share [lo, hi) of n elements when the node splits a step. */
static void share (struct host *h, size_t n, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)h->lrank / (size_t)h->lsize;
    *hi = n * (size_t)(h->lrank + 1) / (size_t)h->lsize;
}

/* Reduce the node's slots of this step into dst (all n elements, or this
 * rank's share when split); src pointers are the slots at element lo. */
static void node_reduce (struct host *h, int bank, char *dst, size_t lo,
                         size_t n, size_t es, ddp_dtype_t dtype, ddp_op_t op)
{
    const void *src[h->lsize];
    for (int lr = 0; lr < h->lsize; lr++)
        src[lr] = host_slot (h, bank, lr) + lo * es;
    ddpi_reduce_many (dst, src, h->lsize, n, dtype, op);
}

/* Leaders: exchange the nodes' partials (this node's is send) and combine
 * them in node order into out (NULL: not wanted here; send == out is
 * fine); finish AVG.  A rank alone on its node (it leads it) calls this
 * straight from its buffers: no shared memory to go through, and the wire
 * protocol is the leaders' usual one, so nodes with more ranks take part
 * unchanged. */
static int leaders_combine (struct host *h, uint64_t s, const char *send,
                            char *out, size_t n, size_t es,
                            ddp_dtype_t dtype, ddp_op_t op)
{
    size_t bytes = n * es;
    struct iovec one = { (void *)send, bytes };
    struct iovec *sv[h->nnodes];
    int sc[h->nnodes];
    void *rv[h->nnodes];
    size_t rl[h->nnodes];
    const void *src[h->nnodes];
    char *dst = h->scratch + (size_t)h->node * h->res_bytes;
    int nd, rc;

    for (nd = 0; nd < h->nnodes; nd++) {
        sv[nd] = &one;
        sc[nd] = 1;
        rv[nd] = h->scratch + (size_t)nd * h->res_bytes;
        rl[nd] = bytes;
        src[nd] = nd == h->node ? (const void *)send : rv[nd];
    }
    if ((rc = host_tcp_xchg (h, s, sv, sc, rv, rl)) < 0)
        return rc;
    if (!out)
        return 0;
    ddpi_reduce_many (dst, src, h->nnodes, n, dtype, op);
    ddpi_reduce_finish (dst, n, dtype, op, h->size);
    memcpy (out, dst, bytes);
    return 0;
}

/* One step of (all)reduce: n elements of send into out (NULL: not wanted
 * here). */
static int reduce_step (struct host *h, const char *send, char *out, size_t n,
                        size_t es, ddp_dtype_t dtype, ddp_op_t op)
{
    size_t bytes = n * es, lo, hi;
    bool split = bytes >= SPLIT_MIN && h->lsize > 1;
    uint64_t s = 0;
    int bank, rc;
    char *result;

    if ((rc = step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    result = host_result (h, bank);
    if (h->lsize == 1)
        return leaders_combine (h, s, send, out, n, es, dtype, op);
    memcpy (host_slot (h, bank, h->lrank), send, bytes);
    post (h, 0, s);
    if (split) {
        share (h, n, &lo, &hi);
        if ((rc = host_wait_all (h, 0, s)) < 0)
            return rc;
        node_reduce (h, bank, result + lo * es, lo, hi - lo, es, dtype, op);
        if (h->nnodes == 1)
            ddpi_reduce_finish (result + lo * es, hi - lo, dtype, op, h->size);
        post (h, 1, s);
        if (h->nnodes == 1 || h->lrank != 0) {
            if ((rc = host_wait_all (h, 1, s)) < 0
                || (h->nnodes > 1 && (rc = host_wait_flag (h, 0, 2, s)) < 0))
                return rc;
            if (out)
                memcpy (out, result, bytes);
            return 0;
        }
        if ((rc = host_wait_all (h, 1, s)) < 0)
            return rc;
    }
    else if (h->nnodes == 1) {
        if (!out)
            return 0;
        if ((rc = host_wait_all (h, 0, s)) < 0)
            return rc;
        node_reduce (h, bank, out, 0, n, es, dtype, op);
        ddpi_reduce_finish (out, n, dtype, op, h->size);
        return 0;
    }
    else if (h->lrank != 0) {
        if ((rc = host_wait_flag (h, 0, 2, s)) < 0)
            return rc;
        if (out)
            memcpy (out, result, bytes);
        return 0;
    }
    else {
        if ((rc = host_wait_all (h, 0, s)) < 0)
            return rc;
        node_reduce (h, bank, result, 0, n, es, dtype, op);
    }
    /* The leader of a multi-node job, with the node's partial in result. */
    if ((rc = leaders_combine (h, s, result, result, n, es, dtype, op)) < 0)
        return rc;
    post (h, 2, s);
    if (out)
        memcpy (out, result, bytes);
    return 0;
}

static int reduce_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    size_t es = ddp_dtype_size (dtype);
    size_t chunk = h->slot_bytes / es, off, n;
    bool want = root < 0 || root == h->rank;
    int rc;

    if (h->size == 1) {
        if (recv != send)
            memcpy (recv, send, count * es);
        ddpi_reduce_finish (recv, count, dtype, op, 1);
        return 0;
    }
    for (off = 0; off < count; off += n) {
        n = count - off < chunk ? count - off : chunk;
        if ((rc = reduce_step (h, send + off * es, want ? recv + off * es
                               : NULL, n, es, dtype, op)) < 0)
            return rc;
    }
    return 0;
}

static int host_allreduce (void *ctx, const void *sendbuf, void *recvbuf,
                           size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    return reduce_impl (ctx, sendbuf, recvbuf, count, dtype, op, -1);
}

static int host_reduce (void *ctx, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    return reduce_impl (ctx, sendbuf, recvbuf, count, dtype, op, root);
}

static int bcast_step (struct host *h, char *buf, size_t bytes, int root)
{
    int root_node = h->rank_node[root], root_lr = h->rank_lrank[root];
    uint64_t s = 0;
    int bank, rc, nd;
    char *result;

    if ((rc = step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    result = host_result (h, bank);
    if (h->rank == root)
        memcpy (result, buf, bytes);
    post (h, 0, s);
    if (h->node == root_node) {
        if (h->rank != root) {
            if ((rc = host_wait_flag (h, root_lr, 0, s)) < 0)
                return rc;
            memcpy (buf, result, bytes);
        }
        if (h->lrank == 0 && h->nnodes > 1) {
            struct iovec one = { result, bytes };
            struct iovec *sv[h->nnodes];
            int sc[h->nnodes];
            void *rv[h->nnodes];
            size_t rl[h->nnodes];
            for (nd = 0; nd < h->nnodes; nd++) {
                sv[nd] = &one;
                sc[nd] = 1;
                rv[nd] = NULL;
                rl[nd] = (size_t)-1;
            }
            return host_tcp_xchg (h, s, sv, sc, rv, rl);
        }
        return 0;
    }
    if (h->lrank == 0) {
        struct iovec *sv[h->nnodes];
        int sc[h->nnodes];
        void *rv[h->nnodes];
        size_t rl[h->nnodes];
        for (nd = 0; nd < h->nnodes; nd++) {
            sv[nd] = NULL;
            sc[nd] = -1;
            rv[nd] = result;
            rl[nd] = nd == root_node ? bytes : (size_t)-1;
        }
        if ((rc = host_tcp_xchg (h, s, sv, sc, rv, rl)) < 0)
            return rc;
        post (h, 2, s);
    }
    else if ((rc = host_wait_flag (h, 0, 2, s)) < 0)
        return rc;
    memcpy (buf, result, bytes);
    return 0;
}

static int host_bcast (void *ctx, void *buf, size_t count, ddp_dtype_t dtype,
                       int root)
{
    struct host *h = ctx;
    size_t es = ddp_dtype_size (dtype), bytes = count * es, off, n;
    int rc;

    if (h->size == 1)
        return 0;
    for (off = 0; off < bytes; off += n) {
        n = bytes - off < h->res_bytes ? bytes - off : h->res_bytes;
        if ((rc = bcast_step (h, (char *)buf + off, n, root)) < 0)
            return rc;
    }
    return 0;
}

/* Copy step data of every rank (at result + r * bytes) to recv. */
static void gather_out (struct host *h, char *recv, const char *result,
                        size_t bytes, size_t rank_stride)
{
    for (int r = 0; r < h->size; r++)
        memcpy (recv + (size_t)r * rank_stride, result + (size_t)r * bytes,
                bytes);
}

static int leaders_gather (struct host *h, uint64_t s, int bank, size_t bytes,
                           int root)
{
    int root_node = root < 0 ? -1 : h->rank_node[root];
    struct iovec iov[h->lsize];
    struct iovec *sv[h->nnodes];
    int sc[h->nnodes];
    void *rv[h->nnodes];
    size_t rl[h->nnodes];
    char *result = host_result (h, bank);
    int nd, lr, r, rc;

    for (lr = 0; lr < h->lsize; lr++) {
        iov[lr].iov_base = host_slot (h, bank, lr);
        iov[lr].iov_len = bytes;
    }
    for (nd = 0; nd < h->nnodes; nd++) {
        bool to = root < 0 || nd == root_node;
        bool from = root < 0 || h->node == root_node;
        sv[nd] = iov;
        sc[nd] = to ? h->lsize : -1;
        rv[nd] = h->scratch + (size_t)nd * h->res_bytes;
        rl[nd] = from ? (size_t)h->node_size[nd] * bytes : (size_t)-1;
    }
    if ((rc = host_tcp_xchg (h, s, sv, sc, rv, rl)) < 0)
        return rc;
    if (root >= 0 && h->node != root_node)
        return 0;
    for (r = 0; r < h->size; r++) {
        int nd2 = h->rank_node[r], l = h->rank_lrank[r];
        const char *src = nd2 == h->node ? host_slot (h, bank, l)
                        : h->scratch + (size_t)nd2 * h->res_bytes
                          + (size_t)l * bytes;
        memcpy (result + (size_t)r * bytes, src, bytes);
    }
    return 0;
}

static int gather_step (struct host *h, const char *send, char *recv,
                        size_t bytes, size_t stride, int root)
{
    bool want = root < 0 || root == h->rank;
    uint64_t s = 0;
    int bank, rc, lr;

    if ((rc = step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    memcpy (host_slot (h, bank, h->lrank), send, bytes);
    post (h, 0, s);
    if (h->nnodes == 1) {
        if (!want)
            return 0;
        if ((rc = host_wait_all (h, 0, s)) < 0)
            return rc;
        for (lr = 0; lr < h->lsize; lr++)
            memcpy (recv + (size_t)h->local_ranks[lr] * stride,
                    host_slot (h, bank, lr), bytes);
        return 0;
    }
    if (h->lrank == 0) {
        if ((rc = host_wait_all (h, 0, s)) < 0
            || (rc = leaders_gather (h, s, bank, bytes, root)) < 0)
            return rc;
        post (h, 2, s);
    }
    else if (want && (rc = host_wait_flag (h, 0, 2, s)) < 0)
        return rc;
    if (want)
        gather_out (h, recv, host_result (h, bank), bytes, stride);
    return 0;
}

static int gather_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, int root)
{
    size_t es = ddp_dtype_size (dtype), bytes = count * es, off, n;
    size_t chunk = h->slot_bytes;
    int rc;

    if (h->size == 1) {
        if (recv && recv != send)
            memmove (recv, send, bytes);
        return 0;
    }
    if (h->nnodes > 1 && h->res_bytes / (size_t)h->size < chunk)
        chunk = h->res_bytes / (size_t)h->size;
    chunk -= chunk % es;
    for (off = 0; off < bytes; off += n) {
        n = bytes - off < chunk ? bytes - off : chunk;
        if ((rc = gather_step (h, send + off, recv ? recv + off : NULL, n,
                               bytes, root)) < 0)
            return rc;
    }
    return 0;
}

static int host_gather (void *ctx, const void *sendbuf, void *recvbuf,
                        size_t count, ddp_dtype_t dtype, int root)
{
    return gather_impl (ctx, sendbuf, recvbuf, count, dtype, root);
}

static int host_allgather (void *ctx, const void *sendbuf, void *recvbuf,
                           size_t count, ddp_dtype_t dtype)
{
    return gather_impl (ctx, sendbuf, recvbuf, count, dtype, -1);
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
    .bcast = host_bcast,
    .reduce = host_reduce,
    .allreduce = host_allreduce,
    .gather = host_gather,
    .allgather = host_allgather,
    .abort = host_abort,
};
