/* bootstrap.c - the chain of methods (libjob/bootstrap/bootstrap.h): which
 * method the environment selects, the failures users see, the DDP_DEBUG
 * trace, and the rounds of the single method (the local method's are in
 * local.c, PMIx's run on the test cluster). */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "bootstrap.h"
#include "ddp_internal.h"

static char err[512];

static void clean_env (void)
{
    static const char *vars[] = { "WORLD_SIZE", "RANK", "DDP_BOOTSTRAP",
        "DDP_LOCAL_FD", "SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE", "PMIX_NAMESPACE", "DDP_DEBUG", NULL };
    extern char **environ;
    int i;

    for (i = 0; vars[i]; i++)
        unsetenv (vars[i]);
    for (i = 0; environ[i]; i++)
        if (strncmp (environ[i], "PMIX_SERVER_URI", 15) == 0) {
            char name[128];
            snprintf (name, sizeof (name), "%.*s",
                      (int)strcspn (environ[i], "="), environ[i]);
            unsetenv (name);
            i = -1;
        }
}

/* bootstrap_create under one variable; returns its code, err filled. */
static int create_with (const char *name, const char *value,
                        struct bootstrap **bp)
{
    struct bootstrap *b = NULL;
    int rc;

    clean_env ();
    if (name)
        setenv (name, value, 1);
    err[0] = '\0';
    rc = bootstrap_create (&b, 5.0, err, sizeof (err));
    if (bp)
        *bp = b;
    else
        bootstrap_destroy (b);
    clean_env ();
    return rc;
}

/* One variable, what bootstrap_create answers, and what its error says
 * (NULL: not checked). */
static const struct refusal {
    const char *name, *value;
    int code;
    const char *what, *says;
} refusals[] = {
    { "WORLD_SIZE", "3", DDP_ENOLAUNCH, "without a launcher: ENOLAUNCH",
      "WORLD_SIZE=3 says this is one of 3 ranks" },
    { "PMI_SIZE", "2", DDP_ENOLAUNCH, "without a launcher: ENOLAUNCH", NULL },
    { "WORLD_SIZE", "x", DDP_EINVAL, "EINVAL", NULL },
    { "DDP_BOOTSTRAP", "carrier-pigeon", DDP_EINVAL, "EINVAL",
      "not one of local, pmix, single" },
    { "DDP_BOOTSTRAP", "single", 0, "accepted", NULL },
    { "DDP_BOOTSTRAP", "local", DDP_EINVAL, "without DDP_LOCAL_FD: EINVAL",
      "DDP_LOCAL_FD" },
    { "DDP_LOCAL_FD", "abc", DDP_EINVAL, "EINVAL", NULL },
    { "DDP_LOCAL_FD", "0", DDP_ENOLAUNCH, "not the launcher's socket: "
      "ENOLAUNCH", "not the local launcher's socket" },
    { "DDP_LOCAL_FD", "999", DDP_ENOLAUNCH, "not open: ENOLAUNCH", NULL },
};

static void chain_checks (void)
{
    struct bootstrap *b = NULL;
    const struct bootstrap_info *in;

    is_int (create_with (NULL, NULL, &b), 0, "no launcher: created");
    in = bootstrap_info (b);
    ok (strcmp (in->method, "single") == 0 && in->rank == 0 && in->size == 1
        && in->num_nodes == 1 && in->local_size == 1
        && in->local_ranks[0] == 0, "no launcher: single, rank 0 of 1");
    ok (strncmp (in->job_id, "single.", 7) == 0, "single job id %s",
        in->job_id);
    {
        int where = -1;
        ok (bootstrap_layout (b, &where, err, sizeof (err)) == 0
            && where == 0, "single: layout puts rank 0 on node 0");
    }
    bootstrap_destroy (b);

    for (size_t i = 0; i < sizeof (refusals) / sizeof (refusals[0]); i++) {
        const struct refusal *t = &refusals[i];
        is_int (create_with (t->name, t->value, NULL), t->code, "%s=%s: %s",
                t->name, t->value, t->what);
        if (t->says)
            ok (strstr (err, t->says) != NULL, "and the error says '%s': %s",
                t->says, err);
    }
#ifndef HAVE_PMIX
    is_int (create_with ("DDP_BOOTSTRAP", "pmix", NULL), DDP_ENOTSUP,
            "DDP_BOOTSTRAP=pmix without PMIx built in: ENOTSUP");
#endif
}

/* Run bootstrap_create with DDP_DEBUG, stderr into a file; returns what
 * was logged (static). */
static const char *traced (const char *name, const char *value)
{
    static char log[4096];
    char path[] = "/tmp/ddp-boot-trace.XXXXXX";
    int fd = mkstemp (path), saved = dup (2);
    ssize_t n = 0;

    log[0] = '\0';
    if (fd < 0 || saved < 0)
        return log;
    unlink (path);
    fflush (stderr);
    dup2 (fd, 2);
    clean_env ();
    setenv ("DDP_DEBUG", "1", 1);
    if (name)
        setenv (name, value, 1);
    {
        struct bootstrap *b = NULL;
        if (bootstrap_create (&b, 5.0, err, sizeof (err)) == 0)
            bootstrap_destroy (b);
    }
    fflush (stderr);
    dup2 (saved, 2);
    close (saved);
    clean_env ();
    if (lseek (fd, 0, SEEK_SET) == 0)
        n = read (fd, log, sizeof (log) - 1);
    log[n > 0 ? n : 0] = '\0';
    close (fd);
    return log;
}

static void trace_checks (void)
{
    const char *log = traced (NULL, NULL);

    ok (strstr (log, "bootstrap: local: not offered: DDP_LOCAL_FD is not "
                "set") != NULL, "trace: local not offered");
#ifdef HAVE_PMIX
    ok (strstr (log, "bootstrap: pmix: not offered: no PMIX_NAMESPACE")
        != NULL, "trace: pmix not offered");
#endif
    ok (strstr (log, "bootstrap: single: rank 0 of 1") != NULL,
        "trace: single chosen");
    log = traced ("DDP_BOOTSTRAP", "single");
    ok (strstr (log, "bootstrap: single: forced by DDP_BOOTSTRAP") != NULL
        && strstr (log, "not offered") == NULL, "trace: a forced method, "
        "no probes");
    log = traced ("DDP_LOCAL_FD", "0");
    ok (strstr (log, "bootstrap: local: offered: DDP_LOCAL_FD=0 is set")
        != NULL && strstr (log, "bootstrap: local: failed: ") != NULL
        && strstr (log, "single") == NULL, "trace: local offered, failed, "
        "no fall back");
}

static void single_rounds (void)
{
    struct bootstrap *b = NULL;
    void *blob = NULL, *all = NULL;
    size_t len = 0, off[1], lens[1];
    int *ranks = NULL, n = 0;

    create_with (NULL, NULL, &b);
    if (!b) {
        ok (0, "single: no handle");
        return;
    }
    is_int (bootstrap_get (b, 0, BOOTSTRAP_GLOBAL, &blob, &len, err,
                           sizeof (err)), DDP_EINVAL,
            "get before any sync: EINVAL");
    is_int (bootstrap_put (b, BOOTSTRAP_GLOBAL, "abc", 3, err, sizeof (err)),
            0, "put a global blob");
    is_int (bootstrap_put (b, BOOTSTRAP_GLOBAL, "x", 1, err, sizeof (err)),
            DDP_EINVAL, "a second global put in the round: EINVAL");
    is_int (bootstrap_put (b, BOOTSTRAP_LOCAL, "de", 2, err, sizeof (err)),
            0, "put a local blob");
    is_int (bootstrap_put (b, 7, "de", 2, err, sizeof (err)), DDP_EINVAL,
            "an unknown scope: EINVAL");
    is_int (bootstrap_put (b, BOOTSTRAP_LOCAL, NULL, 65537, err,
                           sizeof (err)), DDP_EINVAL, "a blob too large");
    is_int (bootstrap_sync (b, err, sizeof (err)), 0, "sync");
    ok (bootstrap_get (b, 0, BOOTSTRAP_GLOBAL, &blob, &len, err, sizeof (err))
        == 0 && len == 3 && memcmp (blob, "abc", 3) == 0, "get the global");
    free (blob);
    ok (bootstrap_get (b, 0, BOOTSTRAP_LOCAL, &blob, &len, err, sizeof (err))
        == 0 && len == 2 && memcmp (blob, "de", 2) == 0, "get the local");
    free (blob);
    is_int (bootstrap_get (b, 1, BOOTSTRAP_GLOBAL, &blob, &len, err,
                           sizeof (err)), DDP_EINVAL, "rank 1: EINVAL");
    is_int (bootstrap_sync (b, err, sizeof (err)), 0, "an empty round");
    is_int (bootstrap_get (b, 0, BOOTSTRAP_GLOBAL, &blob, &len, err,
                           sizeof (err)), DDP_EMISMATCH,
            "nothing put in it: EMISMATCH");
    ok (blob == NULL && strstr (err, "rank 0 put no global blob") != NULL,
        "and says so: %s", err);
    ok (bootstrap_exchange (b, "hello", 5, &all, off, lens, err, sizeof (err))
        == 0 && lens[0] == 5 && memcmp ((char *)all + off[0], "hello", 5) == 0,
        "exchange: our own blob back");
    free (all);
    is_int (bootstrap_fence (b, err, sizeof (err)), 0, "fence");
    ok (bootstrap_node_ranks (b, 0, &ranks, &n, err, sizeof (err)) == 0
        && n == 1 && ranks[0] == 0, "node 0 holds rank 0");
    free (ranks);
    is_int (bootstrap_node_ranks (b, 1, &ranks, &n, err, sizeof (err)),
            DDP_EINVAL, "node 1: EINVAL");
    is_int (bootstrap_abort (b, 3, "no"), DDP_ENOTSUP,
            "abort: nobody to tell");
    bootstrap_destroy (b);
}

int main (void)
{
    plan (NO_PLAN);
    chain_checks ();
    trace_checks ();
    single_rounds ();
    done_testing ();
    return 0;
}
