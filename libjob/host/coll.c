/* coll.c - the host backend's collectives (host.h: the entry points of
 * ddpi_backend_host), each in three phases: in through the node segment,
 * cross-node by the lanes (algo.c), out through the segment; a call's
 * start and end (its agreement on the outcome), the straggler report.  A
 * job of one node runs the whole call in node.c.  host.h has the design
 * and the reduction order. */
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

/* ------------------------------------------ several nodes: the three phases */

/* Lanes for a reduction of bytes: each gets DDP_LANE_MIN bytes at least. */
static int active_lanes (struct host *h, size_t count, size_t es)
{
    size_t k = count * es / (h->tune.lane_min ? h->tune.lane_min : 1);

    if (k > (size_t)h->lanes)
        k = (size_t)h->lanes;
    if (k > count)
        k = count;
    return k < 1 ? 1 : (int)k;
}

/* Lane m of La holds elements sched_block (count, La, m); step j of a
 * phase moves elements [j c, (j+1) c) of it: *lo (of count) and *n. */
static void piece (size_t count, int La, int m, size_t c, size_t j,
                   size_t *lo, size_t *n)
{
    size_t blo, bhi;

    sched_block (count, La, m, &blo, &bhi);
    *lo = blo + j * c;
    *n = *lo >= bhi ? 0 : bhi - *lo < c ? bhi - *lo : c;
}

/* Steps a phase of c elements per lane and step takes (1 at least). */
static size_t phase_steps (size_t count, int La, size_t c)
{
    size_t lo, hi;

    sched_block (count, La, La - 1, &lo, &hi);
    return hi - lo > c ? (hi - lo + c - 1) / c : 1;
}

/* In phase of a reduction: every local rank puts its data through its
 * slot, lane m's piece at m x c elements, with the call's tag (node.h);
 * lane l (< La; w its block in the accumulation type) checks the tags and
 * reduces its piece over the node's slots. */
static int reduce_in (struct host *h, const char *send, char *w, size_t count,
                      ddp_dtype_t dtype, ddp_op_t op, int La)
{
    size_t es = ddp_dtype_size (dtype);
    size_t aes = ddp_dtype_size (ddpi_acc_dtype (dtype, op));
    size_t c = h->slot_bytes / ((size_t)La * es), lo, n;
    size_t steps = phase_steps (count, La, c);
    int l = h->lrank < La ? h->lrank : -1, rc;
    uint64_t s = 0;

    for (size_t j = 0; j < steps; j++) {
        char *slot;
        if ((rc = node_step_begin (h, &s)) < 0)
            return rc;
        slot = host_slot (h, (int)(s & 1), h->lrank);
        for (int m = 0; m < La; m++) {
            piece (count, La, m, c, j, &lo, &n);
            memcpy (slot + (size_t)m * c * es, send + lo * es, n * es);
        }
        node_tag_post (h, s);
        host_post (h, 0, s);
        if (l < 0)
            continue;
        piece (count, La, l, c, j, &lo, &n);
        if ((rc = node_wait_all (h, 0, s)) < 0
            || (rc = node_tags_check (h, h->lsize, s)) < 0)
            return rc;
        node_reduce (h, (int)(s & 1), w + j * c * aes, (size_t)l * c, n,
                     dtype, op);
    }
    return 0;
}

/* Out phase: lane l (< La) writes its block of the result (mine, dtype)
 * through the result area, piece by piece, with the tag of the call;
 * every local rank with a dst checks the lanes' tags and copies every lane's pieces into it (not
 * its own block when that is where it already lies).  reuse: the first
 * piece goes in the last step of this call's in phase (nobody reads that
 * bank's result area then). */
static int result_out (struct host *h, const char *mine, char *dst,
                       size_t count, size_t es, int La, bool reuse)
{
    size_t c = h->res_bytes / ((size_t)La * es), lo, n;
    size_t steps = phase_steps (count, La, c);
    int l = h->lrank < La && mine ? h->lrank : -1, rc;
    uint64_t s = h->seq;

    for (size_t j = 0; j < steps; j++) {
        char *res;
        if ((j > 0 || !reuse) && (rc = node_step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (l >= 0) {
            piece (count, La, l, c, j, &lo, &n);
            memcpy (res + (size_t)l * c * es, mine + j * c * es, n * es);
            node_tag_post (h, s);
            host_post (h, 2, s);
        }
        if (!dst)
            continue;
        if ((rc = node_wait_first (h, La, 2, s)) < 0
            || (rc = node_tags_check (h, La, s)) < 0)
            return rc;
        for (int m = 0; m < La; m++) {
            piece (count, La, m, c, j, &lo, &n);
            if (m != l || dst + lo * es != mine + j * c * es)
                memcpy (dst + lo * es, res + (size_t)m * c * es, n * es);
        }
    }
    return 0;
}

/* Lane l's block [*blo, *bhi) of count among La, and its buffers: the work
 * w (accumulation type: in place in in_place when the types agree, else
 * scratch 0) and, when out_place is NULL, a result in scratch 2. */
static int lane_buffers (struct host *h, size_t count, ddp_dtype_t dtype,
                         ddp_op_t op, int La, char *in_place, char *out_place,
                         char **w, char **out)
{
    size_t es = ddp_dtype_size (dtype), blo, bhi;
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);

    *w = *out = NULL;
    if (h->lrank >= La)
        return 0;
    sched_block (count, La, h->lrank, &blo, &bhi);
    *w = in_place && at == dtype ? in_place + blo * es
       : host_scratch (h, 0, (bhi - blo) * ddp_dtype_size (at));
    *out = out_place ? out_place + blo * es
         : host_scratch (h, 2, (bhi - blo) * es);
    return *w && *out ? 0 : DDP_ENOMEM;
}

static int allreduce_nodes (struct host *h, const char *send, char *recv,
                            size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype), blo, bhi;
    int La = active_lanes (h, count, es), rc;
    char *w, *out;

    if ((rc = lane_buffers (h, count, dtype, op, La, recv, recv, &w, &out)) < 0)
        return rc;
    if (h->lsize == 1) {
        ddpi_widen (w, send, count, dtype, op);
        return algo_allreduce (h, w, recv, count, dtype, op);
    }
    if ((rc = reduce_in (h, send, w, count, dtype, op, La)) < 0)
        return rc;
    if (w) {
        sched_block (count, La, h->lrank, &blo, &bhi);
        if ((rc = algo_allreduce (h, w, out, bhi - blo, dtype, op)) < 0)
            return rc;
    }
    return result_out (h, out, recv, count, es, La, true);
}

static int reduce_nodes (struct host *h, const char *send, char *recv,
                         size_t count, ddp_dtype_t dtype, ddp_op_t op,
                         int root)
{
    size_t es = ddp_dtype_size (dtype), blo, bhi;
    int La = active_lanes (h, count, es), rc, rnode = h->rank_node[root];
    bool want = h->rank == root;
    char *w, *out;

    if ((rc = lane_buffers (h, count, dtype, op, La, want ? recv : NULL,
                            want ? recv : NULL, &w, &out)) < 0)
        return rc;
    if (h->lsize == 1) {
        ddpi_widen (w, send, count, dtype, op);
        return algo_reduce (h, w, out, count, dtype, op, rnode);
    }
    if ((rc = reduce_in (h, send, w, count, dtype, op, La)) < 0)
        return rc;
    if (w) {
        sched_block (count, La, h->lrank, &blo, &bhi);
        if ((rc = algo_reduce (h, w, out, bhi - blo, dtype, op, rnode)) < 0)
            return rc;
    }
    if (h->node != rnode)
        return 0;
    return result_out (h, out, want ? recv : NULL, count, es, La, true);
}

/* What of the node's part [at, end) of a reduce-scatter's result (its
 * ranks' blocks in local rank order, count elements each) lies in a
 * lane's slice [blo, bhi) of all the elements (mine): into res, at its
 * place in the piece. */
static void part_of_slice (struct host *h, char *res, const char *mine,
                           size_t count, size_t at, size_t end, size_t blo,
                           size_t bhi, size_t es)
{
    for (size_t v = at, hi; v < end; v = hi) {
        size_t lr = v / count, glo, ghi;
        /* v is element g of all: in local rank lr's block. */
        size_t g = (size_t)h->local_ranks[lr] * count + (v - lr * count);
        hi = (lr + 1) * count < end ? (lr + 1) * count : end;
        glo = g > blo ? g : blo;
        ghi = g + (hi - v) < bhi ? g + (hi - v) : bhi;
        if (glo < ghi)
            memcpy (res + (v - at + (glo - g)) * es, mine + (glo - blo) * es,
                    (ghi - glo) * es);
    }
}

/* Out phase of a reduce-scatter: the node's part of the result, its
 * ranks' blocks (count elements each) in local rank order, goes through
 * the result area a piece a step, lane l (< La; mine: its slice [blo,
 * bhi) of the total elements) writing what of the piece lies in its
 * slice, with the call's tag; a rank whose block the piece touches checks
 * the lanes' tags and copies its part.  Nothing of other nodes' ranks
 * crosses the segment.  The first piece goes in the last step of the in
 * phase (nobody reads that bank's result area then). */
static int scatter_out (struct host *h, const char *mine, char *recv,
                        size_t count, size_t total, size_t es, int La)
{
    size_t c = h->res_bytes / es, part = (size_t)h->lsize * count;
    size_t my_lo = (size_t)h->lrank * count, blo = 0, bhi = 0;
    int l = h->lrank < La ? h->lrank : -1, rc;
    uint64_t s = h->seq;

    if (l >= 0)
        sched_block (total, La, l, &blo, &bhi);
    for (size_t at = 0; at < part; at += c) {
        size_t end = part - at < c ? part : at + c, lo, hi;
        char *res;
        if (at > 0 && (rc = node_step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (l >= 0) {
            part_of_slice (h, res, mine, count, at, end, blo, bhi, es);
            node_tag_post (h, s);
            host_post (h, 2, s);
        }
        lo = my_lo > at ? my_lo : at;
        hi = my_lo + count < end ? my_lo + count : end;
        if (lo >= hi)
            continue;
        if ((rc = node_wait_first (h, La, 2, s)) < 0
            || (rc = node_tags_check (h, La, s)) < 0)
            return rc;
        memcpy (recv + (lo - my_lo) * es, res + (lo - at) * es,
                (hi - lo) * es);
    }
    return 0;
}

/* A reduce-scatter across nodes: the all-reduce of the size x count
 * elements with its lanes, in phase and cross-node algorithm
 * (allreduce_nodes: the same result to the bit), but the algorithm's
 * allgather half moves only what the receiving nodes' ranks want
 * (algo_reduce_scatter), and the out phase only this node's blocks.  Each
 * lane works in scratch: recv holds one block, not a slice. */
static int reduce_scatter_nodes (struct host *h, const char *send,
                                 char *recv, size_t count, ddp_dtype_t dtype,
                                 ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype), total = (size_t)h->size * count;
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    int La = active_lanes (h, total, es), rc;
    struct algo_want want = { 0, count };
    size_t bhi = 0;
    char *w = NULL, *out = NULL;

    if (h->lrank < La) {
        sched_block (total, La, h->lrank, &want.base, &bhi);
        w = host_scratch (h, 0, (bhi - want.base) * ddp_dtype_size (at));
        out = at == dtype ? w : host_scratch (h, 2, (bhi - want.base) * es);
        if (!w || !out)
            return DDP_ENOMEM;
    }
    if (h->lsize == 1) {
        ddpi_widen (w, send, total, dtype, op);
        if ((rc = algo_reduce_scatter (h, w, out, total, dtype, op,
                                       &want)) < 0)
            return rc;
        memmove (recv, out + (size_t)h->rank * count * es, count * es);
        return 0;
    }
    if ((rc = reduce_in (h, send, w, total, dtype, op, La)) < 0
        || (w && (rc = algo_reduce_scatter (h, w, out, bhi - want.base,
                                            dtype, op, &want)) < 0))
        return rc;
    return scatter_out (h, out, recv, count, total, es, La);
}

/* In phase of a bcast: the root (not lane 0) hands buf to lane 0, with
 * the call's tag (node.h). */
static int bcast_in (struct host *h, char *buf, size_t bytes, int root_lr)
{
    uint64_t s = 0;
    int rc;

    for (size_t off = 0; off < bytes; off += h->slot_bytes) {
        size_t n = bytes - off < h->slot_bytes ? bytes - off : h->slot_bytes;
        char *slot;
        if ((rc = node_step_begin (h, &s)) < 0)
            return rc;
        slot = host_slot (h, (int)(s & 1), root_lr);
        if (h->lrank == root_lr) {
            memcpy (slot, buf + off, n);
            node_tag_post (h, s);
        }
        host_post (h, 0, s);
        if (h->lrank != 0)
            continue;
        if ((rc = node_wait_flag (h, root_lr, 0, s)) < 0
            || (rc = node_tag_check (h, root_lr, s)) < 0)
            return rc;
        memcpy (buf + off, slot, n);
    }
    return 0;
}

static int bcast_nodes (struct host *h, char *buf, size_t bytes, int root)
{
    int rnode = h->rank_node[root], root_lr = h->rank_lrank[root], rc;
    bool in = h->node == rnode && root_lr != 0;

    if (h->lsize == 1)
        return algo_bcast (h, buf, bytes, rnode);
    if (in && (rc = bcast_in (h, buf, bytes, root_lr)) < 0)
        return rc;
    if (h->lrank == 0 && (rc = algo_bcast (h, buf, bytes, rnode)) < 0)
        return rc;
    return result_out (h, h->lrank == 0 ? buf : NULL,
                       h->rank == root || h->lrank == 0 ? NULL : buf, bytes,
                       1, 1, in);
}

/* In phase of a gather: every local rank's bytes through its slot, with
 * the call's tag (node.h); lane 0 checks the tags and puts local rank
 * lr's at dst + lr x bytes (world: at its rank's place) and its own send
 * there first (unless it is there: dst may be send). */
static int gather_in (struct host *h, const char *send, char *dst,
                      size_t bytes, bool world)
{
    char *mine = h->lrank == 0 ? dst + (size_t)(world ? h->rank : 0) * bytes
                               : NULL;
    uint64_t s = 0;
    int rc;

    if (mine && mine != send)
        memmove (mine, send, bytes);
    for (size_t off = 0; off < bytes; off += h->slot_bytes) {
        size_t n = bytes - off < h->slot_bytes ? bytes - off : h->slot_bytes;
        if ((rc = node_step_begin (h, &s)) < 0)
            return rc;
        if (h->lrank != 0)
            memcpy (host_slot (h, (int)(s & 1), h->lrank), send + off, n);
        node_tag_post (h, s);
        host_post (h, 0, s);
        if (h->lrank != 0)
            continue;
        if ((rc = node_wait_all (h, 0, s)) < 0
            || (rc = node_tags_check (h, h->lsize, s)) < 0)
            return rc;
        for (int lr = 1; lr < h->lsize; lr++)
            memcpy (dst + (size_t)(world ? h->local_ranks[lr] : lr) * bytes
                    + off, host_slot (h, (int)(s & 1), lr), n);
    }
    return 0;
}

/* Bytes [lo, hi) of a gather's output (world order) from tb (algo_gather's
 * order: nodes from rnode on, each node's ranks in local order) to dst. */
static int gather_unpack (struct host *h, const char *tb, size_t bytes,
                          int rnode, char *dst, size_t lo, size_t hi)
{
    size_t *noff = calloc ((size_t)h->nnodes, sizeof (size_t)), off = 0;

    if (!noff)
        return ddpi_error (DDP_ENOMEM, "out of memory");
    for (int j = 0; j < h->nnodes; j++) {
        noff[j] = off;
        off += (size_t)h->node_size[sched_mod ((long)rnode + j, h->nnodes)]
               * bytes;
    }
    for (size_t r = lo / bytes; r < (size_t)h->size && r * bytes < hi; r++) {
        size_t a = r * bytes > lo ? r * bytes : lo;
        size_t b = (r + 1) * bytes < hi ? (r + 1) * bytes : hi;
        int rel = sched_mod ((long)h->rank_node[r] - rnode, h->nnodes);
        const char *src = tb + noff[rel] + (size_t)h->rank_lrank[r] * bytes;
        memcpy (dst + (a - lo), src + (a - r * bytes), b - a);
    }
    free (noff);
    return 0;
}

/* Out phase of a gather on the root's node: lane 0 writes the output
 * (world order) through the result area, with the call's tag, the
 * root checks it and copies the output. */
static int gather_out (struct host *h, const char *tb, char *recv,
                       size_t bytes, int rnode)
{
    size_t total = (size_t)h->size * bytes;
    uint64_t s = h->seq;
    int rc;

    for (size_t off = 0; off < total; off += h->res_bytes) {
        size_t n = total - off < h->res_bytes ? total - off : h->res_bytes;
        char *res;
        if (off > 0 && (rc = node_step_enter (h, &s)) < 0)
            return rc;
        res = host_result (h, (int)(s & 1));
        if (h->lrank == 0) {
            if ((rc = gather_unpack (h, tb, bytes, rnode, res, off,
                                     off + n)) < 0)
                return rc;
            node_tag_post (h, s);
            host_post (h, 2, s);
        }
        if (!recv)
            continue;
        if ((rc = node_wait_flag (h, 0, 2, s)) < 0
            || (rc = node_tag_check (h, 0, s)) < 0)
            return rc;
        memcpy (recv + off, res, n);
    }
    return 0;
}

/* The buffer lane 0 gathers its subtree's data in (algo_gather's
 * order), without a copy where it can: a node of one rank that is a leaf
 * of the tree sends straight from send; a root on node 0 of a block
 * layout, where that order is the world's, gathers straight into recv.
 * Else the scratch.  NULL: out of memory. */
static char *gather_buf (struct host *h, const char *send, char *recv,
                         size_t bytes, int root, bool *in_recv)
{
    int rnode = h->rank_node[root];
    size_t need = algo_gather_bytes (h, bytes, rnode);

    *in_recv = false;
    if (h->lsize == 1 && need == bytes)
        return (char *)send;    /* only read: a leaf receives nothing */
    if (h->rank == root && rnode == 0 && h->block_layout) {
        *in_recv = true;
        return recv;
    }
    return host_scratch (h, 0, need);
}

static int gather_nodes (struct host *h, const char *send, char *recv,
                         size_t bytes, int root)
{
    int rnode = h->rank_node[root], rc;
    bool in_recv = false;
    char *tb = NULL;

    if (h->lrank == 0
        && !(tb = gather_buf (h, send, recv, bytes, root, &in_recv)))
        return DDP_ENOMEM;
    if ((rc = gather_in (h, send, tb, bytes, false)) < 0)
        return rc;
    if (h->lrank == 0 && (rc = algo_gather (h, tb, bytes, rnode)) < 0)
        return rc;
    if (h->node != rnode || in_recv)
        return 0;
    /* A root that is lane 0 unpacks for itself: no out phase on the node
     * (every local rank takes the same steps). */
    if (h->rank_lrank[root] == 0)
        return h->rank == root ? gather_unpack (h, tb, bytes, rnode, recv, 0,
                                                (size_t)h->size * bytes)
                               : 0;
    return gather_out (h, tb, h->rank == root ? recv : NULL, bytes, rnode);
}

static int allgather_nodes (struct host *h, const char *send, char *recv,
                            size_t bytes)
{
    int rc;

    if ((rc = gather_in (h, send, recv, bytes, true)) < 0)
        return rc;
    if (h->lrank == 0 && (rc = algo_allgather (h, recv, bytes)) < 0)
        return rc;
    if (h->lsize == 1)
        return 0;
    return result_out (h, h->lrank == 0 ? recv : NULL,
                       h->lrank == 0 ? NULL : recv, (size_t)h->size * bytes,
                       1, 1, true);
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
static void copy_alone (char *recv, const char *send, size_t bytes)
{
    /* Compared as integers: < between pointers to different objects is
     * undefined in C. */
    uintptr_t r = (uintptr_t)recv, s = (uintptr_t)send;

    if (recv == send || bytes == 0)
        return;
    if (r < s + bytes && s < r + bytes) {
        memmove (recv, send, bytes);
        return;
    }
    for (size_t off = 0; off < bytes; off += COPY_PIECE)
        memcpy (recv + off, send + off,
                bytes - off < COPY_PIECE ? bytes - off : COPY_PIECE);
}

static int reduce_alone (struct host *h, const char *send, char *recv,
                         size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    void *w;

    /* One rank's value is the result (AVG divides by 1) unless a 16-bit
     * float is rounded through float32 (as with more ranks). */
    if (at == dtype) {
        copy_alone (recv, send, count * ddp_dtype_size (dtype));
        return 0;
    }
    w = host_scratch (h, 0, count * ddp_dtype_size (at));
    if (!w)
        return DDP_ENOMEM;
    ddpi_widen (w, send, count, dtype, op);
    ddpi_reduce_finish (w, count, at, op, 1);
    ddpi_narrow (recv, w, count, dtype, op);
    return 0;
}

static int reduce_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    bool want = root < 0 || root == h->rank;
    int rc;

    if (h->size == 1)
        return (rc = call_alone (h, root < 0 ? KIND_ALLREDUCE : KIND_REDUCE))
               < 0 ? rc : reduce_alone (h, send, recv, count, dtype, op);
    if ((rc = call_begin (h, root < 0 ? KIND_ALLREDUCE : KIND_REDUCE,
                          root < 0 ? DDP_COLL_ALLREDUCE : DDP_COLL_REDUCE,
                          count, dtype, op, root)) < 0)
        return rc;
    if (h->nnodes > 1)
        return root < 0 ? allreduce_nodes (h, send, recv, count, dtype, op)
                        : reduce_nodes (h, send, recv, count, dtype, op, root);
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
    return call_end (ctx, reduce_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       op, -1));
}

int host_reduce (void *ctx, const void *sendbuf, void *recvbuf,
                 size_t count, ddp_dtype_t dtype, ddp_op_t op, int root)
{
    return call_end (ctx, reduce_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       op, root));
}

static int reduce_scatter_run (struct host *h, const char *send, char *recv,
                               size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    int rc;

    if (h->size == 1)
        return (rc = call_alone (h, KIND_REDUCE_SCATTER)) < 0
               ? rc : reduce_alone (h, send, recv, count, dtype, op);
    if ((rc = call_begin (h, KIND_REDUCE_SCATTER, DDP_COLL_REDUCE_SCATTER,
                          count, dtype, op, 0)) < 0)
        return rc;
    if (h->nnodes > 1)
        return reduce_scatter_nodes (h, send, recv, count, dtype, op);
    return node_reduce_scatter_run (h, send, recv, count, dtype, op);
}

int host_reduce_scatter (void *ctx, const void *sendbuf, void *recvbuf,
                         size_t recvcount, ddp_dtype_t dtype, ddp_op_t op)
{
    return call_end (ctx, reduce_scatter_run (ctx, sendbuf, recvbuf,
                                              recvcount, dtype, op));
}

static int bcast_run (struct host *h, void *buf, size_t count,
                      ddp_dtype_t dtype, int root)
{
    size_t bytes = count * ddp_dtype_size (dtype);
    int rc;

    if (h->size == 1)
        return call_alone (h, KIND_BCAST);
    if ((rc = call_begin (h, KIND_BCAST, DDP_COLL_BCAST, count, dtype,
                          DDP_SUM, root)) < 0)
        return rc;
    if (h->nnodes > 1)
        return bcast_nodes (h, buf, bytes, root);
    return node_bcast_run (h, buf, bytes, root);
}

int host_bcast (void *ctx, void *buf, size_t count, ddp_dtype_t dtype,
                int root)
{
    return call_end (ctx, bcast_run (ctx, buf, count, dtype, root));
}

static int gather_impl (struct host *h, const char *send, char *recv,
                        size_t count, ddp_dtype_t dtype, int root)
{
    size_t es = ddp_dtype_size (dtype), bytes = count * es;
    int rc;

    if (h->size == 1) {     /* root 0, this rank */
        if ((rc = call_alone (h, root < 0 ? KIND_ALLGATHER
                                          : KIND_GATHER)) == 0 && recv)
            copy_alone (recv, send, bytes);
        return rc;
    }
    if ((rc = call_begin (h, root < 0 ? KIND_ALLGATHER : KIND_GATHER,
                          root < 0 ? DDP_COLL_ALLGATHER : DDP_COLL_GATHER,
                          count, dtype, DDP_SUM, root)) < 0)
        return rc;
    if (root >= 0 && h->rank != root)
        recv = NULL;            /* ignored off the root (ddp.h) */
    if (h->nnodes > 1)
        return root < 0 ? allgather_nodes (h, send, recv, bytes)
                        : gather_nodes (h, send, recv, bytes, root);
    return node_gather_run (h, send, recv, bytes, es, root);
}

int host_gather (void *ctx, const void *sendbuf, void *recvbuf,
                 size_t count, ddp_dtype_t dtype, int root)
{
    return call_end (ctx, gather_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       root));
}

int host_allgather (void *ctx, const void *sendbuf, void *recvbuf,
                    size_t count, ddp_dtype_t dtype)
{
    return call_end (ctx, gather_impl (ctx, sendbuf, recvbuf, count, dtype,
                                       -1));
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
