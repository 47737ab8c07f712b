/* port.c - MASTER_PORT derivation, the walk to a free port, who listens,
 * and the claim (spank/sp_port.c). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sp_port.h"
#include "tap.h"

/* Jobs J and J+1 running their steps in lockstep (step s of one beside
 * step s of the other) over a 500-port range: how many of 100 neighbour
 * pairs share the port at every one of 10 steps? */
static int lockstep_pairs (void)
{
    int pairs = 0, s, same;
    uint32_t j;

    for (j = 1; j <= 100; j++) {
        for (same = 0, s = 0; s < 10; s++)
            same += sp_port_derive (j, (uint32_t) s, 29500, 29999)
                    == sp_port_derive (j + 1, (uint32_t) s + 1, 29500, 29999);
        pairs += same == 10;
    }
    return pairs;
}

static void test_resv (void)
{
    is_int (sp_port_resv_last ("12000"), 12000, "one reserved port");
    is_int (sp_port_resv_last ("12000-12003"), 12003, "a range: the last");
    is_int (sp_port_resv_last ("12000,12005-12006"), 12006,
            "a list: the last");
    is_int (sp_port_resv_last ("1-65535"), 65535, "the widest range");
    errno = 0;
    ok (sp_port_resv_last (NULL) == -1 && errno == EINVAL, "NULL: EINVAL");
    ok (sp_port_resv_last ("") == -1, "empty: refused");
    ok (sp_port_resv_last ("12003-12000") == -1 && errno == EINVAL,
        "a backwards range: EINVAL");
    errno = 0;
    ok (sp_port_resv_last ("0") == -1 && errno == ERANGE, "port 0: ERANGE");
    ok (sp_port_resv_last ("65536") == -1, "port 65536: refused");
    ok (sp_port_resv_last ("12000,") == -1, "a trailing comma: refused");
    ok (sp_port_resv_last ("12000;12001") == -1, "a stray ';': refused");
    ok (sp_port_resv_last ("12000-") == -1, "an open range: refused");
}

/* Write TEXT to a fresh file; returns its name (static) or NULL. */
static const char *table (const char *text)
{
    static char path[] = "port-table.XXXXXX";
    int fd;

    strcpy (path, "port-table.XXXXXX");
    if ((fd = mkstemp (path)) < 0)
        return NULL;
    if (write (fd, text, strlen (text)) != (ssize_t) strlen (text)) {
        close (fd);
        return NULL;
    }
    close (fd);
    return path;
}

#define HDR "  sl  local_address rem_address   st tx_queue rx_queue tr " \
            "tm->when retrnsmt   uid  timeout inode\n"

static void listening (const char *text, unsigned port, int want,
                       const char *what)
{
    const char *path = table (text);

    ok (path && sp_port_listening (path, port) == want, "%s", what);
    if (path)
        unlink (path);
}

static void listener_uid (const char *text, unsigned port, long want,
                          const char *what)
{
    const char *path = table (text);
    long uid = 12345; /* set by the call in every case tested */

    ok (path && sp_port_listener (path, port, &uid) == 1 && uid == want,
        "%s", what);
    if (path)
        unlink (path);
}

static void test_listening (void)
{
    /* 0x7530 = 30000, 0x7531 = 30001; state 0A = LISTEN, 01 = ESTABLISHED */
    const char *v4 = HDR
        "   0: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 "
        "00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n"
        "   1: 0100007F:7531 0100007F:9C40 01 00000000:00000000 00:00000000 "
        "00000000     0        0 12346 1 0000000000000000 20 4 30 10 -1\n";
    const char *v6 = HDR
        "   0: 00000000000000000000000000000000:7532 "
        "00000000000000000000000000000000:0000 0A 00000000:00000000 "
        "00:00000000 00000000     0        0 22 1 0000000000000000 100 0 0 "
        "10 0\n";

    listening (v4, 30000, 1, "IPv4: a listener on 30000 is seen");
    listening (v4, 30001, 0, "IPv4: an established connection is not a "
               "listener");
    listening (v4, 30002, 0, "IPv4: a free port is free");
    listening (v6, 30002, 1, "IPv6: a listener on 30002 is seen");
    listening (HDR, 30000, 0, "an empty table: free");
    ok (sp_port_listening ("/nonexistent/tcp6", 30000) == 0,
        "a missing table (no IPv6): free");
    listening (HDR "   0: 0000000:75 garbage\n", 30000, -1,
               "a malformed line is an error, not 'free'");
    listening (HDR "   0: 00000000:7530 00000000:0000 0A", 30000, -1,
               "a cut-off line is an error");
    listening ("", 30000, -1, "no header: an error");
    ok (sp_port_listening (NULL, 1) == -1, "NULL path: an error");
    listener_uid (v4, 30000, 0, "the listener's uid (0)");
    listener_uid (HDR
        "   0: 0100007F:7530 00000000:0000 01 00000000:00000000 00:00000000 "
        "00000000  1000        0 1 1 0000000000000000 100 0 0 10 0\n"
        "   1: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 "
        "00000000 65534        0 2 1 0000000000000000 100 0 0 10 0\n",
        30000, 65534, "the listener's uid, not a connection's (65534)");
    listening (HDR "   0: 00000000:7530 00000000:0000 0A 00000000:00000000 "
               "00:00000000 00000000 x 0 1\n", 30000, 1,
               "a uid that is no number: still a listener");
    listener_uid (HDR "   0: 00000000:7530 00000000:0000 0A 00000000:00000000 "
                  "00:00000000 00000000 x 0 1\n", 30000, -1,
                  "... whose uid is unknown (-1)");
    listener_uid (HDR "   0: 00000000:7530 00000000:0000 0A 00000000:00000000\n",
                  30000, -1, "a line cut after the queues: a listener, uid -1");
    listening (HDR "   0: 00000000:7530 00000000:0000\n", 30000, -1,
               "a line cut before the state is an error");
    ok (sp_port_listening ("/proc/net/tcp", 1) >= 0,
        "this machine's own table parses");
}

/* A node's ports for the walk tests: which are taken, which were tried. */
struct node {
    unsigned lo, hi;
    unsigned char taken[65536];
    unsigned tried[65536];
    unsigned ntried;
    int fail_at;        /* try_port fails (EIO) on this port; 0: never */
};

static int node_try (unsigned port, void *arg)
{
    struct node *n = arg;

    if (n->ntried < 65536)
        n->tried[n->ntried++] = port;
    if ((int) port == n->fail_at) {
        errno = EIO;
        return -1;
    }
    if (n->taken[port])
        return 1;
    n->taken[port] = 1;
    return 0;
}

static struct node *node_new (unsigned lo, unsigned hi)
{
    struct node *n = calloc (1, sizeof (*n));

    if (!n) {
        fprintf (stderr, "port.t: out of memory\n");
        exit (1);
    }
    n->lo = lo;
    n->hi = hi;
    return n;
}

/* Is every port N tried inside its range, none twice? */
static bool tried_distinct (const struct node *n)
{
    static unsigned char seen[65536];
    unsigned i;
    bool good = true;

    memset (seen, 0, sizeof (seen));
    for (i = 0; i < n->ntried; i++) {
        if (n->tried[i] < n->lo || n->tried[i] > n->hi || seen[n->tried[i]]++)
            good = false;
    }
    return good;
}

static void test_walk (void)
{
    struct node *n = node_new (29500, 29999);
    int p, i, node, got = 0, clash8 = 0, clash24 = 0;
    uint32_t jobs[24];
    bool follows = true, distinct = true;

    p = sp_port_walk (777, 3, 29500, 29999, 500, node_try, n);
    is_int (p, sp_port_derive (777, 3, 29500, 29999),
            "a free derived port: the walk takes it at once");
    ok (n->ntried == 1, "... trying nothing else");

    n->ntried = 0;
    p = sp_port_walk (777, 3, 29500, 29999, 500, node_try, n);
    is_int (p, sp_port_derive (777, 4, 29500, 29999),
            "the same step again (its port taken): the port of step 4");
    n->ntried = 0;
    n->taken[sp_port_derive (777, 5, 29500, 29999)] = 1;
    p = sp_port_walk (777, 3, 29500, 29999, 500, node_try, n);
    for (i = 0; i < (int) n->ntried; i++)
        follows = follows && (int) n->tried[i]
                  == sp_port_derive (777, 3 + (uint32_t) i, 29500, 29999);
    ok (follows && n->ntried == 4 && p == (int) n->tried[3],
        "then on along the job's stride: steps 4, 5 (taken), 6");
    free (n);

    /* 1000 nodes, each running 24 single-node steps of 24 jobs with ids
     * drawn at random: with the derived port alone, the first 8 share a
     * port on about 5.7 % of the nodes and the 24 on about 43 % (the
     * birthday bound); walking, every step gets a port and none shares. */
    srand (4711);
    for (node = 0; node < 1000; node++) {
        int k, c8 = 0, c24 = 0;
        n = node_new (29500, 29999);
        for (i = 0; i < 24; i++) {
            jobs[i] = (uint32_t) rand ();
            for (k = 0; k < i; k++) {
                bool same = sp_port_derive (jobs[k], 0, 29500, 29999)
                            == sp_port_derive (jobs[i], 0, 29500, 29999);
                c8 |= same && i < 8;
                c24 |= same;
            }
            got += sp_port_walk (jobs[i], 0, 29500, 29999, 500, node_try,
                                 n) > 0;
        }
        clash8 += c8;
        clash24 += c24;
        n->ntried = 0;
        for (i = 29500; i <= 29999; i++)
            if (n->taken[i])
                n->tried[n->ntried++] = (unsigned) i;
        distinct = distinct && n->ntried == 24;
        free (n);
    }
    diag ("derived ports alone: a shared port on %d of 1000 nodes with 8 "
          "jobs, %d with 24", clash8, clash24);
    ok (clash8 > 20 && clash24 > 300, "(the derived port alone collides)");
    is_int (got, 24000, "walking, each of 24 concurrent single-node steps "
            "on 1000 nodes gets a port");
    ok (distinct, "... 24 distinct ports on every node");

    /* Every port taken: the walk tries each exactly once, then gives up. */
    n = node_new (40000, 40209);
    memset (n->taken + 40000, 1, 210);
    errno = 0;
    ok (sp_port_walk (99, 12, 40000, 40209, 1000, node_try, n) == -1
        && errno == EADDRINUSE, "a full range: EADDRINUSE");
    ok (n->ntried == 210 && tried_distinct (n),
        "... after trying each of its 210 ports once");
    n->ntried = 0;
    ok (sp_port_walk (99, 12, 40000, 40209, 7, node_try, n) == -1
        && errno == EADDRINUSE && n->ntried == 7, "TRIES bounds the walk");
    n->ntried = 0;
    n->taken[40000 + 5] = 0;
    n->fail_at = sp_port_derive (99, 13, 40000, 40209);
    errno = 0;
    ok (sp_port_walk (99, 12, 40000, 40209, 210, node_try, n) == -1
        && errno == EIO && n->ntried == 2,
        "an error of TRY_PORT stops the walk with its errno");
    errno = 0;
    ok (sp_port_walk (99, 12, 40000, 40209, 0, node_try, n) == -1
        && errno == EINVAL, "TRIES 0: EINVAL");
    errno = 0;
    ok (sp_port_walk (99, 12, 40000, 40209, 1, NULL, n) == -1
        && errno == EINVAL, "no TRY_PORT: EINVAL");
    errno = 0;
    ok (sp_port_walk (99, 12, 20, 10, 1, node_try, n) == -1
        && errno == EINVAL, "a bad range: EINVAL");
    free (n);
}

/* A fresh private directory for the claim tests; its name (static). */
static const char *scratch_dir (void)
{
    static char path[] = "port-claims.XXXXXX";

    strcpy (path, "port-claims.XXXXXX");
    return mkdtemp (path);
}

static void test_dir (void)
{
    const char *top = scratch_dir ();
    char sub[128];
    int t, d, e;

    ok (top != NULL, "a scratch directory");
    if (!top)
        return;
    t = open (top, O_RDONLY | O_DIRECTORY);
    d = sp_port_dir (t, "claims");
    ok (d >= 0 && (fcntl (d, F_GETFD) & FD_CLOEXEC),
        "a missing directory is made and opened, close-on-exec");
    if (d >= 0)
        close (d);
    d = sp_port_dir (t, "claims");
    ok (d >= 0, "... and opened again");
    if (d >= 0)
        close (d);
    snprintf (sub, sizeof (sub), "%s/claims", top);
    chmod (sub, 0777);
    errno = 0;
    ok (sp_port_dir (t, "claims") == -1 && errno == EPERM,
        "a directory others may write: EPERM");
    chmod (sub, 0775);
    errno = 0;
    ok (sp_port_dir (t, "claims") == -1 && errno == EPERM,
        "... its group may write: EPERM");
    chmod (sub, 0755);
    e = symlinkat ("claims", t, "link");
    errno = 0;
    ok (e == 0 && sp_port_dir (t, "link") == -1 && errno == ENOTDIR,
        "a symbolic link to a good directory is not followed: ENOTDIR");
    e = close (openat (t, "file", O_CREAT | O_WRONLY, 0600));
    errno = 0;
    ok (e == 0 && sp_port_dir (t, "file") == -1 && errno == ENOTDIR,
        "a file: ENOTDIR");
    errno = 0;
    ok (sp_port_dir (t, "a/b") == -1 && errno == EINVAL, "a path: EINVAL");
    errno = 0;
    ok (sp_port_dir (t, "..") == -1 && errno == EINVAL, "'..': EINVAL");
    errno = 0;
    ok (sp_port_dir (t, NULL) == -1 && errno == EINVAL, "NULL: EINVAL");
    unlinkat (t, "link", 0);
    unlinkat (t, "file", 0);
    unlinkat (t, "claims", AT_REMOVEDIR);
    close (t);
    rmdir (top);
}

/* Run sp_port_lock (DIR, PORT, ...) in a child; its exit status: 0 (got
 * the claim), 1 (EADDRINUSE), 2 (another error). */
static int lock_in_child (int dir, unsigned port)
{
    int st = 0;
    pid_t pid = fork ();

    if (pid == 0) {
        int fd = sp_port_lock (dir, port, "child", NULL, 0);
        _exit (fd >= 0 ? 0 : errno == EADDRINUSE ? 1 : 2);
    }
    if (pid < 0 || waitpid (pid, &st, 0) != pid || !WIFEXITED (st))
        return -1;
    return WEXITSTATUS (st);
}

/* A process that takes the claim on PORT in DIR and waits to be killed;
 * its pid once it holds it, or -1. */
static pid_t holder_process (int dir, unsigned port)
{
    int p[2];
    char c = 0;
    pid_t pid;

    if (pipe (p) < 0)
        return -1;
    if ((pid = fork ()) == 0) {
        int fd = sp_port_lock (dir, port, "job 7 step 3 (uid 1000)", NULL, 0);
        c = fd >= 0 ? 'y' : 'n';
        if (write (p[1], &c, 1) != 1 || fd < 0)
            _exit (1);
        for (;;)
            pause ();
    }
    close (p[1]);
    if (pid < 0 || read (p[0], &c, 1) != 1 || c != 'y') {
        close (p[0]);
        return -1;
    }
    close (p[0]);
    return pid;
}

static void test_lock (void)
{
    const char *top = scratch_dir ();
    char holder[64], path[128];
    int t, a, b, st;
    pid_t pid;

    if (!top || (t = open (top, O_RDONLY | O_DIRECTORY)) < 0) {
        ok (0, "a scratch directory");
        return;
    }
    a = sp_port_lock (t, 30000, "job 1 step 0 (uid 0)", holder,
                      sizeof (holder));
    ok (a >= 0 && (fcntl (a, F_GETFD) & FD_CLOEXEC),
        "a claim on a free port, close-on-exec");
    is_int (lock_in_child (t, 30000), 1,
            "another process claiming the same port: EADDRINUSE");
    errno = 0;
    b = sp_port_lock (t, 30000, "x", holder, sizeof (holder));
    ok (b == -1 && errno == EADDRINUSE
        && strcmp (holder, "job 1 step 0 (uid 0)") == 0,
        "a second claim, even in the same process: EADDRINUSE, naming the "
        "holder (%s)", holder);
    is_int (lock_in_child (t, 30001), 0, "another port: its own claim");
    if (a >= 0)
        close (a);
    is_int (lock_in_child (t, 30000), 0, "closed, the claim is free again");

    pid = holder_process (t, 30002);
    ok (pid > 0, "a process holds port 30002");
    is_int (lock_in_child (t, 30002), 1, "... which nobody else can claim");
    if (pid > 0) {
        kill (pid, SIGKILL);
        waitpid (pid, &st, 0);
    }
    b = sp_port_lock (t, 30002, "job 2 step 0 (uid 0)", holder,
                      sizeof (holder));
    ok (b >= 0, "killed with -9, its claim is free: no stale claim");
    if (b >= 0)
        close (b);

    snprintf (path, sizeof (path), "%s/30003", top);
    ok (symlink ("30001", path) == 0
        && sp_port_lock (t, 30003, "x", NULL, 0) == -1 && errno == EPERM,
        "a symbolic link in place of a lock file is not followed: EPERM");
    snprintf (path, sizeof (path), "%s/30004", top);
    a = open (path, O_CREAT | O_WRONLY, 0666);
    fchmod (a, 0666);
    close (a);
    errno = 0;
    ok (sp_port_lock (t, 30004, "x", NULL, 0) == -1 && errno == EPERM,
        "a lock file others may write: EPERM");
    snprintf (path, sizeof (path), "%s/30005", top);
    snprintf (holder, sizeof (holder), "%s/30001", top);
    errno = 0;
    ok (link (holder, path) == 0
        && sp_port_lock (t, 30005, "x", NULL, 0) == -1 && errno == EPERM,
        "a hard link to another lock file: EPERM");
    errno = 0;
    ok (sp_port_lock (t, 0, "x", NULL, 0) == -1 && errno == EINVAL,
        "port 0: EINVAL");
    errno = 0;
    ok (sp_port_lock (t, 65536, "x", NULL, 0) == -1 && errno == EINVAL,
        "port 65536: EINVAL");
    errno = 0;
    ok (sp_port_lock (t, 1, NULL, NULL, 0) == -1 && errno == EINVAL,
        "no owner: EINVAL");
    errno = 0;
    ok (sp_port_lock (-1, 1, "x", NULL, 0) == -1 && errno == EBADF,
        "no directory: EBADF");
    for (a = 30000; a <= 30005; a++) {
        snprintf (path, sizeof (path), "%d", a);
        unlinkat (t, path, 0);
    }
    close (t);
    rmdir (top);
}

int main (void)
{
    bool inrange = true, distinct = true, spread = false;
    int p0, p, i, seen[100] = { 0 };
    uint32_t s;

    p0 = sp_port_derive (1234, 0, 29500, 29999);
    ok (p0 >= 29500 && p0 <= 29999, "port of step 0 is in the range (%d)", p0);
    is_int (sp_port_derive (1234, 0, 29500, 29999), p0,
            "the same job and step give the same port (every node agrees)");
    ok (sp_port_derive (1234, 1, 29500, 29999) != p0,
        "the next step of the same job gets another port");

    /* 100 steps of one job in a 100-port range: all distinct. */
    for (s = 0; s < 100; s++) {
        p = sp_port_derive (987654, s, 40000, 40099);
        if (p < 40000 || p > 40099)
            inrange = false;
        else if (seen[p - 40000]++)
            distinct = false;
    }
    ok (inrange, "100 steps stay inside a 100-port range");
    ok (distinct, "100 concurrent steps of one job get 100 distinct ports");

    for (i = 1; i < 20; i++) {
        if (sp_port_derive ((uint32_t) i, 0, 29500, 29999)
            != sp_port_derive ((uint32_t) i + 1, 0, 29500, 29999) - 1)
            spread = true;
    }
    ok (spread, "neighbouring job ids are spread over the range");
    {
        int pairs = lockstep_pairs ();
        ok (pairs <= 1, "jobs whose steps meet once do not keep meeting "
            "(%d of 100 lockstep pairs share every port)", pairs);
    }
    /* Ranges whose size shares factors with many strides. */
    for (i = 0; i < 3; i++) {
        static const unsigned spans[] = { 64, 210, 2 };
        unsigned span = spans[i], k;
        int seen2[210] = { 0 };
        bool ok2 = true;
        for (k = 0; k < span; k++) {
            p = sp_port_derive (4242, k, 50000, 50000 + span - 1);
            if (p < 50000 || seen2[p - 50000]++)
                ok2 = false;
        }
        ok (ok2, "%u steps of one job in a %u-port range: all distinct",
            span, span);
    }

    is_int (sp_port_derive (5, 7, 6000, 6000), 6000,
            "a one-port range always gives that port");
    ok (sp_port_derive (0xffffffffU, 0xfffffffbU, 1, 65535) >= 1,
        "the largest job and step ids stay in range");
    errno = 0;
    ok (sp_port_derive (1, 0, 0, 10) == -1 && errno == EINVAL,
        "a range starting at 0 is EINVAL");
    errno = 0;
    ok (sp_port_derive (1, 0, 20, 10) == -1 && errno == EINVAL,
        "LO > HI is EINVAL");
    errno = 0;
    ok (sp_port_derive (1, 0, 10, 65536) == -1 && errno == EINVAL,
        "HI > 65535 is EINVAL");
    test_resv ();
    test_listening ();
    test_walk ();
    test_dir ();
    test_lock ();
    return done_testing ();
}
