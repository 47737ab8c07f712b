/* choice.c - one backend for the whole job (see choice.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp.h"
#include "ddp_internal.h"
#include "choice.h"

#define VOTE_MAGIC 0x64647076u /* "ddpv" */

/* The fixed part of an encoded vote; host and reason follow, each
 * NUL-terminated. */
struct wire_head {
    uint32_t magic;
    int32_t status;
    uint8_t want;
    uint8_t gpu;
    uint8_t check;
    uint8_t pad;
};

static const char *const want_names[] = {
    [CHOICE_AUTO] = "auto",
    [CHOICE_HOST] = "host",
    [CHOICE_NCCL] = "nccl",
};

void choice_local (struct choice_vote *v, const char *backend,
                   const char *host, int (*probe) (char *why, size_t len))
{
    memset (v, 0, sizeof (*v));
    snprintf (v->host, sizeof (v->host), "%s", host ? host : "unknown");
    if (!backend || !*backend || strcmp (backend, "auto") == 0)
        v->want = CHOICE_AUTO;
    else if (strcmp (backend, "host") == 0)
        v->want = CHOICE_HOST;
    else if (strcmp (backend, "nccl") == 0)
        v->want = CHOICE_NCCL;
    else {
        v->status = ddpi_env_explain ("DDP_BACKEND", backend, v->reason,
                                      sizeof (v->reason));
        return;
    }
    if (v->want == CHOICE_NCCL && !probe) {
        v->status = DDP_ENOTSUP;
        snprintf (v->reason, sizeof (v->reason), "DDP_BACKEND=nccl: this"
                  " libddp has no NCCL backend");
    }
    else if (v->want == CHOICE_AUTO && !probe)
        snprintf (v->reason, sizeof (v->reason), "this libddp was built"
                  " without NCCL");
    else if (v->want == CHOICE_AUTO)
        v->gpu = probe (v->reason, sizeof (v->reason)) == 0;
}

void choice_local_check (struct choice_vote *v, const char *value)
{
    v->check = value && strcmp (value, "1") == 0;
    if (v->status == 0)
        v->status = ddpi_env_explain ("DDP_CHECK", value, v->reason,
                                      sizeof (v->reason));
}

/* Write src (at most size - 1 characters of it) and a NUL at p.  Returns
 * the bytes written. */
static size_t put_str (char *p, const char *src, size_t size)
{
    size_t n = strnlen (src, size - 1);

    memcpy (p, src, n);
    p[n] = '\0';
    return n + 1;
}

size_t choice_encode (const struct choice_vote *v, void *buf)
{
    struct wire_head h = {.magic = VOTE_MAGIC, .status = v->status,
                          .want = (uint8_t)v->want, .gpu = v->gpu,
                          .check = v->check};
    char *p = buf;
    size_t off = sizeof (h);

    memcpy (p, &h, sizeof (h));
    off += put_str (p + off, v->host, sizeof (v->host));
    off += put_str (p + off, v->reason, sizeof (v->reason));
    return off;
}

/* Read one NUL-terminated string of at most size - 1 characters from
 * [*s, end) into dst.  Returns 0 and advances *s, or -1. */
static int get_str (const char **s, const char *end, char *dst, size_t size)
{
    const char *z = memchr (*s, '\0', (size_t)(end - *s));

    if (!z || (size_t)(z - *s) >= size)
        return -1;
    memcpy (dst, *s, (size_t)(z - *s) + 1);
    *s = z + 1;
    return 0;
}

int choice_decode (const void *p, size_t len, struct choice_vote *v,
                   char *err, size_t errlen)
{
    struct wire_head h;
    const char *s, *end;

    if (!p || len < sizeof (h) + 2 || len > CHOICE_WIRE_MAX) {
        snprintf (err, errlen, "its backend vote has %zu bytes, expected %zu"
                  " to %d (different libddp builds?)", len, sizeof (h) + 2,
                  CHOICE_WIRE_MAX);
        return -1;
    }
    memcpy (&h, p, sizeof (h));
    memset (v, 0, sizeof (*v));
    s = (const char *)p + sizeof (h);
    end = (const char *)p + len;
    if (h.magic != VOTE_MAGIC || h.want > CHOICE_NCCL || h.gpu > 1
        || h.check > 1
        || get_str (&s, end, v->host, sizeof (v->host)) < 0
        || get_str (&s, end, v->reason, sizeof (v->reason)) < 0 || s != end) {
        snprintf (err, errlen, "its backend vote is malformed (different"
                  " libddp builds?)");
        return -1;
    }
    v->status = h.status;
    v->want = (enum choice_want)h.want;
    v->gpu = h.gpu;
    v->check = h.check;
    return 0;
}

/* The votes of an exchange, as choice_decide() receives them. */
struct votes {
    const char *raw;
    const size_t *off, *len;
    int n;
};

static int vote_of (const struct votes *vs, int r, struct choice_vote *v,
                    char *err, size_t errlen)
{
    return choice_decode (vs->raw + vs->off[r], vs->len[r], v, err, errlen);
}

/* What a pass of collect() looks for. */
enum which { FAILED, WANTS_AUTO, WANTS_HOST, WANTS_NCCL, NO_GPU, CHECK_ON,
             CHECK_OFF };

static bool matches (const struct choice_vote *v, enum which w)
{
    switch (w) {
    case FAILED:
        return v->status != 0;
    case NO_GPU:
        return v->status == 0 && v->want == CHOICE_AUTO && !v->gpu;
    case CHECK_ON:
    case CHECK_OFF:
        return v->status == 0 && v->check == (w == CHECK_ON);
    default: /* WANTS_AUTO + want */
        return v->status == 0 && (int)v->want == (int)(w - WANTS_AUTO);
    }
}

/* The ranks whose vote matches w, ascending, into ranks.  Returns how
 * many; *first gets the first one's vote when there is one. */
static int collect (const struct votes *vs, enum which w, int *ranks,
                    struct choice_vote *first)
{
    struct choice_vote v;
    char err[8];
    int m = 0;

    for (int r = 0; r < vs->n; r++)
        if (vote_of (vs, r, &v, err, sizeof (err)) == 0 && matches (&v, w)) {
            if (m == 0 && first)
                *first = v;
            ranks[m++] = r;
        }
    return m;
}

static const char *ranks_word (int m)
{
    return m == 1 ? "rank" : "ranks";
}

/* Some ranks failed before the vote; me is not one of them. */
static void decide_failed (const struct votes *vs, int *ranks,
                           struct choice *out)
{
    struct choice_vote v;
    char list[128];
    int m = collect (vs, FAILED, ranks, &v);

    out->code = DDP_EREMOTE;
    snprintf (out->msg, sizeof (out->msg), "%s %s cannot start; rank %d (host"
              " %s): %s", ranks_word (m), ddpi_format_ranks (list,
              sizeof (list), ranks, m), ranks[0], v.host, v.reason);
}

/* The values of DDP_BACKEND differ: name the ranks of each. */
static void decide_mismatch (const struct votes *vs, int *ranks,
                             struct choice *out)
{
    const char *sep = "";
    size_t off;
    char list[128];

    out->code = DDP_EMISMATCH;
    off = (size_t)snprintf (out->msg, sizeof (out->msg), "DDP_BACKEND differs"
                            " between ranks:");
    for (int w = CHOICE_AUTO; w <= CHOICE_NCCL && off < sizeof (out->msg);
         w++) {
        int m = collect (vs, (enum which)(WANTS_AUTO + w), ranks, NULL);
        if (m == 0)
            continue;
        off += (size_t)snprintf (out->msg + off, sizeof (out->msg) - off,
                                 "%s %s on %s %s", sep, want_names[w],
                                 ranks_word (m), ddpi_format_ranks (list,
                                 sizeof (list), ranks, m));
        sep = ",";
    }
    if (off < sizeof (out->msg))
        snprintf (out->msg + off, sizeof (out->msg) - off, " (unset counts as"
                  " auto); give every rank the same value (srun --ddp sets"
                  " one for the whole step)");
}

/* DDP_CHECK is 1 on m ranks of the n, 0 or unset on the others: name
 * the smaller group. */
static void decide_check_mismatch (const struct votes *vs, int *ranks,
                                   int m, struct choice *out)
{
    char list[128];
    bool on = m <= vs->n - m;
    int k = collect (vs, on ? CHECK_ON : CHECK_OFF, ranks, NULL);

    out->code = DDP_EMISMATCH;
    snprintf (out->msg, sizeof (out->msg), "DDP_CHECK differs between ranks:"
              " %s on %s %s of %d, %s on the others; give every rank the same"
              " value (export it before srun)", on ? "1" : "0 or unset",
              ranks_word (k), ddpi_format_ranks (list, sizeof (list), ranks,
              k), vs->n, on ? "0 or unset" : "1");
}

/* Every rank said auto: nccl only if every rank can use it. */
static void decide_auto (const struct votes *vs, int *ranks,
                         const struct choice_vote *mine, struct choice *out)
{
    struct choice_vote v;
    char list[128];
    int m = collect (vs, NO_GPU, ranks, &v);

    out->nccl = m == 0;
    if (m == 0)
        return;
    if (m == vs->n) {
        snprintf (out->msg, sizeof (out->msg), "auto: host backend: %s",
                  mine->reason);
        return;
    }
    out->warn = true;
    snprintf (out->msg, sizeof (out->msg), "auto: the host backend on every"
              " rank, because %s %s of %d cannot use NCCL (rank %d, host %s:"
              " %s); give every rank a GPU, or set DDP_BACKEND=host",
              ranks_word (m), ddpi_format_ranks (list, sizeof (list), ranks,
              m), vs->n, ranks[0], v.host, v.reason);
}

/* Read every vote once: count the failures and the values asked for. */
static int tally (const struct votes *vs, int me, struct choice_vote *mine,
                  int *nfail, int *nwant, int *ncheck, struct choice *out)
{
    struct choice_vote v;
    char err[128];

    for (int r = 0; r < vs->n; r++) {
        if (vote_of (vs, r, &v, err, sizeof (err)) < 0) {
            out->code = DDP_EMISMATCH;
            snprintf (out->msg, sizeof (out->msg), "rank %d: %s", r, err);
            return -1;
        }
        if (r == me)
            *mine = v;
        if (v.status != 0)
            (*nfail)++;
        else {
            nwant[v.want]++;
            *ncheck += v.check;
        }
    }
    return 0;
}

int choice_decide (const void *raw, const size_t *off, const size_t *len,
                   int n, int me, struct choice *out)
{
    struct votes vs = {.raw = raw, .off = off, .len = len, .n = n};
    struct choice_vote mine;
    int nwant[CHOICE_NCCL + 1] = {0}, nfail = 0, kinds = 0, ncheck = 0;
    int *ranks = NULL;

    memset (out, 0, sizeof (*out));
    if (tally (&vs, me, &mine, &nfail, nwant, &ncheck, out) < 0)
        return out->code;
    if (mine.status != 0) {
        out->code = mine.status;
        snprintf (out->msg, sizeof (out->msg), "%s", mine.reason);
        return out->code;
    }
    if (!(ranks = malloc ((size_t)n * sizeof (*ranks)))) {
        out->code = DDP_ENOMEM;
        snprintf (out->msg, sizeof (out->msg), "out of memory choosing the"
                  " backend of %d ranks", n);
        return out->code;
    }
    for (int w = CHOICE_AUTO; w <= CHOICE_NCCL; w++)
        kinds += nwant[w] > 0;
    if (nfail > 0)
        decide_failed (&vs, ranks, out);
    else if (kinds > 1)
        decide_mismatch (&vs, ranks, out);
    else if (ncheck > 0 && ncheck < n)
        decide_check_mismatch (&vs, ranks, ncheck, out);
    else if (mine.want == CHOICE_AUTO)
        decide_auto (&vs, ranks, &mine, out);
    else
        out->nccl = mine.want == CHOICE_NCCL;
    out->check = out->code == 0 && mine.check;
    free (ranks);
    return out->code;
}
