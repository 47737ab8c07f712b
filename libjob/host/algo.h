/* algo.h - the cross-node algorithms (algo.c): what each lane sends to
 * whom, over the links (transport.h); a link's event becomes the fault's
 * DDP_E* code through fault.c.  Internal to libddp. */
#ifndef DDP_ALGO_H
#define DDP_ALGO_H

#include "host_core.h"

/* ---- algo.c: the cross-node algorithms, run by a lane on its slice ---- */

/* Each is called in a job of several nodes (N > 1) and returns 0 or a
 * DDP_E* code (after the fault was recorded). */

/* Every node's lane reaches this call before any leaves it. */
int algo_barrier (struct host *h);

/* count elements: w holds this node's partial in the accumulation type of
 * dtype/op (it is used as work space); out (dtype, may be w when the types
 * are the same) gets the reduction over every node, finished. */
int algo_allreduce (struct host *h, void *w, void *out, size_t count,
                    ddp_dtype_t dtype, ddp_op_t op);

/* Which ranks want which elements of a lane's slice in a reduce-scatter:
 * element x of the slice is element base + x of the call's (size blocks
 * of block elements, block r rank r's), so it goes to rank (base + x) /
 * block, on node h->rank_node[that]. */
struct algo_want {
    size_t base;
    size_t block;
};

/* As algo_allreduce() (the same algorithm for count and the same
 * arithmetic, so the same result to the bit), but out ends holding only
 * the elements that ranks of this node want (the rest is garbage): the
 * allgather half moves each element only towards the nodes that want it
 * (none further than its node; an element no later node wants is not
 * sent at all). */
int algo_reduce_scatter (struct host *h, void *w, void *out, size_t count,
                         ddp_dtype_t dtype, ddp_op_t op,
                         const struct algo_want *want);

/* As algo_allreduce(), the result only on node root; out is work space
 * of count elements (dtype) on the other nodes. */
int algo_reduce (struct host *h, void *w, void *out, size_t count,
                 ddp_dtype_t dtype, ddp_op_t op, int root);

/* bytes of buf from node root's lane to every node's. */
int algo_bcast (struct host *h, void *buf, size_t bytes, int root);

/* tb holds this node's data (node_size[node] x bytes) at its start, and
 * room for its subtree's nodes after it (algo_gather_bytes()); on node
 * root it ends holding every node's data, nodes in the order root, root+1,
 * ... (mod N), each node's ranks in local order. */
int algo_gather (struct host *h, void *tb, size_t bytes, int root);

/* The size algo_gather() needs at tb on this node. */
size_t algo_gather_bytes (struct host *h, size_t bytes, int root);

/* r holds every rank's bytes at r + rank x bytes (world order); on entry
 * this node's ranks' parts are filled in; on return every rank's. */
int algo_allgather (struct host *h, void *r, size_t bytes);

#endif /* DDP_ALGO_H */
