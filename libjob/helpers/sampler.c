/* sampler.c - the distributed sampler (PyTorch DistributedSampler semantics).
 *
 * The padded index list of an epoch has total_size = num_samples * world_size
 * entries; entry j is perm(j mod N), where perm is the identity without
 * shuffle.  Rank r takes entries r, r + W, r + 2W, ...  Without drop_last
 * num_samples = ceil(N / W) and the list wraps around to pad; with drop_last
 * num_samples = floor(N / W) and the tail is dropped.
 *
 * Shuffle: PyTorch materializes torch.randperm(N) on every rank, O(N) time
 * and memory per rank per epoch (800 MB for 100M items).  Here perm is a keyed
 * pseudo-random permutation evaluated one index at a time: a balanced Feistel
 * network (a bijection on [0, 4^h) with 4^h >= N) whose round function is the
 * splitmix64 finalizer keyed by (seed, epoch), restricted to [0, N) by cycle
 * walking.  Each rank computes only its own num_samples indices, allocates
 * nothing, and every rank computes the same permutation.  It is not
 * bit-compatible with torch.randperm (no C library can be without
 * reimplementing torch's generator); it is deterministic across ranks,
 * runs, machines and library versions with the same sampler algorithm.
 */
#include "config.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ddp.h"

#define FEISTEL_ROUNDS 6

/* splitmix64 (Steele, Lea, Flood 2014): a 64-bit bijective mixer. */
static uint64_t mix64 (uint64_t x)
{
    x += UINT64_C (0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C (0x94d049bb133111eb);
    return x ^ (x >> 31);
}

struct perm {
    uint64_t n;          /* domain [0, n) */
    unsigned half;       /* bits in each Feistel half */
    uint64_t mask;       /* (1 << half) - 1 */
    uint64_t key[FEISTEL_ROUNDS];
};

static void perm_init (struct perm *p, uint64_t n, uint64_t seed,
                       uint64_t epoch)
{
    uint64_t k;
    unsigned bits = 0;

    p->n = n;
    while (bits < 64 && (n - 1) >> bits != 0)   /* bits to hold n - 1 */
        bits++;
    p->half = (bits + 1) / 2;
    if (p->half == 0)
        p->half = 1;
    p->mask = p->half >= 32 ? UINT64_C (0xffffffff)
                            : (UINT64_C (1) << p->half) - 1;
    k = mix64 (seed) ^ mix64 (epoch ^ UINT64_C (0x6a09e667f3bcc909));
    for (int i = 0; i < FEISTEL_ROUNDS; i++) {
        k = mix64 (k + (uint64_t) i);
        p->key[i] = k;
    }
}

/* One pass of the Feistel network: a bijection on [0, 4^half). */
static uint64_t feistel (const struct perm *p, uint64_t x)
{
    uint64_t l = (x >> p->half) & p->mask;
    uint64_t r = x & p->mask;

    for (int i = 0; i < FEISTEL_ROUNDS; i++) {
        uint64_t t = r;
        r = l ^ (mix64 (r ^ p->key[i]) & p->mask);
        l = t;
    }
    return (l << p->half) | r;
}

/* Cycle walking: apply the network until the value falls back into [0, n);
 * the result is a bijection on [0, n).  4^half < 4n, so fewer than 4 passes
 * are expected; the walk always ends because x lies on a finite cycle that
 * contains x itself. */
static uint64_t perm_apply (const struct perm *p, uint64_t x)
{
    do {
        x = feistel (p, x);
    } while (x >= p->n);
    return x;
}

static uint64_t num_samples (uint64_t dataset_size, int world_size,
                             bool drop_last)
{
    uint64_t w = (uint64_t) world_size;
    uint64_t k = dataset_size / w;

    if (!drop_last && dataset_size % w != 0)
        k++;
    return k;
}

int ddp_sampler_init (ddp_sampler_t *s, uint64_t dataset_size, int world_size,
                      int rank, bool shuffle, uint64_t seed, bool drop_last)
{
    if (!s || world_size < 1 || rank < 0 || rank >= world_size)
        return DDP_EINVAL;
    if (dataset_size > UINT64_MAX / 2) /* keeps num_samples * w from wrapping */
        return DDP_EINVAL;
    s->dataset_size = dataset_size;
    s->world_size = world_size;
    s->rank = rank;
    s->shuffle = shuffle;
    s->drop_last = drop_last;
    s->seed = seed;
    s->epoch = 0;
    s->num_samples = num_samples (dataset_size, world_size, drop_last);
    s->total_size = s->num_samples * (uint64_t) world_size;
    return 0;
}

void ddp_sampler_set_epoch (ddp_sampler_t *s, uint64_t epoch)
{
    if (s)
        s->epoch = epoch;
}

/* True if s is as ddp_sampler_init() set it up (set_epoch aside). */
static bool sampler_valid (const ddp_sampler_t *s)
{
    return s && s->world_size >= 1 && s->rank >= 0
           && s->rank < s->world_size && s->dataset_size <= UINT64_MAX / 2
           && s->num_samples == num_samples (s->dataset_size, s->world_size,
                                             s->drop_last);
}

/* Positions start .. start+n-1 of this rank's list for the epoch: entry
 * rank + i * W of the padded epoch list for position i. */
static void fill (const ddp_sampler_t *s, uint64_t start, uint64_t *out,
                  size_t n)
{
    struct perm p = { 0 };
    uint64_t w = (uint64_t) s->world_size;
    uint64_t j = (uint64_t) s->rank + start * w;

    if (s->shuffle)
        perm_init (&p, s->dataset_size, s->seed, s->epoch);
    for (size_t i = 0; i < n; i++, j += w) {
        uint64_t idx = j % s->dataset_size;
        out[i] = s->shuffle ? perm_apply (&p, idx) : idx;
    }
}

int ddp_sampler_indices (const ddp_sampler_t *s, uint64_t *out, size_t n)
{
    if (!sampler_valid (s))
        return DDP_EINVAL;    /* not set up by ddp_sampler_init() */
    if (s->num_samples > 0 && (!out || n < s->num_samples))
        return DDP_EINVAL;
    fill (s, 0, out, (size_t) s->num_samples);
    return 0;
}

int ddp_sampler_indices_from (const ddp_sampler_t *s, uint64_t start,
                              uint64_t *out, size_t n)
{
    if (!sampler_valid (s))
        return DDP_EINVAL;
    if (start > s->num_samples || n > s->num_samples - start
        || (n > 0 && !out))
        return DDP_EINVAL;
    fill (s, start, out, n);
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
