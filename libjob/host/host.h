/* host.h - the host backend's pieces (host.c collectives, shm.c node
 * segment, tcp.c links between node leaders, fault.c the fault record
 * behind fault.h).  Internal to libddp.
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
#include "fault.h"
#include "wait.h"

#define SHM_MAGIC 0x64647073686d3032ULL  /* "ddpshm02" */

struct shm_flags {
    _Atomic uint64_t seq;
    _Atomic uint64_t red;
    _Atomic uint64_t fin;
    char pad[64 - 3 * sizeof (uint64_t)];
};

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
    const struct fault_relay *relay;    /* the links, for fault.c */

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

/* Local peers alive?  Returns 0, or DDP_EPEER naming the dead one. */
int host_check_peers (struct host *h);


/* tcp.c: open the listening socket and fill a (leaders only). */
int host_tcp_listen (struct host *h, struct host_addr *a);

/* tcp.c: connect the leaders' mesh given every node's address. */
int host_tcp_connect (struct host *h, const struct host_addr *addrs);

void host_tcp_close (struct host *h);

/* tcp.c: the relay of fault records over the leaders' links (fault.h). */
extern const struct fault_relay host_tcp_relay;

/* tcp.c: one exchange among leaders for step s.  For each node n != own:
 * if sendc[n] >= 0 send one message made of the sendc[n] iovecs sendv[n]
 * (0 iovecs: an empty message); if recv_len[n] != (size_t)-1 receive one
 * message of exactly recv_len[n] bytes into recv[n].  Every message
 * is framed with its step number, so a peer's abort or a mismatched step is
 * noticed.  Returns 0 or DDP_EPEER / DDP_ETIMEDOUT / DDP_ETRANSPORT. */
int host_tcp_xchg (struct host *h, uint64_t s, struct iovec **sendv,
                   int *sendc, void **recv, size_t *recv_len);

#endif /* DDP_HOST_H */
