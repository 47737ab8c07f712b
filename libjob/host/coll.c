/* coll.c - the host backend's collectives (host.h: the entry points of
 * ddpi_backend_host): a call's start and end (its agreement on the
 * outcome), the straggler report, a rank alone's copies.  A job of one
 * node runs the whole call in node.c; on several nodes cross.c runs its
 * three phases.  host.h has the design and the reduction order. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ddp_internal.h"
#include "host.h"
#include "node.h"
#include "reduce.h"
#include "schedule.h"

const char *const host_kind_names[HOST_KINDS] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "allgather",
    "reduce_scatter", "other",
};

/* ---------------------------------------------------------- stragglers */

/* An arrival stamp: the low 24 bits of the call number, then the low 40
 * bits of the monotonic clock in ns (18 minutes around: differences of
 * arrivals at one call are far smaller). */
#define STRAG_NS_BITS 40
#define STRAG_NS_MASK ((UINT64_C(1) << STRAG_NS_BITS) - 1)
#define STRAG_STAMP(c, ns) \
    ((uint64_t)(c) << STRAG_NS_BITS | ((uint64_t)(ns) & STRAG_NS_MASK))
#define STRAG_CALL(st) ((st) >> STRAG_NS_BITS)

static uint64_t mono_ns (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This rank's collective h->call succeeded: if every local rank's stamp of
 * it is there and none is later than this rank's (ties go to the higher
 * local rank), this rank was the node's last: count it and how long after
 * the node's first it came.  A local rank is never HOST_ARRIVE_SLOTS
 * calls ahead of one still in a call (each call has a node step, and a
 * step waits for every local rank to have finished the step before, or
 * in a ring at most HOST_RING_KMAX - 1 before), so its arrive slot of c is
 * either c's stamp or an older one: a rank not yet arrived. */
static void strag_count (struct host *h)
{
    int slot = (int)(h->call % HOST_ARRIVE_SLOTS);
    uint64_t tag = h->call & ((UINT64_C(1) << (64 - STRAG_NS_BITS)) - 1);
    uint64_t mine = atomic_load (&h->flags[h->lrank].arrive[slot]);
    uint64_t late = 0;

    for (int lr = 0; lr < h->lsize; lr++) {
        uint64_t st = atomic_load (&h->flags[lr].arrive[slot]);
        uint64_t d = (mine - st) & STRAG_NS_MASK;   /* how much earlier */
        if (lr == h->lrank)
            continue;
        if (STRAG_CALL (st) != tag || d > STRAG_NS_MASK / 2
            || (d == 0 && lr > h->lrank))
            return;
        if (d > late)
            late = d;
    }
    h->strag_last++;
    h->strag_late_ns += late;
}

/* At finalize (every rank, the straggler report on): find the 3 ranks
 * that were last most often, by rounds of a 2-element allreduce (MAX):
 * element 0 is (count << 32 | ~rank) of the ranks not yet picked, element
 * 1 the average lateness (us) of the rank picked in the round before.  The
 * traffic does not grow with the world size.  Rank 0 logs them. */
static int strag_report (struct host *h)
{
    uint64_t calls = h->call, v[2], key[3] = { 0 }, avg[3] = { 0 };
    uint64_t me = h->strag_last << 32 | (UINT32_MAX - (uint32_t)h->rank);
    char out[512];
    size_t at;
    int rc;

    for (int i = 0; i <= 3; i++) {
        bool picked = false, prev = false;
        for (int j = 0; j < i; j++)
            picked |= key[j] == me;
        prev = i > 0 && key[i - 1] == me;
        v[0] = i < 3 && !picked ? me : 0;
        v[1] = prev && h->strag_last
                   ? h->strag_late_ns / h->strag_last / 1000 : 0;
        rc = host_allreduce (h, v, v, 2, DDP_UINT64, DDP_MAX);
        if (rc < 0)
            return rc;
        if (i < 3)
            key[i] = v[0];
        if (i > 0)
            avg[i - 1] = v[1];
    }
    if (h->rank != 0)
        return 0;
    at = (size_t)snprintf (out, sizeof (out),
                           "stragglers over %llu collectives:",
                           (unsigned long long)calls);
    for (int i = 0; i < 3 && key[i] >> 32 && at < sizeof (out); i++) {
        int r = (int)(UINT32_MAX - (uint32_t)key[i]);
        unsigned long long n = key[i] >> 32;
        at += (size_t)snprintf (out + at, sizeof (out) - at,
                                "%s rank %d (node %d) last in %llu (%llu%%), "
                                "%.1f ms late on average", i ? ";" : "", r,
                                h->rank_node[r], n, calls ? n * 100 / calls : 0,
                                (double)avg[i] / 1e3);
    }
    if (!(key[0] >> 32) && at < sizeof (out))
        snprintf (out + at, sizeof (out) - at,
                  " none (no node has two ranks)");
    ddpi_log ("%s", out);
    return 0;
}

/* ------------------------------------------------------------ a call */

/* Describe call h->call as this rank makes it (host_desc): dkind
 * (check.h's numbering: enum ddp_coll_kind, HOST_DESC_BARRIER), and of
 * count, dtype, op and root what the kind takes, with the trail of the
 * calls before it (trail.h), its signature of both, and keep it in past;
 * show it to the node (flags' desc, read only to name the call in a
 * mismatch). */
static void describe (struct host *h, int dkind, size_t count,
                      ddp_dtype_t dtype, ddp_op_t op, int root)
{
    bool data = dkind != HOST_DESC_BARRIER;
    enum ddp_coll_kind k = (enum ddp_coll_kind)dkind;
    _Atomic uint64_t *d = h->flags[h->lrank].desc[h->call % HOST_DESC_SLOTS];
    uint64_t what = HOST_DESC_WHAT (dkind, data ? (int)dtype + 1 : 0,
                                    data && ddp_coll_has_op (k) ? (int)op + 1
                                                                : 0,
                                    data && ddp_coll_has_root (k) ? root : 0);
    uint64_t n = data ? (uint64_t)count : 0;

    /* A loop makes the same call again and again: its hash stays. */
    if (what != h->desc.what || n != h->desc.count) {
        h->desc.what = what;
        h->desc.count = n;
        h->desc.hash = trail_hash (what, n);
    }
    h->desc.trail = h->trail;
    h->past[h->call % HOST_DESC_SLOTS] = (struct trail_call){ what, n,
                                                              h->trail };
    h->trail = trail_step (h->trail, h->desc.hash);
    h->desc.sig = trail_sig (what, h->trail);
    atomic_store_explicit (&d[1], h->desc.count, memory_order_relaxed);
    atomic_store_explicit (&d[0], HOST_DESC_STAMP (h->desc.what, h->call),
                           memory_order_release);
}

/* Count and number a call of kind: what every call does first. */
static void call_count (struct host *h, int kind)
{
    h->kind = kind;
    h->stats[kind].calls++;
    h->call++;
}

/* Start a collective of kind (the call as described: dkind, count, dtype,
 * op, root, see describe()): counts it, numbers it, and shows it to the
 * node (the diagnosis of a timeout names it; a mismatch names the whole
 * call). */
static int call_begin (struct host *h, int kind, int dkind, size_t count,
                       ddp_dtype_t dtype, ddp_op_t op, int root)
{
    int rc;

    if (h->lk) {
        /* Across nodes only: a clock read is lost in a network call. */
        if (h->kind == KIND_BARRIER || h->kind == KIND_ALLREDUCE
            || h->kind == KIND_ALLGATHER || h->kind == KIND_REDUCE_SCATTER)
            h->full_entry = h->entry;
        h->entry = ddpi_now ();
    }
    call_count (h, kind);
    describe (h, dkind, count, dtype, op, root);
    atomic_store_explicit (&h->flags[h->lrank].state,
                           FAULT_STATE (h->call, kind, 1),
                           memory_order_relaxed);
    if (h->strag)
        atomic_store (&h->flags[h->lrank].arrive[h->call % HOST_ARRIVE_SLOTS],
                      STRAG_STAMP (h->call, mono_ns ()));
    if (h->broken || !host_record_stops (h))
        return h->broken;
    /* A rank left (its ddp_finalize) or failed before this call: it fails
     * at once, where it would wait for that rank or read its last call. */
    rc = h->leaving ? host_fault_leave (h, h->call) : host_check_fault (h);
    return rc < 0 ? rc : DDP_EPEER;
}

/* A collective that succeeded here: a rank that gave up on it (a timeout)
 * claimed the fault record before it returned, in this node's segment or,
 * through the FAULT frame it sent first, on a lane's links.  Then this
 * rank fails it too, so that a collective ends the same way everywhere;
 * see doc/ddp.7 (a collective's outcome) for the window that is left. */
static int call_agree (struct host *h)
{
    /* A peer that gave up on this call entered it after it finished the
     * last call in which it waited for this rank (a barrier, allreduce or
     * allgather, entered here at full_entry), and waited DDP_TIMEOUT since:
     * not before full_entry + timeout in real time.  Until then there is
     * nothing on the links to look for (a poll costs a system call on every
     * collective otherwise); 0.9 leaves room for clock rates.  This takes
     * DDP_TIMEOUT to be the same on every rank, as srun gives it. */
    if (h->lk && h->relay && h->relay->poll
        && (h->full_entry == 0
            || ddpi_now () - h->full_entry >= 0.9 * h->cfg->timeout_s))
        h->relay->poll (h);
    if (atomic_load (&h->hdr->fault_rank) == 0)
        return 0;
    /* Noticed by a node-mate in a later call (it ran ahead of this rank
     * on the rings, or left this call first): this one completed on every
     * rank; the next one meets the record.  The claimer may still be
     * writing it: its call comes before its kind, so wait for the kind
     * (a rank 50 calls behind failed a call that had completed, once in
     * some hundred runs of collectives.t's mismatch of a bcast's root). */
    (void)host_record_kind (h);
    if (atomic_load (&h->hdr->fault_kind) != 0
        && h->hdr->fault_call > h->call)
        return 0;
    /* In ddp_finalize: the others are elsewhere, and this rank leaves. */
    if (h->leaving)
        return host_fault_leave (h, h->call);
    ddpi_log ("ddp_%s #%llu completed here, but another rank gave up on it: "
              "it fails here too", host_kind_names[h->kind],
              (unsigned long long)h->call);
    return host_check_fault (h);
}

/* A call of a communicator of one (h->size 1): counted, and nothing else
 * of call_begin()'s (no peer reads this rank's flags, no record can name
 * another rank); its result is a copy.  Returns h->broken (a local fault
 * before it), else 0.  call_end() ends it, as any call. */
static int call_alone (struct host *h, int kind)
{
    call_count (h, kind);
    return h->broken;
}

/* The collective under way ended with rc: show that it was left. */
static int call_end (struct host *h, int rc)
{
    if (rc == 0)
        rc = call_agree (h);
    atomic_store_explicit (&h->flags[h->lrank].state,
                           FAULT_STATE (h->call, h->kind, 0),
                           memory_order_relaxed);
    if (rc == 0 && h->strag && h->lsize > 1)
        strag_count (h);
    return rc;
}

/* ------------------------------------------------------------ the calls */

/* A barrier's steps, after call_begin: a node step with the call's tag
 * (node_step_enter), which every rank that waits on another's step
 * checks, so that a rank in another collective fails the barrier instead
 * of passing it; then, on several nodes, lane 0 runs the cross-node
 * barrier (frames carry the call too) and tells the node (fin). */
static int barrier_steps (struct host *h)
{
    uint64_t s = 0;
    int rc;

    if ((rc = node_step_enter (h, &s)) < 0)
        return rc;
    if (h->nnodes == 1 || h->lrank == 0) {
        if ((rc = node_wait_all (h, 0, s)) < 0
            || (rc = node_tags_check (h, h->lsize, s)) < 0)
            return rc;
        if (h->nnodes == 1)
            return 0;
    }
    else {
        if ((rc = node_wait_flag (h, 0, 2, s)) < 0)
            return rc;
        return node_tag_check (h, 0, s);
    }
    if ((rc = algo_barrier (h)) < 0)
        return rc;
    host_post (h, 2, s);
    return 0;
}

/* A barrier as the call describes it (call_begin's dkind). */
static int barrier_begin (struct host *h)
{
    return call_begin (h, KIND_BARRIER, HOST_DESC_BARRIER, 0, DDP_INT8,
                       DDP_SUM, 0);
}

static int barrier_run (struct host *h)
{
    int rc = barrier_begin (h);

    return rc < 0 ? rc : barrier_steps (h);
}

/* A rank alone: its own bytes are the result, copied to recv (recv ==
 * send: nothing).  In pieces of COPY_PIECE: glibc's memcpy of one large
 * block (1 MiB here) uses non-temporal stores, which leave the result out
 * of the cache the caller reads it from next; measured on this machine's
 * EPYC, 1 MiB took 21 us as one call and 18 us in 256 KiB pieces (Open
 * MPI's copy, in pieces, took 17 us), 4 MiB the same either way.
 * Overlapping buffers other than the same one go through memmove. */
#define COPY_PIECE ((size_t)256 << 10)
static __attribute__ ((noinline)) void copy_pieces (char *recv,
                                                    const char *send,
                                                    size_t bytes)
{
    /* Compared as integers: < between pointers to different objects is
     * undefined in C. */
    uintptr_t r = (uintptr_t)recv, s = (uintptr_t)send;

    if (r < s + bytes && s < r + bytes) {
        memmove (recv, send, bytes);
        return;
    }
    for (size_t off = 0; off < bytes; off += COPY_PIECE)
        memcpy (recv + off, send + off,
                bytes - off < COPY_PIECE ? bytes - off : COPY_PIECE);
}

static inline void copy_alone (char *recv, const char *send, size_t bytes)
{
    if (recv == send || bytes == 0)
        return;
    if (bytes <= COPY_PIECE)    /* one piece: memmove costs what memcpy does */
        memmove (recv, send, bytes);
    else
        copy_pieces (recv, send, bytes);
}

/* A rank alone's reduction of a 16-bit float, rounded through float32 as
 * with more ranks: out of reduce_alone's common path. */
static __attribute__ ((noinline)) int widen_alone (struct host *h,
                                                   const char *send,
                                                   char *recv, size_t count,
                                                   ddp_dtype_t dtype,
                                                   ddp_op_t op)
{
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    void *w = host_scratch (h, 0, count * ddp_dtype_size (at));

    if (!w)
        return DDP_ENOMEM;
    ddpi_widen (w, send, count, dtype, op);
    ddpi_reduce_finish (w, count, at, op, 1);
    ddpi_narrow (recv, w, count, dtype, op);
    return 0;
}

/* The calls of a rank alone (a world or group of one) are counted, and
 * their copies made, without a call's start and end: no node-mate reads
 * its state, and no peer records a fault in its segment.  Sticky errors
 * stay (call_alone).  That start and end were a third of an 8-byte
 * all-reduce's time alone (issue 49's rows of one rank). */
static inline int reduce_alone (struct host *h, int kind, const char *send,
                                char *recv, size_t count, ddp_dtype_t dtype,
                                ddp_op_t op)
{
    int rc;

    if ((rc = call_alone (h, kind)) < 0)
        return rc;
    /* One rank's value is the result (AVG divides by 1) unless a 16-bit
     * float is rounded through float32. */
    if (ddpi_acc_dtype (dtype, op) != dtype)
        return widen_alone (h, send, recv, count, dtype, op);
    copy_alone (recv, send, count * ddpi_dtype_bytes (dtype));
    return 0;
}

static int gather_alone (struct host *h, int kind, const char *send,
                         char *recv, size_t count, ddp_dtype_t dtype)
{
    int rc = call_alone (h, kind);

    if (rc == 0 && recv)
        copy_alone (recv, send, count * ddpi_dtype_bytes (dtype));
    return rc;
}

static int reduce_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    bool want = root < 0 || root == h->rank;
    int rc;

    if ((rc = call_begin (h, root < 0 ? KIND_ALLREDUCE : KIND_REDUCE,
                          root < 0 ? DDP_COLL_ALLREDUCE : DDP_COLL_REDUCE,
                          count, dtype, op, root)) < 0)
        return rc;
    if (h->nnodes > 1)
        return root < 0
                   ? host_allreduce_nodes (h, send, recv, count, dtype, op)
                   : host_reduce_nodes (h, send, recv, count, dtype, op,
                                        root);
    return node_reduce_run (h, send, want ? recv : NULL, count, dtype, op,
                            root < 0);
}

int host_barrier (void *ctx)
{
    return call_end (ctx, barrier_run (ctx));
}

int host_allreduce (void *ctx, const void *sendbuf, void *recvbuf,
                    size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    struct host *h = ctx;

    if (h->size == 1)
        return reduce_alone (h, KIND_ALLREDUCE, sendbuf, recvbuf, count,
                             dtype, op);
    return call_end (h, reduce_impl (h, sendbuf, recvbuf, count, dtype, op,
                                     -1));
}

int host_reduce (void *ctx, const void *sendbuf, void *recvbuf,
                 size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    struct host *h = ctx;

    if (h->size == 1)       /* root 0, this rank */
        return reduce_alone (h, KIND_REDUCE, sendbuf, recvbuf, count, dtype,
                             op);
    return call_end (h, reduce_impl (h, sendbuf, recvbuf, count, dtype, op,
                                     root));
}

static int reduce_scatter_run (struct host *h, const char *send, char *recv,
                               size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    int rc;

    if ((rc = call_begin (h, KIND_REDUCE_SCATTER, DDP_COLL_REDUCE_SCATTER,
                          count, dtype, op, 0)) < 0)
        return rc;
    if (h->nnodes > 1)
        return host_reduce_scatter_nodes (h, send, recv, count, dtype, op);
    return node_reduce_scatter_run (h, send, recv, count, dtype, op);
}

int host_reduce_scatter (void *ctx, const void *sendbuf, void *recvbuf,
                         size_t recvcount, ddp_dtype_t dtype, ddp_op_t op)
{
    struct host *h = ctx;

    if (h->size == 1)
        return reduce_alone (h, KIND_REDUCE_SCATTER, sendbuf, recvbuf,
                             recvcount, dtype, op);
    return call_end (h, reduce_scatter_run (h, sendbuf, recvbuf, recvcount,
                                            dtype, op));
}

static int bcast_run (struct host *h, void *buf, size_t count,
                      ddp_dtype_t dtype, int root)
{
    size_t bytes = count * ddp_dtype_size (dtype);
    int rc;

    if ((rc = call_begin (h, KIND_BCAST, DDP_COLL_BCAST, count, dtype,
                          DDP_SUM, root)) < 0)
        return rc;
    if (h->nnodes > 1)
        return host_bcast_nodes (h, buf, bytes, root);
    return node_bcast_run (h, buf, bytes, root);
}

int host_bcast (void *ctx, void *buf, size_t count, ddp_dtype_t dtype,
                int root)
{
    struct host *h = ctx;

    if (h->size == 1)       /* the root: its buffer is the result */
        return call_alone (h, KIND_BCAST);
    return call_end (h, bcast_run (h, buf, count, dtype, root));
}

static int gather_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, int root)
{
    size_t es = ddp_dtype_size (dtype), bytes = count * es;
    int rc;

    if ((rc = call_begin (h, root < 0 ? KIND_ALLGATHER : KIND_GATHER,
                          root < 0 ? DDP_COLL_ALLGATHER : DDP_COLL_GATHER,
                          count, dtype, DDP_SUM, root)) < 0)
        return rc;
    if (root >= 0 && h->rank != root)
        recv = NULL;            /* ignored off the root (ddp.h) */
    if (h->nnodes > 1)
        return root < 0 ? host_allgather_nodes (h, send, recv, bytes)
                        : host_gather_nodes (h, send, recv, bytes, root);
    return node_gather_run (h, send, recv, bytes, es, root);
}

int host_gather (void *ctx, const void *sendbuf, void *recvbuf,
                 size_t count, ddp_dtype_t dtype, int root)
{
    struct host *h = ctx;

    if (h->size == 1)       /* root 0, this rank */
        return gather_alone (h, KIND_GATHER, sendbuf, recvbuf, count, dtype);
    return call_end (h, gather_impl (h, sendbuf, recvbuf, count, dtype,
                                     root));
}

int host_allgather (void *ctx, const void *sendbuf, void *recvbuf,
                    size_t count, ddp_dtype_t dtype)
{
    struct host *h = ctx;

    if (h->size == 1)
        return gather_alone (h, KIND_ALLGATHER, sendbuf, recvbuf, count,
                             dtype);
    return call_end (h, gather_impl (h, sendbuf, recvbuf, count, dtype, -1));
}

/* How long ddp_finalize's barrier waits for the others (DDP_TIMEOUT when
 * shorter), in each of its waits (seconds): on the node for another rank
 * to arrive (for its result HOST_LATE_S more), on the links LEAVE_WAIT for
 * a partner (host.h's "Timeouts" bound with LEAVE_WAIT for DDP_TIMEOUT).
 * A rank whose peers are elsewhere (in a call of another library) leaves
 * after that (host_fault_leave). */
#define LEAVE_WAIT 1.0

/* ddp_finalize's barrier, shown as ddp_finalize in this rank's state, its
 * waits short; then the straggler report when it is on (and every rank
 * came). */
int host_finalize (void *ctx)
{
    struct host *h = ctx;
    struct ddp_config quick = *h->cfg;
    const struct ddp_config *cfg = h->cfg;
    int rc;

    if (quick.timeout_s > LEAVE_WAIT)
        quick.timeout_s = LEAVE_WAIT;
    h->cfg = &quick;
    h->leaving = true;
    rc = barrier_begin (h);
    atomic_store (&h->flags[h->lrank].state,
                  FAULT_STATE (h->call, FAULT_KIND_FINALIZE, 1));
    if (rc == 0)
        rc = barrier_steps (h);
    rc = call_end (h, rc);
    h->cfg = cfg;
    if (rc == 0 && h->strag) {
        h->leaving = false;
        rc = strag_report (h);
    }
    atomic_store (&h->flags[h->lrank].state,
                  FAULT_STATE (h->call, FAULT_KIND_FINALIZE, 0));
    /* Every rank came (else it left already): a rank that came in a
     * barrier of its own fails its next call, naming this one. */
    if (rc == 0)
        host_fault_leave (h, h->call + 1);
    h->leaving = false;
    return rc;
}
