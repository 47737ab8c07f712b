/* trail.h - the trail: a running digest of the calls a rank made, and the
 * 24-bit signature of a call that the segment's tags carry (trail.c).
 * Pure arithmetic, at the bottom of the host backend with host_core.h;
 * calls no other file of libjob/host.  Internal to libddp.
 *
 * Why: a call in which no rank reads what another posted (each rank the
 * root of its own bcast, a gather's senders) cannot see that the ranks
 * described it differently.  Every call's tags and frames therefore carry
 * the trail before it, the digest of every call the rank made since
 * ddp_init (host_desc's what and count, in order), as well as the call
 * itself: ranks whose calls once differed carry different trails in every
 * later call, and the first later call in which a rank reads another's
 * tag or frame fails.  host.h ("Agreement") has where they travel. */
#ifndef DDP_TRAIL_H
#define DDP_TRAIL_H

#include <stdint.h>

/* The trail before a rank's first call (a zeroed struct host's). */
#define TRAIL_START UINT64_C(0)

/* The 64-bit hash of a call described by what and count (host_desc's):
 * a bijective mix of each word in turn, so that a different what or
 * count gives a different hash but once in 2^64.  Computed when the call
 * differs from the one before (coll.c keeps it). */
uint64_t trail_hash (uint64_t what, uint64_t count);

/* The trail after a call of hash (trail_hash) made with trail before it:
 * one multiply by an odd constant and an exclusive or, a bijection of
 * either argument for a fixed other, so that ranks whose trails once
 * differed keep different trails as long as they make the same calls,
 * and a different call gives a different trail. */
#define TRAIL_MUL UINT64_C(0x9e3779b97f4a7c15)
static inline uint64_t trail_step (uint64_t trail, uint64_t hash)
{
    return trail * TRAIL_MUL ^ hash;
}

/* trail_step (trail, trail_hash (what, count)). */
uint64_t trail_next (uint64_t trail, uint64_t what, uint64_t count);

/* The 24-bit signature of a call described by what, with after the
 * trail after it (trail_step of the one before and the call's hash), for
 * the segment's tags: the kind (3 bits) and dtype + 1 (4 bits) of what
 * exactly, then the top 17 bits of after, so that every difference of
 * kind or dtype is seen, and one of count, op, root or an earlier call
 * but once in 2^17 calls. */
static inline uint32_t trail_sig (uint64_t what, uint64_t after)
{
    return (uint32_t)((what & 7) << 21 | (what >> 8 & 15) << 17
                      | (after >> 47 & 0x1ffff));
}

/* A call of a rank's past, as host_desc described it, and the trail
 * before it. */
struct trail_call {
    uint64_t what, count, trail;
};

/* Which root would another rank have named in calls[0] (a call of a
 * kind that takes one, whose root sits in what's high half) to carry
 * trail want before the call after calls[n - 1], had it made calls[1..n-1]
 * as this rank did?  Tries roots 0..size-1 (an error path: O(n size)).
 * Returns that root, or -1 when none gives want (the calls differed
 * otherwise) or n < 1. */
int trail_root_of (const struct trail_call *calls, int n, uint64_t want,
                   int size);

/* The earlier call in which another rank, whose trail before call
 * (this rank's next call, made alike) is want, named another root than
 * this rank: past holds this rank's last HOST_DESC_SLOTS calls, call c
 * in past[c % HOST_DESC_SLOTS] (host_core.h); each of the last
 * HOST_DESC_SLOTS - 1 that takes a root is tried, nearest first, with
 * the ones after it (trail_root_of).  Returns its number, with *theirs
 * set to the other rank's description of it; 0 when none explains want
 * (*theirs zeroed). */
uint64_t trail_blame (const struct trail_call *past, uint64_t call,
                      uint64_t want, int size, struct trail_call *theirs);

#endif /* DDP_TRAIL_H */
