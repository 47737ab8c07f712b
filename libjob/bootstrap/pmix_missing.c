/* pmix_missing.c - after a bootstrap fence timed out under PMIx: which
 * ranks never arrived?  Slurm's fence does not say (pmix_method.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pmix.h>

#include "ddp_internal.h"
#include "pmix_method.h"
#include "rollcall.h"

/* Which ranks never committed their round's marker, that is never reached
 * ddp_init()?
 *
 * Only this node's ranks are asked, with PMIX_IMMEDIATE: their server
 * answers from what it holds, without the host.  Ranks on other nodes cannot
 * be asked safely: a Get of a remote rank becomes a Slurm direct-modex
 * request, and when every task of that node is gone (the case to diagnose)
 * Slurm 22.05's slurmstepd retries the send for about 30 s inside its PMIx
 * progress thread, which stalls every PMIx client of this node and keeps
 * the step's slurmstepd alive long after srun returned (seen: 88 s).
 *
 * The Gets are non-blocking, with our own deadline; a request given up on
 * may still be answered later, so its state (and the key and info, which
 * the library keeps pointers to) is static and not freed while pending. */
#define PROBE_WINDOW 1.0    /* seconds, at most */
/* Seconds the roll call's hub waits for the nodes' reports, at most: the
 * survivors of complete nodes come up to PMIX_FENCE_SLACK after it started,
 * a node that misses a rank reports once its relay's window ended, then
 * one more second (less with a shorter timeout) for their nodes'
 * differences.  It ends as soon as every node reported. */
#define ROLLCALL_WINDOW(t) \
    (PMIX_FENCE_SLACK + ROLLCALL_RELAY_WINDOW + ((t) < 1.0 ? (t) : 1.0))

static struct probe {
    char key[64];
    pmix_info_t info;
    int n;
    struct probe_slot {
        volatile int done;
        volatile int status;
    } *slot;
} probe;

static void probe_cb (pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    struct probe_slot *s = cbdata;

    /* Ours to release (OpenPMIx 4.2: LeakSanitizer showed it leaked when
     * left to the library). */
    if (kv)
        PMIX_VALUE_RELEASE (kv);
    s->status = status;
    __atomic_store_n (&s->done, 1, __ATOMIC_RELEASE);
}

static bool probe_idle (void)
{
    int i;

    for (i = 0; i < probe.n; i++)
        if (!__atomic_load_n (&probe.slot[i].done, __ATOMIC_ACQUIRE))
            return false;
    return true;
}

/* Ask this node's server whether each local rank committed KEY; wait until
 * every answer is in or the window ends.  Returns how many local ranks did
 * not (listed in missing[], local_size entries), or -1 when the probe could
 * not run. */
static int probe_local (struct bootstrap *b, const char *key, int *missing)
{
    double window = b->timeout_s < PROBE_WINDOW ? b->timeout_s : PROBE_WINDOW;
    double end;
    bool yes = true;
    pmix_proc_t p;
    int i, n = 0;

    if (probe.slot && !probe_idle ())
        return -1;  /* an earlier probe is still out: its state must stay */
    free (probe.slot);
    if (!(probe.slot = calloc ((size_t)b->info.local_size,
                               sizeof (*probe.slot))))
        return -1;
    probe.n = b->info.local_size;
    snprintf (probe.key, sizeof (probe.key), "%s", key);
    PMIX_INFO_LOAD (&probe.info, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    for (i = 0; i < probe.n; i++) {
        probe.slot[i].done = 1;
        if (i == b->info.local_rank)
            continue;
        PMIX_LOAD_PROCID (&p, ddpi_pmix_me.nspace,
                          (pmix_rank_t)b->info.local_ranks[i]);
        probe.slot[i].done = 0;
        if (PMIx_Get_nb (&p, probe.key, &probe.info, 1, probe_cb,
                         &probe.slot[i]) != PMIX_SUCCESS) {
            probe.slot[i].status = PMIX_ERROR;
            __atomic_store_n (&probe.slot[i].done, 1, __ATOMIC_RELEASE);
        }
    }
    end = ddpi_now () + window;
    while (!probe_idle () && ddpi_now () < end) {
        struct timespec ts = { 0, 2000000 };
        nanosleep (&ts, NULL);
    }
    for (i = 0; i < probe.n; i++)
        if (i != b->info.local_rank
            && (!__atomic_load_n (&probe.slot[i].done, __ATOMIC_ACQUIRE)
                || probe.slot[i].status != PMIX_SUCCESS))
            missing[n++] = b->info.local_ranks[i];
    return n;
}

/* The ranks not on this node (ascending), for the "among" message. */
static int remote_ranks (struct bootstrap *b, int *out)
{
    int r, i = 0, n = 0;

    for (r = 0; r < b->info.size; r++) {
        if (i < b->info.local_size && b->info.local_ranks[i] == r)
            i++;
        else
            out[n++] = r;
    }
    return n;
}

/* Several nodes: pool this node's missing ranks (n, exact) with the other
 * nodes' (rollcall.h; tagged with the PMIx namespace's hash, so that it
 * never mixes with another step's) and say what they add up to.  Returns
 * 0 with the message in err, or -1 when there was no roll call. */
static int pooled_error (struct bootstrap *b, const int *missing, int n,
                         char *err, size_t errlen)
{
    struct ddpi_rollcall_in in = {
        .tag = ddpi_hash_str (ddpi_pmix_me.nspace), .rank = b->info.rank,
        .size = b->info.size,
        .nnodes = b->info.num_nodes, .node = b->info.node_rank,
        .local_ranks = b->info.local_ranks, .local_size = b->info.local_size,
        .missing = missing, .nmissing = n, .relay = ROLLCALL_RELAY_WINDOW,
        .window = ROLLCALL_WINDOW (b->timeout_s),
    };
    struct ddpi_rollcall rc;
    char list[256], other[256];

    if (ddpi_rollcall_run (&in, &rc) < 0)
        return -1;
    ddpi_format_ranks (list, sizeof (list), rc.missing, rc.nmissing_listed);
    ddpi_format_ranks (other, sizeof (other), rc.unheard, rc.nunheard_listed);
    if (rc.nmissing > 0)
        bootstrap_err (err, errlen, DDP_ETIMEDOUT, "rank%s %s%s did not "
                       "reach ddp_init within %g s (%s): exited before it, "
                       "or still starting%s%s", rc.nmissing > 1 ? "s" : "",
                       list, rc.nmissing > rc.nmissing_listed
                       ? " (and more)" : "", b->timeout_s, b->timeout_name,
                       rc.nunheard ? "; not heard from: the nodes of ranks "
                       : "", rc.nunheard ? other : "");
    else if (rc.nunheard > 0)
        bootstrap_err (err, errlen, DDP_ETIMEDOUT, "rank%s %s did not reach "
                       "ddp_init within %g s (%s): no rank of %s node "
                       "answered, every other rank did arrive",
                       rc.nunheard > 1 ? "s" : "", other, b->timeout_s,
                       b->timeout_name, rc.nunheard > 1 ? "their" : "its");
    else
        bootstrap_err (err, errlen, DDP_ETIMEDOUT, "every rank reached "
                       "ddp_init, yet the PMIx fence did not complete within "
                       "%g s (%s)", b->timeout_s, b->timeout_name);
    return 0;
}

/* What this node alone can say: its ranks that never arrived (n of them,
 * in ranks[]; n < 0: not even that), or that its ranks all did. */
static void local_error (struct bootstrap *b, int *ranks, int n, char *err,
                         size_t errlen)
{
    char list[256];

    if (n > 0)
        bootstrap_err (err, errlen, DDP_ETIMEDOUT, "rank%s %s of this node "
                       "did not reach ddp_init within %g s (%s): exited "
                       "before it, or still starting (ranks of other nodes "
                       "were not checked)", n > 1 ? "s" : "",
                       ddpi_format_ranks (list, sizeof (list), ranks, n),
                       b->timeout_s, b->timeout_name);
    else if (n == 0 && b->info.num_nodes > 1) {
        n = remote_ranks (b, ranks);
        bootstrap_err (err, errlen, DDP_ETIMEDOUT, "every rank of this node "
                       "reached ddp_init, but not every rank of the other "
                       "nodes within %g s (%s): the missing ones are among "
                       "rank%s %s", b->timeout_s, b->timeout_name,
                       n > 1 ? "s" : "",
                       ddpi_format_ranks (list, sizeof (list), ranks, n));
    }
    else
        bootstrap_err (err, errlen, DDP_ETIMEDOUT, "PMIx fence: not every "
                       "rank arrived within %g s (%s)", b->timeout_s,
                       b->timeout_name);
}

int ddpi_pmix_missing_error (struct bootstrap *b, const char *mark, char *err,
                             size_t errlen)
{
    int *ranks = calloc ((size_t)b->info.size, sizeof (int));
    int n = ranks ? probe_local (b, mark, ranks) : -1;

    /* node_rank < 0: the launcher's node numbering makes no sense here
     * (pmix_job.c), so there is no node 0 to pool at. */
    if (n < 0 || b->info.num_nodes == 1 || b->info.node_rank < 0
        || pooled_error (b, ranks, n, err, errlen) < 0)
        local_error (b, ranks, n, err, errlen);
    ddpi_debug ("bootstrap fence timeout: %s", err ? err : "");
    free (ranks);
    return DDP_ETIMEDOUT;
}
