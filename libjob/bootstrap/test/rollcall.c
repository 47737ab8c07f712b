/* rollcall.c - the roll call after a failed init (libjob/bootstrap/rollcall.h): the
 * hub's tally, and a hub with reporters as processes on this machine (the
 * test cluster runs it across nodes, in t0802). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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

/* Three nodes of two ranks (0-1, 2-3, 4-5); rank 3 never arrived. */
static const int node_ranks[3][2] = { { 0, 1 }, { 2, 3 }, { 4, 5 } };

static struct ddpi_rollcall_in input (int node, const int *missing, int n)
{
    struct ddpi_rollcall_in in = {
        .tag = 0x1234, .size = 6, .nnodes = 3, .node = node,
        .local_ranks = node_ranks[node], .local_size = 2,
        .missing = missing, .nmissing = n, .window = 1.0,
    };
    return in;
}

/* Take part in the roll call for node in a child; it exits 0 when its
 * answer names rank 3 alone as missing and want_unheard ranks unheard, 1
 * otherwise, 2 on no answer. */
static pid_t reporter (int node, const int *missing, int n, int want_unheard)
{
    pid_t pid = fork ();

    if (pid == 0) {
        struct ddpi_rollcall_in in = input (node, missing, n);
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

static void network_checks (void)
{
    static const int miss3[] = { 3 };
    struct ddpi_rollcall_in in;
    struct ddpi_rollcall rc;
    char port[16];
    pid_t r1, r2, r3, r4, s;
    double t0;
    int p = free_port ();

    ok (p > 0, "a free port (%d)", p);
    snprintf (port, sizeof (port), "%d", p);
    setenv ("MASTER_ADDR", "127.0.0.1", 1);
    setenv ("MASTER_PORT", port, 1);

    /* Every rank that arrived takes part (5 of them; whichever of node
     * 0's two binds first is the hub): the hub answers as soon as all
     * called in. */
    r1 = reporter (1, miss3, 1, 0);
    r2 = reporter (2, NULL, 0, 0);
    r3 = reporter (2, NULL, 0, 0);
    r4 = reporter (0, NULL, 0, 0);
    if ((s = fork ()) == 0) {
        stranger (p);
        _exit (0);
    }
    in = input (0, NULL, 0);
    t0 = ddpi_now ();
    ok (ddpi_rollcall_run (&in, &rc) == 0, "hub: the roll call ran");
    ok (rc.nmissing == 1 && rc.nmissing_listed == 1 && rc.missing[0] == 3
        && rc.nunheard == 0, "hub: rank 3 missing, every node heard");
    is_int (reaped (r1), 0, "node 1's reporter got the same answer");
    is_int (reaped (r2), 0, "node 2's reporter got the same answer");
    is_int (reaped (r3), 0, "node 2's other reporter got the same answer");
    is_int (reaped (r4), 0, "node 0's other rank got the same answer");
    reaped (s);
    ok (ddpi_now () - t0 < 1.0, "hub: done before its window ended "
        "(%.2f s)", ddpi_now () - t0);

    /* Node 2 never reports: its ranks are unheard, after the window. */
    r1 = reporter (1, miss3, 1, 2);
    r4 = reporter (0, NULL, 0, 2);
    in = input (0, NULL, 0);
    t0 = ddpi_now ();
    ok (ddpi_rollcall_run (&in, &rc) == 0 && rc.nmissing == 1
        && rc.nunheard == 2 && rc.unheard[0] == 4 && rc.unheard[1] == 5,
        "hub: node 2 silent, its ranks 4-5 unheard");
    is_int (reaped (r1), 0, "node 1's reporter heard that too");
    is_int (reaped (r4), 0, "node 0's other rank heard that too");
    ok (ddpi_now () - t0 < 2.0, "hub: bounded by its window (%.2f s)",
        ddpi_now () - t0);

    /* No hub: a reporter gives up after its window. */
    in = input (1, miss3, 1);
    in.window = 0.3;
    t0 = ddpi_now ();
    ok (ddpi_rollcall_run (&in, &rc) < 0, "reporter: no hub, no answer");
    t0 = ddpi_now () - t0;
    ok (t0 >= 0.3 && t0 < 1.5, "reporter: gave up after its window and a "
        "half second (%.2f s)", t0);

    unsetenv ("MASTER_PORT");
    in = input (0, NULL, 0);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "no MASTER_PORT: no roll call");
    setenv ("MASTER_PORT", "70000", 1);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "MASTER_PORT out of range: none");
    setenv ("MASTER_PORT", port, 1);
    setenv ("MASTER_ADDR", "node-a", 1);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "MASTER_ADDR not an address: none");
}

int main (void)
{
    plan (NO_PLAN);
    signal (SIGPIPE, SIG_IGN);
    tally_checks ();
    network_checks ();
    done_testing ();
    return 0;
}
