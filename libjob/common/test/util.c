/* util.c - libddp's internal helpers: the compact rank lists that failure
 * messages are made of (ddpi_format_ranks), sorting them
 * (ddpi_sort_ranks), the string hash (ddpi_hash_str), and a bounded
 * wait's deadline (ddpi_wait_*), and waiting for a pipe's reader
 * (ddpi_wait_pipe_read). */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pipes.h"
#include "tap.h"
#include "ddp_internal.h"
#include "wait.h"

/* A wait of timeout_s runs out; extended by more_s it goes on for about
 * that long, then runs out again. */
static void wait_extend_checks (void)
{
    struct ddpi_waiter w;
    double t0 = ddpi_now (), t1, t2;
    int rc;

    ddpi_wait_init (&w, 0.05, 0);
    while ((rc = ddpi_wait_step (&w)) >= 0)
        ;
    t1 = ddpi_now ();
    ok (t1 - t0 >= 0.05 && t1 - t0 < 1, "wait: runs out after its timeout "
        "(%.3f s)", t1 - t0);
    ddpi_wait_extend (&w, 0.1);
    ok (ddpi_wait_step (&w) >= 0, "wait: extended, it goes on");
    while ((rc = ddpi_wait_step (&w)) >= 0)
        ;
    t2 = ddpi_now ();
    /* The extension moves the deadline (start + 0.05 s, start >= t0), not
     * the moment the loop above noticed it (t1, later under load). */
    ok (t2 - t0 >= 0.15 && t2 - t1 < 1, "wait: runs out again after the "
        "extension (%.3f s after the start)", t2 - t0);
}

static void ranks_is (const int *r, int n, size_t len, const char *want,
                      const char *what)
{
    char buf[256];

    memset (buf, 'x', sizeof (buf));
    is_str (ddpi_format_ranks (buf, len, r, n), want, "%s", what);
    ok (strlen (buf) < len, "%s: fits in %zu bytes", what, len);
}

static void seconds_checks (void)
{
    double v = -1;

    ok (ddpi_parse_seconds ("30", 100, &v) == 0 && v == 30, "seconds: 30");
    ok (ddpi_parse_seconds ("0.25", 100, &v) == 0 && v == 0.25,
        "seconds: 0.25");
    ok (ddpi_parse_seconds ("1e2", 100, &v) == 0 && v == 100,
        "seconds: 1e2, the maximum itself");
    v = -1;
    is_int (ddpi_parse_seconds ("101", 100, &v), -2, "seconds: above the "
            "maximum is -2");
    is_int (ddpi_parse_seconds ("1e999", 100, &v), -2, "seconds: overflow "
            "is above the maximum too");
    is_int (ddpi_parse_seconds ("0", 100, &v), -1, "seconds: 0 is not "
            "positive");
    is_int (ddpi_parse_seconds ("-5", 100, &v), -1, "seconds: no sign");
    is_int (ddpi_parse_seconds ("soon", 100, &v), -1, "seconds: a word");
    is_int (ddpi_parse_seconds ("5s", 100, &v), -1, "seconds: a suffix");
    is_int (ddpi_parse_seconds ("inf", 1e300, &v), -1, "seconds: inf is not "
            "a number of seconds");
    is_int (ddpi_parse_seconds ("1e-999", 100, &v), -1, "seconds: underflow");
    ok (v == -1, "seconds: failures leave the output alone");
    ok (ddpi_parse_timeout ("inf", &v) == 0 && v == DDPI_TIMEOUT_MAX,
        "timeout: inf is the maximum");
    ok (ddpi_parse_timeout ("infinity", &v) == 0 && v == DDPI_TIMEOUT_MAX,
        "timeout: infinity too");
    ok (ddpi_parse_timeout ("1000000", &v) == 0 && v == DDPI_TIMEOUT_MAX,
        "timeout: the maximum written out");
    is_int (ddpi_parse_timeout ("1e9", &v), -2, "timeout: 1e9 is too long");
    is_int (ddpi_parse_timeout ("0", &v), -1, "timeout: 0 is not one");
    is_int (ddpi_parse_timeout ("INF", &v), -1, "timeout: INF is not inf");
}

/* ddpi_grow: room for one more, the elements kept. */
static void grow_checks (void)
{
    size_t cap = 0, n;
    int *v = NULL, *w;
    bool kept = true;

    for (n = 0; n < 100; n++) {
        if (!(w = ddpi_grow (v, n, &cap, sizeof (int))))
            break;
        v = w;
        v[n] = (int)n * 3;
    }
    for (size_t i = 0; i < n; i++)
        kept = kept && v[i] == (int)i * 3;
    ok (n == 100 && cap >= 100 && cap < 256 && kept, "grow: 100 elements "
        "one by one, kept in order, %zu of room", cap);
    w = ddpi_grow (v, 50, &cap, sizeof (int));
    ok (w == v, "grow: the same array while there is room");
    free (v);
    cap = 4;
    ok (ddpi_grow (NULL, 4, &cap, SIZE_MAX / 4) == NULL && cap == 4,
        "grow: a size that overflows is refused, the room unchanged");
}

/* ddpi_wait_pipe_read returns when the reader has read, gives up at its
 * deadline, and does not wait on what is not a pipe. */
static void pipe_read_checks (void)
{
    int p[2], fd;
    pthread_t th;
    double t0, took;
    char name[] = "util-pipe.XXXXXX";

    if (pipe (p) < 0 || fcntl (p[0], F_SETFL, O_NONBLOCK) < 0)
        bail_out ("pipe failed");
    is_int (ddpi_wait_pipe_read (p[1], 0), 0, "pipe: empty, at once");
    ok (write (p[1], "last words\n", 11) == 11, "pipe: a line in it");
    t0 = ddpi_now ();
    is_int (ddpi_wait_pipe_read (p[1], 0.05), DDP_ETIMEDOUT,
            "pipe: nobody reads: DDP_ETIMEDOUT");
    took = ddpi_now () - t0;
    ok (took >= 0.05 && took < 1, "pipe: gave up after its timeout (%.3f s)",
        took);
    pthread_create (&th, NULL, late_reader, &p[0]);
    t0 = ddpi_now ();
    is_int (ddpi_wait_pipe_read (p[1], 5), 0, "pipe: read late: 0");
    took = ddpi_now () - t0;
    ok (took >= 0.09 && took < 4, "pipe: returned after the reader "
        "(%.3f s), not at the deadline", took);
    pthread_join (th, NULL);
    close (p[0]);
    close (p[1]);
    if ((fd = mkstemp (name)) < 0)
        bail_out ("mkstemp failed");
    ok (write (fd, "text", 4) == 4, "pipe: a file with data");
    is_int (ddpi_wait_pipe_read (fd, 0), 0, "pipe: a file: nothing to wait");
    close (fd);
    unlink (name);
    is_int (ddpi_wait_pipe_read (fd, 0), 0, "pipe: a closed fd: nothing");
}

int main (void)
{
    static const int one[] = { 7 };
    static const int mixed[] = { 0, 1, 2, 5, 7, 8, 10 };
    static const int pairs[] = { 3, 4, 9, 10 };
    int many[100];
    int i;

    plan (NO_PLAN);
    grow_checks ();
    pipe_read_checks ();
    ranks_is (one, 0, 64, "", "no ranks: empty");
    ranks_is (one, 1, 64, "7", "one rank");
    ranks_is (mixed, 7, 64, "0-2,5,7-8,10", "runs become ranges");
    ranks_is (pairs, 4, 64, "3-4,9-10", "two-rank runs are ranges too");
    for (i = 0; i < 100; i++)
        many[i] = 2 * i;    /* no runs: 100 separate numbers */
    ranks_is (many, 100, 64, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,"
              "... (100 ranks)", "a long list is cut with a count");
    ranks_is (many, 100, 32, "0,2,4,6,8,10,12,... (100 ranks)",
              "cut shorter in a smaller buffer");
    ranks_is (many, 1, 32, "0", "a short one in a small buffer");
    many[0] = 1000000000;
    many[1] = 1000000001;
    ranks_is (many, 2, 32, "... (2 ranks)", "nothing fits: only the count");
    {
        int r[] = { 5, 1, 4, 1, 0 }, want[] = { 0, 1, 1, 4, 5 };
        ddpi_sort_ranks (r, 5);
        ok (memcmp (r, want, sizeof (r)) == 0, "sort: ascending, repeats kept");
        ddpi_sort_ranks (r, 0);
        ok (r[0] == 0, "sort: an empty list is left alone");
        ok (ddpi_rank_in (r, 5, 4) && !ddpi_rank_in (r, 5, 2)
            && !ddpi_rank_in (r, 4, 5) && !ddpi_rank_in (r, 0, 0),
            "rank_in: found only within the first n");
    }
    ok (ddpi_hash_str ("") == 0x14650fb0739d0383ULL
        && ddpi_hash_str ("a") == 0x44bd8ad473cd9906ULL,
        "hash: the values it always gave");
    ok (ddpi_hash_str ("slurm.pmix.12.0") != ddpi_hash_str ("slurm.pmix.12.1"),
        "hash: two steps' namespaces differ");
    wait_extend_checks ();
    seconds_checks ();
    done_testing ();
    return 0;
}
