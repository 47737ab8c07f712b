/* tap.h - a minimal TAP producer for the C unit tests.
 *
 * Usage: plan (N) or plan (NO_PLAN) ... ok (cond, "name %d", x); is_int (got,
 * want, "name"); is_str (got, want, "name"); diag ("..."); done_testing ().
 * skip_all ("why") prints "1..0 # SKIP why" and exits 0.  Everything is
 * static so each test program includes it once.  Output goes to stdout, which
 * prove and automake's tap-driver.sh read.
 */
#ifndef DDP_TAP_H
#define DDP_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_PLAN (-1)

static int tap_planned = -2;   /* -2: no plan yet, -1: plan at the end */
static int tap_run;
static int tap_failed;

static void tap_vmsg (const char *prefix, const char *fmt, va_list ap)
{
    fputs (prefix, stdout);
    vfprintf (stdout, fmt, ap);
    fputc ('\n', stdout);
    fflush (stdout);
}

/* Declare N tests up front, or NO_PLAN to print the plan in done_testing(). */
static inline void plan (int n)
{
    tap_planned = n;
    if (n >= 0)
        printf ("1..%d\n", n);
    fflush (stdout);
}

/* Print a diagnostic line ("# ..."), ignored by the harness. */
static inline __attribute__ ((format (printf, 1, 2))) void diag (const char *fmt, ...)
{
    va_list ap;
    va_start (ap, fmt);
    tap_vmsg ("# ", fmt, ap);
    va_end (ap);
}

/* Record one test result; returns cond so callers can add diagnostics. */
static inline __attribute__ ((format (printf, 2, 3))) int ok (int cond, const char *fmt, ...)
{
    va_list ap;
    tap_run++;
    if (!cond)
        tap_failed++;
    printf ("%sok %d - ", cond ? "" : "not ", tap_run);
    va_start (ap, fmt);
    vfprintf (stdout, fmt, ap);
    va_end (ap);
    fputc ('\n', stdout);
    fflush (stdout);
    return cond;
}

/* Record a skipped test (counts as passing, says why). */
static inline void skip (const char *why)
{
    tap_run++;
    printf ("ok %d # SKIP %s\n", tap_run, why);
    fflush (stdout);
}

#define is_int(got, want, ...)                                              \
    do {                                                                    \
        long long tap_g_ = (long long) (got), tap_w_ = (long long) (want);  \
        if (!ok (tap_g_ == tap_w_, __VA_ARGS__))                            \
            diag ("  got %lld, want %lld", tap_g_, tap_w_);                 \
    } while (0)

#define is_str(got, want, ...)                                              \
    do {                                                                    \
        const char *tap_g_ = (got), *tap_w_ = (want);                       \
        int tap_c_ = (tap_g_ == NULL && tap_w_ == NULL)                     \
            || (tap_g_ && tap_w_ && strcmp (tap_g_, tap_w_) == 0);          \
        if (!ok (tap_c_, __VA_ARGS__))                                      \
            diag ("  got '%s', want '%s'", tap_g_ ? tap_g_ : "(null)",      \
                  tap_w_ ? tap_w_ : "(null)");                              \
    } while (0)

/* Skip the whole program with a stated reason. */
static inline void skip_all (const char *why)
{
    printf ("1..0 # SKIP %s\n", why);
    fflush (stdout);
    exit (0);
}

/* Stop at once: the harness reports the reason. */
static inline void bail_out (const char *why)
{
    printf ("Bail out! %s\n", why);
    fflush (stdout);
    exit (255);
}

/* Finish: print the plan if deferred; exit status 0 only if all passed. */
static inline int done_testing (void)
{
    if (tap_planned == -1 || tap_planned == -2)
        printf ("1..%d\n", tap_run);
    else if (tap_planned != tap_run)
        diag ("planned %d tests but ran %d", tap_planned, tap_run);
    fflush (stdout);
    return (tap_failed || (tap_planned >= 0 && tap_planned != tap_run)) ? 1 : 0;
}

/* In a child process that plays a rank of a job the test started (its
 * output is not the TAP stream): count a failed check in tap_rank_fails
 * and say which on stderr, naming the rank ($RANK).  The child exits
 * non-zero when tap_rank_fails is, and the parent reports that with ok(). */
static int tap_rank_fails __attribute__ ((unused));
#define RANK_CHECK(cond, ...)                                                 \
    do {                                                                      \
        if (!(cond)) {                                                        \
            tap_rank_fails++;                                                 \
            fprintf (stderr, "rank %s: check failed: ", getenv ("RANK"));     \
            fprintf (stderr, __VA_ARGS__);                                    \
            fputc ('\n', stderr);                                             \
        }                                                                     \
    } while (0)

#endif /* DDP_TAP_H */
