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
 * through the relay callbacks below, which host.c hands in at create.  The
 * files of the host backend call each other along a DAG:
 *   host.c -> tcp.c, shm.c, fault.c;  tcp.c -> fault.c;  shm.c -> fault.c.
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
    /* Tell the other nodes that ranks (nlist listed of n in all,
     * ascending) failed (kind), as noticed by rank reporter; must not
     * block. */
    void (*send) (struct host *h, const int *ranks, int nlist, int n,
                  int kind, int reporter);
    /* This node's speaker (its leader): for up to window seconds take the
     * other nodes' lists into the record (fault_merge). */
    void (*gather) (struct host *h, double window);
    /* A local rank standing in for its node's absent leader: the same,
     * reaching the other nodes without the leader's links. */
    void (*standin) (struct host *h, double window);
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
 * Returns 1, or 0 when a record was already there (the first claim
 * stands).  Does not log or relay. */
int host_fault_claim (struct host *h, const int *ranks, int nlist, int n,
                      int kind, int reporter);

/* Add ranks (nlist listed of n in all, any order) to the segment's fault
 * record (after the record was claimed). */
void host_fault_merge (struct host *h, const int32_t *ranks, int nlist,
                       int n);

/* Return the fault recorded in the segment (after ddpi_error(), logged
 * once per rank), or 0 when there is none. */
int host_check_fault (struct host *h);

#endif /* DDP_FAULT_H */
