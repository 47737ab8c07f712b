/* mesh.c - making the links between the lanes of partner nodes at init
 * (transport.h): the addresses a lane listens on and their order, the
 * descriptor limit, non-blocking connects of every lane to its partners
 * within DDP_TIMEOUT (the lower node connects), closing them.  Errors are
 * set-up failures (DDP_E* after ddpi_error()). */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "net.h"
#include "schedule.h"
#include "tcp.h"
#include "transport.h"

/* ---------------------------------------------------------------- setup */

/* Addresses to advertise (net.h: DDP_HOST_ADDR, else those
 * DDP_SOCKET_IFNAME or its default picks), logged under DDP_DEBUG. */
static int local_addrs (struct host_addr *a)
{
    int n = ddpi_local_ipv4 (a->ip, HOST_MAX_ADDRS);
    char list[HOST_MAX_ADDRS * (INET_ADDRSTRLEN + 1)];

    if (n < 0)
        return n;
    a->n = (uint32_t)n;
    ddpi_ipv4_join (a->ip, n, ' ', list, sizeof (list));
    ddpi_debug ("host: this lane offers %s", list);
    return 0;
}

/* Descriptors a lane may hold at once: its links, the fault relay's
 * connections to every lane of every partner and back, the connections
 * its gate holds (gate.h: strangers' among them), and slack. */
static rlim_t fds_needed (struct host *h)
{
    rlim_t np = (rlim_t)sched_partners_max (h->nnodes);
    return np * (2 + (rlim_t)h->tune.lanes) + GATE_MAX + 64;
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
    sin.sin_addr.s_addr = ddpi_env_given ("DDP_HOST_ADDR") ? a->ip[0] : INADDR_ANY;
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

int host_tcp_gate_fd (struct host *h)
{
    return h->lk ? gate_fd (&h->lk->gate) : -1;
}

/* SO_SNDBUF of a link to a partner on this machine (the kernel carries
 * it through its loopback device) when DDP_TCP_SNDBUF is unset; links to
 * other machines keep the kernel's autotuning, which sizes the buffer to
 * the network's bandwidth and delay (a fixed one could cap it there).
 * Why a cap on loopback: the kernel grows a busy link's send buffer to
 * net.ipv4.tcp_wmem's 4 MiB, and large exchanges between simulated nodes
 * got slower for it.  Measured (2026-11-28, Intel, 2 CPUs; ddp-bench
 * medians, three alternated rounds), autotuned -> 256 KiB (the kernel
 * doubles it: 512 KiB): 4 x 1 allreduce 1 MiB 997-1009 -> 802-820 us,
 * 2 MiB 2338-2465 -> 1708-1759, 4 MiB 5309-5478 -> 3644-3816, 16 MiB
 * 23.6-24.3 -> 18.4-19.8 ms (64 KiB to 1 MiB: between the two; capping
 * the receive buffer as well gave back half of it, alone it cost 20%);
 * 8 x 1 4 MiB 11.9-13.3 -> 8.5-8.6 ms, 16 x 1 28.8-30.1 -> 21.3-21.4;
 * 2 x 1 and N x 4 within their spread but at 16 MiB (2 x 4 29.9 -> 24.2,
 * 8 x 4 159-165 -> 140-147 ms) and 2 x 1 gather 4-16 MiB (-12 to -20%).
 * At 4 x 1, 4 MiB: 15% less CPU time for the same calls (perf stat:
 * 2715 -> 2306 ms) and idle CPU 10.9 -> 4.5% of the samples, while the
 * time where the send path re-enables interrupts fell 12.2 -> 5.2%: less
 * data in flight between the two copies the kernel makes, is the likely
 * reason, not proven.  The value: HOST_LOOPBACK_SNDBUF (host_core.h). */

/* The SO_SNDBUF to set on a link (0: none), from tuning t and whether
 * the partner is on this machine. */
static int link_sndbuf (const struct host_tune *t, bool same_machine)
{
    if (t->tcp_sndbuf == HOST_SNDBUF_AUTO)
        return same_machine ? HOST_LOOPBACK_SNDBUF : 0;
    return (int)t->tcp_sndbuf;
}

static void tune_socket (int fd, int sndbuf)
{
    int one = 1;

    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
    /* The kernel caps it at net.core.wmem_max; a failure leaves the
     * link as it was (as TCP_NODELAY's). */
    if (sndbuf > 0)
        setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof (sndbuf));
}

void host_tcp_order_addrs (struct host_addr *a, bool same_net)
{
    int n = a->n < HOST_MAX_ADDRS ? (int)a->n : HOST_MAX_ADDRS;

    a->n = (uint32_t)ddpi_peer_addrs_order (a->ip, n, same_net);
}

struct host_addr host_tcp_partner_addrs (struct host *h, int i, int lane)
{
    struct host_addr a = h->part[i].addr[lane];
    uint32_t ok = h->part[i].ip_ok;

    host_tcp_order_addrs (&a, h->part[i].net == h->net);
    for (uint32_t k = 1; ok && k < a.n; k++)
        if (a.ip[k] == ok) {
            memmove (&a.ip[1], &a.ip[0], k * sizeof (a.ip[0]));
            a.ip[0] = ok;
            break;
        }
    return a;
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

/* A connection being made at init, to a partner above us (those below
 * connect to us: the gate, gate.h, reads their hello). */
struct pend {
    int fd;
    int link;
    uint32_t ai;        /* the address being tried */
    uint32_t ip;        /* that address */
    double since;       /* when this attempt started, or sent its hello */
    int state;          /* 0 connecting, 1 hello sent */
    int round;          /* times through the list of addresses before */
    bool slow;          /* an attempt of this round ran out of time */
};

/* The ordered addresses of partner link i's lane (h->lrank). */
static struct host_addr link_addr (struct host *h, int i)
{
    return host_tcp_partner_addrs (h, i, h->lrank);
}

/* Start (or restart at the next address) the outgoing connection of p.
 * Past the last address, the list again with longer tries (connect_limit)
 * when one of this round ran out of time; not when every one was refused
 * or unreachable at once (the overall deadline tells then).  Returns 0, or
 * -1 when no address is left. */
static int pend_start (struct host *h, int ep, struct pend *p, int idx)
{
    struct host_addr a = link_addr (h, p->link);

    p->fd = host_tcp_connect_start (&a, &p->ai);
    if (p->fd < 0 && p->slow) {
        p->ai = 0;
        p->round++;
        p->slow = false;
        p->fd = host_tcp_connect_start (&a, &p->ai);
    }
    if (p->fd < 0)
        return -1;
    p->ip = a.ip[p->ai];
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
        p->since = ddpi_now ();
        return 0;
    }
    if (recv (p->fd, &ok, 1, MSG_DONTWAIT) != 1)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    return ok == 'K' ? 1 : -1;
}

/* The link is made on fd: keep it (watched once every link is made). */
static void link_made (struct host *h, int i, int fd)
{
    tune_socket (fd, link_sndbuf (&h->tune,
                                  h->part[i].machine == h->machine));
    h->lk->l[i].fd = fd;
}

/* Every link made: watch them for input, on the links' own epoll, and the
 * gate of the listening socket for FAULT frames sent on the side
 * (flood.c). */
static int links_watch (struct host *h)
{
    if ((h->lk->ep = epoll_create1 (EPOLL_CLOEXEC)) < 0)
        return sock_error ("epoll_create1");
    if (gate_fd (&h->lk->gate) >= 0
        && ep_add (h->lk->ep, gate_fd (&h->lk->gate), EPOLLIN, LISTEN_EV) < 0)
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
                       "answered (DDP_SOCKET_IFNAME picks the interfaces, "
                       "DDP_HOST_ADDR one address)" : "");
}

/* How long a TCP connect to one address may take before the next is
 * tried: CONNECT_TRY in the first round through a peer's addresses,
 * doubling each round after (connect_limit).  A peer's kernel answers a
 * SYN within a round trip, well under a millisecond on a cluster's
 * network, whether or not the peer has reached this loop; an address
 * that leads nowhere (an interface up without a partner: its ARP is never
 * answered) answers nothing, and the kernel gives up on it only after
 * about 3 s (EHOSTUNREACH).  So a try that is slower than CONNECT_TRY goes
 * on to the next address at once, and the later rounds leave room for a
 * slow network or a dropped SYN (resent after 1 s). */
#define CONNECT_TRY 0.1

static double connect_limit (int round)
{
    return CONNECT_TRY * (double)(1u << (round < 12 ? round : 12));
}

/* How long a connected attempt may wait for the partner's answer to its
 * hello before the next address is tried: an equal share of the time left
 * among the addresses left, 1 s at least (the partner answers once it
 * reaches this loop, after its own set-up). */
static double attempt_limit (double left, uint32_t addrs_left)
{
    double t = left / (addrs_left ? addrs_left : 1);
    return t > 1.0 ? t : 1.0;
}

static int links_alloc (struct host *h)
{
    struct host_links *lk = calloc (1, sizeof (*lk));
    size_t cap = h->tune.tcp_ahead;

    if (!lk || !(lk->l = calloc ((size_t)(h->npart ? h->npart : 1),
                                 sizeof (*lk->l)))) {
        free (lk);
        return ddpi_error (DDP_ENOMEM, "out of memory");
    }
    h->lk = lk;
    lk->n = h->npart;
    lk->ep = -1;
    lk->gate.ep = -1;
    if (h->listen_fd >= 0
        && gate_open (&lk->gate, h->listen_fd, sizeof (struct hello)) < 0)
        return sock_error ("epoll_create1");
    /* Without memory for the read-ahead buffers the links read exactly. */
    if (cap > 0 && lk->n > 0)
        lk->rbuf = malloc ((size_t)lk->n * cap);
    for (int i = 0; i < lk->n; i++) {
        lk->l[i] = (struct link){ .fd = -1, .node = h->part[i].node,
                                  .rx = -1, .tx = -1 };
        lk->l[i].peer = h->node_ranks[lk->l[i].node][h->lrank];
        lk->l[i].rb = lk->rbuf ? lk->rbuf + (size_t)i * cap : NULL;
    }
    return 0;
}

/* The connect loop's state. */
struct mesh {
    struct pend *p;     /* one per higher partner */
    int np, cap;
    int want;           /* links still to make */
    int ep;
};

/* Make the link of one finished pending connection; returns 0. */
static int mesh_done (struct host *h, struct mesh *m, struct pend *p, int i)
{
    epoll_ctl (m->ep, EPOLL_CTL_DEL, p->fd, NULL);
    h->part[i].ip_ok = p->ip;
    link_made (h, i, p->fd);
    p->fd = -1;
    m->want--;
    return 0;
}

/* The address partner i connected to us from, when it is one it
 * offers (its lanes': the same node's), as the one to try first. */
static void note_peer_addr (struct host *h, int i, int fd)
{
    const struct host_addr *a = &h->part[i].addr[h->lrank];
    struct sockaddr_in sin;
    socklen_t len = sizeof (sin);

    if (getpeername (fd, (struct sockaddr *)&sin, &len) < 0
        || sin.sin_family != AF_INET)
        return;
    for (uint32_t k = 0; k < a->n && k < HOST_MAX_ADDRS; k++)
        if (a->ip[k] == sin.sin_addr.s_addr)
            h->part[i].ip_ok = a->ip[k];
}

/* A partner below us connected (slot of the gate, its hello read): make
 * the link it asks for, or drop it (a stranger, a duplicate). */
static void mesh_hello (struct host *h, struct mesh *m, int slot)
{
    struct gate *g = &h->lk->gate;
    struct hello hi;
    int i, fd;

    memcpy (&hi, g->c[slot].buf, sizeof (hi));
    if ((i = hello_link (h, &hi)) < 0
        || send (g->c[slot].fd, "K", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
        gate_drop (g, slot);
        return;
    }
    fd = gate_take (g, slot);
    note_peer_addr (h, i, fd);
    link_made (h, i, fd);
    m->want--;
}

/* One event on a pending connection or the gate. */
static int mesh_event (struct host *h, struct mesh *m, int idx, uint32_t ev)
{
    struct pend *p;
    int rc, slot;

    if (idx == m->cap) {    /* the gate */
        for (int k = 0; k < GATE_MAX
                        && (slot = gate_next (&h->lk->gate, ddpi_now ())) >= 0;
             k++)
            mesh_hello (h, m, slot);
        return h->lk->gate.err == EMFILE || h->lk->gate.err == ENFILE
               ? (errno = h->lk->gate.err, sock_error ("accept")) : 0;
    }
    p = &m->p[idx];
    if (p->fd < 0)
        return 0;
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

/* How long pending p's attempt may take (connect_limit, attempt_limit). */
static double pend_limit (struct host *h, const struct pend *p,
                          double deadline)
{
    if (p->state == 0)
        return connect_limit (p->round);
    return attempt_limit (deadline - p->since,
                          h->part[p->link].addr[h->lrank].n - p->ai);
}

/* Has p's connect finished (or failed) without its event read yet?  A
 * rank that was not scheduled for longer than CONNECT_TRY (a loaded
 * machine) finds it so: the event decides, not the clock. */
static bool pend_answered (const struct pend *p)
{
    struct pollfd q = { p->fd, POLLOUT, 0 };

    return p->state == 0 && poll (&q, 1, 0) == 1;
}

/* Attempts that hang get the next address.  Returns the seconds until the
 * next attempt runs out (deadline - now when none is pending). */
static double mesh_expire (struct host *h, struct mesh *m, double deadline)
{
    double t = ddpi_now (), next = deadline - t;

    for (int i = 0; i < m->cap; i++) {
        struct pend *p = &m->p[i];
        double limit;
        if (p->fd < 0 || p->link < 0)
            continue;
        limit = pend_limit (h, p, deadline);
        if (t - p->since > limit && !pend_answered (p)) {
            p->slow = true;
            pend_next (h, m->ep, p, i);
            if (p->fd < 0)
                continue;
            limit = pend_limit (h, p, deadline);
        }
        if (p->since + limit - t < next)
            next = p->since + limit - t;
    }
    return next;
}

int host_tcp_connect (struct host *h)
{
    double deadline = ddpi_now () + h->cfg->timeout_s;
    struct epoll_event ev[EVENTS];
    struct mesh m = { .ep = -1 };
    int rc, i, out = 0;

    if ((rc = links_alloc (h)) < 0)
        return rc;
    m.cap = h->npart + 1;
    if (!(m.p = calloc ((size_t)m.cap, sizeof (*m.p))))
        return ddpi_error (DDP_ENOMEM, "out of memory");
    if ((m.ep = epoll_create1 (EPOLL_CLOEXEC)) < 0) {
        free (m.p);
        return sock_error ("epoll_create1");
    }
    m.want = h->npart;
    for (i = 0; i < m.cap; i++)
        m.p[i].fd = -1;
    rc = ep_add (m.ep, gate_fd (&h->lk->gate), EPOLLIN, (uint64_t)m.cap) < 0
         ? sock_error ("epoll_ctl") : 0;
    for (i = 0; rc == 0 && i < h->npart; i++) {
        if (h->part[i].node < h->node)
            continue;   /* it connects to us */
        m.p[out] = (struct pend){ .fd = -1, .link = i };
        pend_start (h, m.ep, &m.p[out], out);
        out++;
    }
    while (rc == 0 && m.want > 0) {
        double left = deadline - ddpi_now (), wait;
        int n;
        if (left <= 0) {
            rc = missing_error (h, DDP_ETIMEDOUT, h->cfg->timeout_s);
            break;
        }
        wait = mesh_expire (h, &m, deadline);
        wait = wait < 0 ? 0 : wait < left ? wait : left;
        n = epoll_wait (m.ep, ev, EVENTS, (int)(wait * 1000) + 1);
        for (int k = 0; rc == 0 && k < n; k++)
            rc = mesh_event (h, &m, (int)ev[k].data.u64, ev[k].events);
    }
    for (i = 0; i < m.cap; i++)
        if (m.p[i].fd >= 0)
            close (m.p[i].fd);
    free (m.p);
    close (m.ep);
    return rc < 0 ? rc : links_watch (h);
}

/* Links of this rank's that are open and whose peer has not closed its
 * side yet: their pollfds into pfd (room for h->lk->n).  Returns how
 * many. */
static int links_open (struct host *h, struct pollfd *pfd)
{
    int n = 0;

    for (int i = 0; i < h->lk->n; i++) {
        struct link *l = &h->lk->l[i];
        if (l->fd >= 0 && !l->closed)
            pfd[n++] = (struct pollfd){ l->fd, POLLRDHUP, 0 };
    }
    return n;
}

void host_tcp_linger (struct host *h, double window)
{
    double end = ddpi_now () + window;
    struct pollfd *pfd;
    int n;

    if (!h->lk || !(pfd = calloc ((size_t)h->lk->n + 1, sizeof (*pfd))))
        return;
    for (int i = 0; i < h->lk->n; i++)
        if (h->lk->l[i].fd >= 0 && !h->lk->l[i].closed)
            (void)shutdown (h->lk->l[i].fd, SHUT_WR);
    n = links_open (h, pfd);
    while (n > 0 && ddpi_now () < end) {
        int ms = (int)((end - ddpi_now ()) * 1000) + 1, k = 0;
        if (poll (pfd, (nfds_t)n, ms) <= 0)
            break;
        for (int j = 0; j < n; j++)
            if (!(pfd[j].revents & (POLLRDHUP | POLLHUP | POLLERR)))
                pfd[k++] = pfd[j];
        n = k;
    }
    free (pfd);
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
    gate_close (&h->lk->gate);
    if (h->lk->ep >= 0)
        close (h->lk->ep);
    free (h->lk->rbuf);
    free (h->lk->l);
    free (h->lk);
    h->lk = NULL;
}
