/* bytes.c - variable-size data (bytes.h): ddp_bcast_bytes,
 * ddp_gatherv_bytes and ddp_allgatherv_bytes, built only on libddp's
 * public API.  Short buffers ride in the header collective itself; longer
 * ones follow it, once every rank has said it can take part (sync.h),
 * in one collective when every rank has the same length, else in rounds
 * of padded chunks.  What each costs in collectives: doc/api-map.md.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ddp.h"
#include "bytes.h"
#include "sync.h"

#define BCAST_INLINE 240            /* bytes carried in the bcast header */
#define GV_INLINE 48                /* bytes carried in the gatherv header */
#define GV_SCRATCH (64u << 20)      /* receive scratch of a padded gather */
#define GV_MIN_CHUNK 64u            /* bytes per rank and round at least */

/* ---- Variable-size data ----------------------------------------------- */

struct bcast_hdr {
    uint64_t len;
    uint64_t status;                /* -DDP_E* of the root, 0 if fine */
    unsigned char data[BCAST_INLINE];
};

/* Broadcast (*buf, *len) from root.  'st' is this rank's status so far:
 * root puts its own in the header (then nothing else moves); another rank's
 * is shared in the allocation round.  On success a non-root rank has a
 * malloc'd *buf (NULL for length 0) and *len; on failure *buf is NULL
 * there.  Root's buffer is never touched. */
int helpers_bcast_bytes (const char *what, void **buf, size_t *len, int root,
                        int st)
{
    struct bcast_hdr h;
    bool is_root = ddp_rank () == root;
    void *p = NULL;
    int rc;

    memset (&h, 0, sizeof (h));
    if (is_root) {
        h.status = st < 0 ? (uint64_t) -st : 0;
        if (st == 0) {
            h.len = *len;
            if (*len <= BCAST_INLINE && *len > 0)
                memcpy (h.data, *buf, *len);
        }
    }
    if ((rc = ddp_bcast (&h, sizeof (h), DDP_UINT8, root)) < 0)
        return rc;
    if (h.status != 0) {
        if (is_root)
            return st;
        if (helpers_debug ())
            ddp_log ("%s: root %d failed: %s", what, root,
                     ddp_strerror (-(int) h.status));
        return st < 0 ? st : DDP_EREMOTE;
    }
    if (is_root) {
        if (h.len <= BCAST_INLINE)
            return 0;
        if ((rc = helpers_sync_status (what, 0, 0, false, NULL)) < 0)
            return rc;
        return ddp_bcast (*buf, *len, DDP_UINT8, root);
    }
    if (h.len > SIZE_MAX)
        st = st < 0 ? st : DDP_ENOMEM;
    else if (st == 0 && h.len > 0 && !(p = malloc ((size_t) h.len)))
        st = DDP_ENOMEM;
    if (h.len <= BCAST_INLINE) {        /* done: no further collective */
        if (st < 0)
            goto error;
        if (h.len > 0)
            memcpy (p, h.data, (size_t) h.len);
    }
    else {
        if ((rc = helpers_sync_status (what, st, 0, false, NULL)) < 0) {
            st = rc;
            goto error;
        }
        if ((rc = ddp_bcast (p, (size_t) h.len, DDP_UINT8, root)) < 0) {
            st = rc;
            goto error;
        }
    }
    *buf = p;
    *len = (size_t) h.len;
    return 0;
error:
    free (p);
    return st;
}

int ddp_bcast_bytes (void **buf, size_t *len, int root)
{
    void *b = NULL;
    size_t l = 0;
    int st = 0, rc;
    bool is_root;

    if ((rc = helpers_check_root (root, &is_root)) < 0)
        return rc;
    if (!buf || !len)
        st = DDP_EINVAL;
    else if (is_root) {
        b = *buf;
        l = *len;
        if (!b && l > 0)
            st = DDP_EINVAL;
    }
    else {
        *buf = NULL;
        *len = 0;
    }
    rc = helpers_bcast_bytes ("ddp_bcast_bytes", &b, &l, root, st);
    if (rc == 0 && !is_root) {
        *buf = b;
        *len = l;
    }
    return rc;
}

struct gv_slot {
    uint64_t len;
    uint64_t status;
    unsigned char data[GV_INLINE];
};

struct gv {
    const unsigned char *buf;
    size_t len;
    bool all;                   /* allgather: every rank receives */
    bool recv;                  /* this rank receives */
    int root;
    int world;
    size_t max, total;
    bool equal;                 /* every rank has the same length */
    struct gv_slot *slots;
    size_t *lens, *displs;
    unsigned char *out;
    unsigned char *scratch;     /* receivers: world * chunk */
    unsigned char *pad;         /* senders: chunk */
    size_t chunk;
};

static void gv_free (struct gv *g)
{
    free (g->slots);
    free (g->lens);
    free (g->displs);
    free (g->out);
    free (g->scratch);
    free (g->pad);
}

static int gv_collective (struct gv *g, const void *send, void *recv,
                          size_t count)
{
    if (g->all)
        return ddp_allgather (send, recv, count, DDP_UINT8);
    return ddp_gather (send, recv, count, DDP_UINT8, g->root);
}

/* Exchange every rank's length and status (and data up to GV_INLINE). */
static int gv_header (struct gv *g, int st)
{
    struct gv_slot me;
    int rc;

    memset (&me, 0, sizeof (me));
    if (st < 0)
        me.status = (uint64_t) -st;
    else {
        me.len = g->len;
        if (g->len <= GV_INLINE && g->len > 0)
            memcpy (me.data, g->buf, g->len);
    }
    if ((rc = ddp_allgather (&me, g->slots, sizeof (me), DDP_UINT8)) < 0)
        return rc;
    g->max = 0;
    g->total = 0;
    g->equal = true;
    for (int r = 0; r < g->world; r++) {
        if (g->slots[r].status != 0) {
            if (st < 0)
                return st;
            if (helpers_debug ())
                ddp_log ("%s: rank %d failed: %s",
                     g->all ? "ddp_allgatherv_bytes" : "ddp_gatherv_bytes", r,
                         ddp_strerror (-(int) g->slots[r].status));
            return DDP_EREMOTE;
        }
        if (g->slots[r].len > SIZE_MAX - g->total)
            return DDP_ENOMEM;  /* the same on every rank */
        if (g->slots[r].len != g->slots[0].len)
            g->equal = false;
        if (g->slots[r].len > g->max)
            g->max = (size_t) g->slots[r].len;
        g->total += (size_t) g->slots[r].len;
    }
    return 0;
}

/* Allocate what this rank needs for the payload; returns 0 or DDP_ENOMEM. */
static int gv_alloc (struct gv *g)
{
    size_t off = 0;

    if (g->recv) {
        if (!(g->lens = calloc ((size_t) g->world, sizeof (size_t)))
            || !(g->displs = calloc ((size_t) g->world, sizeof (size_t))))
            return DDP_ENOMEM;
        for (int r = 0; r < g->world; r++) {
            g->lens[r] = (size_t) g->slots[r].len;
            g->displs[r] = off;
            off += g->lens[r];
        }
        if (g->total > 0 && !(g->out = malloc (g->total)))
            return DDP_ENOMEM;
    }
    if (g->max <= GV_INLINE || g->equal)
        return 0;
    /* world x chunk of scratch: at most GV_SCRATCH (64 bytes a rank when
     * the world is larger than 1 Mi ranks), never world x a fixed KiB. */
    g->chunk = GV_SCRATCH / (size_t) g->world;
    if (g->chunk < GV_MIN_CHUNK)
        g->chunk = GV_MIN_CHUNK;
    if (g->chunk > g->max)
        g->chunk = g->max;
    if (g->recv && !(g->scratch = malloc (g->chunk * (size_t) g->world)))
        return DDP_ENOMEM;
    if (!(g->pad = malloc (g->chunk)))
        return DDP_ENOMEM;
    return 0;
}

/* Lengths differ: move the data in rounds of 'chunk' bytes per rank, each
 * rank padding its part of a round to the full chunk. */
static int gv_padded (struct gv *g)
{
    for (size_t off = 0; off < g->max; off += g->chunk) {
        size_t n = g->max - off < g->chunk ? g->max - off : g->chunk;
        const void *src = g->pad;
        int rc;

        if (g->len >= off + n)
            src = g->buf + off;
        else {
            memset (g->pad, 0, n);
            if (g->len > off)
                memcpy (g->pad, g->buf + off, g->len - off);
        }
        if ((rc = gv_collective (g, src, g->scratch, n)) < 0)
            return rc;
        if (!g->recv)
            continue;
        for (int r = 0; r < g->world; r++) {
            if (g->lens[r] > off) {
                size_t k = g->lens[r] - off < n ? g->lens[r] - off : n;
                memcpy (g->out + g->displs[r] + off, g->scratch + (size_t) r * n,
                        k);
            }
        }
    }
    return 0;
}

static int gv_payload (struct gv *g)
{
    if (g->max <= GV_INLINE) {
        if (g->recv) {
            for (int r = 0; r < g->world; r++)
                if (g->lens[r] > 0)
                    memcpy (g->out + g->displs[r], g->slots[r].data,
                            g->lens[r]);
        }
        return 0;
    }
    if (g->equal)
        return gv_collective (g, g->buf, g->out, g->max);
    return gv_padded (g);
}

static int gatherv (const void *buf, size_t len, void **out, size_t **lens,
                    int root, bool all)
{
    struct gv g;
    int st = 0, rc;
    bool is_root;

    /* allgatherv has no root: check 0, always a rank */
    if ((rc = helpers_check_root (all ? 0 : root, &is_root)) < 0)
        return rc;
    memset (&g, 0, sizeof (g));
    g.buf = buf;
    g.len = len;
    g.all = all;
    g.root = root;
    g.world = ddp_world_size ();
    g.recv = all || is_root;
    if (!out || !lens || (!buf && len > 0))
        st = DDP_EINVAL;
    else {
        *out = NULL;
        *lens = NULL;
    }
    if (!(g.slots = calloc ((size_t) g.world, sizeof (*g.slots)))) {
        rc = DDP_ENOMEM;    /* cannot take part: peers time out */
        goto out;
    }
    if ((rc = gv_header (&g, st)) < 0)
        goto out;
    st = gv_alloc (&g);
    if (g.max <= GV_INLINE) {   /* no collective left: a local failure */
        if ((rc = st) < 0)
            goto out;
    }
    else if ((rc = helpers_sync_status (all ? "ddp_allgatherv_bytes"
                                            : "ddp_gatherv_bytes", st, 0,
                                        false, NULL)) < 0)
        goto out;
    if ((rc = gv_payload (&g)) < 0)
        goto out;
    if (g.recv) {
        *out = g.out;
        *lens = g.lens;
        g.out = NULL;
        g.lens = NULL;
    }
out:
    gv_free (&g);
    return rc;
}

int ddp_gatherv_bytes (const void *buf, size_t len, void **out, size_t **lens,
                       int root)
{
    return gatherv (buf, len, out, lens, root, false);
}

int ddp_allgatherv_bytes (const void *buf, size_t len, void **out,
                          size_t **lens)
{
    return gatherv (buf, len, out, lens, 0, true);
}

/* vi: ts=4 sw=4 expandtab
 */
