/* rollcall.c - the roll call's tally and wire messages (rollcall.h); the
 * sockets are in rollcall_net.c.
 *
 * Wire format (host byte order: every party runs the same library on the
 * same kind of machine, and the magic would not match otherwise):
 *   report: struct report, then nlocal int32 ranks, then nmissing int32;
 *   answer: struct answer, then the listed missing, then the listed
 *           unheard ranks (int32 each).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"
#include "rollcall.h"

#define REPORT_MAGIC 0x6464702d726f6c6cULL  /* "ddp-roll" */
#define ANSWER_MAGIC 0x6464702d72616e73ULL  /* "ddp-rans" */
#define REPORT_MAX_RANKS ROLLCALL_NODE_MAX

struct report {
    uint64_t magic;
    uint64_t tag;
    uint32_t node, nlocal, nmissing, pad;
};

struct answer {
    uint64_t magic;
    uint64_t tag;
    int32_t nmissing, nmissing_listed, nunheard, nunheard_listed;
};

int ddpi_tally_init (struct ddpi_tally *t, int size, int nnodes)
{
    memset (t, 0, sizeof (*t));
    t->size = size;
    t->nnodes = nnodes;
    t->state = calloc ((size_t)size, 1);
    t->heard = calloc ((size_t)nnodes, sizeof (bool));
    return t->state && t->heard ? 0 : -1;
}

void ddpi_tally_free (struct ddpi_tally *t)
{
    free (t->state);
    free (t->heard);
    t->state = NULL;
    t->heard = NULL;
}

int ddpi_tally_add (struct ddpi_tally *t, int node, const int32_t *ranks,
                    int n, const int32_t *missing, int m)
{
    int i;

    if (node < 0 || node >= t->nnodes || n < 1 || n > t->size || m < 0
        || m > n)
        return -1;
    for (i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= t->size)
            return -1;
    for (i = 0; i < m; i++)
        if (!ddpi_rank_in (ranks, n, missing[i]))
            return -1;
    for (i = 0; i < n; i++) {
        bool gone = ddpi_rank_in (missing, m, ranks[i]);
        if (!gone)
            t->state[ranks[i]] = RANK_PRESENT;
        else if (t->state[ranks[i]] != RANK_PRESENT)
            t->state[ranks[i]] = RANK_MISSING;
    }
    if (!t->heard[node]) {
        t->heard[node] = true;
        t->nheard++;
    }
    return 0;
}

int ddpi_tally_list (const struct ddpi_tally *t, int st, int32_t *out,
                     int max)
{
    int r, n = 0;

    for (r = 0; r < t->size; r++) {
        if (t->state[r] != st)
            continue;
        if (n < max)
            out[n] = r;
        n++;
    }
    return n;
}

_Static_assert (sizeof (struct report) == ROLLCALL_REPORT_HDR,
                "rollcall.h announces the report header's size");

size_t ddpi_report_len (const void *hdr, uint64_t tag)
{
    struct report rp;

    memcpy (&rp, hdr, sizeof (rp));
    if (rp.magic != REPORT_MAGIC || rp.tag != tag || rp.nlocal < 1
        || rp.nlocal > REPORT_MAX_RANKS || rp.nmissing > rp.nlocal)
        return 0;
    return sizeof (rp) + ((size_t)rp.nlocal + rp.nmissing) * sizeof (int32_t);
}

int ddpi_report_add (struct ddpi_tally *t, uint64_t tag, const void *buf,
                     size_t len)
{
    struct report rp;
    int32_t *ranks;
    size_t n;
    int rc;

    if (len < sizeof (rp) || ddpi_report_len (buf, tag) != len)
        return -1;
    memcpy (&rp, buf, sizeof (rp));
    n = (size_t)rp.nlocal + rp.nmissing;
    if (!(ranks = malloc (n * sizeof (int32_t))))
        return -1;
    memcpy (ranks, (const char *)buf + sizeof (rp), n * sizeof (int32_t));
    rc = ddpi_tally_add (t, (int)rp.node, ranks, (int)rp.nlocal,
                         ranks + rp.nlocal, (int)rp.nmissing);
    free (ranks);
    return rc;
}

/* How many of n ranks an answer lists. */
static int listed_of (int n)
{
    return n < ROLLCALL_LIST_MAX ? n : ROLLCALL_LIST_MAX;
}

size_t ddpi_answer_fill (const struct ddpi_tally *t, uint64_t tag, char *buf)
{
    struct answer a = { ANSWER_MAGIC, tag, 0, 0, 0, 0 };
    int32_t *list = (int32_t *)(buf + sizeof (a));

    a.nmissing = ddpi_tally_list (t, RANK_MISSING, list, ROLLCALL_LIST_MAX);
    a.nmissing_listed = listed_of (a.nmissing);
    a.nunheard = ddpi_tally_list (t, RANK_UNHEARD, list + a.nmissing_listed,
                                  ROLLCALL_LIST_MAX);
    a.nunheard_listed = listed_of (a.nunheard);
    memcpy (buf, &a, sizeof (a));
    return sizeof (a) + (size_t)(a.nmissing_listed + a.nunheard_listed)
                        * sizeof (int32_t);
}

int ddpi_answer_parse (const void *buf, size_t len, uint64_t tag, int size,
                       struct ddpi_rollcall *out)
{
    const char *lists = (const char *)buf + sizeof (struct answer);
    struct answer a;
    int i;

    if (len < sizeof (a))
        return -1;
    memcpy (&a, buf, sizeof (a));
    if (a.magic != ANSWER_MAGIC || a.tag != tag
        || a.nmissing < 0 || a.nmissing > size
        || a.nunheard < 0 || a.nunheard > size
        || a.nmissing_listed != listed_of (a.nmissing)
        || a.nunheard_listed != listed_of (a.nunheard)
        || len != sizeof (a) + (size_t)(a.nmissing_listed
                                        + a.nunheard_listed)
                               * sizeof (int32_t))
        return -1;
    out->nmissing = a.nmissing;
    out->nmissing_listed = a.nmissing_listed;
    memcpy (out->missing, lists, (size_t)a.nmissing_listed * sizeof (int32_t));
    out->nunheard = a.nunheard;
    out->nunheard_listed = a.nunheard_listed;
    memcpy (out->unheard, lists + (size_t)a.nmissing_listed * sizeof (int32_t),
            (size_t)a.nunheard_listed * sizeof (int32_t));
    for (i = 0; i < a.nmissing_listed; i++)
        if (out->missing[i] < 0 || out->missing[i] >= size)
            return -1;
    for (i = 0; i < a.nunheard_listed; i++)
        if (out->unheard[i] < 0 || out->unheard[i] >= size)
            return -1;
    return 0;
}


char *ddpi_report_make (uint64_t tag, int node, const int *ranks, int n,
                        const int *missing, int m, size_t *len)
{
    struct report rp = { REPORT_MAGIC, tag, (uint32_t)node, (uint32_t)n,
                         (uint32_t)m, 0 };
    int32_t *list;
    char *buf;
    int i;

    *len = sizeof (rp) + (size_t)(n + m) * sizeof (int32_t);
    if (!(buf = malloc (*len)))
        return NULL;
    memcpy (buf, &rp, sizeof (rp));
    list = (int32_t *)(buf + sizeof (rp));
    for (i = 0; i < n; i++)
        list[i] = ranks[i];
    for (i = 0; i < m; i++)
        list[n + i] = missing[i];
    return buf;
}

int ddpi_report_node (const void *hdr)
{
    struct report rp;

    memcpy (&rp, hdr, sizeof (rp));
    return (int)rp.node;
}
