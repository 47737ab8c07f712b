/* nccl_util.h - the pure parts of the NCCL backend (internal to libddp).
 *
 * Nothing here calls CUDA or NCCL (only their types are used), so all of it
 * is unit-tested on machines without a GPU: the dtype/op mapping (and when
 * an average must run in place), how many
 * NCCL bootstrap roots a communicator gets and which ranks create their
 * unique ids, which GPU a rank picks, the layout of the one blob each rank
 * publishes in the bootstrap fence, and the duplicate-GPU check run on those
 * blobs before NCCL is called.
 */
#ifndef DDP_NCCL_UTIL_H
#define DDP_NCCL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nccl.h>

#include "ddp.h"

/* Default for DDP_NCCL_RANKS_PER_ROOT (PyTorch's and XLA's choice). */
#define NCCL_DEFAULT_RANKS_PER_ROOT 128

/* Map dtype to NCCL's type.  Returns 0 and sets *out, or -1 for a dtype
 * outside ddp_dtype_t. */
int nccl_map_dtype (ddp_dtype_t dtype, ncclDataType_t *out);

/* Map op to NCCL's built-in reduction.  DDP_AVG maps to ncclAvg (NCCL >=
 * 2.10): floating types are pre-multiplied by 1/nranks and summed, integer
 * types are summed then divided with truncation toward zero, which is
 * ddp.h's definition.  Returns 0 and sets *out, or -1 for an unknown op (or
 * AVG with an NCCL built without ncclAvg). */
int nccl_map_op (ddp_op_t op, ncclRedOp_t *out);

/* Must an (all)reduce with op, reading bytes at send and writing bytes at
 * recv (recv NULL where this rank receives nothing: a reduce's non-root),
 * run in place on recv after send is copied there?  True for ncclAvg when
 * send and recv are two disjoint buffers: NCCL 2.28.3 leaves the tail of
 * an out-of-place average unwritten (nccl_coll.c, doc/nccl.md).  False for
 * every other op, in place, no receive buffer, bytes 0, and buffers that
 * overlap without being equal (outside NCCL's contract, and a copy between
 * them would be undefined). */
bool nccl_avg_in_place (ncclRedOp_t op, const void *send, const void *recv,
                        size_t bytes);

/* Address ranges known to hold memory NCCL can use as is (device memory
 * of the rank's GPU, managed memory), so that a call on a buffer inside
 * one needs no cudaPointerGetAttributes: nccl_coll.c ("buffers") says
 * when a range may be kept and what that cannot see.  A few entries: a
 * training step uses a few buffers, and the buckets of one flat buffer
 * merge.  Zero it (= {0}) to start empty; no allocation. */
#define NCCL_KNOWN_MAX 16
struct nccl_known {
    struct nccl_range {
        uintptr_t lo, hi; /* [lo, hi) */
    } r[NCCL_KNOWN_MAX];
    int n;                /* entries in use */
    int next;             /* the back half's next entry to replace */
};

/* Is [p, p + len) inside one kept range (len 0: is p)?  A hit in the back
 * half of the table trades places with one in the front half, so that the
 * ranges in use stay in front and a loop over a few buffers moves
 * nothing.  O(NCCL_KNOWN_MAX); inline: every collective asks it twice. */
static inline bool nccl_known_find (struct nccl_known *k, uintptr_t p,
                                    size_t len)
{
    for (int i = 0; i < k->n; i++) {
        struct nccl_range r = k->r[i];
        if (p >= r.lo && p < r.hi && len <= r.hi - p) {
            if (i >= NCCL_KNOWN_MAX / 2) {
                k->r[i] = k->r[i - NCCL_KNOWN_MAX / 2];
                k->r[i - NCCL_KNOWN_MAX / 2] = r;
            }
            return true;
        }
    }
    return false;
}

/* Keep [p, p + len) (len > 0; ends past the address space are cut): merged
 * into a kept range it touches or overlaps, else in a free entry, else in
 * place of one of the back half (round robin), so the front half's ranges
 * stay.  O(NCCL_KNOWN_MAX). */
void nccl_known_add (struct nccl_known *k, uintptr_t p, size_t len);

/* Number of NCCL bootstrap roots for nranks ranks with at most
 * ranks_per_root ranks per root: ceil (nranks / ranks_per_root), at least 1.
 * Returns -1 if nranks < 1 or ranks_per_root < 1. */
int nccl_num_roots (int nranks, int ranks_per_root);

/* The rank that creates unique id number idx (0 <= idx < nroots): the first
 * rank of the idx-th of nroots near-equal contiguous blocks of ranks (the
 * first nranks % nroots blocks hold one rank more), so every root serves the
 * ranks around it.  Returns -1 on bad arguments. */
int nccl_root_rank (int idx, int nranks, int nroots);

/* If rank creates one of the nroots ids, return its index, else -1. */
int nccl_root_index (int rank, int nranks, int nroots);

/* Count the entries of a CUDA_VISIBLE_DEVICES value ("0,1", "GPU-uuid,...",
 * "" is 0 entries; NULL means unset: -1). */
int nccl_count_visible (const char *cvd);

/* Choose the CUDA device (an index in this process's view) for a rank.
 * ndev: devices CUDA reports; cvd: CUDA_VISIBLE_DEVICES (NULL if unset);
 * device: DDP_DEVICE's value, -1 when unset; local_rank: the rank's index
 * on its node.  DDP_DEVICE when set (the plugin sets 0 for a task that
 * keeps a share of several GPUs: the first of its view); else device 0
 * when CUDA_VISIBLE_DEVICES names exactly one device (the plugin binds one
 * GPU per task); otherwise local_rank modulo ndev.  Returns the index, or
 * -1 with a reason in err when ndev < 1, local_rank < 0, or device is set
 * and not below ndev. */
int nccl_pick_device (int ndev, const char *cvd, long device, int local_rank,
                      char *err, size_t errlen);

/* nccl_pick_device() with DDP_DEVICE from the environment (a malformed
 * one is refused with env.c's message in err), saying under DDP_DEBUG
 * which device it chose and why.  Returns the index or -1. */
int nccl_choose_device (int ndev, const char *cvd, int local_rank, char *err,
                        size_t errlen);

/* ---- who is gone or late: the pure parts (watch.h asks the peers) ---- */

/* What a rank is doing, as one 64-bit word its watch answers with: the
 * number of the collective it entered last (1, 2, ...: every barrier and
 * collective, the one of ddp_init included, as the host backend counts
 * them), which call that is, and flags. */
enum nccl_call {
    NCCL_CALL_NONE = 0,
    NCCL_CALL_INIT,       /* ddp_init, before its first barrier */
    NCCL_CALL_BARRIER,
    NCCL_CALL_BCAST,
    NCCL_CALL_REDUCE,
    NCCL_CALL_ALLREDUCE,
    NCCL_CALL_GATHER,
    NCCL_CALL_ALLGATHER,
    NCCL_CALL_FINALIZE,   /* ddp_finalize, after its last barrier */
    NCCL_CALL_REDUCE_SCATTER,
    NCCL_CALL_SPLIT,      /* ddp_comm_split, on the parent */
    NCCL_CALLS
};
#define NCCL_ST_IN 1u       /* inside the call (else it left it) */
#define NCCL_ST_STREAM 2u   /* the _stream variant */
#define NCCL_ST_FAILED 4u   /* this rank saw the communicator fail */
#define NCCL_ST_ABORTED 8u  /* this rank called ddp_abort */
#define NCCL_STATE(num, call, flags)                                         \
    ((uint64_t)(num) << 16 | (uint64_t)(call) << 8 | (uint64_t)(flags))
#define NCCL_STATE_NUM(st) ((uint64_t)(st) >> 16)
#define NCCL_STATE_CALL(st) ((int)((st) >> 8 & 0xff))
#define NCCL_STATE_FLAGS(st) ((unsigned)((st) & 0xff))

/* The call of state st as a user knows it: "ddp_allreduce_stream #12",
 * "ddp_barrier #6", "ddp_init", "ddp_finalize" ("a collective #N" for a
 * call unknown to this build), into buf.  Returns buf. */
char *nccl_state_name (uint64_t st, char *buf, size_t len);

/* What asking a peer found. */
enum nccl_seen {
    NCCL_SEEN_NONE = 0,   /* not asked (no address, or no time left) */
    NCCL_SEEN_ANSWERED,   /* it answered: state is what it is doing */
    NCCL_SEEN_GONE,       /* an address refused or closed the connection
                             unanswered (or another process answered), and
                             none took the question: no process of this job
                             listens there now (its other addresses may
                             lead nowhere) */
    NCCL_SEEN_UNREACHABLE,/* no connection within the window */
    NCCL_SEEN_SILENT,     /* connected, no answer within the window */
};

struct nccl_peer {
    int seen;             /* enum nccl_seen */
    uint64_t state;       /* NCCL_SEEN_ANSWERED: its NCCL_STATE word */
};

/* Write into out (len bytes) which ranks are at fault, as peers[0..size-1]
 * (rank me's own entry is ignored) shows them to a rank in state mine,
 * grouped by what was found, at most 4 groups, the rest counted: e.g.
 * "rank 1 (host n2) is gone: its process exited (connection refused)",
 * "ranks 3,5 (host n4) never entered ddp_barrier #6 (they left
 * ddp_allreduce #4)".  At fault: gone, unreachable, silent, ddp_abort
 * called, in ddp_finalize or still in ddp_init, behind (in or after an
 * earlier call than mine), or in another call of my number.  Not at fault:
 * a rank that failed too, or is in my call or a later one, or, when
 * another rank is gone, unreachable, silent or aborted, one still in the
 * call just before mine (it finished here: that rank is on its way).  host (arg, r)
 * gives rank r's host name; window is how long the asking waited
 * (seconds, for the texts).  Returns the number of ranks at fault; with
 * none, out says so ("no rank is gone or behind: 3 of 3 answered
 * (NCCL_DEBUG=WARN may say more)") and 0
 * is returned; -1 when out of memory (out then lists less). */
int nccl_describe (const struct nccl_peer *peers, int size, int me,
                   uint64_t mine, const char *(*host) (void *arg, int r),
                   void *arg, double window, char *out, size_t len);

/* Where a rank's watch listens (watch.h): in its blob. */
#define NCCL_WATCH_IPS 4
struct nccl_watch_addr {
    uint32_t ip[NCCL_WATCH_IPS]; /* IPv4, network byte order, best first */
    uint32_t nip;                /* 0: the rank has no watch */
    uint16_t port;               /* network byte order */
    uint16_t pad;
    uint64_t cookie;             /* random: what a peer must quote */
    uint64_t net;                /* ddpi_net_id: which addresses of it a
                                  * peer may try (net.h) */
};

/* What each rank publishes in the one bootstrap fence.  Fixed layout; every
 * rank runs the same library build, checked through magic and version. */
#define NCCL_BLOB_MAGIC 0x64647033u /* "ddp3" */
struct nccl_blob {
    uint32_t magic;
    int32_t nccl_version;   /* ncclGetVersion() of this rank */
    int32_t status;         /* 0, or the DDP_E* code this rank failed with */
    int32_t ranks_per_root; /* DDP_NCCL_RANKS_PER_ROOT as this rank read it */
    int32_t device;         /* CUDA device index in the rank's view, or -1 */
    int32_t has_id;         /* 1 when id below is a root's unique id */
    char host[64];          /* gethostname(), NUL-terminated */
    char busid[32];         /* PCI bus id "0000:3b:00.0", or "" */
    uint8_t uuid[16];       /* GPU UUID, all zero when unknown */
    char reason[160];       /* why status != 0 */
    struct nccl_watch_addr watch;
    ncclUniqueId id;
};

/* Check that len bytes at p are one well-formed blob and copy it to out
 * (strings NUL-terminated).  Returns 0, or -1 with a reason in err. */
int nccl_blob_decode (const void *p, size_t len, struct nccl_blob *out,
                      char *err, size_t errlen);

/* Which failed rank a rank names, among blobs[0..n-1] (blob r is rank r's):
 * me itself when its own status is not 0 (every rank that failed says why
 * it did, not why another did), else the lowest rank that failed, else -1.
 */
int nccl_blob_failed (const struct nccl_blob *blobs, int n, int me);

/* Two or more ranks on one GPU (same host and UUID, or the same host and
 * PCI bus id when a UUID is unknown), among blobs[0..n-1] (blob r is rank
 * r's).  Returns 0 when every rank has its own GPU; 1 with a message naming
 * the lowest rank that shares a GPU, every other rank on that GPU, the host
 * and the GPU in msg (e.g. "ranks 0,2 on host n1 share GPU 0000:3b:00.0");
 * -1 (and why in msg) when out of memory.  O(n log n) time (two sorts of
 * n keys), n * 16 bytes of memory. */
int nccl_find_duplicate_gpu (const struct nccl_blob *blobs, int n, char *msg,
                             size_t msglen);

/* Format a UUID as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into buf
 * (at least 41 bytes).  Returns buf. */
char *nccl_format_uuid (const uint8_t uuid[16], char *buf, size_t len);

#endif /* DDP_NCCL_UTIL_H */
