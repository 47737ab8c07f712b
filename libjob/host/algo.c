/* algo.c - the cross-node algorithms of the host backend (algo.h; host.h
 * has their costs), run by one lane on its buffers over its links
 * (transport.h); schedule.c says who talks to whom.  What a round of
 * messages reports (HOST_EVENT) goes to fault.c, which decides (run()).
 *
 * Tags: every message of a call carries (phase << 16 | step), so that a
 * message of another phase or step fails the call instead of being taken
 * for the one expected. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"
#include "algo.h"
#include "fault.h"
#include "reduce.h"
#include "schedule.h"
#include "transport.h"

enum {
    PH_BARRIER = 1, PH_FOLD, PH_DOUBLING, PH_HALVING, PH_HALVING_AG,
    PH_UNFOLD, PH_RING_RS, PH_RING_AG, PH_TREE, PH_GATHER, PH_SCATTER,
    PH_BRUCK,
};

#define TAG(phase, step) ((uint32_t)(phase) << 16 | (uint32_t)(step))

/* A round of messages (host_tcp_run()); an event it reports becomes the
 * fault's code. */
static int run (struct host *h, struct host_op *ops, int nops)
{
    return host_fault_rc (h, host_tcp_run (h, ops, nops));
}

/* The link to node n (a partner by construction of the schedules). */
static int link_to (struct host *h, int n)
{
    int i = host_tcp_link (h, n);

    if (i < 0)
        ddpi_error (DDP_ETRANSPORT, "internal error: node %d is not a "
                    "partner of node %d", n, h->node);
    return i < 0 ? DDP_ETRANSPORT : i;
}

/* An op on the link to node n; len is the sum of the iovecs. */
static int op_set (struct host *h, struct host_op *o, int n, bool send,
                   uint32_t tag, const struct iovec *iov, int iovcnt)
{
    int i = link_to (h, n);
    size_t len = 0;

    if (i < 0)
        return i;
    for (int k = 0; k < iovcnt; k++)
        len += iov[k].iov_len;
    *o = (struct host_op){ .link = i, .send = send, .tag = tag, .iov = iov,
                           .iovcnt = iovcnt, .len = len };
    return 0;
}

/* Send a (len bytes) to node to and receive b (blen bytes) from node from
 * at once; either node may be -1 (nothing that way). */
static int swap (struct host *h, int to, void *a, size_t len, int from,
                 void *b, size_t blen, uint32_t tag)
{
    struct iovec va = { a, len }, vb = { b, blen };
    struct host_op ops[2];
    int n = 0, rc;

    if (to >= 0 && (rc = op_set (h, &ops[n++], to, true, tag, &va, 1)) < 0)
        return rc;
    if (from >= 0 && (rc = op_set (h, &ops[n++], from, false, tag, &vb, 1)) < 0)
        return rc;
    return run (h, ops, n);
}

/* ------------------------------------------ a reduce-scatter's wants */

/* The nodes an allgather step of a reduce-scatter moves data towards (the
 * receiver and those it passes the data on to): what ranks of other
 * nodes want is left out (algo.h, struct algo_want). */
enum { TO_NODE, TO_GROUP, TO_RING };
struct to {
    int kind;
    int a, b;   /* TO_NODE: node a; TO_GROUP: the virtual ranks that agree
                   with virtual rank a from bit b up, and the nodes that
                   fold into them; TO_RING: nodes a+1 .. a+b (mod N) */
};

static bool to_has (const struct host *h, const struct to *t, int node)
{
    int N = h->nnodes, v;

    switch (t->kind) {
    case TO_NODE:
        return node == t->a;
    case TO_GROUP:
        if ((v = sched_vrank (node, N)) < 0)
            v = sched_vrank (sched_fold_partner (node, N), N);
        return v >> t->b == t->a >> t->b;
    default:
        v = sched_mod ((long)node - t->a, N);
        return v >= 1 && v <= t->b;
    }
}

/* The iovecs of elements [lo, hi) of buf (es bytes each) that the nodes
 * of t want: without want (an all-reduce) all of them, in one iovec
 * (empty or not); else the parts of ranks on those nodes, neighbours
 * joined.  *vp is one (a single iovec) or malloc'd (free() it when it is
 * not one).  Returns how many (0: nothing wanted), or DDP_ENOMEM. */
static int want_iov (struct host *h, const struct algo_want *want,
                     void *buf, size_t es, size_t lo, size_t hi,
                     const struct to *t, struct iovec *one,
                     struct iovec **vp)
{
    size_t cap, end;
    struct iovec *v = one;
    int k = 0;

    *vp = one;
    if (!want) {
        *one = (struct iovec){ (char *)buf + lo * es, (hi - lo) * es };
        return 1;
    }
    if (lo >= hi)
        return 0;
    cap = (want->base + hi - 1) / want->block
          - (want->base + lo) / want->block + 1;
    if (cap > 1 && !(v = calloc (cap, sizeof (*v)))) {
        ddpi_error (DDP_ENOMEM, "out of memory");
        return DDP_ENOMEM;
    }
    for (size_t x = lo; x < hi; x = end) {
        size_t r = (want->base + x) / want->block;
        char *p = (char *)buf + x * es;
        end = (r + 1) * want->block - want->base;
        end = end < hi ? end : hi;
        if (!to_has (h, t, h->rank_node[r]))
            continue;
        if (k && (char *)v[k - 1].iov_base + v[k - 1].iov_len == p)
            v[k - 1].iov_len += (end - x) * es;
        else
            v[k++] = (struct iovec){ p, (end - x) * es };
    }
    *vp = v;
    return k;
}

/* swap() within buf (es bytes an element): elements [slo, shi) to node
 * to, those the nodes of st want, and [rlo, rhi) from node from, those
 * the nodes of rt want (either node -1: nothing that way).  Without want
 * everything moves, as swap() moves it; with one, a side with nothing
 * wanted is left out (both ends compute the same). */
static int swap_want (struct host *h, const struct algo_want *want,
                      void *buf, size_t es, int to, size_t slo, size_t shi,
                      const struct to *st, int from, size_t rlo, size_t rhi,
                      const struct to *rt, uint32_t tag)
{
    struct iovec s1, r1, *sv = &s1, *rv = &r1;
    struct host_op ops[2];
    int ns = 0, nr = 0, n = 0, rc = 0;

    if (to >= 0 && (ns = want_iov (h, want, buf, es, slo, shi, st, &s1,
                                   &sv)) < 0)
        return ns;
    if (from >= 0 && (nr = want_iov (h, want, buf, es, rlo, rhi, rt, &r1,
                                     &rv)) < 0)
        rc = nr;
    if (rc == 0 && ns > 0)
        rc = op_set (h, &ops[n++], to, true, tag, sv, ns);
    if (rc == 0 && nr > 0)
        rc = op_set (h, &ops[n++], from, false, tag, rv, nr);
    if (rc == 0 && n > 0)
        rc = run (h, ops, n);
    if (sv != &s1)
        free (sv);
    if (rv != &r1)
        free (rv);
    return rc;
}

/* ------------------------------------------------------------- barrier */

int algo_barrier (struct host *h)
{
    int to, from, rc;
    char none = 0;

    for (int k = 0; (1L << k) < h->nnodes; k++) {
        sched_dissem (h->node, h->nnodes, k, &to, &from);
        if ((rc = swap (h, to, &none, 0, from, &none, 0,
                        TAG (PH_BARRIER, k))) < 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------- combine helpers */

/* What a received segment is combined with: dst[i] = recv[i] op dst[i]
 * when the received data comes first in the order (lower), else
 * dst[i] op recv[i]. */
struct combine {
    char *dst;
    const char *recv;
    size_t aes;
    ddp_dtype_t at;
    ddp_op_t op;
    bool recv_first;
};

static void combine_seg (void *arg, size_t off, size_t len)
{
    struct combine *c = arg;
    size_t n = len / c->aes;
    char *d = c->dst + off;
    const char *r = c->recv + off;

    if (c->recv_first)
        ddpi_reduce_op (d, r, d, n, c->at, c->op);
    else
        ddpi_reduce_op (d, d, r, n, c->at, c->op);
}

/* Receive n elements (accumulation type) from node from into scratch and
 * combine them into dst segment by segment as they arrive, while sending
 * slen bytes of sbuf to node to (-1: none). */
static int swap_combine (struct host *h, int to, const void *sbuf,
                         size_t slen, int from, struct combine *c, size_t n,
                         uint32_t tag)
{
    struct iovec vs = { (void *)sbuf, slen }, vr = { (void *)c->recv,
                                                     n * c->aes };
    struct host_op ops[2];
    size_t seg = h->tune.segment / c->aes * c->aes;
    int k = 0, rc;

    if ((rc = op_set (h, &ops[k++], from, false, tag, &vr, 1)) < 0)
        return rc;
    ops[0].seg = seg ? seg : c->aes;
    ops[0].on_seg = combine_seg;
    ops[0].arg = c;
    if (to >= 0 && (rc = op_set (h, &ops[k++], to, true, tag, &vs, 1)) < 0)
        return rc;
    return run (h, ops, k);
}

/* The accumulation element size of dtype/op and the finish of a result:
 * AVG's division by the world size, then the rounding to dtype. */
static size_t acc_size (ddp_dtype_t dtype, ddp_op_t op)
{
    return ddp_dtype_size (ddpi_acc_dtype (dtype, op));
}

static void finish (struct host *h, void *w, void *out, size_t n,
                    ddp_dtype_t dtype, ddp_op_t op)
{
    ddpi_reduce_finish (w, n, ddpi_acc_dtype (dtype, op), op, h->size);
    ddpi_narrow (out, w, n, dtype, op);
}

/* ----------------------------------------------- recursive doubling (+fold) */

/* A node that folds out: hand w to its odd neighbour, get the result
 * (with want: what this node's ranks want of it). */
static int fold_out (struct host *h, void *w, void *out, size_t count,
                     ddp_dtype_t dtype, ddp_op_t op,
                     const struct algo_want *want)
{
    struct iovec vs = { w, count * acc_size (dtype, op) }, r1, *vr;
    int f = sched_fold_partner (h->node, h->nnodes), rc, nr;
    struct to me = { TO_NODE, h->node, 0 };
    struct host_op ops[2];

    if ((nr = want_iov (h, want, out, ddp_dtype_size (dtype), 0, count, &me,
                        &r1, &vr)) < 0)
        return nr;
    if ((rc = op_set (h, &ops[0], f, true, TAG (PH_FOLD, 0), &vs, 1)) == 0
        && (nr == 0 || (rc = op_set (h, &ops[1], f, false, TAG (PH_UNFOLD, 0),
                                     vr, nr)) == 0))
        rc = run (h, ops, nr > 0 ? 2 : 1);
    if (vr != &r1)
        free (vr);
    return rc;
}

/* The odd neighbour takes the folded partial in first (it is the lower). */
static int fold_in (struct host *h, void *w, size_t count, ddp_dtype_t dtype,
                    ddp_op_t op)
{
    size_t aes = acc_size (dtype, op);
    char *scratch = host_scratch (h, 1, count * aes);
    struct combine c = { w, scratch, aes, ddpi_acc_dtype (dtype, op), op,
                         true };

    if (!scratch)
        return DDP_ENOMEM;
    return swap_combine (h, -1, NULL, 0, sched_fold_partner (h->node,
                                                             h->nnodes),
                         &c, count, TAG (PH_FOLD, 0));
}

/* The result to the node that folded out (with want: what its ranks
 * want of it). */
static int unfold (struct host *h, void *out, size_t count,
                   ddp_dtype_t dtype, const struct algo_want *want)
{
    int f = sched_fold_partner (h->node, h->nnodes);
    struct to them = { TO_NODE, f, 0 };

    return swap_want (h, want, out, ddp_dtype_size (dtype), f, 0, count,
                      &them, -1, 0, 0, NULL, TAG (PH_UNFOLD, 0));
}

static int doubling (struct host *h, void *w, void *out, size_t count,
                     ddp_dtype_t dtype, ddp_op_t op,
                     const struct algo_want *want)
{
    int N = h->nnodes, v = sched_vrank (h->node, N), p = sched_pow2_floor (N);
    size_t aes = acc_size (dtype, op);
    char *scratch;
    int rc, step = 0;

    if (v < 0)
        return fold_out (h, w, out, count, dtype, op, want);
    if (sched_fold_partner (h->node, N) >= 0
        && (rc = fold_in (h, w, count, dtype, op)) < 0)
        return rc;
    if (!(scratch = host_scratch (h, 1, count * aes)))
        return DDP_ENOMEM;
    for (int m = 1; m < p; m <<= 1, step++) {
        int peer = sched_vnode (v ^ m, N);
        if ((rc = swap (h, peer, w, count * aes, peer, scratch, count * aes,
                        TAG (PH_DOUBLING, step))) < 0)
            return rc;
        if (v & m)
            ddpi_reduce_op (w, scratch, w, count, ddpi_acc_dtype (dtype, op),
                            op);
        else
            ddpi_reduce_op (w, w, scratch, count, ddpi_acc_dtype (dtype, op),
                            op);
    }
    finish (h, w, out, count, dtype, op);
    if (sched_fold_partner (h->node, N) >= 0)
        return unfold (h, out, count, dtype, want);
    return 0;
}

/* --------------------------------------- recursive halving (Rabenseifner) */

/* Elements [*lo, *hi) of blocks [blo, bhi) of nb. */
static void blocks_span (size_t count, int nb, int blo, int bhi, size_t *lo,
                         size_t *hi)
{
    size_t a, b;

    sched_block (count, nb, blo, lo, &a);
    sched_block (count, nb, bhi - 1, &b, hi);
}

/* Step i of the halving for virtual rank v: the elements it keeps
 * [*klo, *khi) and gives [*glo, *ghi).  Returns whether v is the upper
 * of the pair (it keeps the upper half). */
static bool halving_spans (int v, int p, int i, size_t count, size_t *klo,
                           size_t *khi, size_t *glo, size_t *ghi)
{
    bool upper = v >> i & 1;
    int lo, hi, mid;

    sched_halving_range (v, p, i, &lo, &hi);
    mid = (lo + hi) / 2;
    blocks_span (count, p, upper ? mid : lo, upper ? hi : mid, klo, khi);
    blocks_span (count, p, upper ? lo : mid, upper ? mid : hi, glo, ghi);
    return upper;
}

static int halving (struct host *h, void *w, void *out, size_t count,
                    ddp_dtype_t dtype, ddp_op_t op,
                    const struct algo_want *want)
{
    int N = h->nnodes, v = sched_vrank (h->node, N), p = sched_pow2_floor (N);
    int steps = sched_log2_ceil (p), lo, hi, rc;
    size_t aes = acc_size (dtype, op), es = ddp_dtype_size (dtype);
    size_t klo, khi, glo, ghi;
    char *scratch;

    if (v < 0)
        return fold_out (h, w, out, count, dtype, op, want);
    if (sched_fold_partner (h->node, N) >= 0
        && (rc = fold_in (h, w, count, dtype, op)) < 0)
        return rc;
    /* The first half kept is the largest: count / 2 plus one per block. */
    if (!(scratch = host_scratch (h, 1, (count / 2 + (size_t)p) * aes)))
        return DDP_ENOMEM;
    for (int i = 0; i < steps; i++) {
        int peer = sched_vnode (v ^ (1 << i), N);
        bool upper = halving_spans (v, p, i, count, &klo, &khi, &glo, &ghi);
        struct combine c = { (char *)w + klo * aes, scratch, aes,
                             ddpi_acc_dtype (dtype, op), op, upper };
        if ((rc = swap_combine (h, peer, (char *)w + glo * aes,
                                (ghi - glo) * aes, peer, &c, khi - klo,
                                TAG (PH_HALVING, i))) < 0)
            return rc;
    }
    sched_halving_range (v, p, steps, &lo, &hi);
    blocks_span (count, p, lo, hi, &klo, &khi);
    finish (h, (char *)w + klo * aes, (char *)out + klo * es, khi - klo,
            dtype, op);
    /* After step i the data a node holds go on to the virtual ranks that
     * differ from it below bit i only: with want, what those want. */
    for (int i = steps - 1; i >= 0; i--) {
        int peer = sched_vnode (v ^ (1 << i), N);
        struct to them = { TO_GROUP, v ^ (1 << i), i }, us = { TO_GROUP, v,
                                                               i };
        halving_spans (v, p, i, count, &klo, &khi, &glo, &ghi);
        if ((rc = swap_want (h, want, out, es, peer, klo, khi, &them, peer,
                             glo, ghi, &us, TAG (PH_HALVING_AG, i))) < 0)
            return rc;
    }
    if (sched_fold_partner (h->node, N) >= 0)
        return unfold (h, out, count, dtype, want);
    return 0;
}

/* ------------------------------------------------------------------ ring */

/* Ring reduce-scatter on w: node n ends with block n+1 of N reduced over
 * every node, finished into out. */
static int ring_rs (struct host *h, void *w, void *out, size_t count,
                    ddp_dtype_t dtype, ddp_op_t op)
{
    int N = h->nnodes, n = h->node, next = sched_mod (n + 1, N);
    int prev = sched_mod (n - 1, N), sb, rb, rc;
    size_t aes = acc_size (dtype, op), slo, shi, rlo, rhi;
    size_t big = count / (size_t)N + 1;
    char *scratch = host_scratch (h, 1, big * aes);

    if (!scratch)
        return DDP_ENOMEM;
    for (int k = 0; k < N - 1; k++) {
        struct combine c;
        sched_ring_rs (n, N, k, &sb, &rb);
        sched_block (count, N, sb, &slo, &shi);
        sched_block (count, N, rb, &rlo, &rhi);
        c = (struct combine){ (char *)w + rlo * aes, scratch, aes,
                              ddpi_acc_dtype (dtype, op), op, true };
        if ((rc = swap_combine (h, next, (char *)w + slo * aes,
                                (shi - slo) * aes, prev, &c, rhi - rlo,
                                TAG (PH_RING_RS, k))) < 0)
            return rc;
    }
    sched_block (count, N, next, &rlo, &rhi);
    finish (h, (char *)w + rlo * aes,
            (char *)out + rlo * ddp_dtype_size (dtype), rhi - rlo, dtype, op);
    return 0;
}

/* Ring allgather of the N blocks of buf (count elements of es bytes),
 * node n starting with block n+shift.  root >= 0: node root has every
 * block already (a bcast), so nothing is sent to it: its predecessor
 * only receives, and the root only sends, (N - 1)/N of the buffer less
 * on the wire and through the root's memory.  want (a reduce-scatter,
 * root < 0): a block sent at step k goes on to the N - 1 - k nodes after
 * the receiver, so only what they want of it is sent. */
static int ring_ag (struct host *h, void *buf, size_t count, size_t es,
                    int shift, int root, const struct algo_want *want)
{
    int N = h->nnodes, n = h->node, sb, rb, rc;
    int to = sched_mod (n + 1, N), from = sched_mod (n - 1, N);
    size_t slo, shi, rlo, rhi;

    if (root >= 0 && to == root)
        to = -1;
    if (n == root)
        from = -1;
    for (int k = 0; k < N - 1; k++) {
        struct to st = { TO_RING, n, N - 1 - k }, rt = { TO_RING, from,
                                                         N - 1 - k };
        sched_ring_ag (n, N, shift, k, &sb, &rb);
        sched_block (count, N, sb, &slo, &shi);
        sched_block (count, N, rb, &rlo, &rhi);
        if ((rc = swap_want (h, want, buf, es, to, slo, shi, &st, from, rlo,
                             rhi, &rt, TAG (PH_RING_AG, k))) < 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ allreduce */

/* Below DDP_SMALL_MAX bytes (or fewer elements than nodes: some blocks
 * would be empty) the latency algorithms are used. */
static bool small (struct host *h, size_t count, size_t es)
{
    return count * es < h->tune.small_max || count < (size_t)h->nnodes;
}

/* The bytes from which a ring pays on this job's N nodes, for a threshold
 * base measured where the ring has at most one step more than the
 * logarithmic algorithm it replaces (N <= 4): base x (N - 1 - ceil(log2
 * N)), the ring's extra steps.  A ring step costs one latency alpha
 * whatever the size, and what the ring saves grows with the bytes (less
 * traffic than a tree, reduction overlapped with the transfer), so its
 * break-even size grows with its extra steps (doc/scaling.md): on 1024
 * nodes the ring starts at 1013 x base, where a tree's log2 N steps no
 * longer cost more than the ring's N - 1. */
static size_t ring_from (struct host *h, size_t base)
{
    long extra = (long)h->nnodes - 1 - sched_log2_ceil (h->nnodes);

    return base * (size_t)(extra > 1 ? extra : 1);
}

/* Extra ring steps that DDP_RING_MIN's bytes pay for, against recursive
 * halving (allreduce). */
#define HALVING_STEPS_PER_BASE 8

/* The bytes from which allreduce takes the ring rather than recursive
 * halving: base x max(1, extra / 8), extra = N - 1 - ceil(log2 N).  Both
 * move the same bytes, so only the ring's extra latencies count against
 * it, and far less than against a tree (ring_from): measured (doc/
 * scaling.md), on links shaped to 200 Mbit/s halving reached 0.60-0.77 of
 * the link at 4 and 16 MiB on 8 and 16 nodes (a node's link takes the
 * last partner's tail and the next one's burst at once) and the ring
 * 0.96; on loopback the two were even at 4 MiB on 8 and 16 nodes.  So 4
 * MiB up to 16 nodes, 12 MiB on 32, 506 MiB on 1024. */
static size_t ring_from_halving (struct host *h, size_t base)
{
    long extra = (long)h->nnodes - 1 - sched_log2_ceil (h->nnodes);
    long k = extra / HALVING_STEPS_PER_BASE;

    return base * (size_t)(k > 1 ? k : 1);
}

/* algo_allreduce(), or with want algo_reduce_scatter(): the same
 * algorithm and arithmetic, the allgather half moving only what is
 * wanted. */
static int allreduce_want (struct host *h, void *w, void *out, size_t count,
                           ddp_dtype_t dtype, ddp_op_t op,
                           const struct algo_want *want)
{
    int rc;

    if (small (h, count, ddp_dtype_size (dtype)))
        return doubling (h, w, out, count, dtype, op, want);
    if (count * ddp_dtype_size (dtype)
        < ring_from_halving (h, h->tune.ring_min))
        return halving (h, w, out, count, dtype, op, want);
    if ((rc = ring_rs (h, w, out, count, dtype, op)) < 0)
        return rc;
    return ring_ag (h, out, count, ddp_dtype_size (dtype), 1, -1, want);
}

int algo_allreduce (struct host *h, void *w, void *out, size_t count,
                    ddp_dtype_t dtype, ddp_op_t op)
{
    return allreduce_want (h, w, out, count, dtype, op, NULL);
}

int algo_reduce_scatter (struct host *h, void *w, void *out, size_t count,
                         ddp_dtype_t dtype, ddp_op_t op,
                         const struct algo_want *want)
{
    return allreduce_want (h, w, out, count, dtype, op, want);
}

/* --------------------------------------------------------------- reduce */

/* Binomial tree reduce to node root: children's partials come in, in
 * relative order after this node's own. */
static int tree_reduce (struct host *h, void *w, void *out, size_t count,
                        ddp_dtype_t dtype, ddp_op_t op, int root)
{
    int N = h->nnodes, child[32], nc, parent, rc;
    size_t aes = acc_size (dtype, op);
    char *scratch = host_scratch (h, 1, count * aes);

    if (!scratch)
        return DDP_ENOMEM;
    nc = sched_binom_children (h->node, N, root, child, 32);
    for (int j = 0; j < nc; j++) {
        struct combine c = { w, scratch, aes, ddpi_acc_dtype (dtype, op), op,
                             false };
        if ((rc = swap_combine (h, -1, NULL, 0, child[j], &c, count,
                                TAG (PH_TREE, 0))) < 0)
            return rc;
    }
    if ((parent = sched_binom_parent (h->node, N, root)) >= 0)
        return swap (h, parent, w, count * aes, -1, NULL, 0, TAG (PH_TREE, 0));
    finish (h, w, out, count, dtype, op);
    return 0;
}

/* The iovecs (at most 2) of the cyclic block range first..first+cnt-1 (mod
 * nb) of buf (count elements of es bytes).  Returns how many. */
static int block_iov (void *buf, size_t count, size_t es, int nb, int first,
                      int cnt, struct iovec *v)
{
    size_t lo, hi;
    int k = 0, end = first + cnt;

    if (cnt <= 0)
        return 0;
    if (end > nb) {
        blocks_span (count, nb, first, nb, &lo, &hi);
        v[k++] = (struct iovec){ (char *)buf + lo * es, (hi - lo) * es };
        first = 0;
        end -= nb;
    }
    blocks_span (count, nb, first, end, &lo, &hi);
    v[k++] = (struct iovec){ (char *)buf + lo * es, (hi - lo) * es };
    return k;
}

/* Binomial gather of the blocks node m owns (block m+shift, one per node)
 * of out to node root: each node sends its subtree's blocks up at once. */
static int tree_gather_blocks (struct host *h, void *out, size_t count,
                               size_t es, int root, int shift)
{
    int N = h->nnodes, child[32], nc, parent, rc, k = 0;
    struct iovec v[2 * 33];
    struct host_op ops[33];

    nc = sched_binom_children (h->node, N, root, child, 32);
    for (int j = 0; j < nc; j++) {
        int vc = block_iov (out, count, es, N, sched_mod (child[j] + shift, N),
                            sched_binom_size (child[j], N, root), &v[2 * j]);
        if ((rc = op_set (h, &ops[k++], child[j], false, TAG (PH_GATHER, 0),
                          &v[2 * j], vc)) < 0)
            return rc;
    }
    if ((rc = run (h, ops, k)) < 0)
        return rc;
    if ((parent = sched_binom_parent (h->node, N, root)) < 0)
        return 0;
    k = block_iov (out, count, es, N, sched_mod (h->node + shift, N),
                   sched_binom_size (h->node, N, root), v);
    if ((rc = op_set (h, &ops[0], parent, true, TAG (PH_GATHER, 0), v, k)) < 0)
        return rc;
    return run (h, ops, 1);
}

int algo_reduce (struct host *h, void *w, void *out, size_t count,
                 ddp_dtype_t dtype, ddp_op_t op, int root)
{
    int rc;

    if (small (h, count, ddp_dtype_size (dtype))
        || count * ddp_dtype_size (dtype) < ring_from (h, h->tune.small_max))
        return tree_reduce (h, w, out, count, dtype, op, root);
    if ((rc = ring_rs (h, w, out, count, dtype, op)) < 0)
        return rc;
    return tree_gather_blocks (h, out, count, ddp_dtype_size (dtype), root,
                               1);
}

/* ---------------------------------------------------------------- bcast */

/* Binomial tree from node root: from the parent, then to the children,
 * the largest subtree first, all at once. */
static int tree_bcast (struct host *h, void *buf, size_t bytes, int root)
{
    int N = h->nnodes, child[32], nc, parent, rc, k = 0;
    struct iovec v = { buf, bytes };
    struct host_op ops[32];

    if ((parent = sched_binom_parent (h->node, N, root)) >= 0
        && (rc = swap (h, -1, NULL, 0, parent, buf, bytes, TAG (PH_TREE, 0)))
           < 0)
        return rc;
    nc = sched_binom_children (h->node, N, root, child, 32);
    for (int j = nc - 1; j >= 0; j--)
        if ((rc = op_set (h, &ops[k++], child[j], true, TAG (PH_TREE, 0), &v,
                          1)) < 0)
            return rc;
    return run (h, ops, k);
}

/* Binomial scatter of the N blocks of buf from node root: node m gets
 * block m (and its subtree's). */
static int tree_scatter (struct host *h, void *buf, size_t bytes, int root)
{
    int N = h->nnodes, child[32], nc, parent, rc, k = 0, n = h->node;
    struct iovec v[2 * 33];
    struct host_op ops[33];

    if ((parent = sched_binom_parent (n, N, root)) >= 0) {
        k = block_iov (buf, bytes, 1, N, n, sched_binom_size (n, N, root), v);
        if ((rc = op_set (h, &ops[0], parent, false, TAG (PH_SCATTER, 0), v,
                          k)) < 0
            || (rc = run (h, ops, 1)) < 0)
            return rc;
        k = 0;
    }
    nc = sched_binom_children (n, N, root, child, 32);
    for (int j = nc - 1; j >= 0; j--) {
        int vc = block_iov (buf, bytes, 1, N, child[j],
                            sched_binom_size (child[j], N, root), &v[2 * j]);
        if ((rc = op_set (h, &ops[k++], child[j], true, TAG (PH_SCATTER, 0),
                          &v[2 * j], vc)) < 0)
            return rc;
    }
    return run (h, ops, k);
}

int algo_bcast (struct host *h, void *buf, size_t bytes, int root)
{
    int rc;

    if (h->nnodes == 2 || small (h, bytes, 1)
        || bytes < ring_from (h, 2 * (size_t)h->tune.small_max))
        return tree_bcast (h, buf, bytes, root);
    if ((rc = tree_scatter (h, buf, bytes, root)) < 0)
        return rc;
    return ring_ag (h, buf, bytes, 1, 0, root, NULL);
}

/* --------------------------------------------------------------- gather */

/* Bytes of the nodes at relative ranks rel .. rel+cnt-1 from root. */
static size_t nodes_bytes (struct host *h, size_t bytes, int root, int rel,
                           int cnt)
{
    size_t sum = 0;

    for (int j = 0; j < cnt; j++)
        sum += (size_t)h->node_size[sched_mod ((long)root + rel + j,
                                               h->nnodes)];
    return sum * bytes;
}

size_t algo_gather_bytes (struct host *h, size_t bytes, int root)
{
    int rel = sched_mod ((long)h->node - root, h->nnodes);

    return nodes_bytes (h, bytes, root, rel,
                        sched_binom_size (h->node, h->nnodes, root));
}

int algo_gather (struct host *h, void *tb, size_t bytes, int root)
{
    int N = h->nnodes, child[32], nc, parent, rc, k = 0;
    int rel = sched_mod ((long)h->node - root, N);
    size_t off = (size_t)h->node_size[h->node] * bytes;
    struct iovec v[33];
    struct host_op ops[33];

    nc = sched_binom_children (h->node, N, root, child, 32);
    for (int j = 0; j < nc; j++) {
        int crel = sched_mod ((long)child[j] - root, N);
        size_t len = nodes_bytes (h, bytes, root, crel,
                                  sched_binom_size (child[j], N, root));
        v[j] = (struct iovec){ (char *)tb + off, len };
        if ((rc = op_set (h, &ops[k++], child[j], false, TAG (PH_GATHER, 0),
                          &v[j], 1)) < 0)
            return rc;
        off += len;
    }
    if ((rc = run (h, ops, k)) < 0)
        return rc;
    if ((parent = sched_binom_parent (h->node, N, root)) < 0)
        return 0;
    (void)rel;
    return swap (h, parent, tb, off, -1, NULL, 0, TAG (PH_GATHER, 0));
}

/* ------------------------------------------------------------ allgather */

/* The iovecs of the data of the cnt nodes first, first+1, ... (mod N) in
 * r (world order, bytes per rank), into *vp (malloc'd, free() it).
 * Returns how many, or DDP_ENOMEM. */
static int nodes_iov (struct host *h, void *r, size_t bytes, int first,
                      int cnt, struct iovec **vp)
{
    int N = h->nnodes, k = 0, cap = 0;
    struct iovec *v;

    for (int j = 0; j < cnt; j++)
        cap += h->block_layout ? 1 : h->node_size[sched_mod (first + j, N)];
    if (!(v = calloc ((size_t)(cap ? cap : 1), sizeof (*v)))) {
        /* The code itself, not ddpi_error's value: gcc -fanalyzer cannot
         * see that one is negative and follows *out as set. */
        ddpi_error (DDP_ENOMEM, "out of memory");
        return DDP_ENOMEM;
    }
    for (int j = 0; j < cnt; j++) {
        int m = sched_mod (first + j, N);
        int parts = h->block_layout ? 1 : h->node_size[m];
        size_t len = h->block_layout ? (size_t)h->node_size[m] * bytes : bytes;
        for (int i = 0; i < parts; i++) {
            char *p = (char *)r + (size_t)h->node_ranks[m][i] * bytes;
            /* Consecutive nodes in a block layout join up. */
            if (k && (char *)v[k - 1].iov_base + v[k - 1].iov_len == p)
                v[k - 1].iov_len += len;
            else
                v[k++] = (struct iovec){ p, len };
        }
    }
    *vp = v;
    return k;
}

/* One step: send the data of nodes sf.. (sc of them) to node to, receive
 * that of nodes rf.. (rc of them) from node from. */
static int nodes_swap (struct host *h, void *r, size_t bytes, int to, int sf,
                       int sc, int from, int rf, int rcnt, uint32_t tag)
{
    struct iovec *sv = NULL, *rv = NULL;
    struct host_op ops[2];
    int ns, nr, rc;

    if ((ns = nodes_iov (h, r, bytes, sf, sc, &sv)) < 0)
        return ns;
    if ((nr = nodes_iov (h, r, bytes, rf, rcnt, &rv)) < 0) {
        free (sv);
        return nr;
    }
    if ((rc = op_set (h, &ops[0], to, true, tag, sv, ns)) == 0
        && (rc = op_set (h, &ops[1], from, false, tag, rv, nr)) == 0)
        rc = run (h, ops, 2);
    free (sv);
    free (rv);
    return rc;
}

int algo_allgather (struct host *h, void *r, size_t bytes)
{
    int N = h->nnodes, n = h->node, rc;

    if ((size_t)h->size * bytes < ring_from (h, h->tune.small_max)) {
        for (int k = 0; (1L << k) < N; k++) {
            int cnt, dist = sched_bruck (n, N, k, &cnt);
            if ((rc = nodes_swap (h, r, bytes, sched_mod (n - dist, N), n, cnt,
                                  sched_mod (n + dist, N),
                                  sched_mod (n + dist, N), cnt,
                                  TAG (PH_BRUCK, k))) < 0)
                return rc;
        }
        return 0;
    }
    for (int k = 0; k < N - 1; k++) {
        int sb, rb;
        sched_ring_ag (n, N, 0, k, &sb, &rb);
        if ((rc = nodes_swap (h, r, bytes, sched_mod (n + 1, N), sb, 1,
                              sched_mod (n - 1, N), rb, 1,
                              TAG (PH_RING_AG, k))) < 0)
            return rc;
    }
    return 0;
}
