/* rollcall_net.c - the roll call's sockets (rollcall.h): each node's relay
 * (an abstract Unix socket its delegate binds), the hub on MASTER_PORT,
 * and the delegates' reports to it.  Reports are read as they come, on
 * epoll, by both the relay and the hub, so a slow or silent peer costs no
 * one else any time. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "net.h"
#include "rollcall.h"

/* Connections whose report was taken, and who get the answer. */
struct fdlist {
    int *fd;
    int n, cap;
};

static int fdlist_add (struct fdlist *l, int fd)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        int *v = realloc (l->fd, (size_t)cap * sizeof (int));
        if (!v)
            return -1;
        l->fd = v;
        l->cap = cap;
    }
    l->fd[l->n++] = fd;
    return 0;
}

static void fdlist_close (struct fdlist *l)
{
    for (int i = 0; i < l->n; i++)
        close (l->fd[i]);
    free (l->fd);
    l->fd = NULL;
    l->n = l->cap = 0;
}

static void nap (double s)
{
    struct timespec ts = { 0, (long)(s * 1e9) };
    nanosleep (&ts, NULL);
}

/* ---- gathering reports ------------------------------------------------- */

/* A connection whose report is being read. */
struct conn {
    int fd;         /* -1 once done with */
    char *buf;
    size_t got, need;   /* need: 0 until the header is in */
};

/* What a gather reads, and until when. */
struct gather {
    const struct ddpi_rollcall_in *in;
    struct ddpi_tally *t;
    int only_node;          /* the relay: reports of this node; the hub: -1 */
    bool same_user;         /* drop peers of another user (the relay) */
    struct fdlist *taken;   /* connections whose report was added */
    struct conn *c;
    int nc, cap;
};

/* Does the peer of the Unix socket fd run as our user? */
static bool peer_is_us (int fd)
{
    struct ucred cr;
    socklen_t len = sizeof (cr);

    return getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0
           && cr.uid == getuid ();
}

/* Out of descriptors with thousands of delegates calling in: raise the
 * soft limit to the hard one, once (init has failed already; the process
 * is about to report and exit).  Returns true when it was raised. */
static bool more_fds (void)
{
    static bool tried;
    struct rlimit rl;

    if (tried || getrlimit (RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
        return false;
    tried = true;
    rl.rlim_cur = rl.rlim_max;
    return setrlimit (RLIMIT_NOFILE, &rl) == 0;
}

/* Accept every pending connection on lfd into g (and into the epoll set
 * ep, unless it is -1). */
static void accept_all (struct gather *g, int ep, int lfd)
{
    for (;;) {
        struct epoll_event ev = { .events = EPOLLIN };
        int fd = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && more_fds ())
            continue;
        if (fd < 0)
            return;
        if ((g->same_user && !peer_is_us (fd)) || g->nc == INT32_MAX) {
            close (fd);
            continue;
        }
        if (g->nc == g->cap) {
            int cap = g->cap ? 2 * g->cap : 16;
            struct conn *v = realloc (g->c, (size_t)cap * sizeof (*v));
            if (!v) {
                close (fd);
                return;
            }
            g->c = v;
            g->cap = cap;
        }
        g->c[g->nc] = (struct conn){ fd, NULL, 0, 0 };
        ev.data.u32 = (uint32_t)g->nc;
        if (ep >= 0 && epoll_ctl (ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close (fd);
            continue;
        }
        g->nc++;
    }
}

/* The header is in: check it, make room for the rest.  Returns 0 or -1. */
static int conn_header (struct gather *g, struct conn *c)
{
    size_t need = ddpi_report_len (c->buf, g->in->tag);
    char *buf;

    if (need == 0
        || (g->only_node >= 0 && ddpi_report_node (c->buf) != g->only_node)
        || !(buf = realloc (c->buf, need)))
        return -1;
    c->buf = buf;
    c->need = need;
    return 0;
}

/* Read what c has.  Returns 1 when its report is in and added, 0 for
 * more to come, -1 for a bad or closed one. */
static int conn_read (struct gather *g, struct conn *c)
{
    for (;;) {
        size_t want = c->need ? c->need : ROLLCALL_REPORT_HDR;
        ssize_t n;

        if (!c->buf && !(c->buf = malloc (ROLLCALL_REPORT_HDR)))
            return -1;
        n = recv (c->fd, c->buf + c->got, want - c->got, MSG_DONTWAIT);
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
                   ? 0 : -1;
        c->got += (size_t)n;
        if (c->got < want)
            continue;
        if (!c->need) {
            if (conn_header (g, c) < 0)
                return -1;
            continue;
        }
        return ddpi_report_add (g->t, g->in->tag, c->buf, c->need) == 0
               ? 1 : -1;
    }
}

/* A connection is done with: its fd goes to the answered, or is closed. */
static void conn_end (struct gather *g, int ep, struct conn *c, int rc)
{
    epoll_ctl (ep, EPOLL_CTL_DEL, c->fd, NULL);
    if (rc != 1 || fdlist_add (g->taken, c->fd) < 0)
        close (c->fd);
    free (c->buf);
    c->buf = NULL;
    c->fd = -1;
}

/* Has the gather heard enough?  The hub: every node.  The relay: every
 * other rank of this node, whatever the views so far say: the delegate's
 * own probe may have missed a rank that is there, and only that rank's
 * view can tell (so a node that does miss a rank waits the relay's whole
 * window). */
static bool enough (const struct gather *g)
{
    if (g->only_node < 0)
        return g->t->nheard == g->t->nnodes;
    return g->taken->n + 1 >= g->in->local_size;
}

/* Milliseconds until end for a wait: 0 once it passed (never the -1 of
 * "forever"), and within an int however far end is. */
static int ms_until (double end)
{
    double left = end - ddpi_now ();

    if (left <= 0)
        return 0;
    return left < 1e6 ? (int)(left * 1000) + 1 : 1000000000;
}

/* Read reports arriving on the listening socket lfd into g->t until
 * enough() or end. */
static void gather (struct gather *g, int lfd, double end)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
    struct epoll_event evs[64];
    int ep = epoll_create1 (EPOLL_CLOEXEC), i, n;

    if (ep < 0 || epoll_ctl (ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
        goto out;
    while (!enough (g) && ddpi_now () < end) {
        n = epoll_wait (ep, evs, 64, ms_until (end));
        for (i = 0; i < n; i++) {
            struct conn *c;
            int rc;
            if (evs[i].data.u32 == UINT32_MAX) {
                accept_all (g, ep, lfd);
                continue;
            }
            c = &g->c[evs[i].data.u32];
            if (c->fd >= 0 && (rc = conn_read (g, c)) != 0)
                conn_end (g, ep, c, rc);
        }
    }
out:
    for (i = 0; i < g->nc; i++)
        if (g->c[i].fd >= 0) {
            close (g->c[i].fd);
            free (g->c[i].buf);
        }
    free (g->c);
    g->c = NULL;
    g->nc = g->cap = 0;
    if (ep >= 0)
        close (ep);
}

/* ---- answers ----------------------------------------------------------- */

static void answer_all (const struct fdlist *l, const char *ans, size_t len)
{
    double end = ddpi_now () + 0.5;

    for (int i = 0; i < l->n; i++)
        (void)ddpi_io_full (l->fd[i], (void *)ans, len, true, end);
}

/* Read an answer (ROLLCALL_ANSWER_MAX bytes of room in ans) from fd by
 * end.  Returns its length, or 0. */
static size_t answer_read (int fd, char *ans, double end)
{
    const size_t hdr = 32;
    int32_t counts[4];
    size_t more;

    if (ddpi_io_full (fd, ans, hdr, false, end) < 0)
        return 0;
    memcpy (counts, ans + 16, sizeof (counts));
    if (counts[1] < 0 || counts[1] > ROLLCALL_LIST_MAX || counts[3] < 0
        || counts[3] > ROLLCALL_LIST_MAX)
        return 0;
    more = (size_t)(counts[1] + counts[3]) * sizeof (int32_t);
    if (ddpi_io_full (fd, ans + hdr, more, false, end) < 0)
        return 0;
    return hdr + more;
}

/* ---- the hub ----------------------------------------------------------- */

/* MASTER_ADDR and MASTER_PORT as a socket address.  Returns 0 or -1. */
static int hub_address (struct sockaddr_in *sin)
{
    const char *addr = getenv ("MASTER_ADDR");
    const char *port = getenv ("MASTER_PORT");
    long p;

    memset (sin, 0, sizeof (*sin));
    sin->sin_family = AF_INET;
    if (!addr || !port || ddpi_parse_long (port, 1, 65535, &p) < 0
        || inet_pton (AF_INET, addr, &sin->sin_addr) != 1)
        return -1;
    sin->sin_port = htons ((uint16_t)p);
    return 0;
}

/* Listen on MASTER_PORT unless someone else does.  Returns the listening
 * socket, or -1. */
static int hub_listen (const struct sockaddr_in *hub, int backlog)
{
    struct sockaddr_in any = *hub;
    int one = 1;
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0)
        return -1;
    any.sin_addr.s_addr = htonl (INADDR_ANY);
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    if (bind (fd, (struct sockaddr *)&any, sizeof (any)) < 0
        || listen (fd, backlog) < 0) {
        close (fd);
        return -1;
    }
    return fd;
}

/* Node 0's delegate: the nodes' reports into t (which has this node's
 * already), then the answer to every delegate and into ans.  Returns the
 * answer's length. */
static size_t hub_run (const struct ddpi_rollcall_in *in, int lfd,
                       struct ddpi_tally *t, char *ans)
{
    struct fdlist reporters = { 0 };
    struct gather g = { in, t, -1, false, &reporters, NULL, 0, 0 };
    size_t len;

    gather (&g, lfd, ddpi_now () + in->window);
    len = ddpi_answer_fill (t, in->tag, ans);
    answer_all (&reporters, ans, len);
    fdlist_close (&reporters);
    return len;
}

/* Connect to the hub, retrying until end (it may not be up yet).  Returns
 * a connected non-blocking socket, or -1. */
static int hub_connect (const struct sockaddr_in *hub, double end)
{
    while (ddpi_now () < end) {
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         0);
        int err = 0;
        socklen_t el = sizeof (err);

        if (fd < 0)
            return -1;
        if (connect (fd, (const struct sockaddr *)hub, sizeof (*hub)) == 0)
            return fd;
        if (errno == EINPROGRESS) {
            struct pollfd p = { fd, POLLOUT, 0 };
            if (poll (&p, 1, ms_until (end)) == 1
                && getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0
                && err == 0)
                return fd;
        }
        close (fd);
        nap (0.05);
    }
    return -1;
}

/* Another node's delegate: send the node's report, read the answer into
 * ans.  Returns the answer's length, or 0. */
static size_t report_to_hub (const struct ddpi_rollcall_in *in,
                             const struct sockaddr_in *hub, const char *rep,
                             size_t len, char *ans)
{
    double end = ddpi_now () + in->window + 0.5;
    size_t alen = 0;
    int fd = hub_connect (hub, end);

    if (fd >= 0 && ddpi_io_full (fd, (void *)rep, len, true, end) == 0)
        alen = answer_read (fd, ans, end);
    if (fd >= 0)
        close (fd);
    return alen;
}

/* ---- the node's relay -------------------------------------------------- */

/* The node's meeting point: an abstract Unix socket (no file) named after
 * the step and the node (nodes of a test cluster share one network
 * namespace). */
static socklen_t relay_addr (const struct ddpi_rollcall_in *in,
                             struct sockaddr_un *sa)
{
    int n;

    memset (sa, 0, sizeof (*sa));
    sa->sun_family = AF_UNIX;
    n = snprintf (sa->sun_path + 1, sizeof (sa->sun_path) - 1,
                  "ddp-rollcall.%016llx.%d", (unsigned long long)in->tag,
                  in->node);
    return (socklen_t)(offsetof (struct sockaddr_un, sun_path) + 1
                       + (size_t)n);
}

/* Bind the relay: this rank is the delegate.  Returns the listening
 * socket or -1 (another rank is). */
static int relay_bind (const struct ddpi_rollcall_in *in)
{
    struct sockaddr_un sa;
    socklen_t len = relay_addr (in, &sa);
    int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd >= 0 && (bind (fd, (struct sockaddr *)&sa, len) < 0
                    || listen (fd, in->local_size + 8) < 0)) {
        close (fd);
        fd = -1;
    }
    return fd;
}

/* Connect to the node's delegate.  Returns the socket or -1. */
static int relay_connect (const struct ddpi_rollcall_in *in)
{
    struct sockaddr_un sa;
    socklen_t len = relay_addr (in, &sa);
    int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd >= 0 && (connect (fd, (struct sockaddr *)&sa, len) < 0
                    || !peer_is_us (fd))) {
        close (fd);
        fd = -1;
    }
    return fd;
}

/* The first rank of this node that this rank's probe saw arrive: the
 * delegate it expects. */
static int first_survivor (const struct ddpi_rollcall_in *in)
{
    for (int i = 0; i < in->local_size; i++)
        if (!ddpi_rank_in (in->missing, in->nmissing, in->local_ranks[i]))
            return in->local_ranks[i];
    return in->rank;
}

/* Join the node's relay by end: as its delegate (*lfd, the relay's
 * listening socket) or as one of its listeners (*fd).  The expected
 * delegate binds at once; the others connect, and bind themselves when
 * no delegate came within half the time.  Returns 0 or -1. */
static int relay_join (const struct ddpi_rollcall_in *in, int *lfd, int *fd,
                       double end)
{
    double start = ddpi_now ();
    bool first = first_survivor (in) == in->rank;

    *lfd = *fd = -1;
    while (ddpi_now () < end) {
        if ((first || ddpi_now () - start > (end - start) / 2)
            && (*lfd = relay_bind (in)) >= 0)
            return 0;
        if ((*fd = relay_connect (in)) >= 0)
            return 0;
        nap (0.01);
    }
    return -1;
}

/* This node's report, from what its survivors saw (t).  *len its size. */
static char *node_report (const struct ddpi_rollcall_in *in,
                          const struct ddpi_tally *t, size_t *len)
{
    int *missing = calloc ((size_t)in->local_size, sizeof (int));
    int i, m = 0;
    char *rep;

    if (!missing)
        return NULL;
    for (i = 0; i < in->local_size; i++)
        if (t->state[in->local_ranks[i]] == RANK_MISSING)
            missing[m++] = in->local_ranks[i];
    rep = ddpi_report_make (in->tag, in->node, in->local_ranks,
                            in->local_size, missing, m, len);
    free (missing);
    return rep;
}

/* The delegate: gather the node's views, report (or be the hub), relay
 * the answer.  Returns 0 with out filled, or -1. */
static int delegate_run (const struct ddpi_rollcall_in *in, int lfd,
                         const struct sockaddr_in *hub, double relay_end,
                         struct ddpi_rollcall *out)
{
    struct ddpi_tally t;
    struct fdlist listeners = { 0 };
    struct gather g = { in, &t, in->node, true, &listeners, NULL, 0, 0 };
    char ans[ROLLCALL_ANSWER_MAX], *rep = NULL;
    size_t len = 0, alen = 0;
    int hfd = -1, rc = -1;

    if (ddpi_tally_init (&t, in->size, in->nnodes) < 0
        || ddpi_tally_add (&t, in->node, in->local_ranks, in->local_size,
                           in->missing, in->nmissing) < 0)
        goto out;
    gather (&g, lfd, relay_end);
    if (in->node == 0 && (hfd = hub_listen (hub, in->nnodes + 16)) >= 0) {
        ddpi_debug ("roll call: hub on port %d", ntohs (hub->sin_port));
        alen = hub_run (in, hfd, &t, ans);
    }
    else if ((rep = node_report (in, &t, &len)))
        alen = report_to_hub (in, hub, rep, len, ans);
    if (alen == 0)
        goto out;
    accept_all (&g, -1, lfd);   /* late listeners: the answer too */
    for (int i = 0; i < g.nc; i++)
        fdlist_add (&listeners, g.c[i].fd);
    free (g.c);
    answer_all (&listeners, ans, alen);
    rc = ddpi_answer_parse (ans, alen, in->tag, in->size, out);
out:
    if (hfd >= 0)
        close (hfd);
    fdlist_close (&listeners);
    free (rep);
    ddpi_tally_free (&t);
    return rc;
}

/* A listener: give the delegate this rank's view, wait for the answer. */
static int listener_run (const struct ddpi_rollcall_in *in, int fd,
                         double end, struct ddpi_rollcall *out)
{
    char ans[ROLLCALL_ANSWER_MAX];
    size_t len, alen = 0;
    char *rep = ddpi_report_make (in->tag, in->node, in->local_ranks,
                                  in->local_size, in->missing, in->nmissing,
                                  &len);

    if (rep && ddpi_io_full (fd, rep, len, true, end) == 0)
        alen = answer_read (fd, ans, end);
    free (rep);
    return alen ? ddpi_answer_parse (ans, alen, in->tag, in->size, out) : -1;
}

int ddpi_rollcall_run (const struct ddpi_rollcall_in *in,
                       struct ddpi_rollcall *out)
{
    double relay_end = ddpi_now () + in->relay;
    struct sockaddr_in hub;
    int lfd, fd, rc = -1;

    if (!(in->relay > 0 && in->relay < 1e6) || in->local_size < 1
        || in->local_size > ROLLCALL_NODE_MAX
        || in->nmissing < 0 || in->nmissing > in->local_size
        || hub_address (&hub) < 0 || relay_join (in, &lfd, &fd, relay_end) < 0)
        return -1;
    if (lfd >= 0) {
        rc = delegate_run (in, lfd, &hub, relay_end, out);
        close (lfd);
    }
    else {
        rc = listener_run (in, fd, relay_end + in->window + 1.5, out);
        close (fd);
    }
    return rc;
}
