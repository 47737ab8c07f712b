/* ddp_groups.c - communicators, nonblocking calls and reduce-scatter
 * (ddp.h) checked against results computed here.
 *
 * Usage:
 *   ddp_groups check     every check below; one line per rank
 *                        "ddp_groups rank R/W: N checks, F failed", exit 1
 *                        when any failed
 *   ddp_groups HOW K N   two groups (even and odd world ranks); after N
 *                        all-reduces on its group world rank K exits
 *                        (HOW kill), sleeps 3 DDP_TIMEOUT + 1 s and exits
 *                        (stall), or passes another count (mismatch);
 *                        the others go on: its group-mates report what
 *                        their next call returned and how long it took,
 *                        the other group makes 4 N calls of its own and
 *                        then (kill, stall) a world barrier; each rank
 *                        prints "rank R group G: ..." lines
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp.h"
#include "rank_check.h"

static int size;

/* Every collective on c, against what its members' world ranks say. */
static void check_comm (ddp_comm_t *c, const char *what)
{
    int n = ddp_comm_size (c), me = ddp_comm_rank (c);
    int64_t v[3], sum[3], *all = calloc ((size_t)n, sizeof (int64_t));
    int64_t *blocks = calloc ((size_t)n * 2, sizeof (int64_t)), rs[2];
    int64_t expect = 0, x;

    for (int r = 0; r < n; r++)
        expect += ddp_comm_world_rank (c, r) + 1;
    v[0] = rank + 1;
    v[1] = 1;
    v[2] = me;
    OK (ddp_comm_allreduce (c, v, sum, 3, DDP_INT64, DDP_SUM));
    CHECK (sum[0] == expect && sum[1] == n && sum[2] == (int64_t)n * (n - 1) / 2,
           "%s: allreduce %lld %lld %lld, expected %lld %d", what,
           (long long)sum[0], (long long)sum[1], (long long)sum[2],
           (long long)expect, n);
    x = me == n - 1 ? rank : -1;
    OK (ddp_comm_bcast (c, &x, 1, DDP_INT64, n - 1));
    CHECK (x == ddp_comm_world_rank (c, n - 1), "%s: bcast from its last "
           "rank gave %lld", what, (long long)x);
    x = rank;
    OK (ddp_comm_allgather (c, &x, all, 1, DDP_INT64));
    for (int r = 0; r < n; r++)
        CHECK (all[r] == ddp_comm_world_rank (c, r), "%s: allgather [%d] = "
               "%lld", what, r, (long long)all[r]);
    memset (all, 0, (size_t)n * sizeof (int64_t));
    OK (ddp_comm_gather (c, &x, all, 1, DDP_INT64, 0));
    for (int r = 0; me == 0 && r < n; r++)
        CHECK (all[r] == ddp_comm_world_rank (c, r), "%s: gather [%d] = %lld",
               what, r, (long long)all[r]);
    x = 0;
    OK (ddp_comm_reduce (c, &v[0], &x, 1, DDP_INT64, DDP_MAX, n / 2));
    if (me == n / 2) {
        int64_t m = 0;
        for (int r = 0; r < n; r++)
            m = ddp_comm_world_rank (c, r) + 1 > m ? ddp_comm_world_rank (c, r) + 1 : m;
        CHECK (x == m, "%s: reduce max %lld, expected %lld", what,
               (long long)x, (long long)m);
    }
    /* Reduce-scatter: block b of rank r's input is (r + 1) * 100 + b. */
    for (int b = 0; b < n; b++) {
        blocks[2 * b] = (int64_t)(me + 1) * 100 + b;
        blocks[2 * b + 1] = 1;
    }
    OK (ddp_comm_reduce_scatter (c, blocks, rs, 2, DDP_INT64, DDP_SUM));
    CHECK (rs[0] == (int64_t)n * (n + 1) / 2 * 100 + (int64_t)n * me
           && rs[1] == n, "%s: reduce-scatter gave %lld %lld", what,
           (long long)rs[0], (long long)rs[1]);
    /* In place: this rank's block of sendbuf. */
    OK (ddp_comm_reduce_scatter (c, blocks, blocks + 2 * me, 2, DDP_INT64,
                                 DDP_SUM));
    CHECK (blocks[2 * me] == rs[0] && blocks[2 * me + 1] == rs[1],
           "%s: reduce-scatter in place gave %lld", what,
           (long long)blocks[2 * me]);
    OK (ddp_comm_barrier (c));
    free (all);
    free (blocks);
}

/* This process's threads (/proc/self/status), -1 when unknown. */
static int threads (void)
{
    FILE *f = fopen ("/proc/self/status", "r");
    char line[256];
    int n = -1;

    while (f && fgets (line, sizeof (line), f))
        if (sscanf (line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose (f);
    return n;
}

/* On the host backend a communicator of one (c, no request started on it
 * yet) completes a request when it starts, on this thread: the first
 * ddp_test says done, the result is there, and no thread was made. */
static void check_alone_done (ddp_comm_t *c)
{
    double a[3] = { 1.5, -2, 7 }, b[3] = { 0 };
    ddp_request_t *r = NULL;
    bool done = false;
    int before = threads (), after;

    if (strcmp (ddp_backend_name (), "host") != 0)
        return;
    OK (ddp_comm_iallreduce (c, a, b, 3, DDP_FLOAT64, DDP_SUM, &r));
    after = threads ();
    CHECK (ddp_test (&r, &done) == 0 && done && !r
           && memcmp (a, b, sizeof (a)) == 0 && before > 0 && after == before,
           "a group of one's request is done when it starts, on this "
           "thread (done %d, threads %d then %d)", (int)done, before, after);
    if (r)
        ddp_wait (&r);
}

/* Several requests in flight on c, a blocking call behind them, and
 * ddp_test until one is done. */
static void check_requests (ddp_comm_t *c, const char *what)
{
    enum { NREQ = 8, COUNT = 5000 };
    int n = ddp_comm_size (c), me = ddp_comm_rank (c);
    ddp_request_t *req[NREQ], *r1 = NULL, *r2 = NULL, *r3 = NULL;
    double *buf = calloc ((size_t)NREQ * COUNT, sizeof (double));
    int64_t *all = calloc ((size_t)n, sizeof (int64_t)), x, y, z;
    bool done = false;
    long polls = 0;
    int rc;

    for (int i = 0; i < NREQ; i++) {
        for (int j = 0; j < COUNT; j++)
            buf[(size_t)i * COUNT + j] = (double)(i + j % 7 + me);
        OK (ddp_comm_iallreduce (c, buf + (size_t)i * COUNT,
                                 buf + (size_t)i * COUNT, COUNT, DDP_FLOAT64,
                                 DDP_SUM, &req[i]));
    }
    /* A blocking call keeps its place behind them. */
    x = me + 1;
    OK (ddp_comm_allreduce (c, &x, &y, 1, DDP_INT64, DDP_SUM));
    CHECK (y == (int64_t)n * (n + 1) / 2, "%s: the blocking call behind "
           "the requests gave %lld", what, (long long)y);
    OK (ddp_waitall (NREQ, req));
    for (int i = 0; i < NREQ; i++) {
        CHECK (req[i] == NULL, "%s: request %d not cleared", what, i);
        for (int j = 0; j < COUNT; j += 997) {
            double e = (double)n * (i + j % 7) + (double)n * (n - 1) / 2;
            CHECK (buf[(size_t)i * COUNT + j] == e, "%s: request %d [%d] = "
                   "%g, expected %g", what, i, j, buf[(size_t)i * COUNT + j],
                   e);
        }
    }
    /* Every other kind, then ddp_test until done. */
    z = me == 0 ? 4242 : 0;
    OK (ddp_comm_ibcast (c, &z, 1, DDP_INT64, 0, &r1));
    x = ddp_comm_world_rank (c, me);
    OK (ddp_comm_iallgather (c, &x, all, 1, DDP_INT64, &r2));
    OK (ddp_comm_ibarrier (c, &r3));
    OK (ddp_wait (&r1));
    CHECK (z == 4242, "%s: ibcast gave %lld", what, (long long)z);
    do {
        rc = ddp_test (&r2, &done);
        polls++;
    } while (rc == 0 && !done);
    CHECK (rc == 0 && done, "%s: ddp_test: %s", what, ddp_last_error ());
    CHECK (r2 == NULL, "%s: ddp_test left the request", what);
    for (int r = 0; r < n; r++)
        CHECK (all[r] == ddp_comm_world_rank (c, r), "%s: iallgather [%d] = "
               "%lld", what, r, (long long)all[r]);
    OK (ddp_wait (&r3));
    OK (ddp_wait (&r3));   /* NULL: 0 at once */
    {
        int64_t send[64], recv[2];
        for (int b = 0; b < n && b < 32; b++) {
            send[2 * b] = b;
            send[2 * b + 1] = me;
        }
        if (n <= 32) {
            OK (ddp_comm_ireduce_scatter (c, send, recv, 2, DDP_INT64,
                                          DDP_MAX, &r1));
            OK (ddp_wait (&r1));
            CHECK (recv[0] == me && recv[1] == n - 1, "%s: "
                   "ireduce_scatter gave %lld %lld", what,
                   (long long)recv[0], (long long)recv[1]);
        }
        x = me;
        y = -1;
        OK (ddp_comm_ireduce (c, &x, &y, 1, DDP_INT64, DDP_SUM, 0, &r1));
        OK (ddp_comm_igather (c, &x, all, 1, DDP_INT64, n - 1, &r2));
        OK (ddp_wait (&r2));
        OK (ddp_wait (&r1));
        if (me == 0)
            CHECK (y == (int64_t)n * (n - 1) / 2, "%s: ireduce gave %lld",
                   what, (long long)y);
        for (int r = 0; me == n - 1 && r < n; r++)
            CHECK (all[r] == r, "%s: igather [%d] = %lld", what, r,
                   (long long)all[r]);
    }
    free (buf);
    free (all);
}

/* A request waited for on another thread (ddp.h: ddp_wait from any
 * thread) while this one starts the communicator's next calls, a
 * blocking one among them: as torch's backend completes its work. */
struct waiter {
    ddp_request_t *req;
    int rc;
    char why[200];
};

static void *wait_on_thread (void *arg)
{
    struct waiter *w = arg;

    w->rc = ddp_wait (&w->req);
    snprintf (w->why, sizeof (w->why), "%s", w->rc ? ddp_last_error () : "");
    return NULL;
}

static void check_wait_elsewhere (ddp_comm_t *c, const char *what)
{
    enum { COUNT = 20000 };
    int n = ddp_comm_size (c), me = ddp_comm_rank (c);
    double *a = calloc (COUNT, sizeof (double));
    int64_t x = me + 1, y = 0, z = 0;
    ddp_request_t *r2 = NULL;
    struct waiter w = { 0 };
    pthread_t t;

    for (int j = 0; j < COUNT; j++)
        a[j] = j + me;
    OK (ddp_comm_iallreduce (c, a, a, COUNT, DDP_FLOAT64, DDP_SUM, &w.req));
    CHECK (pthread_create (&t, NULL, wait_on_thread, &w) == 0,
           "%s: no thread", what);
    OK (ddp_comm_iallreduce (c, &x, &y, 1, DDP_INT64, DDP_SUM, &r2));
    OK (ddp_comm_allreduce (c, &x, &z, 1, DDP_INT64, DDP_MAX));
    OK (ddp_wait (&r2));
    pthread_join (t, NULL);
    CHECK (w.rc == 0 && w.req == NULL, "%s: ddp_wait on another thread: "
           "%d (%s)", what, w.rc, w.why);
    CHECK (y == (int64_t)n * (n + 1) / 2 && z == n, "%s: the calls beside "
           "the waiting thread gave %lld and %lld", what, (long long)y,
           (long long)z);
    for (int j = 0; j < COUNT; j += 1999)
        CHECK (a[j] == (double)n * j + (double)n * (n - 1) / 2, "%s: the "
               "request waited for elsewhere: [%d] = %g", what, j, a[j]);
    free (a);
}

/* The errors a caller can make. */
static void check_errors (void)
{
    ddp_comm_t *w = ddp_comm_world (), *c = (ddp_comm_t *)1;
    ddp_request_t *r = (ddp_request_t *)1;
    int64_t x = 0;
    bool done;

    CHECK (ddp_comm_split (NULL, -5, 0, &c) == DDP_EINVAL && c == NULL,
           "a colour of -5 is refused (every rank took part)");
    CHECK (ddp_comm_split (NULL, 0, 0, NULL) == DDP_EINVAL,
           "newcomm NULL is refused");
    CHECK (ddp_comm_free (&w) == DDP_EINVAL && w == ddp_comm_world (),
           "the world cannot be freed");
    CHECK (ddp_comm_free (NULL) == 0, "ddp_comm_free (NULL) is 0");
    CHECK (ddp_comm_iallreduce (NULL, &x, &x, 1, DDP_INT64, 99, &r)
           == DDP_EINVAL && r == NULL, "a bad op fails the start, req NULL");
    CHECK (ddp_comm_iallreduce (NULL, &x, &x, 1, DDP_INT64, DDP_SUM, NULL)
           == DDP_EINVAL, "req NULL is refused");
    CHECK (ddp_wait (NULL) == DDP_EINVAL, "ddp_wait (NULL)");
    CHECK (ddp_test (NULL, &done) == DDP_EINVAL, "ddp_test (NULL, ...)");
    CHECK (ddp_comm_bcast (NULL, &x, 1, DDP_INT64, size) == DDP_EINVAL,
           "a root out of the world");
    CHECK (ddp_comm_world_rank (NULL, size) == DDP_EINVAL,
           "ddp_comm_world_rank of a rank out of range");
}

static void check_all (void)
{
    ddp_comm_t *parity = NULL, *half = NULL, *self = NULL, *node = NULL,
               *some = NULL;
    int want;

    /* Even and odd world ranks, each ordered from the highest down. */
    OK (ddp_comm_split (NULL, rank % 2, -rank, &parity));
    want = (size - rank % 2 + 1) / 2;
    CHECK (parity && ddp_comm_size (parity) == want, "parity group of %d, "
           "expected %d", parity ? ddp_comm_size (parity) : -1, want);
    if (parity) {
        int n = ddp_comm_size (parity);
        for (int r = 0; r < n; r++) {
            int wr = ddp_comm_world_rank (parity, r);
            CHECK (wr % 2 == rank % 2 && (r == 0 || wr < ddp_comm_world_rank (parity, r - 1)),
                   "parity group's rank %d is world rank %d", r, wr);
            if (wr == rank)
                CHECK (ddp_comm_rank (parity) == r, "own rank %d, listed %d",
                       ddp_comm_rank (parity), r);
        }
        check_comm (parity, "parity");
        /* Nested: the first and the second half of it. */
        OK (ddp_comm_split (parity, ddp_comm_rank (parity) < n / 2, 0, &half));
        if (half) {
            int h = ddp_comm_rank (parity) < n / 2 ? n / 2 : n - n / 2;
            CHECK (ddp_comm_size (half) == h, "half of %d, expected %d",
                   ddp_comm_size (half), h);
            check_comm (half, "half");
        }
        check_requests (parity, "parity requests");
        check_wait_elsewhere (parity, "parity, waited elsewhere");
    }
    /* Groups of one. */
    OK (ddp_comm_split (NULL, rank, 0, &self));
    CHECK (self && ddp_comm_size (self) == 1 && ddp_comm_rank (self) == 0,
           "a group of one");
    if (self) {
        check_comm (self, "self");
        check_alone_done (self);
        check_requests (self, "self requests");
    }
    /* A node's ranks. */
    OK (ddp_comm_split (NULL, ddp_node_rank (), ddp_local_rank (), &node));
    CHECK (node && ddp_comm_size (node) == ddp_local_world_size ()
           && ddp_comm_rank (node) == ddp_local_rank (), "the node's group");
    if (node)
        check_comm (node, "node");
    /* Rank 0 in no group. */
    OK (ddp_comm_split (NULL, rank == 0 ? DDP_UNDEFINED : 7, 0, &some));
    CHECK ((rank == 0) == (some == NULL), "DDP_UNDEFINED gives no group");
    if (some) {
        ddp_comm_t *inner = NULL;
        CHECK (ddp_comm_size (some) == size - 1, "the others' group");
        check_comm (some, "others");
        /* Set-up rounds that rank 0 takes no part in... */
        OK (ddp_comm_split (some, 0, 0, &inner));
        if (inner)
            check_comm (inner, "others, again");
        OK (ddp_comm_free (&inner));
    }
    {
        /* ...then a group of rank 0 and others: its set-up must not
         * depend on how many rounds each took before. */
        ddp_comm_t *mix = NULL;
        OK (ddp_comm_split (NULL, rank / 2, 0, &mix));
        if (mix)
            check_comm (mix, "pairs");
        OK (ddp_comm_free (&mix));
    }
    check_requests (NULL, "world requests");
    check_wait_elsewhere (NULL, "world, waited elsewhere");
    check_comm (NULL, "world");
    check_errors ();
    OK (ddp_comm_free (&half));
    OK (ddp_comm_free (&parity));
    OK (ddp_comm_free (&self));
    OK (ddp_comm_free (&some));
    CHECK (half == NULL && parity == NULL && self == NULL && some == NULL,
           "freed handles are NULL");
    /* node is left for ddp_finalize to free. */
}

/* World rank k misbehaves after n calls on its group (how: "kill" exits,
 * "stall" sleeps 3 DDP_TIMEOUT + 1 s then exits, "mismatch" passes another
 * count); see the header. */
static int fault (const char *how, int k, int n)
{
    ddp_comm_t *grp = NULL;
    int64_t x[2] = { 1, 1 }, y[2];
    const char *t = getenv ("DDP_TIMEOUT");
    double t0 = now ();
    int rc = 0, i;

    if (ddp_comm_split (NULL, rank % 2, 0, &grp) != 0)
        return 1;
    if (rank % 2 == k % 2) {
        for (i = 0; rc == 0; i++) {
            size_t count = 1;
            if (rank == k && i == n) {
                fflush (NULL);
                if (strcmp (how, "kill") == 0)
                    _exit (3);
                if (strcmp (how, "stall") == 0) {
                    usleep ((useconds_t)(3 * (t ? atof (t) : 30) + 1)
                            * 1000000);
                    _exit (0);
                }
                count = 2;
            }
            t0 = now ();
            rc = ddp_comm_allreduce (grp, x, y, count, DDP_INT64, DDP_SUM);
        }
        printf ("rank %d group %d: call %d failed after %.2f s: %s: %s\n",
                rank, rank % 2, i - 1, now () - t0, ddp_strerror (rc),
                ddp_last_error ());
    }
    else {
        for (i = 0; i < 4 * n && rc == 0; i++)
            rc = ddp_comm_allreduce (grp, x, y, 1, DDP_INT64, DDP_SUM);
        printf ("rank %d group %d: %d calls of its own: %s\n", rank,
                rank % 2, i, rc == 0 ? "all passed" : ddp_last_error ());
    }
    fflush (NULL);
    if (strcmp (how, "mismatch") == 0)
        goto out;   /* the world is fine: nothing to show there */
    /* Every rank but k in the world's barrier (after the stalled rank's
     * group-mate has timed out, so that only k is missing). */
    usleep (strcmp (how, "stall") == 0 && rank % 2 != k % 2
            ? (useconds_t)((t ? atof (t) : 30) + 1) * 1000000 : 200000);
    t0 = now ();
    rc = ddp_barrier ();
    printf ("rank %d group %d: world barrier after %.2f s: %s: %s\n", rank,
            rank % 2, now () - t0, ddp_strerror (rc),
            rc ? ddp_last_error () : "");
out:
    fflush (NULL);
    ddp_finalize ();
    return 0;
}

int main (int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";

    if (ddp_init () != 0)
        return 1;
    rank = ddp_rank ();
    size = ddp_world_size ();
    if (argc == 4 && (strcmp (mode, "kill") == 0
                      || strcmp (mode, "stall") == 0
                      || strcmp (mode, "mismatch") == 0))
        return fault (mode, atoi (argv[2]), atoi (argv[3]));
    if (strcmp (mode, "check") != 0) {
        fprintf (stderr, "usage: ddp_groups check | kill|stall|mismatch "
                 "RANK CALLS\n");
        return 2;
    }
    check_all ();
    printf ("ddp_groups rank %d/%d: %d checks, %d failed\n", rank, size,
            nchecks, nfail);
    if (ddp_finalize () != 0)
        nfail++;
    return nfail ? 1 : 0;
}
