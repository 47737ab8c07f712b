/* record.c - the node's fault record in the segment (record.h): the first
 * claim stands; lists merge into it, sorted, with what each rank was
 * doing.  Below the transport and fault.c; calls no other file of
 * libjob/host. */
#include "config.h"

#include <string.h>

#include "ddp_internal.h"
#include "record.h"

int host_fault_claim (struct host *h, const int *ranks, int nlist, int n,
                      int kind, int reporter, uint64_t call)
{
    int32_t zero = 0;
    int i;

    if (!atomic_compare_exchange_strong (&h->hdr->fault_rank, &zero,
                                         ranks[0] + 1))
        return 0;
    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    for (i = 0; i < nlist; i++)
        h->hdr->fault_list[i] = ranks[i];
    ddpi_sort_ranks (h->hdr->fault_list, nlist);
    h->hdr->fault_nlist = nlist;
    h->hdr->fault_n = n > nlist ? n : nlist;
    h->hdr->fault_call = call;
    atomic_store (&h->hdr->fault_reporter, reporter);
    atomic_store (&h->hdr->fault_kind, kind);   /* last: the record is whole */
    return 1;
}

/* The state a merge keeps for a rank: the record's, or the new one when
 * the record did not know it. */
static uint64_t pick_state (uint64_t have, uint64_t in)
{
    return have ? have : in;
}

void host_fault_merge (struct host *h, const int32_t *in,
                       const uint64_t *in_states, int nlist, int n)
{
    int32_t *have = h->hdr->fault_list, out[FAULT_LIST_MAX] = { 0 };
    uint64_t *hs = h->hdr->fault_state, os[FAULT_LIST_MAX] = { 0 };
    struct { int32_t r; uint64_t s; } e[FAULT_LIST_MAX];
    int i = 0, j = 0, k = 0, nhave = h->hdr->fault_nlist;
    int extra_have, extra_in;

    if (nlist < 1)
        return;
    if (n < nlist || n > h->size)   /* from the wire: keep it sane */
        n = n > h->size ? h->size : nlist;
    if (nhave < 0 || nhave > FAULT_LIST_MAX)
        nhave = 0;
    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    extra_have = h->hdr->fault_n - nhave;
    extra_in = n - nlist;
    for (int a = 0; a < nlist; a++) {    /* sorted by rank, state along */
        int b = a;
        e[a].r = in[a];
        e[a].s = in_states ? in_states[a] : 0;
        while (b > 0 && e[b - 1].r > e[b].r) {
            __typeof__ (e[0]) t = e[b];
            e[b] = e[b - 1];
            e[--b] = t;
        }
    }
    while ((i < nhave || j < nlist) && k < FAULT_LIST_MAX) {
        if (j >= nlist || (i < nhave && have[i] < e[j].r)) {
            os[k] = hs[i];
            out[k++] = have[i++];
        }
        else if (i >= nhave || e[j].r < have[i]) {
            os[k] = e[j].s;
            out[k++] = e[j++].r;
        }
        else {
            os[k] = pick_state (hs[i], e[j++].s);
            out[k++] = have[i++];
        }
    }
    if (k == nhave && memcmp (out, have, (size_t)k * sizeof (int32_t)) == 0
        && memcmp (os, hs, (size_t)k * sizeof (uint64_t)) == 0
        && extra_in <= extra_have)
        return;     /* nothing new */
    memcpy (have, out, (size_t)k * sizeof (int32_t));
    memcpy (hs, os, (size_t)k * sizeof (uint64_t));
    h->hdr->fault_nlist = k;
    h->hdr->fault_n = k + (extra_have > extra_in ? extra_have : extra_in);
    if (h->hdr->fault_n > h->size)
        h->hdr->fault_n = h->size;
    atomic_fetch_add (&h->hdr->fault_version, 1);
}
