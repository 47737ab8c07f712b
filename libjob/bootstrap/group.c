/* group.c - the bootstrap of a group of ranks (bootstrap_create_group):
 * a backend sets a group up as it sets the world up, through a bootstrap
 * handle, but the group's rounds travel over its parent communicator's
 * collectives (the core's round function), not through the launcher.
 *
 * A round packs this rank's puts (at most one blob per scope) into one
 * message, the round function brings every group rank's message, and the
 * blobs are kept on this side (method.h's table) for the gets: GLOBAL
 * ones of every rank, LOCAL ones of the ranks on this node only. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"
#include "method.h"

struct group_priv {
    struct bootstrap_blobs blobs;   /* first: bootstrap_blobs_get's b->priv */
    struct bootstrap_blobs pending; /* this rank's puts of the open round */
    unsigned char scope[2];         /* scope of pending.v[0], v[1] */
    bootstrap_round_fn round;
    void *arg;
};

/* A message: per blob, its scope (1 byte), key length (1), key, length
 * (4, little end first), data. */
#define ENTRY_HEAD 6

static bool group_probe (char *why, size_t why_len)
{
    snprintf (why, why_len, "made by ddp_comm_split only");
    return false;
}

/* Not called: bootstrap_create_group fills the handle. */
static int group_create (struct bootstrap *b, char *err, size_t errlen)
{
    (void)b;
    return bootstrap_err (err, errlen, DDP_EINVAL, "the group bootstrap is "
                          "made by bootstrap_create_group");
}

/* A round's key ("ddp.<round>.<scope>") without its round: the round
 * numbers are a process's own (bootstrap.c counts them over every
 * handle), and the ranks of a group may have taken part in different
 * numbers of rounds of other handles before (their other groups').
 * Only the last round's blobs are kept, so the scope tells them apart. */
static const char *scope_key (const char *key)
{
    const char *dot = strrchr (key, '.');

    return dot ? dot + 1 : key;
}

static int group_put (struct bootstrap *b, const char *key,
                      enum bootstrap_scope scope, const void *blob,
                      size_t len, char *err, size_t errlen)
{
    struct group_priv *p = b->priv;

    if (p->pending.n >= 2
        || bootstrap_blobs_add (&p->pending, 0, scope_key (key), blob,
                                len) < 0)
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    p->scope[p->pending.n - 1] = (unsigned char)scope;
    return 0;
}

/* This rank's puts as one message (*msg malloc'd, *len bytes). */
static int pack (struct group_priv *p, unsigned char **msg, size_t *len)
{
    size_t total = 0, at = 0;
    unsigned char *m;

    for (size_t i = 0; i < p->pending.n; i++)
        total += ENTRY_HEAD + strlen (p->pending.v[i].key)
                 + p->pending.v[i].len;
    if (!(m = malloc (total ? total : 1)))
        return -1;
    for (size_t i = 0; i < p->pending.n; i++) {
        const struct bootstrap_blob *e = &p->pending.v[i];
        size_t kl = strlen (e->key);
        uint32_t l = (uint32_t)e->len;

        m[at++] = p->scope[i];
        m[at++] = (unsigned char)kl;
        memcpy (m + at, e->key, kl);
        at += kl;
        for (int s = 0; s < 4; s++)
            m[at++] = (unsigned char)(l >> (8 * s));
        memcpy (m + at, e->data, e->len);
        at += e->len;
    }
    *msg = m;
    *len = total;
    return 0;
}

/* Keep rank's blobs of message m (len bytes) that this rank may read.
 * Returns 0, -1 (no memory) or -2 (a malformed message). */
static int unpack (struct bootstrap *b, struct bootstrap_blobs *t, int rank,
                   const unsigned char *m, size_t len)
{
    size_t at = 0;

    while (at < len) {
        char key[48];
        size_t kl;
        uint32_t l = 0;
        int scope;

        if (len - at < ENTRY_HEAD)
            return -2;
        scope = m[at];
        kl = m[at + 1];
        if (kl >= sizeof (key) || len - at - 2 < kl + 4)
            return -2;
        memcpy (key, m + at + 2, kl);
        key[kl] = '\0';
        at += 2 + kl;
        for (int s = 0; s < 4; s++)
            l |= (uint32_t)m[at++] << (8 * s);
        if (len - at < l)
            return -2;
        if ((scope == BOOTSTRAP_GLOBAL
             || b->rank_node[rank] == b->info.node_rank)
            && bootstrap_blobs_add (t, rank, key, m + at, l) < 0)
            return -1;
        at += l;
    }
    return 0;
}

/* One round: every group rank's puts to every group rank (collect or
 * not: the round is also the fence). */
static int group_sync (struct bootstrap *b, const char *key, bool collect,
                       char *err, size_t errlen)
{
    struct group_priv *p = b->priv;
    size_t n = (size_t)b->info.size, mlen = 0;
    size_t *off = calloc (n, sizeof (*off)), *lens = calloc (n, sizeof (*lens));
    unsigned char *msg = NULL;
    void *all = NULL;
    int rc = 0;

    (void)key;
    (void)collect;
    if (!p->round)
        rc = bootstrap_err (err, errlen, DDP_EINVAL, "a round of a group's "
                            "bootstrap after its set-up");
    else if (!off || !lens || pack (p, &msg, &mlen) < 0)
        rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    else if ((rc = p->round (p->arg, msg, mlen, &all, off, lens, err,
                             errlen)) == 0) {
        bootstrap_blobs_clear (&p->blobs);
        for (size_t r = 0; r < n && rc == 0; r++) {
            int u = unpack (b, &p->blobs, (int)r, (unsigned char *)all + off[r],
                            lens[r]);
            if (u == -1)
                rc = bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
            else if (u == -2)
                rc = bootstrap_err (err, errlen, DDP_EMISMATCH, "group rank "
                                    "%zu sent a malformed set-up message",
                                    r);
        }
    }
    bootstrap_blobs_clear (&p->pending);
    free (all);
    free (msg);
    free (off);
    free (lens);
    return rc;
}

static int group_get (struct bootstrap *b, int rank, const char *key,
                      void **blob, size_t *len, char *err, size_t errlen)
{
    return bootstrap_blobs_get (b, rank, scope_key (key), blob, len, err,
                                errlen);
}

/* Not called: b->rank_node is always set. */
static int group_node_ranks (struct bootstrap *b, int node, int *ranks,
                             int *n, char *err, size_t errlen)
{
    (void)b, (void)node, (void)ranks, (void)n;
    return bootstrap_err (err, errlen, DDP_EINVAL, "group: no layout");
}

/* The world's handle tells the launcher; a group's has nobody to tell. */
static int group_abort (struct bootstrap *b, int code, const char *msg)
{
    (void)b, (void)code, (void)msg;
    return DDP_ENOTSUP;
}

static void group_destroy (struct bootstrap *b)
{
    struct group_priv *p = b->priv;

    if (p)
        bootstrap_blobs_clear (&p->pending);
    bootstrap_blobs_destroy (b);
}

static const struct bootstrap_method bootstrap_method_group =
    BOOTSTRAP_METHOD (group, group_get, group_destroy);

/* bootstrap.h. */
void bootstrap_group_close (struct bootstrap *b)
{
    if (b && b->m == &bootstrap_method_group)
        ((struct group_priv *)b->priv)->round = NULL;
}

/* The ranks of node, ascending, into b->info.local_ranks. */
static int local_ranks (struct bootstrap *b)
{
    int n = 0;

    if (!(b->info.local_ranks = calloc ((size_t)b->info.size, sizeof (int))))
        return -1;
    for (int r = 0; r < b->info.size; r++) {
        if (b->rank_node[r] == b->info.node_rank) {
            if (r == b->info.rank)
                b->info.local_rank = n;
            b->info.local_ranks[n++] = r;
        }
    }
    b->info.local_size = n;
    return 0;
}

/* bootstrap.h. */
int bootstrap_create_group (struct bootstrap **bp,
                            const struct bootstrap_group *spec,
                            double timeout_s, const char *timeout_name,
                            char *err, size_t errlen)
{
    struct bootstrap *b;
    struct group_priv *p;
    int nn = 0;

    if (spec->size < 1 || spec->rank < 0 || spec->rank >= spec->size
        || !spec->round)
        return bootstrap_err (err, errlen, DDP_EINVAL, "group bootstrap: "
                              "rank %d of %d", spec->rank, spec->size);
    for (int r = 0; r < spec->size; r++)
        nn = spec->rank_node[r] >= nn ? spec->rank_node[r] + 1 : nn;
    if (!(b = calloc (1, sizeof (*b))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    b->m = &bootstrap_method_group;
    bootstrap_set_timeout (b, timeout_s, timeout_name);
    if (!(p = calloc (1, sizeof (*p)))
        || !(b->rank_node = malloc ((size_t)spec->size * sizeof (int)))) {
        free (p);
        bootstrap_destroy (b);
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    }
    b->priv = p;
    p->round = spec->round;
    p->arg = spec->arg;
    memcpy (b->rank_node, spec->rank_node, (size_t)spec->size * sizeof (int));
    b->info.rank = spec->rank;
    b->info.size = spec->size;
    b->info.node_rank = spec->rank_node[spec->rank];
    b->info.num_nodes = nn;
    snprintf (b->job_id, sizeof (b->job_id), "%s", spec->job_id);
    b->info.method = b->m->name;
    b->info.job_id = b->job_id;
    if (local_ranks (b) < 0) {
        bootstrap_destroy (b);
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    }
    *bp = b;
    return 0;
}
