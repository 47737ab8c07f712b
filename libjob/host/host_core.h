/* host_core.h - the bottom of the host backend: the state every layer
 * shares (struct host, the node segment's layout, addresses, tuning,
 * counters), the fault record's types, and the event a transport reports.
 * Internal to libddp.  Includes no other header of libjob/host; every file
 * of the backend may include it (doc/host-backend.md has the layers). */
#ifndef DDP_HOST_CORE_H
#define DDP_HOST_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "backend.h"
#include "trail.h"

struct host;

/* Ranks a fault record can list; more are counted, not listed. */
#define FAULT_LIST_MAX 32
#define HOST_HERE_MAX 256   /* local ranks whose answer a record notes */

/* What a rank was doing, as its node's segment shows it (shm_flags.state)
 * and the fault record carries it: the number of the collective it
 * entered last (1, 2, ... for each rank), its enum host_kind, and whether
 * it is still in it.  0: unknown. */
#define FAULT_STATE(call, kind, in) \
    ((uint64_t)(call) << 8 | 0x80u | (uint64_t)(kind) << 1 | ((in) ? 1u : 0u))
#define FAULT_STATE_CALL(st) ((st) >> 8)
#define FAULT_STATE_KIND(st) ((int)((st) >> 1 & 0x3f))
#define FAULT_STATE_IN(st) (((st) & 1u) != 0)
/* The kind a rank shows in its state while in ddp_finalize (not an enum
 * host_kind: it is not counted as a collective of its own). */
#define FAULT_KIND_FINALIZE 0x3f
/* The kind a fault record gives the ranks of a node that did not answer
 * the swap of fault lists (flood.c name_silent); the call field holds that
 * node's number and the call they sent nothing in (FAULT_SILENT_CALL), the
 * `in` bit whether a TCP connection with that node came up meanwhile (its
 * kernel answers: the link works, its ranks do not).  Nothing was heard
 * from the ranks: not whether they entered the call. */
#define FAULT_KIND_SILENT 0x3e
#define FAULT_SILENT_CALL(node, call) \
    ((uint64_t)(node) << 40 | ((uint64_t)(call) & ((UINT64_C(1) << 40) - 1)))
#define FAULT_SILENT_NODE(c) ((int)((c) >> 40))
#define FAULT_SILENT_OF(c) ((c) & ((UINT64_C(1) << 40) - 1))

enum host_fault_kind {
    FAULT_DIED = 1,     /* the process is gone */
    FAULT_ABORTED = 2,  /* it called ddp_abort() */
    FAULT_TIMEOUT = 3,  /* it did not arrive within DDP_TIMEOUT */
    FAULT_LINK = 4,     /* its node's link failed */
    FAULT_MISMATCH = 5, /* it made another call than a peer (another
                           kind, count, dtype, op or root: node.c's tags,
                           the frames between nodes) */
    FAULT_LEFT = 6,     /* it called ddp_finalize and left while the others
                           were elsewhere (coll.c, host_finalize): calls
                           from fault_call on fail, earlier ones complete */
    FAULT_EXITED = 7,   /* its process exited, status FAULT_DETAIL, without
                           ddp_finalize (seen through its pidfd) */
    FAULT_KILLED = 8,   /* a signal, FAULT_DETAIL, ended its process */
};

/* A record's kind (shm_hdr.fault_kind, a FAULT frame's kind) is one of
 * the above in its low byte, and for FAULT_EXITED and FAULT_KILLED the
 * exit status or signal number in the next one. */
#define FAULT_KIND(k) ((int)(k) & 0xff)
#define FAULT_DETAIL(k) ((int)(k) >> 8 & 0xff)
#define FAULT_WITH(kind, detail) ((kind) | ((detail) & 0xff) << 8)

/* What fault.c needs from the links between nodes: the transport's relay
 * (flood.c, host_flood_relay), called downwards by fault.c only.  Each is
 * best effort: it cannot fail, calls nothing above the transport, and
 * returns within its window. */
struct fault_relay {
    /* A lane: tell its partner nodes that ranks (nlist listed of n in all,
     * ascending; nlist 0: to be found; states: what each was doing, NULL:
     * unknown) failed (kind), as noticed by rank
     * reporter.  A link that cannot carry it now (in the middle of a
     * frame, full, or bytes queued that an exit could drop) gets it on a
     * side connection to the partner lane's listening socket, bounded by
     * SIDE_WAIT (flood.c, 0.5 s), and a link in the middle of a frame is
     * then cut.  They pass it on (flooding). */
    void (*send) (struct host *h, const int *ranks, const uint64_t *states,
                  int nlist, int n, int kind, int reporter);
    /* A lane waiting in shared memory: take a FAULT frame that arrived on
     * its links into the record; must not block. */
    void (*poll) (struct host *h);
    /* This node's speaker: for up to window seconds swap lists with the
     * speakers of the partner nodes, merging theirs into the record
     * (host_fault_merge) and passing every change on.  Returns whether a
     * list came from node ask's speaker (its ranks that reached the call
     * are alive: what the node's list does not name is there); false for
     * a node that is not a partner. */
    bool (*gather) (struct host *h, double window, int ask);
    /* A lane leaving (ddp_finalize): wait up to window seconds for the
     * bytes queued on its links to be sent. */
    void (*flush) (struct host *h, double window);
};

/* What a transport (shm.c, tcp.c) saw that ends its wait.  It does not
 * decide what that means: it fills h->ev and returns HOST_EVENT, and the
 * layer that called it hands the event to fault.c (host_fault_event()),
 * which claims the fault record, tells the other nodes and the user, and
 * returns the DDP_E* code.  A FAULT frame from another node is taken into
 * the node's fault record as it arrives (record.h): the record is the
 * node's inbox of faults; the transport then reports HOST_EV_RECORD. */
enum host_event_kind {
    HOST_EV_NONE,
    HOST_EV_RECORD,     /* the node's fault record is claimed */
    HOST_EV_PEER_GONE,  /* the process of local rank lr is gone */
    HOST_EV_ABSENT,     /* a wait for local rank lr to reach step s ran
                           out (it never arrived) */
    HOST_EV_LATE,       /* lr arrived at step s, but its result did not
                           come within the extended wait */
    HOST_EV_LINK_LOST,  /* the link to rank closed in an exchange */
    HOST_EV_LINK_BAD,   /* a frame from rank that is not the one awaited */
    HOST_EV_STALLED,    /* no progress on the links for DDP_TIMEOUT;
                           rank: the first peer still awaited */
};

struct host_event {
    int kind;           /* enum host_event_kind */
    int rank;           /* the global rank concerned (-1: none) */
    int lr;             /* HOST_EV_ABSENT: the local rank waited for */
    uint64_t step;      /* HOST_EV_ABSENT: the step it did not reach */
    /* HOST_EV_LINK_BAD: the frame that came (a data frame or not; call,
     * tag, bytes), the op that waited (tag, bytes), and the partner node. */
    bool got_data;
    uint64_t got_call, got_len;
    int32_t got_tag;
    uint32_t want_tag;
    size_t want_len;
    int node;
    /* HOST_EV_LINK_BAD, a data frame: the call its sender described
     * (host_desc's what and count) and its trail before it. */
    uint64_t got_what, got_count, got_trail;
};

/* What a transport function returns when it filled h->ev.  Never leaves
 * the backend: the caller turns it into a DDP_E* code (fault.h). */
#define HOST_EVENT (-1000)

#define SHM_MAGIC 0x64647073686d3130ULL  /* "ddpshm10" */

/* The rings (node.c): on one node a bcast or gather of at most
 * HOST_RING_BYTES a rank goes through the writer's ring, HOST_RING_RANK_BYTES
 * of the segment per local rank: entries of successive calls follow each
 * other there, each rounded up to HOST_RING_ALIGN bytes (an entry that
 * would cross the ring's end starts it over), so that small entries share
 * cache lines (a reader takes one miss for several calls) and larger ones
 * are read in sequence.  A writer may run up to HOST_RING_KMAX - 1 steps
 * ahead of its readers (the banks allow one), and never writes a line its
 * readers have still to leave.  1 x 2 on 2 cores (2026-11-27): bcast of 8
 * B 0.25 us with 8 entries of 512 B, 0.05 packed.  An entry opens with a
 * tag of HOST_RING_TAG bytes: its step and its size (node.c's ring_tag),
 * checked by its readers; one of over 64 bytes takes whole lines. */
#define HOST_RING_BYTES 512
#define HOST_RING_TAG 8
#define HOST_RING_ALIGN 16
#define HOST_RING_KMAX 64
#define HOST_RING_RANK_BYTES 16384
#define HOST_RING_LINES (HOST_RING_RANK_BYTES / 64)

/* Straggler stamps kept per rank: a local rank is at most HOST_RING_KMAX
 * calls ahead of one still in a call (coll.c). */
#define HOST_ARRIVE_SLOTS (HOST_RING_KMAX + 2)

/* A reduction step of at most HOST_INLINE_BYTES on one node travels in
 * the writer's polled flag line (inl[s & 1], written before seq): a
 * reader that sees seq has the data in the same cache line. */
#define HOST_INLINE_BYTES 16

#define HOST_DESC_SLOTS 4
#define HOST_DESC_STAMP(what, call) \
    (((what) & ~(uint64_t)0xff000000u) | ((uint64_t)(call) & 0xff) << 24)

/* One local rank's flags: eleven cache lines.  The first holds what the
 * node-mates poll (seq, red, fin: written once per step; inl and tag with
 * seq); the others what this rank writes often or at every call and the
 * others read rarely (beat, state, arrive), so that those writes do not
 * pull the polled line away from its readers. */
struct shm_flags {
    _Atomic uint64_t seq;
    _Atomic uint64_t red;
    _Atomic uint64_t fin;
    unsigned char inl[2][HOST_INLINE_BYTES];
    /* The step and the call's signature (host_desc) of every step this
     * rank posted outside the rings in its last two steps (tag[s & 1],
     * node.c's step_tag, written before seq; a barrier's too): its readers
     * check it, so that ranks which made different calls (kind, count,
     * dtype, op, root) fail that call instead of reading stale or
     * misread data, also where their calls put them on different
     * paths. */
    _Atomic uint32_t tag[2];
    _Atomic uint64_t beat;
    _Atomic uint64_t state;     /* FAULT_STATE of this rank (above) */
    /* With the straggler report on: when this rank entered collective c,
     * in arrive[c % HOST_ARRIVE_SLOTS] as STRAG_STAMP(c, ns) (coll.c). */
    _Atomic uint64_t arrive[HOST_ARRIVE_SLOTS];
    /* Single copy (shm.c): the address of this rank's buffer in the step
     * it posted last (at set-up: of a known value, for the probe), and
     * its vote on whether it can read every node-mate's memory (0 not
     * yet, 1 yes, 2 no).  addr2: a second buffer of the step (an
     * all-reduce's receive buffer). */
    _Atomic uint64_t addr;
    _Atomic uint32_t cma;
    /* How many node-mates sleep on this rank's seq, red and fin (a futex
     * on the flag's low half, shm.c), so that a post wakes only when some
     * do: written by sleepers, read by this rank at every post. */
    _Atomic uint32_t sleepers[3];
    _Atomic uint64_t addr2;
    /* The last HOST_DESC_SLOTS calls this rank entered as it described
     * them (host_desc), call c in desc[c % HOST_DESC_SLOTS]: what, with
     * c's low 8 bits in its bits 24-31 (HOST_DESC_STAMP), and count;
     * written at the call's entry, before any of its steps' seq.  Read by
     * a node-mate only to name both calls after a tag told them apart
     * (node.c's tag_bad, fault.c): a line of its own that no one polls.
     * A rank that finished call c enters no more than call c + 2 while a
     * node-mate is still in c's bank steps (each step waits for the one
     * before), so its slot of c is still there; on the rings it may be
     * further ahead (the ring's tag then tells what it can). */
    _Atomic uint64_t desc[HOST_DESC_SLOTS][2];
};

_Static_assert (offsetof (struct shm_flags, beat) == 64,
                "the polled flags are one cache line");
_Static_assert (offsetof (struct shm_flags, desc) == 640
                && sizeof (((struct shm_flags *)0)->desc) == 64,
                "the call's description opens a line of its own");
_Static_assert (sizeof (struct shm_flags) == 704,
                "a rank's flags are eleven cache lines");

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
    /* The call (h->call) in which a rank of this node noticed the fault
     * and claimed the record, written before fault_kind; 0: unknown (the
     * record came from another node).  A rank still in an earlier call,
     * which completed it, does not fail that one (coll.c, call_agree). */
    uint64_t fault_call;
    /* Bit lr (lr < HOST_HERE_MAX): local rank lr took the record in, in
     * its report (fault.c): it is alive, not stopped in a wait. */
    _Atomic uint64_t fault_here[HOST_HERE_MAX / 64];
    /* Set by the speaker with fault_final: the list came out empty and
     * the rank the claimer waited for (fault_rank - 1) is alive and in the
     * call (a node-mate that took the record in here, or its node's
     * speaker answered the swap): the link between the two carried
     * nothing. */
    _Atomic int32_t fault_alive;
    char pad[512 - 8 * sizeof (uint64_t) - (11 + FAULT_LIST_MAX)
             * sizeof (int32_t) - FAULT_LIST_MAX * sizeof (uint64_t)];
};

_Static_assert (sizeof (struct shm_hdr) == 512, "the header is 512 bytes");

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
    uint32_t tcp_piece;     /* DDP_TCP_PIECE: most bytes per sendmsg()
                               of a message (0: no limit) */
    uint32_t tcp_ahead;     /* DDP_TCP_READAHEAD: bytes a link's reads
                               may take ahead (0: none) */
    uint32_t tcp_sndbuf;    /* DDP_TCP_SNDBUF: a link's SO_SNDBUF (0: the
                               kernel's autotuning; HOST_SNDBUF_AUTO:
                               mesh.c's choice per link) */
};

/* DDP_TCP_SNDBUF unset: mesh.c picks per link, HOST_LOOPBACK_SNDBUF for
 * a partner on this machine (mesh.c says why), the kernel's autotuning
 * for others. */
#define HOST_SNDBUF_AUTO UINT32_MAX
#define HOST_LOOPBACK_SNDBUF (256 * 1024)

/* The collectives, for the traffic counters. */
enum host_kind {
    KIND_BARRIER, KIND_BCAST, KIND_REDUCE, KIND_ALLREDUCE, KIND_GATHER,
    KIND_ALLGATHER, KIND_REDUCE_SCATTER, KIND_OTHER, HOST_KINDS
};

/* Messages and payload bytes one rank sent to and received from other
 * nodes, per collective kind, and the calls. */
struct host_stats {
    uint64_t calls;
    uint64_t msgs_sent, bytes_sent;
    uint64_t msgs_recv, bytes_recv;
};

struct host_links;

/* A call as this rank described it (coll.c's call_begin), agreed in the
 * call itself on every path: what packs the kind (check.h's numbering:
 * enum ddp_coll_kind, then CHECK_BARRIER), the dtype + 1 and the op + 1
 * (0: the kind takes none) as check_sig_make's word 0 does, and the root
 * (high half; 0 where the kind takes none); count: the elements (0: a
 * barrier).  sig: 24 bits of it for the tags of the segment (node.c):
 * the kind (3 bits) and dtype (4) exactly, then 17 bits of a hash of
 * the whole, so that every difference of kind or dtype is seen and one
 * of count, op or root but once in 2^17 calls; since the hash takes the
 * trail too (trail.h: the digest of every call before this one), so is
 * one of an earlier call.  The frames between nodes carry what, count and
 * trail whole (tcp.h). */
#define HOST_DESC_BARRIER DDP_COLL_NKINDS
#define HOST_DESC_WHAT(kind, dt1, op1, root) \
    ((uint64_t)(kind) | (uint64_t)(dt1) << 8 | (uint64_t)(op1) << 16 \
     | (uint64_t)(uint32_t)(root) << 32)
#define HOST_DESC_KIND(w) ((int)((w) & 0xff))
#define HOST_DESC_DTYPE(w) ((int)((w) >> 8 & 0xff) - 1)
#define HOST_DESC_OP(w) ((int)((w) >> 16 & 0xff) - 1)
#define HOST_DESC_ROOT(w) ((int)(uint32_t)((w) >> 32))
#define HOST_SIG_KIND(sig) ((int)((sig) >> 21 & 7))
#define HOST_SIG_DTYPE(sig) ((int)((sig) >> 17 & 15) - 1)
struct host_desc {
    uint64_t what;
    uint64_t count;
    uint64_t trail;     /* trail.h: the digest of the calls before it */
    uint64_t hash;      /* trail_hash of what and count */
    uint32_t sig;
};

/* A partner node (sched_partners()): its index, its machine id, its
 * network's (machine and network namespace), and the listening addresses
 * of its lanes (h->lanes entries, lane 0 first). */
struct host_partner {
    int node;
    uint64_t machine;
    uint64_t net;
    uint32_t ip_ok;     /* its address this lane's link was made on
                           (network byte order; 0: not known), tried
                           first by later connections (mesh.c) */
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
    int *node_rank_all;     /* node_ranks' storage: size ints, node by node */
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
    char *ring;                 /* lsize x HOST_RING_RANK_BYTES (node.c) */
    size_t slot_bytes, res_bytes;
    int memfd;                  /* local rank 0 until every rank attached */

    /* The partner nodes (every rank knows them: any can speak for its
     * node after a fault), and this rank's links when it is a lane
     * (lrank < lanes; else NULL). */
    int npart;
    struct host_partner *part;
    uint64_t machine;           /* this machine's id (its boot id) */
    uint64_t net;               /* its network namespace's (host.c) */
    struct host_links *lk;
    int listen_fd;              /* a lane's listening socket, else -1 */
    uint64_t cookie;            /* proves a connection is meant for us */
    bool fault_sent;
    const struct fault_relay *relay;    /* the links, for fault.c */

    uint64_t seq;               /* node-local steps */
    /* What node.c's waits saw last: every other local rank at step
     * seen_all or later, local rank seen_lr at seen_lr_step or later. */
    uint64_t seen_all, seen_lr_step;
    int seen_lr;
    /* The rings (node.c): where each local rank's next entry goes (bytes
     * placed since set-up; every rank moves every cursor through the same
     * calls, so all agree), and the last step that wrote each line of this
     * rank's own ring (0: none). */
    uint64_t *ring_at;          /* lsize */
    uint64_t *ring_line;        /* HOST_RING_LINES */
    size_t *ring_off;           /* lsize: a gather's entries, this step */
    int cma;                    /* single copy on this node: 0 not yet
                                   decided, 1 on, 2 off (node.c) */
    bool cma_refused;           /* DDP_CMA=0 here: this rank votes no */
    long spin_env, yield_env;   /* DDP_SPIN, DDP_YIELD (us); -1: unset */
    uint64_t call;              /* collectives called: frames carry it */
    struct host_desc desc;      /* the call under way, as described */
    /* The call a peer on another node described in the frame that told
     * the calls apart (fault.c names it): its rank (-1: none), what,
     * count, and its number. */
    int mm_rank;
    uint64_t mm_what, mm_count, mm_call;
    unsigned spin_us;
    double yield_s;             /* node waits: yielding before naps */
    bool post_fence;            /* posts fence before they look for
                                 * sleepers (shm.c: host_post) */
    int setup_gets;             /* blobs read at set-up, for DDP_DEBUG */
    size_t setup_bytes;
    int broken;                 /* sticky DDP_E* code after a fault */
    /* In ddp_finalize (coll.c, host_finalize): its waits are short, and a
     * wait that runs out means the others are elsewhere: this rank leaves
     * (FAULT_LEFT), quietly. */
    bool leaving;
    bool left_mid;              /* it left in the middle of that barrier */
    struct host_event ev;       /* what the transport saw last */

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
    /* The trail after the last call described (trail.h; TRAIL_START
     * before the first), and the last HOST_DESC_SLOTS calls as described
     * with the trail before each, call c in past[c % HOST_DESC_SLOTS]:
     * what another rank's trail is compared with to name the call that
     * differed (node.c, fault.c, trail_blame).  Last: the hot fields
     * above keep their places. */
    uint64_t trail;
    struct trail_call past[HOST_DESC_SLOTS];
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

/* Local rank lr's inline area of bank (HOST_INLINE_BYTES, in its polled
 * flag line). */
static inline unsigned char *host_inline (struct host *h, int lr, int bank)
{
    return h->flags[lr].inl[bank];
}

/* Local rank lr's ring; an entry's offset in it comes from node.c. */
static inline char *host_ring (struct host *h, int lr)
{
    return h->ring + (size_t)lr * HOST_RING_RANK_BYTES;
}

/* Record that the transport saw kind about rank; returns HOST_EVENT. */
static inline int host_event (struct host *h, int kind, int rank)
{
    h->ev.kind = kind;
    h->ev.rank = rank;
    return HOST_EVENT;
}

/* Is the node's fault record claimed?  (A relaxed load: the hot loops
 * read it.) */
static inline bool host_record_set (struct host *h)
{
    return atomic_load_explicit (&h->hdr->fault_rank,
                                 memory_order_relaxed) != 0;
}

/* Does the node's fault record end the call under way?  Every record does
 * but a mismatch seen in a later call, or a rank that left in a later
 * call (its ddp_finalize; FAULT_LEFT): the ranks that saw it finished
 * this call, so what this rank waits for was sent (or comes through a
 * node-mate that goes on too); it completes this call, as they did, and
 * fails a later one.  A record being written (its kind not yet set) is
 * looked at again on the next round. */
static inline bool host_record_stops (struct host *h)
{
    int kind;

    if (!host_record_set (h))
        return false;
    kind = atomic_load_explicit (&h->hdr->fault_kind, memory_order_acquire);
    if (kind == 0)
        return false;
    return (kind != FAULT_MISMATCH && kind != FAULT_LEFT)
           || h->hdr->fault_call <= h->call;
}

/* The timeout path's pieces (seconds; host.h, "Timeouts", adds them up):
 * a wait for a node-mate's result, which that rank may itself wait for
 * from another node, gets HOST_LATE_S after DDP_TIMEOUT, so that the rank
 * waiting between nodes speaks first; the swap of lists after a timeout
 * lasts HOST_SWAP_S at most from the report's start (the FAULT frames'
 * side connections included); a node-mate of the speaker waits
 * HOST_FINAL_S more for its verdict. */
#define HOST_LATE_S 0.2
#define HOST_SWAP_S 0.6
#define HOST_FINAL_S 0.1

/* Tell local waiters that this rank is making progress (flags' beat). */
static inline void host_beat (struct host *h)
{
    atomic_fetch_add_explicit (&h->flags[h->lrank].beat, 1,
                               memory_order_relaxed);
}

#endif /* DDP_HOST_CORE_H */
