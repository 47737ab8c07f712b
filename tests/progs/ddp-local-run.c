/* ddp-local-run.c - run a program as the ranks of one job on this machine,
 * grouped into simulated nodes, without Slurm, PMIx or root: libddp in
 * each rank bootstraps through the local method (DDP_LOCAL_FD), and the
 * host backend runs shared memory within a simulated node and TCP between
 * the nodes' leaders, as on a cluster.  For tests (tests/t0245-*.t).
 *
 * Usage: ddp-local-run -n RANKS [-N NODES] [-m NODE,NODE,...]
 *                      [-t SECONDS] [-k RANK@SECONDS]... -- PROGRAM [ARGS...]
 *   -n, --ntasks    ranks (1 to 4096)
 *   -N, --nodes     simulated nodes (default 1); ranks go to them in
 *                   consecutive blocks, the first nodes one larger
 *   -m, --map       the node of each rank instead (RANKS numbers)
 *   -t, --timeout   bound on the whole job (default 300 s): ranks still
 *                   running then are killed and the exit status is 124
 *   -k, --kill      kill -9 RANK (its process group) SECONDS after the
 *                   start, unless it ended (may be repeated)
 * Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * NODE_RANK and DDP_LOCAL_FD.  A rank that ends before the others reach a
 * bootstrap round fails that round for them at once, naming it; a rank
 * that calls ddp_abort() ends the job.  SIGINT, SIGTERM or SIGHUP kill
 * every rank.  Exit status: 0 when every rank exited 0, the ddp_abort()
 * status, 124 after the timeout, 128 + N after signal N, else the exit
 * status of the rank that failed first (128 + signal when killed), with
 * a line on stderr saying which.  Nothing is left behind: no socket file
 * (the sockets are inherited socketpairs), no process (every rank's
 * process group is killed at the end).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "localjob.h"

#define PROG "ddp-local-run"
#define MAX_KILLS 64

struct kill_at {
    int rank;
    double at;      /* seconds after the start */
    bool done;
};

struct opts {
    struct ddpi_ljob_opts job;
    int *map;
    struct kill_at kills[MAX_KILLS];
    int nkills;
    char **argv;
};

static void usage (FILE *f)
{
    fprintf (f, "Usage: %s -n RANKS [-N NODES] [-m NODE,NODE,...] "
             "[-t SECONDS] [-k RANK@SECONDS]... -- PROGRAM [ARGS...]\n"
             "Run PROGRAM as RANKS ranks of one libddp job on this machine, "
             "in NODES simulated nodes.\n", PROG);
}

static int bad (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* Say what is wrong with the command line; returns -1. */
static int bad (const char *fmt, ...)
{
    va_list ap;

    fprintf (stderr, "%s: ", PROG);
    va_start (ap, fmt);
    vfprintf (stderr, fmt, ap);
    va_end (ap);
    fputc ('\n', stderr);
    usage (stderr);
    return -1;
}

/* "RANK@SECONDS" */
static int parse_kill (struct opts *o, const char *s)
{
    const char *at = strchr (s, '@');
    char rank[16];
    long r;
    double sec;

    if (o->nkills == MAX_KILLS)
        return bad ("too many --kill (at most %d): %s", MAX_KILLS, s);
    if (!at || at - s >= (long)sizeof (rank))
        return bad ("--kill '%s': give RANK@SECONDS", s);
    memcpy (rank, s, (size_t)(at - s));
    rank[at - s] = '\0';
    if (ddpi_parse_long (rank, 0, 4095, &r) < 0
        || (strcmp (at + 1, "0") != 0
            && ddpi_parse_seconds (at + 1, DDPI_TIMEOUT_MAX, &sec) < 0))
        return bad ("--kill '%s': give RANK@SECONDS (a rank, a number of "
                    "seconds)", s);
    if (strcmp (at + 1, "0") == 0)
        sec = 0;
    o->kills[o->nkills++] = (struct kill_at){ (int)r, sec, false };
    return 0;
}

/* "0,0,1": the node of each rank; sets the node count. */
static int parse_map (struct opts *o, const char *s)
{
    int n = 1, i = 0, max = 0;
    const char *p;
    char tok[16];
    long v;

    for (p = s; *p; p++)
        n += *p == ',';
    free (o->map);
    if (!(o->map = calloc ((size_t)n, sizeof (int))))
        return bad ("out of memory");
    for (p = s; i < n; i++) {
        size_t len = strcspn (p, ",");
        if (len == 0 || len >= sizeof (tok))
            return bad ("--map '%s': give a node number per rank", s);
        memcpy (tok, p, len);
        tok[len] = '\0';
        if (ddpi_parse_long (tok, 0, 4095, &v) < 0)
            return bad ("--map '%s': give a node number per rank", s);
        o->map[i] = (int)v;
        max = o->map[i] > max ? o->map[i] : max;
        p += len + (p[len] == ',');
    }
    o->job.size = n;
    o->job.nnodes = max + 1;
    for (v = 0; v <= max; v++) {
        for (i = 0; i < n && o->map[i] != v; i++)
            ;
        if (i == n)
            return bad ("--map '%s': node %ld has no rank (number the nodes "
                        "0, 1, ... without a gap)", s, v);
    }
    return 0;
}

static int parse (struct opts *o, int argc, char **argv)
{
    static const struct option lopts[] = {
        { "ntasks", required_argument, NULL, 'n' },
        { "nodes", required_argument, NULL, 'N' },
        { "map", required_argument, NULL, 'm' },
        { "timeout", required_argument, NULL, 't' },
        { "kill", required_argument, NULL, 'k' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    long n = 0, nodes = 0;
    int c, i;

    o->job.timeout_s = 300;
    o->job.name = PROG;
    while ((c = getopt_long (argc, argv, "+n:N:m:t:k:h", lopts, NULL)) != -1) {
        switch (c) {
        case 'n':
        case 'N':
            if (ddpi_parse_long (optarg, 1, 4096, c == 'n' ? &n : &nodes) < 0)
                return bad ("-%c '%s': give 1 to 4096 %s", c, optarg,
                            c == 'n' ? "ranks" : "nodes");
            break;
        case 'm':
        case 'k':
            if ((c == 'm' ? parse_map (o, optarg) : parse_kill (o, optarg)) < 0)
                return -1;
            break;
        case 't':
            if (ddpi_parse_seconds (optarg, DDPI_TIMEOUT_MAX,
                                    &o->job.timeout_s) < 0)
                return bad ("--timeout '%s': give a positive number of "
                            "seconds", optarg);
            break;
        case 'h':
            usage (stdout);
            exit (0);
        default:
            usage (stderr);
            return -1;
        }
    }
    if (optind >= argc)
        return bad ("no program to run");
    o->argv = argv + optind;
    if (o->map) {
        if ((n && n != o->job.size) || (nodes && nodes != o->job.nnodes))
            return bad ("--map gives the ranks and nodes: -n and -N must "
                        "agree with it");
        o->job.node_of = o->map;
    }
    else {
        if (!n)
            return bad ("how many ranks? give -n RANKS");
        o->job.size = (int)n;
        o->job.nnodes = nodes ? (int)nodes : 1;
        if (o->job.nnodes > o->job.size)
            return bad ("-N %d: more nodes than the %d ranks",
                        o->job.nnodes, o->job.size);
    }
    for (i = 0; i < o->nkills; i++)
        if (o->kills[i].rank >= o->job.size)
            return bad ("--kill %d@...: the job has ranks 0 to %d",
                        o->kills[i].rank, o->job.size - 1);
    return 0;
}

/* In each rank: the program. */
static int rank_exec (int rank, void *arg)
{
    char **argv = arg;

    (void)rank;
    execvp (argv[0], argv);
    fprintf (stderr, "%s: cannot run %s: %s\n", PROG, argv[0],
             strerror (errno));
    return 127;
}

/* Until every rank ended: the kills on schedule, and the signals. */
static int watch (struct opts *o, struct ddpi_ljob *j, const sigset_t *sigs,
                  double t0)
{
    struct timespec tick = { 0, 20 * 1000 * 1000 };
    int i, sig;

    while (ddpi_ljob_running (j) > 0) {
        if ((sig = sigtimedwait (sigs, NULL, &tick)) > 0) {
            fprintf (stderr, "%s: %s: killing every rank\n", PROG,
                     strsignal (sig));
            for (i = 0; i < o->job.size; i++)
                ddpi_ljob_kill (j, i, SIGKILL);
            return 128 + sig;
        }
        for (i = 0; i < o->nkills; i++)
            if (!o->kills[i].done && ddpi_now () - t0 >= o->kills[i].at) {
                o->kills[i].done = true;
                ddpi_ljob_kill (j, o->kills[i].rank, SIGKILL);
            }
    }
    return 0;
}

int main (int argc, char **argv)
{
    struct opts o = { 0 };
    struct ddpi_ljob *j;
    sigset_t sigs;
    char err[512] = "";
    double t0;
    int rc, by_signal;

    if (parse (&o, argc, argv) < 0) {
        free (o.map);
        return 2;
    }
    sigemptyset (&sigs);
    sigaddset (&sigs, SIGINT);
    sigaddset (&sigs, SIGTERM);
    sigaddset (&sigs, SIGHUP);
    sigprocmask (SIG_BLOCK, &sigs, NULL);
    t0 = ddpi_now ();
    if (!(j = ddpi_ljob_start (&o.job, rank_exec, o.argv, err,
                               sizeof (err)))) {
        fprintf (stderr, "%s: %s\n", PROG, err);
        free (o.map);
        return 2;
    }
    by_signal = watch (&o, j, &sigs, t0);
    rc = ddpi_ljob_wait (j, NULL, err, sizeof (err));
    if (by_signal)
        rc = by_signal;
    else if (rc != 0)
        fprintf (stderr, "%s: %s\n", PROG, err);
    free (o.map);
    return rc;
}
