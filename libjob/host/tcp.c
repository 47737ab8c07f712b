/* tcp.c - links between the lanes of partner nodes (host.h): connecting
 * at init, framed messages, rounds of sends and receives on epoll, FAULT
 * frames. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "record.h"
#include "net.h"
#include "schedule.h"
#include "tcp.h"
#include "transport.h"

#define IOV_BATCH 64        /* iovecs per sendmsg/recvmsg */
#define EVENTS 64           /* epoll events per wait (more come next time) */
#define STASH_MAX 16        /* fault-list connections kept for flood.c */
#define LISTEN_EV UINT64_MAX    /* epoll data of the listening socket */

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
};

struct host_links {
    int ep;
    int n;
    struct link *l;         /* one per partner, ascending nodes */
    /* Connections of a speaker's swap of lists (flood.c) accepted while
     * waiting for side FAULT frames: their socket and node, hello read. */
    int nstash;
    int stash_fd[STASH_MAX], stash_node[STASH_MAX];
};

/* ---------------------------------------------------------------- setup */

/* Addresses to advertise (net.h: DDP_HOST_ADDR, else the interfaces that
 * are up, loopback last). */
static int local_addrs (struct host_addr *a)
{
    int n = ddpi_local_ipv4 (a->ip, HOST_MAX_ADDRS);

    if (n < 0)
        return n;
    a->n = (uint32_t)n;
    return 0;
}

/* Descriptors a lane may hold at once: its links, the fault relay's
 * connections to every lane of every partner and back, and slack. */
static rlim_t fds_needed (struct host *h)
{
    rlim_t np = (rlim_t)sched_partners_max (h->nnodes);
    return np * (2 + (rlim_t)h->tune.lanes) + 64;
}

/* Raise the soft limit on descriptors to what a lane needs (up to the hard
 * limit).  Returns 0, or DDP_ETRANSPORT saying which limit to raise. */
static int fd_limit (struct host *h)
{
    struct rlimit rl;
    rlim_t need = fds_needed (h);

    if (getrlimit (RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        return ddpi_error (DDP_ETRANSPORT, "this rank needs %lu file "
                           "descriptors for its links to %d nodes but the "
                           "hard limit (ulimit -Hn) is %lu: raise it",
                           (unsigned long)need, h->nnodes,
                           (unsigned long)rl.rlim_max);
    rl.rlim_cur = need;
    if (setrlimit (RLIMIT_NOFILE, &rl) < 0)
        return ddpi_error (DDP_ETRANSPORT, "raising the file descriptor "
                           "limit to %lu: %s", (unsigned long)need,
                           strerror (errno));
    return 0;
}

/* A socket call failed for lack of descriptors? Then say which limit. */
static int sock_error (const char *what)
{
    if (errno == EMFILE || errno == ENFILE)
        return ddpi_error (DDP_ETRANSPORT, "%s: out of file descriptors "
                           "(%s): raise ulimit -n", what, strerror (errno));
    return ddpi_error (DDP_ETRANSPORT, "%s: %s", what, strerror (errno));
}

int host_tcp_listen (struct host *h, struct host_addr *a)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof (sin);
    int one = 1, rc, backlog;

    memset (a, 0, sizeof (*a));
    if ((rc = fd_limit (h)) < 0 || (rc = local_addrs (a)) < 0)
        return rc;
    h->listen_fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (h->listen_fd < 0)
        return sock_error ("socket");
    setsockopt (h->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    memset (&sin, 0, sizeof (sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = getenv ("DDP_HOST_ADDR") ? a->ip[0] : INADDR_ANY;
    /* What can arrive at once: the partners below (links), and after a
     * fault the speakers of every partner trying each lane. */
    backlog = (int)fds_needed (h);
    if (bind (h->listen_fd, (struct sockaddr *)&sin, sizeof (sin)) < 0
        || listen (h->listen_fd, backlog) < 0
        || getsockname (h->listen_fd, (struct sockaddr *)&sin, &len) < 0)
        return sock_error ("listen");
    a->port = sin.sin_port;
    a->cookie = h->cookie;
    return 0;
}

int host_tcp_listen_fd (struct host *h)
{
    return h->listen_fd;
}

static void tune_socket (int fd)
{
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
}

/* How far address ip is from this machine, for trying near ones first:
 * 0 loopback of a peer on this machine, 1 on a subnet of one of our
 * interfaces, 2 other, -1 never (loopback of another machine). */
static int addr_rank (uint32_t ip, bool same_machine,
                      const struct ifaddrs *ifs)
{
    bool lo = (ntohl (ip) >> 24) == 127;

    if (lo)
        return same_machine ? 0 : -1;
    for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        uint32_t a, m;
        if (!i->ifa_addr || !i->ifa_netmask
            || i->ifa_addr->sa_family != AF_INET)
            continue;
        a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        m = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
        if ((a & m) == (ip & m) && (ntohl (a) >> 24) != 127)
            return 1;
    }
    return 2;
}

void host_tcp_order_addrs (struct host_addr *a, bool same_machine)
{
    struct ifaddrs *ifs = NULL;
    struct host_addr out = *a;
    uint32_t n = 0;

    if (getifaddrs (&ifs) < 0)
        ifs = NULL;
    for (int want = 0; want <= 2; want++)
        for (uint32_t i = 0; i < a->n && i < HOST_MAX_ADDRS; i++)
            if (addr_rank (a->ip[i], same_machine, ifs) == want)
                out.ip[n++] = a->ip[i];
    if (ifs)
        freeifaddrs (ifs);
    out.n = n;
    *a = out;
}

int host_tcp_connect_start (const struct host_addr *a, uint32_t *ai)
{
    for (; *ai < a->n && *ai < HOST_MAX_ADDRS; (*ai)++) {
        struct sockaddr_in sin;
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         0);
        if (fd < 0)
            return -1;
        memset (&sin, 0, sizeof (sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = a->ip[*ai];
        sin.sin_port = a->port;
        if (connect (fd, (struct sockaddr *)&sin, sizeof (sin)) == 0
            || errno == EINPROGRESS)
            return fd;
        close (fd);
    }
    return -1;
}

/* A connection being made at init. */
struct pend {
    int fd;
    int link;           /* outgoing: the link; incoming: -1 until known */
    uint32_t ai;        /* outgoing: the address being tried */
    double since;       /* when this attempt started */
    int state;          /* 0 connecting, 1 hello sent, 2 incoming */
    size_t got;         /* incoming: hello bytes so far */
    struct hello hi;
};

static int ep_add (int ep, int fd, uint32_t ev, uint64_t data)
{
    struct epoll_event e = { .events = ev, .data.u64 = data };
    return epoll_ctl (ep, EPOLL_CTL_ADD, fd, &e);
}

static int ep_mod (int ep, int fd, uint32_t ev, uint64_t data)
{
    struct epoll_event e = { .events = ev, .data.u64 = data };
    return epoll_ctl (ep, EPOLL_CTL_MOD, fd, &e);
}

/* The ordered addresses of partner link i's lane (h->lrank). */
static struct host_addr link_addr (struct host *h, int i)
{
    struct host_addr a = h->part[i].addr[h->lrank];
    host_tcp_order_addrs (&a, h->part[i].machine == h->machine);
    return a;
}

/* Start (or restart at the next address) the outgoing connection of p;
 * returns 0, or -1 when no address is left. */
static int pend_start (struct host *h, int ep, struct pend *p, int idx)
{
    struct host_addr a = link_addr (h, p->link);

    if ((p->fd = host_tcp_connect_start (&a, &p->ai)) < 0)
        return -1;
    p->state = 0;
    p->since = ddpi_now ();
    if (ep_add (ep, p->fd, EPOLLOUT, (uint64_t)idx) < 0) {
        close (p->fd);
        p->fd = -1;
        return -1;
    }
    return 0;
}

/* Give up p's attempt and try its next address. */
static int pend_next (struct host *h, int ep, struct pend *p, int idx)
{
    close (p->fd);
    p->fd = -1;
    p->ai++;
    return pend_start (h, ep, p, idx);
}

/* The link a hello asks for, or -1: a partner below us, our lane, our
 * cookie, not connected yet. */
static int hello_link (struct host *h, const struct hello *hi)
{
    int i;

    if (hi->magic != HELLO_MAGIC || hi->cookie != h->cookie
        || hi->lane != (uint32_t)h->lrank || hi->node >= (uint32_t)h->node)
        return -1;
    i = host_tcp_link (h, (int)hi->node);
    return i >= 0 && h->lk->l[i].fd < 0 ? i : -1;
}

/* Outgoing p's socket is ready: finish the connect and send the hello,
 * or read the acceptor's 'K'.  Returns 1 when the link is made, 0 to go
 * on, -1 when this address failed. */
static int pend_out (struct host *h, struct pend *p, uint32_t ev)
{
    struct hello hi = { HELLO_MAGIC, h->part[p->link].addr[h->lrank].cookie,
                        (uint32_t)h->node, (uint32_t)h->lrank };
    socklen_t el = sizeof (int);
    int err = 0;
    char ok = 0;

    if (p->state == 0) {
        if (getsockopt (p->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err
            || (ev & (EPOLLERR | EPOLLHUP)))
            return -1;
        if (send (p->fd, &hi, sizeof (hi), MSG_NOSIGNAL) != (ssize_t)sizeof (hi))
            return -1;
        p->state = 1;
        return 0;
    }
    if (recv (p->fd, &ok, 1, MSG_DONTWAIT) != 1)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    return ok == 'K' ? 1 : -1;
}

/* Incoming p: read its hello.  Returns the link it makes, -2 to go on,
 * -1 to drop it (a stranger, a duplicate). */
static int pend_in (struct host *h, struct pend *p)
{
    ssize_t r = recv (p->fd, (char *)&p->hi + p->got, sizeof (p->hi) - p->got,
                      MSG_DONTWAIT);
    int i;

    if (r <= 0)
        return r < 0 && (errno == EAGAIN || errno == EINTR) ? -2 : -1;
    p->got += (size_t)r;
    if (p->got < sizeof (p->hi))
        return -2;
    if ((i = hello_link (h, &p->hi)) < 0 || send (p->fd, "K", 1, MSG_NOSIGNAL) != 1)
        return -1;
    return i;
}

/* The link is made on fd: keep it (watched once every link is made). */
static void link_made (struct host *h, int i, int fd)
{
    tune_socket (fd);
    h->lk->l[i].fd = fd;
}

/* Every link made: watch them for input, on the links' own epoll, and the
 * listening socket for FAULT frames sent on the side (flood.c). */
static int links_watch (struct host *h)
{
    if ((h->lk->ep = epoll_create1 (EPOLL_CLOEXEC)) < 0)
        return sock_error ("epoll_create1");
    if (h->listen_fd >= 0
        && ep_add (h->lk->ep, h->listen_fd, EPOLLIN, LISTEN_EV) < 0)
        return sock_error ("epoll_ctl");
    for (int i = 0; i < h->lk->n; i++) {
        h->lk->l[i].ev = EPOLLIN;
        if (ep_add (h->lk->ep, h->lk->l[i].fd, EPOLLIN, (uint64_t)i) < 0)
            return sock_error ("epoll_ctl");
    }
    return 0;
}

/* Nodes not linked yet, for the error. */
static int missing_error (struct host *h, int code, double t)
{
    int list[FAULT_LIST_MAX], n = 0;
    char buf[192];

    for (int i = 0; i < h->lk->n && n < FAULT_LIST_MAX; i++)
        if (h->lk->l[i].fd < 0)
            list[n++] = h->lk->l[i].node;
    return ddpi_error (code, "lane %d could not link to node%s %s within %g "
                       "s (%s)%s", h->lrank, n > 1 ? "s" : "",
                       ddpi_format_ranks (buf, sizeof (buf), list, n), t,
                       h->cfg->timeout_name ? h->cfg->timeout_name
                                            : "DDP_TIMEOUT",
                       code == DDP_ETRANSPORT ? ": no address of theirs "
                       "answered (DDP_HOST_ADDR picks one)" : "");
}

/* How long one connect attempt may hang before the next address is tried:
 * an equal share of the time left among the addresses left, 1 s at
 * least. */
static double attempt_limit (double left, uint32_t addrs_left)
{
    double t = left / (addrs_left ? addrs_left : 1);
    return t > 1.0 ? t : 1.0;
}

static int links_alloc (struct host *h)
{
    struct host_links *lk = calloc (1, sizeof (*lk));

    if (!lk || !(lk->l = calloc ((size_t)(h->npart ? h->npart : 1),
                                 sizeof (*lk->l)))) {
        free (lk);
        return ddpi_error (DDP_ENOMEM, "out of memory");
    }
    h->lk = lk;
    lk->n = h->npart;
    lk->ep = -1;
    for (int i = 0; i < lk->n; i++) {
        lk->l[i] = (struct link){ .fd = -1, .node = h->part[i].node,
                                  .rx = -1, .tx = -1 };
        lk->l[i].peer = h->node_ranks[lk->l[i].node][h->lrank];
    }
    return 0;
}

/* The connect loop's state. */
struct mesh {
    struct pend *p;     /* outgoing first (one per higher partner) */
    int np, cap;
    int want;           /* links still to make */
    int ep;
};

/* Make the link of one finished pending connection; returns 0. */
static int mesh_done (struct host *h, struct mesh *m, struct pend *p, int i)
{
    epoll_ctl (m->ep, EPOLL_CTL_DEL, p->fd, NULL);
    link_made (h, i, p->fd);
    p->fd = -1;
    m->want--;
    return 0;
}

/* One event on a pending connection or the listening socket. */
static int mesh_event (struct host *h, struct mesh *m, int idx, uint32_t ev)
{
    struct pend *p;
    int rc;

    if (idx == m->cap) {    /* the listening socket */
        int fd = accept4 (h->listen_fd, NULL, NULL,
                          SOCK_CLOEXEC | SOCK_NONBLOCK);
        int slot;
        if (fd < 0)
            return errno == EMFILE || errno == ENFILE ? sock_error ("accept")
                                                      : 0;
        for (slot = 0; slot < m->cap && m->p[slot].fd >= 0; slot++)
            ;
        if (slot == m->cap || ep_add (m->ep, fd, EPOLLIN, (uint64_t)slot) < 0) {
            close (fd);
            return 0;
        }
        m->p[slot] = (struct pend){ .fd = fd, .link = -1, .state = 2 };
        return 0;
    }
    p = &m->p[idx];
    if (p->fd < 0)
        return 0;
    if (p->state == 2) {
        if ((rc = pend_in (h, p)) == -2)
            return 0;
        if (rc < 0) {
            epoll_ctl (m->ep, EPOLL_CTL_DEL, p->fd, NULL);
            close (p->fd);
            p->fd = -1;
            return 0;
        }
        return mesh_done (h, m, p, rc);
    }
    if ((rc = pend_out (h, p, ev)) == 0) {
        if (p->state == 1)
            ep_mod (m->ep, p->fd, EPOLLIN, (uint64_t)idx);
        return 0;
    }
    if (rc > 0)
        return mesh_done (h, m, p, p->link);
    pend_next (h, m->ep, p, idx);   /* -1 fd: none left; timeout tells */
    return 0;
}

/* Attempts that hang get the next address. */
static void mesh_expire (struct host *h, struct mesh *m, double deadline)
{
    double t = ddpi_now ();

    for (int i = 0; i < m->cap; i++) {
        struct pend *p = &m->p[i];
        if (p->fd < 0 || p->link < 0)
            continue;
        if (t - p->since > attempt_limit (deadline - p->since,
                                          h->part[p->link].addr[h->lrank].n
                                          - p->ai))
            pend_next (h, m->ep, p, i);
    }
}

int host_tcp_connect (struct host *h)
{
    double deadline = ddpi_now () + h->cfg->timeout_s;
    struct epoll_event ev[EVENTS];
    struct mesh m = { .ep = -1 };
    int rc, i, out = 0;

    if ((rc = links_alloc (h)) < 0)
        return rc;
    m.cap = 2 * h->npart + 8;
    if (!(m.p = calloc ((size_t)m.cap, sizeof (*m.p))))
        return ddpi_error (DDP_ENOMEM, "out of memory");
    if ((m.ep = epoll_create1 (EPOLL_CLOEXEC)) < 0) {
        free (m.p);
        return sock_error ("epoll_create1");
    }
    m.want = h->npart;
    for (i = 0; i < m.cap; i++)
        m.p[i].fd = -1;
    rc = ep_add (m.ep, h->listen_fd, EPOLLIN, (uint64_t)m.cap) < 0
         ? sock_error ("epoll_ctl") : 0;
    for (i = 0; rc == 0 && i < h->npart; i++) {
        if (h->part[i].node < h->node)
            continue;   /* it connects to us */
        m.p[out] = (struct pend){ .fd = -1, .link = i };
        pend_start (h, m.ep, &m.p[out], out);
        out++;
    }
    while (rc == 0 && m.want > 0) {
        double left = deadline - ddpi_now ();
        int n;
        if (left <= 0) {
            rc = missing_error (h, DDP_ETIMEDOUT, h->cfg->timeout_s);
            break;
        }
        n = epoll_wait (m.ep, ev, EVENTS, (int)(left * 1000) + 1);
        for (int k = 0; rc == 0 && k < n; k++)
            rc = mesh_event (h, &m, (int)ev[k].data.u64, ev[k].events);
        mesh_expire (h, &m, deadline);
    }
    for (i = 0; i < m.cap; i++)
        if (m.p[i].fd >= 0)
            close (m.p[i].fd);
    free (m.p);
    close (m.ep);
    return rc < 0 ? rc : links_watch (h);
}

void host_tcp_close (struct host *h)
{
    if (h->listen_fd >= 0)
        close (h->listen_fd);
    h->listen_fd = -1;
    if (!h->lk)
        return;
    for (int i = 0; i < h->lk->n; i++)
        if (h->lk->l[i].fd >= 0)
            close (h->lk->l[i].fd);
    for (int i = 0; i < h->lk->nstash; i++)
        close (h->lk->stash_fd[i]);
    if (h->lk->ep >= 0)
        close (h->lk->ep);
    free (h->lk->l);
    free (h->lk);
    h->lk = NULL;
}

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

/* ---------------------------------------------------------------- frames */

/* Ranks from a wire are untrusted: one out of range becomes the peer. */
static void clamp_ranks (struct host *h, int peer, int32_t *list, int nlist)
{
    for (int i = 0; i < nlist; i++)
        if (list[i] < 0 || list[i] >= h->size)
            list[i] = peer;
}

int host_frame_list (struct host *h, int fd, int peer, const struct frame *f,
                     int32_t *list, uint64_t *states, bool *whole)
{
    int nlist = FAULT_SEQ_NLIST (f->seq);
    unsigned char body[sizeof (((struct fault_msg *)0)->body)];
    size_t nb = (size_t)nlist * sizeof (int32_t);

    *whole = nlist >= 0 && nlist <= FAULT_LIST_MAX
             && (nlist == 0
                 || ddpi_io_full (fd, body, nb + (size_t)nlist
                                  * sizeof (uint64_t), false,
                                  ddpi_now () + 0.1) == 0);
    if (!*whole)
        nlist = 0;
    memcpy (list, body, (size_t)nlist * sizeof (int32_t));
    memcpy (states, body + nb, (size_t)nlist * sizeof (uint64_t));
    clamp_ranks (h, peer, list, nlist);
    return nlist;
}

/* A FAULT frame f arrived on fd from peer's side: claim its record (the
 * first claim stands; the list may be empty: a timeout between nodes, its
 * first rank the fallback). */
static void fault_take (struct host *h, int fd, int peer,
                        const struct frame *f)
{
    int32_t list[FAULT_LIST_MAX];
    uint64_t states[FAULT_LIST_MAX];
    int kind = FAULT_SEQ_KIND (f->seq), nlist, fallback;
    int reporter = f->len < (uint64_t)h->size ? (int)f->len : peer;
    bool whole;

    if (kind < FAULT_DIED || kind > FAULT_LINK)
        kind = FAULT_DIED;
    nlist = host_frame_list (h, fd, peer, f, list, states, &whole);
    fallback = f->arg >= 0 && f->arg < h->size ? f->arg : peer;
    if (nlist > 0) {
        if (host_fault_claim (h, list, nlist, FAULT_SEQ_N (f->seq), kind,
                              reporter))
            host_fault_merge (h, list, states, nlist, FAULT_SEQ_N (f->seq));
    }
    else
        host_fault_claim (h, &fallback, 0, 0, kind, reporter);
}

/* A FAULT frame arrived on link i (its header in l->in). */
static void fault_in (struct host *h, int i)
{
    struct link *l = &h->lk->l[i];

    fault_take (h, l->fd, l->peer, &l->in);
    l->in_hdr = 0;
}

/* A connection on the listening socket after the links were made: a
 * partner lane's FAULT frame sent on the side (its link to us could not
 * carry it, flood.c), taken at once; or a speaker's swap of lists, kept
 * for flood.c (host_tcp_stashed).  Anything else is dropped. */
static void side_in (struct host *h)
{
    int fd = accept4 (h->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    struct host_links *lk = h->lk;
    struct hello hi;
    struct frame f;
    int i;

    if (fd < 0)
        return;
    if (ddpi_io_full (fd, &hi, sizeof (hi), false, ddpi_now () + 0.1) < 0
        || hi.cookie != h->cookie || hi.node >= (uint32_t)h->nnodes
        || (i = host_tcp_link (h, (int)hi.node)) < 0)
        goto drop;
    if (hi.magic == GATHER_MAGIC && lk->nstash < STASH_MAX) {
        lk->stash_fd[lk->nstash] = fd;
        lk->stash_node[lk->nstash++] = (int)hi.node;
        return;
    }
    if (hi.magic == SIDE_MAGIC
        && ddpi_io_full (fd, &f, sizeof (f), false, ddpi_now () + 0.1) == 0
        && f.type == FRAME_FAULT)
        fault_take (h, fd, lk->l[i].peer, &f);
drop:
    close (fd);
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

/* Read more of link i's header into l->in without blocking.  Returns 1 when
 * it is whole, 0 when more is to come, -1 when the link closed. */
static int read_header (struct link *l)
{
    ssize_t r;

    if (l->in_hdr == sizeof (l->in))
        return 1;
    r = recv (l->fd, (char *)&l->in + l->in_hdr, sizeof (l->in) - l->in_hdr,
              MSG_DONTWAIT);
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
    if ((r = read_header (l)) < 0) {
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

    update_events (h);
    n = epoll_wait (h->lk->ep, ev, EVENTS, ms);
    for (int k = 0; k < n; k++) {
        int i = (int)ev[k].data.u64;
        if (ev[k].data.u64 == LISTEN_EV)
            side_in (h);
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
    if (l->fd >= 0 && l->rx < 0 && read_header (l) == 1
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

void host_tcp_cut (struct host *h, int i)
{
    if (h->lk && i >= 0 && i < h->lk->n && h->lk->l[i].fd >= 0)
        shutdown (h->lk->l[i].fd, SHUT_RDWR);
}

size_t host_fault_msg_fill (struct fault_msg *m, const int *ranks,
                            const uint64_t *states, int nlist, int n,
                            int kind, int reporter)
{
    size_t nb;

    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    if (nlist < 0)
        nlist = 0;
    nb = (size_t)nlist * sizeof (int32_t);
    m->f = (struct frame){ FRAME_FAULT, ranks[0], FAULT_SEQ (kind, nlist, n),
                           (uint64_t)reporter };
    for (int i = 0; i < nlist; i++) {
        int32_t r = ranks[i];
        uint64_t st = states ? states[i] : 0;
        memcpy (m->body + (size_t)i * sizeof (r), &r, sizeof (r));
        memcpy (m->body + nb + (size_t)i * sizeof (st), &st, sizeof (st));
    }
    return sizeof (m->f) + nb + (size_t)nlist * sizeof (uint64_t);
}

/* ---------------------------------------------------------------- rounds */

/* iovecs of op o from its current position, at most IOV_BATCH; a leading
 * piece hdr/hlen goes first when given.  Returns how many. */
static int op_iov (const struct host_op *o, struct iovec *v, void *hdr,
                   size_t hlen)
{
    int k = 0;
    size_t off = o->voff;

    if (hlen)
        v[k++] = (struct iovec){ hdr, hlen };
    for (int i = o->vi; i < o->iovcnt && k < IOV_BATCH; i++) {
        if (o->iov[i].iov_len > off)
            v[k++] = (struct iovec){ (char *)o->iov[i].iov_base + off,
                                     o->iov[i].iov_len - off };
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

/* Send more of op o (its frame header first).  Returns 1 on progress, 0
 * when blocked, <0. */
static int pump_send (struct host *h, struct host_op *o)
{
    struct link *l = &h->lk->l[o->link];
    struct frame f = { FRAME_DATA, (int32_t)o->tag, h->call, o->len };
    size_t hleft = sizeof (f) - o->hdone;
    struct iovec v[IOV_BATCH + 1];
    struct msghdr m;
    ssize_t r;

    if (l->closed || l->fd < 0)
        return link_lost (h, o->link, "closed");
    memset (&m, 0, sizeof (m));
    m.msg_iov = v;
    m.msg_iovlen = (size_t)op_iov (o, v, (char *)&f + o->hdone, hleft);
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

/* The header of link i's frame is in: is it the one op o waits for?
 * Returns 0, or the fault's code (a FAULT frame, or a mismatch: the
 * collectives were called in a different order). */
static int check_header (struct host *h, struct host_op *o)
{
    struct link *l = &h->lk->l[o->link];
    struct frame *f = &l->in;

    l->parked = false;
    if (f->type == FRAME_FAULT) {
        fault_in (h, o->link);
        return host_event (h, HOST_EV_RECORD, -1);
    }
    if (f->type != FRAME_DATA || f->seq != h->call
        || f->arg != (int32_t)o->tag || f->len != o->len) {
        h->ev.got_call = f->seq;
        h->ev.got_tag = f->arg;
        h->ev.got_len = f->len;
        h->ev.want_tag = o->tag;
        h->ev.want_len = o->len;
        h->ev.node = l->node;
        return host_event (h, HOST_EV_LINK_BAD, l->peer);
    }
    l->in_hdr = 0;
    o->hdr = true;
    return 0;
}

/* Receive more of op o.  Returns 1 on progress, 0 when blocked, <0. */
static int pump_recv (struct host *h, struct host_op *o)
{
    struct link *l = &h->lk->l[o->link];
    struct iovec v[IOV_BATCH];
    struct msghdr m;
    size_t before = o->done, first;
    ssize_t r;
    int rc, k;

    if (!o->hdr) {
        if (l->fd < 0 || (l->closed && l->in_hdr < sizeof (l->in)))
            return link_lost (h, o->link, "closed");
        if ((rc = read_header (l)) < 0)
            return link_lost (h, o->link, "closed");
        if (rc == 0)
            return 0;
        if ((rc = check_header (h, o)) < 0)
            return rc;
        if (o->len == 0) {
            op_finish (h, o);
            return 1;
        }
    }
    memset (&m, 0, sizeof (m));
    m.msg_iov = v;
    m.msg_iovlen = (size_t)op_iov (o, v, NULL, 0);
    r = recvmsg (l->fd, &m, MSG_DONTWAIT);
    if (r == 0)
        return link_lost (h, o->link, "closed");
    if (r < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
             ? 0 : link_lost (h, o->link, strerror (errno));
    op_advance (o, (size_t)r);
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

int host_tcp_run (struct host *h, struct host_op *ops, int nops)
{
    double limit = h->cfg->timeout_s + 2 * host_grace (h);
    double last = 0, t;
    int rc = 0, pending;

    for (int i = 0; i < nops; i++) {
        ops[i].done = ops[i].voff = ops[i].hdone = 0;
        ops[i].vi = 0;
        ops[i].hdr = ops[i].fin = false;
        op_advance (&ops[i], 0);    /* past empty iovecs */
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
        if (host_record_set (h)) {
            rc = host_event (h, HOST_EV_RECORD, -1);
            break;
        }
        if (t - last > limit) {
            rc = stalled (h, ops, nops);
            break;
        }
        /* Busy-poll for as long as a shared-memory wait would spin (a
         * wakeup from epoll costs several microseconds). */
        if (t - last < h->spin_us * 1e-6)
            continue;
        wait_events (h, 20);
    }
    ops_release (h, ops, nops);
    return rc < 0 ? rc : 0;
}
