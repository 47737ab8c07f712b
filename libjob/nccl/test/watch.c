/* watch.c - the NCCL backend's watch (libjob/nccl/watch.h), without NCCL:
 * several ranks' watches in one process, each with its own state word,
 * asked over TCP on this machine.  A rank is "gone" when its watch is
 * stopped, "late" when its state is behind. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "tap.h"
#include "watch.h"

#define WINDOW 0.5
#define MAXR 8

struct world {
    int size;
    _Atomic uint64_t state[MAXR];
    struct nccl_watch *w[MAXR];
    struct nccl_blob blob[MAXR];
};

/* size ranks, rank r on host "hA" (r < size / 2) or "hB", each in state
 * st[r]; every watch knows every other.  Returns 0 or -1. */
static int world_start (struct world *x, int size, const uint64_t *st)
{
    char err[256];

    memset (x, 0, sizeof (*x));
    x->size = size;
    for (int r = 0; r < size; r++) {
        atomic_store (&x->state[r], st[r]);
        snprintf (x->blob[r].host, sizeof (x->blob[r].host), "%s",
                  r < size / 2 ? "hA" : "hB");
        if (nccl_watch_start (r, size, &x->state[r], &x->blob[r].watch,
                              &x->w[r], err, sizeof (err)) < 0) {
            diag ("rank %d: %s", r, err);
            return -1;
        }
    }
    for (int r = 0; r < size; r++)
        if (nccl_watch_peers (x->w[r], x->blob) < 0)
            return -1;
    return 0;
}

static void world_stop (struct world *x)
{
    for (int r = 0; r < x->size; r++) {
        nccl_watch_stop (x->w[r]);
        x->w[r] = NULL;
    }
}

/* Rank r fails in its current state and diagnoses with window; the
 * verdict in out. */
static double fail_and_ask_w (struct world *x, int r, double window,
                              char *out, size_t len)
{
    uint64_t st = atomic_load (&x->state[r]) | NCCL_ST_FAILED;
    double t0 = ddpi_now ();

    atomic_store (&x->state[r], st);
    if (nccl_watch_diagnose (x->w[r], st, window, out, len) < 0)
        snprintf (out, len, "(diagnose failed)");
    return ddpi_now () - t0;
}

static double fail_and_ask (struct world *x, int r, char *out, size_t len)
{
    return fail_and_ask_w (x, r, WINDOW, out, len);
}

static void test_gone_and_late (void)
{
    const uint64_t in6 = NCCL_STATE (6, NCCL_CALL_BARRIER, NCCL_ST_IN);
    uint64_t st[4] = {in6, NCCL_STATE (5, NCCL_CALL_ALLREDUCE, 0), in6, in6};
    const char *want = "rank 1 (host hA) never entered ddp_barrier #6;"
                       " rank 3 (host hB) is gone: its process exited"
                       " (connection refused)";
    struct world x;
    char out[512], noticed[600];
    double t;

    if (world_start (&x, 4, st) < 0) {
        ok (false, "4 watches started");
        return;
    }
    nccl_watch_stop (x.w[3]);
    x.w[3] = NULL;
    t = fail_and_ask (&x, 0, out, sizeof (out));
    is_str (out, want, "rank 0, the collector: the late rank and the gone one"
            " with their hosts");
    ok (t < 2 * WINDOW, "in %.3f s", t);
    snprintf (noticed, sizeof (noticed), "%s (noticed by rank 0)", want);
    t = fail_and_ask (&x, 2, out, sizeof (out));
    is_str (out, noticed, "rank 2 failing later reports what rank 0 told it");
    ok (t < 0.1, "at once (%.3f s)", t);
    t = fail_and_ask (&x, 1, out, sizeof (out));
    is_str (out, noticed, "so does the late rank when it fails at last");
    world_stop (&x);
}

struct asker {
    struct world *x;
    int rank;
    char out[512];
};

/* With a window of 2 s: a rank that answered a collector waits 3 windows
 * and 0.5 s for its verdict, and under ASan on a loaded machine (the
 * Debian 13 stage of CI) the 2 s of WINDOW were once not enough: two
 * collected.  Nothing here waits for a window unless something is late. */
static void *ask_thread (void *arg)
{
    struct asker *a = arg;
    fail_and_ask_w (a->x, a->rank, 2.0, a->out, sizeof (a->out));
    return NULL;
}

/* Three survivors of 4 fail at the same time: one verdict for all, from
 * one collector. */
static void test_at_once (void)
{
    const uint64_t in9 = NCCL_STATE (9, NCCL_CALL_ALLGATHER,
                                     NCCL_ST_IN | NCCL_ST_STREAM);
    uint64_t st[4] = {in9, in9, in9, in9};
    struct asker a[3];
    pthread_t t[3];
    struct world x;
    int noticed = 0, same = 1, by = -1, plain = -1;

    if (world_start (&x, 4, st) < 0) {
        ok (false, "4 watches started");
        return;
    }
    nccl_watch_stop (x.w[0]);
    x.w[0] = NULL;
    for (int i = 0; i < 3; i++) {
        a[i] = (struct asker){&x, i + 1, ""};
        pthread_create (&t[i], NULL, ask_thread, &a[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join (t[i], NULL);
    for (int i = 0; i < 3; i++) {
        const char *m = strstr (a[i].out, "(noticed by rank ");
        int r = -1;
        diag ("rank %d: %s", i + 1, a[i].out);
        if (m && sscanf (m, "(noticed by rank %d)", &r) == 1
            && (by < 0 || by == r)) {
            by = r;
            noticed++;
        }
        else if (!m)
            plain = i + 1;
        same &= strncmp (a[i].out, "rank 0 (host hA) is gone: its process"
                         " exited (connection refused)", 63) == 0;
    }
    ok (same, "three survivors at once: each names rank 0, the gone one");
    /* Which survivor collects depends on which found no failed rank
     * below it first (rank 1, or 2 or 3 when rank 1 was still running):
     * one of them did, and the two others say so. */
    ok (noticed == 2 && plain == by, "one survivor (rank %d) collected, the"
        " two others say so (%d of 2, rank %d without)", by, noticed, plain);
    world_stop (&x);
}

/* Connect to rank r's watch on this machine. */
static int connect_to (const struct world *x, int r)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = x->blob[r].watch.port,
                              .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd >= 0 && connect (fd, (struct sockaddr *)&sin, sizeof (sin)) < 0) {
        close (fd);
        fd = -1;
    }
    return fd;
}

/* The wire as watch.c has it: a question must quote the cookie. */
struct wire {
    uint32_t magic, type;
    uint64_t cookie, state;
    int32_t rank;
    uint32_t len, holds, collects;
};

static void test_cookie (void)
{
    const uint64_t st0 = NCCL_STATE (4, NCCL_CALL_REDUCE, NCCL_ST_IN);
    uint64_t st[2] = {st0, st0};
    struct wire q = {0x57646470u, 1, 0, 0, 1, 0, 0, 0}, a;
    struct timeval tv = {2, 0};
    struct world x;
    int fd;

    if (world_start (&x, 2, st) < 0) {
        ok (false, "2 watches started");
        return;
    }
    q.cookie = x.blob[0].watch.cookie ^ 1;
    fd = connect_to (&x, 0);
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
    ok (fd >= 0 && send (fd, &q, sizeof (q), 0) == sizeof (q)
            && recv (fd, &a, sizeof (a), MSG_WAITALL) == 0,
        "a question with another cookie: closed, unanswered");
    if (fd >= 0)
        close (fd);
    q.cookie = x.blob[0].watch.cookie;
    q.type = 2; /* a verdict of no text */
    fd = connect_to (&x, 0);
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
    ok (fd >= 0 && send (fd, &q, sizeof (q), 0) == sizeof (q)
            && recv (fd, &a, sizeof (a), MSG_WAITALL) == 0,
        "a verdict of no text: closed, unanswered");
    if (fd >= 0)
        close (fd);
    q.type = 1;
    fd = connect_to (&x, 0);
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
    ok (fd >= 0 && send (fd, &q, sizeof (q), 0) == sizeof (q)
            && recv (fd, &a, sizeof (a), MSG_WAITALL) == sizeof (a)
            && a.type == 3 && a.rank == 0 && a.state == st0 && a.holds == 0,
        "with its cookie: the answer says what rank 0 is doing");
    if (fd >= 0)
        close (fd);
    world_stop (&x);
}

/* Send m (and len bytes of text) to rank r's watch; its answer into *a.
 * Returns true when the whole answer came. */
static bool ask_raw (const struct world *x, int r, const struct wire *m,
                     const char *text, struct wire *a)
{
    struct {
        struct wire m;
        char text[64];
    } q = {*m, ""};
    struct timeval tv = {2, 0};
    size_t n = sizeof (q.m) + m->len;
    int fd = connect_to (x, r);
    bool got;

    if (m->len > sizeof (q.text))
        return false;
    memcpy (q.text, text, m->len);
    if (fd < 0)
        return false;
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
    got = send (fd, &q, n, 0) == (ssize_t)n
          && recv (fd, a, sizeof (*a), MSG_WAITALL) == sizeof (*a);
    close (fd);
    return got;
}

struct teller {
    struct world *x;
    double delay;
};

/* After delay seconds, tell rank 1 the verdict "T" as rank 2. */
static void *tell_thread (void *arg)
{
    struct teller *t = arg;
    struct timespec d = {(time_t)t->delay,
                         (long)((t->delay - (time_t)t->delay) * 1e9)};
    struct wire m = {0x57646470u, 2, t->x->blob[1].watch.cookie, 0, 2, 1, 0,
                     0}, a;

    nanosleep (&d, NULL);
    (void)ask_raw (t->x, 1, &m, "T", &a);
    return NULL;
}

/* A collector (rank 2, played here) asked rank 1 while rank 1 still ran;
 * rank 1 fails before the collector's verdict comes.  It must wait for
 * that verdict, not collect one of its own (two collectors: survivors
 * that report different lines), and collect only when none comes. */
static void test_awaited (void)
{
    const uint64_t in5 = NCCL_STATE (5, NCCL_CALL_ALLREDUCE, NCCL_ST_IN);
    uint64_t st[3] = {in5, in5, in5};
    struct wire m = {0x57646470u, 1, 0, in5 | NCCL_ST_FAILED, 2, 0, 0, 1}, a;
    struct teller tl = {NULL, 0.3};
    struct world x;
    pthread_t t;
    char out[512];
    double s;

    for (int pass = 0; pass < 2; pass++) {
        if (world_start (&x, 3, st) < 0) {
            ok (false, "3 watches started");
            return;
        }
        m.cookie = x.blob[1].watch.cookie;
        ok (ask_raw (&x, 1, &m, "", &a) && a.state == in5 && !a.holds,
            "rank 1, asked by collector 2, answers: running, no verdict");
        tl.x = &x;
        if (pass == 0)
            pthread_create (&t, NULL, tell_thread, &tl);
        s = fail_and_ask (&x, 1, out, sizeof (out));
        if (pass == 0) {
            pthread_join (t, NULL);
            is_str (out, "T (noticed by rank 2)", "failing next, it reports"
                    " that collector's verdict");
            ok (s >= 0.25 && s < 1.5, "when it came (%.3f s)", s);
        }
        else {
            ok (strncmp (out, "no rank is gone or behind: 2 of 2 answered",
                         42) == 0 && !strstr (out, "noticed"),
                "no verdict came: it collected its own (%s)", out);
            ok (s >= 3 * WINDOW + 0.5 && s < 6 * WINDOW + 0.5,
                "after waiting 3 windows and 0.5 s for it (%.3f s)", s);
        }
        world_stop (&x);
    }
}

/* A listening socket on 127.0.0.1 with room for backlog connections in
 * its queue, never accepted; its port into *port.  Returns it or -1. */
static int bare_listener (int backlog, uint16_t *port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
    socklen_t sl = sizeof (sin);
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || bind (fd, (struct sockaddr *)&sin, sizeof (sin)) < 0
        || listen (fd, backlog) < 0
        || getsockname (fd, (struct sockaddr *)&sin, &sl) < 0) {
        if (fd >= 0)
            close (fd);
        return -1;
    }
    *port = sin.sin_port;
    return fd;
}

/* A rank whose port accepts connections that nobody serves (silent), and
 * one whose port lets none through (a full queue drops the SYNs, as a
 * host that is down or cut off would: unreachable). */
static void test_silent_unreachable (void)
{
    const uint64_t in3 = NCCL_STATE (3, NCCL_CALL_BCAST, NCCL_ST_IN);
    uint64_t st[3] = {in3, in3, in3};
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
    struct world x;
    char out[512];
    int lfd, full, filler = -1;
    double t;

    if (world_start (&x, 3, st) < 0) {
        ok (false, "3 watches started");
        return;
    }
    lfd = bare_listener (4, &x.blob[1].watch.port);
    full = bare_listener (0, &x.blob[2].watch.port);
    sin.sin_port = x.blob[2].watch.port;
    if (full >= 0 && (filler = socket (AF_INET, SOCK_STREAM, 0)) >= 0)
        (void)!connect (filler, (struct sockaddr *)&sin, sizeof (sin));
    if (lfd < 0 || full < 0 || filler < 0) {
        ok (false, "listening sockets: %s", strerror (errno));
        world_stop (&x);
        return;
    }
    for (int r = 1; r <= 2; r++) {
        x.blob[r].watch.nip = 1;
        x.blob[r].watch.ip[0] = htonl (INADDR_LOOPBACK);
    }
    nccl_watch_peers (x.w[0], x.blob);
    t = fail_and_ask (&x, 0, out, sizeof (out));
    is_str (out, "rank 1 (host hB) does not answer: connected, but no reply"
            " within 0.5 s; rank 2 (host hB) cannot be reached: no"
            " connection to it within 0.5 s",
            "silent and unreachable ranks, within the window");
    ok (t < 4 * WINDOW, "in %.3f s", t);
    close (filler);
    close (full);
    close (lfd);
    world_stop (&x);
}

/* Strangers (anyone on the machine) hold more silent connections to a
 * watch than it serves at once: a peer's question is still answered at
 * once, not after theirs time out (2 s). */
static void test_strangers (void)
{
    const uint64_t st0 = NCCL_STATE (4, NCCL_CALL_REDUCE, NCCL_ST_IN);
    uint64_t st[2] = {st0, st0};
    struct wire q = {0x57646470u, 1, 0, 0, 1, 0, 0, 0}, a;
    struct timeval tv = {3, 0};
    struct world x;
    int s[100], fd, n = 0;
    double t;

    if (world_start (&x, 2, st) < 0) {
        ok (false, "2 watches started");
        return;
    }
    for (int i = 0; i < 100; i++)
        if ((s[i] = connect_to (&x, 0)) >= 0)
            n++;
    usleep (100000);    /* the watch took what it takes of them */
    q.cookie = x.blob[0].watch.cookie;
    t = ddpi_now ();
    fd = connect_to (&x, 0);
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
    ok (n == 100 && fd >= 0 && send (fd, &q, sizeof (q), 0) == sizeof (q)
            && recv (fd, &a, sizeof (a), MSG_WAITALL) == sizeof (a)
            && a.type == 3 && a.rank == 0,
        "behind 100 silent connections (%d made), a question is answered",
        n);
    t = ddpi_now () - t;
    ok (t < 0.5, "at once (%.3f s)", t);
    if (fd >= 0)
        close (fd);
    for (int i = 0; i < 100; i++)
        if (s[i] >= 0)
            close (s[i]);
    world_stop (&x);
}

/* A child forked by a rank must not keep its watch's port open: once the
 * rank stopped its watch, the rank is gone, not silent. */
static void test_fork (void)
{
    const uint64_t in2 = NCCL_STATE (2, NCCL_CALL_BARRIER, NCCL_ST_IN);
    uint64_t st[2] = {in2, in2};
    struct world x;
    char out[512];
    pid_t child;

    if (world_start (&x, 2, st) < 0) {
        ok (false, "2 watches started");
        return;
    }
    fflush (NULL);
    if ((child = fork ()) == 0) {
        sleep (10);
        _exit (0);
    }
    nccl_watch_stop (x.w[1]);
    x.w[1] = NULL;
    fail_and_ask (&x, 0, out, sizeof (out));
    is_str (out, "rank 1 (host hB) is gone: its process exited (connection"
            " refused)", "a forked child of a gone rank does not keep it"
            " listening");
    if (child > 0) {
        kill (child, SIGKILL);
        waitpid (child, NULL, 0);
    }
    world_stop (&x);
}

/* A verdict from the network is printed text only: cleaned. */
static void test_tell_cleaned (void)
{
    const uint64_t in2 = NCCL_STATE (2, NCCL_CALL_BARRIER, NCCL_ST_IN);
    uint64_t st[2] = {in2, in2};
    struct {
        struct wire m;
        char text[8];
    } q = {{0x57646470u, 2, 0, 0, 1, 7, 0, 0}, "ab\ncd\033e"};
    struct wire a;
    struct world x;
    char out[512];
    int fd;

    if (world_start (&x, 2, st) < 0) {
        ok (false, "2 watches started");
        return;
    }
    q.m.cookie = x.blob[0].watch.cookie;
    fd = connect_to (&x, 0);
    ok (fd >= 0 && send (fd, &q, sizeof (q.m) + 7, 0) == sizeof (q.m) + 7
            && recv (fd, &a, sizeof (a), MSG_WAITALL) == sizeof (a)
            && a.holds == 1,
        "told a verdict by rank 1: it holds it");
    if (fd >= 0)
        close (fd);
    fail_and_ask (&x, 0, out, sizeof (out));
    is_str (out, "ab?cd?e (noticed by rank 1)",
            "control characters in it are replaced");
    world_stop (&x);
}

int main (void)
{
    signal (SIGPIPE, SIG_IGN);
    plan (NO_PLAN);
    test_gone_and_late ();
    test_at_once ();
    test_cookie ();
    test_awaited ();
    test_silent_unreachable ();
    test_strangers ();
    test_fork ();
    test_tell_cleaned ();
    return done_testing ();
}
