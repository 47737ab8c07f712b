/* flood.c - fault records over the links: the relay fault.c uses
 * (struct fault_relay, host_core.h).  Part of the transport: lists that
 * arrive are merged into the record (record.c); it calls nothing above.
 *
 * A FAULT frame goes out on every link of every lane of the node that
 * claimed the record; a lane that receives one claims it in its own node's
 * record, whose lanes pass it on when they report: the news floods the
 * partner graph, O(log N) hops.
 *
 * After a timeout each node's speaker (fault.c) swaps lists with the
 * speakers of its partner nodes for a window: it connects to each
 * partner's lanes (lane 0 at once, lane l after l x 100 ms: the first
 * lane of theirs not at fault is their speaker), and accepts theirs on
 * its listening socket when it is a lane (with many lanes, the tries of
 * all fit in 30% of the window).  Every list that arrives is
 * merged into the record; every change of the record is sent on every
 * connection (flooding again).  A partner node not heard from by 75% of
 * the window has no rank that reached the call: all its ranks are
 * merged, and that too floods on.
 *
 * A FAULT frame that a link cannot carry (the link is in the middle of a
 * frame or full; or it is queued behind unsent bytes, which the kernel
 * drops if this process exits with unread input on the link: a reset)
 * goes on the side: a short connection to the partner lane's listening
 * socket carrying a hello and the frame, closed at once (nothing unread:
 * the kernel delivers it even after this process is gone).  Only then is a
 * link in the middle of a frame cut, so that the peer, which sees the cut
 * first, has the record at hand: its waits take side frames (tcp.c).
 * Without this a peer that sees the link end names the lane at its other
 * end dead, not the rank at fault. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "record.h"
#include "net.h"
#include "schedule.h"
#include "tcp.h"
#include "transport.h"

#define STAGGER 0.1         /* seconds between tries of a partner's lanes */
#define STAGGER_ALL 0.3     /* at most this share of the window for all */
#define SILENT_AT 0.75      /* share of the window before naming silent */
#define SIDE_WAIT 0.25      /* seconds a side FAULT frame may take (within
                               the swap's HOST_SWAP_S: host.h) */

/* One connection of the swap. */
struct conn {
    int fd;
    int part;           /* partner index, or -1 until its hello came */
    int lane;           /* outgoing: the partner's lane */
    uint32_t ai;        /* outgoing: the address being tried */
    bool out;           /* we connected */
    bool up;            /* connected and our list sent */
};

struct swap {
    struct conn *c;
    int nc, cap;
    bool *heard;        /* per partner */
    bool *reached;      /* per partner: a connection to or from it came up */
    int *tried;         /* per partner: lanes tried so far */
    int version;        /* of the record last sent */
    double start, last_change;
    double stagger;     /* seconds between tries of a partner's lanes */
};

/* The record as a LIST message from this node. */
static size_t list_msg (struct host *h, struct fault_msg *m)
{
    int nlist = h->hdr->fault_nlist, first = atomic_load (&h->hdr->fault_rank)
                                             - 1;
    size_t len;

    if (nlist < 0 || nlist > FAULT_LIST_MAX)
        nlist = 0;
    len = host_fault_msg_fill (m, nlist ? h->hdr->fault_list : &first,
                               h->hdr->fault_state, nlist,
                               h->hdr->fault_n,
                               atomic_load (&h->hdr->fault_kind),
                               atomic_load (&h->hdr->fault_reporter),
                               h->hdr->fault_call);
    m->f.type = FRAME_LIST;
    m->f.arg = h->node;
    return len;
}

static void conn_close (struct swap *w, int i)
{
    if (w->c[i].fd >= 0)
        close (w->c[i].fd);
    w->c[i].fd = -1;
    w->c[i].up = false;
}

/* Send our list on connection i; on failure, drop it. */
static void send_list (struct host *h, struct swap *w, int i)
{
    struct fault_msg m;
    size_t len = list_msg (h, &m);

    if (send (w->c[i].fd, &m, len, MSG_DONTWAIT | MSG_NOSIGNAL)
        != (ssize_t)len)
        conn_close (w, i);
}

static int conn_add (struct swap *w, struct conn c)
{
    if (w->nc == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        struct conn *n = realloc (w->c, (size_t)cap * sizeof (*n));
        if (!n) {
            close (c.fd);
            return -1;
        }
        w->c = n;
        w->cap = cap;
    }
    w->c[w->nc++] = c;
    return 0;
}

/* A LIST from partner p arrived on connection i (header f): merge it. */
static void list_in (struct host *h, struct swap *w, int i,
                     const struct frame *f)
{
    int32_t list[FAULT_LIST_MAX];
    uint64_t states[FAULT_LIST_MAX];
    int p = w->c[i].part, peer = h->node_ranks[h->part[p].node][0];
    bool whole;
    int nlist = host_frame_list (h, w->c[i].fd, NULL, peer, f, list, states,
                                 &whole);

    w->heard[p] = true;
    if (!whole) {
        conn_close (w, i);
        return;
    }
    if (nlist > 0)
        host_fault_merge (h, list, states, nlist, FAULT_SEQ_N (f->seq));
}

/* Connection i is readable: a LIST frame (outgoing: their answer and
 * updates; incoming: its hello was read by the gate, host_tcp_gate, and
 * proved our cookie: a speaker of the job, whose frame comes whole). */
static void conn_read (struct host *h, struct swap *w, int i)
{
    struct conn *c = &w->c[i];
    struct frame f;

    if (ddpi_io_full (c->fd, &f, sizeof (f), false, ddpi_now () + 0.2) < 0
        || f.type != FRAME_LIST) {
        conn_close (w, i);
        return;
    }
    list_in (h, w, i, &f);
    if (c->fd >= 0 && !c->up) {
        c->up = true;       /* incoming: answer with ours */
        send_list (h, w, i);
    }
}

/* Outgoing connection i is writable: finish the connect, send the hello
 * and our list; or try the next address. */
static void conn_connected (struct host *h, struct swap *w, int i,
                            short revents)
{
    struct conn *c = &w->c[i];
    const struct host_addr *a = &h->part[c->part].addr[c->lane];
    struct hello hi = { GATHER_MAGIC, a->cookie, (uint32_t)h->node,
                        (uint32_t)h->lrank };
    int err = 0;
    socklen_t el = sizeof (err);

    if (getsockopt (c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err
        || (revents & (POLLERR | POLLHUP))) {
        struct host_addr o = host_tcp_partner_addrs (h, c->part, c->lane);
        close (c->fd);
        c->ai++;
        c->fd = host_tcp_connect_start (&o, &c->ai);
        return;
    }
    if (send (c->fd, &hi, sizeof (hi), MSG_DONTWAIT | MSG_NOSIGNAL)
        != (ssize_t)sizeof (hi)) {
        conn_close (w, i);
        return;
    }
    c->up = true;
    w->reached[c->part] = true;
    send_list (h, w, i);
}

/* Start trying the next lane of partners we have no connection with. */
static void start_tries (struct host *h, struct swap *w, double t)
{
    for (int p = 0; p < h->npart; p++) {
        int l = w->tried[p];
        struct host_addr a;
        struct conn c = { .fd = -1, .part = p, .out = true };
        if (w->heard[p] || l >= h->lanes || t < w->start + l * w->stagger)
            continue;
        w->tried[p]++;
        a = host_tcp_partner_addrs (h, p, l);
        c.lane = l;
        if ((c.fd = host_tcp_connect_start (&a, &c.ai)) >= 0)
            conn_add (w, c);
    }
}

/* Pass the record on when it changed since we last sent it. */
static void pass_on (struct host *h, struct swap *w, double t)
{
    int v = atomic_load (&h->hdr->fault_version);

    if (v == w->version)
        return;
    w->version = v;
    w->last_change = t;
    for (int i = 0; i < w->nc; i++)
        if (w->c[i].fd >= 0 && w->c[i].up)
            send_list (h, w, i);
}

/* Partners not heard from sent nothing in the call and did not answer
 * the swap: their ranks are named with what was observed of them
 * (FAULT_KIND_SILENT, with the node, and whether a connection with it came
 * up: one did when its ranks are stopped, none when the link is down), not
 * as having never entered the call. */
static void name_silent (struct host *h, struct swap *w)
{
    uint64_t st[FAULT_LIST_MAX];

    for (int p = 0; p < h->npart; p++) {
        int n = h->part[p].node;
        if (w->heard[p])
            continue;
        for (int i = 0; i < FAULT_LIST_MAX; i++)
            st[i] = FAULT_STATE (FAULT_SILENT_CALL (n, h->call),
                                 FAULT_KIND_SILENT, w->reached[p]);
        host_fault_merge (h, h->node_ranks[n], st, h->node_size[n],
                          h->node_size[n]);
    }
}

/* Every node is a partner and each was heard (or, silent_done, named),
 * and the record has been still for a moment: nothing more can come. */
static bool settled (struct host *h, struct swap *w, double t,
                     bool silent_done)
{
    if (h->npart != h->nnodes - 1 || t - w->last_change < 0.05)
        return false;
    for (int p = 0; p < h->npart; p++)
        if (!w->heard[p] && !silent_done)
            return false;
    return true;
}

static void adopt_stashed (struct host *h, struct swap *w);

/* One poll over the connections and the gate of our listening socket
 * (gate.h: it accepts and reads hellos without blocking; the speakers it
 * finds are adopted) (10 ms). */
static void poll_once (struct host *h, struct swap *w)
{
    struct pollfd *pfd = calloc ((size_t)w->nc + 1, sizeof (*pfd));
    int np = 0, gfd = host_tcp_gate_fd (h);

    if (!pfd)
        return;
    for (int i = 0; i < w->nc; i++)
        pfd[np++] = (struct pollfd){ w->c[i].fd,
                                     w->c[i].out && !w->c[i].up ? POLLOUT
                                                                : POLLIN, 0 };
    if (gfd >= 0)
        pfd[np++] = (struct pollfd){ gfd, POLLIN, 0 };
    if (poll (pfd, (nfds_t)np, 10) > 0) {
        for (int i = 0; i < w->nc; i++) {
            if (!pfd[i].revents || w->c[i].fd < 0)
                continue;
            if (w->c[i].out && !w->c[i].up)
                conn_connected (h, w, i, pfd[i].revents);
            else
                conn_read (h, w, i);
        }
        if (gfd >= 0 && pfd[np - 1].revents) {
            host_tcp_gate (h);
            adopt_stashed (h, w);
        }
    }
    free (pfd);
}

/* Swap connections that a wait on the links accepted (hello read). */
static void adopt_stashed (struct host *h, struct swap *w)
{
    int fd, node;

    while (host_tcp_stashed (h, &fd, &node)) {
        int p = host_tcp_link (h, node);
        if (p >= 0 && p < h->npart)
            w->reached[p] = true;
        conn_add (w, (struct conn){ .fd = fd, .part = p });
    }
}

static bool flood_gather (struct host *h, double window, int ask)
{
    struct swap w = { 0 };
    bool silent_done = false, heard = false;
    double t;

    w.heard = calloc ((size_t)h->npart + 1, sizeof (bool));
    w.tried = calloc ((size_t)h->npart + 1, sizeof (int));
    w.reached = calloc ((size_t)h->npart + 1, sizeof (bool));
    if (!w.heard || !w.tried || !w.reached)
        goto out;
    if (window < 0.05)
        window = 0.05;
    w.stagger = h->lanes > 1 && STAGGER * h->lanes > STAGGER_ALL * window
                ? STAGGER_ALL * window / h->lanes : STAGGER;
    w.start = w.last_change = ddpi_now ();
    w.version = atomic_load (&h->hdr->fault_version);
    adopt_stashed (h, &w);
    while ((t = ddpi_now ()) < w.start + window) {
        if (!silent_done && t >= w.start + SILENT_AT * window) {
            silent_done = true;
            name_silent (h, &w);
        }
        pass_on (h, &w, t);
        if (settled (h, &w, t, silent_done))
            break;
        start_tries (h, &w, t);
        poll_once (h, &w);
    }
    for (int p = 0; p < h->npart; p++)
        heard |= w.heard[p] && h->part[p].node == ask;
out:
    for (int i = 0; i < w.nc; i++)
        conn_close (&w, i);
    free (w.c);
    free (w.heard);
    free (w.reached);
    free (w.tried);
    return heard;
}

/* One side connection: partner link i's lane, the address being tried. */
struct side {
    int fd, link;
    uint32_t ai;
};

/* The ordered addresses of partner link i's lane (ours). */
static struct host_addr side_addr (struct host *h, int i)
{
    return host_tcp_partner_addrs (h, i, h->lrank);
}

/* Side connection s is writable: send the hello and the frame, or try the
 * next address.  Returns true when s is done with (fd closed). */
static bool side_ready (struct host *h, struct side *s, short revents,
                        const struct fault_msg *m, size_t len)
{
    struct host_addr a = side_addr (h, s->link);
    struct {
        struct hello hi;
        struct fault_msg m;
    } out = { { SIDE_MAGIC, a.cookie, (uint32_t)h->node,
                (uint32_t)h->lrank }, *m };
    int err = 0;
    socklen_t el = sizeof (err);

    if (getsockopt (s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err
        || (revents & (POLLERR | POLLHUP))) {
        close (s->fd);
        s->ai++;
        s->fd = host_tcp_connect_start (&a, &s->ai);
        return s->fd < 0;
    }
    /* The hello and the frame in one small send: it fits an empty socket. */
    send (s->fd, &out, sizeof (out.hi) + len, MSG_DONTWAIT | MSG_NOSIGNAL);
    close (s->fd);
    s->fd = -1;
    return true;
}

/* Send m on the side to the lanes of the links marked in want (n links),
 * all at once, for SIDE_WAIT at most. */
static void side_send (struct host *h, const int *want, int n,
                       const struct fault_msg *m, size_t len)
{
    struct side *s = calloc ((size_t)n, sizeof (*s));
    struct pollfd *pfd = calloc ((size_t)n, sizeof (*pfd));
    double end = ddpi_now () + SIDE_WAIT;
    int ns = 0, left;

    for (int i = 0; s && pfd && i < n; i++) {
        struct host_addr a;
        if (!want[i])
            continue;
        a = side_addr (h, i);
        s[ns] = (struct side){ .link = i };
        if ((s[ns].fd = host_tcp_connect_start (&a, &s[ns].ai)) >= 0)
            ns++;
    }
    left = ns;
    while (left > 0 && ddpi_now () < end) {
        for (int i = 0; i < ns; i++)
            pfd[i] = (struct pollfd){ s[i].fd, POLLOUT, 0 };
        if (poll (pfd, (nfds_t)ns, 10) <= 0)
            continue;
        for (int i = 0; i < ns; i++)
            if (s[i].fd >= 0 && pfd[i].revents
                && side_ready (h, &s[i], pfd[i].revents, m, len))
                left--;
    }
    for (int i = 0; i < ns; i++)
        if (s[i].fd >= 0)
            close (s[i].fd);
    free (s);
    free (pfd);
}

/* The relay's send: on every link, on the side where a link cannot carry
 * it (host_core.h), then cut the links in the middle of a frame. */
static void flood_send (struct host *h, const int *ranks,
                        const uint64_t *states, int nlist, int n, int kind,
                        int reporter)
{
    struct fault_msg m;
    size_t len = host_fault_msg_fill (&m, ranks, states, nlist, n, kind,
                                      reporter, h->hdr->fault_call);
    int *side = calloc ((size_t)h->npart + 1, sizeof (int)), any = 0;

    if (!side)
        return;
    host_tcp_send_fault (h, &m, len, side);
    for (int i = 0; i < h->npart; i++) {
        /* A rank that leaves may have sent its ddp_finalize's barrier on
         * the link: a partner in another call reads that first, and takes
         * the notice from the side before it names a mismatch (fault.c). */
        if (FAULT_KIND (kind) == FAULT_LEFT && h->left_mid && side[i] == 0)
            side[i] = 1;
        any |= side[i];
    }
    if (any)
        side_send (h, side, h->npart, &m, len);
    for (int i = 0; i < h->npart; i++)
        if (side[i] == 2)
            host_tcp_cut (h, i);
    free (side);
}

/* The relay's flush (host_core.h). */
static void flood_flush (struct host *h, double window)
{
    const struct timespec step = { 0, 1000 * 1000 };
    double end = ddpi_now () + window;

    while (host_tcp_unsent (h) && ddpi_now () < end)
        nanosleep (&step, NULL);
}

const struct fault_relay host_flood_relay = {
    .send = flood_send,
    .poll = host_tcp_poll,
    .gather = flood_gather,
    .flush = flood_flush,
};
