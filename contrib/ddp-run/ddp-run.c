/* ddp-run.c - run a program as the ranks of one libddp (or PyTorch) job on
 * this machine, without Slurm, PMIx or root: what srun --ddp gives each
 * task of a step, on one machine (ddp-run(1) has the whole contract).
 *
 * Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * NODE_RANK, NNODES, MASTER_ADDR, MASTER_PORT, DDP_BACKEND,
 * DDP_RESTART_COUNT and, when bound, one GPU in CUDA_VISIBLE_DEVICES;
 * libddp bootstraps through the local launcher (DDP_LOCAL_FD, served from
 * a thread of this process: libjob/bootstrap/localjob.h).  The backend and
 * the binding are decided before anything starts (plan.h), from the GPUs
 * found on the machine (machine.h); what cannot run is refused there.
 * For tests the ranks can be spread over simulated nodes (-N, -m: shared
 * memory within one, TCP between them, as on a cluster) and killed on
 * schedule (-k).
 *
 * A rank that fails ends the job (the others get FAIL_WAIT to end by
 * themselves, then SIGTERM, then SIGKILL), as srun --ddp's
 * kill-on-bad-exit does.  SIGINT, SIGTERM and SIGHUP are passed on to
 * every rank, which are killed KILL_WAIT later or at the next one;
 * SIGUSR1 and SIGUSR2 are passed on; a signal ddp-run was started
 * ignoring stays ignored.
 *
 * Exit status: 0 when every rank exited 0; the ddp_abort() status; 124
 * after --timeout; else the status of the rank that failed first (128 + N
 * when signal N killed it: the first to end badly that libddp did not
 * report as a victim of another rank), with a line on stderr naming it
 * (with what it said before it ended: ddp_exit_reason, "raised
 * ValueError: ..."), and the victims with libddp's words; 2 when
 * nothing was started (a bad command line, a job the machine cannot run),
 * 127 from the ranks when the program cannot be run.  Messages start with
 * the name the program was called by (tests call it ddp-local-run).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "localjob.h"
#include "machine.h"
#include "plan.h"
#include "sp_port.h"

#define MAX_KILLS 64
#define MAX_RANKS 4096
/* MASTER_PORT's range: the plugin's default port_range. */
#define PORT_LO 29500
#define PORT_HI 29999
/* After a passed-on SIGINT, SIGTERM or SIGHUP: how long the ranks have
 * before they are killed (Slurm's default KillWait). */
#define KILL_WAIT 30.0
/* After a rank failed: how long the others have to end by themselves
 * (libddp ranks do at once, naming it) before they get SIGTERM, and then
 * SIGKILL as long again after. */
#define FAIL_WAIT 5.0

static const char *prog = "ddp-run";

struct kill_at {
    int rank;
    double at;      /* seconds after the start */
    bool done;
};

struct opts {
    struct ddpi_ljob_opts job;
    long ntasks, nodes;          /* 0: not given */
    int *map;                    /* --map, or the default blocks */
    enum sp_backend want;
    char want_from[64];
    bool bind, verbose;
    long port;                   /* --master-port, or 0 */
    struct kill_at kills[MAX_KILLS];
    int nkills;
    char **argv;
};

/* What each rank needs before it runs the program. */
struct rank_env {
    struct dr_plan plan;
    char **argv;
};

static void usage (FILE *f)
{
    fprintf (f,
        "Usage: %s [OPTIONS] [--] PROGRAM [ARGS...]\n"
        "Run PROGRAM as the ranks of one job on this machine, each with the\n"
        "environment srun --ddp gives a task (RANK, WORLD_SIZE, LOCAL_RANK,\n"
        "MASTER_ADDR, MASTER_PORT, DDP_BACKEND, one GPU per rank, ...).\n"
        "  -n, --ntasks RANKS        ranks (default: one per GPU)\n"
        "  -b, --backend auto|host|nccl\n"
        "                            the backend (default: DDP_BACKEND, else "
        "auto)\n"
        "      --nobind              leave every GPU visible to every rank\n"
        "  -t, --timeout SECONDS     kill the job after SECONDS (default: "
        "none)\n"
        "  -p, --master-port PORT    MASTER_PORT (default: a free one in "
        "%d-%d)\n"
        "  -v, --verbose             say what was decided, on stderr\n"
        "  -h, --help                this text\n"
        "For tests:\n"
        "  -N, --nodes NODES         simulated nodes (default 1)\n"
        "  -m, --map NODE,NODE,...   the node of each rank\n"
        "  -k, --kill RANK@SECONDS   kill -9 RANK after SECONDS (repeatable)\n"
        "See ddp-run(1).\n", prog, PORT_LO, PORT_HI);
}

static int bad (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* Say what is wrong with the command line; returns -1. */
static int bad (const char *fmt, ...)
{
    va_list ap;

    fprintf (stderr, "%s: ", prog);
    va_start (ap, fmt);
    vfprintf (stderr, fmt, ap);
    va_end (ap);
    fprintf (stderr, "\nTry '%s --help'.\n", prog);
    return -1;
}

static void say (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* A line on stderr, prefixed with the program's name. */
static void say (const char *fmt, ...)
{
    va_list ap;

    fprintf (stderr, "%s: ", prog);
    va_start (ap, fmt);
    vfprintf (stderr, fmt, ap);
    va_end (ap);
    fputc ('\n', stderr);
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
    if (ddpi_parse_long (rank, 0, MAX_RANKS - 1, &r) < 0
        || (strcmp (at + 1, "0") != 0
            && ddpi_parse_seconds (at + 1, DDPI_TIMEOUT_MAX, &sec) < 0))
        return bad ("--kill '%s': give RANK@SECONDS (a rank, a number of "
                    "seconds)", s);
    if (strcmp (at + 1, "0") == 0)
        sec = 0;
    o->kills[o->nkills++] = (struct kill_at){ (int)r, sec, false };
    return 0;
}

/* "0,0,1": the node of each rank; sets the rank and node counts. */
static int parse_map (struct opts *o, const char *s)
{
    int n = 1, i = 0, max = 0;
    const char *p;
    char tok[16];
    long v;

    for (p = s; *p; p++)
        n += *p == ',';
    if (n > MAX_RANKS)
        return bad ("--map '%.32s...': more than %d ranks", s, MAX_RANKS);
    free (o->map);
    if (!(o->map = calloc ((size_t)n, sizeof (int))))
        return bad ("out of memory");
    for (p = s; i < n; i++) {
        size_t len = strcspn (p, ",");
        if (len == 0 || len >= sizeof (tok))
            return bad ("--map '%s': give a node number per rank", s);
        memcpy (tok, p, len);
        tok[len] = '\0';
        if (ddpi_parse_long (tok, 0, MAX_RANKS - 1, &v) < 0)
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

static int parse_backend (struct opts *o, const char *s, const char *from)
{
    if (sp_backend_parse (s, &o->want) < 0 || o->want == SP_BACKEND_OFF)
        return bad ("%s '%s': give auto, host or nccl", from, s);
    snprintf (o->want_from, sizeof (o->want_from), "%s%s%s", from,
              from[0] == '-' ? " " : "=", s);
    return 0;
}

/* One option of the command line. */
static int parse_one (struct opts *o, int c)
{
    switch (c) {
    case 'n':
    case 'N':
        if (ddpi_parse_long (optarg, 1, MAX_RANKS,
                             c == 'n' ? &o->ntasks : &o->nodes) < 0)
            return bad ("-%c '%s': give 1 to %d %s", c, optarg, MAX_RANKS,
                        c == 'n' ? "ranks" : "nodes");
        return 0;
    case 'm':
        return parse_map (o, optarg);
    case 'k':
        return parse_kill (o, optarg);
    case 'b':
        return parse_backend (o, optarg, "--backend");
    case 'B':
        o->bind = false;
        return 0;
    case 'p':
        if (ddpi_parse_long (optarg, 1, 65535, &o->port) < 0)
            return bad ("--master-port '%s': give a port, 1 to 65535",
                        optarg);
        return 0;
    case 't':
        if (ddpi_parse_timeout (optarg, &o->job.timeout_s) < 0)
            return bad ("--timeout '%s': give a positive number of seconds "
                        "(or inf)", optarg);
        return 0;
    case 'v':
        o->verbose = true;
        return 0;
    case 'h':
        usage (stdout);
        exit (0);
    default:
        fprintf (stderr, "Try '%s --help'.\n", prog);
        return -1;
    }
}

/* The layout: -n, -N and --map agree; the default blocks otherwise. */
static int check_layout (struct opts *o)
{
    if (o->map) {
        if ((o->ntasks && o->ntasks != o->job.size)
            || (o->nodes && o->nodes != o->job.nnodes))
            return bad ("--map gives the ranks and nodes: -n and -N must "
                        "agree with it");
        return 0;
    }
    o->job.size = (int)o->ntasks;
    o->job.nnodes = o->nodes ? (int)o->nodes : 1;
    if (o->job.nnodes > o->job.size)
        return bad ("-N %d: more nodes than the %d ranks", o->job.nnodes,
                    o->job.size);
    if (!(o->map = calloc ((size_t)o->job.size, sizeof (int))))
        return bad ("out of memory");
    ddpi_ljob_blocks (o->job.size, o->job.nnodes, o->map);
    return 0;
}

static int parse (struct opts *o, int argc, char **argv)
{
    static const struct option lopts[] = {
        { "ntasks", required_argument, NULL, 'n' },
        { "backend", required_argument, NULL, 'b' },
        { "nobind", no_argument, NULL, 'B' },
        { "timeout", required_argument, NULL, 't' },
        { "master-port", required_argument, NULL, 'p' },
        { "verbose", no_argument, NULL, 'v' },
        { "nodes", required_argument, NULL, 'N' },
        { "map", required_argument, NULL, 'm' },
        { "kill", required_argument, NULL, 'k' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *env = getenv ("DDP_BACKEND");
    int c;

    o->job.timeout_s = DDPI_TIMEOUT_MAX;
    o->job.name = prog;
    o->bind = true;
    o->want = SP_BACKEND_AUTO;
    snprintf (o->want_from, sizeof (o->want_from), "the default (auto)");
    if (env && *env && parse_backend (o, env, "DDP_BACKEND") < 0)
        return -1;
    while ((c = getopt_long (argc, argv, "+n:b:t:p:vN:m:k:h", lopts,
                             NULL)) != -1)
        if (parse_one (o, c) < 0)
            return -1;
    if (optind >= argc)
        return bad ("no program to run");
    o->argv = argv + optind;
    return 0;
}

/* The ranks when -n is not given, then the layout and the kills. */
static int size_job (struct opts *o, const struct dr_gpus *g)
{
    char err[512];
    int i, n;

    if (!o->map && !o->ntasks) {
        if ((n = dr_plan_default_size (g, o->want, o->nodes ? (int)o->nodes
                                       : 1, err, sizeof (err))) < 0)
            return bad ("%s", err);
        if (n > MAX_RANKS)
            return bad ("one rank per GPU is %d ranks, more than %d: give "
                        "-n RANKS", n, MAX_RANKS);
        o->ntasks = n;
    }
    if (check_layout (o) < 0)
        return -1;
    for (i = 0; i < o->nkills; i++)
        if (o->kills[i].rank >= o->job.size)
            return bad ("--kill %d@...: the job has ranks 0 to %d",
                        o->kills[i].rank, o->job.size - 1);
    return 0;
}

/* MASTER_PORT: the one asked for if it is free, else a free one. */
static int master_port (const struct opts *o, const char *root)
{
    int p;

    if (o->port) {
        if (dr_port_taken (root, (unsigned)o->port) == 1) {
            say ("MASTER_PORT %ld is already in use on this machine: another "
                 "job or program listens there; give another --master-port, "
                 "or leave it out to get a free one", o->port);
            return -1;
        }
        return (int)o->port;
    }
    p = sp_port_derive ((uint32_t)getpid (), 0, PORT_LO, PORT_HI);
    if (p < 0 || (p = dr_port_pick (root, (unsigned)p, PORT_LO,
                                    PORT_HI)) < 0) {
        say ("no port for MASTER_PORT in %d-%d: %s; give one with "
             "--master-port", PORT_LO, PORT_HI, strerror (errno));
        return -1;
    }
    return p;
}

static void set_int (const char *name, long v)
{
    char buf[24];

    snprintf (buf, sizeof (buf), "%ld", v);
    setenv (name, buf, 1);
}

/* What every rank shares, set here for the ranks to inherit. */
static void set_job_env (const struct opts *o, const struct dr_plan *p,
                         int port)
{
    set_int ("NNODES", o->job.nnodes);
    setenv ("MASTER_ADDR", "127.0.0.1", 1);
    set_int ("MASTER_PORT", port);
    setenv ("DDP_BACKEND", sp_backend_name (p->backend), 1);
    setenv ("DDP_RESTART_COUNT", "0", 1);
}

/* In each rank: its GPU, then the program. */
static int rank_exec (int rank, void *arg)
{
    struct rank_env *re = arg;

    if (re->plan.gpu[rank][0])
        setenv ("CUDA_VISIBLE_DEVICES", re->plan.gpu[rank], 1);
    execvp (re->argv[0], re->argv);
    fprintf (stderr, "%s: cannot run %s: %s\n", prog, re->argv[0],
             strerror (errno));
    return 127;
}

static void signal_all (const struct opts *o, struct ddpi_ljob *j, int sig)
{
    for (int i = 0; i < o->job.size; i++)
        ddpi_ljob_kill (j, i, sig);
}

/* A signal to ddp-run: passed on to every rank.  The first SIGINT,
 * SIGTERM or SIGHUP starts KILL_WAIT; a second one kills at once. */
static void on_signal (const struct opts *o, struct ddpi_ljob *j, int sig,
                       int *stop_sig, double *stop_at)
{
    if (sig == SIGUSR1 || sig == SIGUSR2) {
        signal_all (o, j, sig);
        return;
    }
    if (*stop_sig) {
        say ("%s again: killing every rank", strsignal (sig));
        signal_all (o, j, SIGKILL);
        return;
    }
    say ("%s: passed on to every rank, which are killed if they have not "
         "ended in %g s (or at the next signal)", strsignal (sig), KILL_WAIT);
    *stop_sig = sig;
    *stop_at = ddpi_now ();
    signal_all (o, j, sig);
}

/* A failed rank ends the job, as srun --ddp's kill-on-bad-exit does:
 * SIGTERM to the others FAIL_WAIT after, SIGKILL FAIL_WAIT later.  *AT is
 * when the failure was seen, *STEP how far this went (0, 1, 2). */
static void end_failed (const struct opts *o, struct ddpi_ljob *j,
                        double *at, int *step)
{
    double now = ddpi_now ();

    if (*step == 0 && ddpi_ljob_failed (j) >= 0) {
        *at = now;
        *step = 1;
    }
    else if (*step == 1 && now - *at >= FAIL_WAIT) {
        say ("rank %d failed %g s ago: ending the %d ranks still running",
             ddpi_ljob_failed (j), FAIL_WAIT, ddpi_ljob_running (j));
        signal_all (o, j, SIGTERM);
        *step = 2;
    }
    else if (*step == 2 && now - *at >= 2 * FAIL_WAIT) {
        signal_all (o, j, SIGKILL);
        *step = 3;
    }
}

/* Until every rank ended: the signals, a failed rank, the kills on
 * schedule. */
static void watch (struct opts *o, struct ddpi_ljob *j, const sigset_t *sigs,
                   double t0)
{
    struct timespec tick = { 0, 20 * 1000 * 1000 };
    double stop_at = 0, failed_at = 0;
    int i, sig, stop_sig = 0, failed_step = 0;
    bool killed = false;

    while (ddpi_ljob_running (j) > 0) {
        if ((sig = sigtimedwait (sigs, NULL, &tick)) > 0)
            on_signal (o, j, sig, &stop_sig, &stop_at);
        if (stop_sig && !killed && ddpi_now () - stop_at >= KILL_WAIT) {
            say ("the ranks did not end within %g s of the %s: killing them",
                 KILL_WAIT, strsignal (stop_sig));
            signal_all (o, j, SIGKILL);
            killed = true;
        }
        end_failed (o, j, &failed_at, &failed_step);
        for (i = 0; i < o->nkills; i++)
            if (!o->kills[i].done && ddpi_now () - t0 >= o->kills[i].at) {
                o->kills[i].done = true;
                ddpi_ljob_kill (j, o->kills[i].rank, SIGKILL);
            }
    }
}

/* What was decided, for -v. */
static void tell (const struct opts *o, const struct dr_gpus *g,
                  const struct dr_plan *p, int port)
{
    int r, bound = 0;

    for (r = 0; r < o->job.size; r++)
        bound += p->gpu[r][0] != '\0';
    say ("%d ranks on %d node%s, backend %s (%s); %d GPUs (%s), %d ranks "
         "bound to one; MASTER_ADDR=127.0.0.1 MASTER_PORT=%d", o->job.size,
         o->job.nnodes, o->job.nnodes == 1 ? "" : "s",
         sp_backend_name (p->backend), p->why, g->count, g->from, bound,
         port);
}

/* The signals ddp-run passes on to the ranks. */
static const int passed_on[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };

/* Was ddp-run started with SIG ignored (nohup's SIGHUP, SIGINT in a
 * script's background job)?  Then it stays ignored, here and in the
 * ranks, as whoever started ddp-run meant. */
static bool ignored (int sig)
{
    struct sigaction sa;

    return sigaction (sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
}

/* Start the job as planned, wait for it.  Returns the exit code. */
static int start (struct opts *o, struct rank_env *re)
{
    struct ddpi_ljob *j;
    sigset_t sigs;
    char err[512] = "";
    size_t i;
    int rc;

    sigemptyset (&sigs);
    for (i = 0; i < sizeof (passed_on) / sizeof (passed_on[0]); i++)
        if (!ignored (passed_on[i]))
            sigaddset (&sigs, passed_on[i]);
    sigprocmask (SIG_BLOCK, &sigs, NULL);
    o->job.node_of = o->map;
    if (!(j = ddpi_ljob_start (&o->job, rank_exec, re, err, sizeof (err)))) {
        say ("%s", err);
        return 2;
    }
    watch (o, j, &sigs, ddpi_now ());
    if ((rc = ddpi_ljob_wait (j, NULL, err, sizeof (err))) != 0)
        say ("%s", err);
    return rc;
}

/* Decide everything, then run the job.  Returns the exit code. */
static int run (struct opts *o)
{
    struct rank_env re = { .argv = o->argv };
    const char *root = getenv ("DDP_RUN_SYSROOT");
    struct dr_gpus g;
    struct dr_job dj;
    char err[1024] = "";
    int rc = 2, port;

    if (dr_gpus_find (root, getenv ("CUDA_VISIBLE_DEVICES"), &g, err,
                      sizeof (err)) < 0) {
        say ("%s", err);
        goto out;
    }
    if (size_job (o, &g) < 0)
        goto out;
    dj = (struct dr_job){ o->want, o->want_from, o->bind, o->job.size,
                          o->job.nnodes, o->map };
    if (dr_plan_make (&dj, &g, &re.plan, err, sizeof (err)) < 0) {
        say ("%s", err);
        goto out;
    }
    if ((port = master_port (o, root)) < 0)
        goto out;
    if (o->verbose)
        tell (o, &g, &re.plan, port);
    set_job_env (o, &re.plan, port);
    rc = start (o, &re);
out:
    dr_plan_free (&re.plan);
    return rc;
}

int main (int argc, char **argv)
{
    struct opts o = { 0 };
    const char *slash;
    int rc = 2;

    if (argv[0] && argv[0][0]) {
        slash = strrchr (argv[0], '/');
        prog = slash && slash[1] ? slash + 1 : argv[0];
    }
    if (parse (&o, argc, argv) == 0)
        rc = run (&o);
    free (o.map);
    return rc;
}
