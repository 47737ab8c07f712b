/* stop.c - the agreed stop (preemption, scancel, time limits) and the
 * restart count (requeue), on libddp's public API.
 *
 * Slurm tells a job to end with a signal to every task: SIGTERM on scancel,
 * preemption and requeue (then SIGKILL after KillWait), or the signal of
 * --signal=SIG@SECONDS before the time limit.  Each rank sees it on its own,
 * maybe one step apart from the others, maybe not at all (`kill` of one
 * task, `--signal` without B: reaching only the steps).  A flag checked by
 * each rank alone makes the ranks leave the loop at different steps: the
 * first to leave stops calling the collectives the others wait in (a hang
 * until DDP_TIMEOUT), or writes a checkpoint of a step the others never
 * reach.
 *
 * Here the handler only records the signal (a lock-free atomic); the decision
 * is taken in a collective: ddp_should_stop() is an allreduce of one
 * word, the number of ranks that received a signal, so every rank gets the
 * same answer at the same call, true at the first call that any signaled
 * rank enters after its signal.  ddp_average_stop() puts that word into
 * the allreduce of the scalars a training step averages anyway (its loss),
 * so the stop costs no collective of its own.  See ddp_should_stop(3) for
 * why the word does not ride on the gradient's all-reduce.
 *
 * A second stop signal means the grace is over (Slurm's SIGTERM at the time
 * limit after a --signal warning, or after a preemption's GraceTime): the
 * handler puts back the default action and re-raises it, so the process
 * dies as Slurm intends.  Except once the stop is agreed (a vote of this
 * process said stop): the process is on its way out, writing its
 * checkpoint, and a signal has nothing left to ask.  One does come: the
 * first rank to exit 75 ends a srun --ddp step (kill-on-bad-exit) and Slurm
 * sends SIGTERM to the ranks still writing; killing them then would lose
 * their checkpoint and turn the step's 75 into 143.  Slurm's SIGKILL after
 * KillWait still ends a rank that hangs.
 */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "ddp.h"
#include "common/sigchain.h"

#define DEFAULT_SIGNALS "TERM,USR1,USR2"
#define AVG_STACK 16        /* doubles on the stack for ddp_average_stop */

/* The signals a job may be asked to stop with: those whose default action
 * ends the process and that no fault raises. */
static const struct {
    const char *name;
    int sig;
} stop_names[] = {
    { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
    { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "ALRM", SIGALRM },
    { "TERM", SIGTERM }, { "XCPU", SIGXCPU },
};
#define NSTOP_NAMES (sizeof (stop_names) / sizeof (stop_names[0]))

/* The first stop signal this process received, 0 if none yet.  Lock-free
 * (so async-signal-safe), and atomic because the handler may run on any
 * thread while another one votes. */
static atomic_int received;
_Static_assert (ATOMIC_INT_LOCK_FREE == 2, "a lock-free int is needed in "
                "a signal handler");

/* Nonzero once a vote of this process said stop: further stop signals no
 * longer end the process (see the opening comment). */
static atomic_int agreed;

static struct {
    bool installed[NSIG];           /* our handler is in place */
    struct sigaction saved[NSIG];   /* what the program had before */
} st;

/* Async-signal-safe: a flag, the program's handler, and on a second stop
 * signal before the stop is agreed the default action (sigaction and raise
 * are both safe here). */
static void on_stop (int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno, none = 0;
    bool again = !atomic_compare_exchange_strong (&received, &none, sig);

    /* The handler the program had before ours, if it had one. */
    ddpi_sig_chain (&st.saved[sig], sig, info, uctx);
    if (again && !atomic_load (&agreed))
        ddpi_sig_default_raise (sig);   /* delivered once this returns */
    errno = saved_errno;
}

/* Signals that exist but are no way to ask a job to stop: faults, job
 * control, and those ignored by default. */
static const char *const other_names[] = {
    "ABRT", "BUS", "CHLD", "CONT", "FPE", "ILL", "IO", "PIPE", "POLL",
    "PROF", "PWR", "SEGV", "SYS", "TRAP", "TSTP", "TTIN", "TTOU", "URG",
    "VTALRM", "WINCH", "XFSZ",
};
#define NOTHER_NAMES (sizeof (other_names) / sizeof (other_names[0]))

static const char not_stop[] = "is not a signal a job can be stopped with";

/* A signal given by number: a stop signal, or a real-time one. */
static int number_signal (const char *buf, const char **why)
{
    char *end;
    long n;

    errno = 0;
    n = strtol (buf, &end, 10);
    *why = "is not a signal name or number";
    if (*end != '\0' || errno != 0)
        return 0;
    if (n >= SIGRTMIN && n <= SIGRTMAX)
        return (int) n;
    for (size_t i = 0; i < NSTOP_NAMES; i++)
        if (n == stop_names[i].sig)
            return (int) n;
    *why = n == SIGKILL || n == SIGSTOP ? "cannot be caught" : not_stop;
    return 0;
}

/* Signal number of one word of a list ("TERM", "SIGusr1", "15", "40"),
 * or 0 if it is not a stop signal; *why then says what is wrong. */
static int word_signal (const char *w, size_t len, const char **why)
{
    char buf[16];
    const char *name = buf;

    *why = len == 0 ? "is empty" : "is not a signal name or number";
    if (len == 0 || len >= sizeof (buf))
        return 0;
    for (size_t i = 0; i < len; i++)
        buf[i] = (char) toupper ((unsigned char) w[i]);
    buf[len] = '\0';
    if (isdigit ((unsigned char) buf[0]))
        return number_signal (buf, why);
    if (strncmp (buf, "SIG", 3) == 0)
        name = buf + 3;
    for (size_t i = 0; i < NSTOP_NAMES; i++)
        if (!strcmp (name, stop_names[i].name))
            return stop_names[i].sig;
    if (!strcmp (name, "KILL") || !strcmp (name, "STOP"))
        *why = "cannot be caught";
    for (size_t i = 0; i < NOTHER_NAMES; i++)
        if (!strcmp (name, other_names[i]))
            *why = not_stop;
    return 0;
}

/* Parse a comma-separated list into *set.  Returns 0, or DDP_EINVAL after
 * logging which word is wrong and what to write instead. */
static int parse_list (const char *list, const char *origin, sigset_t *set)
{
    const char *p = list;

    sigemptyset (set);
    if (!strcmp (list, "none"))
        return 0;
    for (;;) {
        const char *w, *e, *why;
        int sig;

        while (*p == ' ' || *p == '\t')
            p++;
        w = p;
        while (*p && *p != ',')
            p++;
        e = p;
        while (e > w && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (!(sig = word_signal (w, (size_t) (e - w), &why))) {
            ddp_log ("ddp_stop_signals: '%.*s' in \"%s\"%s %s; give signal "
                     "names or numbers separated by commas (HUP INT QUIT "
                     "USR1 USR2 ALRM TERM XCPU, or a real-time signal "
                     "%d-%d), or none", (int) (e - w), w, list, origin, why,
                     SIGRTMIN, SIGRTMAX);
            return DDP_EINVAL;
        }
        sigaddset (set, sig);
        if (*p == '\0')
            return 0;
        p++;
    }
}

static int uninstall (int sig)
{
    if (sigaction (sig, &st.saved[sig], NULL) < 0)
        return -1;
    st.installed[sig] = false;
    return 0;
}

static int install (int sig, const sigset_t *set)
{
    struct sigaction sa;

    if (sigaction (sig, NULL, &st.saved[sig]) < 0)
        return -1;
    memset (&sa, 0, sizeof (sa));
    sa.sa_sigaction = on_stop;
    sa.sa_mask = *set;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    if (sigaction (sig, &sa, NULL) < 0)
        return -1;
    st.installed[sig] = true;
    return 0;
}

int ddp_stop_signals (const char *signals)
{
    const char *origin = "";
    sigset_t set;
    int rc;

    if (!signals) {
        signals = getenv ("DDP_STOP_SIGNALS");
        origin = " (DDP_STOP_SIGNALS)";
        if (!signals || !*signals) {
            signals = DEFAULT_SIGNALS;
            origin = "";
        }
    }
    if ((rc = parse_list (signals, origin, &set)) < 0)
        return rc;
    /* Signals in both lists keep our handler throughout: no moment in
     * which one of them would kill the process. */
    for (int sig = 1; sig < NSIG; sig++) {
        bool want = sigismember (&set, sig) == 1;

        if (st.installed[sig] == want)
            continue;
        if ((want ? install (sig, &set) : uninstall (sig)) < 0) {
            ddp_log ("ddp_stop_signals: signal %d: sigaction: %s", sig,
                     strerror (errno));
            return DDP_EINVAL;
        }
    }
    return 0;
}

int ddp_stop_requested (void)
{
    return atomic_load (&received);
}

int ddp_average_stop (double *values, size_t n, bool *stop)
{
    double stackbuf[AVG_STACK];
    double *buf = stackbuf;
    int local = 0, rc;

    if (stop)
        *stop = false;
    if (n > SIZE_MAX / sizeof (double) - 1)
        return DDP_EINVAL;
    if (n + 1 > AVG_STACK && !(buf = malloc ((n + 1) * sizeof (double))))
        return DDP_ENOMEM;  /* cannot take part: peers time out */
    /* A bad argument still takes part (zeros), so nobody is left waiting. */
    if (!stop || (!values && n > 0))
        local = DDP_EINVAL;
    for (size_t i = 0; i < n; i++)
        buf[i] = local == 0 ? values[i] : 0.;
    /* The vote, summed over the ranks: how many received a signal. */
    buf[n] = atomic_load (&received) != 0 ? 1. : 0.;
    if ((rc = ddp_allreduce (buf, buf, n + 1, DDP_FLOAT64, DDP_SUM)) < 0
        || (rc = local) < 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        values[i] = buf[i] / (double) ddp_world_size ();
    *stop = buf[n] > 0.;
    if (*stop)
        atomic_store (&agreed, 1);
out:
    if (buf != stackbuf)
        free (buf);
    return rc;
}

int ddp_should_stop (bool *stop)
{
    return ddp_average_stop (NULL, 0, stop);
}

int ddp_restart_count (void)
{
    const char *s = getenv ("SLURM_RESTART_COUNT");
    char *end;
    long n;

    if (!s || !*s)
        return 0;
    errno = 0;
    n = strtol (s, &end, 10);
    if (!isdigit ((unsigned char) *s) || *end != '\0' || errno != 0
        || n > INT_MAX) {
        ddp_log ("ddp_restart_count: SLURM_RESTART_COUNT='%s' is not a "
                 "count (a whole number from 0); Slurm sets it in a "
                 "requeued job, unset it otherwise", s);
        return DDP_EINVAL;
    }
    return (int) n;
}

/* vi: ts=4 sw=4 expandtab
 */
