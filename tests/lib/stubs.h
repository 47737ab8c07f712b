/* stubs.h - the callbacks and byte patterns the helpers' tests share: the
 * unit test in one process (libjob/helpers/test/helpers.c) and
 * helpers_check on every rank of a step (tests/progs/helpers_check.c).
 *
 * Callbacks count their calls, fn-style ones in 'runs' and post_fn-style
 * ones in 'post_runs', so that a test can check what ran where; a test
 * resets the counters itself.  A failing callback returns 1, which the
 * helpers report as DDP_EUSER on its rank.  Buffers carry a pattern that
 * names the rank that filled them.  Everything is static: include this
 * once per test program.
 */
#ifndef DDP_TEST_STUBS_H
#define DDP_TEST_STUBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "ddp.h"

static int runs, post_runs;

/* Record that a callback ran, in *counter; returns rc. */
static inline int ran (int *counter, int rc)
{
    (*counter)++;
    return rc;
}

/* ddp_fn_t callbacks.  fn_ok succeeds, fn_fail fails, fail_on fails on the
 * rank *(int *)arg only; post_ok, post_fail and post_fail_on do the same,
 * counted in post_runs. */
static inline int fn_ok (void *p) { (void) p; return ran (&runs, 0); }
static inline int fn_fail (void *p) { (void) p; return ran (&runs, 1); }
static inline int post_ok (void *p) { (void) p; return ran (&post_runs, 0); }
static inline int post_fail (void *p) { (void) p; return ran (&post_runs, 1); }

static inline int fail_on (void *arg)
{
    return ran (&runs, ddp_rank () == *(int *) arg);
}

static inline int post_fail_on (void *arg)
{
    return ran (&post_runs, ddp_rank () == *(int *) arg);
}

/* Byte i of the pattern rank src sends. */
static inline unsigned char pat (int src, size_t i)
{
    return (unsigned char) (i * 131 + (size_t) src * 17 + 5);
}

/* A malloc'd buffer of n bytes (at least 1 allocated) with src's pattern;
 * NULL when out of memory. */
static inline unsigned char *make_buf (int src, size_t n)
{
    unsigned char *p = malloc (n ? n : 1);

    for (size_t i = 0; p && i < n; i++)
        p[i] = pat (src, i);
    return p;
}

/* Whether the n bytes at p are src's pattern. */
static inline bool buf_ok (const unsigned char *p, int src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat (src, i))
            return false;
    return true;
}

/* ddp_compute_fn_t callbacks.  compute_ok returns *(size_t *)arg bytes of
 * this rank's pattern (fails when out of memory); compute_fail fails and
 * returns nothing. */
static inline int compute_ok (void *arg, void **out, size_t *len)
{
    size_t n = *(size_t *) arg;

    runs++;
    if (!(*out = make_buf (ddp_rank (), n)))
        return -1;
    *len = n;
    return 0;
}

static inline int compute_fail (void *arg, void **out, size_t *len)
{
    (void) arg;
    (void) out;
    (void) len;
    return ran (&runs, 1);
}

#endif /* DDP_TEST_STUBS_H */
