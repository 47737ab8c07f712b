/* choice.c - how ddp_init agrees on one backend (libjob/core/choice.c):
 * the local vote, its encoding, and the decision every rank takes from
 * the same votes.  Needs no GPU and no launcher. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "choice.h"
#include "ddp.h"
#include "tap.h"

#define MAXR 4096

/* An exchange's result, built from votes as bootstrap_exchange gives it. */
static char raw[MAXR * CHOICE_WIRE_MAX];
static size_t off[MAXR], len[MAXR];

static void pack (const struct choice_vote *v, int n)
{
    size_t o = 0;

    for (int r = 0; r < n; r++) {
        off[r] = o;
        len[r] = choice_encode (&v[r], raw + o);
        o += len[r];
    }
}

static int probe_ok (char *why, size_t n)
{
    (void)why, (void)n;
    return 0;
}

static int probe_nodriver (char *why, size_t n)
{
    snprintf (why, n, "no usable CUDA device: cudaGetDeviceCount: CUDA driver"
              " version is insufficient for CUDA runtime version");
    return DDP_ECUDA;
}

static struct choice_vote vote (const char *backend, const char *host,
                                int (*probe) (char *, size_t))
{
    struct choice_vote v;

    choice_local (&v, backend, host, probe);
    return v;
}

static void test_local (void)
{
    struct choice_vote v;

    v = vote (NULL, "n1", probe_ok);
    ok (v.status == 0 && v.want == CHOICE_AUTO && v.gpu,
        "unset: auto, the probe says a GPU is usable");
    v = vote ("", "n1", probe_nodriver);
    ok (v.status == 0 && v.want == CHOICE_AUTO && !v.gpu
            && strstr (v.reason, "driver version is insufficient"),
        "empty: auto; without a driver no GPU, with the reason: %s",
        v.reason);
    v = vote ("auto", "n1", NULL);
    ok (v.status == 0 && !v.gpu && strstr (v.reason, "without NCCL"),
        "auto in a build without NCCL: no GPU: %s", v.reason);
    v = vote ("host", "n1", probe_ok);
    ok (v.status == 0 && v.want == CHOICE_HOST, "host");
    v = vote ("nccl", "n1", probe_nodriver);
    ok (v.status == 0 && v.want == CHOICE_NCCL,
        "nccl: no probe (the backend says why it cannot run)");
    v = vote ("nccl", "n1", NULL);
    ok (v.status == DDP_ENOTSUP && strstr (v.reason, "no NCCL backend"),
        "nccl in a build without NCCL: ENOTSUP: %s", v.reason);
    v = vote ("NCCL", "n1", probe_ok);
    ok (v.status == DDP_EINVAL
            && strcmp (v.reason, "DDP_BACKEND='NCCL' is not one of auto,"
                       " host, nccl") == 0,
        "any other value: EINVAL: %s", v.reason);
}

static void test_wire (void)
{
    struct choice_vote v = vote ("auto", "a-rather-long-host.example.org",
                                 probe_nodriver), w;
    char buf[CHOICE_WIRE_MAX + 8], err[128];
    size_t n = choice_encode (&v, buf);

    ok (choice_decode (buf, n, &w, err, sizeof (err)) == 0
            && w.want == v.want && w.gpu == v.gpu && w.status == v.status
            && strcmp (w.host, v.host) == 0
            && strcmp (w.reason, v.reason) == 0,
        "a vote survives encoding (%zu bytes)", n);
    memset (v.host, 'h', sizeof (v.host));
    memset (v.reason, 'r', sizeof (v.reason));
    n = choice_encode (&v, buf);
    ok (n <= CHOICE_WIRE_MAX && choice_decode (buf, n, &w, err,
                                               sizeof (err)) == 0
            && strlen (w.host) == sizeof (w.host) - 1,
        "unterminated strings are cut to fit (%zu bytes)", n);
    ok (choice_decode (buf, 80, &w, err, sizeof (err)) < 0
            && strstr (err, "malformed"),
        "a cut vote is refused: %s", err);
    ok (choice_decode (buf, 6, &w, err, sizeof (err)) < 0
            && strstr (err, "has 6 bytes"),
        "a short blob is refused: %s", err);
    buf[0] ^= 1;
    ok (choice_decode (buf, n, &w, err, sizeof (err)) < 0,
        "a bad magic is refused");
}

/* choice_decide for rank me over v[0..n-1]. */
static struct choice decide (const struct choice_vote *v, int n, int me)
{
    struct choice c;

    pack (v, n);
    choice_decide (raw, off, len, n, me, &c);
    return c;
}

/* Every rank of v[0..n-1] decides alike: want_nccl, no error. */
static bool all_agree (const struct choice_vote *v, int n, bool want_nccl)
{
    for (int r = 0; r < n; r++) {
        struct choice c = decide (v, n, r);
        if (c.code != 0 || c.nccl != want_nccl)
            return false;
    }
    return true;
}

static void test_agree (void)
{
    struct choice_vote v[8];
    struct choice c;

    for (int r = 0; r < 4; r++)
        v[r] = vote ("host", "n1", probe_ok);
    ok (all_agree (v, 4, false), "host everywhere: host");
    for (int r = 0; r < 4; r++)
        v[r] = vote ("nccl", "n1", probe_nodriver);
    ok (all_agree (v, 4, true), "nccl everywhere: nccl");
    for (int r = 0; r < 4; r++)
        v[r] = vote (r % 2 ? "auto" : NULL, "n1", probe_ok);
    ok (all_agree (v, 4, true), "auto (or unset) and a GPU everywhere: nccl");
    for (int r = 0; r < 4; r++)
        v[r] = vote (NULL, "n1", probe_nodriver);
    ok (all_agree (v, 4, false), "auto, no driver anywhere: host");
    c = decide (v, 4, 2);
    ok (!c.warn && strstr (c.msg, "auto: host backend: no usable CUDA"),
        "with a note for DDP_DEBUG, no warning: %s", c.msg);

    /* The step: node 1 without a usable GPU, node 2 with one. */
    v[0] = vote (NULL, "n1", probe_nodriver);
    v[1] = vote (NULL, "n1", probe_nodriver);
    v[2] = vote (NULL, "n2", probe_ok);
    ok (all_agree (v, 3, false), "auto, GPUs on some nodes only: host on all");
    c = decide (v, 3, 0);
    ok (c.warn && strstr (c.msg, "ranks 0-1 of 3 cannot use NCCL (rank 0,"
                          " host n1: no usable CUDA device"),
        "rank 0 warns, naming the ranks without a GPU: %s", c.msg);
}

/* Three ranks, two on n1 and one on n2, asking for a, b and c. */
static void three (struct choice_vote *v, const char *a, const char *b,
                   const char *c)
{
    v[0] = vote (a, "n1", probe_ok);
    v[1] = vote (b, "n1", probe_ok);
    v[2] = vote (c, "n2", probe_ok);
}

static void test_disagree (void)
{
    struct choice_vote v[8];
    struct choice c;
    int bad = 0;

    /* What the plugin gave node 1's and node 2's tasks in the issue. */
    three (v, "host", "host", "nccl");
    for (int r = 0; r < 3; r++) {
        c = decide (v, 3, r);
        bad += c.code != DDP_EMISMATCH;
    }
    is_int (bad, 0, "host on 0-1, nccl on 2: DDP_EMISMATCH on every rank");
    is_str (c.msg, "DDP_BACKEND differs between ranks: host on ranks 0-1,"
            " nccl on rank 2 (unset counts as auto); give every rank the same"
            " value (srun --ddp sets one for the whole step)",
            "one message naming the ranks and values");
    three (v, "host", NULL, "nccl");
    c = decide (v, 3, 1);
    ok (c.code == DDP_EMISMATCH
            && strstr (c.msg, "auto on rank 1, host on rank 0, nccl on rank 2"),
        "three values: %s", c.msg);

    /* A rank that cannot start: its own code there, EREMOTE elsewhere. */
    three (v, "host", "hots", "host");
    c = decide (v, 3, 1);
    ok (c.code == DDP_EINVAL && strstr (c.msg, "DDP_BACKEND='hots'"),
        "the rank at fault: its own EINVAL: %s", c.msg);
    c = decide (v, 3, 2);
    is_int (c.code, DDP_EREMOTE, "the others: DDP_EREMOTE");
    is_str (c.msg, "rank 1 cannot start; rank 1 (host n1): DDP_BACKEND='hots'"
            " is not one of auto, host, nccl", "naming the rank and host");
    v[2] = vote ("nccl", "n2", NULL);
    c = decide (v, 3, 0);
    ok (c.code == DDP_EREMOTE && strstr (c.msg, "ranks 1-2 cannot start"),
        "two ranks at fault are both listed: %s", c.msg);
    c = decide (v, 3, 2);
    is_int (c.code, DDP_ENOTSUP, "nccl without NCCL: its own ENOTSUP");

    /* A vote from another build. */
    three (v, "host", "host", "host");
    pack (v, 2);
    len[1] = 80;
    choice_decide (raw, off, len, 2, 0, &c);
    ok (c.code == DDP_EMISMATCH && strstr (c.msg, "rank 1: its backend vote"),
        "a vote that does not decode: DDP_EMISMATCH naming the rank: %s",
        c.msg);
}

/* Thousands of ranks: the decision reads each vote a few times, no pairs. */
static void test_scale (void)
{
    static struct choice_vote v[MAXR];
    struct choice c;
    char host[16];

    for (int r = 0; r < MAXR; r++) {
        snprintf (host, sizeof (host), "n%04d", r / 8);
        v[r] = vote (NULL, host, r / 8 == 300 ? probe_nodriver : probe_ok);
    }
    c = decide (v, MAXR, 0);
    ok (c.code == 0 && !c.nccl && c.warn
            && strstr (c.msg, "ranks 2400-2407 of 4096 cannot use NCCL (rank"
                       " 2400, host n0300"),
        "4096 ranks, one node without a driver: host, named: %s", c.msg);
    v[4095] = vote ("nccl", "n0511", probe_ok);
    c = decide (v, MAXR, 17);
    ok (c.code == DDP_EMISMATCH
            && strstr (c.msg, "auto on ranks 0-4094, nccl on rank 4095"),
        "4096 ranks, the last one says nccl: %s", c.msg);
}

/* DDP_CHECK in the vote: parsed, carried, agreed on. */
static void test_check (void)
{
    struct choice_vote v[4], w;
    struct choice c;
    char buf[CHOICE_WIRE_MAX], err[128];
    size_t n;

    v[0] = vote ("host", "n1", probe_ok);
    choice_local_check (&v[0], NULL);
    ok (v[0].status == 0 && !v[0].check, "DDP_CHECK unset: off");
    choice_local_check (&v[0], "0");
    ok (v[0].status == 0 && !v[0].check, "DDP_CHECK=0: off");
    choice_local_check (&v[0], "1");
    ok (v[0].status == 0 && v[0].check, "DDP_CHECK=1: on");
    n = choice_encode (&v[0], buf);
    ok (choice_decode (buf, n, &w, err, sizeof (err)) == 0 && w.check,
        "DDP_CHECK=1 survives the wire");
    v[1] = vote ("host", "n1", probe_ok);
    choice_local_check (&v[1], "yes");
    ok (v[1].status == DDP_EINVAL
            && strstr (v[1].reason, "DDP_CHECK='yes' is not 0 or 1"),
        "DDP_CHECK=yes fails the rank: %s", v[1].reason);
    v[2] = vote ("bogus", "n1", probe_ok);
    choice_local_check (&v[2], "yes");
    ok (v[2].status == DDP_EINVAL && strstr (v[2].reason, "DDP_BACKEND"),
        "the first mistake is the one named: %s", v[2].reason);
    for (int r = 0; r < 4; r++) {
        v[r] = vote ("host", "n1", probe_ok);
        choice_local_check (&v[r], "1");
    }
    c = decide (v, 4, 2);
    ok (c.code == 0 && c.check && !c.nccl, "DDP_CHECK=1 everywhere: on");
    choice_local_check (&v[3], NULL);
    for (int r = 0; r < 4; r++) {
        c = decide (v, 4, r);
        ok (c.code == DDP_EMISMATCH
                && strstr (c.msg, "DDP_CHECK differs between ranks: 0 or"
                           " unset on rank 3 of 4, 1 on the others"),
            "rank %d: DDP_CHECK=1 on 3 of 4: %s", r, c.msg);
    }
    choice_local_check (&v[0], NULL);
    choice_local_check (&v[1], NULL);
    c = decide (v, 4, 0);
    ok (c.code == DDP_EMISMATCH && strstr (c.msg, "1 on rank 2 of 4"),
        "DDP_CHECK=1 on 1 of 4: %s", c.msg);
    choice_local_check (&v[2], NULL);
    c = decide (v, 4, 0);
    ok (c.code == 0 && !c.check, "DDP_CHECK unset everywhere: off");
}

int main (void)
{
    plan (NO_PLAN);
    test_check ();
    test_local ();
    test_wire ();
    test_agree ();
    test_disagree ();
    test_scale ();
    return done_testing ();
}
