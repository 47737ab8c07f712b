/* schedule.c - the cross-node schedules (libjob/host/schedule.c) for N = 1..64:
 * every algorithm is simulated on sets of contributions (one bit per node)
 * and must end with every node holding what the collective promises, each
 * contribution combined exactly once, and every peer it talks to among its
 * partners. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "schedule.h"

#define NMAX 64
#define ALL(N) ((N) == 64 ? ~0ULL : (1ULL << (N)) - 1)

static int partners[NMAX][3 * 7 + 3];
static int npartners[NMAX];

static int is_partner (int a, int b)
{
    for (int i = 0; i < npartners[a]; i++)
        if (partners[a][i] == b)
            return 1;
    return 0;
}

/* Partners: symmetric, no self, within the bound, O(log N). */
static void test_partners (void)
{
    int bad = 0, bound = 0;

    for (int N = 1; N <= NMAX; N++) {
        for (int n = 0; n < N; n++) {
            npartners[n] = sched_partners (n, N, partners[n],
                                           sched_partners_max (N));
            if (npartners[n] > sched_partners_max (N))
                bound++;
            for (int i = 0; i < npartners[n]; i++) {
                int m = partners[n][i];
                if (m == n || m < 0 || m >= N
                    || (i && partners[n][i - 1] >= m))
                    bad++;
            }
        }
        for (int n = 0; n < N; n++)
            for (int i = 0; i < npartners[n]; i++)
                if (!is_partner (partners[n][i], n))
                    bad++;
    }
    ok (!bad, "partners: in range, ascending, symmetric, no self (%d bad)",
        bad);
    ok (!bound, "partners: at most 3 ceil(log2 N) + 3 (%d over)", bound);
    npartners[0] = sched_partners (0, 64, partners[0], 64);
    ok (npartners[0] <= 3 * 6 + 3, "64 nodes: node 0 has %d partners",
        npartners[0]);
}

/* Recompute the partners of N nodes into the globals. */
static void load_partners (int N)
{
    for (int n = 0; n < N; n++)
        npartners[n] = sched_partners (n, N, partners[n], 3 * 7 + 3);
}

static void test_blocks (void)
{
    int bad = 0;

    for (size_t count = 0; count < 300; count += 7) {
        for (int nb = 1; nb <= 70; nb++) {
            size_t prev = 0, lo, hi, first = 0;
            for (int b = 0; b < nb; b++) {
                sched_block (count, nb, b, &lo, &hi);
                if (lo != prev || hi < lo)
                    bad++;
                if (b == 0)
                    first = hi - lo;
                else if (hi - lo < first || hi - lo > first + 1)
                    bad++;
                prev = hi;
            }
            if (prev != count)
                bad++;
        }
    }
    ok (!bad, "blocks tile the count, sizes differ by one at most (%d bad)",
        bad);
}

/* Ring reduce-scatter then allgather: node n ends with block n+1 reduced
 * over every node; every block then reaches every node. */
static void test_ring (void)
{
    int bad = 0, peer = 0;

    for (int N = 1; N <= NMAX; N++) {
        uint64_t have[NMAX][NMAX], next[NMAX][NMAX];
        uint64_t got[NMAX];
        load_partners (N);
        for (int n = 0; n < N; n++)
            for (int b = 0; b < N; b++)
                have[n][b] = 1ULL << n;
        for (int k = 0; k < N - 1; k++) {
            memcpy (next, have, sizeof (have));
            for (int n = 0; n < N; n++) {
                int sb, rb, psb, prb, prev = sched_mod (n - 1, N);
                sched_ring_rs (n, N, k, &sb, &rb);
                sched_ring_rs (prev, N, k, &psb, &prb);
                if (psb != rb || (have[prev][rb] & have[n][rb]))
                    bad++;  /* what prev sends is what n expects, disjoint */
                next[n][rb] = have[n][rb] | have[prev][rb];
                if (N > 1 && !is_partner (n, sched_mod (n + 1, N)))
                    peer++;
            }
            memcpy (have, next, sizeof (have));
        }
        for (int n = 0; n < N; n++) {
            if (have[n][sched_mod (n + 1, N)] != ALL (N))
                bad++;
            got[n] = 1ULL << sched_mod (n + 1, N);
        }
        for (int k = 0; k < N - 1; k++) {
            uint64_t nx[NMAX];
            for (int n = 0; n < N; n++) {
                int sb, rb, psb, prb, prev = sched_mod (n - 1, N);
                sched_ring_ag (n, N, 1, k, &sb, &rb);
                sched_ring_ag (prev, N, 1, k, &psb, &prb);
                if (psb != rb || !(got[n] >> sb & 1) || !(got[prev] >> rb & 1)
                    || (got[n] >> rb & 1))
                    bad++;
                nx[n] = got[n] | 1ULL << rb;
            }
            memcpy (got, nx, sizeof (got));
        }
        for (int n = 0; n < N; n++)
            if (got[n] != ALL (N))
                bad++;
    }
    ok (!bad, "ring: reduce-scatter reduces each block once over every node, "
        "allgather delivers every block (%d bad)", bad);
    ok (!peer, "ring: neighbours are partners (%d not)", peer);
}

/* Recursive halving with the fold, then the reverse allgather and the
 * unfold: every node ends with every block reduced over every node.  The
 * pairs of a step hold the same range and keep opposite halves. */
static void test_halving (void)
{
    int bad = 0, peer = 0;

    for (int N = 1; N <= NMAX; N++) {
        int p = sched_pow2_floor (N), steps = sched_log2_ceil (p);
        uint64_t blk[NMAX][NMAX];   /* per virtual rank, per block */
        load_partners (N);
        if ((p & (p - 1)) || p > N || 2 * p <= N)
            bad++;
        for (int v = 0; v < p; v++) {
            int n = sched_vnode (v, N), f = sched_fold_partner (n, N);
            if (sched_vrank (n, N) != v)
                bad++;
            for (int b = 0; b < p; b++)
                blk[v][b] = 1ULL << n | (f >= 0 ? 1ULL << f : 0);
            if (f >= 0 && (sched_vrank (f, N) != -1 || !is_partner (n, f)))
                bad++;
        }
        for (int i = 0; i < steps; i++) {
            uint64_t nx[NMAX][NMAX];
            memcpy (nx, blk, sizeof (blk));
            for (int v = 0; v < p; v++) {
                int bit = steps - 1 - i, w = v ^ (1 << bit), lo, hi, wlo,
                    whi, mid;
                sched_halving_range (v, p, i, &lo, &hi);
                sched_halving_range (w, p, i, &wlo, &whi);
                if (lo != wlo || hi != whi)
                    bad++;
                if (!is_partner (sched_vnode (v, N), sched_vnode (w, N)))
                    peer++;
                mid = (lo + hi) / 2;
                /* v keeps [lo, mid) if bit `bit` is 0: it receives w's
                 * part. */
                for (int b = (v >> bit & 1) ? mid : lo;
                     b < ((v >> bit & 1) ? hi : mid); b++) {
                    if (blk[v][b] & blk[w][b])
                        bad++;
                    nx[v][b] = blk[v][b] | blk[w][b];
                }
            }
            memcpy (blk, nx, sizeof (blk));
        }
        for (int v = 0; v < p; v++) {
            int lo, hi;
            sched_halving_range (v, p, steps, &lo, &hi);
            if (hi != lo + 1 || lo != v || lo != sched_halving_owner (v, p)
                || blk[v][lo] != ALL (N))
                bad++;
        }
    }
    ok (!bad, "halving with fold: each virtual rank v owns block v "
        "reduced over all nodes once (%d bad)", bad);
    ok (!peer, "halving: pairs are partners (%d not)", peer);
}

/* Recursive doubling: both sides of a pair combine lower op higher, so
 * every node computes the same expression; check that the expression is
 * the same everywhere by a hash of its shape. */
static void test_doubling (void)
{
    int bad = 0;

    for (int N = 1; N <= NMAX; N++) {
        int p = sched_pow2_floor (N);
        uint64_t set[NMAX], h[NMAX];
        for (int v = 0; v < p; v++) {
            int n = sched_vnode (v, N), f = sched_fold_partner (n, N);
            set[v] = 1ULL << n | (f >= 0 ? 1ULL << f : 0);
            /* (f op n) for a fold, n alone otherwise */
            h[v] = f >= 0 ? (uint64_t)f * 1000003 + (uint64_t)n * 7 + 1
                          : (uint64_t)n + 1;
        }
        for (int m = 1; m < p; m <<= 1) {
            uint64_t ns[NMAX], nh[NMAX];
            for (int v = 0; v < p; v++) {
                int w = v ^ m, lo = v < w ? v : w, hi = v < w ? w : v;
                if (set[v] & set[w])
                    bad++;
                ns[v] = set[v] | set[w];
                nh[v] = h[lo] * 31 + h[hi] * 1000033 + 17;
            }
            memcpy (set, ns, sizeof (set));
            memcpy (h, nh, sizeof (h));
        }
        for (int v = 0; v < p; v++)
            if (set[v] != ALL (N) || h[v] != h[0])
                bad++;
    }
    ok (!bad, "recursive doubling: every node, the same expression over all "
        "nodes (%d bad)", bad);
}

/* Binomial tree from every root: one parent each, children's parents agree,
 * subtrees tile the relative ranks, depth ceil(log2 N). */
static void test_binomial (void)
{
    int bad = 0, peer = 0;

    for (int N = 1; N <= NMAX; N++) {
        load_partners (N);
        for (int root = 0; root < N; root++) {
            int count = 0, depth_bad = 0;
            for (int n = 0; n < N; n++) {
                int child[8], k = sched_binom_children (n, N, root, child, 8);
                int rel = sched_mod (n - root, N), size = 1, d = 0, x = n;
                for (int j = 0; j < k; j++) {
                    int crel = sched_mod (child[j] - root, N);
                    if (sched_binom_parent (child[j], N, root) != n
                        || crel != rel + size
                        || (j && crel - rel != 2 * (sched_mod (child[j - 1]
                                                               - root, N) - rel)))
                        bad++;
                    if (!is_partner (n, child[j]))
                        peer++;
                    size += sched_binom_size (child[j], N, root);
                }
                if (size != sched_binom_size (n, N, root))
                    bad++;
                while ((x = sched_binom_parent (x, N, root)) >= 0 && d <= N)
                    d++;
                if (d > sched_log2_ceil (N))
                    depth_bad++;
                count += (n == root) == (sched_binom_parent (n, N, root) < 0);
            }
            if (count != N || depth_bad)
                bad++;
        }
    }
    ok (!bad, "binomial trees: consistent parents, children and subtree "
        "sizes, depth <= ceil(log2 N), every root (%d bad)", bad);
    ok (!peer, "binomial trees: children are partners (%d not)", peer);
}

/* Bruck: every node ends with every node's block, never one twice. */
static void test_bruck (void)
{
    int bad = 0, peer = 0;

    for (int N = 1; N <= NMAX; N++) {
        uint64_t got[NMAX];
        load_partners (N);
        for (int n = 0; n < N; n++)
            got[n] = 1ULL << n;
        for (int k = 0; (1 << k) < N; k++) {
            uint64_t nx[NMAX];
            for (int n = 0; n < N; n++) {
                int cnt, dist = sched_bruck (n, N, k, &cnt);
                int from = sched_mod (n + dist, N);
                nx[n] = got[n];
                for (int j = 0; j < cnt; j++) {
                    int b = sched_mod (from + j, N);
                    if (!(got[from] >> b & 1) || (got[n] >> b & 1))
                        bad++;
                    nx[n] |= 1ULL << b;
                }
                if (!is_partner (n, from))
                    peer++;
            }
            memcpy (got, nx, sizeof (got));
        }
        for (int n = 0; n < N; n++)
            if (got[n] != ALL (N))
                bad++;
    }
    ok (!bad, "Bruck: every block reaches every node exactly once (%d bad)",
        bad);
    ok (!peer, "Bruck: peers are partners (%d not)", peer);
}

/* Dissemination: after ceil(log2 N) rounds every node has heard, through
 * some chain, of every node. */
static void test_dissem (void)
{
    int bad = 0, peer = 0;

    for (int N = 1; N <= NMAX; N++) {
        uint64_t know[NMAX];
        load_partners (N);
        for (int n = 0; n < N; n++)
            know[n] = 1ULL << n;
        for (int k = 0; k < sched_log2_ceil (N); k++) {
            uint64_t nx[NMAX];
            for (int n = 0; n < N; n++) {
                int to, from, t2, f2;
                sched_dissem (n, N, k, &to, &from);
                sched_dissem (from, N, k, &t2, &f2);
                if (t2 != n)
                    bad++;
                if (!is_partner (n, to) || !is_partner (n, from))
                    peer++;
                nx[n] = know[n] | know[from];
            }
            memcpy (know, nx, sizeof (know));
        }
        for (int n = 0; n < N; n++)
            if (know[n] != ALL (N))
                bad++;
    }
    ok (!bad, "dissemination: everyone hears of everyone (%d bad)", bad);
    ok (!peer, "dissemination: peers are partners (%d not)", peer);
}

static void test_segments (void)
{
    size_t first;
    int bad = 0;

    is_int (sched_segments_done (100, 30, 0, 29, &first), 0, "no segment yet");
    is_int (sched_segments_done (100, 30, 29, 61, &first), 2,
            "two segments done at 61");
    is_int (first, 0, "from segment 0");
    is_int (sched_segments_done (100, 30, 61, 100, &first), 2,
            "the last two, the short one included");
    is_int (first, 2, "from segment 2");
    is_int (sched_segments_done (0, 30, 0, 0, &first), 0, "an empty message");
    for (size_t total = 1; total < 200; total += 13)
        for (size_t seg = 1; seg < 70; seg += 11) {
            size_t done = 0, n = 0, f;
            while (done < total) {
                size_t next = done + 7 < total ? done + 7 : total;
                int k = sched_segments_done (total, seg, done, next, &f);
                if (f != n)
                    bad++;
                n += (size_t)k;
                done = next;
            }
            if (n != (total + seg - 1) / seg)
                bad++;
        }
    ok (!bad, "segments: each reported once, in order (%d bad)", bad);
}

int main (void)
{
    plan (NO_PLAN);
    is_int (sched_pow2_floor (1), 1, "pow2_floor 1");
    is_int (sched_pow2_floor (63), 32, "pow2_floor 63");
    is_int (sched_pow2_floor (64), 64, "pow2_floor 64");
    is_int (sched_log2_ceil (1), 0, "log2_ceil 1");
    is_int (sched_log2_ceil (33), 6, "log2_ceil 33");
    is_int (sched_mod (-1, 5), 4, "mod of a negative");
    test_partners ();
    test_blocks ();
    test_ring ();
    test_halving ();
    test_doubling ();
    test_binomial ();
    test_bruck ();
    test_dissem ();
    test_segments ();
    done_testing ();
}
