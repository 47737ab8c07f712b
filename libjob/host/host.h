/* host.h - the host backend's pieces (host.c collectives, shm.c node
 * segment, tcp.c links between node leaders).  Internal to libddp.
 *
 * Ranks of a node share one memory segment made by local rank 0 (a memfd:
 * it has no name, so nothing is left behind even after kill -9; the others
 * open it through /proc/PID/fd/FD once, during init).  Local rank 0 of each
 * node is its leader; leaders are connected by a full mesh of TCP sockets
 * whose addresses were exchanged once through the bootstrap.
 *
 * Collectives advance in steps (one per chunk of data); every rank numbers
 * its steps the same way (seq).  Each local rank owns one cache line of
 * flags:
 *   seq - "I entered step s and my contribution to it is in my slot";
 *   red - "my share of the node reduction of step s is in the result bank";
 *   fin - (leader) "the result of step s is in the result bank".
 * Data live in two banks used alternately (bank = s & 1): before writing a
 * bank at step s a rank waits until every local rank has seq >= s - 1,
 * i.e. has finished step s - 2, the last step that used that bank.
 */
#ifndef DDP_HOST_H
#define DDP_HOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "backend.h"
#include "wait.h"

#define SHM_MAGIC 0x64647073686d3032ULL  /* "ddpshm02" */

struct shm_flags {
    _Atomic uint64_t seq;
    _Atomic uint64_t red;
    _Atomic uint64_t fin;
    char pad[64 - 3 * sizeof (uint64_t)];
};

/* Ranks a fault record can list; more are counted, not listed. */
#define FAULT_LIST_MAX 32

struct shm_hdr {
    uint64_t magic;
    uint64_t slot_bytes;
    uint64_t res_bytes;
    uint32_t local_size;
    _Atomic int32_t attached;
    /* Set once by the first rank that sees a fatal failure: the global rank
     * at fault + 1 (0: none; it claims the record) and the DDP_E* code. */
    _Atomic int32_t fault_rank;
    _Atomic int32_t fault_code;
    _Atomic int32_t fault_kind;     /* enum host_fault_kind; written last */
    _Atomic int32_t fault_reporter; /* global rank that noticed it */
    /* Every rank at fault (ascending, the first fault_nlist of fault_n),
     * written by the claimer before fault_kind. */
    int32_t fault_n;
    int32_t fault_nlist;
    int32_t fault_list[FAULT_LIST_MAX];
    /* 1 once the list is final: in a job of several nodes a timeout's list
     * is completed by the leader with the other leaders' lists. */
    _Atomic int32_t fault_final;
    char pad[256 - 3 * sizeof (uint64_t) - (9 + FAULT_LIST_MAX)
             * sizeof (int32_t)];
};

enum host_fault_kind {
    FAULT_DIED = 1,     /* the process is gone */
    FAULT_ABORTED = 2,  /* it called ddp_abort() */
    FAULT_TIMEOUT = 3,  /* it did not arrive within DDP_TIMEOUT */
    FAULT_LINK = 4,     /* its node's link failed */
};

/* tcp.c: leader address for the bootstrap blob. */
#define HOST_MAX_ADDRS 6
struct host_addr {
    uint32_t n;                 /* number of IPv4 addresses */
    uint32_t ip[HOST_MAX_ADDRS];/* network byte order */
    uint16_t port;              /* network byte order */
    uint64_t cookie;
};

struct host_peer_io;

struct host {
    int rank, size, lrank, lsize, node, nnodes;
    const struct ddp_config *cfg;

    int *local_ranks;       /* lsize global ranks of this node */
    pid_t *lpids;           /* their pids */
    int *pidfds;            /* pidfd per local rank (-1: use kill (pid, 0)) */
    int *rank_node;         /* node of each global rank */
    int *rank_lrank;        /* local rank of each global rank */
    int *node_leader;       /* global rank of each node's leader */
    int *node_size;         /* ranks on each node */
    int **node_ranks;       /* global ranks of each node (local order) */

    /* Shared memory. */
    void *map;
    size_t map_len;
    struct shm_hdr *hdr;
    struct shm_flags *flags;    /* lsize entries */
    char *bank[2];              /* each: lsize slots, then the result */
    size_t slot_bytes, res_bytes;
    int memfd;                  /* local rank 0 until every rank attached */

    /* Leader links.  Leaders keep listening after the mesh is up: a rank
     * that stands in for an absent leader reaches them there with its
     * node's fault list (host_tcp_standin_faults). */
    int listen_fd;
    struct host_addr *leader_addr;  /* per node (jobs of several nodes) */
    int *sock;                  /* per node; -1 for self */
    uint64_t cookie;
    char *scratch;              /* nnodes * res_bytes for received data */
    struct host_peer_io *io;    /* per node exchange state */
    bool fault_sent;

    uint64_t seq;
    unsigned spin_us;
    int broken;                 /* sticky DDP_E* code after a fault */
};

/* Where slot lr / the result of a bank live. */
static inline char *host_slot (struct host *h, int bank, int lr)
{
    return h->bank[bank] + (size_t)lr * h->slot_bytes;
}

static inline char *host_result (struct host *h, int bank)
{
    return h->bank[bank] + (size_t)h->lsize * h->slot_bytes;
}

/* shm.c: create (local rank 0) the segment before the exchange; returns 0
 * or a DDP_E* code after ddpi_error(). */
int host_shm_create (struct host *h);

/* shm.c: attach (other local ranks) to local rank 0's memfd. */
int host_shm_attach (struct host *h, pid_t pid0, int fd0);

/* shm.c: local rank 0 waits (bounded) until every local rank attached,
 * then closes the memfd. */
int host_shm_wait_attached (struct host *h);

void host_shm_destroy (struct host *h);

/* shm.c: wait until flags[lr].<which> >= s (which: 0 seq, 1 red, 2 fin),
 * watching the fault word, peer liveness and the deadline.  Returns 0 or
 * DDP_EPEER / DDP_ETIMEDOUT (after recording the fault). */
int host_wait_flag (struct host *h, int lr, int which, uint64_t s);

/* shm.c: host_wait_flag() for every local rank but this one. */
int host_wait_all (struct host *h, int which, uint64_t s);

/* Record a fault (rank at fault, kind) in the segment and the sticky state
 * (unless one is recorded already), log it; a leader also tells the other
 * leaders.  Returns the DDP_E* code of the fault now in force. */
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

/* Extra time a wait that depends on another rank's wait gets (seconds). */
double host_grace (struct host *h);

/* The DDP_E* code of a fault kind. */
int host_fault_code (int kind);

/* Return the fault recorded in the segment (after ddpi_error()), or 0. */
int host_check_fault (struct host *h);

/* Local peers alive?  Returns 0, or DDP_EPEER naming the dead one. */
int host_check_peers (struct host *h);


/* tcp.c: open the listening socket and fill a (leaders only). */
int host_tcp_listen (struct host *h, struct host_addr *a);

/* tcp.c: connect the leaders' mesh given every node's address. */
int host_tcp_connect (struct host *h, const struct host_addr *addrs);

void host_tcp_close (struct host *h);

/* tcp.c: one exchange among leaders for step s.  For each node n != own:
 * if sendc[n] >= 0 send one message made of the sendc[n] iovecs sendv[n]
 * (0 iovecs: an empty message); if recv_len[n] != (size_t)-1 receive one
 * message of exactly recv_len[n] bytes into recv[n].  Every message
 * is framed with its step number, so a peer's abort or a mismatched step is
 * noticed.  Returns 0 or DDP_EPEER / DDP_ETIMEDOUT / DDP_ETRANSPORT. */
int host_tcp_xchg (struct host *h, uint64_t s, struct iovec **sendv,
                   int *sendc, void **recv, size_t *recv_len);

/* Add ranks (nlist listed of n in all, any order) to the segment's fault
 * record (leader only, after the record was claimed). */
void host_fault_merge (struct host *h, const int32_t *ranks, int nlist, int n);

/* tcp.c, leaders: for up to window seconds, read the FAULT frames other
 * leaders send, and take the lists of stand-ins for absent leaders, and
 * merge them (host_fault_merge); stop early once every other node was
 * heard from (a FAULT, a stand-in, or its data: it is complete).  A node
 * not heard from at all has no rank that arrived: all its ranks are
 * merged. */
void host_tcp_gather_faults (struct host *h, double window);

/* tcp.c, a local rank standing in for its node's absent leader: send the
 * segment's fault list to every other node's leader (at its listening
 * socket; they take it while they gather lists) and merge the lists they
 * answer with, for up to window seconds. */
void host_tcp_standin_faults (struct host *h, double window);

/* tcp.c: best effort, non-blocking: tell every other leader that ranks
 * (nlist listed of n in all, ascending) failed (kind), as noticed by rank
 * reporter. */
void host_tcp_send_fault (struct host *h, const int *ranks, int nlist, int n,
                          int kind, int reporter);

#endif /* DDP_HOST_H */
