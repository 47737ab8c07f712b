/* gate.h - the door of a lane's listening socket: connections accepted
 * but not known yet, read without ever blocking.  Anyone on the machine
 * (or the network) can connect to a lane's port; nothing such a stranger
 * does (connect and say nothing, send a byte at a time, connect again and
 * again) may hold up the rank.  So a connection is accepted into a small
 * table of pending ones, watched by the gate's own epoll (which the
 * caller watches in turn: it is readable when something is to be done),
 * and read without blocking up to the bytes its caller asks for; one that
 * does not send them within GATE_WAIT is closed, and when the table is
 * full the oldest pending connection is closed for the newest (a peer of
 * the job sends its hello the moment it connects: the newest is the
 * likeliest to be one).  What the bytes mean (a hello, its cookie) is the
 * caller's to judge (tcp.c, mesh.c).  Internal to libddp; part of the
 * transport; calls nothing of the host backend. */
#ifndef DDP_GATE_H
#define DDP_GATE_H

#include <stddef.h>
#include <stdint.h>

#define GATE_MAX 64         /* pending connections at once */
#define GATE_BUF 512        /* bytes a pending connection may be asked for */
#define GATE_WAIT 0.5       /* seconds a connection has to send them */

struct gate_conn {
    int fd;                 /* -1: a free slot */
    double since;           /* when it was accepted */
    size_t got, need;       /* bytes in buf, bytes asked for */
    unsigned char buf[GATE_BUF];
};

struct gate {
    int ep;                 /* watches listen_fd and the pending ones */
    int listen_fd;
    size_t first;           /* bytes a new connection is asked for */
    int err;                /* errno of the last accept that failed (not
                             * EAGAIN) in the last gate_next, else 0 */
    int n;                  /* pending connections */
    struct gate_conn c[GATE_MAX];
};

/* Open gate g on listening socket listen_fd (made non-blocking; it stays
 * the caller's), each new connection asked for first bytes.
 * Returns 0, or -1 with errno (g is then closed: gate_close is a no-op). */
int gate_open (struct gate *g, int listen_fd, size_t first);

/* Close every pending connection of g and its epoll (not the listening
 * socket).  Safe on a gate that is closed or zeroed with ep -1. */
void gate_close (struct gate *g);

/* The descriptor to watch for input (epoll or poll): readable when g has
 * something to do.  -1 when g is closed. */
int gate_fd (const struct gate *g);

/* Do what g has to do, without blocking: accept what waits (up to
 * GATE_MAX at a time), read the pending connections that sent something,
 * close those older than GATE_WAIT at now.  Returns the slot of a
 * connection that has all the bytes asked for (in c[slot].buf), for the
 * caller to judge at once with gate_ask, gate_take or gate_drop; -1 when
 * none is ready (call again after the next wake-up). */
int gate_next (struct gate *g, double now);

/* Ask connection slot for more bytes: need in all (> got, <= GATE_BUF).
 * It stays pending within the same GATE_WAIT. */
void gate_ask (struct gate *g, int slot, size_t need);

/* Take connection slot out of g: returns its descriptor, now the
 * caller's (non-blocking, nothing read beyond what was asked). */
int gate_take (struct gate *g, int slot);

/* Close connection slot. */
void gate_drop (struct gate *g, int slot);

#endif /* DDP_GATE_H */
