/* rollcall.c - the roll call after a failed init (libjob/bootstrap/rollcall.h): the
 * hub's tally, and a hub with reporters as processes on this machine (the
 * test cluster runs it across nodes, in t0802). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "ddp_internal.h"
#include "rollcall.h"

static void tally_checks (void)
{
    struct ddpi_tally t;
    int32_t n0[] = { 0, 1, 2 }, n0miss[] = { 1 }, n1[] = { 3, 4 };
    int32_t bad[] = { 3, 9 }, out[8];
    int n;

    ok (ddpi_tally_init (&t, 6, 3) == 0, "tally: 6 ranks on 3 nodes");
    n = ddpi_tally_list (&t, RANK_UNHEARD, out, 8);
    ok (n == 6 && out[0] == 0 && out[5] == 5, "tally: at first all unheard");
    ok (ddpi_tally_add (&t, 0, n0, 3, n0miss, 1) == 0,
        "tally: node 0's report");
    ok (ddpi_tally_add (&t, 3, n1, 2, NULL, 0) < 0,
        "tally: node out of range refused");
    ok (ddpi_tally_add (&t, 1, bad, 2, NULL, 0) < 0,
        "tally: rank out of range refused");
    ok (ddpi_tally_add (&t, 1, n1, 2, n0miss, 1) < 0, "tally: a missing rank "
        "not among the node's refused");
    ok (ddpi_tally_add (&t, 1, n1, 2, NULL, 3) < 0, "tally: more missing than "
        "ranks refused");
    ok (ddpi_tally_list (&t, RANK_PRESENT, NULL, 0) == 2 && t.nheard == 1,
        "tally: refused reports changed nothing");
    ok (ddpi_tally_add (&t, 1, n1, 2, NULL, 0) == 0, "tally: node 1's report");
    n = ddpi_tally_list (&t, RANK_MISSING, out, 8);
    ok (n == 1 && out[0] == 1, "tally: rank 1 missing");
    n = ddpi_tally_list (&t, RANK_UNHEARD, out, 8);
    ok (n == 1 && out[0] == 5, "tally: rank 5 (node 2) unheard");
    n = ddpi_tally_list (&t, RANK_PRESENT, out, 1);
    ok (n == 4 && out[0] == 0, "tally: 4 present, the first listed only");
    /* A later probe on node 0 saw rank 1 arrive: present wins. */
    ok (ddpi_tally_add (&t, 0, n0, 3, NULL, 0) == 0
        && ddpi_tally_list (&t, RANK_MISSING, out, 8) == 0
        && ddpi_tally_add (&t, 0, n0, 3, n0miss, 1) == 0
        && ddpi_tally_list (&t, RANK_MISSING, out, 8) == 0,
        "tally: a rank any report saw arrive stays present");
    ok (t.nheard == 2, "tally: a node reporting twice counts once");
    ddpi_tally_free (&t);
}

/* A free TCP port on this machine (bound, then released). */
static int free_port (void)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    socklen_t len = sizeof (sin);
    int fd = socket (AF_INET, SOCK_STREAM, 0), port = -1;

    sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (fd >= 0 && bind (fd, (struct sockaddr *)&sin, sizeof (sin)) == 0
        && getsockname (fd, (struct sockaddr *)&sin, &len) == 0)
        port = ntohs (sin.sin_port);
    if (fd >= 0)
        close (fd);
    return port;
}

/* Three nodes of two ranks (0-1, 2-3, 4-5); rank 3 never arrived.  The
 * tag is this test's own, so that two runs at once never meet on a
 * node's relay socket. */
static const int node_ranks[3][2] = { { 0, 1 }, { 2, 3 }, { 4, 5 } };
static uint64_t tag;

static struct ddpi_rollcall_in input (int rank, const int *missing, int n,
                                      double window)
{
    struct ddpi_rollcall_in in = {
        .tag = tag, .rank = rank, .size = 6, .nnodes = 3, .node = rank / 2,
        .local_ranks = node_ranks[rank / 2], .local_size = 2,
        .missing = missing, .nmissing = n, .window = window,
    };
    return in;
}

/* Take part in the roll call as rank in a child; it exits 0 when its
 * answer names rank 3 alone as missing and want_unheard ranks unheard, 1
 * otherwise, 2 on no answer. */
static pid_t reporter (int rank, const int *missing, int n, int want_unheard,
                       double window)
{
    pid_t pid = fork ();

    if (pid == 0) {
        struct ddpi_rollcall_in in = input (rank, missing, n, window);
        struct ddpi_rollcall rc;
        if (ddpi_rollcall_run (&in, &rc) < 0)
            _exit (2);
        _exit (rc.nmissing == 1 && rc.missing[0] == 3
               && rc.nunheard == want_unheard ? 0 : 1);
    }
    return pid;
}

static int reaped (pid_t pid)
{
    int st = 0;

    if (pid < 0 || waitpid (pid, &st, 0) != pid)
        return -1;
    return WIFEXITED (st) ? WEXITSTATUS (st) : 128 + WTERMSIG (st);
}

/* A stranger knocks with garbage: the hub drops it and goes on. */
static void stranger (int port)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    int fd = socket (AF_INET, SOCK_STREAM, 0);

    sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    sin.sin_port = htons ((uint16_t)port);
    for (int i = 0; i < 50 && fd >= 0; i++) {
        if (connect (fd, (struct sockaddr *)&sin, sizeof (sin)) == 0) {
            (void)!write (fd, "GET / HTTP/1.0\r\n\r\n", 18);
            break;
        }
        usleep (20000);
    }
    if (fd >= 0)
        close (fd);
}

/* Every rank that arrived takes part: one delegate per node (0, 2, 4),
 * the others give it their view.  The hub's window is long (20 s): it
 * ends as soon as every node reported, which scheduling noise cannot
 * stretch to half of it. */
static void everyone (int port)
{
    static const int miss3[] = { 3 }, miss4[] = { 4 };
    struct ddpi_rollcall_in in = input (0, NULL, 0, 20.0);
    struct ddpi_rollcall rc;
    pid_t r[4], s;
    double t0 = ddpi_now ();

    r[0] = reporter (1, NULL, 0, 0, 20.0);
    r[1] = reporter (2, miss3, 1, 0, 20.0);
    r[2] = reporter (4, NULL, 0, 0, 20.0);
    /* Rank 5's probe missed rank 4 (a late commit): rank 4's own view
     * wins, whichever of them is the delegate. */
    r[3] = reporter (5, miss4, 1, 0, 20.0);
    if ((s = fork ()) == 0) {
        stranger (port);
        _exit (0);
    }
    ok (ddpi_rollcall_run (&in, &rc) == 0, "hub: the roll call ran");
    ok (rc.nmissing == 1 && rc.nmissing_listed == 1 && rc.missing[0] == 3
        && rc.nunheard == 0, "hub: rank 3 missing, every node heard, rank 4 "
        "present although one view missed it");
    is_int (reaped (r[0]), 0, "node 0's other rank got the same answer "
            "from its delegate");
    is_int (reaped (r[1]), 0, "node 1's delegate got the same answer");
    is_int (reaped (r[2]), 0, "node 2's rank 4 got the same answer");
    is_int (reaped (r[3]), 0, "node 2's rank 5 got the same answer");
    reaped (s);
    ok (ddpi_now () - t0 < 10.0, "hub: done when every node reported, not "
        "at the end of its 20 s window (%.2f s)", ddpi_now () - t0);
}

/* Node 2 never reports: its ranks are unheard, after the hub's window
 * (not before: it waits for the silent node; and boundedly). */
static void silent_node (void)
{
    static const int miss3[] = { 3 };
    struct ddpi_rollcall_in in = input (0, NULL, 0, 1.0);
    struct ddpi_rollcall rc;
    pid_t r1, r2;
    double t0 = ddpi_now (), t;

    r1 = reporter (2, miss3, 1, 2, 1.0);
    r2 = reporter (1, NULL, 0, 2, 1.0);
    ok (ddpi_rollcall_run (&in, &rc) == 0 && rc.nmissing == 1
        && rc.nunheard == 2 && rc.unheard[0] == 4 && rc.unheard[1] == 5,
        "hub: node 2 silent, its ranks 4-5 unheard");
    t = ddpi_now () - t0;
    is_int (reaped (r1), 0, "node 1's delegate heard that too");
    is_int (reaped (r2), 0, "node 0's other rank heard that too");
    ok (t >= 1.0 && t < 1.0 + ROLLCALL_RELAY_WINDOW + 8, "hub: waited its "
        "window for the silent node, and no more than a bound (%.2f s)", t);
}

/* Rank 0 expected as node 0's delegate never comes: rank 1 takes its
 * place after half the relay's window, and is the hub. */
static void absent_delegate (void)
{
    static const int miss3[] = { 3 };
    struct ddpi_rollcall_in in = input (1, NULL, 0, 20.0);
    struct ddpi_rollcall rc;
    pid_t r[3];
    double t0 = ddpi_now ();

    r[0] = reporter (2, miss3, 1, 0, 20.0);
    r[1] = reporter (4, NULL, 0, 0, 20.0);
    r[2] = reporter (5, NULL, 0, 0, 20.0);
    ok (ddpi_rollcall_run (&in, &rc) == 0 && rc.nmissing == 1
        && rc.missing[0] == 3, "no rank 0: rank 1 is node 0's delegate, and "
        "the hub");
    for (int i = 0; i < 3; i++)
        is_int (reaped (r[i]), 0, "reporter %d got the answer", i);
    ok (ddpi_now () - t0 < 10.0, "in time (%.2f s)", ddpi_now () - t0);
}

static void network_checks (void)
{
    static const int miss3[] = { 3 };
    struct ddpi_rollcall_in in;
    struct ddpi_rollcall rc;
    char port[16];
    double t0;
    int p = free_port ();

    tag = 0x1234000000000000ULL ^ (uint64_t)getpid ();
    ok (p > 0, "a free port (%d)", p);
    snprintf (port, sizeof (port), "%d", p);
    setenv ("MASTER_ADDR", "127.0.0.1", 1);
    setenv ("MASTER_PORT", port, 1);
    everyone (p);
    silent_node ();
    absent_delegate ();

    /* No hub: node 1's delegate gives up after the window and a half
     * second. */
    in = input (2, miss3, 1, 0.3);
    t0 = ddpi_now ();
    ok (ddpi_rollcall_run (&in, &rc) < 0, "reporter: no hub, no answer");
    t0 = ddpi_now () - t0;
    ok (t0 >= 0.3 && t0 < 8, "reporter: gave up after its window and a "
        "half second, boundedly (%.2f s)", t0);

    unsetenv ("MASTER_PORT");
    in = input (0, NULL, 0, 1.0);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "no MASTER_PORT: no roll call");
    setenv ("MASTER_PORT", "70000", 1);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "MASTER_PORT out of range: none");
    setenv ("MASTER_PORT", port, 1);
    setenv ("MASTER_ADDR", "node-a", 1);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "MASTER_ADDR not an address: none");
    setenv ("MASTER_ADDR", "127.0.0.1", 1);
}

/* Many nodes as threads of this process: more delegates than the 1024
 * reporters the hub used to take.  Rank r is on node r, and node 1 also
 * has rank MANY, which never came.  Every node reports, so the hub is
 * done long before its 60 s window, and all get the answer. */
#define MANY 1100

struct many_arg {
    int rank, ranks[2], nranks, rc;
    struct ddpi_rollcall out;
};

static void *many_thread (void *p)
{
    static const int gone[] = { MANY };
    struct many_arg *a = p;
    struct ddpi_rollcall_in in = {
        .tag = tag ^ 0x55, .rank = a->rank, .size = MANY + 1,
        .nnodes = MANY, .node = a->rank, .local_ranks = a->ranks,
        .local_size = a->nranks, .missing = gone,
        .nmissing = a->rank == 1 ? 1 : 0, .window = 60.0,
    };

    a->rc = ddpi_rollcall_run (&in, &a->out);
    return NULL;
}

static void many_nodes (void)
{
    static struct many_arg a[MANY];
    static pthread_t th[MANY];
    pthread_attr_t attr;
    double t0 = ddpi_now ();
    int r, started, good = 0;

    pthread_attr_init (&attr);
    pthread_attr_setstacksize (&attr, 256 * 1024);
    for (started = 0; started < MANY; started++) {
        struct many_arg *x = &a[started];
        x->rank = x->ranks[0] = started;
        x->ranks[1] = MANY;
        x->nranks = started == 1 ? 2 : 1;
        if (pthread_create (&th[started], &attr, many_thread, x) != 0)
            break;
    }
    pthread_attr_destroy (&attr);
    for (r = 0; r < started; r++) {
        pthread_join (th[r], NULL);
        if (a[r].rc == 0 && a[r].out.nmissing == 1
            && a[r].out.missing[0] == MANY && a[r].out.nunheard == 0)
            good++;
    }
    is_int (started, MANY, "%d nodes' ranks started", MANY);
    is_int (good, MANY, "every one got the answer: rank %d missing", MANY);
    ok (ddpi_now () - t0 < 30.0, "the hub was done when every node "
        "reported, not at the end of its 60 s window (%.2f s)",
        ddpi_now () - t0);
}

int main (void)
{
    plan (NO_PLAN);
    signal (SIGPIPE, SIG_IGN);
    tally_checks ();
    network_checks ();
    many_nodes ();
    done_testing ();
    return 0;
}
