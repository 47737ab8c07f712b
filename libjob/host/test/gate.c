/* gate.c - the door of a lane's listening socket (libjob/host/gate.c):
 * on a real socket on 127.0.0.1, nothing a connection does or fails to do
 * makes gate_next wait; bytes that come in pieces are put together, and
 * nothing is read beyond what was asked; a connection too slow is closed,
 * and the oldest pending one gives way when the table is full. */
#include "config.h"

#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "gate.h"

#define FIRST 32

static struct sockaddr_in addr;

static double now (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A listening socket on an ephemeral port of 127.0.0.1 (addr). */
static int listener (void)
{
    socklen_t len = sizeof (addr);
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset (&addr, 0, sizeof (addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (fd < 0 || bind (fd, (struct sockaddr *)&addr, sizeof (addr)) < 0
        || listen (fd, 256) < 0
        || getsockname (fd, (struct sockaddr *)&addr, &len) < 0)
        bail_out ("cannot listen on 127.0.0.1");
    return fd;
}

static int dial (void)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || connect (fd, (struct sockaddr *)&addr, sizeof (addr)) < 0)
        bail_out ("cannot connect to 127.0.0.1");
    return fd;
}

/* The gate's clock: a microsecond a call, so that nothing expires while
 * a loaded machine runs the test, and accepts are in a known order. */
static double clock_ = 100.0;

/* gate_next until it has a connection ready or 0.3 s pass (what it is
 * given to do arrives in the kernel a moment after a send); the longest
 * single call in *longest. */
static int next_ready (struct gate *g, double *longest)
{
    double end = now () + 0.3;
    int slot = -1;

    *longest = 0;
    while (slot < 0 && now () < end) {
        double t = now ();
        slot = gate_next (g, clock_ += 1e-6);
        if (now () - t > *longest)
            *longest = now () - t;
        if (slot < 0)
            poll (NULL, 0, 1);
    }
    return slot;
}

/* Has the other end of fd closed it (EOF within ms)? */
static int closed (int fd, int ms)
{
    struct pollfd p = { fd, POLLIN, 0 };
    char c;

    return poll (&p, 1, ms) == 1 && recv (fd, &c, 1, MSG_DONTWAIT) == 0;
}

/* Silent, then in pieces, then asked for more: never a wait. */
static void test_pieces (int lfd)
{
    struct gate g;
    unsigned char msg[FIRST + 16 + 5];
    double longest;
    int c, slot, fd;
    char extra[5];

    for (size_t i = 0; i < sizeof (msg); i++)
        msg[i] = (unsigned char)i;
    ok (gate_open (&g, lfd, FIRST) == 0, "gate opens");
    c = dial ();
    slot = next_ready (&g, &longest);
    ok (slot < 0 && g.n == 1, "a silent connection is pending, not ready "
        "(%d pending)", g.n);
    ok (longest < 0.05, "gate_next on a silent connection returns at once "
        "(%.4f s)", longest);
    send (c, msg, 7, 0);
    slot = next_ready (&g, &longest);
    ok (slot < 0 && longest < 0.05, "7 bytes of %d: not ready, no wait "
        "(%.4f s)", FIRST, longest);
    send (c, msg + 7, sizeof (msg) - 7, 0);
    slot = next_ready (&g, &longest);
    ok (slot >= 0 && g.c[slot].got == FIRST
        && memcmp (g.c[slot].buf, msg, FIRST) == 0,
        "the rest: ready with the %d bytes asked for, put together", FIRST);
    if (slot < 0)
        return;
    gate_ask (&g, slot, FIRST + 16);
    slot = next_ready (&g, &longest);
    ok (slot >= 0 && g.c[slot].got == FIRST + 16
        && memcmp (g.c[slot].buf, msg, FIRST + 16) == 0,
        "asked for 16 more: ready with them");
    if (slot < 0)
        return;
    fd = gate_take (&g, slot);
    ok (g.n == 0 && recv (fd, extra, sizeof (extra), MSG_DONTWAIT) == 5
        && memcmp (extra, msg + FIRST + 16, 5) == 0,
        "taken: what follows was not read by the gate");
    close (fd);
    close (c);
    gate_close (&g);
}

/* Too slow, gone early, and one too many. */
static void test_bounds (int lfd)
{
    struct gate g;
    int c[GATE_MAX + 1], n_closed = 0, slot;
    double longest;

    gate_open (&g, lfd, FIRST);
    c[0] = dial ();
    next_ready (&g, &longest);
    slot = gate_next (&g, clock_ + GATE_WAIT + 0.01);
    ok (slot < 0 && g.n == 0 && closed (c[0], 500),
        "a connection silent for GATE_WAIT is closed");
    close (c[0]);
    c[0] = dial ();
    send (c[0], "ab", 2, 0);
    next_ready (&g, &longest);
    shutdown (c[0], SHUT_WR);
    next_ready (&g, &longest);
    ok (g.n == 0, "one that ends before sending what was asked is dropped");
    close (c[0]);
    clock_ += 1.0;
    for (int i = 0; i < GATE_MAX; i++) {    /* accepted one by one */
        c[i] = dial ();
        for (double end = now () + 0.5; g.n < i + 1 && now () < end;
             poll (NULL, 0, 1))
            gate_next (&g, clock_ += 1e-6);
    }
    c[GATE_MAX] = dial ();
    next_ready (&g, &longest);
    ok (g.n == GATE_MAX, "%d silent connections: %d pending", GATE_MAX + 1,
        g.n);
    ok (closed (c[0], 500), "the oldest was closed for the newest");
    for (int i = 1; i <= GATE_MAX; i++)
        n_closed += closed (c[i], 0) ? 1 : 0;
    ok (n_closed == 0, "the others are still open (%d closed)", n_closed);
    send (c[GATE_MAX], (char[FIRST]){ 0 }, FIRST, 0);
    slot = next_ready (&g, &longest);
    ok (slot >= 0, "the newest is read once it sends");
    gate_close (&g);
    for (int i = 0; i <= GATE_MAX; i++)
        close (c[i]);
}

int main (void)
{
    int lfd;

    plan (NO_PLAN);
    lfd = listener ();
    test_pieces (lfd);
    test_bounds (lfd);
    close (lfd);
    done_testing ();
}
