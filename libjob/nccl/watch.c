/* watch.c - the NCCL backend's watch: a thread that says what this rank is
 * doing, and the asking of the peers after a failure (watch.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "net.h"
#include "watch.h"

#define WATCH_MAGIC 0x57646470u /* "pddW" */
#define TEXT_MAX 512           /* a verdict, with its NUL */
#define CLIENTS_MAX 64         /* connections the thread serves at once */
#define CLIENT_LIMIT 2.0       /* seconds one of them may take */
#define SERVE_TICK_MS 200      /* the thread's poll, when nothing happens */
#define ASK_INFLIGHT 64        /* peers asked at once */
#define SCAN_BATCH 8           /* lower ranks asked at once for a collector */
#define ASK_TICK 0.05          /* seconds: the asking's poll, at most */

enum msg_type { MSG_ASK = 1, MSG_TELL = 2, MSG_ANSWER = 3 };

/* Every message: a question (ASK), a verdict (TELL: len bytes of text
 * follow) or the answer to either (ANSWER). */
struct msg {
    uint32_t magic;
    uint32_t type;
    uint64_t cookie;  /* ASK, TELL: the asked rank's; ANSWER: the answerer's */
    uint64_t state;   /* the sender's state word */
    int32_t rank;     /* the sender */
    uint32_t len;     /* TELL: bytes of text after this header */
    uint32_t holds;   /* ANSWER: the answerer holds a verdict */
    uint32_t collects; /* ASK: the sender is collecting: if the asked rank
                        * has not failed, the sender's verdict will come
                        * to it */
};

/* A connection the thread serves. */
struct client {
    int fd;           /* -1: free */
    double until;
    size_t got;       /* bytes of m, then of text */
    struct msg m;
    char text[TEXT_MAX];
};

/* Where a peer listens: its port and cookie, its host's entry. */
struct peer_addr {
    uint64_t cookie;
    uint16_t port;
    int32_t host;     /* index into hosts, -1: the rank has no watch */
};

struct host_entry {
    char name[64];
    uint32_t ip[NCCL_WATCH_IPS];
    uint32_t nip;
};

struct nccl_watch {
    int rank, size;
    const _Atomic uint64_t *state;
    uint64_t cookie;
    uint64_t net;             /* ddpi_net_id of this rank */
    int lfd;                  /* the listening socket */
    int wake[2];              /* a pipe: stop the thread */
    pthread_t thread;
    bool running;
    struct client cl[CLIENTS_MAX];
    pthread_mutex_t lock;     /* guards the verdict */
    bool holds;
    bool awaited;             /* a collector asked before this rank failed */
    int verdict_from;
    char verdict[TEXT_MAX];
    struct peer_addr *peers;  /* size entries */
    struct host_entry *hosts;
    int nhosts;
};

/* The watch of this process, for the child side of fork(). */
static struct nccl_watch *_Atomic live;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void close_fd (int *fd)
{
    if (*fd >= 0)
        close (*fd);
    *fd = -1;
}

/* A forked child has no thread: it must not keep the parent's listening
 * socket open (connections would queue there unanswered after the parent
 * died, and the parent would be taken for silent, not gone). */
static void child_after_fork (void)
{
    struct nccl_watch *w = atomic_exchange (&live, NULL);

    if (!w)
        return;
    close_fd (&w->lfd);
    for (int i = 0; i < CLIENTS_MAX; i++)
        close_fd (&w->cl[i].fd);
    w->running = false;
}

static void register_atfork (void)
{
    pthread_atfork (NULL, NULL, child_after_fork);
}

/* Printable ASCII only, NUL-terminated: text from the network. */
static void clean_text (char *t, size_t len)
{
    size_t i;

    for (i = 0; i + 1 < len && t[i]; i++)
        if (t[i] < 0x20 || t[i] > 0x7e)
            t[i] = '?';
    t[i < len ? i : len - 1] = '\0';
}

/* ---- the thread -------------------------------------------------------- */

static void answer (struct nccl_watch *w, struct client *c)
{
    struct msg a = {.magic = WATCH_MAGIC, .type = MSG_ANSWER,
                    .cookie = w->cookie, .rank = w->rank};

    /* The state is read under the lock that nccl_watch_diagnose takes
     * after the rank stored its failure: an answer "not failed" to a
     * collector is then always seen as awaited by the diagnosis. */
    pthread_mutex_lock (&w->lock);
    a.state = atomic_load_explicit (w->state, memory_order_relaxed);
    if (c->m.type == MSG_ASK && c->m.collects
        && !(NCCL_STATE_FLAGS (a.state) & NCCL_ST_FAILED))
        w->awaited = true;
    if (c->m.type == MSG_TELL && !w->holds && c->m.rank >= 0
        && c->m.rank < w->size && c->m.rank != w->rank) {
        memcpy (w->verdict, c->text, c->m.len);
        w->verdict[c->m.len < TEXT_MAX ? c->m.len : TEXT_MAX - 1] = '\0';
        clean_text (w->verdict, sizeof (w->verdict));
        w->verdict_from = c->m.rank;
        w->holds = true;
    }
    a.holds = w->holds;
    pthread_mutex_unlock (&w->lock);
    /* 40 bytes on a fresh connection: the socket buffer takes them. */
    (void)send (c->fd, &a, sizeof (a), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Read what c sent; answer and close once it is whole, close it at once
 * when it is not one of our peers' questions. */
static void client_read (struct nccl_watch *w, struct client *c)
{
    bool in_text = c->got >= sizeof (c->m);
    size_t done = in_text ? c->got - sizeof (c->m) : c->got;
    char *dst = in_text ? c->text : (char *)&c->m;
    size_t want = in_text ? c->m.len : sizeof (c->m);
    ssize_t n;

    n = recv (c->fd, dst + done, want - done, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0)
        goto done;
    c->got += (size_t)n;
    if (c->got == sizeof (c->m)
        && (c->m.magic != WATCH_MAGIC || c->m.cookie != w->cookie
            || (c->m.type != MSG_ASK && c->m.type != MSG_TELL)
            || (c->m.type == MSG_ASK) != (c->m.len == 0)
            || c->m.len >= TEXT_MAX))
        goto done;
    if (c->got < sizeof (c->m) + c->m.len)
        return;
    answer (w, c);
done:
    close_fd (&c->fd);
}

/* A free slot of the table; when every one is taken, the oldest
 * connection is closed for the new one.  A peer's question comes the
 * moment it connects, so a stranger's silent connections (anyone on the
 * machine can open them) never keep it waiting in the listen backlog
 * behind them: they make room instead. */
static int free_client (struct nccl_watch *w)
{
    int old = 0;

    for (int i = 0; i < CLIENTS_MAX; i++) {
        if (w->cl[i].fd < 0)
            return i;
        if (w->cl[i].until < w->cl[old].until)
            old = i;
    }
    close_fd (&w->cl[old].fd);
    return old;
}

static void accept_all (struct nccl_watch *w)
{
    /* At most a table's worth at a time: a stream of connections cannot
     * keep the thread here. */
    for (int k = 0; k < CLIENTS_MAX; k++) {
        int fd = accept4 (w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int i;
        if (fd < 0)
            return;
        i = free_client (w);
        w->cl[i].fd = fd;
        w->cl[i].got = 0;
        w->cl[i].until = ddpi_now () + CLIENT_LIMIT;
    }
}

static void *serve (void *arg)
{
    struct nccl_watch *w = arg;
    struct pollfd p[2 + CLIENTS_MAX];
    int who[CLIENTS_MAX];

    for (;;) {
        int n = 2, nc = 0;
        double now;

        for (int i = 0; i < CLIENTS_MAX; i++)
            if (w->cl[i].fd >= 0) {
                p[n++] = (struct pollfd){w->cl[i].fd, POLLIN, 0};
                who[nc++] = i;
            }
        p[0] = (struct pollfd){w->wake[0], POLLIN, 0};
        p[1] = (struct pollfd){w->lfd, POLLIN, 0};
        if (poll (p, (nfds_t)n, SERVE_TICK_MS) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        if (p[1].revents & POLLIN)
            accept_all (w);
        /* A slot accept_all just gave a new connection reads nothing
         * yet (a non-blocking read of an empty socket). */
        for (int k = 0; k < nc; k++)
            if (p[2 + k].revents && w->cl[who[k]].fd >= 0)
                client_read (w, &w->cl[who[k]]);
        now = ddpi_now ();
        for (int i = 0; i < CLIENTS_MAX; i++)
            if (w->cl[i].fd >= 0 && now > w->cl[i].until)
                close_fd (&w->cl[i].fd);
    }
    return NULL;
}

/* ---- start and stop ---------------------------------------------------- */

/* Listen on an ephemeral port; fill addr.  Returns 0 or a DDP_E* code with
 * err. */
static int watch_listen (struct nccl_watch *w, struct nccl_watch_addr *addr,
                         char *err, size_t errlen)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t slen = sizeof (sin);
    int n = ddpi_local_ipv4 (addr->ip, NCCL_WATCH_IPS);

    if (n < 0) {
        snprintf (err, errlen, "%s", ddpi_last_error ());
        return n;
    }
    sin.sin_addr.s_addr = ddpi_env_given ("DDP_HOST_ADDR") ? addr->ip[0] : INADDR_ANY;
    w->lfd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (w->lfd < 0 || bind (w->lfd, (struct sockaddr *)&sin, sizeof (sin)) < 0
        || listen (w->lfd, SOMAXCONN) < 0
        || getsockname (w->lfd, (struct sockaddr *)&sin, &slen) < 0) {
        snprintf (err, errlen, "listening socket: %s", strerror (errno));
        return DDP_ETRANSPORT;
    }
    addr->nip = (uint32_t)n;
    addr->port = sin.sin_port;
    addr->cookie = w->cookie;
    addr->net = w->net = ddpi_net_id (ddpi_machine_id ());
    return 0;
}

int nccl_watch_start (int rank, int size, const _Atomic uint64_t *state,
                      struct nccl_watch_addr *addr, struct nccl_watch **wp,
                      char *err, size_t errlen)
{
    struct nccl_watch *w = calloc (1, sizeof (*w));
    int rc;

    memset (addr, 0, sizeof (*addr));
    if (!w) {
        snprintf (err, errlen, "out of memory");
        return DDP_ENOMEM;
    }
    w->rank = rank;
    w->size = size;
    w->state = state;
    w->lfd = w->wake[0] = w->wake[1] = -1;
    for (int i = 0; i < CLIENTS_MAX; i++)
        w->cl[i].fd = -1;
    pthread_mutex_init (&w->lock, NULL);
    if (getrandom (&w->cookie, sizeof (w->cookie), 0) != sizeof (w->cookie))
        w->cookie = (uint64_t)getpid () * 0x9e3779b97f4a7c15ULL
                    ^ (uint64_t)(ddpi_now () * 1e9);
    if ((rc = watch_listen (w, addr, err, errlen)) < 0)
        goto fail;
    rc = DDP_ETRANSPORT;
    if (pipe2 (w->wake, O_CLOEXEC) < 0) {
        snprintf (err, errlen, "pipe: %s", strerror (errno));
        goto fail;
    }
    if ((errno = pthread_create (&w->thread, NULL, serve, w)) != 0) {
        snprintf (err, errlen, "thread: %s", strerror (errno));
        goto fail;
    }
    w->running = true;
    pthread_once (&atfork_once, register_atfork);
    atomic_store (&live, w);
    *wp = w;
    return 0;
fail:
    memset (addr, 0, sizeof (*addr));
    nccl_watch_stop (w);
    return rc;
}

void nccl_watch_stop (struct nccl_watch *w)
{
    if (!w)
        return;
    {
        struct nccl_watch *me = w;
        atomic_compare_exchange_strong (&live, &me, NULL);
    }
    if (w->running) {
        (void)!write (w->wake[1], "x", 1);
        pthread_join (w->thread, NULL);
    }
    close_fd (&w->lfd);
    close_fd (&w->wake[0]);
    close_fd (&w->wake[1]);
    for (int i = 0; i < CLIENTS_MAX; i++)
        close_fd (&w->cl[i].fd);
    pthread_mutex_destroy (&w->lock);
    free (w->peers);
    free (w->hosts);
    free (w);
}

/* Do blobs a and b publish the same host, watch addresses and network
 * (one host entry serves both)? */
static bool same_host (const struct nccl_blob *a, const struct nccl_blob *b)
{
    return strcmp (a->host, b->host) == 0 && a->watch.nip == b->watch.nip
           && a->watch.net == b->watch.net
           && memcmp (a->watch.ip, b->watch.ip, sizeof (a->watch.ip)) == 0;
}

int nccl_watch_peers (struct nccl_watch *w, const struct nccl_blob *all)
{
    free (w->peers);
    free (w->hosts);
    w->nhosts = 0;
    w->peers = calloc ((size_t)w->size, sizeof (*w->peers));
    w->hosts = calloc ((size_t)w->size, sizeof (*w->hosts));
    if (!w->peers || !w->hosts) {
        free (w->peers);
        free (w->hosts);
        w->peers = NULL;
        w->hosts = NULL;
        return DDP_ENOMEM;
    }
    for (int r = 0; r < w->size; r++) {
        const struct nccl_watch_addr *a = &all[r].watch;
        w->peers[r] = (struct peer_addr){a->cookie, a->port, -1};
        if (r == 0 || !same_host (&all[r - 1], &all[r])) {
            struct host_entry *h = &w->hosts[w->nhosts++];
            int nip = a->nip < NCCL_WATCH_IPS ? (int)a->nip : NCCL_WATCH_IPS;
            snprintf (h->name, sizeof (h->name), "%s", all[r].host);
            memcpy (h->ip, a->ip, sizeof (h->ip));
            /* The addresses worth trying, nearest first: never one of
             * ours for a rank elsewhere (it would reach this node:
             * net.h).  Once a host, not once a rank (it lists this
             * node's interfaces). */
            h->nip = nip > 0 ? (uint32_t)ddpi_peer_addrs_order (
                                   h->ip, nip, a->net == w->net)
                             : 0;
        }
        if (w->hosts[w->nhosts - 1].nip > 0)
            w->peers[r].host = w->nhosts - 1;
    }
    return 0;
}

/* ---- asking ------------------------------------------------------------ */

enum att_state { A_CONNECTING = 1, A_SENT, A_ANSWERED, A_REFUSED, A_UNREACH };

/* One connection to one address of a peer. */
struct attempt {
    int fd;
    int st;           /* enum att_state */
    size_t got;
    struct msg in;
};

/* A peer being asked, on every address of its host at once. */
struct asking {
    int rank;
    bool collects;    /* the question says this rank is collecting */
    int na;
    struct attempt a[NCCL_WATCH_IPS];
};

/* What a failed connection or send to an address says, from its errno:
 * refused (or reset, or closed: the socket that took it is going away, a
 * killed rank's listening socket closing between the kernel's accept and
 * the question, seen on a slow machine) means no such peer there now;
 * anything else, that the address cannot be reached. */
static int att_failed (int e)
{
    return e == ECONNREFUSED || e == ECONNRESET || e == EPIPE ? A_REFUSED
                                                              : A_UNREACH;
}

/* Send the question (or tell, with text) to k's rank on a connected
 * socket.  Returns 0, or -errno when the socket took less than all of
 * it. */
static int send_question (struct nccl_watch *w, int fd,
                          const struct asking *k, const char *tell)
{
    struct {
        struct msg m;
        char text[TEXT_MAX];
    } q;
    size_t tl = tell ? strlen (tell) : 0;

    if (tl >= TEXT_MAX)
        tl = TEXT_MAX - 1;
    memset (&q.m, 0, sizeof (q.m));
    q.m.magic = WATCH_MAGIC;
    q.m.type = tell ? MSG_TELL : MSG_ASK;
    q.m.cookie = w->peers[k->rank].cookie;
    q.m.state = atomic_load_explicit (w->state, memory_order_relaxed);
    q.m.rank = w->rank;
    q.m.len = (uint32_t)tl;
    q.m.collects = !tell && k->collects;
    if (tl)
        memcpy (q.text, tell, tl);
    if (send (fd, &q, sizeof (q.m) + tl, MSG_DONTWAIT | MSG_NOSIGNAL)
        == (ssize_t)(sizeof (q.m) + tl))
        return 0;
    return errno ? -errno : -EIO;
}

/* A connection to t's address completed: send the question. */
static void att_connected (struct nccl_watch *w, struct asking *k,
                           struct attempt *t, const char *tell)
{
    int rc = send_question (w, t->fd, k, tell);

    t->st = rc == 0 ? A_SENT : att_failed (-rc);
}

/* Start asking rank (saying whether this rank is collecting): a
 * non-blocking connection to each of its addresses. */
static void ask_start (struct nccl_watch *w, struct asking *k, int rank,
                       bool collects, const char *tell)
{
    const struct host_entry *h = &w->hosts[w->peers[rank].host];

    k->rank = rank;
    k->collects = collects;
    k->na = (int)h->nip;
    for (int i = 0; i < k->na; i++) {
        struct attempt *t = &k->a[i];
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = w->peers[rank].port};
        sin.sin_addr.s_addr = h->ip[i];
        t->got = 0;
        t->fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        0);
        if (t->fd < 0) {
            t->st = A_UNREACH;
            continue;
        }
        if (connect (t->fd, (struct sockaddr *)&sin, sizeof (sin)) == 0)
            att_connected (w, k, t, tell);
        else if (errno == EINPROGRESS)
            t->st = A_CONNECTING;
        else
            t->st = att_failed (errno);
    }
}

/* An event on t: its connection completed, or its answer came. */
static void att_event (struct nccl_watch *w, struct asking *k,
                       struct attempt *t, const char *tell)
{
    if (t->st == A_CONNECTING) {
        int e = 0;
        socklen_t el = sizeof (e);
        if (getsockopt (t->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
            e = errno;
        if (e == 0)
            att_connected (w, k, t, tell);
        else
            t->st = att_failed (e);
        return;
    }
    if (t->st == A_SENT) {
        ssize_t n = recv (t->fd, (char *)&t->in + t->got,
                          sizeof (t->in) - t->got, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK
                      || errno == EINTR))
            return;
        if (n <= 0) {       /* closed unanswered: no such peer there now */
            t->st = A_REFUSED;
            return;
        }
        t->got += (size_t)n;
        if (t->got < sizeof (t->in))
            return;
        /* Anything but our peer's answer: another process has the port. */
        t->st = t->in.magic == WATCH_MAGIC && t->in.type == MSG_ANSWER
                        && t->in.cookie == w->peers[k->rank].cookie
                        && t->in.rank == k->rank
                    ? A_ANSWERED
                    : A_REFUSED;
    }
}

/* What asking k found, if it is over (or over is set: the window ended;
 * or one address refused and none is awaiting an answer):
 * answered on one address, else silent when one connected, else gone when
 * one refused (the peer's machine said nothing listens there: its other
 * addresses may lead nowhere, as an interface that is up without a link;
 * none of ours is tried for a peer elsewhere, nccl_watch_peers), else
 * unreachable.  Returns 1 with *out set (and *holds: whether the answer
 * said it holds a verdict), else 0. */
static int ask_result (const struct asking *k, bool over,
                       struct nccl_peer *out, bool *holds)
{
    bool pending = false, silent = false, refused = false;

    *holds = false;
    for (int i = 0; i < k->na; i++) {
        const struct attempt *t = &k->a[i];
        if (t->st == A_ANSWERED) {
            out->seen = NCCL_SEEN_ANSWERED;
            out->state = t->in.state;
            *holds = t->in.holds != 0;
            return 1;
        }
        pending = pending || t->st == A_CONNECTING || t->st == A_SENT;
        silent = silent || t->st == A_SENT;
        refused = refused || t->st == A_REFUSED;
    }
    /* A refusal is the peer's listener gone (it listens on every address
     * at once): no need to wait for connections that lead nowhere. */
    if (pending && !over && (silent || !refused))
        return 0;
    out->seen = silent    ? NCCL_SEEN_SILENT
                : refused ? NCCL_SEEN_GONE
                          : NCCL_SEEN_UNREACHABLE;
    return 1;
}

static void ask_close (struct asking *k)
{
    for (int i = 0; i < k->na; i++)
        close_fd (&k->a[i].fd);
    k->na = 0;
}

/* Ask the n ranks (collects: as their collector; with tell: tell them the
 * verdict) until each is found out or the deadline; results into
 * out[rank], holds[rank] (may be NULL) whether it holds a verdict.  Ranks
 * without a watch stay NCCL_SEEN_NONE. */
static void ask_ranks (struct nccl_watch *w, const int *ranks, int n,
                       bool collects, const char *tell, double deadline,
                       struct nccl_peer *out, bool *holds)
{
    struct asking k[ASK_INFLIGHT];
    struct pollfd p[ASK_INFLIGHT * NCCL_WATCH_IPS];
    struct attempt *pt[ASK_INFLIGHT * NCCL_WATCH_IPS];
    struct asking *pk[ASK_INFLIGHT * NCCL_WATCH_IPS];
    int next = 0, nk = 0;

    while (next < n || nk > 0) {
        double now = ddpi_now ();
        bool over = now >= deadline;
        int np = 0;

        while (!over && nk < ASK_INFLIGHT && next < n) {
            int r = ranks[next++];
            if (r == w->rank || w->peers[r].host < 0)
                continue;
            ask_start (w, &k[nk++], r, collects, tell);
        }
        /* Events first, also once the window is over (a poll that does
         * not wait): what the kernel already holds (a refusal, an answer)
         * counts, however late this thread got to run. */
        for (int i = 0; i < nk; i++)
            for (int j = 0; j < k[i].na; j++) {
                struct attempt *t = &k[i].a[j];
                if (t->st != A_CONNECTING && t->st != A_SENT)
                    continue;
                p[np] = (struct pollfd){t->fd,
                                        t->st == A_CONNECTING ? POLLOUT
                                                              : POLLIN, 0};
                pt[np] = t;
                pk[np++] = &k[i];
            }
        if (np > 0) {
            now = deadline - ddpi_now ();     /* seconds left */
            poll (p, (nfds_t)np, over || now <= 0 ? 0
                                 : now < ASK_TICK ? (int)(now * 1000) + 1
                                                  : (int)(ASK_TICK * 1000));
            for (int i = 0; i < np; i++)
                if (p[i].revents)
                    att_event (w, pk[i], pt[i], tell);
        }
        for (int i = 0; i < nk;) {
            struct nccl_peer res = {0};
            bool h;
            if (ask_result (&k[i], over, &res, &h)) {
                out[k[i].rank] = res;
                if (holds)
                    holds[k[i].rank] = h;
                ask_close (&k[i]);
                k[i] = k[--nk];
                continue;
            }
            i++;
        }
        if (over)
            break;
    }
}

/* ---- the diagnosis ----------------------------------------------------- */

/* The verdict held, as out's text with who noticed.  Returns true if one
 * is held. */
static bool held (struct nccl_watch *w, char *out, size_t len)
{
    bool h;

    pthread_mutex_lock (&w->lock);
    h = w->holds;
    if (h && w->verdict_from != w->rank)
        snprintf (out, len, "%s (noticed by rank %d)", w->verdict,
                  w->verdict_from);
    else if (h)
        snprintf (out, len, "%s", w->verdict);
    pthread_mutex_unlock (&w->lock);
    return h;
}

static const char *host_of (void *arg, int r)
{
    struct nccl_watch *w = arg;
    int h = w->peers[r].host;
    return h >= 0 ? w->hosts[h].name : "";
}

/* Ask the lower ranks, in batches, until one of them is found to have
 * failed too (returned: that collector) or the deadline; what was found
 * is kept in peers. */
static int find_collector (struct nccl_watch *w, double deadline,
                           struct nccl_peer *peers)
{
    int batch[SCAN_BATCH];

    for (int lo = 0; lo < w->rank && ddpi_now () < deadline;
         lo += SCAN_BATCH) {
        int n = w->rank - lo < SCAN_BATCH ? w->rank - lo : SCAN_BATCH;
        for (int i = 0; i < n; i++)
            batch[i] = lo + i;
        ask_ranks (w, batch, n, false, NULL, deadline, peers, NULL);
        for (int i = 0; i < n; i++)
            if (peers[lo + i].seen == NCCL_SEEN_ANSWERED
                && (NCCL_STATE_FLAGS (peers[lo + i].state) & NCCL_ST_FAILED))
                return lo + i;
    }
    return -1;
}

/* Wait until a verdict is held (into out), at most 3 windows and 0.5 s:
 * the one bound of every wait for a collector.  Returns whether one is. */
static bool wait_verdict (struct nccl_watch *w, double window, char *out,
                          size_t len)
{
    const struct timespec nap = {0, 10 * 1000 * 1000};
    double deadline = ddpi_now () + 3 * window + 0.5;

    while (!held (w, out, len)) {
        if (ddpi_now () >= deadline)
            return false;
        nanosleep (&nap, NULL);
    }
    return true;
}

/* Did a collector ask this rank before it failed?  Then that collector's
 * verdict comes: it tells every rank that answered it (and holds none). */
static bool awaited (struct nccl_watch *w)
{
    bool a;

    pthread_mutex_lock (&w->lock);
    a = w->awaited;
    pthread_mutex_unlock (&w->lock);
    return a;
}

/* Has a rank below this one failed too, as peers show it? */
static bool lower_failed (const struct nccl_watch *w,
                          const struct nccl_peer *peers)
{
    for (int r = 0; r < w->rank; r++)
        if (peers[r].seen == NCCL_SEEN_ANSWERED
            && (NCCL_STATE_FLAGS (peers[r].state) & NCCL_ST_FAILED))
            return true;
    return false;
}

/* The collector's part: ask every rank not found out yet (and the lower
 * ones again), describe, keep the verdict and tell it to the ranks that
 * answered and hold none.  A lower rank that failed meanwhile (survivors
 * that timed out at the same moment all begin to collect) is the one to
 * tell: this rank waits for that verdict instead, so that every survivor
 * reports the lowest collector's. */
static void collect (struct nccl_watch *w, uint64_t mine, double window,
                     struct nccl_peer *peers, bool *holds, int *list,
                     char *out, size_t len)
{
    int n = 0;

    for (int r = 0; r < w->size; r++)
        if (r != w->rank && (r < w->rank || peers[r].seen == NCCL_SEEN_NONE))
            list[n++] = r;
    ask_ranks (w, list, n, true, NULL, ddpi_now () + window, peers, holds);
    if (held (w, out, len)     /* told meanwhile: report what others do */
        || (lower_failed (w, peers)
            && wait_verdict (w, window, out, len)))
        return;
    (void)nccl_describe (peers, w->size, w->rank, mine, host_of, w, window,
                         out, len);
    pthread_mutex_lock (&w->lock);
    if (!w->holds) {
        snprintf (w->verdict, sizeof (w->verdict), "%s", out);
        w->verdict_from = w->rank;
        w->holds = true;
    }
    pthread_mutex_unlock (&w->lock);
    n = 0;
    for (int r = 0; r < w->size; r++)
        if (peers[r].seen == NCCL_SEEN_ANSWERED && !holds[r])
            list[n++] = r;
    ask_ranks (w, list, n, false, out, ddpi_now () + window, peers, NULL);
}

int nccl_watch_diagnose (struct nccl_watch *w, uint64_t mine, double window,
                         char *out, size_t len)
{
    struct nccl_peer *peers = NULL;
    bool *holds = NULL;
    int *list = NULL, rc = -1;
    bool found;

    out[0] = '\0';
    if (!w)
        return -1;
    if (held (w, out, len))
        return 0;
    if (!w->peers)
        return -1;
    peers = calloc ((size_t)w->size, sizeof (*peers));
    holds = calloc ((size_t)w->size, sizeof (*holds));
    list = calloc ((size_t)w->size, sizeof (*list));
    if (!peers || !holds || !list)
        goto out;
    if (awaited (w))
        found = wait_verdict (w, window, out, len);
    else {
        int c = find_collector (w, ddpi_now () + window, peers);
        found = held (w, out, len)
                || (c >= 0 && wait_verdict (w, window, out, len));
    }
    if (!found)
        collect (w, mine, window, peers, holds, list, out, len);
    rc = 0;
out:
    free (peers);
    free (holds);
    free (list);
    return rc;
}
