/* py_wait.c - a wait in libddp for ddp._ddp: the lock that lets one thread
 * at a time into libddp, the wait state DDP_CALL (pyddp.h) keeps while the
 * GIL is released, how deep this thread is in local blocks, and the
 * interrupt guard that lets a second SIGINT end a process stuck waiting
 * for the other ranks.  The bottom of the module: calls only libddp.
 */
#include "pyddp.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/sigchain.h"

pthread_mutex_t pyddp_lib_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* In a callback or a main-only block (a local block): only this rank runs.
 * Kept here, with the wait state, below py_errors.c, which reads it. */
_Thread_local int pyddp_local_depth;

/* ---- Interrupt guard --------------------------------------------------
 * While a thread waits in libddp with the GIL released, Python's signal
 * handler only flags the signal: the KeyboardInterrupt comes when the wait
 * ends (a collective within DDP_TIMEOUT; a helper when the rank it waits
 * for is done, which may be long).  The guard wraps the handler of SIGINT
 * and SIGTERM where Python (or the program) installed one: the first such
 * signal during a wait writes a note, a second one during the same wait
 * puts back the default action and raises it, ending the process (its
 * peers then name it).  Async-signal-safe: atomics, write, sigaction. */

static atomic_int in_wait;              /* a thread is in a libddp wait */
static atomic_int interrupts;           /* guarded signals during it */
static struct sigaction guard_saved[NSIG];
static bool guard_on[NSIG];
static char guard_note[320];
static size_t guard_note_len;

static void guard_handler (int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;

    ddpi_sig_chain (&guard_saved[sig], sig, info, uctx);
    if (atomic_load (&in_wait)) {
        if (atomic_fetch_add (&interrupts, 1) == 0) {
            if (write (STDERR_FILENO, guard_note, guard_note_len) < 0) {
                /* nothing to do: stderr is gone */
            }
        }
        else
            ddpi_sig_default_raise (sig); /* delivered once this returns */
    }
    errno = saved_errno;
}

/* Wrap sig's handler, if it has one of its own (not default, not ignored,
 * not ours).  Called once libddp is initialized (the note names the rank). */
static void guard_install (int sig)
{
    struct sigaction cur, ours;

    if (sigaction (sig, NULL, &cur) != 0)
        return;
    if (cur.sa_flags & SA_SIGINFO) {
        if (cur.sa_sigaction == guard_handler || cur.sa_sigaction == NULL)
            return;
    }
    else if (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)
        return;
    memset (&ours, 0, sizeof (ours));
    ours.sa_sigaction = guard_handler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset (&ours.sa_mask);
    guard_saved[sig] = cur;
    if (sigaction (sig, &ours, NULL) == 0)
        guard_on[sig] = true;
}

void pyddp_guard_setup (void)
{
    int n = snprintf (guard_note, sizeof (guard_note),
                      "[ddp rank %d/%d] interrupted while waiting for the "
                      "other ranks: the interrupt takes effect when the wait "
                      "ends; interrupt again to end this process now\n",
                      ddp_rank (), ddp_world_size ());

    guard_note_len = n < 0 ? 0 : (size_t) n < sizeof (guard_note)
                                 ? (size_t) n : sizeof (guard_note) - 1;
    guard_install (SIGINT);
    guard_install (SIGTERM);
}

/* A wait begins / ends; returns / takes what to restore (waits nest when a
 * callback calls back into the module). */
int pyddp_wait_begin (void)
{
    int was = atomic_exchange (&in_wait, 1);

    if (!was)
        atomic_store (&interrupts, 0);
    return was;
}

void pyddp_wait_end (int was)
{
    atomic_store (&in_wait, was);
}

/* A callback runs Python code inside the wait: not a wait any more. */
int pyddp_wait_suspend (void)
{
    return atomic_exchange (&in_wait, 0);
}

/* vi: ts=4 sw=4 expandtab
 */
