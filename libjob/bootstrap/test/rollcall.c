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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "ddp_internal.h"
#include "net.h"
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
 * node's relay socket.  The relay's window is longer than libddp's, and
 * a hub's window longer than any wait it must cover, so that a child
 * that starts late (a loaded machine) changes no answer: the waits that
 * end early (every rank, every node came) are the ones the test times. */
static const int node_ranks[3][2] = { { 0, 1 }, { 2, 3 }, { 4, 5 } };
static uint64_t tag;
#define RELAY 3.0

static struct ddpi_rollcall_in input (int rank, const int *missing, int n,
                                      double window)
{
    struct ddpi_rollcall_in in = {
        .tag = tag, .rank = rank, .size = 6, .nnodes = 3, .node = rank / 2,
        .local_ranks = node_ranks[rank / 2], .local_size = 2,
        .missing = missing, .nmissing = n, .relay = RELAY, .window = window,
    };
    return in;
}

/* Take part in the roll call as rank in a child (with a relay's window of
 * relay seconds); it exits 0 when its answer names rank 3 alone as
 * missing and want_unheard ranks unheard, 1 otherwise, 2 on no answer. */
static pid_t reporter (int rank, const int *missing, int n, int want_unheard,
                       double relay, double window)
{
    pid_t pid = fork ();

    if (pid == 0) {
        struct ddpi_rollcall_in in = input (rank, missing, n, window);
        struct ddpi_rollcall rc;
        in.relay = relay;
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

/* Connect to the hub on this machine, retrying for up to 30 s (it may
 * not listen yet).  Returns a connected socket or -1. */
static int hub_connect (int port)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    double end = ddpi_now () + 30.0;

    sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    sin.sin_port = htons ((uint16_t)port);
    while (ddpi_now () < end) {
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        if (connect (fd, (struct sockaddr *)&sin, sizeof (sin)) == 0)
            return fd;
        close (fd);
        usleep (20000);
    }
    return -1;
}

/* Wait (30 s at most) until node's relay socket is bound: its abstract
 * name (rollcall_net.c) appears in /proc/net/unix.  Returns true if it
 * did. */
static bool relay_bound (int node)
{
    char name[64], line[512];
    double end = ddpi_now () + 30.0;
    bool found = false;

    snprintf (name, sizeof (name), " @ddp-rollcall.%016llx.%d\n",
              (unsigned long long)tag, node);
    while (!found && ddpi_now () < end) {
        FILE *f = fopen ("/proc/net/unix", "r");
        while (f && !found && fgets (line, sizeof (line), f))
            found = strstr (line, name) != NULL;
        if (f)
            fclose (f);
        if (!found)
            usleep (10000);
    }
    return found;
}

/* A stranger knocks with garbage: the hub drops it and goes on. */
static void stranger (int port)
{
    int fd = hub_connect (port);

    if (fd >= 0) {
        (void)!write (fd, "GET / HTTP/1.0\r\n\r\n", 18);
        close (fd);
    }
}

/* Every rank that arrived takes part: one delegate per node, the others
 * give it their view.  The hub's window is long (60 s): it ends as soon
 * as every node reported (node 1 after its relay's window: rank 3 never
 * comes), which scheduling noise cannot stretch to half of it. */
static void everyone (int port)
{
    static const int miss3[] = { 3 }, miss4[] = { 4 };
    struct ddpi_rollcall_in in = input (0, NULL, 0, 60.0);
    struct ddpi_rollcall rc;
    pid_t r[4], s;
    double t0 = ddpi_now ();

    r[0] = reporter (1, NULL, 0, 0, RELAY, 60.0);
    r[1] = reporter (2, miss3, 1, 0, RELAY, 60.0);
    /* Rank 5's probe missed rank 4 (a late commit), so it takes itself
     * for node 2's first survivor and binds the relay (rank 4 starts once
     * it did): the delegate waits for rank 4 all the same, and rank 4's
     * own view wins. */
    r[2] = reporter (5, miss4, 1, 0, RELAY, 60.0);
    ok (relay_bound (2), "node 2's relay is bound (by rank 5)");
    r[3] = reporter (4, NULL, 0, 0, RELAY, 60.0);
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
    is_int (reaped (r[2]), 0, "node 2's rank 5 got the same answer");
    is_int (reaped (r[3]), 0, "node 2's rank 4 got the same answer");
    reaped (s);
    ok (ddpi_now () - t0 < 30.0, "hub: done when every node reported, not "
        "at the end of its 60 s window (%.2f s)", ddpi_now () - t0);
}

/* Node 2 never reports: its ranks are unheard, after the hub's window
 * (not before: it waits for the silent node; and boundedly).  The window
 * (3 s) covers node 1's relay (0.5 s: rank 3 never comes) and a late
 * start; the reporters wait longer for the answer than the hub takes. */
static void silent_node (void)
{
    static const int miss3[] = { 3 };
    struct ddpi_rollcall_in in = input (0, NULL, 0, 3.0);
    struct ddpi_rollcall rc;
    pid_t r1, r2;
    double t0 = ddpi_now (), t;

    in.relay = 0.5;
    r1 = reporter (2, miss3, 1, 2, 0.5, 10.0);
    r2 = reporter (1, NULL, 0, 2, 0.5, 10.0);
    ok (ddpi_rollcall_run (&in, &rc) == 0 && rc.nmissing == 1
        && rc.nunheard == 2 && rc.unheard[0] == 4 && rc.unheard[1] == 5,
        "hub: node 2 silent, its ranks 4-5 unheard");
    t = ddpi_now () - t0;
    is_int (reaped (r1), 0, "node 1's delegate heard that too");
    is_int (reaped (r2), 0, "node 0's other rank heard that too");
    ok (t >= 3.0 && t < 3.0 + 0.5 + 8, "hub: waited its window for the "
        "silent node, and no more than a bound (%.2f s)", t);
}

/* Rank 0 expected as node 0's delegate never comes: rank 1 takes its
 * place after half the relay's window, and is the hub. */
static void absent_delegate (void)
{
    static const int miss3[] = { 3 };
    struct ddpi_rollcall_in in = input (1, NULL, 0, 60.0);
    struct ddpi_rollcall rc;
    pid_t r[3];
    double t0 = ddpi_now ();

    r[0] = reporter (2, miss3, 1, 0, RELAY, 60.0);
    r[1] = reporter (4, NULL, 0, 0, RELAY, 60.0);
    r[2] = reporter (5, NULL, 0, 0, RELAY, 60.0);
    ok (ddpi_rollcall_run (&in, &rc) == 0 && rc.nmissing == 1
        && rc.missing[0] == 3, "no rank 0: rank 1 is node 0's delegate, and "
        "the hub");
    for (int i = 0; i < 3; i++)
        is_int (reaped (r[i]), 0, "reporter %d got the answer", i);
    ok (ddpi_now () - t0 < 30.0, "in time (%.2f s)", ddpi_now () - t0);
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

    /* No hub: node 1's delegate gives up after its relay's window, the
     * hub's window and a half second. */
    in = input (2, miss3, 1, 0.3);
    in.relay = 0.2;
    t0 = ddpi_now ();
    ok (ddpi_rollcall_run (&in, &rc) < 0, "reporter: no hub, no answer");
    t0 = ddpi_now () - t0;
    ok (t0 >= 0.5 && t0 < 8, "reporter: gave up after its windows and a "
        "half second, boundedly (%.2f s)", t0);

    in = input (0, NULL, 0, 1.0);
    in.relay = 0;
    ok (ddpi_rollcall_run (&in, &rc) < 0, "no relay window: no roll call");
    in.relay = RELAY;
    unsetenv ("MASTER_PORT");
    ok (ddpi_rollcall_run (&in, &rc) < 0, "no MASTER_PORT: no roll call");
    setenv ("MASTER_PORT", "70000", 1);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "MASTER_PORT out of range: none");
    setenv ("MASTER_PORT", port, 1);
    setenv ("MASTER_ADDR", "node-a", 1);
    ok (ddpi_rollcall_run (&in, &rc) < 0, "MASTER_ADDR not an address: none");
    setenv ("MASTER_ADDR", "127.0.0.1", 1);
}

/* Many nodes: more delegates than the 1024 reporters the hub used to
 * take.  A child speaks for nodes 1 .. MANY-1 (rank r on node r; node 1
 * also has rank MANY, which never came): one connection per node, each
 * sends its node's report (the wire format of rollcall.c) and reads the
 * hub's answer.  One process, not a thread per node: valgrind takes at
 * most 500 threads.  The hub (node 0: rank 0 alone) is done when every
 * node reported, long before its 60 s window. */
#define MANY 1100

/* The hard descriptor limit (the soft one when the hard one cannot be
 * read), "unlimited" as a large number. */
static long hard_fd_limit (void)
{
    struct rlimit rl;

    if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
        return -1;
    return rl.rlim_max == RLIM_INFINITY ? 1L << 30 : (long)rl.rlim_max;
}

/* Node node's report: its ranks, and which never came. */
static int send_report (int fd, uint64_t t, int node)
{
    static const int gone[] = { MANY };
    int ranks[2] = { node, MANY };
    size_t len;
    char *rep = ddpi_report_make (t, node, ranks, node == 1 ? 2 : 1, gone,
                                  node == 1 ? 1 : 0, &len);
    int rc = rep && write (fd, rep, len) == (ssize_t)len ? 0 : -1;

    free (rep);
    return rc;
}

/* The answer on fd must name rank MANY alone as missing. */
static bool good_answer (int fd, uint64_t t, double end)
{
    struct ddpi_rollcall out;
    char ans[ROLLCALL_ANSWER_MAX];
    size_t len = 32 + sizeof (int32_t);

    return ddpi_io_full (fd, ans, len, false, end) == 0
           && ddpi_answer_parse (ans, len, t, MANY + 1, &out) == 0
           && out.nmissing == 1 && out.missing[0] == MANY
           && out.nunheard == 0;
}

/* The child: exits with how many nodes got no good answer (0 .. 255). */
static void swarm (int port, uint64_t t)
{
    static int fd[MANY];
    struct rlimit rl;
    double end;
    int node, bad = 0;

    /* A descriptor per node here; the hub raises its own limit. */
    if (getrlimit (RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit (RLIMIT_NOFILE, &rl);
    }
    for (node = 1; node < MANY; node++)
        if ((fd[node] = hub_connect (port)) < 0
            || ddpi_set_nonblock (fd[node]) < 0
            || send_report (fd[node], t, node) < 0)
            _exit (255);
    end = ddpi_now () + 60.0;
    for (node = 1; node < MANY; node++)
        if (!good_answer (fd[node], t, end))
            bad++;
    _exit (bad < 255 ? bad : 255);
}

static void many_nodes (void)
{
    static const int me[] = { 0 };
    struct ddpi_rollcall_in in = {
        .tag = tag ^ 0x55, .rank = 0, .size = MANY + 1, .nnodes = MANY,
        .node = 0, .local_ranks = me, .local_size = 1, .relay = RELAY,
        .window = 60.0,
    };
    struct ddpi_rollcall rc;
    double t0 = ddpi_now ();
    long lim = hard_fd_limit ();
    pid_t pid;

    /* Each end needs a descriptor per node: say so rather than fail on
     * what the machine allows. */
    if (!ok (lim >= MANY + 64, "the hard descriptor limit (%ld) allows %d "
             "connections (raise it with ulimit -Hn)", lim, MANY))
        return;
    if ((pid = fork ()) == 0)
        swarm (getenv ("MASTER_PORT") ? atoi (getenv ("MASTER_PORT")) : 0,
               in.tag);
    ok (ddpi_rollcall_run (&in, &rc) == 0 && rc.nmissing == 1
        && rc.missing[0] == MANY && rc.nunheard == 0, "hub: %d nodes "
        "reported, rank %d missing", MANY, MANY);
    is_int (reaped (pid), 0, "all %d other nodes got that answer", MANY - 1);
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
