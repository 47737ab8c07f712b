/* stop.c - the agreed stop and the restart count in a single process:
 * the signal list (every kind of bad word, the environment, "none"), the
 * handlers (chaining to the program's, a second signal ending the process,
 * a signal before init), the vote alone and riding on an average, and
 * calls before init. */
#include "config.h"
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ddp.h"
#include "tap.h"
#include "testutil.h"

static volatile sig_atomic_t program_handler_calls;

static void program_handler (int sig)
{
    (void) sig;
    program_handler_calls++;
}

/* True if sig runs libddp's handler (SA_SIGINFO; the program's use none). */
static bool ours (int sig)
{
    struct sigaction sa;

    return sigaction (sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO);
}

static bool is_default (int sig)
{
    struct sigaction sa;

    return sigaction (sig, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO)
           && sa.sa_handler == SIG_DFL;
}

struct call {
    const char *list;
    int rc;
};

static void call_signals (void *arg)
{
    struct call *c = arg;
    c->rc = ddp_stop_signals (c->list);
}

/* A bad list is refused, changes nothing, and the message names the word
 * and the reason. */
static void check_bad (const char *list, const char *word, const char *why)
{
    struct call c = { list, 0 };
    char *out = capture_stderr (call_signals, &c);
    char quoted[64];

    snprintf (quoted, sizeof (quoted), "'%s'", word);
    ok (c.rc == DDP_EINVAL && strstr (out, quoted) && strstr (out, why)
        && is_default (SIGTERM) && is_default (SIGUSR1),
        "ddp_stop_signals (\"%s\"): DDP_EINVAL, says %s %s, nothing "
        "installed", list ? list : "NULL", quoted, why);
    if (c.rc != DDP_EINVAL || !strstr (out, quoted) || !strstr (out, why))
        diag ("  rc %d, message: %s", c.rc, out);
    free (out);
}

static void check_restart_count (void)
{
    static const char *const bad[] = { "abc", "-1", "1x", " 2", "+2",
                                       "99999999999", "1.5" };

    unsetenv ("SLURM_RESTART_COUNT");
    is_int (ddp_restart_count (), 0, "restart count: 0 without "
            "SLURM_RESTART_COUNT (a first run)");
    setenv ("SLURM_RESTART_COUNT", "", 1);
    is_int (ddp_restart_count (), 0, "restart count: empty is 0");
    setenv ("SLURM_RESTART_COUNT", "0", 1);
    is_int (ddp_restart_count (), 0, "restart count: \"0\" is 0");
    setenv ("SLURM_RESTART_COUNT", "3", 1);
    is_int (ddp_restart_count (), 3, "restart count: \"3\" is 3");
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        setenv ("SLURM_RESTART_COUNT", bad[i], 1);
        is_int (ddp_restart_count (), DDP_EINVAL, "restart count: \"%s\" is "
                "DDP_EINVAL", bad[i]);
    }
    unsetenv ("SLURM_RESTART_COUNT");
}

static void check_before_init (void)
{
    double v[2] = { 1.5, 2.5 };
    bool stop = true;

    is_int (ddp_should_stop (&stop), DDP_ENOINIT,
            "before init: ddp_should_stop is DDP_ENOINIT");
    ok (!stop, "before init: *stop is false on failure");
    stop = true;
    is_int (ddp_average_stop (v, 2, &stop), DDP_ENOINIT,
            "before init: ddp_average_stop is DDP_ENOINIT");
    ok (!stop && v[0] == 1.5 && v[1] == 2.5,
        "before init: values unchanged, *stop false");
    is_int (ddp_stop_requested (), 0, "no stop signal received yet");
}

static void check_config (void)
{
    check_bad ("FOO", "FOO", "is not a signal name or number");
    check_bad ("TERM,KILL", "KILL", "cannot be caught");
    check_bad ("sigstop", "sigstop", "cannot be caught");
    check_bad ("9", "9", "cannot be caught");
    check_bad ("USR1,SEGV", "SEGV", "is not a signal a job can be stopped");
    check_bad ("CHLD", "CHLD", "is not a signal a job can be stopped");
    check_bad ("11", "11", "is not a signal a job can be stopped");
    check_bad ("TERM,,USR1", "", "is empty");
    check_bad ("TERM,", "", "is empty");
    check_bad ("", "", "is empty");
    check_bad ("1000", "1000", "is not a signal");
    check_bad ("TERMINATE_PLEASE_NOW", "TERMINATE_PLEASE_NOW",
               "is not a signal name or number");
    setenv ("DDP_STOP_SIGNALS", "USR1,BOGUS", 1);
    check_bad (NULL, "BOGUS", "(DDP_STOP_SIGNALS)");

    setenv ("DDP_STOP_SIGNALS", "", 1);
    is_int (ddp_stop_signals (NULL), 0, "NULL with DDP_STOP_SIGNALS empty: "
            "the default list");
    ok (ours (SIGTERM) && ours (SIGUSR1) && ours (SIGUSR2)
        && is_default (SIGHUP) && is_default (SIGINT),
        "the default list is TERM, USR1, USR2 (HUP, INT untouched)");
    setenv ("DDP_STOP_SIGNALS", "hup", 1);
    is_int (ddp_stop_signals (NULL), 0, "DDP_STOP_SIGNALS=hup");
    ok (ours (SIGHUP) && is_default (SIGTERM) && is_default (SIGUSR1)
        && is_default (SIGUSR2),
        "DDP_STOP_SIGNALS=hup: only HUP; the others are back to default");
    unsetenv ("DDP_STOP_SIGNALS");
    is_int (ddp_stop_signals (" sigusr2 , 15 "), 0,
            "a list with spaces, SIG prefix, lower case and a number");
    ok (ours (SIGUSR2) && ours (SIGTERM) && is_default (SIGHUP),
        "\" sigusr2 , 15 \": USR2 and TERM; HUP restored");
    char rt[16];
    snprintf (rt, sizeof (rt), "%d", SIGRTMIN + 2);
    is_int (ddp_stop_signals (rt), 0, "a real-time signal by number (%s)",
            rt);
    ok (ours (SIGRTMIN + 2) && is_default (SIGTERM), "only it is installed");
    is_int (ddp_stop_signals ("none"), 0, "\"none\"");
    ok (is_default (SIGRTMIN + 2) && is_default (SIGTERM)
        && is_default (SIGUSR2), "\"none\": every signal is back to default");
    is_int (ddp_stop_requested (), 0, "still no stop signal received");
}

/* No signal yet: the vote is false and the average works, on every path. */
static void check_vote_quiet (void)
{
    double v[3] = { 0.25, -3., 1e300 }, big[40];
    bool stop = true;

    is_int (ddp_should_stop (&stop), 0, "ddp_should_stop");
    ok (!stop, "no signal: do not stop");
    stop = true;
    is_int (ddp_average_stop (v, 3, &stop), 0, "ddp_average_stop");
    ok (!stop && v[0] == 0.25 && v[1] == -3. && v[2] == 1e300,
        "one rank: the average is the value; do not stop");
    for (int i = 0; i < 40; i++)
        big[i] = i * 0.5;
    stop = true;
    is_int (ddp_average_stop (big, 40, &stop), 0,
            "ddp_average_stop with 40 values (not on the stack)");
    ok (!stop && big[39] == 19.5, "40 values averaged; do not stop");
    is_int (ddp_average_stop (v, 0, &stop), 0, "n = 0 is ddp_should_stop");
    is_int (ddp_should_stop (NULL), DDP_EINVAL,
            "ddp_should_stop (NULL) is DDP_EINVAL");
    stop = true;
    is_int (ddp_average_stop (NULL, 2, &stop), DDP_EINVAL,
            "ddp_average_stop: NULL values with n > 0 is DDP_EINVAL");
    ok (!stop, "on DDP_EINVAL *stop is false");
    v[0] = 7.;
    is_int (ddp_average_stop (v, 1, NULL), DDP_EINVAL,
            "ddp_average_stop: NULL stop is DDP_EINVAL");
    ok (v[0] == 7., "on DDP_EINVAL the values are unchanged");
    is_int (ddp_average_stop (v, SIZE_MAX, &stop), DDP_EINVAL,
            "ddp_average_stop: an absurd n is DDP_EINVAL");
}

/* A child: exit status says what it saw. */
static int child_status (void (*body) (void))
{
    pid_t pid;
    int status;

    fflush (stdout);
    if ((pid = fork ()) < 0)
        return -1;
    if (pid == 0) {
        body ();
        _exit (99);
    }
    if (waitpid (pid, &status, 0) != pid)
        return -1;
    return status;
}

/* First SIGTERM: recorded, the program's handler runs, the process lives;
 * second: the program's handler runs again, then the default ends it. */
static void second_signal_body (void)
{
    signal (SIGTERM, program_handler);
    if (ddp_stop_signals ("TERM") != 0)
        _exit (1);
    raise (SIGTERM);
    if (ddp_stop_requested () != SIGTERM || program_handler_calls != 1)
        _exit (2);
    raise (SIGTERM);
    _exit (program_handler_calls == 2 ? 3 : 4);  /* not reached */
}

/* Once a vote said stop, a further stop signal (Slurm's SIGTERM when the
 * first rank's exit 75 ends the step) runs the program's handler and
 * leaves the process alive to finish its checkpoint. */
static void after_agreed_body (void)
{
    bool stop = false;

    signal (SIGTERM, program_handler);
    if (ddp_stop_signals ("TERM") != 0 || ddp_init () != 0)
        _exit (1);
    raise (SIGTERM);
    if (ddp_should_stop (&stop) != 0 || !stop)
        _exit (2);
    raise (SIGTERM);
    raise (SIGTERM);
    ddp_finalize ();
    _exit (program_handler_calls == 3 ? 75 : 4);
}

/* A signal before ddp_init() is kept and decides the first vote. */
static void before_init_body (void)
{
    bool stop = false;

    if (ddp_stop_signals ("USR2") != 0)
        _exit (1);
    raise (SIGUSR2);
    if (ddp_init () != 0)
        _exit (2);
    if (ddp_should_stop (&stop) != 0 || !stop)
        _exit (3);
    ddp_finalize ();
    _exit (0);
}

static void check_signals (void)
{
    int st = child_status (second_signal_body);

    ok (WIFSIGNALED (st) && WTERMSIG (st) == SIGTERM,
        "a second stop signal ends the process by that signal (after the "
        "program's handler ran twice)");
    if (!WIFSIGNALED (st))
        diag ("  child exited with %d",
              WIFEXITED (st) ? WEXITSTATUS (st) : -1);
    st = child_status (after_agreed_body);
    ok (WIFEXITED (st) && WEXITSTATUS (st) == 75,
        "after an agreed stop, further stop signals run the program's "
        "handler and do not end the process");
    if (!WIFEXITED (st) || WEXITSTATUS (st) != 75)
        diag ("  child status 0x%x", st);
    st = child_status (before_init_body);
    ok (WIFEXITED (st) && WEXITSTATUS (st) == 0,
        "a signal received before ddp_init decides the first vote");
    if (!WIFEXITED (st) || WEXITSTATUS (st) != 0)
        diag ("  child status 0x%x", st);
}

/* The program's own handler keeps running, and comes back with "none". */
static void check_chain_and_vote (void)
{
    struct sigaction sa;
    double v[2] = { 2., 4. };
    bool stop = false;

    signal (SIGUSR1, program_handler);
    program_handler_calls = 0;
    is_int (ddp_stop_signals ("USR1"), 0, "install USR1 over the program's "
            "handler");
    raise (SIGUSR1);
    is_int (ddp_stop_requested (), SIGUSR1, "SIGUSR1 is recorded");
    is_int (program_handler_calls, 1, "the program's handler ran too");
    is_int (ddp_should_stop (&stop), 0, "ddp_should_stop after the signal");
    ok (stop, "after a signal: stop");
    stop = false;
    is_int (ddp_average_stop (v, 2, &stop), 0, "ddp_average_stop after it");
    ok (stop && v[0] == 2. && v[1] == 4.,
        "the stop rides on the average, which is still right");
    is_int (ddp_stop_signals ("none"), 0, "\"none\" after a signal");
    ok (sigaction (SIGUSR1, NULL, &sa) == 0
        && sa.sa_handler == program_handler,
        "\"none\" gives the program its own handler back");
    stop = false;
    ok (ddp_should_stop (&stop) == 0 && stop,
        "the decision stays: a later signal list does not forget it");
    is_int (ddp_stop_requested (), SIGUSR1, "the signal is still recorded");
    signal (SIGUSR1, SIG_DFL);
}

int main (void)
{
    int rc;

    single_process_env ("2");
    unsetenv ("DDP_STOP_SIGNALS");
    /* "Untouched" below means as found at start: start from the defaults
     * whatever was inherited (a shell runs background jobs with INT and
     * QUIT ignored, e.g. `make check &` from a script, or nohup HUP). */
    {
        const int sigs[] = { SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2 };
        for (size_t i = 0; i < sizeof (sigs) / sizeof (sigs[0]); i++)
            signal (sigs[i], SIG_DFL);
    }
    plan (NO_PLAN);
    check_restart_count ();
    check_before_init ();
    check_config ();
    check_signals ();
    if ((rc = ddp_init ()) != 0) {
        diag ("ddp_init: %s", ddp_strerror (rc));
        bail_out ("ddp_init failed in a single process");
    }
    check_vote_quiet ();
    check_chain_and_vote ();
    is_int (ddp_finalize (), 0, "ddp_finalize");
    bool stop = true;
    is_int (ddp_should_stop (&stop), DDP_ENOINIT,
            "after finalize: ddp_should_stop is DDP_ENOINIT");
    return done_testing ();
}

/* vi: ts=4 sw=4 expandtab
 */
