/* record.h - the node's fault record as data (record.c): claim it, merge
 * lists into it.  No policy: nothing is logged, relayed or decided here.
 * The bottom of the host backend with host_core.h: the transport takes a
 * FAULT frame from another node into the record with these (the record
 * is the node's inbox of faults), and fault.c claims and completes it.
 * Internal to libddp. */
#ifndef DDP_RECORD_H
#define DDP_RECORD_H

#include <stdint.h>

#include "host_core.h"

/* Claim the segment's fault record for ranks (nlist listed of n in all, in
 * any order: the record keeps them sorted), noticed by rank reporter in
 * its collective call (h->call's numbering; 0: unknown).
 * nlist may be 0 (a timeout between nodes, to be filled by the lists):
 * ranks[0] is then the rank named if nothing fills it.  Returns 1, or 0
 * when a record was already there (the first claim stands).  Does not log
 * or relay. */
int host_fault_claim (struct host *h, const int *ranks, int nlist, int n,
                      int kind, int reporter, uint64_t call);

/* Add ranks (nlist listed of n in all, any order; states: what each was
 * doing, NULL: unknown) to the segment's fault record (after the record
 * was claimed); a rank listed already gets its state when the record did
 * not know it; bumps its version when that changed the record.  Ranks
 * counted but not listed are not double counted when the same list comes
 * again: the count is the union of the lists plus the larger of the two
 * unlisted parts. */
void host_fault_merge (struct host *h, const int32_t *ranks,
                       const uint64_t *states, int nlist, int n);

#endif /* DDP_RECORD_H */
