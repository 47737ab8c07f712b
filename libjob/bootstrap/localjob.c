/* localjob.c - a job of ranks on this machine with the local launcher's
 * server in a thread (localjob.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "local_server.h"
#include "localjob.h"

/* How long a rank that asked to end the job has to exit by itself. */
#define ABORT_GRACE 2.0

struct ddpi_ljob {
    struct ddpi_ljob_opts o;
    int *node_of;
    pid_t *pid;
    int *status;
    atomic_bool *reaped;
    int nreaped;
    atomic_int first_bad;   /* the first rank to end badly, or -1 */
    int *bad, nbad;         /* the ranks that ended badly, as reaped */
    struct ddpi_lserver *srv;
    pthread_t thread;
    double deadline;
    bool timed_out, killed, aborted;
    int abort_rank, abort_code;
    double abort_at;
};

void ddpi_ljob_blocks (int size, int nnodes, int *node_of)
{
    int base = size / nnodes, extra = size % nnodes, r = 0, n, i;

    for (n = 0; n < nnodes; n++)
        for (i = 0; i < base + (n < extra ? 1 : 0); i++)
            node_of[r++] = n;
}

static void set_int (const char *name, int v)
{
    char buf[16];

    snprintf (buf, sizeof (buf), "%d", v);
    setenv (name, buf, 1);
}

/* In the child of rank r: its environment, then fn. */
static void rank_main (struct ddpi_ljob *j, int r, const int *fds,
                       pid_t parent, ddpi_ljob_fn fn, void *arg)
{
    int i, lrank = 0, lsize = 0, rc;
    sigset_t none;

    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    setpgid (0, 0);
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () != parent)
        _exit (127);
    for (i = 0; i < 2 * j->o.size; i++)
        if (i != 2 * r + 1)
            close (fds[i]);
    fcntl (fds[2 * r + 1], F_SETFD, 0);
    for (i = 0; i < j->o.size; i++) {
        if (j->node_of[i] != j->node_of[r])
            continue;
        if (i < r)
            lrank++;
        lsize++;
    }
    set_int ("DDP_LOCAL_FD", fds[2 * r + 1]);
    set_int ("RANK", r);
    set_int ("WORLD_SIZE", j->o.size);
    set_int ("LOCAL_RANK", lrank);
    set_int ("LOCAL_WORLD_SIZE", lsize);
    set_int ("NODE_RANK", j->node_of[r]);
    rc = fn (r, arg);
    fflush (NULL);
    _exit (rc & 0xff);
}

static void kill_all (struct ddpi_ljob *j, int except)
{
    int r;

    for (r = 0; r < j->o.size; r++)
        if (r != except && !atomic_load (&j->reaped[r]))
            kill (-j->pid[r], SIGKILL);
}

/* An abort ends the job: the others at once, the aborting rank after a
 * grace to exit by itself. */
static void watch_abort (struct ddpi_ljob *j)
{
    if (!j->aborted && ddpi_lserver_aborted (j->srv, &j->abort_rank,
                                             &j->abort_code)) {
        j->aborted = true;
        j->abort_at = ddpi_now ();
        kill_all (j, j->abort_rank);
    }
    if (j->aborted && !j->killed && ddpi_now () - j->abort_at > ABORT_GRACE) {
        j->killed = true;
        kill_all (j, -1);
    }
}

/* Reap the ranks that ended.  The first to end badly is the first one
 * reaped so; among those a pass finds together, one killed by a signal
 * before one that exited: a rank that exits because a peer died does so
 * after it saw that peer end, which the same pass then finds too. */
static void reap (struct ddpi_ljob *j)
{
    int r, st, exited_bad = -1;

    for (r = 0; r < j->o.size; r++) {
        if (atomic_load (&j->reaped[r])
            || waitpid (j->pid[r], &st, WNOHANG) != j->pid[r])
            continue;
        j->status[r] = st;
        if (st != 0 && atomic_load (&j->first_bad) < 0 && WIFSIGNALED (st))
            atomic_store (&j->first_bad, r);
        else if (st != 0 && exited_bad < 0)
            exited_bad = r;
        if (st != 0)
            j->bad[j->nbad++] = r;
        atomic_store (&j->reaped[r], true);
        j->nreaped++;
        /* What it sent before it ended (an abort) comes first. */
        ddpi_lserver_drain (j->srv, r);
        watch_abort (j);
        ddpi_lserver_ended (j->srv, r, st);
    }
    if (atomic_load (&j->first_bad) < 0)
        atomic_store (&j->first_bad, exited_bad);
}

static void *serve (void *arg)
{
    struct ddpi_ljob *j = arg;
    int r;

    while (j->nreaped < j->o.size) {
        ddpi_lserver_serve (j->srv, 0.01);
        reap (j);
        watch_abort (j);
        if (!j->killed && ddpi_now () > j->deadline) {
            fprintf (stderr, "%s: the job ran past its %g s: killing it\n",
                     j->o.name, j->o.timeout_s);
            j->timed_out = j->killed = true;
            kill_all (j, -1);
        }
    }
    /* Whatever the ranks started goes with them. */
    for (r = 0; r < j->o.size; r++)
        kill (-j->pid[r], SIGKILL);
    return NULL;
}

static void job_free (struct ddpi_ljob *j)
{
    if (!j)
        return;
    ddpi_lserver_destroy (j->srv);
    free (j->node_of);
    free (j->pid);
    free (j->status);
    free (j->bad);
    free (j->reaped);
    free (j);
}

static int check_opts (const struct ddpi_ljob_opts *o, char *err,
                       size_t errlen)
{
    if (o->size < 1 || o->size > 4096)
        return snprintf (err, errlen, "%d ranks: give 1 to 4096", o->size),
               -1;
    if (o->nnodes < 1 || o->nnodes > o->size)
        return snprintf (err, errlen, "%d nodes: give 1 to %d (the ranks)",
                         o->nnodes, o->size), -1;
    if (!(o->timeout_s > 0))
        return snprintf (err, errlen, "a timeout of %g s: give a positive "
                         "number", o->timeout_s), -1;
    return 0;
}

static struct ddpi_ljob *job_alloc (const struct ddpi_ljob_opts *o)
{
    struct ddpi_ljob *j = calloc (1, sizeof (*j));
    size_t n = (size_t)o->size;

    if (!j || !(j->node_of = calloc (n, sizeof (int)))
        || !(j->pid = calloc (n, sizeof (pid_t)))
        || !(j->status = calloc (n, sizeof (int)))
        || !(j->reaped = calloc (n, sizeof (atomic_bool)))
        || !(j->bad = calloc (n, sizeof (int)))) {
        job_free (j);
        return NULL;
    }
    j->o = *o;
    atomic_init (&j->first_bad, -1);
    if (!j->o.name)
        j->o.name = "ddp-local";
    if (o->node_of)
        memcpy (j->node_of, o->node_of, n * sizeof (int));
    else
        ddpi_ljob_blocks (o->size, o->nnodes, j->node_of);
    for (size_t r = 0; r < n; r++)
        atomic_init (&j->reaped[r], false);
    return j;
}

/* Fork the ranks; fds holds both ends of each rank's socketpair (server
 * end at 2r, rank end at 2r+1).  Returns 0, or -1 with every rank started
 * so far killed and reaped. */
static int fork_ranks (struct ddpi_ljob *j, const int *fds, ddpi_ljob_fn fn,
                       void *arg)
{
    pid_t parent = getpid ();
    int r, k;

    fflush (NULL);
    for (r = 0; r < j->o.size; r++) {
        if ((j->pid[r] = fork ()) < 0)
            break;
        if (j->pid[r] == 0)
            rank_main (j, r, fds, parent, fn, arg);
        setpgid (j->pid[r], j->pid[r]);
    }
    if (r == j->o.size)
        return 0;
    for (k = 0; k < r; k++) {
        kill (-j->pid[k], SIGKILL);
        waitpid (j->pid[k], NULL, 0);
    }
    return -1;
}

struct ddpi_ljob *ddpi_ljob_start (const struct ddpi_ljob_opts *o,
                                   ddpi_ljob_fn fn, void *arg, char *err,
                                   size_t errlen)
{
    struct ddpi_ljob *j = NULL;
    int *fds = NULL, *srv_fds = NULL, r, made = 0;

    if (check_opts (o, err, errlen) < 0)
        return NULL;
    if (!(j = job_alloc (o)) || !(fds = calloc (2 * (size_t)o->size,
                                                sizeof (int)))
        || !(srv_fds = calloc ((size_t)o->size, sizeof (int)))) {
        snprintf (err, errlen, "out of memory");
        goto fail;
    }
    for (made = 0; made < o->size; made++)
        if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
                        &fds[2 * made]) < 0) {
            snprintf (err, errlen, "socketpair: %s", strerror (errno));
            goto fail;
        }
    for (r = 0; r < o->size; r++)
        srv_fds[r] = fds[2 * r];
    if (!(j->srv = ddpi_lserver_create (o->size, o->nnodes, j->node_of,
                                        srv_fds, (long)getpid (), j->o.name))) {
        snprintf (err, errlen, "the layout does not put a rank on each of %d "
                  "nodes (or out of memory)", o->nnodes);
        goto fail;
    }
    if (fork_ranks (j, fds, fn, arg) < 0) {
        snprintf (err, errlen, "fork: %s", strerror (errno));
        goto fail;
    }
    for (r = 0; r < o->size; r++)
        close (fds[2 * r + 1]);
    made = 0;
    j->deadline = ddpi_now () + o->timeout_s;
    if ((errno = pthread_create (&j->thread, NULL, serve, j)) != 0) {
        snprintf (err, errlen, "pthread_create: %s", strerror (errno));
        for (r = 0; r < o->size; r++) {
            kill (-j->pid[r], SIGKILL);
            waitpid (j->pid[r], NULL, 0);
        }
        goto fail;
    }
    free (fds);
    free (srv_fds);
    return j;
fail:
    /* The server owns the server ends once it exists. */
    for (r = 0; r < made; r++) {
        if (!j || !j->srv)
            close (fds[2 * r]);
        close (fds[2 * r + 1]);
    }
    free (fds);
    free (srv_fds);
    job_free (j);
    return NULL;
}

int ddpi_ljob_running (const struct ddpi_ljob *j)
{
    int r, n = 0;

    for (r = 0; r < j->o.size; r++)
        if (!atomic_load (&j->reaped[r]))
            n++;
    return n;
}

pid_t ddpi_ljob_pid (const struct ddpi_ljob *j, int rank)
{
    return rank >= 0 && rank < j->o.size ? j->pid[rank] : -1;
}

int ddpi_ljob_failed (const struct ddpi_ljob *j)
{
    return atomic_load (&j->first_bad);
}

int ddpi_ljob_kill (struct ddpi_ljob *j, int rank, int sig)
{
    if (rank < 0 || rank >= j->o.size || atomic_load (&j->reaped[rank]))
        return -1;
    return kill (-j->pid[rank], sig);
}

/* The rank that failed first: the first to end badly (first, as reaped)
 * that did not say it failed because of another (bootstrap_victim); when
 * every one did, first. */
static int failed_first (struct ddpi_ljob *j, int first)
{
    if (!ddpi_lserver_victim (j->srv, first))
        return first;
    for (int i = 0; i < j->nbad; i++)
        if (!ddpi_lserver_victim (j->srv, j->bad[i]))
            return j->bad[i];
    return first;
}

/* Append to err what the victims said: the ranks that failed because of
 * another, and the words of the first of them, e.g. "; ranks 0,2,3 failed
 * after it, as victims: rank 1 left (ddp_finalize) before ddp_barrier
 * #202" (r is a victim itself: "; ranks 2,3 too; as victims: ..."). */
static void victims (struct ddpi_ljob *j, int r, char *err, size_t errlen)
{
    char list[256];
    int *v = malloc ((size_t)j->nbad * sizeof (int) + 1), n = 0;
    const char *why = NULL, *mine = ddpi_lserver_victim (j->srv, r);
    size_t at = strlen (err);

    if (!v)
        return;
    for (int i = 0; i < j->nbad; i++) {
        const char *w = ddpi_lserver_victim (j->srv, j->bad[i]);
        if (!w || j->bad[i] == r)
            continue;
        why = why ? why : w;
        v[n++] = j->bad[i];
    }
    if (mine)
        why = mine;
    for (int a = 1; a < n; a++)     /* ascending, for ddpi_format_ranks */
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) {
            int t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    if (n > 0)
        ddpi_format_ranks (list, sizeof (list), v, n);
    if (mine && n > 0)
        snprintf (err + at, errlen - at, ", a victim (rank%s %s too): %s",
                  n > 1 ? "s" : "", list, why);
    else if (mine)
        snprintf (err + at, errlen - at, ", a victim: %s", why);
    else if (n > 0)
        snprintf (err + at, errlen - at, "; rank%s %s failed after it, as "
                  "victim%s: %s", n > 1 ? "s" : "", list, n > 1 ? "s" : "",
                  why);
    free (v);
}

/* The job's exit code and what it means. */
static int exit_code (struct ddpi_ljob *j, char *err, size_t errlen)
{
    const char *why;
    char st[96];
    int r;

    if (j->aborted) {
        snprintf (err, errlen, "rank %d aborted the job with status %d",
                  j->abort_rank, j->abort_code);
        return j->abort_code & 0xff ? j->abort_code & 0xff : 1;
    }
    if (j->timed_out) {
        snprintf (err, errlen, "the job did not end within %g s",
                  j->o.timeout_s);
        return 124;
    }
    if ((r = atomic_load (&j->first_bad)) < 0)
        return 0;
    r = failed_first (j, r);
    ddpi_lserver_status_str (j->status[r], st, sizeof (st));
    if ((why = ddpi_lserver_reason (j->srv, r)))
        snprintf (err, errlen, "rank %d %s (%s)", r, why, st);
    else
        snprintf (err, errlen, "rank %d %s", r, st);
    victims (j, r, err, errlen);
    return WIFEXITED (j->status[r]) ? WEXITSTATUS (j->status[r])
           : WIFSIGNALED (j->status[r]) ? 128 + WTERMSIG (j->status[r]) : 1;
}

int ddpi_ljob_wait (struct ddpi_ljob *j, int *status, char *err,
                    size_t errlen)
{
    int rc;

    pthread_join (j->thread, NULL);
    if (status)
        memcpy (status, j->status, (size_t)j->o.size * sizeof (int));
    rc = exit_code (j, err, errlen);
    job_free (j);
    return rc;
}
