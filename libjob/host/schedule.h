/* schedule.h - who talks to whom, about which block, at each step of the host
 * backend's cross-node algorithms.  Pure functions of the node n, the node
 * count N and the step; no I/O.  Internal to libddp.
 *
 * Nodes are 0..N-1 (N >= 1).  "mod N" is the non-negative remainder.
 *
 * Algorithms and their peers (the links a node needs, sched_partners()):
 *   ring            n+1 and n-1
 *   dissemination   round k: to n+2^k, from n-2^k  (ceil(log2 N) rounds)
 *   binomial tree   rooted at r, relative rank rel = n-r mod N: the parent
 *                   is rel minus its lowest set bit, the children rel+2^k
 *                   for every 2^k below that bit (all 2^k < N for the root)
 *   Bruck           step k: to n-2^k, from n+2^k
 *   recursive doubling and halving: on p = 2^floor(log2 N) virtual ranks;
 *                   the rem = N-p extra nodes fold in first: for i < rem,
 *                   node 2i gives its data to node 2i+1 (virtual rank i) and
 *                   gets the result back at the end; node n >= 2 rem is
 *                   virtual rank n-rem.  Step i pairs virtual v with v^2^i.
 * All of these are n +- 2^k mod N or the recursive-doubling pairs and the
 * fold pairs: O(log N) partners per node, and the relation is symmetric.
 */
#ifndef DDP_SCHEDULE_H
#define DDP_SCHEDULE_H

#include <stddef.h>

/* The largest power of two <= n (n >= 1). */
int sched_pow2_floor (int n);

/* ceil(log2 n) for n >= 1 (0 for 1). */
int sched_log2_ceil (int n);

/* x mod N in 0..N-1 for any int x (N >= 1). */
int sched_mod (long x, int N);

/* Elements [*lo, *hi) of block b when count elements are cut into nb
 * blocks (0 <= b < nb): sizes differ by one at most, earlier blocks not
 * larger. */
void sched_block (size_t count, int nb, int b, size_t *lo, size_t *hi);

/* ---- The fold of recursive doubling/halving for any N. ---- */

/* Node n's virtual rank in 0..p-1, or -1 when n folds out (an even node
 * below 2 rem, which hands its data to n+1). */
int sched_vrank (int n, int N);

/* The node of virtual rank v (0 <= v < p). */
int sched_vnode (int v, int N);

/* The fold partner of n: n+1 for a node that folds out, n-1 for the odd
 * node it folds into, -1 for the others. */
int sched_fold_partner (int n, int N);

/* ---- Recursive halving reduce-scatter (and the reverse allgather). ---- */

/* Before step i (0 <= i <= log2 p) virtual rank v holds blocks
 * [*lo, *hi) of p (i = log2 p: after the last step, its one block, v).
 * At step i, with b = log2 p - 1 - i (the highest bit first), it keeps
 * the lower half of that range when bit b of v is 0, else the upper half,
 * and gives the other half to v^2^b (which holds the same range). */
void sched_halving_range (int v, int p, int i, int *lo, int *hi);

/* The block virtual rank v owns at the end of the halving: v. */
int sched_halving_owner (int v, int p);

/* ---- Ring: node n sends to n+1, receives from n-1. ---- */

/* Reduce-scatter step k (0 <= k < N-1): the block n sends and the block it
 * receives and combines with its own.  After the last step node n holds
 * the whole reduction of block n+1 mod N. */
void sched_ring_rs (int n, int N, int k, int *send_block, int *recv_block);

/* Allgather step k (0 <= k < N-1) when node n starts with block
 * n+shift mod N: the block it sends and the block it receives. */
void sched_ring_ag (int n, int N, int shift, int k, int *send_block,
                    int *recv_block);

/* ---- Binomial tree rooted at node root. ---- */

/* The parent of n, or -1 for the root. */
int sched_binom_parent (int n, int N, int root);

/* The children of n, at distances 1, 2, 4, ... (ascending), into child
 * (room for max); returns how many.  Child j's subtree is
 * sched_binom_size() nodes: n's own subtree is n, then child 0's, child
 * 1's, ... in relative order. */
int sched_binom_children (int n, int N, int root, int *child, int max);

/* The number of nodes in n's subtree (relative ranks rel .. rel+size-1). */
int sched_binom_size (int n, int N, int root);

/* ---- Bruck allgather: step k (2^k < N). ---- */

/* At step k node n sends the blocks of nodes n .. n+*count-1 (mod N) to
 * n-2^k and receives those of n+2^k .. n+2^k+*count-1 from n+2^k; *count
 * is min(2^k, N-2^k).  Returns the distance 2^k. */
int sched_bruck (int n, int N, int k, int *count);

/* ---- Dissemination barrier: round k (2^k < N). ---- */

/* Round k: node n sends to *to and receives from *from. */
void sched_dissem (int n, int N, int k, int *to, int *from);

/* ---- Links. ---- */

/* Every node any algorithm above makes n talk to, ascending, without n,
 * into out (room for max); returns how many (at most
 * sched_partners_max(N)). */
int sched_partners (int n, int N, int *out, int max);

/* An upper bound of sched_partners() for N nodes: 3 ceil(log2 N) + 3. */
int sched_partners_max (int N);

/* ---- Segments of a message, for pipelining. ---- */

/* A receive of total bytes cut into segments of seg bytes (the last one
 * shorter) went from done0 to done1 bytes: the segments it completed are
 * *first .. *first+return-1. */
int sched_segments_done (size_t total, size_t seg, size_t done0,
                         size_t done1, size_t *first);

#endif /* DDP_SCHEDULE_H */
