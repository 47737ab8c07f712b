/* local.c - the local bootstrap method against the local launcher's
 * server (libjob/bootstrap/localjob.h): ranks forked by this test, the
 * server in a thread of it.  Identity and layout, exchanges, the sparse
 * rounds, a second init, and the failures: a rank that exits or is killed
 * before a round, one that comes late (timeout), one in another round,
 * an abort, a job past its time. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "bootstrap.h"
#include "ddp_internal.h"
#include "localjob.h"

static char err[512];

/* Run a job of size ranks on nnodes nodes (layout: NULL for blocks) with
 * fn; every rank's wait status into st.  Returns the job's exit code. */
static int run (int size, int nnodes, const int *layout, double timeout,
                ddpi_ljob_fn fn, void *arg, int *st)
{
    struct ddpi_ljob_opts o = { size, nnodes, layout, timeout, "local.t" };
    struct ddpi_ljob *j = ddpi_ljob_start (&o, fn, arg, err, sizeof (err));

    if (!j) {
        diag ("ddpi_ljob_start: %s", err);
        return -1;
    }
    return ddpi_ljob_wait (j, st, err, sizeof (err));
}

/* ---- identity, exchange, sparse rounds ------------------------------- */

struct expect {
    const int *node_of;     /* layout the job was given */
    int nnodes;
};

static void check_identity (struct bootstrap *b, const struct expect *e)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    int me = atoi (getenv ("RANK")), n = 0, *ranks = NULL, cnt = 0;

    RANK_CHECK (strcmp (in->method, "local") == 0, "method %s", in->method);
    RANK_CHECK (in->rank == me && in->size == 4, "rank %d/%d", in->rank,
                in->size);
    RANK_CHECK (in->num_nodes == e->nnodes && in->node_rank == e->node_of[me],
                "node %d/%d", in->node_rank, in->num_nodes);
    for (int r = 0; r < in->size; r++)
        if (e->node_of[r] == e->node_of[me]) {
            RANK_CHECK (n < in->local_size && in->local_ranks[n] == r,
                        "local rank %d is %d", n, r);
            if (r == me)
                RANK_CHECK (in->local_rank == n, "local rank %d",
                            in->local_rank);
            n++;
        }
    RANK_CHECK (n == in->local_size, "local size %d", in->local_size);
    for (int node = 0; node < e->nnodes; node++) {
        RANK_CHECK (bootstrap_node_ranks (b, node, &ranks, &cnt, err,
                                          sizeof (err)) == 0, "node_ranks: %s",
                    err);
        for (int i = 0; i < cnt; i++)
            RANK_CHECK (e->node_of[ranks[i]] == node
                        && (i == 0 || ranks[i] > ranks[i - 1]),
                        "node %d lists rank %d", node, ranks[i]);
        free (ranks);
    }
    int layout[4] = { -2, -2, -2, -2 };
    RANK_CHECK (bootstrap_layout (b, layout, err, sizeof (err)) == 0,
                "layout: %s", err);
    for (int r = 0; r < in->size; r++)
        RANK_CHECK (layout[r] == e->node_of[r], "layout: rank %d on node %d",
                    r, layout[r]);
    RANK_CHECK (strncmp (in->job_id, "local.", 6) == 0, "job id %s",
                in->job_id);
}

static void check_exchange (struct bootstrap *b, int salt)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    size_t off[4], len[4];
    int mine[2] = { in->rank, salt };
    void *all = NULL;

    RANK_CHECK (bootstrap_exchange (b, mine, sizeof (mine), &all, off, len,
                                    err, sizeof (err)) == 0,
                "exchange: %s", err);
    for (int r = 0; all && r < in->size; r++) {
        int *v = (int *)((char *)all + off[r]);
        RANK_CHECK (len[r] == sizeof (mine) && v[0] == r && v[1] == salt,
                    "exchange: rank %d's blob", r);
    }
    free (all);
}

/* Every rank puts a local blob; each node's first rank a global one; each
 * rank reads its node's and the first ranks'. */
static void check_sparse (struct bootstrap *b)
{
    const struct bootstrap_info *in = bootstrap_info (b);
    int me = in->rank, lead, *ranks, n, v;
    int local = 100 + me, global = 1000 + me;
    void *blob;
    size_t len;

    RANK_CHECK (bootstrap_put (b, BOOTSTRAP_LOCAL, &local, sizeof (int), err,
                               sizeof (err)) == 0, "put local: %s", err);
    if (in->local_rank == 0)
        RANK_CHECK (bootstrap_put (b, BOOTSTRAP_GLOBAL, &global, sizeof (int),
                                   err, sizeof (err)) == 0,
                    "put global: %s", err);
    RANK_CHECK (bootstrap_sync (b, err, sizeof (err)) == 0, "sync: %s", err);
    for (int i = 0; i < in->local_size; i++) {
        int r = in->local_ranks[i];
        RANK_CHECK (bootstrap_get (b, r, BOOTSTRAP_LOCAL, &blob, &len, err,
                                   sizeof (err)) == 0 && len == sizeof (int),
                    "get local of %d: %s", r, err);
        memcpy (&v, blob, sizeof (int));
        RANK_CHECK (v == 100 + r, "local blob of %d is %d", r, v);
        free (blob);
    }
    for (int node = 0; node < in->num_nodes; node++) {
        if (bootstrap_node_ranks (b, node, &ranks, &n, err, sizeof (err)) < 0)
            continue;
        lead = ranks[0];
        RANK_CHECK (bootstrap_get (b, lead, BOOTSTRAP_GLOBAL, &blob, &len, err,
                                   sizeof (err)) == 0, "get global of %d: %s",
                    lead, err);
        memcpy (&v, blob, sizeof (int));
        RANK_CHECK (v == 1000 + lead, "global blob of %d", lead);
        free (blob);
        if (n > 1)
            RANK_CHECK (bootstrap_get (b, ranks[1], BOOTSTRAP_GLOBAL, &blob,
                                       &len, err, sizeof (err))
                            == DDP_EMISMATCH,
                        "rank %d put no global blob", ranks[1]);
        for (int r = 0; r < in->size; r++)
            if (!ddpi_rank_in (in->local_ranks, in->local_size, r))
                RANK_CHECK (bootstrap_get (b, r, BOOTSTRAP_LOCAL, &blob, &len,
                                           err, sizeof (err)) == DDP_EINVAL,
                            "local blob of %d (another node): EINVAL", r);
        free (ranks);
    }
}

static int rank_full (int rank, void *arg)
{
    struct bootstrap *b = NULL;

    (void)rank;
    for (int gen = 0; gen < 2; gen++) {
        if (bootstrap_create (&b, 20.0, err, sizeof (err)) < 0) {
            fprintf (stderr, "rank %d: create: %s\n", rank, err);
            return 1;
        }
        check_identity (b, arg);
        check_exchange (b, gen);
        check_sparse (b);
        RANK_CHECK (bootstrap_fence (b, err, sizeof (err)) == 0, "fence: %s",
                    err);
        check_exchange (b, 10 + gen);
        bootstrap_destroy (b);
    }
    return tap_rank_fails ? 1 : 0;
}

static void layouts (void)
{
    static const int blocks[4] = { 0, 0, 1, 1 }, cyclic[4] = { 0, 1, 0, 1 },
                     uneven[4] = { 0, 0, 0, 1 }, one[4] = { 0, 0, 0, 0 };
    struct expect e;
    int st[4];

    e = (struct expect){ blocks, 2 };
    is_int (run (4, 2, NULL, 60, rank_full, &e, st), 0,
            "4 ranks on 2 nodes (blocks): identity, exchanges, sparse "
            "rounds, a second init");
    e = (struct expect){ cyclic, 2 };
    is_int (run (4, 2, cyclic, 60, rank_full, &e, st), 0,
            "the same, nodes in turn (0,1,0,1)");
    e = (struct expect){ uneven, 2 };
    is_int (run (4, 2, uneven, 60, rank_full, &e, st), 0,
            "the same, 3 ranks and 1 (0,0,0,1)");
    e = (struct expect){ one, 1 };
    is_int (run (4, 1, NULL, 60, rank_full, &e, st), 0,
            "the same, 4 ranks on 1 node");
}

/* ---- failures ----------------------------------------------------------- */

struct fail_case {
    int victim;             /* the rank that misbehaves */
    const char *how;        /* "exit", "late", "fence", "abort", "hang" */
    double timeout;         /* the others' bound */
};

/* The others: one exchange; its code and message go to a pipe-less place:
 * the exit status says which code (0 for none, 10 + -code), stderr the
 * message. */
static int rank_fail (int rank, void *arg)
{
    const struct fail_case *c = arg;
    struct bootstrap *b = NULL;
    size_t off[4], len[4];
    void *all = NULL;
    double t0;
    int rc;

    if (rank == c->victim && strcmp (c->how, "exit") == 0)
        return 3;
    if (rank == c->victim && strcmp (c->how, "late") == 0)
        sleep (3);
    if (bootstrap_create (&b, c->timeout, err, sizeof (err)) < 0)
        return 2;
    if (rank == c->victim && strcmp (c->how, "fence") == 0)
        rc = bootstrap_fence (b, err, sizeof (err));
    else if (rank == c->victim && strcmp (c->how, "abort") == 0) {
        bootstrap_abort (b, 7, "local.t: on purpose");
        return 7;
    }
    else if (rank == c->victim && strcmp (c->how, "hang") == 0) {
        pause ();
        return 0;
    }
    else {
        t0 = ddpi_now ();
        rc = bootstrap_exchange (b, &rank, sizeof (rank), &all, off, len,
                                 err, sizeof (err));
        t0 = ddpi_now () - t0;
        if (t0 > c->timeout + 10)
            fprintf (stderr, "rank %d: took %.1f s\n", rank, t0);
        free (all);
    }
    fprintf (stderr, "rank %d: %d: %s\n", rank, rc, rc ? err : "");
    /* Tell the parent what we saw through a file named for us. */
    char path[64];
    snprintf (path, sizeof (path), "local-t.%d.%d", (int)getppid (), rank);
    FILE *f = fopen (path, "w");
    if (f) {
        fprintf (f, "%d %s\n", rc, rc ? err : "");
        fclose (f);
    }
    bootstrap_destroy (b);
    return rc == 0 ? 0 : 10 - rc;
}

/* What rank r of the last job saw: its code, its message in msg. */
static int seen (int r, char *msg, size_t len)
{
    char path[64], line[700] = "";
    int rc = 1;
    FILE *f;

    snprintf (path, sizeof (path), "local-t.%d.%d", (int)getpid (), r);
    msg[0] = '\0';
    if (!(f = fopen (path, "r")))
        return 1;
    if (fgets (line, sizeof (line), f)) {
        char *sp = strchr (line, ' ');
        rc = atoi (line);
        snprintf (msg, len, "%s", sp ? sp + 1 : "");
        msg[strcspn (msg, "\n")] = '\0';
    }
    fclose (f);
    unlink (path);
    return rc;
}

/* Every rank but the victim saw code with a message holding want. */
static bool others_saw (int size, int victim, int code, const char *want)
{
    char msg[700];
    bool good = true;

    for (int r = 0; r < size; r++) {
        int rc;
        if (r == victim)
            continue;
        rc = seen (r, msg, sizeof (msg));
        if (rc != code || !strstr (msg, want)) {
            diag ("rank %d: %d: %s", r, rc, msg);
            good = false;
        }
    }
    return good;
}

static void failures (void)
{
    struct fail_case c;
    double t0;
    char msg[700];
    int st[4], rc;

    c = (struct fail_case){ 2, "exit", 30 };
    t0 = ddpi_now ();
    rc = run (4, 2, NULL, 60, rank_fail, &c, st);
    ok (rc == 3 && WEXITSTATUS (st[2]) == 3, "rank 2 exits 3 before init: "
        "the job's code is 3 (%s)", err);
    ok (others_saw (4, 2, DDP_EPEER, "rank 2 never reached ddp_init: rank 2 "
                    "exited with status 3"),
        "the others: EPEER naming rank 2 and how it ended");
    ok (ddpi_now () - t0 < 20, "at once, not after their 30 s (%.1f s)",
        ddpi_now () - t0);

    c = (struct fail_case){ 1, "late", 0.5 };
    rc = run (3, 2, NULL, 60, rank_fail, &c, st);
    ok (others_saw (3, 1, DDP_ETIMEDOUT, "rank 1 did not reach ddp_init "
                    "within 0.5 s (DDP_TIMEOUT): rank 1 still running"),
        "rank 1 comes 3 s late: the others time out naming it");
    ok (seen (1, msg, sizeof (msg)) == DDP_ETIMEDOUT
        && strstr (msg, "rank 1 did not reach") != NULL,
        "and the late rank gets the same failure when it comes: %s", msg);

    c = (struct fail_case){ 0, "fence", 20 };
    rc = run (3, 1, NULL, 60, rank_fail, &c, st);
    ok (others_saw (3, -1, DDP_EMISMATCH, "the ranks do not make the same "
                    "set-up calls"), "rank 0 fences while the others "
                    "exchange: EMISMATCH everywhere");

    c = (struct fail_case){ 1, "abort", 30 };
    t0 = ddpi_now ();
    rc = run (4, 2, NULL, 60, rank_fail, &c, st);
    ok (rc == 7 && strstr (err, "rank 1 aborted the job with status 7"),
        "rank 1 aborts with 7: the job's code is 7 (%s)", err);
    ok (WIFSIGNALED (st[0]) && WTERMSIG (st[0]) == SIGKILL
        && WIFSIGNALED (st[3]), "the others were killed");
    ok (ddpi_now () - t0 < 20, "at once (%.1f s)", ddpi_now () - t0);
    for (int r = 0; r < 4; r++)
        seen (r, msg, sizeof (msg));

    c = (struct fail_case){ 3, "hang", 60 };
    t0 = ddpi_now ();
    rc = run (4, 2, NULL, 1.0, rank_fail, &c, st);
    ok (rc == 124 && strstr (err, "did not end within 1 s"),
        "a job past its time: 124 (%s)", err);
    ok (WIFSIGNALED (st[3]) && WIFSIGNALED (st[0]), "every rank killed");
    ok (ddpi_now () - t0 < 15, "soon after its time (%.1f s)",
        ddpi_now () - t0);
    for (int r = 0; r < 4; r++)
        seen (r, msg, sizeof (msg));
}

/* The others wait in an exchange; the test kills rank 1 from outside. */
static int rank_wait (int rank, void *arg)
{
    struct fail_case c = { -1, "", 30 };

    (void)arg;
    if (rank == 1) {
        pause ();
        return 0;
    }
    return rank_fail (rank, &c);
}

static void killed (void)
{
    struct ddpi_ljob_opts o = { 4, 2, NULL, 60, "local.t" };
    struct ddpi_ljob *j = ddpi_ljob_start (&o, rank_wait, NULL, err,
                                           sizeof (err));
    int st[4], rc;

    if (!j) {
        ok (0, "start: %s", err);
        return;
    }
    ok (ddpi_ljob_pid (j, 1) > 0 && ddpi_ljob_pid (j, 4) == -1, "pids");
    usleep (300000);
    is_int (ddpi_ljob_kill (j, 1, SIGKILL), 0, "kill rank 1");
    rc = ddpi_ljob_wait (j, st, err, sizeof (err));
    ok (rc == 128 + SIGKILL && strstr (err, "rank 1 killed by signal 9"),
        "the job's code says rank 1 was killed (%s)", err);
    ok (others_saw (4, 1, DDP_EPEER, "rank 1 killed by signal 9"),
        "the others: EPEER naming rank 1, killed");
}

static void bad_options (void)
{
    struct ddpi_ljob_opts o = { 4, 5, NULL, 60, "local.t" };
    static const int hole[4] = { 0, 0, 2, 2 };

    ok (!ddpi_ljob_start (&o, rank_wait, NULL, err, sizeof (err))
        && strstr (err, "5 nodes"), "5 nodes for 4 ranks: %s", err);
    o = (struct ddpi_ljob_opts){ 0, 1, NULL, 60, NULL };
    ok (!ddpi_ljob_start (&o, rank_wait, NULL, err, sizeof (err)),
        "0 ranks: %s", err);
    o = (struct ddpi_ljob_opts){ 4, 3, hole, 60, NULL };
    ok (!ddpi_ljob_start (&o, rank_wait, NULL, err, sizeof (err)),
        "a layout with an empty node: %s", err);
    o = (struct ddpi_ljob_opts){ 4, 2, NULL, 0, NULL };
    ok (!ddpi_ljob_start (&o, rank_wait, NULL, err, sizeof (err)),
        "no timeout: %s", err);
}

int main (void)
{
    plan (NO_PLAN);
    signal (SIGPIPE, SIG_IGN);
    unsetenv ("DDP_BOOTSTRAP");
    layouts ();
    failures ();
    killed ();
    bad_options ();
    done_testing ();
    return 0;
}
