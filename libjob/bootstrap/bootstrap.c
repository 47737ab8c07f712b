/* bootstrap.c - the chain of bootstrap methods and the rounds of exchanges
 * on top of them.  See bootstrap.h for the contract, method.h for what a
 * method provides. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "ddp_internal.h"
#include "layout.h"
#include "method.h"

/* The chain, in the order the methods are tried.  local comes first: its
 * variable is set only by the local launcher for the ranks it starts, and
 * those may have inherited a PMIx environment from an enclosing step. */
static const struct bootstrap_method *const methods[] = {
    &bootstrap_method_local,
#ifdef HAVE_PMIX
    &bootstrap_method_pmix,
#endif
    &bootstrap_method_single,
    NULL,
};

/* Every method libddp knows, built in or not (for DDP_BOOTSTRAP). */
static const char *const known_methods[] = { "local", "pmix", "single", NULL };

/* Rounds are numbered across handles, so that a key is never reused, not
 * even by a later ddp_init() of the same process. */
static _Atomic unsigned long round_seq;

/* Strictly parse an optional environment integer in [min, max].
 * Returns 1 and sets *out if set, 0 if unset, or DDP_EINVAL. */
static int env_int (const char *name, long min, long max, long *out,
                    char *err, size_t errlen)
{
    const char *s = getenv (name);
    char q[DDPI_ENV_QUOTED];

    if (!s)
        return 0;
    if (ddpi_parse_long (s, min, max, out) < 0)
        return bootstrap_err (err, errlen, DDP_EINVAL,
                              "%s='%s' is not an integer in [%ld, %ld] (in "
                              "decimal digits)", name,
                              ddpi_env_quote (s, q, sizeof (q)), min, max);
    return 1;
}

/* The environment's own claims (RANK, WORLD_SIZE): each strictly parsed
 * here on its own, compared with the launcher's answer once there is one
 * (warn_env), or with each other when there is none (check_pair). */
static int check_env (long *env_rank, long *env_size, char *err, size_t errlen)
{
    int rc;

    *env_rank = *env_size = -1;
    if ((rc = env_int ("WORLD_SIZE", 1, INT_MAX, env_size, err, errlen)) < 0)
        return rc;
    if ((rc = env_int ("RANK", 0, INT_MAX - 1, env_rank, err, errlen)) < 0)
        return rc;
    return 0;
}

/* Without a launcher (the single method) RANK and WORLD_SIZE are all
 * there is: RANK must be a rank of WORLD_SIZE.  Returns 0 or DDP_EINVAL. */
static int check_pair (long env_rank, long env_size, char *err, size_t errlen)
{
    if (env_rank < 0 || env_size < 0 || env_rank < env_size)
        return 0;
    return bootstrap_err (err, errlen, DDP_EINVAL, "RANK=%ld is not a rank "
                          "of WORLD_SIZE=%ld (give one in [0, %ld]), and "
                          "there is no launcher to say otherwise", env_rank,
                          env_size, env_size - 1);
}

/* DDP_BOOTSTRAP=name: that method, or why not. */
static int forced_method (const char *name,
                          const struct bootstrap_method **mp, char *err,
                          size_t errlen)
{
    char msg[DDPI_ENV_MSG];
    int i;

    for (i = 0; methods[i]; i++)
        if (strcmp (methods[i]->name, name) == 0) {
            *mp = methods[i];
            ddpi_debug ("bootstrap: %s: forced by DDP_BOOTSTRAP", name);
            return 0;
        }
    for (i = 0; known_methods[i]; i++)
        if (strcmp (known_methods[i], name) == 0)
            return bootstrap_err (err, errlen, DDP_ENOTSUP,
                                  "DDP_BOOTSTRAP=%s: libddp was built "
                                  "without %s", name, name);
    ddpi_env_explain ("DDP_BOOTSTRAP", name, msg, sizeof (msg));
    return bootstrap_err (err, errlen, DDP_EINVAL, "%s", msg);
}

/* The first method whose probe accepts (single always does). */
static const struct bootstrap_method *probed_method (void)
{
    char why[256];
    int i;

    for (i = 0; methods[i + 1]; i++) {
        why[0] = '\0';
        if (methods[i]->probe (why, sizeof (why))) {
            ddpi_debug ("bootstrap: %s: offered%s%s", methods[i]->name,
                        why[0] ? ": " : "", why);
            return methods[i];
        }
        ddpi_debug ("bootstrap: %s: not offered: %s", methods[i]->name, why);
    }
    return methods[i];
}

/* The launcher is authoritative, for the world size as for the rank: a
 * stale RANK/WORLD_SIZE (another launcher's leftovers) is worth a warning,
 * not a hang of the peers that agree, and a RANK beyond WORLD_SIZE is not
 * held against a launcher that says otherwise. */
static void warn_env (const struct bootstrap *b, long env_rank, long env_size)
{
    if (env_size > 0 && env_size != b->info.size)
        ddpi_log ("warning: WORLD_SIZE=%ld but the launcher (%s) says %d "
                  "ranks; using the launcher's", env_size, b->info.method,
                  b->info.size);
    if (env_rank >= 0 && env_rank != b->info.rank)
        ddpi_log ("warning: RANK=%ld but the launcher (%s) says rank %d; "
                  "using the launcher's", env_rank, b->info.method,
                  b->info.rank);
}

int bootstrap_create (struct bootstrap **bp, double timeout_s, char *err,
                      size_t errlen)
{
    const struct bootstrap_method *m = NULL;
    const char *force = getenv ("DDP_BOOTSTRAP");
    struct bootstrap *b;
    long env_rank, env_size;
    int rc;

    if ((rc = check_env (&env_rank, &env_size, err, errlen)) < 0)
        return rc;
    if (force && *force && (rc = forced_method (force, &m, err, errlen)) < 0)
        return rc;
    if (!m)
        m = probed_method ();
    if (m == &bootstrap_method_single
        && (rc = check_pair (env_rank, env_size, err, errlen)) < 0)
        return rc;
    if (!(b = calloc (1, sizeof (*b))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    b->m = m;
    bootstrap_set_timeout (b, timeout_s, "DDP_TIMEOUT");
    if ((rc = m->create (b, err, errlen)) < 0) {
        ddpi_debug ("bootstrap: %s: failed: %s", m->name, err ? err : "");
        bootstrap_destroy (b);
        return rc;
    }
    b->info.method = m->name;
    b->info.job_id = b->job_id;
    if (b->ids_pending)
        ddpi_debug ("bootstrap: %s: rank %d of %d, on the launcher's node "
                    "id %u (the node layout comes with the first exchange), "
                    "job %s", m->name, b->info.rank, b->info.size,
                    (unsigned)b->node_id, b->job_id);
    else
        ddpi_debug ("bootstrap: %s: rank %d of %d, node %d of %d, job %s",
                    m->name, b->info.rank, b->info.size, b->info.node_rank,
                    b->info.num_nodes, b->job_id);
    warn_env (b, env_rank, env_size);
    *bp = b;
    return 0;
}

void bootstrap_set_timeout (struct bootstrap *b, double timeout_s,
                            const char *name)
{
    b->timeout_s = timeout_s;
    snprintf (b->timeout_name, sizeof (b->timeout_name), "%s", name);
}

const struct bootstrap_info *bootstrap_info (struct bootstrap *b)
{
    return &b->info;
}

/* The key of scope's blobs in round r. */
static void round_key (char *key, size_t len, unsigned long r,
                       enum bootstrap_scope scope)
{
    snprintf (key, len, "ddp.%lu.%c", r, scope == BOOTSTRAP_LOCAL ? 'l' : 'g');
}

/* Put blob (len bytes, at most max) for the open round. */
static int put_blob (struct bootstrap *b, enum bootstrap_scope scope,
                     const void *blob, size_t len, size_t max, char *err,
                     size_t errlen)
{
    char key[48];
    int rc;

    if (scope != BOOTSTRAP_GLOBAL && scope != BOOTSTRAP_LOCAL)
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_put: "
                              "unknown scope %d", (int)scope);
    if (len > max || (len && !blob))
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_put: a "
                              "blob of %zu bytes (at most %d)", len,
                              BOOTSTRAP_MAX_BLOB);
    if (b->put_done[scope - 1])
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_put: a "
                              "second %s blob in round %lu",
                              scope == BOOTSTRAP_LOCAL ? "local" : "global",
                              round_seq);
    round_key (key, sizeof (key), round_seq, scope);
    if ((rc = b->m->put (b, key, scope, blob, len, err, errlen)) < 0)
        return rc;
    b->put_done[scope - 1] = true;
    return 0;
}

int bootstrap_put (struct bootstrap *b, enum bootstrap_scope scope,
                   const void *blob, size_t len, char *err, size_t errlen)
{
    return put_blob (b, scope, blob, len, BOOTSTRAP_MAX_BLOB, err, errlen);
}

/* Close the open round with a fence (collecting its blobs or not). */
static int close_round (struct bootstrap *b, bool collect, char *err,
                        size_t errlen)
{
    char key[48];
    unsigned long r = round_seq++;
    int rc;

    b->put_done[0] = b->put_done[1] = false;
    snprintf (key, sizeof (key), "ddp.%lu", r);
    b->synced = false;
    if (!collect)
        return b->m->sync (b, key, false, err, errlen);
    b->read_round = r;
    if ((rc = b->m->sync (b, key, true, err, errlen)) == 0)
        b->synced = true;
    return rc;
}

int bootstrap_sync (struct bootstrap *b, char *err, size_t errlen)
{
    return close_round (b, true, err, errlen);
}

int bootstrap_fence (struct bootstrap *b, char *err, size_t errlen)
{
    return close_round (b, false, err, errlen);
}

/* bootstrap_get() without the argument checks; a blob rank did not put is
 * DDP_EMISMATCH. */
static int get_blob (struct bootstrap *b, int rank, enum bootstrap_scope scope,
                     void **blob, size_t *len, char *err, size_t errlen)
{
    char key[48];
    int rc;

    *blob = NULL;
    round_key (key, sizeof (key), b->read_round, scope);
    rc = b->m->get (b, rank, key, blob, len, err, errlen);
    if (rc == 1)
        return bootstrap_err (err, errlen, DDP_EMISMATCH, "rank %d put no "
                              "%s blob in bootstrap round %lu", rank,
                              scope == BOOTSTRAP_LOCAL ? "local" : "global",
                              b->read_round);
    return rc;
}

int bootstrap_get (struct bootstrap *b, int rank, enum bootstrap_scope scope,
                   void **blob, size_t *len, char *err, size_t errlen)
{
    *blob = NULL;
    if (!b->synced)
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_get: no "
                              "round was synced");
    if (rank < 0 || rank >= b->info.size)
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_get: rank "
                              "%d is not in 0..%d", rank, b->info.size - 1);
    if (scope == BOOTSTRAP_LOCAL
        && !ddpi_rank_in (b->info.local_ranks, b->info.local_size, rank))
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_get: rank "
                              "%d is not on this node: its local blob cannot "
                              "be read here", rank);
    if (scope != BOOTSTRAP_GLOBAL && scope != BOOTSTRAP_LOCAL)
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_get: "
                              "unknown scope %d", (int)scope);
    return get_blob (b, rank, scope, blob, len, err, errlen);
}

/* Pack the size blobs of parts into one block for bootstrap_exchange,
 * each without its first skip bytes (lens[r] >= skip). */
static int pack_all (int size, void **parts, const size_t *lens, size_t skip,
                     void **all, size_t *all_off, size_t *all_len)
{
    size_t total = 0, off = 0;
    char *buf;
    int r;

    for (r = 0; r < size; r++)
        total += lens[r] - skip;
    if (!(buf = malloc (total ? total : 1)))
        return -1;
    for (r = 0; r < size; r++) {
        if (lens[r] > skip)
            memcpy (buf + off, (char *)parts[r] + skip, lens[r] - skip);
        all_off[r] = off;
        all_len[r] = lens[r] - skip;
        off += lens[r] - skip;
    }
    *all = buf;
    return 0;
}

/* The first exchange of a method with ids_pending: every rank's blob
 * (parts, lens) starts with its node id (layout.h).  Number the nodes,
 * check that the ranks sharing this rank's id are the ones the launcher
 * says share its node (info.local_ranks), and settle info.node_rank,
 * info.num_nodes and b->rank_node.  The same blobs reach every rank, so
 * every rank numbers the nodes alike, and fails alike on a short blob.
 * Returns 0, or DDP_EPMIX / DDP_ENOMEM with err. */
static int settle_layout (struct bootstrap *b, void **parts,
                          const size_t *lens, char *err, size_t errlen)
{
    int size = b->info.size, nnodes, node, rc = 0;
    uint32_t *ids = malloc ((size_t)size * sizeof (*ids));
    int *rank_node = malloc ((size_t)size * sizeof (*rank_node));
    char mine[128], theirs[128];

    if (!ids || !rank_node) {
        rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
        goto out;
    }
    for (int r = 0; r < size; r++) {
        if (lens[r] < BOOTSTRAP_NODE_ID_BYTES) {
            rc = bootstrap_err (err, errlen, DDP_EPMIX, "bootstrap: rank %d's "
                                "first blob (%zu bytes) carries no node id: "
                                "is it a libddp of another version?", r,
                                lens[r]);
            goto out;
        }
        ids[r] = bootstrap_node_id_take (parts[r]);
    }
    if ((nnodes = bootstrap_number_nodes (ids, size, rank_node)) < 1) {
        rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
        goto out;
    }
    node = rank_node[b->info.rank];
    if (!bootstrap_node_is (rank_node, size, node, b->info.local_ranks,
                            b->info.local_size)) {
        int n = 0, *same = malloc ((size_t)size * sizeof (*same));

        for (int r = 0; same && r < size; r++)
            if (rank_node[r] == node)
                same[n++] = r;
        rc = bootstrap_err (err, errlen, DDP_EPMIX, "%s: the ranks that "
                            "give node id %u in the first exchange (%s) are "
                            "not the ones the launcher says share this node "
                            "(%s)", b->info.method, (unsigned)b->node_id,
                            same ? ddpi_format_ranks (theirs, sizeof (theirs),
                                                      same, n) : "?",
                            ddpi_format_ranks (mine, sizeof (mine),
                                               b->info.local_ranks,
                                               b->info.local_size));
        free (same);
        goto out;
    }
    if (b->info.num_nodes > 0 && b->info.num_nodes != nnodes)
        ddpi_debug ("bootstrap: %s: the ranks are on %d nodes, the launcher "
                    "counts %d", b->info.method, nnodes, b->info.num_nodes);
    if (b->info.node_rank != node)
        ddpi_debug ("bootstrap: %s: node id %u is node %d of %d (the "
                    "launcher's numbering is not dense)", b->info.method,
                    (unsigned)b->node_id, node, nnodes);
    b->info.node_rank = node;
    b->info.num_nodes = nnodes;
    b->rank_node = rank_node;
    rank_node = NULL;
    b->ids_pending = false;
out:
    free (ids);
    free (rank_node);
    return rc;
}

int bootstrap_exchange (struct bootstrap *b, const void *blob, size_t len,
                        void **all, size_t *all_off, size_t *all_len,
                        char *err, size_t errlen)
{
    int size = b->info.size, r, rc;
    void **parts = calloc ((size_t)size, sizeof (void *));
    size_t *lens = calloc ((size_t)size, sizeof (size_t));
    size_t skip = b->ids_pending ? BOOTSTRAP_NODE_ID_BYTES : 0;
    unsigned char *wire = NULL;

    *all = NULL;
    if (!parts || !lens) {
        rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
        goto out;
    }
    if (len > BOOTSTRAP_MAX_BLOB || (len && !blob)) {
        rc = bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap_exchange: a "
                            "blob of %zu bytes (at most %d)", len,
                            BOOTSTRAP_MAX_BLOB);
        goto out;
    }
    /* The first exchange of a method with ids_pending: this rank's node
     * id ahead of the caller's blob. */
    if (skip) {
        if (!(wire = malloc (skip + len))) {
            rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
            goto out;
        }
        bootstrap_node_id_put (wire, b->node_id);
        if (len)
            memcpy (wire + skip, blob, len);
        blob = wire;
    }
    if ((rc = put_blob (b, BOOTSTRAP_GLOBAL, blob, skip + len,
                        BOOTSTRAP_MAX_BLOB + skip, err, errlen)) < 0
        || (rc = bootstrap_sync (b, err, errlen)) < 0)
        goto out;
    for (r = 0; r < size; r++) {
        rc = get_blob (b, r, BOOTSTRAP_GLOBAL, &parts[r], &lens[r], err,
                       errlen);
        /* The fence completed, yet no rank's data: PMIx 5 under Slurm
         * 24.11 completes a fence without a rank that exited before it
         * (seen: t0802), as PMIx servers do for a client whose connection
         * they lost. */
        if (rc == DDP_EMISMATCH)
            rc = bootstrap_err (err, errlen, DDP_EPEER, "rank %d did not "
                                "reach ddp_init: the start-up fence (%s) "
                                "completed without it, and no node holds "
                                "its setup data (a launcher ends a fence "
                                "so for a rank that has exited)", r,
                                b->info.method);
        if (rc < 0)
            goto out;
    }
    if (skip && (rc = settle_layout (b, parts, lens, err, errlen)) < 0)
        goto out;
    if (pack_all (size, parts, lens, skip, all, all_off, all_len) < 0)
        rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
out:
    for (r = 0; parts && r < size; r++)
        free (parts[r]);
    free (parts);
    free (lens);
    free (wire);
    return rc;
}

/* The node layout is not known yet (ids_pending): say so. */
static int layout_pending (struct bootstrap *b, char *err, size_t errlen)
{
    return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap: the node "
                          "layout is known after the first exchange (%s "
                          "numbers the nodes only locally)", b->info.method);
}

int bootstrap_node_ranks (struct bootstrap *b, int node, int **ranks, int *n,
                          char *err, size_t errlen)
{
    int *out, rc;

    *ranks = NULL;
    *n = 0;
    if (b->ids_pending)
        return layout_pending (b, err, errlen);
    if (node < 0 || node >= b->info.num_nodes)
        return bootstrap_err (err, errlen, DDP_EINVAL, "bootstrap: node %d "
                              "is not in 0..%d", node, b->info.num_nodes - 1);
    if (!(out = calloc ((size_t)b->info.size, sizeof (int))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    if (b->rank_node) {
        for (int r = 0; r < b->info.size; r++)
            if (b->rank_node[r] == node)
                out[(*n)++] = r;
    }
    else if ((rc = b->m->node_ranks (b, node, out, n, err, errlen)) < 0) {
        free (out);
        *n = 0;
        return rc;
    }
    *ranks = out;
    return 0;
}

/* Place node's n ranks (ascending, from node_ranks) in rank_node; -1 marks
 * a rank not placed yet.  Returns 0, or -1 when one is out of range or
 * already placed. */
static int place_node (int *rank_node, int size, int node, const int *ranks,
                       int n)
{
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size || rank_node[ranks[i]] >= 0)
            return -1;
        rank_node[ranks[i]] = node;
    }
    return 0;
}

int bootstrap_layout (struct bootstrap *b, int *rank_node, char *err,
                      size_t errlen)
{
    int size = b->info.size, *ranks, n = 0, node, placed = 0, rc = 0;

    if (b->ids_pending)
        return layout_pending (b, err, errlen);
    if (b->rank_node) {
        memcpy (rank_node, b->rank_node, (size_t)size * sizeof (int));
        return 0;
    }
    if (!(ranks = calloc ((size_t)size, sizeof (int))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    for (int r = 0; r < size; r++)
        rank_node[r] = -1;
    for (node = 0; node < b->info.num_nodes && rc == 0; node++) {
        if ((rc = b->m->node_ranks (b, node, ranks, &n, err, errlen)) < 0)
            break;
        if (n < 1 || place_node (rank_node, size, node, ranks, n) < 0)
            rc = bootstrap_err (err, errlen, DDP_EPMIX, "bootstrap: the "
                                "launcher's layout lists %s for node %d",
                                n < 1 ? "no ranks" : "a rank twice or out of "
                                "range", node);
        placed += n;
    }
    if (rc == 0 && placed != size)
        rc = bootstrap_err (err, errlen, DDP_EPMIX, "bootstrap: the "
                            "launcher's layout places %d of %d ranks", placed,
                            size);
    free (ranks);
    return rc;
}

int bootstrap_abort (struct bootstrap *b, int errcode, const char *msg)
{
    return b->m->abort (b, errcode, msg);
}

int bootstrap_victim (struct bootstrap *b, const char *why)
{
    return b && b->m->victim ? b->m->victim (b, why ? why : "")
                             : DDP_ENOTSUP;
}

int bootstrap_reason (struct bootstrap *b, const char *why)
{
    return b && b->m->reason ? b->m->reason (b, why ? why : "")
                             : DDP_ENOTSUP;
}

void bootstrap_destroy (struct bootstrap *b)
{
    if (!b)
        return;
    b->m->destroy (b);
    free (b->rank_node);
    free (b->info.local_ranks);
    free (b);
}
