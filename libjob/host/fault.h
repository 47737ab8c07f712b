/* fault.h - the host backend's fault record (fault.c).  Internal to libddp.
 *
 * A node keeps one fault record in its shared segment (struct shm_hdr in
 * host.h): the first rank that sees a fatal failure claims it (the ranks at
 * fault, the kind, who noticed); every local rank then reports that same
 * record as its error, and keeps its code as the sticky state of the
 * library.  In a job of several nodes the record also travels: the links
 * tell other nodes (a FAULT frame), and for a timeout, where a node only
 * knows its own absent ranks, the nodes swap their lists for a while
 * before anyone reports.
 *
 * fault.c calls no other file of libjob/host: what needs the links is done
 * through the relay callbacks below, which host.c hands in at create, so
 * the files of the host backend call each other along a DAG (host.h).
 *
 * A timeout between nodes (a lane waited DDP_TIMEOUT + 2 graces for a
 * partner) is claimed with an empty list: a node only knows who is absent
 * among its own ranks, and the partner waited for may itself be waiting.
 * Each node's speaker (its lowest local rank that is at the current step
 * and not at fault) adds the local ranks that never reached that step,
 * then the speakers swap lists with their partner nodes and pass every
 * change on, for a window; a partner node nobody speaks for has all its
 * ranks named.  Only if the list is still empty then is the rank waited for
 * named.
 */
#ifndef DDP_FAULT_H
#define DDP_FAULT_H

#include <stdint.h>

struct host;

/* Ranks a fault record can list; more are counted, not listed. */
#define FAULT_LIST_MAX 32

enum host_fault_kind {
    FAULT_DIED = 1,     /* the process is gone */
    FAULT_ABORTED = 2,  /* it called ddp_abort() */
    FAULT_TIMEOUT = 3,  /* it did not arrive within DDP_TIMEOUT */
    FAULT_LINK = 4,     /* its node's link failed */
};

/* What the fault record needs from the links between nodes.  Each is best
 * effort: it cannot fail, and it returns within its window. */
struct fault_relay {
    /* A lane: tell its partner nodes that ranks (nlist listed of n in all,
     * ascending; nlist 0: to be found) failed (kind), as noticed by rank
     * reporter; must not block.  They pass it on (flooding). */
    void (*send) (struct host *h, const int *ranks, int nlist, int n,
                  int kind, int reporter);
    /* A lane waiting in shared memory: take a FAULT frame that arrived on
     * its links into the record; must not block. */
    void (*poll) (struct host *h);
    /* This node's speaker: for up to window seconds swap lists with the
     * speakers of the partner nodes, merging theirs into the record
     * (host_fault_merge) and passing every change on. */
    void (*gather) (struct host *h, double window);
};

/* Extra time a wait that depends on another rank's wait gets (seconds). */
double host_grace (struct host *h);

/* The DDP_E* code of a fault kind. */
int host_fault_code (int kind);

/* Record a fault (rank at fault, kind) in the segment and the sticky state
 * (unless one is recorded already), log it; the node also tells the other
 * nodes (relay).  Returns the DDP_E* code of the fault now in force. */
int host_fault (struct host *h, int bad_rank, int kind);

/* As host_fault() for several ranks at once (ranks ascending, n >= 1; a
 * node relays the whole list, so every rank names all of them). */
int host_fault_set (struct host *h, const int *ranks, int n, int kind);

/* Claim the segment's fault record for ranks (nlist listed of n in all, in
 * any order: the record keeps them sorted), noticed by rank reporter.
 * nlist may be 0 (a timeout between nodes, to be filled by the lists):
 * ranks[0] is then the rank named if nothing fills it.  Returns 1, or 0
 * when a record was already there (the first claim stands).  Does not log
 * or relay. */
int host_fault_claim (struct host *h, const int *ranks, int nlist, int n,
                      int kind, int reporter);

/* Add ranks (nlist listed of n in all, any order) to the segment's fault
 * record (after the record was claimed); bumps its version when that
 * changed it.  Ranks counted but not listed are not double counted when
 * the same list comes again: the count is the union of the lists plus
 * the larger of the two unlisted parts. */
void host_fault_merge (struct host *h, const int32_t *ranks, int nlist,
                       int n);

/* Return the fault recorded in the segment (after ddpi_error(), logged
 * once per rank), or 0 when there is none. */
int host_check_fault (struct host *h);

#endif /* DDP_FAULT_H */
