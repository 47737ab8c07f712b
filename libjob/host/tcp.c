/* tcp.c - the links between the lanes of partner nodes once made
 * (transport.h; mesh.c makes them): framed messages, rounds of sends and
 * receives on epoll with their deadline, FAULT frames taken into the
 * node's record (record.h).  What ends a round (a link lost, a wrong
 * frame, the deadline, a fault record) is reported (h->ev, HOST_EVENT),
 * not decided: fault.c does that. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "record.h"
#include "net.h"
#include "schedule.h"
#include "tcp.h"
#include "transport.h"

#define IOV_BATCH 64        /* iovecs per sendmsg/recvmsg */


/* ------------------------------------------------------ read-ahead */

/* Bytes link l read ahead and nobody took yet. */
static size_t rb_have (const struct link *l)
{
    return l->rb_len - l->rb_off;
}

/* Take up to n bytes of what link l read ahead into dst.  Returns how
 * many. */
static size_t rb_take (struct link *l, void *dst, size_t n)
{
    size_t k = rb_have (l) < n ? rb_have (l) : n;

    if (k == 0)
        return 0;
    memcpy (dst, l->rb + l->rb_off, k);
    l->rb_off += k;
    if (l->rb_off == l->rb_len)
        l->rb_off = l->rb_len = 0;
    return k;
}

/* Room at the end of link l's read-ahead buffer, its bytes moved to the
 * front first.  Returns the room, 0 when there is no buffer
 * (DDP_TCP_READAHEAD 0, or memory was short: reads are then exact). */
static size_t rb_room (const struct host *h, struct link *l)
{
    size_t cap = h->tune.tcp_ahead;

    if (!l->rb)
        return 0;
    if (l->rb_off > 0) {
        memmove (l->rb, l->rb + l->rb_off, rb_have (l));
        l->rb_len -= l->rb_off;
        l->rb_off = 0;
    }
    return cap - l->rb_len;
}

/* ---------------------------------------------------------------- frames */

/* Ranks from a wire are untrusted: one out of range becomes the peer. */
static void clamp_ranks (struct host *h, int peer, int32_t *list, int nlist)
{
    for (int i = 0; i < nlist; i++)
        if (list[i] < 0 || list[i] >= h->size)
            list[i] = peer;
}

int host_frame_list (struct host *h, int fd, struct link *l, int peer,
                     const struct frame *f, int32_t *list, uint64_t *states,
                     bool *whole)
{
    int nlist = FAULT_SEQ_NLIST (f->seq);
    unsigned char body[sizeof (((struct fault_msg *)0)->body)] = { 0 };
    size_t nb = (size_t)nlist * sizeof (int32_t), want, got;

    *whole = nlist >= 0 && nlist <= FAULT_LIST_MAX;
    if (*whole && nlist > 0) {
        want = nb + (size_t)nlist * sizeof (uint64_t);
        got = l ? rb_take (l, body, want) : 0;
        *whole = got == want
                 || ddpi_io_full (fd, body + got, want - got, false,
                                  ddpi_now () + 0.1) == 0;
    }
    if (!*whole)
        nlist = 0;
    memcpy (list, body, (size_t)nlist * sizeof (int32_t));
    memcpy (states, body + nb, (size_t)nlist * sizeof (uint64_t));
    clamp_ranks (h, peer, list, nlist);
    return nlist;
}

/* A FAULT frame f arrived on fd (link l's, or NULL: a connection of its
 * own) from peer's side: claim its record (the first claim stands; the
 * list may be empty: a timeout between nodes, its first rank the
 * fallback). */
static void fault_take (struct host *h, int fd, struct link *l, int peer,
                        const struct frame *f)
{
    int32_t list[FAULT_LIST_MAX];
    uint64_t states[FAULT_LIST_MAX];
    int kind = FAULT_SEQ_KIND (f->seq), nlist, fallback;
    uint64_t lo = f->len & 0xffffffffu;
    int reporter = lo < (uint64_t)h->size ? (int)lo : peer;
    uint64_t call = host_fault_call_near (h->call, (uint32_t)(f->len >> 32));
    bool whole;

    if (FAULT_KIND (kind) < FAULT_DIED || FAULT_KIND (kind) > FAULT_KILLED)
        kind = FAULT_DIED;
    nlist = host_frame_list (h, fd, l, peer, f, list, states, &whole);
    fallback = f->arg >= 0 && f->arg < h->size ? f->arg : peer;
    if (nlist > 0) {
        if (host_fault_claim (h, list, nlist, FAULT_SEQ_N (f->seq), kind,
                              reporter, call))
            host_fault_merge (h, list, states, nlist, FAULT_SEQ_N (f->seq));
    }
    else
        host_fault_claim (h, &fallback, 0, 0, kind, reporter, call);
}

/* ------------------------------------------------------------ lookups */

int host_tcp_link (struct host *h, int node)
{
    int lo = 0, hi = h->npart - 1;

    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (h->part[mid].node == node)
            return mid;
        if (h->part[mid].node < node)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

int host_tcp_peer (struct host *h, int i)
{
    return h->lk->l[i].peer;
}

/* A FAULT frame arrived on link i (its header in l->in). */
static void fault_in (struct host *h, int i)
{
    struct link *l = &h->lk->l[i];

    fault_take (h, l->fd, l, l->peer, &l->in);
    l->in_hdr = 0;
}

/* A side FAULT frame is read whole into a pending connection's buffer. */
_Static_assert (sizeof (struct hello) + sizeof (struct fault_msg) <= GATE_BUF,
                "gate.h: GATE_BUF holds a hello and a FAULT frame");

/* A connection to the listening socket after the links were made, with
 * the bytes asked for in slot of the gate (gate.h; first its hello): a
 * partner lane's FAULT frame sent on the side (its link to us could not
 * carry it, flood.c), taken once all of it is there (one send: it comes
 * at once); or a speaker's swap of lists, kept for flood.c
 * (host_tcp_stashed).  Anything else is dropped.  Reads nothing itself:
 * the gate reads, without blocking. */
static void side_judge (struct host *h, int slot)
{
    struct host_links *lk = h->lk;
    struct gate_conn *c = &lk->gate.c[slot];
    size_t head = sizeof (struct hello) + sizeof (struct frame), want;
    struct hello hi;
    struct frame f;
    struct link body = { .fd = -1 };
    int i, nlist;

    memcpy (&hi, c->buf, sizeof (hi));
    if (hi.cookie != h->cookie || hi.node >= (uint32_t)h->nnodes
        || (i = host_tcp_link (h, (int)hi.node)) < 0)
        goto drop;
    if (hi.magic == GATHER_MAGIC && lk->nstash < STASH_MAX) {
        lk->stash_fd[lk->nstash] = gate_take (&lk->gate, slot);
        lk->stash_node[lk->nstash++] = (int)hi.node;
        return;
    }
    if (hi.magic != SIDE_MAGIC)
        goto drop;
    if (c->got < head) {
        gate_ask (&lk->gate, slot, head);
        return;
    }
    memcpy (&f, c->buf + sizeof (hi), sizeof (f));
    if (f.type != FRAME_FAULT)
        goto drop;
    nlist = FAULT_SEQ_NLIST (f.seq);
    want = head + (nlist >= 0 && nlist <= FAULT_LIST_MAX
                   ? (size_t)nlist * (sizeof (int32_t) + sizeof (uint64_t))
                   : 0);
    if (c->got < want) {
        gate_ask (&lk->gate, slot, want);
        return;
    }
    /* The ranks, read already, are taken as if read ahead on a link. */
    body.rb = (char *)c->buf + head;
    body.rb_len = want - head;
    fault_take (h, c->fd, &body, lk->l[i].peer, &f);
drop:
    gate_drop (&lk->gate, slot);
}

void host_tcp_gate (struct host *h)
{
    int slot;

    /* Bounded: a stream of connections cannot keep us here. */
    for (int k = 0; h->lk && k < GATE_MAX
                    && (slot = gate_next (&h->lk->gate, ddpi_now ())) >= 0;
         k++)
        side_judge (h, slot);
}

int host_tcp_stashed (struct host *h, int *fd, int *node)
{
    struct host_links *lk = h->lk;

    if (!lk || lk->nstash == 0)
        return 0;
    lk->nstash--;
    *fd = lk->stash_fd[lk->nstash];
    *node = lk->stash_node[lk->nstash];
    return 1;
}

/* Read more of link l's header into l->in without blocking, taking what
 * was read ahead first; a read from the socket may take up to ahead bytes
 * more than the header (SIZE_MAX: as many as fit).  Returns 1 when it is
 * whole, 0 when more is to come, -1 when the link closed. */
static int read_header (const struct host *h, struct link *l, size_t ahead)
{
    size_t need = sizeof (l->in) - l->in_hdr, room;
    ssize_t r;

    l->in_hdr += rb_take (l, (char *)&l->in + l->in_hdr, need);
    if (l->in_hdr == sizeof (l->in))
        return 1;
    need = sizeof (l->in) - l->in_hdr;
    if ((room = rb_room (h, l)) >= need) {
        r = recv (l->fd, l->rb + l->rb_len,
                  ahead < room - need ? need + ahead : room, MSG_DONTWAIT);
        if (r > 0) {
            l->rb_len += (size_t)r;
            r = (ssize_t)rb_take (l, (char *)&l->in + l->in_hdr, need);
        }
    }
    else
        r = recv (l->fd, (char *)&l->in + l->in_hdr, need, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK
                   && errno != EINTR))
        return -1;
    if (r > 0)
        l->in_hdr += (size_t)r;
    return l->in_hdr == sizeof (l->in);
}

/* Link i is readable and no op receives on it: read what header there
 * is; a FAULT frame is claimed, a data frame parked, a close noted (the
 * peer may simply have finished: only an op that needs the link makes it
 * a fault). */
static void drain (struct host *h, int i)
{
    struct link *l = &h->lk->l[i];
    int r;

    if (l->fd < 0 || l->closed || l->parked || l->rx >= 0)
        return;
    if ((r = read_header (h, l, 0)) < 0) {
        l->closed = true;
        return;
    }
    if (r == 0)
        return;
    if (l->in.type == FRAME_FAULT)
        fault_in (h, i);
    else
        l->parked = true;
}

/* The events link i should be watched for. */
static uint32_t wanted (const struct link *l)
{
    uint32_t ev = 0;

    if (l->fd < 0 || l->closed)
        return 0;
    if (!l->parked || l->rx >= 0)
        ev |= EPOLLIN;
    if (l->tx >= 0 && l->tx_blocked)
        ev |= EPOLLOUT;
    return ev;
}

static void update_events (struct host *h)
{
    for (int i = 0; i < h->lk->n; i++) {
        struct link *l = &h->lk->l[i];
        uint32_t ev = wanted (l);
        if (ev == l->ev || l->fd < 0)
            continue;
        ep_mod (h->lk->ep, l->fd, ev, (uint64_t)i);
        l->ev = ev;
    }
}

/* Wait up to ms for an event; drain the links nobody receives on. */
static void wait_events (struct host *h, int ms)
{
    struct epoll_event ev[EVENTS];
    int n;

    /* Frames read ahead do not make their socket readable again: a FAULT
     * frame among them is taken here. */
    for (int i = 0; i < h->lk->n; i++)
        if (rb_have (&h->lk->l[i]) > 0)
            drain (h, i);
    update_events (h);
    n = epoll_wait (h->lk->ep, ev, EVENTS, ms);
    for (int k = 0; k < n; k++) {
        int i = (int)ev[k].data.u64;
        if (ev[k].data.u64 == LISTEN_EV)
            host_tcp_gate (h);
        else if (i >= 0 && i < h->lk->n && h->lk->l[i].rx < 0)
            drain (h, i);
    }
}

/* The peer behind link i is gone in the middle of an exchange with it.
 * It may have left because it failed on something else, and said so: a
 * FAULT frame may still be on this link or arrive on another (from a node
 * it told).  Give that a moment (0.1 s) before naming the peer dead. */
static int link_lost (struct host *h, int i, const char *what)
{
    struct link *l = &h->lk->l[i];
    double end = ddpi_now () + 0.1;

    ddpi_debug ("link to node %d (rank %d): %s", l->node, l->peer, what);
    if (l->fd >= 0 && l->rx < 0 && read_header (h, l, SIZE_MAX) == 1
        && l->in.type == FRAME_FAULT)
        fault_in (h, i);
    while (!atomic_load (&h->hdr->fault_rank) && ddpi_now () < end)
        wait_events (h, 10);
    if (atomic_load (&h->hdr->fault_rank))
        return host_event (h, HOST_EV_RECORD, -1);
    return host_event (h, HOST_EV_LINK_LOST, l->peer);
}

void host_tcp_poll (struct host *h)
{
    if (h->lk)
        wait_events (h, 0);
}

/* Are bytes of link i still waiting in our socket to be sent?  They would
 * be lost if this process ended with unread input (the kernel resets the
 * connection and drops them). */
static bool unsent (const struct link *l)
{
    int n = 0;

    return ioctl (l->fd, SIOCOUTQNSD, &n) < 0 || n > 0;
}

void host_tcp_send_fault (struct host *h, const struct fault_msg *msg,
                          size_t len, int *side)
{
    for (int i = 0; h->lk && i < h->lk->n; i++) {
        struct link *l = &h->lk->l[i];
        side[i] = 0;
        if (l->fd < 0 || l->closed)
            continue;
        /* In the middle of a frame the fault cannot be framed: the link
         * will be cut (after the frame went on the side). */
        if (l->mid || send (l->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL)
                      != (ssize_t)len)
            side[i] = 2;
        else if (unsent (l))
            side[i] = 1;
    }
}

bool host_tcp_unsent (struct host *h)
{
    for (int i = 0; h->lk && i < h->lk->n; i++) {
        struct link *l = &h->lk->l[i];
        if (l->fd >= 0 && !l->closed && unsent (l))
            return true;
    }
    return false;
}

void host_tcp_cut (struct host *h, int i)
{
    if (h->lk && i >= 0 && i < h->lk->n && h->lk->l[i].fd >= 0)
        shutdown (h->lk->l[i].fd, SHUT_RDWR);
}

uint64_t host_fault_call_near (uint64_t here, uint32_t wire)
{
    int64_t d = (int32_t)(wire - (uint32_t)here);

    if (wire == 0 || (d < 0 && (uint64_t)-d >= here))
        return 0;
    return here + (uint64_t)d;
}

size_t host_fault_msg_fill (struct fault_msg *m, const int *ranks,
                            const uint64_t *states, int nlist, int n,
                            int kind, int reporter, uint64_t call)
{
    size_t nb;

    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    if (nlist < 0)
        nlist = 0;
    nb = (size_t)nlist * sizeof (int32_t);
    m->f = (struct frame){ FRAME_FAULT, ranks[0], FAULT_SEQ (kind, nlist, n),
                           (uint64_t)(uint32_t)reporter
                           | (uint64_t)(uint32_t)call << 32, 0, 0, 0 };
    for (int i = 0; i < nlist; i++) {
        int32_t r = ranks[i];
        uint64_t st = states ? states[i] : 0;
        memcpy (m->body + (size_t)i * sizeof (r), &r, sizeof (r));
        memcpy (m->body + nb + (size_t)i * sizeof (st), &st, sizeof (st));
    }
    return sizeof (m->f) + nb + (size_t)nlist * sizeof (uint64_t);
}

/* ---------------------------------------------------------------- rounds */

/* iovecs of op o from its current position, at most IOV_BATCH and max
 * payload bytes; a leading piece hdr/hlen goes first when given.  Returns
 * how many. */
static int op_iov (const struct host_op *o, struct iovec *v, void *hdr,
                   size_t hlen, size_t max)
{
    int k = 0;
    size_t off = o->voff;

    if (hlen)
        v[k++] = (struct iovec){ hdr, hlen };
    for (int i = o->vi; i < o->iovcnt && k < IOV_BATCH && max > 0; i++) {
        if (o->iov[i].iov_len > off) {
            size_t n = o->iov[i].iov_len - off;
            if (n > max)
                n = max;
            v[k++] = (struct iovec){ (char *)o->iov[i].iov_base + off, n };
            max -= n;
        }
        off = 0;
    }
    return k;
}

/* Move op o's position r bytes on. */
static void op_advance (struct host_op *o, size_t r)
{
    o->done += r;
    while (r > 0 && o->vi < o->iovcnt) {
        size_t left = o->iov[o->vi].iov_len - o->voff;
        if (r < left) {
            o->voff += r;
            return;
        }
        r -= left;
        o->vi++;
        o->voff = 0;
    }
    while (o->vi < o->iovcnt && o->iov[o->vi].iov_len == 0)
        o->vi++;
}

static void op_finish (struct host *h, struct host_op *o)
{
    struct host_stats *st = &h->stats[h->kind];
    struct link *l = &h->lk->l[o->link];

    o->fin = true;
    if (o->send) {
        st->msgs_sent++;
        st->bytes_sent += o->len;
        l->tx = -1;
        l->tx_blocked = false;
        l->mid = false;
    }
    else {
        st->msgs_recv++;
        st->bytes_recv += o->len;
        l->rx = -1;
    }
}

/* Send more of op o (its frame header first), at most o->piece payload
 * bytes.  Returns 1 on progress, 0 when blocked, <0. */
static int pump_send (struct host *h, struct host_op *o)
{
    struct link *l = &h->lk->l[o->link];
    struct frame f = { FRAME_DATA, (int32_t)o->tag, h->call, o->len,
                       h->desc.what, h->desc.count, h->desc.trail };
    size_t hleft = sizeof (f) - o->hdone;
    struct iovec v[IOV_BATCH + 1];
    struct msghdr m;
    ssize_t r;

    if (l->closed || l->fd < 0)
        return link_lost (h, o->link, "closed");
    memset (&m, 0, sizeof (m));
    m.msg_iov = v;
    m.msg_iovlen = (size_t)op_iov (o, v, (char *)&f + o->hdone, hleft,
                                   o->piece);
    r = sendmsg (l->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            l->tx_blocked = true;
            return 0;
        }
        return link_lost (h, o->link, strerror (errno));
    }
    l->tx_blocked = false;
    l->mid = true;
    if ((size_t)r < hleft) {
        o->hdone += (size_t)r;
        return 1;
    }
    o->hdone = sizeof (f);
    op_advance (o, (size_t)r - hleft);
    if (o->done == o->len)
        op_finish (h, o);
    return 1;
}

/* Link l's frame (its header in l->in) is not the one awaited (an op's
 * of tag and len; 0 and 0: none): report it (HOST_EV_LINK_BAD). */
static int frame_bad (struct host *h, struct link *l, uint32_t tag,
                      size_t len)
{
    const struct frame *f = &l->in;

    h->ev.got_data = f->type == FRAME_DATA;
    h->ev.got_call = f->seq;
    h->ev.got_tag = f->arg;
    h->ev.got_len = f->len;
    h->ev.got_what = f->what;
    h->ev.got_count = f->count;
    h->ev.got_trail = f->trail;
    h->ev.want_tag = tag;
    h->ev.want_len = len;
    h->ev.node = l->node;
    return host_event (h, HOST_EV_LINK_BAD, l->peer);
}

/* A data frame parked on a link (drain) that no op of this call will
 * take: of this call as its sender described it otherwise (another
 * count, op, root, or earlier calls: trail.h), or of an earlier call that
 * takes a root, which this rank did not receive then (the two named
 * different roots).  Seen while this rank waits (its sends blocked, its
 * receives on other links): both ranks of a bcast that each take for its
 * root send, neither receives.  HOST_EV_LINK_BAD for the first, else 0. */
static int parked_bad (struct host *h)
{
    for (int i = 0; i < h->lk->n; i++) {
        struct link *l = &h->lk->l[i];
        const struct frame *f = &l->in;
        int kind = HOST_DESC_KIND (f->what);
        if (!l->parked || f->type != FRAME_DATA || f->seq > h->call)
            continue;
        if (f->seq == h->call
            ? f->what != h->desc.what || f->count != h->desc.count
                  || f->trail != h->desc.trail
            : kind < HOST_DESC_BARRIER
                  && ddp_coll_has_root ((enum ddp_coll_kind)kind))
            return frame_bad (h, l, 0, 0);
    }
    return 0;
}

/* The header of link i's frame is in: is it the one op o waits for?
 * Returns 0; 1: a FAULT frame that does not end this call (a later
 * call's mismatch, host_record_stops) was taken, o's header is still to
 * come; or HOST_EVENT: a FAULT frame, or another frame than o's (another
 * call, as its sender described it, or another part or size of it: the
 * ranks passed different arguments to the call or made different calls;
 * fault.c's link_bad says which). */
static int check_header (struct host *h, struct host_op *o)
{
    struct link *l = &h->lk->l[o->link];
    struct frame *f = &l->in;

    l->parked = false;
    if (f->type == FRAME_FAULT) {
        fault_in (h, o->link);
        /* A later call's mismatch: o's data follows (host_record_stops) */
        return host_record_stops (h) ? host_event (h, HOST_EV_RECORD, -1)
                                     : 1;
    }
    if (f->type != FRAME_DATA || f->seq != h->call
        || f->arg != (int32_t)o->tag || f->len != o->len
        || f->what != h->desc.what || f->count != h->desc.count
        || f->trail != h->desc.trail)
        return frame_bad (h, l, o->tag, o->len);
    l->in_hdr = 0;
    o->hdr = true;
    return 0;
}

/* A read into mine bytes of op o's buffers and link l's read-ahead
 * buffer behind them brought r bytes: o's first, the rest l's. */
static void ahead_split (struct link *l, struct host_op *o, size_t mine,
                         size_t r)
{
    if (mine > r)
        mine = r;

    op_advance (o, mine);
    l->rb_len += r - mine;
}

/* Copy what link l read ahead into op o's buffers. */
static void op_take (struct link *l, struct host_op *o)
{
    while (o->done < o->len && rb_have (l) > 0) {
        const struct iovec *v = &o->iov[o->vi];
        op_advance (o, rb_take (l, (char *)v->iov_base + o->voff,
                                v->iov_len - o->voff));
    }
}

/* How much of receive op o's payload the read of its header may take:
 * all of a small one (at most half the read-ahead buffer), so that a
 * small message on a link that only receives in the round costs one
 * recv() instead of two, and never a byte beyond the message (ahead()
 * says why).  Measured on the networked cluster (2 CPUs, AMD, 3000
 * calls, 12 rounds alternated, median of the rounds' medians, us):
 * gather of 1 KiB at 2, 3, 4 x 1 2.4 -> 1.5, 4.3 -> 2.5, 4.4 -> 3.0
 * (Open MPI 1.4, 1.6, 4.3); allgather of 1 KiB at 3 and 4 x 1 50.8 ->
 * 48.5, 69.1 -> 66.3 (MPI 59.2, 62.3); 8 B within the rounds' spread. */
static size_t with_header (const struct host *h, const struct host_op *o)
{
    return o->len <= h->tune.tcp_ahead / 2 ? o->len : 0;
}

/* Receive more of op o: what its link read ahead, then from the socket
 * into o's buffers and, behind them, the link's read-ahead buffer.
 * Returns 1 on progress, 0 when blocked, <0. */
static int pump_recv (struct host *h, struct host_op *o)
{
    struct link *l = &h->lk->l[o->link];
    struct iovec v[IOV_BATCH + 1];
    struct msghdr m;
    size_t before = o->done, first, room, mine = 0, ahead = o->ahead;
    ssize_t r;
    int rc, k;

    if (!o->hdr) {
        if (l->fd < 0
            || (l->closed && l->in_hdr + rb_have (l) < sizeof (l->in)))
            return link_lost (h, o->link, "closed");
        if ((rc = read_header (h, l, ahead ? ahead : with_header (h, o))) < 0)
            return link_lost (h, o->link, "closed");
        if (rc == 0)
            return 0;
        if ((rc = check_header (h, o)) != 0)
            return rc;      /* <0, or 1: a FAULT frame taken, read on */
        if (o->len == 0) {
            op_finish (h, o);
            return 1;
        }
    }
    op_take (l, o);
    if (o->done < o->len) {
        memset (&m, 0, sizeof (m));
        m.msg_iov = v;
        m.msg_iovlen = (size_t)op_iov (o, v, NULL, 0, SIZE_MAX);
        for (size_t i = 0; i < m.msg_iovlen; i++)
            mine += v[i].iov_len;
        /* Read ahead only behind the whole rest of o's message. */
        if (ahead > 0 && mine == o->len - o->done
            && (room = rb_room (h, l)) > 0)
            v[m.msg_iovlen++] = (struct iovec){ l->rb + l->rb_len,
                                                ahead < room ? ahead : room };
        r = recvmsg (l->fd, &m, MSG_DONTWAIT);
        if (r == 0)
            return link_lost (h, o->link, "closed");
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return link_lost (h, o->link, strerror (errno));
        if (r > 0)
            ahead_split (l, o, mine, (size_t)r);
    }
    if (o->done == before)
        return 0;
    if (o->on_seg && (k = sched_segments_done (o->len, o->seg, before,
                                               o->done, &first)) > 0) {
        size_t lo = first * o->seg, hi = (first + (size_t)k) * o->seg;
        o->on_seg (o->arg, lo, (hi < o->len ? hi : o->len) - lo);
    }
    if (o->done == o->len)
        op_finish (h, o);
    return 1;
}

/* Make op i the active one of its link and direction if none is. */
static bool op_active (struct host *h, struct host_op *ops, int i)
{
    struct link *l = &h->lk->l[ops[i].link];
    int *slot = ops[i].send ? &l->tx : &l->rx;

    if (*slot < 0)
        *slot = i;
    return *slot == i;
}

/* Nothing moved for too long: report it with the first peer still
 * awaited (fault.c claims a timeout with an empty list, to be filled by
 * the nodes' lists, and that peer the fallback name). */
static int stalled (struct host *h, struct host_op *ops, int nops)
{
    int who = -1;

    for (int i = 0; i < nops && who < 0; i++)
        if (!ops[i].fin && !ops[i].send)
            who = h->lk->l[ops[i].link].peer;
    for (int i = 0; i < nops && who < 0; i++)
        if (!ops[i].fin)
            who = h->lk->l[ops[i].link].peer;
    return host_event (h, HOST_EV_STALLED, who);
}

static void ops_release (struct host *h, struct host_op *ops, int nops)
{
    for (int i = 0; i < nops; i++) {
        struct link *l = &h->lk->l[ops[i].link];
        if (l->rx == i)
            l->rx = -1;
        if (l->tx == i)
            l->tx = -1;
    }
}

/* One pass over the ops: returns the progress made, or <0; *pending gets
 * how many are left. */
static int pump_all (struct host *h, struct host_op *ops, int nops,
                     int *pending)
{
    int progress = 0, rc;

    *pending = 0;
    for (int i = 0; i < nops; i++) {
        if (ops[i].fin)
            continue;
        (*pending)++;
        if (!op_active (h, ops, i))
            continue;
        rc = ops[i].send ? pump_send (h, &ops[i]) : pump_recv (h, &ops[i]);
        if (rc < 0)
            return rc;
        progress += rc;
        if (ops[i].fin)
            (*pending)--;
    }
    return progress;
}

/* The bytes of a message of len that one sendmsg() may carry: len cut
 * into equal pieces of at most DDP_TCP_PIECE (so that a message just over
 * it is not sent as a piece and a sliver).  Why: sendmsg() holds the
 * socket while it copies, and on loopback also runs the receive side of
 * what it sent; what the peer sends meanwhile waits in the socket's
 * backlog, ACKs included.  One sendmsg() of 512 KiB took 120 us (strace,
 * 2 nodes x 1 rank, allgather of 1 MiB: 210 us a call, Open MPI 114 us in
 * four 128 KiB writev()s).  Pieces below one loopback segment (MSS 65483)
 * took it to 104-110 us; 64 KiB pieces and more were as slow as none.  A
 * round that only sends gains too, its window no longer waiting on ACKs
 * held in the backlog: 2 x 1 bcast of 16 MiB 3.0-3.4 -> 2.1 ms, gather
 * of 256 KiB 40 -> 14-18 us (doc/benchmarks.md). */
static size_t piece (const struct host *h, size_t len)
{
    size_t max = h->tune.tcp_piece, n;

    if (max == 0 || len <= max)
        return SIZE_MAX;
    n = (len + max - 1) / max;
    return (len + n - 1) / n;
}

/* How far the reads of receive op i may go beyond its message.  Only in
 * an exchange (the round also sends on that link), where they save a
 * system call a message (a header with its payload, the frames a peer
 * sent ahead): as far as the buffer goes for a small message, the next
 * header for one larger than half of it (its payload goes straight to
 * the caller's buffer, not through a copy).  A link that only receives
 * in the round reads exactly: on loopback a receiver that empties its
 * socket at every read makes the kernel acknowledge every message or
 * two, and the sender, which handles those ACKs and the freed buffers,
 * slows down more than the reads gain (2 x 1 gather of 8 B, a call after
 * another: 0.6 -> 2.0-2.4 us; the same rounds in an allreduce gain 5-11%,
 * doc/benchmarks.md). */
static size_t ahead (const struct host *h, const struct host_op *ops,
                     int nops, int i)
{
    for (int j = 0; j < nops; j++)
        if (ops[j].send && ops[j].link == ops[i].link)
            return ops[i].len <= h->tune.tcp_ahead / 2 ? SIZE_MAX
                                                       : sizeof (struct frame);
    return 0;
}

/* An exchange whose messages are all at most this size yields the CPU
 * while it waits, for the yield time of node waits (host.c's set_spin:
 * 20 ms, none where the machine has more than 24 ranks a CPU), before it
 * sleeps in epoll_wait; larger ones sleep at once.  Where the ranks
 * outnumber the CPUs a waiter does not spin (spin_us 0), and each message
 * then had to wake its receiver from epoll_wait.  Measured on 2 CPUs
 * (Intel, 2026-11-28), ddp-bench medians, sleeping -> yielding: 4 x 1
 * barrier 34.6 -> 21.7 us, allreduce 8 B 32.7 -> 22.4, 32 KiB 79 -> 52;
 * 8 x 1 128 -> 58, 117 -> 46, 269 -> 134; 16 x 1 347 -> 192, 340 ->
 * 150, 781 -> 478 (Open MPI in sweep J: 4 x 1 26 and 24 us, 8 x 1 74 and
 * 76, 16 x 1 287 and 299); but 4 MiB at 8 x 1 14.5 -> 17.1 ms and 16 x 1
 * 34 -> 43 ms: there the yielding waiters take CPU time from the ranks
 * that copy. */
#define YIELD_MAX_BYTES (64u << 10)

int host_tcp_run (struct host *h, struct host_op *ops, int nops)
{
    /* DDP_TIMEOUT, no grace: the nodes' swap of lists (fault.c) finds who
     * is absent wherever the wait that ran out first was. */
    double limit = h->cfg->timeout_s;
    double last = 0, t;
    int rc = 0, pending;
    bool small = true;

    for (int i = 0; i < nops; i++) {
        small = small && ops[i].len <= YIELD_MAX_BYTES;
        ops[i].done = ops[i].voff = ops[i].hdone = 0;
        ops[i].vi = 0;
        ops[i].hdr = ops[i].fin = false;
        op_advance (&ops[i], 0);    /* past empty iovecs */
        ops[i].piece = ops[i].send ? piece (h, ops[i].len) : SIZE_MAX;
        ops[i].ahead = ops[i].send ? 0 : ahead (h, ops, nops, i);
    }
    for (;;) {
        if ((rc = pump_all (h, ops, nops, &pending)) < 0 || pending == 0)
            break;
        t = ddpi_now ();
        if (rc > 0 || last == 0) {
            if (rc > 0)
                host_beat (h);
            last = t;
            continue;
        }
        if (host_record_stops (h)) {
            rc = host_event (h, HOST_EV_RECORD, -1);
            break;
        }
        if ((rc = parked_bad (h)) < 0)
            break;
        if (t - last > limit) {
            rc = stalled (h, ops, nops);
            break;
        }
        /* Busy-poll for as long as a shared-memory wait would spin (a
         * wakeup from epoll costs several microseconds). */
        if (t - last < h->spin_us * 1e-6)
            continue;
        if (small && t - last < h->spin_us * 1e-6 + h->yield_s) {
            sched_yield ();
            continue;
        }
        wait_events (h, 20);
    }
    ops_release (h, ops, nops);
    return rc < 0 ? rc : 0;
}
