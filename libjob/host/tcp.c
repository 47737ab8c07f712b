/* tcp.c - TCP links between node leaders (host.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "host.h"
#include "net.h"

#define HELLO_MAGIC 0x6464702d68656c6fULL   /* "ddp-helo" */
#define STANDIN_MAGIC 0x6464702d7374616eULL /* "ddp-stan" */
#define FRAME_DATA 0x44415441u              /* "DATA" */
#define FRAME_FAULT 0x4641554cu             /* "FAUL" */

struct hello {
    uint64_t magic;
    uint64_t cookie;    /* the acceptor's cookie, proving we mean it */
    uint32_t node;      /* the connector's node */
    uint32_t pad;
};

struct frame {
    uint32_t type;
    int32_t arg;        /* FAULT: the rank at fault */
    uint64_t seq;       /* DATA: the step; FAULT: the kind */
    uint64_t len;       /* DATA: payload bytes; FAULT: who noticed */
};

struct host_peer_io {
    struct frame out, in;
    size_t out_done;    /* bytes of frame + payload sent */
    size_t in_hdr;      /* bytes of the frame header received */
    size_t in_done;     /* bytes of payload received */
    bool send, recv;    /* still to do in this exchange */
    bool mid;           /* a frame is partly sent: nothing may follow it */
};

/* Addresses to advertise: DDP_HOST_ADDR, else the IPv4 addresses of the
 * interfaces that are up, loopback last (a peer on another machine would
 * reach itself there; the cookie check rejects that). */
static int local_addrs (struct host_addr *a)
{
    const char *env = getenv ("DDP_HOST_ADDR");
    struct ifaddrs *ifs, *i;
    struct in_addr in;
    int pass;

    a->n = 0;
    if (env) {
        if (inet_pton (AF_INET, env, &in) != 1)
            return ddpi_error (DDP_EINVAL, "DDP_HOST_ADDR='%s' is not an "
                               "IPv4 address", env);
        a->ip[a->n++] = in.s_addr;
        return 0;
    }
    if (getifaddrs (&ifs) < 0)
        return ddpi_error (DDP_ETRANSPORT, "getifaddrs: %s", strerror (errno));
    for (pass = 0; pass < 2; pass++) {
        for (i = ifs; i && a->n < HOST_MAX_ADDRS; i = i->ifa_next) {
            bool lo;
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET
                || !(i->ifa_flags & IFF_UP))
                continue;
            lo = (i->ifa_flags & IFF_LOOPBACK) != 0;
            if (lo != (pass == 1))
                continue;
            a->ip[a->n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        }
    }
    freeifaddrs (ifs);
    if (a->n == 0)
        a->ip[a->n++] = htonl (INADDR_LOOPBACK);
    return 0;
}

int host_tcp_listen (struct host *h, struct host_addr *a)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof (sin);
    int one = 1, rc;

    memset (a, 0, sizeof (*a));
    if ((rc = local_addrs (a)) < 0)
        return rc;
    h->listen_fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (h->listen_fd < 0)
        return ddpi_error (DDP_ETRANSPORT, "socket: %s", strerror (errno));
    setsockopt (h->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    memset (&sin, 0, sizeof (sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = getenv ("DDP_HOST_ADDR") ? a->ip[0] : INADDR_ANY;
    if (bind (h->listen_fd, (struct sockaddr *)&sin, sizeof (sin)) < 0
        || listen (h->listen_fd, h->nnodes + 8) < 0
        || getsockname (h->listen_fd, (struct sockaddr *)&sin, &len) < 0)
        return ddpi_error (DDP_ETRANSPORT, "listen: %s", strerror (errno));
    a->port = sin.sin_port;
    a->cookie = h->cookie;
    return 0;
}

static void tune (int fd)
{
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
}

/* Connect to node n's leader, trying its addresses in order. */
static int connect_one (struct host *h, int n, const struct host_addr *a,
                        double deadline)
{
    uint32_t i;

    for (i = 0; i < a->n && i < HOST_MAX_ADDRS; i++) {
        struct sockaddr_in sin;
        struct hello hi = { HELLO_MAGIC, a->cookie, (uint32_t)h->node, 0 };
        char ok = 0;
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
            return ddpi_error (DDP_ETRANSPORT, "socket: %s", strerror (errno));
        memset (&sin, 0, sizeof (sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = a->ip[i];
        sin.sin_port = a->port;
        if (connect (fd, (struct sockaddr *)&sin, sizeof (sin)) == 0
            && ddpi_set_nonblock (fd) == 0
            && ddpi_io_full (fd, &hi, sizeof (hi), true, deadline) == 0
            && ddpi_io_full (fd, &ok, 1, false, deadline) == 0 && ok == 'K') {
            tune (fd);
            h->sock[n] = fd;
            return 0;
        }
        close (fd);
    }
    return ddpi_error (DDP_ETRANSPORT, "cannot connect to node %d's leader "
                       "(rank %d) at any of its %u addresses", n,
                       h->node_leader[n], a->n);
}

/* Accept until every higher node's leader has connected. */
static int accept_higher (struct host *h, double deadline)
{
    int want = h->nnodes - 1 - h->node;

    while (want > 0) {
        struct pollfd p = { h->listen_fd, POLLIN, 0 };
        struct hello hi;
        double left = deadline - ddpi_now ();
        int fd;

        if (left <= 0)
            return ddpi_error (DDP_ETIMEDOUT, "%d node leaders did not "
                               "connect within %g s", want, h->cfg->timeout_s);
        if (poll (&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        fd = accept4 (h->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            continue;
        if (ddpi_io_full (fd, &hi, sizeof (hi), false, ddpi_now () + 5) < 0
            || hi.magic != HELLO_MAGIC || hi.cookie != h->cookie
            || hi.node <= (uint32_t)h->node || hi.node >= (uint32_t)h->nnodes
            || h->sock[hi.node] >= 0
            || ddpi_io_full (fd, "K", 1, true, deadline) < 0) {
            close (fd);     /* a stranger, or a duplicate */
            continue;
        }
        tune (fd);
        h->sock[hi.node] = fd;
        want--;
    }
    return 0;
}

int host_tcp_connect (struct host *h, const struct host_addr *addrs)
{
    double deadline = ddpi_now () + h->cfg->timeout_s;
    int n, rc;

    if (!(h->io = calloc ((size_t)h->nnodes, sizeof (*h->io))))
        return ddpi_error (DDP_ENOMEM, "out of memory");
    for (n = 0; n < h->node; n++)
        if ((rc = connect_one (h, n, &addrs[n], deadline)) < 0)
            return rc;
    return accept_higher (h, deadline);
}

void host_tcp_close (struct host *h)
{
    int n;

    if (h->listen_fd >= 0)
        close (h->listen_fd);
    h->listen_fd = -1;
    for (n = 0; h->sock && n < h->nnodes; n++) {
        if (h->sock[n] >= 0)
            close (h->sock[n]);
        h->sock[n] = -1;
    }
    free (h->io);
    h->io = NULL;
}

/* A FAULT frame: arg is the first rank at fault, seq packs the kind (bits
 * 0-15), how many ranks follow the frame as int32 (16-31) and how many there
 * are in all (32-63); len is who noticed. */
#define FAULT_SEQ(kind, nlist, n) \
    ((uint64_t)(kind) | (uint64_t)(nlist) << 16 | (uint64_t)(n) << 32)
#define FAULT_SEQ_KIND(seq) ((int)((seq) & 0xffff))
#define FAULT_SEQ_NLIST(seq) ((int)((seq) >> 16 & 0xffff))
#define FAULT_SEQ_N(seq) ((int)((seq) >> 32 & 0x7fffffff))

/* A FAULT frame with its list, as one send() puts it on the wire. */
struct fault_msg {
    struct frame f;
    int32_t list[FAULT_LIST_MAX];
};

/* Fill m for ranks (nlist listed of n); returns the bytes to send. */
static size_t fault_msg_fill (struct fault_msg *m, const int *ranks,
                              int nlist, int n, int kind, int reporter)
{
    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    m->f = (struct frame){ FRAME_FAULT, ranks[0], FAULT_SEQ (kind, nlist, n),
                           (uint64_t)reporter };
    for (int i = 0; i < nlist; i++)
        m->list[i] = ranks[i];
    return sizeof (m->f) + (size_t)nlist * sizeof (int32_t);
}

static void tcp_send_fault (struct host *h, const int *ranks, int nlist, int n,
                          int kind, int reporter)
{
    struct fault_msg msg;
    size_t len = fault_msg_fill (&msg, ranks, nlist, n, kind, reporter);

    for (int i = 0; h->sock && i < h->nnodes; i++) {
        if (h->sock[i] < 0)
            continue;
        /* In the middle of a frame the fault cannot be framed: cut the link
         * instead (the peer sees EOF and fails at once). */
        if ((h->io && h->io[i].mid)
            || send (h->sock[i], &msg, len, MSG_DONTWAIT | MSG_NOSIGNAL)
               != (ssize_t)len)
            shutdown (h->sock[i], SHUT_RDWR);
    }
}

/* Ranks from node n's wire are untrusted: one out of range becomes n's
 * leader. */
static void clamp_ranks (struct host *h, int n, int32_t *list, int nlist)
{
    for (int i = 0; i < nlist; i++)
        if (list[i] < 0 || list[i] >= h->size)
            list[i] = h->node_leader[n];
}

/* The ranks the FAULT frame f from node n names, into list: the nlist
 * ranks that follow it on fd (sent with it in one send(), so they are
 * there or about to be: 100 ms at most), or the frame's first rank when
 * they do not come (*whole is then false).  Numbers from the wire are
 * untrusted: a rank out of range becomes n's leader.  Returns how many. */
static int fault_frame_ranks (struct host *h, int fd, int n,
                              const struct frame *f, int32_t *list,
                              bool *whole)
{
    int nlist = FAULT_SEQ_NLIST (f->seq);

    *whole = nlist >= 1 && nlist <= FAULT_LIST_MAX
             && ddpi_io_full (fd, list, (size_t)nlist * sizeof (int32_t),
                              false, ddpi_now () + 0.1) == 0;
    if (!*whole) {
        nlist = 1;
        list[0] = f->arg;
    }
    clamp_ranks (h, n, list, nlist);
    return nlist;
}

/* The lists one sends in one message: a leader's list to a stand-in of
 * node n, a stand-in's to a leader.  Reads the frame (within 0.2 s) and
 * its list from fd; returns how many ranks, or -1 unless both came. */
static int fault_msg_in (struct host *h, int fd, int n, int32_t *list,
                         int *total)
{
    struct frame f;
    bool whole;
    int nlist;

    if (ddpi_io_full (fd, &f, sizeof (f), false, ddpi_now () + 0.2) < 0
        || f.type != FRAME_FAULT)
        return -1;
    nlist = fault_frame_ranks (h, fd, n, &f, list, &whole);
    *total = FAULT_SEQ_N (f.seq);
    return whole ? nlist : -1;
}

/* The segment's fault list as a message (the record is claimed). */
static size_t own_fault_msg (struct host *h, struct fault_msg *m)
{
    int nlist = h->hdr->fault_nlist;

    if (nlist < 1 || nlist > FAULT_LIST_MAX)
        return 0;
    return fault_msg_fill (m, h->hdr->fault_list, nlist, h->hdr->fault_n,
                           atomic_load (&h->hdr->fault_kind),
                           atomic_load (&h->hdr->fault_reporter));
}

/* A leader gathering lists: a stand-in for another node's absent leader
 * knocks at the listening socket.  Take its list, answer with ours.
 * Returns its node, or -1 for a stranger (dropped). */
static int standin_accept (struct host *h)
{
    struct hello hi;
    struct fault_msg m;
    int32_t list[FAULT_LIST_MAX];
    int fd, nlist, total, node = -1;
    size_t len;

    fd = accept4 (h->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return -1;
    if (ddpi_io_full (fd, &hi, sizeof (hi), false, ddpi_now () + 0.2) == 0
        && hi.magic == STANDIN_MAGIC && hi.cookie == h->cookie
        && hi.node < (uint32_t)h->nnodes && hi.node != (uint32_t)h->node
        && (nlist = fault_msg_in (h, fd, (int)hi.node, list, &total)) > 0) {
        node = (int)hi.node;
        host_fault_merge (h, list, nlist, total);
        if ((len = own_fault_msg (h, &m)) > 0)
            send (fd, &m, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    close (fd);
    return node;
}

static void tcp_gather_faults (struct host *h, double window)
{
    struct pollfd pfd[64];
    int map[64];
    double end = ddpi_now () + window;
    bool *heard = calloc ((size_t)h->nnodes, sizeof (bool));
    int n, np, left;

    if (!heard || !h->io || !h->sock) {
        free (heard);
        return;
    }
    for (n = 0; n < h->nnodes; n++) {
        struct host_peer_io *io = &h->io[n];
        heard[n] = n == h->node || h->sock[n] < 0;
        if (!heard[n] && !io->recv)
            io->in_hdr = 0;     /* no frame under way from n: a new one */
        else if (!heard[n] && io->in_hdr == sizeof (io->in))
            heard[n] = true;    /* its data is arriving: it is complete */
    }
    for (;;) {
        left = np = 0;
        for (n = 0; n < h->nnodes; n++) {
            if (heard[n])
                continue;
            left++;
            if (np < 63) {
                pfd[np] = (struct pollfd){ h->sock[n], POLLIN, 0 };
                map[np++] = n;
            }
        }
        if (!left || ddpi_now () > end)
            break;
        if (h->listen_fd >= 0) {
            pfd[np] = (struct pollfd){ h->listen_fd, POLLIN, 0 };
            map[np++] = -1;
        }
        if (poll (pfd, (nfds_t)np, 10) <= 0)
            continue;
        for (int i = 0; i < np; i++) {
            struct host_peer_io *io;
            struct frame *f;
            int32_t list[FAULT_LIST_MAX];
            int nlist;
            bool whole;
            ssize_t r;

            if (!pfd[i].revents)
                continue;
            if (map[i] < 0) {
                if ((n = standin_accept (h)) >= 0)
                    heard[n] = true;
                continue;
            }
            io = &h->io[map[i]];
            f = &io->in;
            r = recv (h->sock[map[i]], (char *)f + io->in_hdr,
                      sizeof (*f) - io->in_hdr, MSG_DONTWAIT);
            if (r <= 0) {
                if (r == 0 || (errno != EAGAIN && errno != EINTR))
                    heard[map[i]] = true;   /* link gone: nothing to hear */
                continue;
            }
            io->in_hdr += (size_t)r;
            if (io->in_hdr < sizeof (*f))
                continue;
            heard[map[i]] = true;   /* a frame: a FAULT, or data */
            if (f->type != FRAME_FAULT)
                continue;
            nlist = fault_frame_ranks (h, h->sock[map[i]], map[i], f, list,
                                      &whole);
            if (whole)
                host_fault_merge (h, list, nlist, FAULT_SEQ_N (f->seq));
        }
    }
    /* A node nobody spoke for: neither its leader nor a stand-in (which
     * any of its ranks that arrived would be) nor its data came, so none
     * of its ranks arrived.  Name them all, not just its leader. */
    for (n = 0; n < h->nnodes; n++)
        if (!heard[n])
            host_fault_merge (h, h->node_ranks[n], h->node_size[n],
                              h->node_size[n]);
    free (heard);
}

/* Another node's leader, as a stand-in reaches it. */
struct standin_peer {
    int fd;         /* -1: done with this node */
    uint32_t ai;    /* the address being tried */
    bool sent;      /* our list is sent; its answer is awaited */
};

/* Start a non-blocking connect to node n's leader at its address p->ai or,
 * failing that, a later one; p->fd stays -1 when none is left. */
static void standin_connect (struct host *h, int n, struct standin_peer *p)
{
    const struct host_addr *a = &h->leader_addr[n];

    p->fd = -1;
    for (; p->ai < a->n && p->ai < HOST_MAX_ADDRS; p->ai++) {
        struct sockaddr_in sin;
        memset (&sin, 0, sizeof (sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = a->ip[p->ai];
        sin.sin_port = a->port;
        p->fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        0);
        if (p->fd < 0)
            return;
        if (connect (p->fd, (struct sockaddr *)&sin, sizeof (sin)) == 0
            || errno == EINPROGRESS)
            return;
        close (p->fd);
        p->fd = -1;
    }
}

/* p's socket is ready: finish the connect and send our list, or read the
 * answer and merge it.  Moves on to the next address when the connect
 * failed; closes p->fd when done with node n. */
static void standin_step (struct host *h, int n, struct standin_peer *p,
                          short revents)
{
    char out[sizeof (struct hello) + sizeof (struct fault_msg)];
    struct hello hi = { STANDIN_MAGIC, h->leader_addr[n].cookie,
                        (uint32_t)h->node, 0 };
    struct fault_msg m;
    int32_t list[FAULT_LIST_MAX];
    int err = 0, nlist, total;
    socklen_t el = sizeof (err);
    size_t len;

    if (p->sent) {
        if ((nlist = fault_msg_in (h, p->fd, n, list, &total)) > 0)
            host_fault_merge (h, list, nlist, total);
    }
    else if (getsockopt (p->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err
             || (revents & (POLLERR | POLLHUP))) {
        close (p->fd);
        p->ai++;
        standin_connect (h, n, p);
        return;
    }
    else if ((len = own_fault_msg (h, &m)) > 0) {
        memcpy (out, &hi, sizeof (hi));
        memcpy (out + sizeof (hi), &m, len);
        len += sizeof (hi);
        if (send (p->fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL)
            == (ssize_t)len) {
            p->sent = true;
            return;
        }
    }
    close (p->fd);
    p->fd = -1;
}

static void tcp_standin_faults (struct host *h, double window)
{
    struct standin_peer *peer;
    struct pollfd pfd[64];
    int map[64];
    double end = ddpi_now () + window;
    int n, np;

    if (!h->leader_addr
        || !(peer = calloc ((size_t)h->nnodes, sizeof (*peer))))
        return;
    for (n = 0; n < h->nnodes; n++) {
        peer[n].fd = -1;
        if (n != h->node)
            standin_connect (h, n, &peer[n]);
    }
    while (ddpi_now () < end) {
        for (n = 0, np = 0; n < h->nnodes && np < 64; n++) {
            if (peer[n].fd < 0)
                continue;
            pfd[np] = (struct pollfd){ peer[n].fd,
                                       peer[n].sent ? POLLIN : POLLOUT, 0 };
            map[np++] = n;
        }
        if (np == 0)
            break;
        if (poll (pfd, (nfds_t)np, 10) <= 0)
            continue;
        for (int i = 0; i < np; i++)
            if (pfd[i].revents)
                standin_step (h, map[i], &peer[map[i]], pfd[i].revents);
    }
    for (n = 0; n < h->nnodes; n++)
        if (peer[n].fd >= 0)
            close (peer[n].fd);
    free (peer);
}

const struct fault_relay host_tcp_relay = {
    .send = tcp_send_fault,
    .gather = tcp_gather_faults,
    .standin = tcp_standin_faults,
};

/* The peer behind node n's link is gone: blame its leader. */
static int link_lost (struct host *h, int n, const char *what)
{
    ddpi_debug ("link to node %d: %s", n, what);
    return host_fault (h, h->node_leader[n], FAULT_DIED);
}

/* Try to send more to node n.  Returns 1 on progress, 0 if blocked, <0. */
static int pump_send (struct host *h, int n, struct iovec *v, int cnt)
{
    struct host_peer_io *io = &h->io[n];
    struct iovec iov[18];
    struct msghdr m;
    size_t skip = io->out_done, total = sizeof (io->out);
    int k = 0, i;
    ssize_t r;

    if (skip < sizeof (io->out)) {
        iov[k].iov_base = (char *)&io->out + skip;
        iov[k++].iov_len = sizeof (io->out) - skip;
        skip = 0;
    }
    else
        skip -= sizeof (io->out);
    for (i = 0; i < cnt; i++)
        total += v[i].iov_len;
    for (i = 0; i < cnt && k < 18; i++) {
        if (skip >= v[i].iov_len) {
            skip -= v[i].iov_len;
            continue;
        }
        iov[k].iov_base = (char *)v[i].iov_base + skip;
        iov[k++].iov_len = v[i].iov_len - skip;
        skip = 0;
    }
    memset (&m, 0, sizeof (m));
    m.msg_iov = iov;
    m.msg_iovlen = (size_t)k;
    r = sendmsg (h->sock[n], &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return 0;
        return link_lost (h, n, strerror (errno));
    }
    io->out_done += (size_t)r;
    io->mid = io->out_done < total;
    if (!io->mid)
        io->send = false;
    return 1;
}

static int frame_in (struct host *h, int n, uint64_t s, size_t want)
{
    struct frame *f = &h->io[n].in;

    if (f->type == FRAME_FAULT) {
        int32_t list[FAULT_LIST_MAX];
        int kind = FAULT_SEQ_KIND (f->seq), nlist;
        int reporter = f->len < (uint64_t)h->size ? (int)f->len
                                                  : h->node_leader[n];
        bool whole;

        /* Untrusted numbers from the wire: keep them in range. */
        if (kind < FAULT_DIED || kind > FAULT_LINK)
            kind = FAULT_DIED;
        nlist = fault_frame_ranks (h, h->sock[n], n, f, list, &whole);
        host_fault_claim (h, list, nlist, FAULT_SEQ_N (f->seq), kind,
                          reporter);
        h->fault_sent = true;   /* the sender told everyone */
        return host_check_fault (h);
    }
    if (f->type != FRAME_DATA || f->seq != s || f->len != want) {
        ddpi_error (DDP_ETRANSPORT, "node %d sent step %llu (%llu bytes), "
                    "expected step %llu (%zu bytes): collectives called in "
                    "a different order?", n, (unsigned long long)f->seq,
                    (unsigned long long)f->len, (unsigned long long)s, want);
        return host_fault (h, h->node_leader[n], FAULT_LINK);
    }
    return 0;
}

/* Try to receive more from node n.  Returns 1 on progress, 0 if blocked. */
static int pump_recv (struct host *h, int n, uint64_t s, void *buf,
                      size_t want)
{
    struct host_peer_io *io = &h->io[n];
    ssize_t r;
    int rc;

    if (io->in_hdr < sizeof (io->in)) {
        r = recv (h->sock[n], (char *)&io->in + io->in_hdr,
                  sizeof (io->in) - io->in_hdr, MSG_DONTWAIT);
        if (r == 0)
            return link_lost (h, n, "closed");
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
                 ? 0 : link_lost (h, n, strerror (errno));
        io->in_hdr += (size_t)r;
        if (io->in_hdr < sizeof (io->in))
            return 1;
        if ((rc = frame_in (h, n, s, want)) < 0)
            return rc;
        if (want == 0) {
            io->recv = false;
            return 1;
        }
    }
    r = recv (h->sock[n], (char *)buf + io->in_done, want - io->in_done,
              MSG_DONTWAIT);
    if (r == 0)
        return link_lost (h, n, "closed");
    if (r < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
             ? 0 : link_lost (h, n, strerror (errno));
    io->in_done += (size_t)r;
    if (io->in_done == want)
        io->recv = false;
    return 1;
}

/* The leaders' exchange timed out: blame the leader of every node whose
 * part is still missing (a node whose data is late is one whose ranks did
 * not all arrive). */
static int late_nodes_fault (struct host *h)
{
    int list[FAULT_LIST_MAX];
    int n, nlist = 0, total = 0;

    for (n = 0; n < h->nnodes; n++) {
        if (n == h->node || !(h->io[n].recv || h->io[n].send))
            continue;
        if (nlist < FAULT_LIST_MAX)
            list[nlist++] = h->node_leader[n];
        total++;
    }
    if (total == 0)
        return ddpi_error (DDP_ETIMEDOUT, "leaders' exchange timed out");
    host_fault_claim (h, list, nlist, total, FAULT_TIMEOUT, h->rank);
    return host_check_fault (h);
}

int host_tcp_xchg (struct host *h, uint64_t s, struct iovec **sendv,
                   int *sendc, void **recv, size_t *recv_len)
{
    struct pollfd pfd[64];
    double deadline = 0, start = 0, t;
    int n, rc, pending;

    for (n = 0; n < h->nnodes; n++) {
        struct host_peer_io *io = &h->io[n];
        size_t len = 0;
        int i;
        io->send = io->recv = false;
        if (n == h->node)
            continue;
        if (sendc[n] >= 0) {
            for (i = 0; i < sendc[n]; i++)
                len += sendv[n][i].iov_len;
            io->out = (struct frame){ FRAME_DATA, 0, s, len };
            io->out_done = 0;
            io->send = true;
        }
        if (recv_len[n] != (size_t)-1) {
            io->in_hdr = io->in_done = 0;
            io->recv = true;
        }
    }
    for (;;) {
        int progress = 0, np = 0;
        pending = 0;
        for (n = 0; n < h->nnodes; n++) {
            struct host_peer_io *io = &h->io[n];
            if (io->send) {
                if ((rc = pump_send (h, n, sendv[n], sendc[n])) < 0)
                    return rc;
                progress += rc;
            }
            if (io->recv) {
                if ((rc = pump_recv (h, n, s, recv[n], recv_len[n])) < 0)
                    return rc;
                progress += rc;
            }
            if (io->send || io->recv) {
                pending++;
                if (np < 64) {
                    pfd[np].fd = h->sock[n];
                    pfd[np].events = (short)((io->send ? POLLOUT : 0)
                                             | (io->recv ? POLLIN : 0));
                    pfd[np].revents = 0;
                    np++;
                }
            }
        }
        if (!pending)
            return 0;
        if (progress)
            continue;
        if ((rc = host_check_fault (h)) < 0)
            return rc;
        t = ddpi_now ();
        if (deadline == 0) {
            start = t;
            deadline = t + h->cfg->timeout_s + 2 * host_grace (h);
        }
        else if (t > deadline)
            return late_nodes_fault (h);
        /* Busy-poll the sockets for as long as a shared-memory wait would
         * spin (a wakeup from poll costs several microseconds). */
        if (t - start < h->spin_us * 1e-6)
            continue;
        poll (pfd, (nfds_t)np, 20);
    }
}
