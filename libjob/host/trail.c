/* trail.c - the calls' running digest and the tags' signature (trail.h).
 * No state; calls no other file of libjob/host. */
#include "config.h"

#include "host_core.h"
#include "trail.h"

/* A bijective 64-bit mix (multiply-xorshift, as in SplitMix64's finish). */
static uint64_t mix (uint64_t x)
{
    x ^= x >> 31;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 29;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 32;
    return x;
}

/* trail.h.  Each word goes in through its own bijection of the state. */
uint64_t trail_hash (uint64_t what, uint64_t count)
{
    uint64_t x = mix (what);

    return mix (x + count + UINT64_C(0x632be59bd9b4e019));
}

/* trail.h. */
uint64_t trail_next (uint64_t trail, uint64_t what, uint64_t count)
{
    return trail_step (trail, trail_hash (what, count));
}

/* trail.h. */
int trail_root_of (const struct trail_call *calls, int n, uint64_t want,
                   int size)
{
    if (n < 1)
        return -1;
    for (int r = 0; r < size; r++) {
        uint64_t what = (calls[0].what & UINT64_C(0xffffffff))
                        | (uint64_t)(uint32_t)r << 32;
        uint64_t t = trail_next (calls[0].trail, what, calls[0].count);
        if (what == calls[0].what)
            continue;
        for (int i = 1; i < n; i++)
            t = trail_next (t, calls[i].what, calls[i].count);
        if (t == want)
            return r;
    }
    return -1;
}

/* trail.h.  Call call - k as calls[0], then those after it. */
uint64_t trail_blame (const struct trail_call *past, uint64_t call,
                      uint64_t want, int size, struct trail_call *theirs)
{
    struct trail_call calls[HOST_DESC_SLOTS];

    *theirs = (struct trail_call){ 0, 0, 0 };
    for (uint64_t k = 1; k < HOST_DESC_SLOTS && k < call; k++) {
        uint64_t c = call - k;
        int n = 0, kind = HOST_DESC_KIND (past[c % HOST_DESC_SLOTS].what), r;
        for (uint64_t j = c; j < call; j++)
            calls[n++] = past[j % HOST_DESC_SLOTS];
        if (kind >= HOST_DESC_BARRIER
            || !ddp_coll_has_root ((enum ddp_coll_kind)kind)
            || (r = trail_root_of (calls, n, want, size)) < 0)
            continue;
        *theirs = calls[0];
        theirs->what = (calls[0].what & UINT64_C(0xffffffff))
                       | (uint64_t)(uint32_t)r << 32;
        return c;
    }
    return 0;
}
