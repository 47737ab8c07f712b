/* ddp_members.c - groups made by their members only
 * (ddp_comm_create_group, ddp.h) checked against what the ranks know.
 *
 * The members' all-gather is a directory every node sees (files written
 * whole by rename, read by polling, each wait bounded), or a group the
 * members already share.
 *
 * Usage:
 *   ddp_members check DIR    every check below; one line per rank
 *                            "ddp_members rank R/W: N checks, F failed",
 *                            exit 1 when any failed
 *   ddp_members absent DIR   world ranks 0 and 1 are the members; rank 1
 *                            never calls: rank 0 prints "rank 0: create
 *                            failed after S s: MESSAGE" (its all-gather
 *                            gives up after 3 s)
 *   ddp_members kill DIR     every rank in one group made by the members,
 *                            in descending order; the last world rank is
 *                            killed (SIGKILL) after 20 all-reduces on it:
 *                            the others print "rank R: call 20 failed
 *                            after S s: MESSAGE"
 */
#include <errno.h>
#include <signal.h>
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

/* ---- an all-gather through files ----------------------------------------- */

struct files {
    const char *dir, *tag;  /* files DIR/TAG.CALL.WORLDRANK */
    const int *world;       /* the members' world ranks, in list order */
    int n;
    unsigned calls;         /* calls so far */
    bool reversed;          /* a wrong all-gather: the places reversed */
    double bound;           /* seconds to wait for a member's file */
};

static int put_file (const struct files *f, unsigned k, const void *mine,
                     size_t len)
{
    char path[512], tmp[520];
    FILE *fp;

    snprintf (path, sizeof (path), "%s/%s.%u.%d", f->dir, f->tag, k, rank);
    snprintf (tmp, sizeof (tmp), "%s.tmp", path);
    if (!(fp = fopen (tmp, "w")))
        return -1;
    if (fwrite (mine, 1, len, fp) != len) {
        fclose (fp);
        return -1;
    }
    if (fclose (fp) != 0 || rename (tmp, path) != 0)
        return -1;
    return 0;
}

static int get_file (const struct files *f, unsigned k, int w, void *out,
                     size_t len)
{
    char path[512];
    double end = now () + f->bound;

    snprintf (path, sizeof (path), "%s/%s.%u.%d", f->dir, f->tag, k, w);
    for (;;) {
        FILE *fp = fopen (path, "r");

        if (fp) {
            size_t got = fread (out, 1, len, fp);
            fclose (fp);
            return got == len ? 0 : -1;
        }
        if (errno != ENOENT || now () > end)
            return -2;
        usleep (2000);
    }
}

static int file_allgather (void *arg, const void *mine, void *all, size_t len)
{
    struct files *f = arg;
    unsigned k = f->calls++;

    if (put_file (f, k, mine, len) < 0)
        return -1;
    for (int g = 0; g < f->n; g++) {
        int at = f->reversed ? f->n - 1 - g : g;
        int rc = get_file (f, k, f->world[g], (char *)all + (size_t)at * len,
                           len);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The world ranks of parent's ranks r[0..n-1] into w. */
static void world_of (ddp_comm_t *parent, const int *r, int n, int *w)
{
    for (int i = 0; i < n; i++)
        w[i] = ddp_comm_world_rank (parent, r[i]);
}

/* Make the group of parent's ranks r[0..n-1] through files tagged tag:
 * returns ddp_comm_create_group's code, *c the group. */
static int create (ddp_comm_t *parent, const int *r, int n, const char *dir,
                   const char *tag, bool reversed, ddp_comm_t **c,
                   unsigned *calls)
{
    int w[64];
    struct files f = { .dir = dir, .tag = tag, .world = w, .n = n,
                       .reversed = reversed, .bound = 30 };
    int rc;

    world_of (parent, r, n, w);
    rc = ddp_comm_create_group (parent, r, n, file_allgather, &f, c);
    if (calls)
        *calls = f.calls;
    return rc;
}

/* ---- what a group must do ------------------------------------------------ */

/* Collectives on c, whose rank g is world rank w[g] (n of them). */
static void check_group (ddp_comm_t *c, const int *w, int n, const char *what)
{
    int64_t v[2], sum[2], x, all[64], expect = 0;

    CHECK (c != NULL, "%s: no group", what);
    if (!c)
        return;
    CHECK (ddp_comm_size (c) == n, "%s: size %d, expected %d", what,
           ddp_comm_size (c), n);
    for (int g = 0; g < n; g++) {
        CHECK (ddp_comm_world_rank (c, g) == w[g], "%s: group rank %d is "
               "world rank %d, expected %d", what, g,
               ddp_comm_world_rank (c, g), w[g]);
        if (w[g] == rank)
            CHECK (ddp_comm_rank (c) == g, "%s: this rank is %d, expected "
                   "%d", what, ddp_comm_rank (c), g);
        expect += w[g] + 1;
    }
    v[0] = rank + 1;
    v[1] = 1;
    OK (ddp_comm_allreduce (c, v, sum, 2, DDP_INT64, DDP_SUM));
    CHECK (sum[0] == expect && sum[1] == n, "%s: allreduce %lld %lld, "
           "expected %lld %d", what, (long long)sum[0], (long long)sum[1],
           (long long)expect, n);
    x = ddp_comm_rank (c) == 0 ? rank : -1;
    OK (ddp_comm_bcast (c, &x, 1, DDP_INT64, 0));
    CHECK (x == w[0], "%s: bcast from group rank 0 gave %lld", what,
           (long long)x);
    x = rank;
    OK (ddp_comm_allgather (c, &x, all, 1, DDP_INT64));
    for (int g = 0; g < n; g++)
        CHECK (all[g] == w[g], "%s: allgather [%d] = %lld", what, g,
               (long long)all[g]);
    OK (ddp_comm_barrier (c));
}

/* ---- the checks ----------------------------------------------------------- */

/* Arguments that leave this rank out: DDP_EINVAL before any all-gather. */
static void check_local_errors (const char *dir)
{
    int other[1] = { (rank + 1) % size }, twice[2] = { rank, rank };
    int none[1] = { size };
    ddp_comm_t *c = NULL;
    unsigned calls = 9;

    if (size > 1) {
        CHECK (create (NULL, other, 1, dir, "x", false, &c, &calls)
                   == DDP_EINVAL && !c && calls == 0,
               "a list without this rank: %s (calls %u)", ddp_last_error (),
               calls);
        CHECK (strstr (ddp_last_error (), "not in ranks") != NULL,
               "message: %s", ddp_last_error ());
    }
    if (size > 1)
        CHECK (ddp_comm_create_group (NULL, twice, 2, file_allgather, NULL,
                                      &c) == DDP_EINVAL
                   && strstr (ddp_last_error (), "listed twice"),
               "a rank twice: %s", ddp_last_error ());
    CHECK (ddp_comm_create_group (NULL, none, 1, file_allgather, NULL, &c)
               == DDP_EINVAL && strstr (ddp_last_error (), "not a rank"),
           "a rank out of range: %s", ddp_last_error ());
    CHECK (ddp_comm_create_group (NULL, &rank, 1, NULL, NULL, &c)
               == DDP_EINVAL && strstr (ddp_last_error (), "allgather is"),
           "no all-gather: %s", ddp_last_error ());
    CHECK (ddp_comm_create_group (NULL, &rank, 0, file_allgather, NULL, &c)
               == DDP_EINVAL && !c, "n = 0: %s", ddp_last_error ());
}

/* A group of this rank alone. */
static void check_alone (const char *dir)
{
    char tag[32];
    ddp_comm_t *c = NULL;

    snprintf (tag, sizeof (tag), "one.%d", rank);
    OK (create (NULL, &rank, 1, dir, tag, false, &c, NULL));
    check_group (c, &rank, 1, "alone");
    OK (ddp_comm_free (&c));
}

/* Even and odd world ranks, each half in descending order, made by each
 * half alone: the odd ranks make no call of libddp until the even half
 * has made and used its group (a file says so), so the even half's
 * creation cannot have needed them. */
static void check_halves (const char *dir)
{
    int r[64], n = 0, done = 1;
    ddp_comm_t *c = NULL;
    struct files f = { .dir = dir, .tag = "even-done", .world = &done,
                       .n = 1, .bound = 60 };
    char buf[1];

    for (int w = size - 1; w >= 0; w--)
        if (w % 2 == rank % 2)
            r[n++] = w;
    if (rank % 2)
        CHECK (get_file (&f, 0, 0, buf, 1) == 0, "the even half's group was "
               "not made within 60 s");
    OK (create (NULL, r, n, dir, rank % 2 ? "odd" : "even", false, &c, NULL));
    check_group (c, r, n, rank % 2 ? "odd half" : "even half");
    if (rank == 0)
        CHECK (put_file (&f, 0, "y", 1) == 0, "writing even-done");
    OK (ddp_comm_free (&c));
}

/* An all-gather over a group the members share, whose rank p is group
 * rank n - 1 - p of the group being made. */
static int group_allgather (void *arg, const void *mine, void *all,
                            size_t len)
{
    ddp_comm_t *shared = arg;
    int n = ddp_comm_size (shared), rc;
    char *tmp = malloc ((size_t)n * len);

    if (!tmp)
        return -1;
    if ((rc = ddp_comm_allgather (shared, mine, tmp, len, DDP_UINT8)) == 0)
        for (int p = 0; p < n; p++)
            memcpy ((char *)all + (size_t)(n - 1 - p) * len,
                    tmp + (size_t)p * len, len);
    free (tmp);
    return rc;
}

/* Inside a split group (by parity): its first and last rank through
 * files, and all its ranks, reversed, through its own all-gather. */
static void check_nested (const char *dir)
{
    ddp_comm_t *parity = NULL, *ends = NULL, *rev = NULL;
    int pr[2], w[64], r[64], n;

    OK (ddp_comm_split (NULL, rank % 2, 0, &parity));
    if (!parity)
        return;
    n = ddp_comm_size (parity);
    pr[0] = 0;
    pr[1] = n - 1;
    if (n > 1 && (ddp_comm_rank (parity) == 0
                  || ddp_comm_rank (parity) == n - 1)) {
        OK (create (parity, pr, 2, dir, rank % 2 ? "ends1" : "ends0", false,
                    &ends, NULL));
        world_of (parity, pr, 2, w);
        check_group (ends, w, 2, "a parity group's ends");
        OK (ddp_comm_free (&ends));
    }
    for (int i = 0; i < n; i++)
        r[i] = n - 1 - i;
    OK (ddp_comm_create_group (parity, r, n, group_allgather, parity, &rev));
    world_of (parity, r, n, w);
    check_group (rev, w, n, "a parity group reversed, through its own "
                 "all-gather");
    OK (ddp_comm_free (&rev));
    OK (ddp_comm_free (&parity));
}

/* World ranks 0 and 1 disagree: on the list's order, on the all-gather's
 * order, on newcomm: both fail the same way. */
static void check_disagree (const char *dir)
{
    int mine[2] = { 0, 1 }, flipped[2] = { 1, 0 }, both[2] = { 0, 1 };
    ddp_comm_t *c = NULL;
    int rc;

    if (size < 2 || rank > 1)
        return;
    rc = create (NULL, rank == 0 ? mine : flipped, 2, dir, "order", false, &c,
                 NULL);
    CHECK (rc == DDP_EMISMATCH && !c && strstr (ddp_last_error (),
                                                "listed other ranks"),
           "lists in different orders: %d %s", rc, ddp_last_error ());
    rc = create (NULL, both, 2, dir, "places", true, &c, NULL);
    CHECK (rc == DDP_EMISMATCH && !c && strstr (ddp_last_error (),
                                                "group rank order"),
           "an all-gather out of order: %d %s", rc, ddp_last_error ());
    {
        int w[2] = { 0, 1 };
        struct files f = { .dir = dir, .tag = "null", .world = w, .n = 2,
                           .bound = 30 };
        rc = ddp_comm_create_group (NULL, both, 2, file_allgather, &f,
                                    rank == 1 ? NULL : &c);
        CHECK (rc == DDP_EINVAL && !c && strstr (ddp_last_error (),
                                                 "world rank 1) passed "
                                                 "newcomm NULL"),
               "newcomm NULL on rank 1: %d %s", rc, ddp_last_error ());
    }
}

static void check_all (const char *dir)
{
    int64_t x = 1, sum = 0;

    check_local_errors (dir);
    check_alone (dir);
    check_halves (dir);
    check_nested (dir);
    check_disagree (dir);
    OK (ddp_allreduce (&x, &sum, 1, DDP_INT64, DDP_SUM));
    CHECK (sum == size, "the world after: %lld", (long long)sum);
}

/* Rank 1 of members {0, 1} never comes. */
static int absent (const char *dir)
{
    int r[2] = { 0, 1 };
    ddp_comm_t *c = NULL;
    double t0 = now ();
    int rc;

    if (rank == 0) {
        struct files f = { .dir = dir, .tag = "absent", .world = r, .n = 2,
                           .bound = 3 };
        rc = ddp_comm_create_group (NULL, r, 2, file_allgather, &f, &c);
        printf ("rank 0: create %s after %.1f s: %s\n",
                rc == 0 ? "succeeded" : "failed", now () - t0,
                rc == 0 ? "" : ddp_last_error ());
        fflush (stdout);
        return rc == DDP_EUSER ? 0 : 1;
    }
    return 0;
}

/* The last world rank dies in a group of every rank. */
static int kill_one (const char *dir)
{
    int r[64];
    ddp_comm_t *c = NULL;
    float x = 1, y;

    for (int i = 0; i < size; i++)
        r[i] = size - 1 - i;
    if (create (NULL, r, size, dir, "kill", false, &c, NULL) != 0) {
        printf ("rank %d: create failed: %s\n", rank, ddp_last_error ());
        return 1;
    }
    for (int i = 0; i < 50; i++) {
        double t0 = now ();

        if (i == 20 && rank == size - 1)
            kill (getpid (), SIGKILL);
        if (ddp_comm_allreduce (c, &x, &y, 1, DDP_FLOAT32, DDP_SUM) != 0) {
            printf ("rank %d: call %d failed after %.2f s: %s\n", rank, i,
                    now () - t0, ddp_last_error ());
            fflush (stdout);
            return 0;
        }
    }
    printf ("rank %d: 50 calls passed\n", rank);
    return 1;
}

int main (int argc, char **argv)
{
    int rc;

    if (argc != 3 || (strcmp (argv[1], "check") && strcmp (argv[1], "absent")
                      && strcmp (argv[1], "kill"))) {
        fprintf (stderr, "usage: ddp_members check|absent|kill DIR\n");
        return 2;
    }
    if ((rc = ddp_init ()) != 0) {
        fprintf (stderr, "ddp_init: %s\n", ddp_last_error ());
        return 1;
    }
    rank = ddp_rank ();
    size = ddp_world_size ();
    if (size > 64) {
        fprintf (stderr, "ddp_members: at most 64 ranks\n");
        ddp_finalize ();
        return 2;
    }
    if (!strcmp (argv[1], "absent") || !strcmp (argv[1], "kill")) {
        rc = argv[1][0] == 'a' ? absent (argv[2]) : kill_one (argv[2]);
        if (rc == 0 && argv[1][0] == 'k')
            _exit (0);      /* the world has lost a rank: no finalize */
        ddp_finalize ();
        return rc;
    }
    check_all (argv[2]);
    printf ("ddp_members rank %d/%d: %d checks, %d failed\n", rank, size,
            nchecks, nfail);
    fflush (stdout);
    ddp_finalize ();
    return nfail ? 1 : 0;
}
