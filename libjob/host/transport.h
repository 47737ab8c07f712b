/* transport.h - the host backend's transport: the node segment and its
 * waits (shm.c), the links between nodes (tcp.c: frames, rounds, waiting,
 * deadlines; mesh.c: set-up), the relay of fault records over the links
 * (flood.c).  Internal to libddp.
 *
 * A transport waits and reports: when a wait ends on something it saw (a
 * peer gone, a link lost, a deadline passed, a fault record come in) it
 * fills h->ev and returns HOST_EVENT (host_core.h); it never decides what
 * that means, and calls nothing above it (fault.c, algo.c, node.c,
 * coll.c, host.c).  Other codes it returns are DDP_E* codes of set-up failures. */
#ifndef DDP_TRANSPORT_H
#define DDP_TRANSPORT_H

#include "host_core.h"

/* ---- shm.c: the node's segment, and a rank's scratch ---- */

/* Scratch buffer i (0, 1 or 2; 1 belongs to algo.c) of at least len
 * bytes, page aligned, kept for later calls.  Returns NULL (after
 * ddpi_error) when out of memory. */
void *host_scratch (struct host *h, int i, size_t len);

/* Create (local rank 0) the segment before the exchange; returns 0 or a
 * DDP_E* code after ddpi_error(). */
int host_shm_create (struct host *h);

/* Attach (other local ranks) to local rank 0's memfd. */
int host_shm_attach (struct host *h, pid_t pid0, int fd0);

/* Local rank 0 waits (bounded) until every local rank attached, then
 * closes the memfd.  Returns 0, DDP_ETIMEDOUT after ddpi_error(), or
 * HOST_EVENT (a local rank gone). */
int host_shm_wait_attached (struct host *h);

void host_shm_destroy (struct host *h);

/* Wait until flags[lr].<which> >= s (which: 0 seq, 1 red, 2 fin),
 * watching the fault record, peer liveness, the links (host_tcp_poll())
 * and the deadline; a wait on red or fin goes on while lr's beat moves.
 * Returns 0 or HOST_EVENT, h->ev saying what ended it: the record claimed
 * (HOST_EV_RECORD; not a later call's mismatch: host_record_stops), a
 * local rank gone (HOST_EV_PEER_GONE), lr absent at the deadline
 * (HOST_EV_ABSENT, with lr and s) or its result late past HOST_LATE_S
 * more (HOST_EV_LATE). */
int host_wait_flag (struct host *h, int lr, int which, uint64_t s);

/* host_wait_flag() for every local rank but this one. */
int host_wait_all (struct host *h, int which, uint64_t s);

/* host_wait_flag() for local ranks 0..n-1 but this one. */
int host_wait_first (struct host *h, int n, int which, uint64_t s);

/* Local peers alive?  Returns 0, or HOST_EVENT (HOST_EV_PEER_GONE naming
 * the dead one). */
int host_check_peers (struct host *h);

/* Set this rank's flag which (0 seq, 1 red, 2 fin) to s. */
void host_post (struct host *h, int which, uint64_t s);

/* ---- shm.c: single copy between local ranks (process_vm_readv) ----
 * A rank posts the address of its buffer with a step; a node-mate reads
 * it straight from the rank's memory, one copy instead of two through the
 * segment.  Whether the node may (the kernel or a container may forbid
 * it, DDP_CMA=0 turns it off) is put to a vote: every rank offers an
 * address at set-up, probes every node-mate's, and votes. */

/* At set-up: offer this rank's probe address. */
void host_cma_offer (struct host *h);

/* Probe every node-mate's offered address and post this rank's vote
 * (flags.cma; no when DDP_CMA=0 here, h->cma_refused).  Call it in a step, before posting it: node-mates still
 * in set-up have offered by then. */
void host_cma_vote (struct host *h);

/* Whether every local rank voted yes (read after a step all posted). */
bool host_cma_agreed (struct host *h);

/* Post p (and q: a second buffer, or NULL) as this rank's buffers of the
 * step it is about to post. */
void host_cma_post (struct host *h, const void *p, const void *q);

/* Copy len bytes at offset off of local rank lr's buffer (which: 0 its p,
 * 1 its q) of its last posted step into dst.  Returns 0, HOST_EVENT (lr
 * gone: HOST_EV_PEER_GONE), or DDP_ETRANSPORT after ddpi_error(). */
int host_cma_read (struct host *h, int lr, int which, size_t off, void *dst,
                   size_t len);

/* Where in its page (0 .. HOST_PAGE - 1) byte off of local rank lr's
 * buffer (which, as above) lies: a reader puts its copy at the same
 * offset (shm.c: a copy landing a few bytes past its source's offset is
 * many times slower on some CPUs). */
#define HOST_PAGE 4096u
size_t host_cma_page_off (struct host *h, int lr, int which, size_t off);

/* ---- tcp.c, mesh.c: links between the lanes of partner nodes ---- */

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

/* Before host_tcp_close after a fault the others must hear of (a
 * mismatch that no rank may miss, ddp_finalize included): end this
 * rank's sending on every link (shutdown, after the bytes queued), then
 * wait until each peer closed its side or window seconds passed, reading
 * nothing: a peer still sending to this rank blocks and reads the FAULT
 * frame, a peer in a call reads it, and neither meets a reset first (a
 * close with unread input resets the connection, and a send that meets
 * the reset names the peer dead before its frames are read).  No-op
 * without links. */
void host_tcp_linger (struct host *h, double window);

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
    size_t piece;       /* send: most payload bytes per sendmsg() */
    size_t ahead;       /* receive: most bytes a read takes beyond it */
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
 * (HOST_EV_LINK_BAD: the ranks passed different arguments to the call,
 * or made different calls; fault.c).  Counts messages and bytes
 * in h->stats[h->kind], and bumps this rank's beat.  Watches the fault
 * record and every link (a FAULT frame on any of them is taken into the
 * record).  Waits at most DDP_TIMEOUT without progress.
 * Returns 0 or HOST_EVENT, h->ev saying what ended it: the record claimed
 * (HOST_EV_RECORD; not a later call's mismatch), a link lost
 * (HOST_EV_LINK_LOST: after 0.1 s for a FAULT frame that would explain
 * it), a frame not the one awaited (HOST_EV_LINK_BAD), no progress
 * (HOST_EV_STALLED).  A receive on a link the round also sends on may
 * read frames ahead (DDP_TCP_READAHEAD); they wait in the link's buffer,
 * taken before its socket by every later read (FAULT frames among them by
 * host_tcp_poll too). */
int host_tcp_run (struct host *h, struct host_op *ops, int nops);

/* Without blocking, read frame headers that arrived (or were read ahead)
 * on links nobody is receiving on: take a FAULT frame into the record
 * (record.h); park a
 * data frame for the op that will take it; note a link the peer closed;
 * take a FAULT frame sent on the side (tcp.h: SIDE_MAGIC).  For
 * shared-memory waits (shm.c) and a call's end (coll.c, relay->poll). */
void host_tcp_poll (struct host *h);

/* What the fault relay watches for connections to this lane's listening
 * socket (readable: call host_tcp_gate), or -1 (not a lane). */
int host_tcp_gate_fd (struct host *h);

/* Start a non-blocking connect to a's address ai (or, failing that, a
 * later one): returns the socket, with *ai the address being tried, or -1
 * when none is left. */
int host_tcp_connect_start (const struct host_addr *a, uint32_t *ai);

/* ---- flood.c ---- */

/* The relay of fault records over the links (host_core.h). */
extern const struct fault_relay host_flood_relay;

#endif /* DDP_TRANSPORT_H */
