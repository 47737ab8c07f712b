/* blobs.c - blobs kept on this side of a bootstrap method (method.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"
#include "method.h"

int bootstrap_blobs_add (struct bootstrap_blobs *t, int rank, const char *key,
                         const void *data, size_t len)
{
    struct bootstrap_blob e = { .rank = rank, .len = len }, *v;

    if (strlen (key) >= sizeof (e.key)
        || (t->n > 0 && t->v[t->n - 1].rank > rank)
        || !(v = ddpi_grow (t->v, t->n, &t->cap, sizeof (*v))))
        return -1;
    t->v = v;
    /* Filled, then stored whole (gcc 12's -fanalyzer reports a buffer
     * malloc'd straight into the table as leaked). */
    if (!(e.data = malloc (len ? len : 1)))
        return -1;
    if (len)
        memcpy (e.data, data, len);
    strcpy (e.key, key);
    t->v[t->n++] = e;
    return 0;
}

/* The first entry of rank (or where it would be): a binary search. */
static size_t first_of (const struct bootstrap_blobs *t, int rank)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int bootstrap_blobs_get (struct bootstrap *b, int rank, const char *key,
                         void **blob, size_t *len, char *err, size_t errlen)
{
    const struct bootstrap_blobs *t = b->priv;
    size_t i;

    for (i = first_of (t, rank); i < t->n && t->v[i].rank == rank; i++) {
        if (strcmp (t->v[i].key, key) != 0)
            continue;
        if (!(*blob = malloc (t->v[i].len ? t->v[i].len : 1)))
            return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
        memcpy (*blob, t->v[i].data, t->v[i].len);
        *len = t->v[i].len;
        return 0;
    }
    return 1;
}

void bootstrap_blobs_clear (struct bootstrap_blobs *t)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        free (t->v[i].data);
    free (t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

void bootstrap_blobs_destroy (struct bootstrap *b)
{
    if (b->priv)
        bootstrap_blobs_clear (b->priv);
    free (b->priv);
    b->priv = NULL;
}
