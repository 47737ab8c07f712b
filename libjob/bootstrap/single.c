/* single.c - the bootstrap method of a process alone: rank 0 of 1, and
 * its exchanges are copies of its own blobs (method.h).
 *
 * It is the end of the chain, so it is where a launcher that started
 * several processes without giving them a bootstrap is caught: rather
 * than run each as a world of one, create() fails with DDP_ENOLAUNCH. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "method.h"

static bool single_probe (char *why, size_t why_len)
{
    snprintf (why, why_len, "always");
    return true;
}

/* Several ranks announced, none of the other methods there: say how to
 * launch. */
static int no_launcher (const char *hint, long n, char *err, size_t errlen)
{
#ifndef HAVE_PMIX
    return bootstrap_err (err, errlen, DDP_ENOLAUNCH, "%s=%ld says this "
                          "is one of %ld ranks, but libddp was built "
                          "without PMIx: on one machine launch with "
                          "`ddp-run -n %ld ...`; rebuild libddp with "
                          "PMIx to run under srun", hint, n, n, n);
#else
    return bootstrap_err (err, errlen, DDP_ENOLAUNCH, "%s=%ld says this is "
                          "one of %ld ranks, but there is no PMIx server (no "
                          "PMIX_NAMESPACE or PMIX_SERVER_URI* in the "
                          "environment): launch with `srun --ddp ...` (or "
                          "`srun --mpi=pmix`, or another PMIx launcher), or "
                          "on one machine with `ddp-run -n %ld ...`",
                          hint, n, n, n);
#endif
}

static int single_create (struct bootstrap *b, char *err, size_t errlen)
{
    const char *hint = NULL;
    long n = bootstrap_foreign_world (&hint);
    struct bootstrap_blobs *t;

    if (n > 1)
        return no_launcher (hint, n, err, errlen);
    if (!(b->info.local_ranks = calloc (1, sizeof (int)))
        || !(t = calloc (1, sizeof (*t))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    b->priv = t;
    b->info.rank = 0;
    b->info.size = 1;
    b->info.local_rank = 0;
    b->info.local_size = 1;
    b->info.node_rank = 0;
    b->info.num_nodes = 1;
    snprintf (b->job_id, sizeof (b->job_id), "single.%d", (int)getpid ());
    return 0;
}

static int single_put (struct bootstrap *b, const char *key,
                       enum bootstrap_scope scope, const void *blob,
                       size_t len, char *err, size_t errlen)
{
    (void)scope;
    if (bootstrap_blobs_add (b->priv, 0, key, blob, len) < 0)
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    return 0;
}

/* Nobody to wait for.  The blobs of the rounds before this one are never
 * read again. */
static int single_sync (struct bootstrap *b, const char *key, bool collect,
                        char *err, size_t errlen)
{
    struct bootstrap_blobs *t = b->priv, keep = { 0 };
    size_t i, n = strlen (key);
    int rc = 0;

    (void)collect;
    for (i = 0; i < t->n && rc == 0; i++)
        if (strncmp (t->v[i].key, key, n) == 0 && t->v[i].key[n] == '.')
            rc = bootstrap_blobs_add (&keep, 0, t->v[i].key, t->v[i].data,
                                      t->v[i].len);
    bootstrap_blobs_clear (t);
    *t = keep;
    if (rc < 0)
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    return 0;
}

static int single_node_ranks (struct bootstrap *b, int node, int *ranks,
                              int *n, char *err, size_t errlen)
{
    (void)b;
    (void)node;
    (void)err;
    (void)errlen;
    ranks[0] = 0;
    *n = 1;
    return 0;
}

/* There is no launcher to tell: the caller exits by itself. */
static int single_abort (struct bootstrap *b, int code, const char *msg)
{
    (void)b;
    (void)code;
    (void)msg;
    return DDP_ENOTSUP;
}

const struct bootstrap_method bootstrap_method_single =
    BOOTSTRAP_METHOD (single, bootstrap_blobs_get, bootstrap_blobs_destroy);
