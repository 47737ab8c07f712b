/* host.h - the host backend's pieces.  Internal to libddp.
 *
 *   host.c   create/destroy, the collectives' three phases (below)
 *   shm.c    the node's shared segment, waiting on its flags
 *   tcp.c    the links between nodes: connect, frames, rounds of messages
 *   algo.c   the cross-node algorithms over the links (schedule.c: schedules)
 *   flood.c  fault records over the links (the relay of fault.h)
 *   fault.c  the node's fault record (fault.h)
 * They call each other along a DAG (test/deps.t): host -> algo, flood,
 * shm -> ...; algo -> tcp, schedule; flood -> tcp; tcp, shm -> fault.
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
 * selects a ring (RING_MIN, and SMALL_MAX for reduce, bcast, allgather) is
 * multiplied by max(1, N - 1 - ceil(log2 N)) (from 6 nodes on), the
 * ring's extra steps, so no ring runs where its N - 1 latencies cost more
 * than it saves (doc/scaling.md):
 *   barrier    dissemination: ceil(log2 N) rounds of one empty message
 *   allreduce  B < SMALL_MAX: recursive doubling (fold for N not a power
 *              of two); B < RING_MIN: recursive halving reduce-scatter +
 *              recursive doubling allgather (Rabenseifner); else ring
 *              reduce-scatter + ring allgather, segmented: a received
 *              segment is reduced while the next one arrives
 *   reduce     B < SMALL_MAX: binomial tree; else ring reduce-scatter +
 *              binomial gather of the reduced blocks to the root's node
 *   bcast      B < SMALL_MAX: binomial tree; else binomial scatter + ring
 *              allgather
 *   gather     binomial tree (each node forwards its subtree's data)
 *   allgather  output < SMALL_MAX: Bruck; else ring
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
 * AVG divides once, at the end, by the world size; a 16-bit result is
 * rounded once, at the end.
 *
 * Memory per rank (P ranks on the node, L lanes, W world size, N nodes,
 * B the largest buffer of a call, S the slot: DDP_SHM_SLOT, by default
 * 8 MiB / P within [64 KiB, 1 MiB]):
 *   segment (shared by the node): 2 (P + 1) S bytes (two banks of P slots
 *   and a result area of S), so about 2 S per rank
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

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "backend.h"
#include "fault.h"
#include "wait.h"

#define SHM_MAGIC 0x64647073686d3034ULL  /* "ddpshm04" */

struct shm_flags {
    _Atomic uint64_t seq;
    _Atomic uint64_t red;
    _Atomic uint64_t fin;
    _Atomic uint64_t beat;
    _Atomic uint64_t state;     /* FAULT_STATE of this rank (fault.h) */
    /* With the straggler report on: when this rank entered collective c,
     * in arrive[c % 3] as STRAG_STAMP(c, ns) (host.c). */
    _Atomic uint64_t arrive[3];
};

struct shm_hdr {
    uint64_t magic;
    uint64_t slot_bytes;
    uint64_t res_bytes;
    uint32_t local_size;
    _Atomic int32_t attached;
    /* Set once by the first rank that sees a fatal failure: the global rank
     * at fault + 1 (0: none; it claims the record) and the DDP_E* code. */
    _Atomic int32_t fault_rank;
    _Atomic int32_t fault_code;
    _Atomic int32_t fault_kind;     /* enum host_fault_kind; written last */
    _Atomic int32_t fault_reporter; /* global rank that noticed it */
    /* Every rank at fault (ascending, the first fault_nlist of fault_n),
     * written by the claimer before fault_kind.  A timeout noticed between
     * nodes is claimed with an empty list: the nodes' lists fill it. */
    int32_t fault_n;
    int32_t fault_nlist;
    int32_t fault_list[FAULT_LIST_MAX];
    /* 1 once the list is final: in a job of several nodes a timeout's list
     * is completed with the other nodes' lists. */
    _Atomic int32_t fault_final;
    /* Bumped by every change of the list (fault_merge), so the node's
     * speaker knows when to pass it on. */
    _Atomic int32_t fault_version;
    /* What each listed rank was doing (FAULT_STATE; 0: unknown). */
    uint64_t fault_state[FAULT_LIST_MAX];
    char pad[512 - 3 * sizeof (uint64_t) - (10 + FAULT_LIST_MAX)
             * sizeof (int32_t) - FAULT_LIST_MAX * sizeof (uint64_t)];
};

/* Addresses a lane listens on (the bootstrap blob carries them). */
#define HOST_MAX_ADDRS 6
struct host_addr {
    uint32_t n;                 /* number of IPv4 addresses */
    uint32_t ip[HOST_MAX_ADDRS];/* network byte order */
    uint16_t port;              /* network byte order */
    uint64_t cookie;
};

/* Tuning, read from the environment by every rank; rank 0's values are
 * used everywhere (the bootstrap blob carries them), so that every node
 * picks the same algorithms. */
struct host_tune {
    uint32_t lanes;         /* DDP_LANES: at most this many lanes */
    uint32_t lane_min;      /* DDP_LANE_MIN: bytes a lane gets at least */
    uint32_t small_max;     /* DDP_SMALL_MAX: below, latency algorithms */
    uint32_t ring_min;      /* DDP_RING_MIN: from here, ring allreduce */
    uint32_t segment;       /* DDP_SEGMENT: pipelining unit of the ring */
};

/* The collectives, for the traffic counters. */
enum host_kind {
    KIND_BARRIER, KIND_BCAST, KIND_REDUCE, KIND_ALLREDUCE, KIND_GATHER,
    KIND_ALLGATHER, KIND_OTHER, HOST_KINDS
};

/* Messages and payload bytes one rank sent to and received from other
 * nodes, per collective kind, and the calls. */
struct host_stats {
    uint64_t calls;
    uint64_t msgs_sent, bytes_sent;
    uint64_t msgs_recv, bytes_recv;
};

struct host_links;

/* A partner node (sched_partners()): its index, its machine id, and the
 * listening addresses of its lanes (h->lanes entries, lane 0 first). */
struct host_partner {
    int node;
    uint64_t machine;
    struct host_addr *addr;
};

struct host {
    int rank, size, lrank, lsize, node, nnodes;
    const struct ddp_config *cfg;

    int *local_ranks;       /* lsize global ranks of this node */
    pid_t *lpids;           /* their pids */
    int *pidfds;            /* pidfd per local rank (-1: use kill (pid, 0)) */
    int *rank_node;         /* node of each global rank */
    int *rank_lrank;        /* local rank of each global rank */
    int *node_size;         /* ranks on each node */
    int **node_ranks;       /* global ranks of each node (local order) */
    bool block_layout;      /* node n's ranks are consecutive, nodes in
                               order: rank r of node n is first(n) + lrank */
    int lanes;              /* L (1 on one node) */
    struct host_tune tune;

    /* Shared memory. */
    void *map;
    size_t map_len;
    struct shm_hdr *hdr;
    struct shm_flags *flags;    /* lsize entries */
    char *bank[2];              /* each: lsize slots, then the result */
    size_t slot_bytes, res_bytes;
    int memfd;                  /* local rank 0 until every rank attached */

    /* The partner nodes (every rank knows them: any can speak for its
     * node after a fault), and this rank's links when it is a lane
     * (lrank < lanes; else NULL). */
    int npart;
    struct host_partner *part;
    uint64_t machine;           /* this machine's id (its boot id) */
    struct host_links *lk;
    int listen_fd;              /* a lane's listening socket, else -1 */
    uint64_t cookie;            /* proves a connection is meant for us */
    bool fault_sent;
    const struct fault_relay *relay;    /* the links, for fault.c */

    uint64_t seq;               /* node-local steps */
    uint64_t call;              /* collectives called: frames carry it */
    unsigned spin_us;
    int setup_gets;             /* blobs read at set-up, for DDP_DEBUG */
    size_t setup_bytes;
    int broken;                 /* sticky DDP_E* code after a fault */

    int kind;                   /* enum host_kind of the call under way */
    /* When this rank entered its last barrier, allreduce or allgather
     * (a call every rank waits on every other rank for), and when it
     * entered the call under way; seconds, 0 for none.  call_agree()
     * polls the links only when a peer could have given up by now. */
    double full_entry, entry;
    struct host_stats stats[HOST_KINDS];
    /* The straggler report (DDP_DEBUG or DDP_STRAGGLERS=1): collectives
     * this rank entered last of its node, and by how much in all. */
    bool strag;
    uint64_t strag_last, strag_late_ns;
    void *scratch[3];           /* kept between calls, grown on demand: */
    size_t scratch_len[3];      /* 0 a lane's work, 1 algo.c's receives,
                                   2 a lane's result */
};

/* Where slot lr / the result of a bank live. */
static inline char *host_slot (struct host *h, int bank, int lr)
{
    return h->bank[bank] + (size_t)lr * h->slot_bytes;
}

static inline char *host_result (struct host *h, int bank)
{
    return h->bank[bank] + (size_t)h->lsize * h->slot_bytes;
}


/* ---- shm.c: the node's segment, and a rank's scratch ---- */

/* Scratch buffer i (0, 1 or 2; 1 belongs to algo.c) of at least len
 * bytes, kept for later calls.  Returns NULL (after ddpi_error) when out
 * of memory. */
void *host_scratch (struct host *h, int i, size_t len);

/* Create (local rank 0) the segment before the exchange; returns 0 or a
 * DDP_E* code after ddpi_error(). */
int host_shm_create (struct host *h);

/* Attach (other local ranks) to local rank 0's memfd. */
int host_shm_attach (struct host *h, pid_t pid0, int fd0);

/* Local rank 0 waits (bounded) until every local rank attached, then
 * closes the memfd. */
int host_shm_wait_attached (struct host *h);

void host_shm_destroy (struct host *h);

/* Wait until flags[lr].<which> >= s (which: 0 seq, 1 red, 2 fin),
 * watching the fault record, peer liveness, the links (relay->poll) and
 * the deadline; a wait on red or fin goes on while lr's beat moves.
 * Returns 0 or DDP_EPEER / DDP_ETIMEDOUT (after recording the fault). */
int host_wait_flag (struct host *h, int lr, int which, uint64_t s);

/* host_wait_flag() for every local rank but this one. */
int host_wait_all (struct host *h, int which, uint64_t s);

/* host_wait_flag() for local ranks 0..n-1 but this one. */
int host_wait_first (struct host *h, int n, int which, uint64_t s);

/* Local peers alive?  Returns 0, or DDP_EPEER naming the dead one. */
int host_check_peers (struct host *h);

/* Set this rank's flag which (0 seq, 1 red, 2 fin) to s. */
void host_post (struct host *h, int which, uint64_t s);

/* Tell local waiters that this rank is making progress (flags' beat). */
static inline void host_beat (struct host *h)
{
    atomic_fetch_add_explicit (&h->flags[h->lrank].beat, 1,
                               memory_order_relaxed);
}

/* ---- tcp.c: links between the lanes of partner nodes ---- */

/* Open this rank's listening socket and fill a.  Returns 0 or a DDP_E*
 * code after ddpi_error(). */
int host_tcp_listen (struct host *h, struct host_addr *a);

/* Connect this lane (lane = h->lrank) to the same lane of each partner
 * node (h->part), the lower node connecting, within DDP_TIMEOUT, with
 * non-blocking connects: the addresses of a peer on the same machine are
 * tried loopback first, others those on a subnet of this machine first,
 * never a loopback address of another machine; an attempt that hangs
 * gives way to the next address.  Keeps the listening socket open (the
 * fault relay uses it).  Returns 0 or DDP_ETRANSPORT / DDP_ETIMEDOUT after
 * ddpi_error(), naming a node that could not be reached. */
int host_tcp_connect (struct host *h);

/* Close every socket of this rank's links (no-op without links). */
void host_tcp_close (struct host *h);

/* One message of a round (host_tcp_run).  link: the partner's index in
 * ascending node order (host_tcp_link()); tag: the message's place in the
 * algorithm, checked by the receiver with the call number; iov/iovcnt:
 * the payload (len bytes in all).  A receive with on_seg set calls it for
 * each completed segment of seg bytes of the payload (offsets from its
 * start), as they arrive. */
struct host_op {
    int link;
    bool send;
    uint32_t tag;
    const struct iovec *iov;
    int iovcnt;
    size_t len;
    size_t seg;
    void (*on_seg) (void *arg, size_t off, size_t len);
    void *arg;
    /* Progress, owned by host_tcp_run. */
    size_t done;        /* payload bytes */
    int vi;             /* iovec being worked on, and offset in it */
    size_t voff;
    size_t hdone;       /* send: frame header bytes sent */
    bool hdr;           /* receive: frame header received and checked */
    bool fin;
};

/* The link index of partner node n, or -1 when n is not a partner. */
int host_tcp_link (struct host *h, int node);

/* The global rank at the other end of link i. */
int host_tcp_peer (struct host *h, int i);

/* Run ops[0..nops-1] (sends and receives on distinct or shared links,
 * progressing together; two ops on one link in one direction run in
 * order) to completion.  Frames carry h->call and each op's tag; a frame
 * from another call or tag, or of another length, fails the call
 * (collectives called in a different order).  Counts messages and bytes
 * in h->stats[h->kind], and bumps this rank's beat.  Watches the fault
 * record and every link (a FAULT frame on any of them is taken).  Waits
 * at most DDP_TIMEOUT + 2 graces without progress: then the record is
 * claimed as a timeout with an empty list (the nodes' lists will fill it).
 * Returns 0 or DDP_EPEER / DDP_ETIMEDOUT / DDP_ETRANSPORT. */
int host_tcp_run (struct host *h, struct host_op *ops, int nops);

/* Without blocking, read frame headers that arrived on links nobody is
 * receiving on: claim a FAULT frame's record; park a data frame for the
 * op that will take it; note a link the peer closed; take a FAULT frame
 * sent on the side (tcp.h: SIDE_MAGIC).  For shared-memory waits
 * (relay->poll). */
void host_tcp_poll (struct host *h);

/* This lane's listening socket, or -1 (not a lane), for the fault relay. */
int host_tcp_listen_fd (struct host *h);

/* Start a non-blocking connect to a's address ai (or, failing that, a
 * later one): returns the socket, with *ai the address being tried, or -1
 * when none is left. */
int host_tcp_connect_start (const struct host_addr *a, uint32_t *ai);

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

/* ---- flood.c ---- */

/* The relay of fault records over the links (fault.h). */
extern const struct fault_relay host_flood_relay;

#endif /* DDP_HOST_H */
