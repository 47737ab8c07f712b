/* gate.c - the door of a lane's listening socket (gate.h): a bounded
 * table of connections accepted but not known yet, read without blocking,
 * closed when they are too slow or when a newer one needs the room. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gate.h"

#define GATE_LISTEN UINT64_MAX  /* epoll data of the listening socket */

int gate_open (struct gate *g, int listen_fd, size_t first)
{
    struct epoll_event e = { .events = EPOLLIN, .data.u64 = GATE_LISTEN };
    int fl;

    g->listen_fd = listen_fd;
    g->first = first < GATE_BUF ? first : GATE_BUF;
    g->n = g->err = 0;
    for (int i = 0; i < GATE_MAX; i++)
        g->c[i].fd = -1;
    if ((fl = fcntl (listen_fd, F_GETFL)) < 0
        || fcntl (listen_fd, F_SETFL, fl | O_NONBLOCK) < 0
        || (g->ep = epoll_create1 (EPOLL_CLOEXEC)) < 0) {
        g->ep = -1;
        return -1;
    }
    if (epoll_ctl (g->ep, EPOLL_CTL_ADD, listen_fd, &e) < 0) {
        int err = errno;
        close (g->ep);
        g->ep = -1;
        errno = err;
        return -1;
    }
    return 0;
}

void gate_close (struct gate *g)
{
    if (g->ep < 0)
        return;
    for (int i = 0; i < GATE_MAX; i++)
        if (g->c[i].fd >= 0)
            gate_drop (g, i);
    close (g->ep);
    g->ep = -1;
}

int gate_fd (const struct gate *g)
{
    return g->ep;
}

void gate_drop (struct gate *g, int slot)
{
    close (g->c[slot].fd);  /* and out of g->ep with it: never dup'ed */
    g->c[slot].fd = -1;
    g->n--;
}

int gate_take (struct gate *g, int slot)
{
    int fd = g->c[slot].fd;

    epoll_ctl (g->ep, EPOLL_CTL_DEL, fd, NULL);
    g->c[slot].fd = -1;
    g->n--;
    return fd;
}

void gate_ask (struct gate *g, int slot, size_t need)
{
    g->c[slot].need = need < GATE_BUF ? need : GATE_BUF;
}

/* Read what connection slot sent, up to what was asked.  Returns 1 when
 * it is all there, 0 when more is to come, -1 when the connection ended
 * or failed first. */
static int conn_read (struct gate_conn *c)
{
    ssize_t r;

    if (c->got >= c->need)
        return 1;
    r = recv (c->fd, c->buf + c->got, c->need - c->got, MSG_DONTWAIT);
    if (r > 0)
        c->got += (size_t)r;
    else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK
                        && errno != EINTR))
        return -1;
    return c->got == c->need;
}

/* A free slot, the oldest pending connection closed for it when the
 * table is full. */
static int free_slot (struct gate *g)
{
    int old = 0;

    for (int i = 0; i < GATE_MAX; i++) {
        if (g->c[i].fd < 0)
            return i;
        if (g->c[i].since < g->c[old].since)
            old = i;
    }
    gate_drop (g, old);
    return old;
}

/* Accept one connection into g at now.  Returns its slot, -1 when none
 * waits (or it could not be watched: then it is closed). */
static int accept_one (struct gate *g, double now)
{
    int fd = accept4 (g->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    struct epoll_event e = { .events = EPOLLIN };
    int slot;

    if (fd < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            g->err = errno;
        return -1;
    }
    slot = free_slot (g);
    e.data.u64 = (uint64_t)slot;
    if (epoll_ctl (g->ep, EPOLL_CTL_ADD, fd, &e) < 0) {
        close (fd);
        return -1;
    }
    g->c[slot] = (struct gate_conn){ .fd = fd, .since = now,
                                     .need = g->first };
    g->n++;
    return slot;
}

/* Close the connections older than GATE_WAIT at now. */
static void expire (struct gate *g, double now)
{
    for (int i = 0; g->n > 0 && i < GATE_MAX; i++)
        if (g->c[i].fd >= 0 && now - g->c[i].since > GATE_WAIT)
            gate_drop (g, i);
}

/* Read slot (a wake-up on it, or just accepted).  Returns slot when it
 * has what was asked, else -1 (and it is closed when it ended). */
static int read_slot (struct gate *g, int slot)
{
    int r;

    if (slot < 0 || slot >= GATE_MAX || g->c[slot].fd < 0)
        return -1;
    if ((r = conn_read (&g->c[slot])) < 0)
        gate_drop (g, slot);
    return r > 0 ? slot : -1;
}

int gate_next (struct gate *g, double now)
{
    struct epoll_event ev[GATE_MAX + 1];
    int n, ready = -1;

    if (g->ep < 0)
        return -1;
    g->err = 0;
    expire (g, now);
    n = epoll_wait (g->ep, ev, GATE_MAX + 1, 0);
    for (int k = 0; k < n && ready < 0; k++) {
        if (ev[k].data.u64 != GATE_LISTEN) {
            ready = read_slot (g, (int)ev[k].data.u64);
            continue;
        }
        for (int a = 0; a < GATE_MAX && ready < 0; a++) {
            int slot = accept_one (g, now);
            if (slot < 0)
                break;
            ready = read_slot (g, slot);
        }
    }
    return ready;
}
