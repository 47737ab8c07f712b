/* sampler.c - ddp_sampler_*: PyTorch DistributedSampler semantics, checked
 * against a reference computed here the way torch does it (index list, pad
 * by repeating the list, take rank::world). */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ddp.h"
#include "tap.h"

/* torch: num_samples = ceil((N - W) / W) if drop_last and N % W, else
 * ceil(N / W), with Python's ceil of a possibly negative fraction. */
static int64_t ref_num_samples (int64_t n, int64_t w, bool drop_last)
{
    if (drop_last && n % w != 0) {
        int64_t a = n - w;
        int64_t q = a / w;          /* C truncates toward zero */
        if (a % w != 0 && a > 0)
            q++;
        return q < 0 ? 0 : q;
    }
    return (n + w - 1) / w;
}

/* The padded (or truncated) epoch list as torch builds it from 'base'
 * (length n): indices += indices[:pad] repeated until total_size. */
static uint64_t *ref_padded (const uint64_t *base, uint64_t n, uint64_t total)
{
    uint64_t *l = calloc (total > n ? total : n + 1, sizeof (*l));
    uint64_t len = n;

    memcpy (l, base, n * sizeof (*l));
    while (len < total) {           /* append a prefix of the original list */
        uint64_t add = total - len < n ? total - len : n;
        memcpy (l + len, base, add * sizeof (*l));
        len += add;
    }
    return l;
}

/* Run all ranks of one sampler configuration and rebuild the epoch list
 * P[j] (j < total_size) from the ranks' outputs: P[r + i*W] = out_r[i].
 * Returns NULL (and fails a test) if any rank's output is not as set up. */
static uint64_t *run_all_ranks (uint64_t n, int w, bool shuffle, uint64_t seed,
                                uint64_t epoch, bool drop_last,
                                uint64_t *total)
{
    ddp_sampler_t s;
    uint64_t *p, *out;
    int64_t k = ref_num_samples ((int64_t) n, w, drop_last);

    *total = (uint64_t) k * (uint64_t) w;
    p = calloc (*total + 1, sizeof (*p));
    out = calloc ((size_t) k + 1, sizeof (*out));
    for (int r = 0; r < w; r++) {
        if (ddp_sampler_init (&s, n, w, r, shuffle, seed, drop_last) != 0
            || s.num_samples != (uint64_t) k || s.total_size != *total) {
            ok (0, "N=%ju W=%d rank %d: init as torch (num_samples %ju, "
                "want %jd)", (uintmax_t) n, w, r, (uintmax_t) s.num_samples,
                (intmax_t) k);
            goto error;
        }
        ddp_sampler_set_epoch (&s, epoch);
        if (ddp_sampler_indices (&s, out, (size_t) k) != 0) {
            ok (0, "N=%ju W=%d rank %d: indices", (uintmax_t) n, w, r);
            goto error;
        }
        for (int64_t i = 0; i < k; i++)
            p[(uint64_t) r + (uint64_t) i * (uint64_t) w] = out[i];
    }
    free (out);
    return p;
error:
    free (out);
    free (p);
    return NULL;
}

/* Without shuffle: the ranks' union equals torch's list exactly. */
static void check_plain (uint64_t n, int w, bool drop_last)
{
    uint64_t total, *p, *base, *ref;
    bool same = true;

    if (!(p = run_all_ranks (n, w, false, 0, 0, drop_last, &total)))
        return;
    base = calloc (n + 1, sizeof (*base));
    for (uint64_t i = 0; i < n; i++)
        base[i] = i;
    ref = ref_padded (base, n, total);
    for (uint64_t j = 0; j < total; j++)
        if (p[j] != ref[j])
            same = false;
    ok (same, "no shuffle N=%ju W=%d drop_last=%d: ranks' indices are torch's "
        "rank::W of the %s list", (uintmax_t) n, w, drop_last,
        drop_last ? "truncated" : "padded");
    free (ref);
    free (base);
    free (p);
}

/* The permutation of [0, n) for (seed, epoch), from a world of one. */
static uint64_t *perm_of (uint64_t n, uint64_t seed, uint64_t epoch)
{
    ddp_sampler_t s;
    uint64_t *out = calloc (n + 1, sizeof (*out));

    if (ddp_sampler_init (&s, n, 1, 0, true, seed, false) != 0) {
        free (out);
        return NULL;
    }
    ddp_sampler_set_epoch (&s, epoch);
    if (ddp_sampler_indices (&s, out, n) != 0) {
        free (out);
        return NULL;
    }
    return out;
}

static bool is_perm (const uint64_t *v, uint64_t n)
{
    unsigned char *seen = calloc (n + 1, 1);
    bool good = true;

    for (uint64_t i = 0; i < n && good; i++) {
        if (v[i] >= n || seen[v[i]])
            good = false;
        else
            seen[v[i]] = 1;
    }
    free (seen);
    return good;
}

/* With shuffle: the ranks' union is the world-of-one permutation (so every
 * rank used the same one), padded by wrapping or truncated like torch. */
static void check_shuffled (uint64_t n, int w, bool drop_last, uint64_t seed,
                            uint64_t epoch)
{
    uint64_t total, *p, *perm, *ref;
    bool same = true;

    if (!(p = run_all_ranks (n, w, true, seed, epoch, drop_last, &total)))
        return;
    perm = perm_of (n, seed, epoch);
    if (!perm || !is_perm (perm, n)) {
        ok (0, "shuffle N=%ju seed=%ju epoch=%ju is a permutation",
            (uintmax_t) n, (uintmax_t) seed, (uintmax_t) epoch);
        goto out;
    }
    ref = ref_padded (perm, n, total);
    for (uint64_t j = 0; j < total; j++)
        if (p[j] != ref[j])
            same = false;
    ok (same, "shuffle N=%ju W=%d drop_last=%d seed=%ju epoch=%ju: ranks "
        "cover torch's %s list of one permutation", (uintmax_t) n, w,
        drop_last, (uintmax_t) seed, (uintmax_t) epoch,
        drop_last ? "truncated" : "wrapped");
    free (ref);
out:
    free (perm);
    free (p);
}

static void check_args (void)
{
    ddp_sampler_t s;
    uint64_t out[8];

    is_int (ddp_sampler_init (NULL, 10, 2, 0, false, 0, false), DDP_EINVAL,
            "init: NULL sampler is DDP_EINVAL");
    is_int (ddp_sampler_init (&s, 10, 0, 0, false, 0, false), DDP_EINVAL,
            "init: world_size 0 is DDP_EINVAL");
    is_int (ddp_sampler_init (&s, 10, -3, 0, false, 0, false), DDP_EINVAL,
            "init: negative world_size is DDP_EINVAL");
    is_int (ddp_sampler_init (&s, 10, 2, -1, false, 0, false), DDP_EINVAL,
            "init: rank -1 is DDP_EINVAL");
    is_int (ddp_sampler_init (&s, 10, 2, 2, false, 0, false), DDP_EINVAL,
            "init: rank == world_size is DDP_EINVAL");
    is_int (ddp_sampler_init (&s, UINT64_MAX, 2, 0, false, 0, false),
            DDP_EINVAL, "init: an absurd dataset size is DDP_EINVAL");

    is_int (ddp_sampler_init (&s, 10, 3, 1, true, 7, false), 0, "init N=10 W=3");
    is_int (s.num_samples, 4, "N=10 W=3: 4 samples per rank (padded)");
    is_int (s.total_size, 12, "N=10 W=3: total_size 12");
    is_int (s.epoch, 0, "init: epoch 0");
    is_int (ddp_sampler_indices (&s, NULL, 4), DDP_EINVAL,
            "indices: NULL out is DDP_EINVAL");
    is_int (ddp_sampler_indices (&s, out, 3), DDP_EINVAL,
            "indices: room for fewer than num_samples is DDP_EINVAL");
    is_int (ddp_sampler_indices (NULL, out, 8), DDP_EINVAL,
            "indices: NULL sampler is DDP_EINVAL");
    ddp_sampler_set_epoch (NULL, 3);
    ok (1, "set_epoch (NULL) does not crash");
    ddp_sampler_set_epoch (&s, 5);
    is_int (s.epoch, 5, "set_epoch sets the epoch");
    s.num_samples = 5;
    is_int (ddp_sampler_indices (&s, out, 8), DDP_EINVAL,
            "indices: a sampler altered after init is DDP_EINVAL");
    s.num_samples = 4;
    s.rank = 3;
    is_int (ddp_sampler_indices (&s, out, 8), DDP_EINVAL,
            "indices: rank out of range is DDP_EINVAL");

    is_int (ddp_sampler_init (&s, 10, 3, 2, false, 0, true), 0,
            "init drop_last N=10 W=3");
    is_int (s.num_samples, 3, "drop_last N=10 W=3: floor, 3 samples");
    is_int (ddp_sampler_init (&s, 3, 4, 3, false, 0, true), 0,
            "init drop_last N=3 W=4");
    is_int (s.num_samples, 0, "drop_last N=3 W=4: 0 samples");
    is_int (ddp_sampler_indices (&s, NULL, 0), 0,
            "indices: 0 samples with NULL out is fine");
    is_int (ddp_sampler_init (&s, 0, 4, 0, true, 0, false), 0, "init N=0");
    is_int (s.num_samples, 0, "N=0: 0 samples");
    is_int (ddp_sampler_indices (&s, NULL, 0), 0, "N=0: indices returns 0");
}

static void check_determinism (void)
{
    uint64_t *a = perm_of (1000, 42, 3), *b = perm_of (1000, 42, 3);
    uint64_t *c = perm_of (1000, 42, 4), *d = perm_of (1000, 43, 3);
    uint64_t *e = perm_of (1000, 42, 0);
    bool id = true;

    ok (a && b && memcmp (a, b, 1000 * sizeof (*a)) == 0,
        "same (seed, epoch): same permutation");
    ok (a && c && memcmp (a, c, 1000 * sizeof (*a)) != 0,
        "another epoch: another permutation");
    ok (a && d && memcmp (a, d, 1000 * sizeof (*a)) != 0,
        "another seed: another permutation");
    for (uint64_t i = 0; e && i < 1000; i++)
        if (e[i] != i)
            id = false;
    ok (e && !id, "epoch 0 is shuffled too (not the identity)");
    free (a);
    free (b);
    free (c);
    free (d);
    free (e);
}

/* A fair shuffle: over many epochs every item is first equally often, and
 * (N=3) all 6 orders come up equally often. */
static void check_uniform (void)
{
    int first[5] = { 0 }, orders[9] = { 0 };
    bool fair = true;

    for (uint64_t ep = 0; ep < 5000; ep++) {
        uint64_t *p = perm_of (5, 1234, ep);
        first[p[0]]++;
        free (p);
    }
    for (int i = 0; i < 5; i++)
        if (first[i] < 850 || first[i] > 1150)   /* mean 1000, sd ~28 */
            fair = false;
    ok (fair, "N=5: each item first in 1000 +- 150 of 5000 epochs "
        "(%d %d %d %d %d)", first[0], first[1], first[2], first[3], first[4]);
    fair = true;
    for (uint64_t ep = 0; ep < 6000; ep++) {
        uint64_t *p = perm_of (3, 99, ep);
        orders[p[0] * 3 + p[1]]++;
        free (p);
    }
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (a != b && (orders[a * 3 + b] < 850 || orders[a * 3 + b] > 1150))
                fair = false;
    ok (fair, "N=3: each of the 6 orders in 1000 +- 150 of 6000 epochs "
        "(%d %d %d %d %d %d)", orders[1], orders[2], orders[3], orders[5],
        orders[6], orders[7]);
}

/* A dataset far larger than memory: each rank computes only its own part. */
static void check_huge (void)
{
    ddp_sampler_t s;
    uint64_t n = UINT64_C (1000000000000), k;
    uint64_t *out;
    int rc;

    rc = ddp_sampler_init (&s, n, 1000000, 123456, true, 5, false);
    k = s.num_samples;
    is_int (k, 1000000, "N=1e12 W=1e6: 1e6 samples per rank");
    out = calloc (k, sizeof (*out));
    rc = rc ? rc : ddp_sampler_indices (&s, out, k);
    is_int (rc, 0, "N=1e12: indices without materializing the permutation");
    bool good = true;
    for (uint64_t i = 0; i < k; i++)
        if (out[i] >= n)
            good = false;
    ok (good, "N=1e12: every index is in range");
    free (out);
}

/* ddp_sampler_indices_from: every window [start, start + n) of every rank
 * is the same slice of the whole list, for both orders and paddings. */
static void check_from_windows (uint64_t n, int w, bool shuffle,
                                bool drop_last)
{
    ddp_sampler_t s;
    uint64_t *all, *part;
    bool same = true, init = true;

    for (int r = 0; r < w && same && init; r++) {
        init = ddp_sampler_init (&s, n, w, r, shuffle, 9, drop_last) == 0;
        if (!init)
            break;
        ddp_sampler_set_epoch (&s, 3);
        all = calloc (s.num_samples + 1, sizeof (*all));
        part = calloc (s.num_samples + 1, sizeof (*part));
        if (ddp_sampler_indices (&s, all, s.num_samples) != 0)
            same = false;
        for (uint64_t a = 0; a <= s.num_samples && same; a++)
            for (uint64_t len = 0; a + len <= s.num_samples && same; len++) {
                if (ddp_sampler_indices_from (&s, a, part, len) != 0
                    || memcmp (part, all + a, len * sizeof (*all)) != 0)
                    same = false;
            }
        free (all);
        free (part);
    }
    ok (init && same, "indices_from N=%ju W=%d shuffle=%d drop_last=%d: "
        "every window of every rank is that slice of its list",
        (uintmax_t) n, w, shuffle, drop_last);
}

static void check_from_args (void)
{
    ddp_sampler_t s;
    uint64_t out[8];

    is_int (ddp_sampler_init (&s, 10, 3, 1, true, 7, false), 0,
            "init N=10 W=3 (4 positions per rank)");
    is_int (ddp_sampler_indices_from (&s, 0, out, 4), 0,
            "indices_from: the whole list");
    is_int (ddp_sampler_indices_from (&s, 4, NULL, 0), 0,
            "indices_from: start == num_samples with n 0 (an epoch's end)");
    is_int (ddp_sampler_indices_from (&s, 3, out, 2), DDP_EINVAL,
            "indices_from: past the end is DDP_EINVAL");
    is_int (ddp_sampler_indices_from (&s, 5, out, 0), DDP_EINVAL,
            "indices_from: start past the end is DDP_EINVAL");
    is_int (ddp_sampler_indices_from (&s, UINT64_MAX, out, 2), DDP_EINVAL,
            "indices_from: a huge start does not wrap around");
    is_int (ddp_sampler_indices_from (&s, 0, NULL, 1), DDP_EINVAL,
            "indices_from: NULL out with n > 0 is DDP_EINVAL");
    is_int (ddp_sampler_indices_from (NULL, 0, out, 1), DDP_EINVAL,
            "indices_from: NULL sampler is DDP_EINVAL");
    s.num_samples = 5;
    is_int (ddp_sampler_indices_from (&s, 0, out, 1), DDP_EINVAL,
            "indices_from: a sampler altered after init is DDP_EINVAL");
}

/* A huge data set: a window far into the epoch costs only its own length
 * (the whole list would be 2^40 entries). */
static void check_from_far (void)
{
    ddp_sampler_t s, one;
    uint64_t far[4], ref[4];
    uint64_t k = (UINT64_C (1) << 39) - 3;

    ddp_sampler_init (&s, UINT64_C (1) << 41, 2, 1, true, 5, false);
    ddp_sampler_set_epoch (&s, 2);
    ok (ddp_sampler_indices_from (&s, k, far, 4) == 0,
        "indices_from: position 2^39 - 3 of 2^40, without the list");
    /* the same entries through a world of one: positions 2k+1, 2k+3, ... */
    ddp_sampler_init (&one, UINT64_C (1) << 41, 1, 0, true, 5, false);
    ddp_sampler_set_epoch (&one, 2);
    for (int i = 0; i < 4; i++)
        ddp_sampler_indices_from (&one, 2 * (k + (uint64_t) i) + 1, &ref[i],
                                  1);
    ok (memcmp (far, ref, sizeof (far)) == 0,
        "it matches the world-of-one permutation at the same entries");
}

int main (void)
{
    plan (NO_PLAN);
    check_args ();
    check_from_args ();
    check_from_far ();
    for (int w = 1; w <= 4; w++)
        for (uint64_t n = 0; n <= 9; n++) {
            check_from_windows (n, w, false, false);
            check_from_windows (n, w, true, false);
            check_from_windows (n, w, true, true);
        }
    for (int w = 1; w <= 5; w++) {
        for (uint64_t n = 0; n <= 13; n++) {
            check_plain (n, w, false);
            check_plain (n, w, true);
        }
    }
    uint64_t sizes[] = { 1, 2, 3, 7, 10, 64, 100, 1000, 4097 };
    int worlds[] = { 1, 2, 3, 4, 7, 16 };
    for (size_t i = 0; i < sizeof (sizes) / sizeof (sizes[0]); i++)
        for (size_t j = 0; j < sizeof (worlds) / sizeof (worlds[0]); j++) {
            check_shuffled (sizes[i], worlds[j], false, 42, i);
            check_shuffled (sizes[i], worlds[j], true, 7, j);
        }
    check_shuffled (3, 8, false, 1, 1);    /* pad wraps more than once */
    check_determinism ();
    check_uniform ();
    check_huge ();
    return done_testing ();
}

/* vi: ts=4 sw=4 expandtab
 */
