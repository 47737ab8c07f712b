/* cross.c - the host backend's collectives on several nodes, each in
 * three phases (host.h): in through the node segment, cross-node by the
 * lanes (algo.c), out through the segment.  coll.c starts and ends each
 * call and calls these once its call is begun (host.h, "cross.c"). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"
#include "host.h"
#include "node.h"
#include "reduce.h"
#include "schedule.h"

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
 * slot, lane m's piece at m x c elements, with the call's tag (node.h);
 * lane l (< La; w its block in the accumulation type) checks the tags and
 * reduces its piece over the node's slots. */
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
        if ((rc = node_step_begin (h, &s)) < 0)
            return rc;
        slot = host_slot (h, (int)(s & 1), h->lrank);
        for (int m = 0; m < La; m++) {
            piece (count, La, m, c, j, &lo, &n);
            memcpy (slot + (size_t)m * c * es, send + lo * es, n * es);
        }
        node_tag_post (h, s);
        host_post (h, 0, s);
        if (l < 0)
            continue;
        piece (count, La, l, c, j, &lo, &n);
        if ((rc = node_wait_all (h, 0, s)) < 0
            || (rc = node_tags_check (h, h->lsize, s)) < 0)
            return rc;
        node_reduce (h, (int)(s & 1), w + j * c * aes, (size_t)l * c, n,
                     dtype, op);
    }
    return 0;
}

/* Out phase: lane l (< La) writes its block of the result (mine, dtype)
 * through the result area, piece by piece, with the tag of the call;
 * every local rank with a dst checks the lanes' tags and copies every lane's pieces into it (not
 * its own block when that is where it already lies).  reuse: the first
 * piece goes in the last step of this call's in phase (nobody reads that
 * bank's result area then). */
static int result_out (struct host *h, const char *mine, char *dst,
                       size_t count, size_t es, int La, bool reuse)
{
    size_t c = h->res_bytes / ((size_t)La * es), lo, n;
    size_t steps = phase_steps (count, La, c);
    int l = h->lrank < La && mine ? h->lrank : -1, rc;
    uint64_t s = h->seq;

    for (size_t j = 0; j < steps; j++) {
        char *res;
        if ((j > 0 || !reuse) && (rc = node_step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (l >= 0) {
            piece (count, La, l, c, j, &lo, &n);
            memcpy (res + (size_t)l * c * es, mine + j * c * es, n * es);
            node_tag_post (h, s);
            host_post (h, 2, s);
        }
        if (!dst)
            continue;
        if ((rc = node_wait_first (h, La, 2, s)) < 0
            || (rc = node_tags_check (h, La, s)) < 0)
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

int host_allreduce_nodes (struct host *h, const char *send, char *recv,
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

int host_reduce_nodes (struct host *h, const char *send, char *recv,
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

/* What of the node's part [at, end) of a reduce-scatter's result (its
 * ranks' blocks in local rank order, count elements each) lies in a
 * lane's slice [blo, bhi) of all the elements (mine): into res, at its
 * place in the piece. */
static void part_of_slice (struct host *h, char *res, const char *mine,
                           size_t count, size_t at, size_t end, size_t blo,
                           size_t bhi, size_t es)
{
    for (size_t v = at, hi; v < end; v = hi) {
        size_t lr = v / count, glo, ghi;
        /* v is element g of all: in local rank lr's block. */
        size_t g = (size_t)h->local_ranks[lr] * count + (v - lr * count);
        hi = (lr + 1) * count < end ? (lr + 1) * count : end;
        glo = g > blo ? g : blo;
        ghi = g + (hi - v) < bhi ? g + (hi - v) : bhi;
        if (glo < ghi)
            memcpy (res + (v - at + (glo - g)) * es, mine + (glo - blo) * es,
                    (ghi - glo) * es);
    }
}

/* Out phase of a reduce-scatter: the node's part of the result, its
 * ranks' blocks (count elements each) in local rank order, goes through
 * the result area a piece a step, lane l (< La; mine: its slice [blo,
 * bhi) of the total elements) writing what of the piece lies in its
 * slice, with the call's tag; a rank whose block the piece touches checks
 * the lanes' tags and copies its part.  Nothing of other nodes' ranks
 * crosses the segment.  The first piece goes in the last step of the in
 * phase (nobody reads that bank's result area then). */
static int scatter_out (struct host *h, const char *mine, char *recv,
                        size_t count, size_t total, size_t es, int La)
{
    size_t c = h->res_bytes / es, part = (size_t)h->lsize * count;
    size_t my_lo = (size_t)h->lrank * count, blo = 0, bhi = 0;
    int l = h->lrank < La ? h->lrank : -1, rc;
    uint64_t s = h->seq;

    if (l >= 0)
        sched_block (total, La, l, &blo, &bhi);
    for (size_t at = 0; at < part; at += c) {
        size_t end = part - at < c ? part : at + c, lo, hi;
        char *res;
        if (at > 0 && (rc = node_step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (l >= 0) {
            part_of_slice (h, res, mine, count, at, end, blo, bhi, es);
            node_tag_post (h, s);
            host_post (h, 2, s);
        }
        lo = my_lo > at ? my_lo : at;
        hi = my_lo + count < end ? my_lo + count : end;
        if (lo >= hi)
            continue;
        if ((rc = node_wait_first (h, La, 2, s)) < 0
            || (rc = node_tags_check (h, La, s)) < 0)
            return rc;
        memcpy (recv + (lo - my_lo) * es, res + (lo - at) * es,
                (hi - lo) * es);
    }
    return 0;
}

/* A reduce-scatter across nodes: the all-reduce of the size x count
 * elements with its lanes, in phase and cross-node algorithm
 * (allreduce_nodes: the same result to the bit), but the algorithm's
 * allgather half moves only what the receiving nodes' ranks want
 * (algo_reduce_scatter), and the out phase only this node's blocks.  Each
 * lane works in scratch: recv holds one block, not a slice. */
int host_reduce_scatter_nodes (struct host *h, const char *send,
                               char *recv, size_t count, ddp_dtype_t dtype,
                               ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype), total = (size_t)h->size * count;
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    int La = active_lanes (h, total, es), rc;
    struct algo_want want = { 0, count };
    size_t bhi = 0;
    char *w = NULL, *out = NULL;

    if (h->lrank < La) {
        sched_block (total, La, h->lrank, &want.base, &bhi);
        w = host_scratch (h, 0, (bhi - want.base) * ddp_dtype_size (at));
        out = at == dtype ? w : host_scratch (h, 2, (bhi - want.base) * es);
        if (!w || !out)
            return DDP_ENOMEM;
    }
    if (h->lsize == 1) {
        ddpi_widen (w, send, total, dtype, op);
        if ((rc = algo_reduce_scatter (h, w, out, total, dtype, op,
                                       &want)) < 0)
            return rc;
        memmove (recv, out + (size_t)h->rank * count * es, count * es);
        return 0;
    }
    if ((rc = reduce_in (h, send, w, total, dtype, op, La)) < 0
        || (w && (rc = algo_reduce_scatter (h, w, out, bhi - want.base,
                                            dtype, op, &want)) < 0))
        return rc;
    return scatter_out (h, out, recv, count, total, es, La);
}

/* In phase of a bcast: the root (not lane 0) hands buf to lane 0, with
 * the call's tag (node.h). */
static int bcast_in (struct host *h, char *buf, size_t bytes, int root_lr)
{
    uint64_t s = 0;
    int rc;

    for (size_t off = 0; off < bytes; off += h->slot_bytes) {
        size_t n = bytes - off < h->slot_bytes ? bytes - off : h->slot_bytes;
        char *slot;
        if ((rc = node_step_begin (h, &s)) < 0)
            return rc;
        slot = host_slot (h, (int)(s & 1), root_lr);
        if (h->lrank == root_lr) {
            memcpy (slot, buf + off, n);
            node_tag_post (h, s);
        }
        host_post (h, 0, s);
        if (h->lrank != 0)
            continue;
        if ((rc = node_wait_flag (h, root_lr, 0, s)) < 0
            || (rc = node_tag_check (h, root_lr, s)) < 0)
            return rc;
        memcpy (buf + off, slot, n);
    }
    return 0;
}

int host_bcast_nodes (struct host *h, char *buf, size_t bytes, int root)
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

/* In phase of a gather: every local rank's bytes through its slot, with
 * the call's tag (node.h); lane 0 checks the tags and puts local rank
 * lr's at dst + lr x bytes (world: at its rank's place) and its own send
 * there first (unless it is there: dst may be send). */
static int gather_in (struct host *h, const char *send, char *dst,
                      size_t bytes, bool world)
{
    char *mine = h->lrank == 0 ? dst + (size_t)(world ? h->rank : 0) * bytes
                               : NULL;
    uint64_t s = 0;
    int rc;

    if (mine && mine != send)
        memmove (mine, send, bytes);
    for (size_t off = 0; off < bytes; off += h->slot_bytes) {
        size_t n = bytes - off < h->slot_bytes ? bytes - off : h->slot_bytes;
        if ((rc = node_step_begin (h, &s)) < 0)
            return rc;
        if (h->lrank != 0)
            memcpy (host_slot (h, (int)(s & 1), h->lrank), send + off, n);
        node_tag_post (h, s);
        host_post (h, 0, s);
        if (h->lrank != 0)
            continue;
        if ((rc = node_wait_all (h, 0, s)) < 0
            || (rc = node_tags_check (h, h->lsize, s)) < 0)
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
 * (world order) through the result area, with the call's tag, the
 * root checks it and copies the output. */
static int gather_out (struct host *h, const char *tb, char *recv,
                       size_t bytes, int rnode)
{
    size_t total = (size_t)h->size * bytes;
    uint64_t s = h->seq;
    int rc;

    for (size_t off = 0; off < total; off += h->res_bytes) {
        size_t n = total - off < h->res_bytes ? total - off : h->res_bytes;
        char *res;
        if (off > 0 && (rc = node_step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (h->lrank == 0) {
            if ((rc = gather_unpack (h, tb, bytes, rnode, res, off,
                                     off + n)) < 0)
                return rc;
            node_tag_post (h, s);
            host_post (h, 2, s);
        }
        if (!recv)
            continue;
        if ((rc = node_wait_flag (h, 0, 2, s)) < 0
            || (rc = node_tag_check (h, 0, s)) < 0)
            return rc;
        memcpy (recv + off, res, n);
    }
    return 0;
}

/* The buffer lane 0 gathers its subtree's data in (algo_gather's
 * order), without a copy where it can: a node of one rank that is a leaf
 * of the tree sends straight from send; a root on node 0 of a block
 * layout, where that order is the world's, gathers straight into recv.
 * Else the scratch.  NULL: out of memory. */
static char *gather_buf (struct host *h, const char *send, char *recv,
                         size_t bytes, int root, bool *in_recv)
{
    int rnode = h->rank_node[root];
    size_t need = algo_gather_bytes (h, bytes, rnode);

    *in_recv = false;
    if (h->lsize == 1 && need == bytes)
        return (char *)send;    /* only read: a leaf receives nothing */
    if (h->rank == root && rnode == 0 && h->block_layout) {
        *in_recv = true;
        return recv;
    }
    return host_scratch (h, 0, need);
}

int host_gather_nodes (struct host *h, const char *send, char *recv,
                       size_t bytes, int root)
{
    int rnode = h->rank_node[root], rc;
    bool in_recv = false;
    char *tb = NULL;

    if (h->lrank == 0
        && !(tb = gather_buf (h, send, recv, bytes, root, &in_recv)))
        return DDP_ENOMEM;
    if ((rc = gather_in (h, send, tb, bytes, false)) < 0)
        return rc;
    if (h->lrank == 0 && (rc = algo_gather (h, tb, bytes, rnode)) < 0)
        return rc;
    if (h->node != rnode || in_recv)
        return 0;
    /* A root that is lane 0 unpacks for itself: no out phase on the node
     * (every local rank takes the same steps). */
    if (h->rank_lrank[root] == 0)
        return h->rank == root ? gather_unpack (h, tb, bytes, rnode, recv, 0,
                                                (size_t)h->size * bytes)
                               : 0;
    return gather_out (h, tb, h->rank == root ? recv : NULL, bytes, rnode);
}

int host_allgather_nodes (struct host *h, const char *send, char *recv,
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
