/* schedule.c - the schedules of the cross-node algorithms (schedule.h). */
#include "config.h"

#include "schedule.h"

int sched_pow2_floor (int n)
{
    int p = 1;

    while (p <= n / 2)
        p *= 2;
    return p;
}

int sched_log2_ceil (int n)
{
    int k = 0;

    while (k < 31 && (1 << k) < n)
        k++;
    return k;
}

int sched_mod (long x, int N)
{
    long r = x % N;
    return (int)(r < 0 ? r + N : r);
}

void sched_block (size_t count, int nb, int b, size_t *lo, size_t *hi)
{
    size_t q = count / (size_t)nb, r = count % (size_t)nb, ub = (size_t)b;

    /* The last r blocks get one more element. */
    *lo = ub * q + (ub > (size_t)nb - r ? ub - ((size_t)nb - r) : 0);
    *hi = *lo + q + (ub >= (size_t)nb - r ? 1 : 0);
}

int sched_vrank (int n, int N)
{
    int rem = N - sched_pow2_floor (N);

    if (n < 2 * rem)
        return n % 2 ? n / 2 : -1;
    return n - rem;
}

int sched_vnode (int v, int N)
{
    int rem = N - sched_pow2_floor (N);

    return v < rem ? 2 * v + 1 : v + rem;
}

int sched_fold_partner (int n, int N)
{
    int rem = N - sched_pow2_floor (N);

    if (n >= 2 * rem)
        return -1;
    return n % 2 ? n - 1 : n + 1;
}

void sched_halving_range (int v, int p, int i, int *lo, int *hi)
{
    int size = p, top = sched_log2_ceil (p) - 1;

    *lo = 0;
    for (int j = 0; j < i; j++) {
        size /= 2;
        if (v >> (top - j) & 1)
            *lo += size;
    }
    *hi = *lo + size;
}

int sched_halving_owner (int v, int p)
{
    int lo, hi;

    sched_halving_range (v, p, sched_log2_ceil (p), &lo, &hi);
    return lo;
}

void sched_ring_rs (int n, int N, int k, int *send_block, int *recv_block)
{
    *send_block = sched_mod ((long)n - k, N);
    *recv_block = sched_mod ((long)n - k - 1, N);
}

void sched_ring_ag (int n, int N, int shift, int k, int *send_block,
                    int *recv_block)
{
    *send_block = sched_mod ((long)n + shift - k, N);
    *recv_block = sched_mod ((long)n + shift - k - 1, N);
}

int sched_binom_parent (int n, int N, int root)
{
    int rel = sched_mod ((long)n - root, N);

    if (rel == 0)
        return -1;
    return sched_mod ((long)n - (rel & -rel), N);
}

int sched_binom_children (int n, int N, int root, int *child, int max)
{
    int rel = sched_mod ((long)n - root, N), k = 0;

    for (long mask = 1; mask < N; mask <<= 1) {
        if (rel & mask)
            break;
        if (rel + mask < N && k < max)
            child[k++] = sched_mod (n + mask, N);
    }
    return k;
}

int sched_binom_size (int n, int N, int root)
{
    int rel = sched_mod ((long)n - root, N);
    long low = rel ? (rel & -rel) : N;

    return (int)(low < N - rel ? low : N - rel);
}

int sched_bruck (int n, int N, int k, int *count)
{
    int dist = 1 << k;

    (void)n;
    *count = dist < N - dist ? dist : N - dist;
    return dist;
}

void sched_dissem (int n, int N, int k, int *to, int *from)
{
    *to = sched_mod ((long)n + (1L << k), N);
    *from = sched_mod ((long)n - (1L << k), N);
}

/* Add x to the ascending set out[0..*k-1] (room for max) unless there. */
static void set_add (int *out, int *k, int max, int x)
{
    int i = *k;

    for (int j = 0; j < *k; j++)
        if (out[j] == x)
            return;
    if (*k == max)
        return;
    while (i > 0 && out[i - 1] > x) {
        out[i] = out[i - 1];
        i--;
    }
    out[i] = x;
    (*k)++;
}

int sched_partners (int n, int N, int *out, int max)
{
    int k = 0, v = sched_vrank (n, N), p = sched_pow2_floor (N);
    int f = sched_fold_partner (n, N);

    for (long d = 1; d < N; d <<= 1) {
        set_add (out, &k, max, sched_mod (n + d, N));
        set_add (out, &k, max, sched_mod (n - d, N));
    }
    for (int m = 1; v >= 0 && m < p; m <<= 1)
        set_add (out, &k, max, sched_vnode (v ^ m, N));
    if (f >= 0)
        set_add (out, &k, max, f);
    /* N == 1: n + 1 mod 1 is n itself; a node is never its own partner. */
    for (int j = 0; j < k; j++) {
        if (out[j] == n) {
            for (; j + 1 < k; j++)
                out[j] = out[j + 1];
            k--;
            break;
        }
    }
    return k;
}

int sched_partners_max (int N)
{
    return 3 * sched_log2_ceil (N) + 3;
}

int sched_segments_done (size_t total, size_t seg, size_t done0,
                         size_t done1, size_t *first)
{
    size_t nseg = seg ? (total + seg - 1) / seg : 1;
    size_t a = done0 >= total ? nseg : seg ? done0 / seg : 0;
    size_t b = done1 >= total ? nseg : seg ? done1 / seg : 0;

    *first = a;
    return (int)(b - a);
}
