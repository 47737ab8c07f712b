/* host.h - the host backend: its design (below), and the top layer's
 * header (coll.c's entry points).  Internal to libddp.  The files, top
 * down (doc/host-backend.md draws them; calls go down, never up):
 *
 *   host.c    the backend's entry: set-up, counters, destroy, abort
 *   coll.c    the collectives' entry points, a call's start and end,
 *             the straggler report, a rank alone (host.h)
 *   cross.c   a collective on several nodes in three phases (below)
 *   algo.c    the cross-node algorithms over the links (algo.h;
 *             schedule.c: who talks to whom)
 *   node.c    a call's steps within one node: the segment's slots and
 *             banks, single copy, the waits' codes (node.h)
 *   fault.c   fault policy: what a reported event means, what the user
 *             is told, the swap of lists after a timeout (fault.h)
 *   shm.c     transport: the node's segment, waiting on its flags, single
 *             copy between local ranks
 *   tcp.c     transport: frames, rounds of messages, their deadline
 *   mesh.c    transport: making the links at init (tcp.h: their state)
 *   flood.c   transport: fault records over the links (the relay)
 *   record.c  the fault record as data: claim, merge (record.h)
 *   host_core.h  struct host, the segment's layout, the event a
 *             transport reports: the bottom
 * The transport reports what it saw (h->ev, HOST_EVENT); the layer that
 * called it hands that to fault.c, which decides.  test/deps.t checks the
 * calls between the objects, tests/t0011-layers.t the includes.
 *
 * Within a node.  Ranks of a node share one memory segment made by local
 * rank 0 (a memfd: it has no name, so nothing is left behind even after
 * kill -9; the others open it through /proc/PID/fd/FD once, during init).
 * Work advances in node-local steps; every local rank numbers its steps the
 * same way (seq).  Each local rank owns one cache line of flags:
 *   seq  - "I entered step s and my contribution to it is in my slot";
 *   red  - "my share of the node reduction of step s is done" (one node);
 *   fin  - "my part of the result of step s is in the result area";
 *   beat - bumped while this rank makes progress with other nodes, so a
 *          local rank waiting for its result does not time out while data
 *          still flows.
 * Data live in two banks used alternately (bank = s & 1), each with one
 * slot per local rank and a result area: before writing a bank at step s
 * a rank waits until every local rank has seq >= s - 1, i.e. has finished
 * step s - 2, the last step that used that bank.
 *
 * Agreement: every call is agreed on in the call itself.  A rank
 * describes its call once at entry (coll.c: struct host_desc, its kind,
 * dtype, count, op and root, and a 24-bit signature of it, kind and dtype
 * exact) and keeps its last four descriptions in a line of its flags that
 * no one polls (desc).  Everything a rank posts for its node-mates opens
 * with or comes with a tag of the step and that signature: a ring entry,
 * a bank step's area, or the polled line's tag[s & 1] (every step that
 * posts seq with data for others, a barrier's too); every reader checks
 * the tag it reads anyway, in the cache line it reads anyway, and fails
 * the call with DDP_EMISMATCH on a difference, naming both calls (the
 * other's from its desc line).  Frames between nodes carry the whole
 * description, compared by the receiver.  The fault record (FAULT_MISMATCH)
 * then fails the call on every rank.  A rank that reads nothing from the
 * others in a call (a bcast's root, a gather's sender: they run ahead on
 * one node) fails a later call instead.  Where no rank reads anything
 * (each rank its own bcast root), the trail does it (trail.h): the
 * signature and the frames also carry a digest of every earlier call,
 * so the next call in which a rank reads another's tag or frame fails,
 * naming that earlier call, and ddp_finalize at the latest
 * (doc/host-backend.md, "the trail"); DDP_CHECK's vote (core) compares
 * every call before it runs.
 *
 * The rings (one node only): a bcast or gather of at most HOST_RING_BYTES
 * (512) a rank goes through the writer's own ring (16 KiB a local rank)
 * instead of a bank: each call's entry (an 8-byte tag, its step, size and
 * the call's signature, then the data) follows the one before, rounded up to 16 bytes, so that
 * small entries share cache lines (a reader takes one miss for four 8-byte
 * calls), and entries over 64 bytes take whole lines.  Every rank moves a
 * cursor per ring through the same calls, so all agree where an entry is;
 * ranks that pass different counts move theirs apart, and the reader that
 * finds another tag than it expects fails the call with DDP_EMISMATCH
 * (from the tag's size and signature it tells what the writer passed
 * where the writer went on).
 * The other one-node bcast and gather paths tag their data too (node.c:
 * a bank step's area opens with the tag, single copy and the inline
 * allgather post it in the writer's polled flags, tag[s & 1]), so that
 * counts which put ranks on different paths fail the same way.
 * Before writing a line its entry opens, a writer waits until every local
 * rank has left the line (entered the step after the last one that wrote
 * it in the lap before), and no rank runs more than HOST_RING_KMAX - 1
 * (63) steps ahead of another.  A bcast's root
 * and a gather's senders so return many calls ahead of their readers, as
 * an MPI library's eager sends do (with the banks a rank is never more
 * than one step ahead: every back-to-back call cost a round trip of
 * cache lines).
 * Inline (one node only): a reduction step or an allgather of at most
 * HOST_INLINE_BYTES (16) a rank travels in the writer's polled flag line
 * (inl[s & 1], written before seq, under the banks' rule): a reader that
 * sees seq has the data in the same cache line, one miss instead of two.
 * A wait for seq (node.c) keeps the lowest seq it saw, and the last seq of
 * the one rank it waited for: a rank reads its node-mates' flags only
 * when that does not answer (in the ring: when its lead is used up).
 *
 * Reduce-scatter (one node): each rank reduces only its own block, in
 * local rank order as an all-reduce does: through the slots, every rank
 * putting a piece of every block in its slot a step (node.c), or, from
 * 256 KiB of send, by single copy from the others' sends; a rank reads
 * nothing of the other blocks.
 *
 * Single copy (one node only): a bcast of 16 KiB to 32 MiB and a gather
 * or allgather of 8 KiB a rank or more go in one step without the banks:
 * each rank posts the address of its buffer (flags' addr) with seq; a
 * rank that wants another's data reads it from that process
 * (process_vm_readv) and posts red; a rank returns when every rank that
 * reads from it has.  An all-reduce of 256 KiB or more posts its recv
 * too (addr2): each rank reduces its share of the elements from the
 * others' sends into its recv (red), then reads the others' shares from
 * their recvs (fin), and returns when every rank has.  The node votes
 * once, at its first such call, in a
 * step of its own: each rank probes every node-mate's memory at an
 * address offered at set-up and votes (flags' cma); one no (or
 * DDP_CMA=0) turns it off for the node.
 *
 * Set-up: one sparse bootstrap round (host.c has its cost per rank: the
 * node's P - 1 blobs, rank 0's, the lanes of the O(log N) partner nodes;
 * the layout comes from the launcher without an exchange).
 *
 * Across nodes: lanes.  L = min(ranks per node over all nodes, DDP_LANES)
 * lanes; local rank l < L of every node is lane l, linked to lane l of its
 * partner nodes (sched_partners(): n +- 2^k, the recursive-doubling pairs,
 * the fold pair; O(log N) links per lane, made at init by non-blocking
 * connects bounded by DDP_TIMEOUT, lower node connecting to higher).  A
 * collective on several nodes runs in three phases:
 *   in     node-local steps through the slots: each local rank copies its
 *          data in; each active lane reduces (or gathers) its slice of
 *          every rank's data into its own buffer;
 *   cross  each active lane runs the cross-node algorithm on its whole
 *          slice, once: no chunking, so the number of messages depends on
 *          N and the algorithm, not on the buffer or the world size;
 *   out    node-local steps through the result area: each active lane
 *          writes its slice of the result, every local rank copies it out.
 * Reductions use La = min(L, bytes / DDP_LANE_MIN) lanes, each on a
 * 1/La slice of the elements, so a node's reduction work and its traffic
 * are spread over La cores and connections; the other collectives use
 * lane 0.  A node with one rank skips the in and out phases (its buffers
 * are the lane's).  One node alone reduces in the segment, every local
 * rank a share of each step.
 *
 * Cross-node algorithms (algo.c), by bytes B per lane and node count N,
 * with the thresholds DDP_SMALL_MAX and DDP_RING_MIN; a threshold that
 * selects a ring instead of a tree (SMALL_MAX for reduce, bcast,
 * allgather) is multiplied by max(1, N - 1 - ceil(log2 N)) (from 6 nodes
 * on), the ring's extra steps, so no ring runs where its N - 1 latencies
 * cost more than it saves; RING_MIN (the ring instead of halving, which
 * moves the same bytes) by max(1, that / 8) (from 32 nodes on)
 * (doc/scaling.md):
 *   barrier    dissemination: ceil(log2 N) rounds of one empty message
 *   allreduce  B < SMALL_MAX: recursive doubling (fold for N not a power
 *              of two); B < RING_MIN: recursive halving reduce-scatter +
 *              recursive doubling allgather (Rabenseifner); else ring
 *              reduce-scatter + ring allgather, segmented: a received
 *              segment is reduced while the next one arrives
 *   reduce     B < SMALL_MAX: binomial tree; else ring reduce-scatter +
 *              binomial gather of the reduced blocks to the root's node
 *   bcast      N = 2 or B < 2 SMALL_MAX: binomial tree (N = 2: one
 *              message, the least any algorithm sends; up to 64 KiB its
 *              log2 N rounds beat the N - 1 + log2 N of the other, as
 *              measured on 3 and 4 nodes); else binomial scatter + ring
 *              allgather that sends nothing to the root
 *   gather     binomial tree (each node forwards its subtree's data)
 *   allgather  output < SMALL_MAX: Bruck; else ring
 *   reduce-scatter  the all-reduce of the size x count elements (its
 *              lanes, its algorithm: the same order, the same result to
 *              the bit), whose allgather half (the fold's return,
 *              halving's doubling steps, the ring's allgather) sends an
 *              element only towards the nodes whose ranks want it, and
 *              no message where none does; the out phase moves only the
 *              node's ranks' blocks.  With nodes of equal size in a
 *              block layout and one lane, each block the ring reduced
 *              goes one hop (the ring finishes block b on node b-1, and
 *              node b wants it): (N-1)/N B + B/N beta in all against
 *              2 (N-1)/N B; halving's doubling steps carry an element
 *              only along its way to its node (4 nodes of one rank,
 *              counted: 2/3 of the all-reduce's bytes with either);
 *              doubling saves only on the fold's return
 * Cost per lane (alpha: latency of a message, beta: time per byte, gamma:
 * reduction time per byte; p = 2^floor(log2 N)):
 *   dissemination      ceil(log2 N) alpha
 *   recursive doubling (log2 p + 2[N != p]) alpha + (log2 p + 2[N != p])
 *                      B beta + (log2 p + [N != p]) B gamma
 *   Rabenseifner       2 log2 p alpha + 2 (p-1)/p B beta + (p-1)/p B gamma,
 *                      + 2 alpha + 2 B beta + B gamma on fold nodes
 *   ring allreduce     2 (N-1) alpha + 2 (N-1)/N B beta + (N-1)/N B gamma
 *   binomial reduce    ceil(log2 N) (alpha + B beta + B gamma)
 *   ring RS + gather   (N-1 + ceil(log2 N)) alpha + 2 (N-1)/N B beta
 *                      (root's node; others less) + (N-1)/N B gamma
 *   binomial bcast     ceil(log2 N) (alpha + B beta)
 *   scatter+allgather  (ceil(log2 N) + N-1) alpha + 2 (N-1)/N B beta
 *                      (nothing in at the root)
 *   binomial gather    ceil(log2 N) alpha + (N-1)/N Out beta (root)
 *   Bruck allgather    ceil(log2 N) alpha + (N-1)/N Out beta
 *   ring allgather     (N-1) alpha + (N-1)/N Out beta
 * Bytes of 16-bit floats under SUM/PROD/AVG travel as float32 while they
 * are partial (reduce-scatter, trees, recursive doubling): 2 B beta there.
 *
 * Reduction order (the same on every rank, a fixed function of the count,
 * dtype, op and the layout: N, ranks per node, L; never of timing):
 * within a node local rank 0's data, then op with local rank 1's, ...,
 * computed in the accumulation type (ddpi_acc_dtype: float32 for 16-bit
 * floats under SUM/PROD/AVG), giving the node's partial P_n.  Lane l
 * holds elements sched_block(count, La, l); across nodes its elements
 * combine the P_n by the algorithm picked for its bytes:
 *   recursive doubling and Rabenseifner: a tree over the virtual ranks,
 *     pairs first: ((V0 op V1) op (V2 op V3)) op ..., where V_i is
 *     P_{2i} op P_{2i+1} for i < N - p and P_{i + N - p} after;
 *   ring: element in block b of N: P_b op P_{b+1} op ... op P_{b-1}
 *     (indices mod N), left to right;
 *   binomial reduce to root r: P_r op P_{r+1} op ... op P_{r-1}, grouped
 *     by the tree (each subtree is combined before its parent adds it);
 *   ring RS + gather: as the ring.
 * A reduce-scatter takes the all-reduce's order for the size x count
 * elements: rank r's block is bitwise that block of the all-reduce.
 * AVG divides once, at the end, by the world size; a 16-bit result is
 * rounded once, at the end.
 *
 * Timeouts (fault.h has the swap of lists).  A wait ends at DDP_TIMEOUT
 * T without progress: for a node-mate's arrival (seq), and on the links
 * (tcp.c); one for a node-mate's result (red, fin), which that rank may
 * itself wait for from another node, HOST_LATE_S (0.2 s) later, so that
 * the rank waiting between nodes speaks first.  The report then lasts
 * HOST_SWAP_S (0.6 s) at most from its start: the FAULT frames (side
 * connections: 0.25 s at most), the speaker's wait for a stopped
 * node-mate (0.15 s), the swap of lists; a node-mate of the speaker waits
 * HOST_FINAL_S (0.1 s) more for fault_final.  So a survivor returns by T
 * + 0.9 s after the last progress it saw (ddp(3) promises T + 1 s, the
 * rest for scheduling on a loaded node).  Measured beside busy loops
 * (load 7-12 on 2 CPUs, T = 4, a rank stopped for good): 4.05-4.6 s,
 * before 8.2-8.7 s (T + 2 or 3 graces of 1 + T / 10).  Who is named:
 * a rank that never reached the step (seq), or the rank waited for when
 * it is in the call but does not take the record in (fault_here: a
 * stopped process); with nobody named and the rank waited for alive, the
 * link carried nothing, reported as such (fault.c, report_link).
 *
 * Memory per rank (P ranks on the node, L lanes, W world size, N nodes,
 * B the largest buffer of a call, S the slot: DDP_SHM_SLOT, by default
 * 8 MiB / P within [64 KiB, 1 MiB]):
 *   segment (shared by the node): 2 (P + 1) S bytes (two banks of P slots
 *   and a result area of S), a ring of 16 KiB and flags of 704 bytes
 *   per rank, so about 2 S per rank
 *   tables: 4 words per rank of the world (W ints: node, local rank, and
 *   the node lists), a few per node (N)
 *   links, per lane: 3 ceil(log2 N) + 3 partners, each a socket and
 *   its peers' addresses (L of them)
 *   scratch of a lane, kept for the next call and freed at finalize: a
 *   reduction's receive buffer (at most B), its work buffer when it cannot
 *   work in place (16-bit floats in float32: 2 B) and its result when
 *   this rank does not want one (reduce: B); a gather's node: its
 *   subtree's data (at most the gather's output); so at most 5 B
 * so O(B + W + log N) per rank: nothing grows with N x S or W x KiB.
 */
#ifndef DDP_HOST_H
#define DDP_HOST_H

#include "algo.h"
#include "fault.h"
#include "host_core.h"
#include "record.h"
#include "transport.h"

/* ---- coll.c: the collectives, ddpi_backend_host's entry points ---- */

int host_barrier (void *ctx);
int host_bcast (void *ctx, void *buf, size_t count, ddp_dtype_t dtype,
                int root);
int host_reduce (void *ctx, const void *sendbuf, void *recvbuf,
                 size_t count, ddp_dtype_t dtype, ddp_op_t op, int root);
int host_allreduce (void *ctx, const void *sendbuf, void *recvbuf,
                    size_t count, ddp_dtype_t dtype, ddp_op_t op);
/* sendbuf: size x recvcount elements; recvbuf may be this rank's block
 * of it (in place). */
int host_reduce_scatter (void *ctx, const void *sendbuf, void *recvbuf,
                         size_t recvcount, ddp_dtype_t dtype, ddp_op_t op);
int host_gather (void *ctx, const void *sendbuf, void *recvbuf,
                 size_t count, ddp_dtype_t dtype, int root);
int host_allgather (void *ctx, const void *sendbuf, void *recvbuf,
                    size_t count, ddp_dtype_t dtype);
/* ddp_finalize's barrier, then the straggler report when it is on. */
int host_finalize (void *ctx);

/* ---- cross.c: a collective on several nodes, once coll.c began it ---- */

int host_allreduce_nodes (struct host *h, const char *send, char *recv,
                          size_t count, ddp_dtype_t dtype, ddp_op_t op);
int host_reduce_nodes (struct host *h, const char *send, char *recv,
                       size_t count, ddp_dtype_t dtype, ddp_op_t op,
                       int root);
/* send: size x count elements; recv: this rank's block. */
int host_reduce_scatter_nodes (struct host *h, const char *send,
                               char *recv, size_t count, ddp_dtype_t dtype,
                               ddp_op_t op);
int host_bcast_nodes (struct host *h, char *buf, size_t bytes, int root);
/* bytes: one rank's part; recv: the whole (the root's; every rank's for
 * the all-gather). */
int host_gather_nodes (struct host *h, const char *send, char *recv,
                       size_t bytes, int root);
int host_allgather_nodes (struct host *h, const char *send, char *recv,
                          size_t bytes);

/* The collective kinds' names (enum host_kind), for the counters. */
extern const char *const host_kind_names[HOST_KINDS];

#endif /* DDP_HOST_H */
