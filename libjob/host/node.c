/* node.c - the steps of a collective within one node: the segment's
 * waits as the fault's codes, a step's start, and each kind of call on
 * one node, through the segment's slots or by single copy (CMA) (node.h).
 * The step protocol (banks, ring, flags, slots) is described in host.h. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ddp_internal.h"
#include "fault.h"
#include "node.h"
#include "reduce.h"
#include "transport.h"

#define SPLIT_MIN (32 * 1024)

/* ------------------------------------------------------------ steps */

/* The waits for seq read node-mates' flags only when what was seen last
 * does not answer (h->seen_all: every other local rank was seen at that
 * step or later; h->seen_lr at seen_lr_step): a rank running ahead finds its
 * lead there, a rank behind the steps it has yet to take, and neither
 * pulls a cache line its node-mates are writing.  An acquire load that saw
 * step t made everything posted up to t visible. */
static uint64_t seen_flag (struct host *h, int lr)
{
    return atomic_load_explicit (&h->flags[lr].seq, memory_order_acquire);
}

/* Was local rank lr seen at step s or later? */
static bool seen (const struct host *h, int lr, uint64_t s)
{
    return h->seen_all >= s || (h->seen_lr == lr && h->seen_lr_step >= s);
}

int node_wait_flag (struct host *h, int lr, int which, uint64_t s)
{
    int rc;

    if (which != 0)
        return host_fault_rc (h, host_wait_flag (h, lr, which, s));
    if (seen (h, lr, s))
        return 0;
    if ((rc = host_fault_rc (h, host_wait_flag (h, lr, 0, s))) < 0)
        return rc;
    h->seen_lr = lr;
    h->seen_lr_step = s;
    return 0;
}

int node_wait_first (struct host *h, int n, int which, uint64_t s)
{
    return host_fault_rc (h, host_wait_first (h, n, which, s));
}

int node_wait_all (struct host *h, int which, uint64_t s)
{
    int rc;

    if (which != 0)
        return host_fault_rc (h, host_wait_all (h, which, s));
    if (h->seen_all >= s)
        return 0;
    if ((rc = host_fault_rc (h, host_wait_all (h, 0, s))) < 0)
        return rc;
    h->seen_all = s;
    return 0;
}

/* node_wait_flag (h, lr, 0, s), then the step lr is at now, so that a rank
 * behind one running ahead (the ring) learns how far it may follow. */
static int wait_flag_lead (struct host *h, int lr, uint64_t s)
{
    int rc;

    if (seen (h, lr, s))
        return 0;
    if ((rc = node_wait_flag (h, lr, 0, s)) < 0)
        return rc;
    h->seen_lr_step = seen_flag (h, lr);
    return 0;
}

/* node_wait_all (h, 0, s), then the lowest step every other local rank is
 * at now, so that a rank running ahead (the ring) learns how far its lead
 * goes, and a gather's root how far its senders are (counting its own
 * step, just posted, it would wait again at its next call).  Not for
 * every wait: a barrier's node-mates move on at once, and reading their
 * flags again cost a cache miss each (1 x 2 barrier 0.22 -> 0.28 us). */
static int wait_all_lead (struct host *h, uint64_t s)
{
    uint64_t low = UINT64_MAX;
    int rc;

    if (h->seen_all >= s)
        return 0;
    if ((rc = node_wait_all (h, 0, s)) < 0)
        return rc;
    for (int lr = 0; lr < h->lsize; lr++) {
        uint64_t f = lr == h->lrank ? UINT64_MAX : seen_flag (h, lr);
        low = f < low ? f : low;
    }
    h->seen_all = low;
    return 0;
}

int node_step_begin (struct host *h, uint64_t *sp)
{
    if (h->broken)
        return h->broken;
    *sp = ++h->seq;
    return node_wait_all (h, 0, *sp - 1);
}

int node_step_enter (struct host *h, uint64_t *sp)
{
    int rc = node_step_begin (h, sp);

    if (rc == 0) {
        node_tag_post (h, *sp);
        host_post (h, 0, *sp);
    }
    return rc;
}

/* A step through the rings (host_ring): like node_step_begin(), but a
 * rank may run up to HOST_RING_KMAX - 1 steps ahead of its node-mates
 * (a rank enters a step after it finished the one before).  A writer also
 * claims its entry (ring_claim). */
static int ring_step_begin (struct host *h, uint64_t *sp)
{
    if (h->broken)
        return h->broken;
    *sp = ++h->seq;
    if (*sp < HOST_RING_KMAX)
        return 0;
    return wait_all_lead (h, *sp - (HOST_RING_KMAX - 1));
}

/* Where this step's entry of bytes (at most HOST_RING_TAG +
 * HOST_RING_BYTES) goes in local rank lr's ring: its offset; lr's cursor
 * moves past it.  Entries of up to 64 bytes follow each other in 16-byte
 * steps, so one that starts inside a cache line goes on in the line the
 * previous entry of this lap ended in; longer ones take whole lines (a
 * 520-byte entry that shared its first and last lines with its
 * neighbours: 1 x 2 bcast of 512 B 0.27-0.36 us, in 9 lines of its own
 * 0.21, 0.20 for the 512 bytes without a tag). */
static size_t ring_place (struct host *h, int lr, size_t bytes)
{
    size_t align = bytes > 64 ? 64 : HOST_RING_ALIGN;
    size_t len = (bytes + align - 1) / align * align;
    uint64_t at = h->ring_at[lr];
    size_t off = (size_t)(at % HOST_RING_RANK_BYTES);

    if (off % align != 0) {
        at += align - off % align;
        off += align - off % align;
    }
    if (off + len > HOST_RING_RANK_BYTES) {
        at += HOST_RING_RANK_BYTES - off;
        off = 0;
    }
    h->ring_at[lr] = at + len;
    return off;
}

/* The tag that opens step s's entry of bytes in a ring (HOST_RING_TAG
 * bytes): the step's low 22 bits, the size (10 bits: 1023 for 1023 and
 * more) and the call's signature (host_desc's sig: its kind, dtype,
 * count, op and root).  Ranks that make different calls fail at the
 * first reader that checks a tag; ranks that pass different counts to a
 * small one-node call also move their cursors apart, and a reader that
 * checks the tag at its own cursor fails that call, naming both ranks,
 * where it would otherwise read the wrong place in that call and every
 * later one. */
#define TAG_STEP_MASK 0x3fffffu
#define TAG_SIZE_MAX 1023u

static uint64_t ring_tag (uint64_t s, uint32_t sig, size_t bytes)
{
    uint64_t size = bytes < TAG_SIZE_MAX ? bytes : TAG_SIZE_MAX;

    return (s & TAG_STEP_MASK) | size << 22 | (uint64_t)sig << 32;
}

/* Local rank lr describes this call as this rank does, but its tag's
 * signature differs: so does its trail (trail.h), an earlier call
 * differed.  The nearest of the last HOST_DESC_SLOTS - 1 calls whose
 * descriptions differ (lr's flags against this rank's past), 0 when none
 * still shows. */
static uint64_t history_blame (struct host *h, int lr)
{
    for (uint64_t k = 1; k < HOST_DESC_SLOTS && k < h->call; k++) {
        uint64_t c = h->call - k, what, count;
        const struct trail_call *p = &h->past[c % HOST_DESC_SLOTS];
        if (!host_desc_of (h, lr, c, &what, &count))
            return 0;
        if (what != p->what || count != p->count)
            return c;
    }
    return 0;
}

/* A reader found another tag than that of local rank lr's data for this
 * step (same_step: the tag is of this step, with the signature sig and,
 * where a ring tag tells it, the size theirs; else SIZE_MAX): fail the
 * call (and, through the fault record, every rank's next one), naming
 * lr's rank and this one and the call each made: lr's as its flags
 * describe it (host_core.h), or, where it went on too far (a ring's
 * writer runs ahead), what its tag tells.  A tag of this step from a rank
 * that describes the same call: its earlier calls differed (another
 * trail: the root of a bcast that no rank read), named by
 * history_blame.  A tag of another step from a rank that describes the
 * same call: lr's data is not where this rank looks (counts that
 * differed in an earlier small call). */
static int tag_bad (struct host *h, int lr, bool same_step, uint32_t sig,
                    size_t theirs)
{
    int them = h->local_ranks[lr], rc, dt = HOST_SIG_DTYPE (sig);
    uint64_t what, count;
    const char *name = host_call_name (h->kind);
    unsigned long long c = (unsigned long long)h->call;
    char mine[96], n[32] = "";

    if (host_desc_of (h, lr, h->call, &what, &count)) {
        if (what != h->desc.what || count != h->desc.count)
            return host_fault_calls (h, them, what, count, h->call);
        if (same_step && sig != h->desc.sig)
            return host_fault_history (h, them, history_blame (h, lr));
    }
    rc = host_fault_mismatch (h, them);
    if (rc != DDP_EMISMATCH)    /* them or this rank left (ddp_finalize) */
        return rc;
    host_desc_name (mine, sizeof (mine), h->desc.what, h->desc.count);
    if (!same_step || sig == h->desc.sig)
        return ddpi_error (rc, "%s #%llu: rank %d's data is not where rank "
                           "%d expects it: the two made different calls "
                           "(rank %d: %s) or passed different counts to an "
                           "earlier small one (DDP_CHECK=1 compares every "
                           "call)", name, c, them, h->rank, h->rank, mine);
    if (theirs != SIZE_MAX && dt >= 0 && ddp_dtype_size (dt) > 0)
        snprintf (n, sizeof (n), "%zu ", theirs / ddp_dtype_size (dt));
    return ddpi_error (rc, "%s #%llu: rank %d: %s of %s%s%s (its tag; it went "
                       "on since); rank %d: %s; every rank must make the "
                       "same calls in the same order (DDP_CHECK=1 names "
                       "each rank's)", name, c, them,
                       host_desc_kind_name (HOST_SIG_KIND (sig)), n,
                       ddpi_dtype_name (dt),
                       HOST_SIG_KIND (sig) == HOST_SIG_KIND (h->desc.sig)
                       && dt == HOST_SIG_DTYPE (h->desc.sig) && !n[0]
                           ? " (another count, op or root)" : "",
                       h->rank, mine);
}

/* Put the tag of this call's step s data of bytes (a rank's) at e (a ring
 * entry, a bank step's area: its first HOST_RING_TAG bytes). */
static void tag_put (struct host *h, char *e, uint64_t s, size_t bytes)
{
    uint64_t tag = ring_tag (s, h->desc.sig, bytes);

    memcpy (e, &tag, sizeof (tag));
}

/* Does e hold the tag of local rank lr's step s data of bytes, of this
 * call?  0, or tag_bad()'s code. */
static int tag_check (struct host *h, int lr, const char *e, uint64_t s,
                      size_t bytes)
{
    uint64_t tag, size;

    memcpy (&tag, e, sizeof (tag));
    if (tag == ring_tag (s, h->desc.sig, bytes))
        return 0;
    size = tag >> 22 & TAG_SIZE_MAX;
    return tag_bad (h, lr, (tag & TAG_STEP_MASK) == (s & TAG_STEP_MASK),
                    (uint32_t)(tag >> 32),
                    size < TAG_SIZE_MAX ? (size_t)size : SIZE_MAX);
}

/* Write step s's entry at e of a ring (HOST_RING_TAG + bytes, placed by
 * ring_place and claimed): the tag, then the bytes of src. */
static void ring_write (struct host *h, char *e, uint64_t s, const void *src,
                        size_t bytes)
{
    tag_put (h, e, s, bytes);
    memcpy (e + HOST_RING_TAG, src, bytes);
}

/* Read step s's entry at e of local rank lr's ring into dst, its tag
 * checked first: 0, or tag_bad()'s code. */
static int ring_read (struct host *h, int lr, const char *e, uint64_t s,
                      void *dst, size_t bytes)
{
    int rc = tag_check (h, lr, e, s, bytes);

    if (rc == 0)
        memcpy (dst, e + HOST_RING_TAG, bytes);
    return rc;
}

/* Step data that opens with no tag of its own (as ring entries and the
 * one-node bcast and gather bank areas do): single copy, the inline
 * allgather, every reduction step (inline or in the slots), the single-copy
 * vote, a barrier's step, and the in and out phases of calls across nodes
 * (coll.c).  Its writers post a tag of step s of this call in their
 * polled flag line, tag[s & 1], written before the step's seq: the low 8
 * bits of the step, then the call's 24-bit signature (host_desc's sig).
 * A writer cannot post step s + 2 before every node-mate entered s + 1,
 * so tag[s & 1] holds step s's while a reader of step s checks it; a
 * reader that sees the step's seq has the tag in the same cache line. */
static uint32_t step_tag (uint64_t s, uint32_t sig)
{
    return (uint32_t)(s & 0xff) << 24 | (sig & 0xffffff);
}

/* node.h. */
void node_tag_post (struct host *h, uint64_t s)
{
    atomic_store_explicit (&h->flags[h->lrank].tag[s & 1],
                           step_tag (s, h->desc.sig), memory_order_relaxed);
}

/* node.h.  A rank that made another call may have taken another path (a
 * ring entry, single copy, the banks: each has its own size range), which
 * leaves an earlier step's tag, or the same path with another
 * signature. */
int node_tag_check (struct host *h, int lr, uint64_t s)
{
    uint32_t got = atomic_load_explicit (&h->flags[lr].tag[s & 1],
                                         memory_order_relaxed);

    if (got == step_tag (s, h->desc.sig))
        return 0;
    return tag_bad (h, lr, got >> 24 == (uint32_t)(s & 0xff), got & 0xffffff,
                    SIZE_MAX);
}

/* node.h. */
int node_tags_check (struct host *h, int n, uint64_t s)
{
    int rc;

    for (int lr = 0; lr < n; lr++)
        if (lr != h->lrank && (rc = node_tag_check (h, lr, s)) < 0)
            return rc;
    return 0;
}

/* A bank step's data (the bcast's result area, a gather's slot) opens
 * with its tag (tag_put: step and signature of the call), on a line of its own:
 * the reader reads it with the data (its own bank, s & 1, so that a
 * writer's next step does not touch it; in the polled flag line it cost
 * 1 x 2 gathers of 2 KiB 0.31-0.34 -> 0.32-0.57 us, the writer taking
 * the line back for its next step while its reader checked). */
#define STEP_HDR 64

/* Claim bytes at off of this rank's own ring for step s (ring_place):
 * wait until every local rank has left each line the entry opens (every
 * line it touches, less the first when off is inside it), i.e.
 * entered the step after the last one that wrote the line in the lap
 * before (a line the entry goes on in was opened, and waited for, by an
 * earlier entry of this lap).  Where a lap is shorter than HOST_RING_KMAX
 * steps (entries of 256 bytes and more) this keeps a writer from
 * overwriting entries not yet read; everywhere it keeps a writer off the
 * lines its readers are reading (each write would take a line away from
 * its reader again). */
static int ring_claim (struct host *h, uint64_t s, size_t off, size_t bytes)
{
    size_t first = off / 64 + (off % 64 != 0), last = (off + bytes - 1) / 64;
    uint64_t t = 0;

    for (size_t l = first; l <= last; l++)
        t = h->ring_line[l] > t ? h->ring_line[l] : t;
    for (size_t l = off / 64; l <= last; l++)
        h->ring_line[l] = s;
    return t ? wait_all_lead (h, t + 1) : 0;
}

/* ------------------------------------------------- one node: in the segment */

/* Local rank lr's share [lo, hi) of n elements when the node splits a
 * step. */
static void share (struct host *h, int lr, size_t n, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)lr / (size_t)h->lsize;
    *hi = n * (size_t)(lr + 1) / (size_t)h->lsize;
}

/* Reduce elements lo..lo+n-1 of every local rank's step in bank into dst
 * (accumulation type, not finished): from the slots, or (inl, lo 0) from
 * the inline areas of the flags. */
static void reduce_from (struct host *h, int bank, bool inl, void *dst,
                         size_t lo, size_t n, ddp_dtype_t dtype, ddp_op_t op)
{
    const void *src[h->lsize];
    size_t es = ddp_dtype_size (dtype);

    for (int lr = 0; lr < h->lsize; lr++)
        src[lr] = inl ? (const char *)host_inline (h, lr, bank)
                      : host_slot (h, bank, lr) + lo * es;
    ddpi_reduce_many_acc (dst, src, h->lsize, n, dtype, op);
}

void node_reduce (struct host *h, int bank, void *dst, size_t lo,
                  size_t n, ddp_dtype_t dtype, ddp_op_t op)
{
    reduce_from (h, bank, false, dst, lo, n, dtype, op);
}

#define ACC_ALIGN 64         /* bytes; a power of two */

/* Elements a reduction step on one node takes: they fit a slot, and the
 * result area holds them in dtype and, after, in the accumulation type. */
static size_t node_chunk (struct host *h, ddp_dtype_t dtype, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype);
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    size_t need = es + (at != dtype ? ddp_dtype_size (at) : 0);
    size_t a = h->slot_bytes / es;
    /* The accumulation starts aligned after the result (acc_offset). */
    size_t b = (h->res_bytes - (at != dtype ? ACC_ALIGN : 0)) / need;

    return a < b ? a : b;
}

/* Where the accumulation of n elements of es bytes starts in the result
 * area: after the result, aligned for any accumulation type (an odd count
 * of 16-bit elements would leave float32 partials misaligned: UB). */
static size_t acc_offset (size_t n, size_t es)
{
    return (n * es + ACC_ALIGN - 1) & ~(size_t)(ACC_ALIGN - 1);
}

/* One step of a reduction on one node: n elements of send (a piece of the
 * call: the step's tag, checked by every rank that waits for the others);
 * out (NULL: not wanted here) gets the result.  At most
 * HOST_INLINE_BYTES go in the flags' inline areas (a reader takes seq and
 * data in one cache line: 1 x 2 allreduce of 8 B 0.32-0.34 -> 0.24-0.29 us),
 * more in the slots.  Small steps are reduced by every rank that wants them,
 * from the inline areas or the slots; larger ones in shares, into the result
 * area: the result in dtype at its start, each share's accumulation after it
 * (apart when the types differ, so no share is narrowed over another's
 * partial). */
static int node_reduce_step (struct host *h, const char *send, char *out,
                             size_t n, ddp_dtype_t dtype, ddp_op_t op)
{
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    size_t es = ddp_dtype_size (dtype), aes = ddp_dtype_size (at), lo, hi;
    uint64_t s = 0;
    int rc, bank;
    char *res, *acc;
    bool inl;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    res = host_result (h, bank);
    acc = at == dtype ? res : res + acc_offset (n, es);
    inl = n * es <= HOST_INLINE_BYTES;
    memcpy (inl ? (char *)host_inline (h, h->lrank, bank)
                : host_slot (h, bank, h->lrank), send, n * es);
    node_tag_post (h, s);
    host_post (h, 0, s);
    if (n * es < SPLIT_MIN || h->lsize == 1) {
        void *w = at == dtype ? out : host_scratch (h, 0, n * aes);
        if (!out)
            return 0;
        if (!w)
            return DDP_ENOMEM;
        if ((rc = node_wait_all (h, 0, s)) < 0
            || (rc = node_tags_check (h, h->lsize, s)) < 0)
            return rc;
        reduce_from (h, bank, inl, w, 0, n, dtype, op);
        ddpi_reduce_finish (w, n, at, op, h->size);
        ddpi_narrow (out, w, n, dtype, op);
        return 0;
    }
    share (h, h->lrank, n, &lo, &hi);
    if ((rc = node_wait_all (h, 0, s)) < 0
        || (rc = node_tags_check (h, h->lsize, s)) < 0)
        return rc;
    node_reduce (h, bank, acc + lo * aes, lo, hi - lo, dtype, op);
    ddpi_reduce_finish (acc + lo * aes, hi - lo, at, op, h->size);
    ddpi_narrow (res + lo * es, acc + lo * aes, hi - lo, dtype, op);
    host_post (h, 1, s);
    if ((rc = node_wait_all (h, 1, s)) < 0)
        return rc;
    if (out)
        memcpy (out, res, n * es);
    return 0;
}

/* One bcast step on one node: bytes of root's buf to the others (a piece
 * of a call of total bytes). */
static int node_bcast_step (struct host *h, char *buf, size_t bytes,
                            size_t total, int root)
{
    int rlr = h->rank_lrank[root], rc;
    uint64_t s = 0;
    char *res;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    res = host_result (h, (int)(s & 1));
    if (h->rank == root) {
        tag_put (h, res, s, total);
        memcpy (res + STEP_HDR, buf, bytes);
    }
    host_post (h, 0, s);
    if (h->rank == root)
        return 0;
    if ((rc = node_wait_flag (h, rlr, 0, s)) < 0
        || (rc = tag_check (h, rlr, res, s, total)) < 0)
        return rc;
    memcpy (buf, res + STEP_HDR, bytes);
    return 0;
}

/* A bcast of at most HOST_RING_BYTES on one node, through the root's ring
 * entry: the root returns at once, up to HOST_RING_KMAX - 1 calls ahead
 * of its readers. */
static int node_bcast_ring (struct host *h, char *buf, size_t bytes,
                            int root)
{
    int rlr = h->rank_lrank[root], rc;
    uint64_t s = 0;
    size_t off = ring_place (h, rlr, HOST_RING_TAG + bytes);
    char *e = host_ring (h, rlr) + off;

    if ((rc = ring_step_begin (h, &s)) < 0)
        return rc;
    if (h->rank == root) {
        if ((rc = ring_claim (h, s, off, HOST_RING_TAG + bytes)) < 0)
            return rc;
        ring_write (h, e, s, buf, bytes);
    }
    host_post (h, 0, s);
    if (h->rank == root)
        return 0;
    if ((rc = wait_flag_lead (h, rlr, s)) < 0)
        return rc;
    return ring_read (h, rlr, e, s, buf, bytes);
}

/* ----------------------------------------- one node: single copy (CMA) */

/* On one node a rank may read another's buffer straight from its memory
 * (process_vm_readv: one copy) instead of through the segment (two: in,
 * then out), when the node voted it can.  Measured on 1 node x 2 ranks
 * (2 cores): a gather or allgather gains from 8 KiB a rank (allgather of
 * 8 KiB a rank 1.65 against 2.64-2.90 us; 512 KiB 41 against 95 us), a
 * bcast from 16 KiB (32 KiB: 2.0 against 2.9 us; 1 MiB 44-48 against
 * 56-58).  Above 1 MiB the machines disagree: on the Intel one the
 * segment's copies, pipelined in its banks, kept the root and the reader
 * both busy and won at 2 MiB (143-146 against 170-176 us); on the AMD one
 * (2026-11-27) single copy wins 3-4x at 2-8 MiB (2 MiB 74-80 against
 * 240-287 us, 8 MiB 404-431 against 1211; Open MPI, single copy too, 86
 * and 434) and by a quarter at 16 MiB, and they are even at 64 MiB.  At
 * 1 x 4 on 2 CPUs the two are within the spread up to 4 MiB and the
 * segment is ahead at 16 MiB (3.4 against 4.2-4.6 ms; Open MPI 6.7).
 * Single copy up to 32 MiB, as Open MPI does at every size. */
#define CMA_GATHER_MIN 8192
#define CMA_BCAST_MIN 16384
#define CMA_BCAST_MAX (32u << 20)
/* An all-reduce by single copy (node_reduce_cma) from 256 KiB: 1 x 2
 * on the AMD machine (2026-11-27), against the segment: 256 KiB even
 * (28-37 against 32-34 us), 1 MiB 107-142 against 190-206, 4 MiB 470-617
 * against 814-887, 16 MiB 2813-3844 against 3586-3893 (Open MPI 139-147,
 * 568-589, 2991-3628).  Pieces of 256 KiB beat 64 KiB, 1 and 4 MiB (4
 * MiB: 530-536 against 556-728 us).  Where the node's ranks outnumber its
 * CPUs the segment was ahead: 1 x 4 on 2 CPUs, 256 KiB 105 against
 * 130-193 us, 4 MiB 1559 against 1859, 16 MiB 7203 against 9491 (Open MPI
 * 172, 2784, 12265: both ahead).  Kept for every node all the same: a
 * real node has a CPU for each rank, and one choice keeps the tests on
 * this path. */
#define CMA_REDUCE_MIN (256u << 10)
#define CMA_REDUCE_MAX SIZE_MAX
#define CMA_REDUCE_PIECE (256u << 10)
#define CMA_REDUCE_SCRATCH (4u << 20)

/* The node's vote on single copy, once, in a step of its own (every
 * local rank is in the same call: the choice depends on the call alone),
 * tagged with the call's signature: a rank whose call put it on another
 * path fails here instead of reading a vote from a data step. */
static int cma_decide (struct host *h)
{
    uint64_t s = 0;
    int rc;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    host_cma_vote (h);
    node_tag_post (h, s);
    host_post (h, 0, s);
    if ((rc = node_wait_all (h, 0, s)) < 0
        || (rc = node_tags_check (h, h->lsize, s)) < 0)
        return rc;
    h->cma = host_cma_agreed (h) ? 1 : 2;
    ddpi_debug ("single copy between local ranks: %s",
                h->cma == 1 ? "on" : "off");
    return 0;
}

/* Whether this one-node call goes by single copy (bytes: what one rank
 * reads from one other; [lo, hi): the range where that pays): 1, 0, or
 * <0 (the vote failed). */
static int cma_use (struct host *h, size_t bytes, size_t lo, size_t hi)
{
    int rc;

    if (h->nnodes != 1 || bytes < lo || bytes >= hi || h->cma == 2)
        return 0;
    if (h->cma == 0 && (rc = cma_decide (h)) < 0)
        return rc;
    return h->cma == 1;
}

/* A bcast on one node by single copy: the root posts its buffer, the
 * others read it and say so (red), the root returns when all have. */
static int node_bcast_cma (struct host *h, char *buf, size_t bytes, int root)
{
    int rlr = h->rank_lrank[root], rc;
    uint64_t s = 0;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    if (h->rank == root) {
        host_cma_post (h, buf, NULL);
        node_tag_post (h, s);
    }
    host_post (h, 0, s);
    if (h->rank == root)
        return node_wait_all (h, 1, s);
    if ((rc = node_wait_flag (h, rlr, 0, s)) < 0
        || (rc = node_tag_check (h, rlr, s)) < 0
        || (rc = host_fault_rc (h, host_cma_read (h, rlr, 0, 0, buf, bytes)))
           < 0)
        return rc;
    host_post (h, 1, s);
    return 0;
}

/* This rank's share of an all-reduce by single copy (node_reduce_cma):
 * elements [lo, hi) of every local rank's send, reduced in local rank
 * order (as in the segment: the same result to the bit) into dst (its
 * element lo first; a reduce-scatter's too), a piece at a time (CMA_REDUCE_PIECE of accumulation; the node-mates'
 * pieces together at most CMA_REDUCE_SCRATCH): the node-mates' pieces read
 * into scratch, reduced into an accumulation piece (never into recv
 * itself: it may be send), then finished and narrowed into recv. */
static int reduce_share_cma (struct host *h, const char *send, char *dst,
                             size_t lo, size_t hi, ddp_dtype_t dtype,
                             ddp_op_t op)
{
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    size_t es = ddp_dtype_size (dtype), aes = ddp_dtype_size (at);
    size_t pe = CMA_REDUCE_PIECE / aes, m, slot;
    size_t cap = CMA_REDUCE_SCRATCH / ((size_t)h->lsize * es);
    char *acc, *tmp;
    const void *src[h->lsize];
    int rc;

    pe = pe < cap ? pe : cap;
    /* A node-mate's piece lands at its source's offset in the page
     * (host_cma_page_off): a page more room each. */
    slot = pe * es + HOST_PAGE;
    acc = host_scratch (h, 0, pe * aes);
    tmp = host_scratch (h, 2, (size_t)h->lsize * slot);
    if (!acc || !tmp)
        return DDP_ENOMEM;
    for (size_t off = lo; off < hi; off += m) {
        m = hi - off < pe ? hi - off : pe;
        for (int lr = 0; lr < h->lsize; lr++) {
            char *t = tmp + (size_t)lr * slot
                      + host_cma_page_off (h, lr, 0, off * es);
            if (lr == h->lrank)
                src[lr] = send + off * es;
            else if ((rc = host_fault_rc (h, host_cma_read (h, lr, 0,
                                                            off * es, t,
                                                            m * es))) < 0)
                return rc;
            else
                src[lr] = t;
        }
        ddpi_reduce_many_acc (acc, src, h->lsize, m, dtype, op);
        ddpi_reduce_finish (acc, m, at, op, h->size);
        ddpi_narrow (dst + (off - lo) * es, acc, m, dtype, op);
    }
    return 0;
}

/* An all-reduce on one node by single copy, in one step: every rank posts
 * its send and recv buffers; each reduces its share into its recv from
 * the others' sends (reduce_share_cma) and says so (red); then reads the
 * others' shares from their recvs and says so (fin); it returns when all
 * have, so that no one still reads its buffers.  With recv == send a rank
 * writes only its own share of it, which no one else reads.  scatter (a
 * reduce-scatter): this rank's share is its block (count elements a rank)
 * reduced into recv, and it returns once every rank has reduced (red):
 * no one reads a recv.  In place, recv is this rank's block of send,
 * which no one else reads. */
static int node_reduce_cma (struct host *h, const char *send, char *recv,
                            size_t count, ddp_dtype_t dtype, ddp_op_t op,
                            bool scatter)
{
    size_t es = ddp_dtype_size (dtype), lo, hi;
    char *dst;
    uint64_t s = 0;
    int rc;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    host_cma_post (h, send, scatter ? NULL : recv);
    node_tag_post (h, s);
    host_post (h, 0, s);
    if (scatter) {
        lo = (size_t)h->rank * count;
        hi = lo + count;
        dst = recv;
    }
    else {
        share (h, h->lrank, count, &lo, &hi);
        dst = recv + lo * es;
    }
    if ((rc = node_wait_all (h, 0, s)) < 0
        || (rc = node_tags_check (h, h->lsize, s)) < 0
        || (rc = reduce_share_cma (h, send, dst, lo, hi, dtype, op)) < 0)
        return rc;
    host_post (h, 1, s);
    if ((rc = node_wait_all (h, 1, s)) < 0 || scatter)
        return rc;
    for (int lr = 0; lr < h->lsize; lr++) {
        size_t a, b;
        share (h, lr, count, &a, &b);
        if (lr != h->lrank && b > a
            && (rc = host_fault_rc (h, host_cma_read (h, lr, 1, a * es,
                                                      recv + a * es,
                                                      (b - a) * es))) < 0)
            return rc;
    }
    host_post (h, 2, s);
    return node_wait_all (h, 2, s);
}

/* A gather (recv: the root's, NULL elsewhere; all: an allgather) on one
 * node by single copy: every rank posts its send buffer; a rank with a
 * recv reads the others' into it and says so (red); a rank returns when
 * every rank that reads from it has (the root, or all). */
static int node_gather_cma (struct host *h, const char *send, char *recv,
                            size_t bytes, int root, bool all)
{
    uint64_t s = 0;
    int rc;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    host_cma_post (h, send, NULL);
    node_tag_post (h, s);
    host_post (h, 0, s);
    if (recv) {
        if ((rc = node_wait_all (h, 0, s)) < 0
            || (rc = node_tags_check (h, h->lsize, s)) < 0)
            return rc;
        for (int lr = 0; lr < h->lsize; lr++) {
            char *dst = recv + (size_t)h->local_ranks[lr] * bytes;
            if (lr == h->lrank) {
                if (dst != send)
                    memmove (dst, send, bytes);
            }
            else if ((rc = host_fault_rc (h, host_cma_read (h, lr, 0, 0, dst,
                                                            bytes)))
                     < 0)
                return rc;
        }
        host_post (h, 1, s);
    }
    if (all)
        return node_wait_all (h, 1, s);
    return h->rank == root ? 0 : node_wait_flag (h, h->rank_lrank[root], 1, s);
}

/* One gather step on one node: bytes of every rank's send into recv at
 * rank x stride (recv NULL: not wanted here), a piece of a call of
 * stride bytes a rank. */
static int node_gather_step (struct host *h, const char *send, char *recv,
                             size_t bytes, size_t stride)
{
    uint64_t s = 0;
    int rc, bank;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    tag_put (h, host_slot (h, bank, h->lrank), s, stride);
    memcpy (host_slot (h, bank, h->lrank) + STEP_HDR, send, bytes);
    host_post (h, 0, s);
    if (!recv)
        return 0;
    if ((rc = node_wait_all (h, 0, s)) < 0)
        return rc;
    for (int lr = 0; lr < h->lsize; lr++) {
        const char *slot = host_slot (h, bank, lr);
        if (lr != h->lrank && (rc = tag_check (h, lr, slot, s, stride)) < 0)
            return rc;
        memcpy (recv + (size_t)h->local_ranks[lr] * stride, slot + STEP_HDR,
                bytes);
    }
    return 0;
}

/* A gather (recv NULL: not wanted here) of at most HOST_RING_BYTES a rank
 * on one node, through each rank's ring entry: a rank that wants nothing
 * returns at once, up to HOST_RING_KMAX - 1 calls ahead of the root. */
static int node_gather_ring (struct host *h, const char *send, char *recv,
                             size_t bytes)
{
    uint64_t s = 0;
    size_t off, len = HOST_RING_TAG + bytes;
    int rc;

    /* Every cursor moves by the same length: the entries of one step are
     * at the same offset of every ring if the cursors were equal, and at
     * their own otherwise (a bcast moved only its root's). */
    for (int lr = 0; lr < h->lsize; lr++)
        h->ring_off[lr] = ring_place (h, lr, len);
    off = h->ring_off[h->lrank];
    if ((rc = ring_step_begin (h, &s)) < 0
        || (rc = ring_claim (h, s, off, len)) < 0)
        return rc;
    ring_write (h, host_ring (h, h->lrank) + off, s, send, bytes);
    host_post (h, 0, s);
    if (!recv)
        return 0;
    if ((rc = wait_all_lead (h, s)) < 0)
        return rc;
    for (int lr = 0; lr < h->lsize; lr++)
        if ((rc = ring_read (h, lr, host_ring (h, lr) + h->ring_off[lr], s,
                             recv + (size_t)h->local_ranks[lr] * bytes,
                             bytes)) < 0)
            return rc;
    return 0;
}

/* An allgather of at most HOST_INLINE_BYTES a rank on one node, in the
 * flags' inline areas (a bank step: every rank waits for every other, so
 * the ring's lead would buy nothing). */
static int node_allgather_inline (struct host *h, const char *send,
                                  char *recv, size_t bytes)
{
    uint64_t s = 0;
    int rc, bank;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    memcpy (host_inline (h, h->lrank, bank), send, bytes);
    node_tag_post (h, s);
    host_post (h, 0, s);
    if ((rc = node_wait_all (h, 0, s)) < 0
        || (rc = node_tags_check (h, h->lsize, s)) < 0)
        return rc;
    for (int lr = 0; lr < h->lsize; lr++)
        memcpy (recv + (size_t)h->local_ranks[lr] * bytes,
                host_inline (h, lr, bank), bytes);
    return 0;
}

/* ------------------------------------------------------------ the calls */

int node_reduce_run (struct host *h, const char *send, char *recv,
                     size_t count, ddp_dtype_t dtype, ddp_op_t op, bool all)
{
    size_t es = ddp_dtype_size (dtype), chunk = node_chunk (h, dtype, op), n;
    int rc;

    if (all && (rc = cma_use (h, count * es, CMA_REDUCE_MIN,
                              CMA_REDUCE_MAX)) != 0)
        return rc < 0 ? rc : node_reduce_cma (h, send, recv, count, dtype,
                                              op, false);
    for (size_t off = 0; off < count; off += n) {
        n = count - off < chunk ? count - off : chunk;
        if ((rc = node_reduce_step (h, send + off * es,
                                    recv ? recv + off * es : NULL, n,
                                    dtype, op)) < 0)
            return rc;
    }
    return 0;
}

int node_bcast_run (struct host *h, char *buf, size_t bytes, int root)
{
    size_t room = h->res_bytes - STEP_HDR, n;
    int rc;

    if (bytes <= HOST_RING_BYTES)
        return node_bcast_ring (h, buf, bytes, root);
    if ((rc = cma_use (h, bytes, CMA_BCAST_MIN, CMA_BCAST_MAX)) != 0)
        return rc < 0 ? rc : node_bcast_cma (h, buf, bytes, root);
    for (size_t off = 0; off < bytes; off += n) {
        n = bytes - off < room ? bytes - off : room;
        if ((rc = node_bcast_step (h, buf + off, n, bytes, root)) < 0)
            return rc;
    }
    return 0;
}

int node_gather_run (struct host *h, const char *send, char *recv,
                     size_t bytes, size_t es, int root)
{
    size_t room = h->slot_bytes - STEP_HDR, chunk = room - room % es, n;
    int rc;

    if (root < 0 && bytes <= HOST_INLINE_BYTES)
        return node_allgather_inline (h, send, recv, bytes);
    if (bytes <= HOST_RING_BYTES)
        return node_gather_ring (h, send, recv, bytes);
    if ((rc = cma_use (h, bytes, CMA_GATHER_MIN, SIZE_MAX)) != 0)
        return rc < 0 ? rc : node_gather_cma (h, send, recv, bytes, root,
                                              root < 0);
    for (size_t off = 0; off < bytes; off += n) {
        n = bytes - off < chunk ? bytes - off : chunk;
        if ((rc = node_gather_step (h, send + off, recv ? recv + off : NULL,
                                    n, bytes)) < 0)
            return rc;
    }
    return 0;
}

/* A reduce-scatter's step on one node through the slots: elements [e, e
 * + n) of blocks [b, b + nb) of every rank's send go in its slot, block
 * after block; the rank whose block is among them checks the tags and
 * reduces its piece from every slot in local rank order (node_reduce, as
 * an all-reduce's step: the same result to the bit) into its recv.  The
 * others take no wait: the next step's begin holds the bank. */
static int node_scatter_step (struct host *h, const char *send, char *recv,
                              size_t count, size_t b, size_t nb, size_t e,
                              size_t n, ddp_dtype_t dtype, ddp_op_t op)
{
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    size_t es = ddp_dtype_size (dtype), me = (size_t)h->rank;
    uint64_t s = 0;
    char *slot, *w;
    int rc, bank;

    if ((rc = node_step_begin (h, &s)) < 0)
        return rc;
    bank = (int)(s & 1);
    slot = host_slot (h, bank, h->lrank);
    for (size_t k = 0; k < nb; k++)
        memcpy (slot + k * n * es, send + ((b + k) * count + e) * es, n * es);
    node_tag_post (h, s);
    host_post (h, 0, s);
    if (me < b || me >= b + nb)
        return 0;
    w = at == dtype ? recv + e * es
                    : host_scratch (h, 0, n * ddp_dtype_size (at));
    if (!w)
        return DDP_ENOMEM;
    if ((rc = node_wait_all (h, 0, s)) < 0
        || (rc = node_tags_check (h, h->lsize, s)) < 0)
        return rc;
    node_reduce (h, bank, w, (me - b) * n, n, dtype, op);
    ddpi_reduce_finish (w, n, at, op, h->size);
    ddpi_narrow (recv + e * es, w, n, dtype, op);
    return 0;
}

int node_reduce_scatter_run (struct host *h, const char *send, char *recv,
                             size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype), size = (size_t)h->size;
    size_t c = h->slot_bytes / (size * es), nb = size;
    int rc;

    if ((rc = cma_use (h, size * count * es, CMA_REDUCE_MIN,
                       CMA_REDUCE_MAX)) != 0)
        return rc < 0 ? rc : node_reduce_cma (h, send, recv, count, dtype,
                                              op, true);
    /* A piece of every block a step; in slots too small for one element
     * of each, the blocks in groups. */
    if (c == 0) {
        c = h->slot_bytes / es < count ? h->slot_bytes / es : count;
        nb = h->slot_bytes / (c * es);
    }
    else if (c > count)
        c = count;
    for (size_t b = 0; b < size; b += nb)
        for (size_t e = 0; e < count; e += c) {
            size_t m = size - b < nb ? size - b : nb;
            size_t n = count - e < c ? count - e : c;
            if ((rc = node_scatter_step (h, send, recv, count, b, m, e, n,
                                         dtype, op)) < 0)
                return rc;
        }
    return 0;
}
