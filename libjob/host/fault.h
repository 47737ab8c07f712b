/* fault.h - the host backend's fault policy (fault.c).  Internal to libddp.
 *
 * A node keeps one fault record in its shared segment (struct shm_hdr in
 * host_core.h; record.h claims and merges it): the first rank that sees a
 * fatal failure claims it (the ranks at fault, the kind, who noticed);
 * every local rank then reports that same record as its error, and keeps
 * its code as the sticky state of the library.  In a job of several nodes
 * the record also travels: the links tell other nodes (a FAULT frame), and
 * for a timeout, where a node only knows its own absent ranks, the nodes
 * swap their lists for a while before anyone reports.
 *
 * fault.c is above the transport: the transport reports what it saw (an
 * event, host_core.h), and host_fault_event() decides what it means.  It
 * reaches the links only through the relay (flood.c, h->relay), downwards;
 * nothing below calls it (doc/host-backend.md).
 *
 * A timeout between nodes (a lane waited DDP_TIMEOUT for a partner) is
 * claimed with an empty list: a node only knows who is absent among its
 * own ranks, and the partner waited for may itself be waiting.  Each
 * node's speaker (its lowest local rank that is at the current step, not
 * at fault and not the rank waited for) adds the local ranks that never
 * reached that step, and the rank waited for if it is a node-mate in the
 * call that does not take the record in (stopped); then the speakers swap
 * lists with their partner nodes and pass every change on, until
 * HOST_SWAP_S after the report began (host.h, "Timeouts": the bound); a
 * partner node nobody speaks for has all its ranks named.  If the list is
 * still empty then and the rank waited for is alive (it took the record
 * in, or its node's speaker answered), the link carried nothing: that is
 * reported, naming both nodes (DDP_ETRANSPORT), not a late rank; else the
 * rank waited for is named.
 */
#ifndef DDP_FAULT_H
#define DDP_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "host_core.h"

/* The DDP_E* code of a fault kind. */
int host_fault_code (int kind);

/* The API name of a collective kind (enum host_kind), e.g. "ddp_bcast";
 * "ddp_finalize" for FAULT_KIND_FINALIZE; "a collective" for KIND_OTHER
 * or a kind out of range. */
const char *host_call_name (int kind);

/* Record a fault (rank at fault, kind) in the segment and the sticky state
 * (unless one is recorded already), log it; the node also tells the other
 * nodes (relay).  Returns the DDP_E* code of the fault now in force. */
int host_fault (struct host *h, int bad_rank, int kind);

/* As host_fault() for several ranks at once (ranks ascending, n >= 1; a
 * node relays the whole list, so every rank names all of them). */
int host_fault_set (struct host *h, const int *ranks, int n, int kind);

/* A FAULT_MISMATCH between rank other and this one (host_fault_set of the
 * pair, ascending): they passed different arguments to one call. */
int host_fault_mismatch (struct host *h, int other);

/* The node's fault record's kind (it is claimed), waiting (1 ms at most)
 * for a claimer that is still writing it: what it writes before the kind
 * (the list, fault_call) is then there.  FAULT_DIED if it never shows
 * (the common case then). */
int host_record_kind (struct host *h);

/* This rank leaves in ddp_finalize: the collectives of the others from
 * their call from on fail, naming it.  from is h->call when the others
 * are elsewhere (its barrier's short wait ran out, or one of them is in
 * another call), h->call + 1 after a barrier every rank came to.  After
 * the bytes queued on its links left (LEAVE_FLUSH, 0.3 s at most), claim
 * the record as FAULT_LEFT of this rank (or add it to such a record), and
 * tell the other nodes (where from is h->call, on the side too:
 * flood.c).  Logs nothing unless the record is another fault; sets
 * h->leaving.  Returns the record's DDP_E* code.  A FAULT_MISMATCH record
 * of this call or an earlier one is reported instead (DDP_EMISMATCH):
 * ranks that disagreed never leave quietly. */
int host_fault_leave (struct host *h, uint64_t from);

/* Write the call a rank described (host_desc's what and count) to buf
 * (len bytes; always terminated), as DDP_CHECK names it: "ddp_allreduce
 * of 4 float32 with SUM", "ddp_bcast of 2 int32 from root 1",
 * "ddp_barrier". */
void host_desc_name (char *buf, size_t len, uint64_t what, uint64_t count);

/* How local rank lr described its call number call (flags' desc): true
 * with *what and *count, false when its slot holds another call (it
 * went on, or has not come yet). */
bool host_desc_of (struct host *h, int lr, uint64_t call, uint64_t *what,
                   uint64_t *count);

/* The API name of a kind of host_desc ("ddp_allgather", "ddp_barrier");
 * "a collective" out of range. */
const char *host_desc_kind_name (int dkind);

/* Rank other made another call than this one (what, count: as it
 * described it; call: its number of it, 0 unknown): a FAULT_MISMATCH of
 * the pair, whose error names both calls.  Returns the DDP_E* code of the
 * fault now in force (DDP_EMISMATCH unless another came first). */
int host_fault_calls (struct host *h, int other, uint64_t what,
                      uint64_t count, uint64_t call);

/* Rank other's calls before this one differ from this rank's (another
 * trail: trail.h) though this call is the same on both.  call: the
 * earlier call the two made differently where it is known (the error
 * names both ranks' descriptions of it: this node's flags, or h->mm_*
 * for a rank on another node), else 0 (the error says the calls before
 * this one differed).  A FAULT_MISMATCH of the pair, in ddp_finalize as
 * in any call (no rank leaves quietly over a disagreement that would
 * have given wrong data).  Returns the DDP_E* code of the fault now in
 * force (DDP_EMISMATCH unless another came first). */
int host_fault_history (struct host *h, int other, uint64_t call);

/* The event the transport reported in h->ev (it returned HOST_EVENT):
 * decide what it means (the fault kind, who is at fault), claim the record
 * unless one is claimed already, tell the other nodes and the user.
 * Clears h->ev; returns the DDP_E* code of the fault now in force. */
int host_fault_event (struct host *h);

/* A transport's return rc as the caller's: HOST_EVENT becomes the fault's
 * code (host_fault_event()); 0 and DDP_E* codes stay. */
static inline int host_fault_rc (struct host *h, int rc)
{
    return rc == HOST_EVENT ? host_fault_event (h) : rc;
}

/* Return the fault recorded in the segment (after ddpi_error(), logged
 * once per rank), or 0 when there is none. */
int host_check_fault (struct host *h);

#endif /* DDP_FAULT_H */
