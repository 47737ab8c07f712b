/* sigchain.h - what a signal handler that wraps the program's own needs
 * (header only): call the handler that was there before, and on a second
 * signal put back the default action and raise it.
 *
 * Shared by helpers/stop.c (libddp) and python/py_wait.c (the Python
 * module, a separate shared object that sees only libddp's exported ddp_*
 * symbols): static inline, so each compiles its own copy and nothing
 * leaves either object.  Depends on nothing but <signal.h>; both
 * functions are async-signal-safe.
 */
#ifndef DDP_COMMON_SIGCHAIN_H
#define DDP_COMMON_SIGCHAIN_H

#include <signal.h>
#include <string.h>

/* Call the handler old describes (what sigaction() returned before ours
 * was installed) for sig, if it is a handler: not SIG_DFL, SIG_IGN or
 * none. */
static inline void ddpi_sig_chain (const struct sigaction *old, int sig,
                                   siginfo_t *info, void *uctx)
{
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction)
            old->sa_sigaction (sig, info, uctx);
    }
    else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN
             && old->sa_handler != NULL)
        old->sa_handler (sig);
}

/* Put back sig's default action and raise sig: it is delivered once the
 * running handler returns, and ends the process as the signal means to.
 * (memset, sigemptyset, sigaction and raise are async-signal-safe:
 * signal-safety(7).) */
static inline void ddpi_sig_default_raise (int sig)
{
    struct sigaction dfl;

    memset (&dfl, 0, sizeof (dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset (&dfl.sa_mask);
    (void) sigaction (sig, &dfl, NULL);
    (void) raise (sig);
}

#endif /* DDP_COMMON_SIGCHAIN_H */
