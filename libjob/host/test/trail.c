/* trail.c - the trail's arithmetic (libjob/host/trail.c): a call that
 * differs in any word changes the trail after it and every later one;
 * the signature keeps the kind and dtype exactly; trail_root_of finds the
 * root another rank named from its trail alone, and nothing where the
 * calls differed otherwise. */
#include "config.h"

#include <stdint.h>

#include "tap.h"
#include "host_core.h"
#include "trail.h"

/* A bcast of n float32 (dtype 9 + 1 here: any) from root. */
static uint64_t bcast (int root)
{
    return HOST_DESC_WHAT (DDP_COLL_BCAST, 10, 0, root);
}

static uint64_t allreduce (void)
{
    return HOST_DESC_WHAT (DDP_COLL_ALLREDUCE, 10, 1, 0);
}

/* The trail after calls whats[0..n-1] of count each, from the start. */
static uint64_t walk (const uint64_t *whats, int n, uint64_t count)
{
    uint64_t t = TRAIL_START;

    for (int i = 0; i < n; i++)
        t = trail_next (t, whats[i], count);
    return t;
}

static void differences (void)
{
    uint64_t a[4] = { allreduce (), bcast (0), allreduce (), allreduce () };
    uint64_t b[4] = { allreduce (), bcast (1), allreduce (), allreduce () };
    uint64_t ta = walk (a, 2, 2), tb = walk (b, 2, 2);

    ok (ta != tb, "another root changes the trail after the call");
    ok (walk (a, 4, 2) != walk (b, 4, 2), "and every later one");
    ok (walk (a, 2, 2) != walk (a, 2, 3), "another count changes it");
    ok (trail_next (1, a[0], 2) != trail_next (2, a[0], 2),
        "another trail before changes it");
    ok (walk (a, 3, 2) != walk (a, 4, 2), "one call more changes it");
    ok (walk (a, 4, 2) == walk (a, 4, 2), "the same calls give the same");
    ok (trail_next (0, 0, 0) != 0, "the first call moves it from 0");
}

static void signature (void)
{
    uint64_t w = HOST_DESC_WHAT (HOST_DESC_BARRIER, 0, 0, 0);
    uint64_t x = HOST_DESC_WHAT (DDP_COLL_GATHER, 7, 0, 3);
    uint32_t s = trail_sig (x, 12345);
    int seen = 0;

    ok (HOST_SIG_KIND (s) == DDP_COLL_GATHER && HOST_SIG_DTYPE (s) == 6,
        "the signature keeps the kind and dtype");
    ok (HOST_SIG_KIND (trail_sig (w, 99)) == HOST_DESC_BARRIER,
        "a barrier's too");
    ok (s < (1u << 24), "it fits in 24 bits");
    /* Two calls alike after different trails: told apart nearly always. */
    for (uint64_t t = 1; t <= 1000; t++)
        seen += trail_sig (w, trail_next (t, w, 0))
                != trail_sig (w, trail_next (t + 1000, w, 0));
    ok (seen >= 990, "a different trail changes the signature (%d of 1000)",
        seen);
}

static void blame (void)
{
    struct trail_call c[3];
    uint64_t t = walk ((uint64_t[]){ allreduce () }, 1, 1);
    uint64_t theirs;

    c[0] = (struct trail_call){ bcast (0), 2, t };
    c[1] = (struct trail_call){ allreduce (), 2,
                                trail_next (t, c[0].what, 2) };
    c[2] = (struct trail_call){ allreduce (), 2,
                                trail_next (c[1].trail, c[1].what, 2) };
    theirs = trail_next (trail_next (trail_next (t, bcast (5), 2),
                                     allreduce (), 2),
                         allreduce (), 2);
    ok (trail_root_of (c, 3, theirs, 8) == 5,
        "the root another named two calls back is found");
    ok (trail_root_of (c, 3, theirs, 5) == -1,
        "not when it is beyond the world size");
    ok (trail_root_of (c + 2, 1, trail_next (c[2].trail, c[2].what, 3), 8)
            == -1,
        "nothing when the count differed");
    ok (trail_root_of (c, 3, trail_next (c[2].trail, c[2].what, 2), 8) == -1,
        "nothing when the calls were the same (own root skipped)");
    ok (trail_root_of (c, 0, theirs, 8) == -1, "nothing for no calls");
}

/* This rank's calls 1-4 in its ring of past calls; the other named root
 * 3 in call 3 (a bcast), the rest alike. */
static void blame_past (void)
{
    struct trail_call past[HOST_DESC_SLOTS], theirs;
    uint64_t whats[5] = { 0, allreduce (), allreduce (), bcast (0),
                          allreduce () };
    uint64_t t = TRAIL_START, o = TRAIL_START, c;

    for (uint64_t i = 1; i <= 4; i++) {
        past[i % HOST_DESC_SLOTS] = (struct trail_call){ whats[i], 2, t };
        t = trail_next (t, whats[i], 2);
        o = trail_next (o, i == 3 ? bcast (3) : whats[i], 2);
    }
    c = trail_blame (past, 5, o, 4, &theirs);
    ok (c == 3 && theirs.what == bcast (3) && theirs.count == 2,
        "trail_blame names call 3 and the other's root 3");
    c = trail_blame (past, 5, trail_next (o, 1, 1), 4, &theirs);
    ok (c == 0 && theirs.what == 0, "and nothing for a trail it cannot "
        "explain");
}

int main (void)
{
    plan (18);
    blame_past ();
    differences ();
    signature ();
    blame ();
    return done_testing ();
}
