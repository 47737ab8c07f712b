/* check.c - DDP_CHECK's descriptions of a call and its message (see
 * check.h). */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "ddp_internal.h"

_Static_assert (DDP_COLL_BCAST == 0 && DDP_COLL_REDUCE == 1
                && DDP_COLL_ALLREDUCE == 2 && DDP_COLL_GATHER == 3
                && DDP_COLL_ALLGATHER == 4
                && DDP_COLL_REDUCE_SCATTER == 5
                && DDP_COLL_NKINDS == CHECK_BARRIER,
                "check.h's kinds follow enum ddp_coll_kind");

static const char *const kind_names[CHECK_KINDS] = {
    "ddp_bcast", "ddp_reduce", "ddp_allreduce", "ddp_gather",
    "ddp_allgather", "ddp_reduce_scatter", "ddp_barrier", "ddp_finalize",
    "ddp_comm_split", "ddp_comm_free",
};

/* Word 0: the kind, the dtype (+1, 0: none) and the op (+1, 0: none). */
#define W0(kind, dt, op) \
    ((uint64_t)(kind) | (uint64_t)(dt) << 8 | (uint64_t)(op) << 16)
#define W0_KIND(w) ((int)((w) & 0xff))
#define W0_DTYPE(w) ((int)((w) >> 8 & 0xff) - 1)
#define W0_OP(w) ((int)((w) >> 16 & 0xff) - 1)

/* A kind of check.h's is a collective of enum ddp_coll_kind below
 * CHECK_BARRIER; only those take data, an op or a root. */
static bool has_data (int kind)
{
    return kind >= 0 && kind < CHECK_BARRIER;
}

static bool has_op (int kind)
{
    return has_data (kind) && ddp_coll_has_op ((enum ddp_coll_kind)kind);
}

static bool has_root (int kind)
{
    return has_data (kind) && ddp_coll_has_root ((enum ddp_coll_kind)kind);
}

/* check.h. */
struct check_sig check_sig_make (int kind, size_t count, ddp_dtype_t dtype,
                                 ddp_op_t op, int root, uint64_t ordinal)
{
    struct check_sig s = { { 0 } };
    bool data = has_data (kind);

    s.w[0] = W0 (kind, data ? (int)dtype + 1 : 0, has_op (kind) ? (int)op + 1
                                                               : 0);
    s.w[1] = has_root (kind) ? (uint64_t)(uint32_t)root : 0;
    s.w[2] = data ? (uint64_t)count : 0;
    s.w[CHECK_CMP] = ordinal;
    return s;
}

/* check.h. */
int check_sig_same (const struct check_sig *a, const struct check_sig *b)
{
    return memcmp (a->w, b->w, CHECK_CMP * sizeof (a->w[0])) == 0;
}

static const char *name_of (const char *const *names, int n, int i)
{
    return i >= 0 && i < n && names[i] ? names[i] : "?";
}

/* check.h. */
void check_sig_name (char *buf, size_t len, const struct check_sig *s)
{
    int kind = W0_KIND (s->w[0]);
    int at;

    at = snprintf (buf, len, "%s", name_of (kind_names, CHECK_KINDS, kind));
    if (has_data (kind) && at >= 0 && (size_t)at < len)
        at += snprintf (buf + at, len - (size_t)at, " of %llu %s",
                        (unsigned long long)s->w[2],
                        ddpi_dtype_name (W0_DTYPE (s->w[0])));
    if (has_op (kind) && at >= 0 && (size_t)at < len)
        at += snprintf (buf + at, len - (size_t)at, " with %s",
                        ddpi_op_name (W0_OP (s->w[0])));
    if (has_root (kind) && at >= 0 && (size_t)at < len)
        snprintf (buf + at, len - (size_t)at, " %s root %d",
                  kind == DDP_COLL_BCAST ? "from" : "to",
                  (int)(uint32_t)s->w[1]);
}

/* Append to buf at *at (len bytes in all) as far as it fits. */
static void put (char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));

static void put (char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*at >= len)
        return;
    va_start (ap, fmt);
    n = vsnprintf (buf + *at, len - *at, fmt, ap);
    va_end (ap);
    if (n > 0)
        *at += (size_t)n;
}

/* One call's part of the report into buf (len bytes): the ranks in
 * grp[0..ng-1] (ascending), who all made call s (their numbers of it from
 * lo to hi). */
static void put_group (char *buf, size_t len, const int *grp, int ng,
                       const struct check_sig *s, uint64_t lo, uint64_t hi)
{
    char ranks[64], call[96];
    size_t at = 0;

    check_sig_name (call, sizeof (call), s);
    put (buf, len, &at, "rank%s %s: %s (%s collective%s #%llu",
         ng > 1 ? "s" : "", ddpi_format_ranks (ranks, sizeof (ranks), grp, ng),
         call, ng > 1 ? "their" : "its", lo != hi ? "s" : "",
         (unsigned long long)lo);
    if (lo != hi)
        put (buf, len, &at, "-%llu", (unsigned long long)hi);
    put (buf, len, &at, ")");
}

/* Room kept at the end of the report for the count of ranks not listed. */
#define TAIL_ROOM 48

/* check.h.  Each rank is compared with the first rank of each call seen
 * before it: O(n x calls), fine on an error path. */
int check_report (char *buf, size_t len, const struct check_sig *all, int n)
{
    int *grp = malloc ((size_t)(n > 0 ? n : 1) * sizeof (*grp));
    int *first = malloc ((size_t)(n > 0 ? n : 1) * sizeof (*first));
    int calls = 0, listed = 0, shown = 0;
    size_t at = 0;

    buf[0] = '\0';
    if (!grp || !first) {
        snprintf (buf, len, "(no memory to list them)");
        free (grp);
        free (first);
        return 2;
    }
    for (int r = 0; r < n; r++) {
        int c;
        for (c = 0; c < calls && !check_sig_same (&all[first[c]], &all[r]);
             c++)
            ;
        if (c == calls)
            first[calls++] = r;
    }
    for (int c = 0; c < calls && c < CHECK_GROUPS; c++) {
        const struct check_sig *s = &all[first[c]];
        uint64_t lo = s->w[CHECK_CMP], hi = lo;
        char one[256];
        int ng = 0;
        for (int r = first[c]; r < n; r++) {
            if (!check_sig_same (s, &all[r]))
                continue;
            grp[ng++] = r;
            lo = all[r].w[CHECK_CMP] < lo ? all[r].w[CHECK_CMP] : lo;
            hi = all[r].w[CHECK_CMP] > hi ? all[r].w[CHECK_CMP] : hi;
        }
        put_group (one, sizeof (one), grp, ng, s, lo, hi);
        if (c > 0 && at + 2 + strlen (one) + TAIL_ROOM >= len)
            break;
        put (buf, len, &at, "%s%s", c ? "; " : "", one);
        listed += ng;
        shown++;
    }
    if (listed < n)
        put (buf, len, &at, "; %d more rank%s in %d other call%s", n - listed,
             n - listed > 1 ? "s" : "", calls - shown,
             calls - shown > 1 ? "s" : "");
    free (grp);
    free (first);
    return calls;
}
