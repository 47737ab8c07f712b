/* tcp.h - the wire format of the host backend's links, shared by the link
 * layer (tcp.c, mesh.c) and the fault relay (flood.c), and the links'
 * state (tcp.c, mesh.c).  Internal to libddp; part of the transport. */
#ifndef DDP_TCP_H
#define DDP_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "gate.h"
#include "host_core.h"

struct host;
struct host_addr;
struct link;

#define HELLO_MAGIC 0x6464702d68656c6fULL   /* "ddp-helo": a link */
#define GATHER_MAGIC 0x6464702d67617468ULL  /* "ddp-gath": fault lists */
#define SIDE_MAGIC 0x6464702d73696465ULL    /* "ddp-side": one FAULT */
#define FRAME_DATA 0x44415441u              /* "DATA" */
#define FRAME_FAULT 0x4641554cu             /* "FAUL" */
#define FRAME_LIST 0x4c495354u              /* "LIST" */

/* The first thing a connection carries. */
struct hello {
    uint64_t magic;
    uint64_t cookie;    /* the acceptor's cookie, proving we mean it */
    uint32_t node;      /* the connector's node */
    uint32_t lane;      /* the connector's lane (its local rank) */
};

/* Every message starts with a frame.  DATA: arg is the tag of the message
 * in its algorithm, seq the call number, len the payload bytes that
 * follow, what and count the call as its sender described it (host_desc:
 * kind, dtype, op, root; count), so that a receiver whose call differs
 * fails it naming both calls (fault.c), even where the bytes agree, and
 * trail the digest of the sender's calls before it (trail.h), so that a
 * receiver whose earlier calls differed (a bcast's root that no rank
 * read) fails this one.  FAULT and LIST: arg is the first rank at fault
 * (or the fallback of an empty list; LIST: the sender's node), seq packs
 * the kind (bits 0-15), how many ranks follow (16-31) and how many there
 * are in all (32-63); len is who noticed.  The ranks follow as int32, then what
 * each was doing as uint64 (host_core.h: FAULT_STATE; 0 unknown). */
struct frame {
    uint32_t type;
    int32_t arg;
    uint64_t seq;
    uint64_t len;
    uint64_t what;      /* DATA: host_desc's what, count, trail; else 0 */
    uint64_t count;
    uint64_t trail;
};

#define FAULT_SEQ(kind, nlist, n) \
    ((uint64_t)(kind) | (uint64_t)(nlist) << 16 | (uint64_t)(n) << 32)
#define FAULT_SEQ_KIND(seq) ((int)((seq) & 0xffff))
#define FAULT_SEQ_NLIST(seq) ((int)((seq) >> 16 & 0xffff))
#define FAULT_SEQ_N(seq) ((int)((seq) >> 32 & 0x7fffffff))

/* A FAULT (or LIST) frame with its ranks and their states, as one send()
 * puts it out. */
struct fault_msg {
    struct frame f;
    unsigned char body[FAULT_LIST_MAX * (sizeof (int32_t) + sizeof (uint64_t))];
};

/* Fill m as a FAULT frame for ranks (nlist listed, 0..FAULT_LIST_MAX, of
 * n; ranks[0] is read even when nlist is 0: the fallback) and their states
 * (NULL: unknown), noticed by rank reporter in its collective call (0:
 * unknown).  The frame's len carries the reporter (low half) and the
 * call's low half (high half).  Returns the bytes to send. */
size_t host_fault_msg_fill (struct fault_msg *m, const int *ranks,
                            const uint64_t *states, int nlist, int n,
                            int kind, int reporter, uint64_t call);

/* The call a FAULT frame names (the low half wire, 0: unknown), as the
 * call nearest to here (this rank's h->call) with that low half: ranks
 * are far fewer than 2^31 calls apart.  0 for 0, or where it would come
 * before the first call. */
uint64_t host_fault_call_near (uint64_t here, uint32_t wire);

/* The ranks a FAULT or LIST frame f names, read from fd (after what link
 * l read ahead of it; l NULL: a connection of its own) into list and
 * their states into states (sent with it in one send(), so they are there
 * or about to be: 100 ms at most); untrusted numbers out of range become
 * peer.  Returns how many, with *whole false (and 0) when they did not
 * come. */
int host_frame_list (struct host *h, int fd, struct link *l, int peer,
                     const struct frame *f, int32_t *list, uint64_t *states,
                     bool *whole);

/* Non-blocking: send the FAULT message msg (len bytes) on every link of
 * this rank.  side[i] (one per link) gets 0 when link i carries it, 1 when
 * it is queued behind bytes not sent yet (lost if this process ends with
 * unread input: the kernel resets the link), 2 when the link cannot carry
 * it (in the middle of a frame, or full): then it must go on the side and
 * the link be cut (host_tcp_cut). */
void host_tcp_send_fault (struct host *h, const struct fault_msg *msg,
                          size_t len, int *side);

/* Are bytes of this rank still waiting in one of its links' sockets to be
 * sent (an exit with unread input on that link would drop them)? */
bool host_tcp_unsent (struct host *h);

/* Cut link i (both directions): its peer sees it end at once. */
void host_tcp_cut (struct host *h, int i);

/* Take a connection of a speaker's swap of lists (flood.c) that a wait on
 * the links accepted, its hello read: *fd and the speaker's *node.
 * Returns 1, or 0 when none is kept. */
int host_tcp_stashed (struct host *h, int *fd, int *node);

/* Without blocking, do what connections to this lane's listening socket
 * call for (gate.h): accept them, read what they sent, take a FAULT frame
 * sent on the side, keep a speaker's swap (host_tcp_stashed), close the
 * rest (a stranger, or too slow).  Never waits for a connection. */
void host_tcp_gate (struct host *h);

/* Put a's addresses in the order to try them (same_net: the peer runs on
 * this machine, in this rank's network namespace): loopback first for a
 * peer on our network, then addresses on a subnet of one of this node's
 * interfaces, then the others; dropped, for a peer elsewhere: its loopback
 * addresses and any address that is also one of ours (docker0's, the same
 * on every node: it would reach this node).  ifsel.h's
 * ddpi_peer_addr_rank. */
void host_tcp_order_addrs (struct host_addr *a, bool same_net);

/* The addresses of lane `lane` of partner i in the order to try them:
 * host_tcp_order_addrs, then the address this lane's link to that node
 * was made on (part[i].ip_ok) moved first, since the partner's lanes
 * offer the same addresses: the fault relay's connections (flood.c),
 * which have a fraction of a second, do not spend it on an address that
 * leads nowhere. */
struct host_addr host_tcp_partner_addrs (struct host *h, int i, int lane);

/* ---- the links' state (tcp.c, mesh.c) ---- */

#define EVENTS 64           /* epoll events per wait (more come next time) */
#define STASH_MAX 16        /* fault-list connections kept for flood.c */
#define LISTEN_EV UINT64_MAX    /* epoll data of the gate (gate.h) */

/* One link: a connection to this lane on a partner node. */
struct link {
    int fd;
    int node;               /* the partner node */
    int peer;               /* the global rank at the other end */
    uint32_t ev;            /* events registered with epoll */
    struct frame in;        /* a header read outside of an op */
    size_t in_hdr;          /* its bytes so far */
    bool parked;            /* a data header waits for the op to take it */
    bool closed;            /* the peer closed it (or it failed) */
    bool mid;               /* a frame is partly sent: nothing may follow */
    int rx, tx;             /* the active receive / send op, or -1 */
    bool tx_blocked;        /* that send waits for room */
    /* Bytes read ahead: what a read took beyond what it needed (the next
     * frames of a sender running ahead, a payload with its header), read
     * before the socket.  rb_off..rb_len of rb (h->tune.tcp_ahead bytes
     * of host_links.rbuf; NULL: none, every read exact). */
    char *rb;
    size_t rb_off, rb_len;
};

struct host_links {
    int ep;
    int n;
    struct link *l;         /* one per partner, ascending nodes */
    char *rbuf;             /* the links' read-ahead buffers, or NULL */
    /* Connections of a speaker's swap of lists (flood.c) accepted while
     * waiting for side FAULT frames: their socket and node, hello read. */
    int nstash;
    int stash_fd[STASH_MAX], stash_node[STASH_MAX];
    /* Connections to the listening socket not known yet (a lane; else
     * its ep is -1): read without blocking until their hello tells. */
    struct gate gate;
};

static inline int ep_add (int ep, int fd, uint32_t ev, uint64_t data)
{
    struct epoll_event e = { .events = ev, .data.u64 = data };
    return epoll_ctl (ep, EPOLL_CTL_ADD, fd, &e);
}

static inline int ep_mod (int ep, int fd, uint32_t ev, uint64_t data)
{
    struct epoll_event e = { .events = ev, .data.u64 = data };
    return epoll_ctl (ep, EPOLL_CTL_MOD, fd, &e);
}

#endif /* DDP_TCP_H */
