/* check.c - DDP_CHECK's description of a call and the message that says
 * how the ranks' calls differ (libjob/core/check.c).  Pure code. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "ddp.h"
#include "tap.h"

static const char *name (struct check_sig s)
{
    static char buf[128];

    check_sig_name (buf, sizeof (buf), &s);
    return buf;
}

static void test_name (void)
{
    struct check_sig s;

    s = check_sig_make (DDP_COLL_BCAST, 2, DDP_FLOAT32, DDP_MAX, 1, 7);
    ok (strcmp (name (s), "ddp_bcast of 2 float32 from root 1") == 0,
        "a bcast: %s", name (s));
    s = check_sig_make (DDP_COLL_REDUCE, 5, DDP_INT64, DDP_AVG, 3, 1);
    ok (strcmp (name (s), "ddp_reduce of 5 int64 with AVG to root 3") == 0,
        "a reduce: %s", name (s));
    s = check_sig_make (DDP_COLL_ALLREDUCE, 1u << 20, DDP_BFLOAT16, DDP_SUM,
                        9, 1);
    ok (strcmp (name (s), "ddp_allreduce of 1048576 bfloat16 with SUM") == 0,
        "an all-reduce has no root: %s", name (s));
    s = check_sig_make (DDP_COLL_GATHER, 0, DDP_UINT8, DDP_PROD, 0, 1);
    ok (strcmp (name (s), "ddp_gather of 0 uint8 to root 0") == 0,
        "a gather of 0 has no op: %s", name (s));
    s = check_sig_make (DDP_COLL_ALLGATHER, 3, DDP_FLOAT16, DDP_SUM, 2, 1);
    ok (strcmp (name (s), "ddp_allgather of 3 float16") == 0,
        "an all-gather: %s", name (s));
    s = check_sig_make (CHECK_BARRIER, 4, DDP_FLOAT64, DDP_MIN, 2, 1);
    ok (strcmp (name (s), "ddp_barrier") == 0, "a barrier: %s", name (s));
    s = check_sig_make (CHECK_FINALIZE, 0, DDP_INT8, DDP_SUM, 0, 1);
    ok (strcmp (name (s), "ddp_finalize") == 0, "finalize: %s", name (s));
}

static void test_same (void)
{
    struct check_sig a, b;

    a = check_sig_make (DDP_COLL_BCAST, 2, DDP_FLOAT32, DDP_SUM, 0, 3);
    b = check_sig_make (DDP_COLL_BCAST, 2, DDP_FLOAT32, DDP_MAX, 0, 4);
    ok (check_sig_same (&a, &b), "a bcast's op and the ordinal are not "
        "compared");
    b = check_sig_make (DDP_COLL_BCAST, 2, DDP_FLOAT32, DDP_SUM, 1, 3);
    ok (!check_sig_same (&a, &b), "another root differs");
    b = check_sig_make (DDP_COLL_BCAST, 2, DDP_INT32, DDP_SUM, 0, 3);
    ok (!check_sig_same (&a, &b), "another dtype of the same size differs");
    b = check_sig_make (DDP_COLL_BCAST, 3, DDP_FLOAT32, DDP_SUM, 0, 3);
    ok (!check_sig_same (&a, &b), "another count differs");
    b = check_sig_make (DDP_COLL_GATHER, 2, DDP_FLOAT32, DDP_SUM, 0, 3);
    ok (!check_sig_same (&a, &b), "another kind differs");
    a = check_sig_make (DDP_COLL_ALLREDUCE, 2, DDP_FLOAT32, DDP_SUM, 0, 3);
    b = check_sig_make (DDP_COLL_ALLREDUCE, 2, DDP_FLOAT32, DDP_MAX, 0, 3);
    ok (!check_sig_same (&a, &b), "an all-reduce's op is compared");
    b = check_sig_make (DDP_COLL_ALLREDUCE, 2, DDP_FLOAT32, DDP_SUM, 5, 3);
    ok (check_sig_same (&a, &b), "an all-reduce's root is not");
    a = check_sig_make (CHECK_BARRIER, 2, DDP_FLOAT32, DDP_SUM, 0, 3);
    b = check_sig_make (CHECK_BARRIER, 0, DDP_INT8, DDP_MAX, 7, 9);
    ok (check_sig_same (&a, &b), "barriers are all the same");
    /* The core compares words by their maximum and minimum: a root of
     * -1 must not wrap into a word equal to another's. */
    a = check_sig_make (DDP_COLL_BCAST, 1, DDP_INT8, DDP_SUM, 0, 1);
    b = check_sig_make (DDP_COLL_BCAST, 1, DDP_INT8, DDP_SUM, 1, 1);
    ok (a.w[1] != b.w[1] && a.w[0] == b.w[0] && a.w[2] == b.w[2],
        "a root moves word 1 alone");
}

static void test_report (void)
{
    static struct check_sig all[4096];
    char buf[360];
    int calls;

    for (int r = 0; r < 2; r++)
        all[r] = check_sig_make (DDP_COLL_BCAST, 2, DDP_FLOAT32, DDP_SUM, r,
                                 2);
    calls = check_report (buf, sizeof (buf), all, 2);
    ok (calls == 2
            && strcmp (buf, "rank 0: ddp_bcast of 2 float32 from root 0 (its"
                       " collective #2); rank 1: ddp_bcast of 2 float32 from"
                       " root 1 (its collective #2)") == 0,
        "every rank its own root: %s", buf);
    for (int r = 0; r < 6; r++)
        all[r] = check_sig_make (DDP_COLL_ALLREDUCE, 8, DDP_FLOAT32,
                                 r == 4 ? DDP_MAX : DDP_SUM, 0,
                                 (uint64_t)(10 + (r == 5)));
    calls = check_report (buf, sizeof (buf), all, 6);
    ok (calls == 2
            && strcmp (buf, "ranks 0-3,5: ddp_allreduce of 8 float32 with SUM"
                       " (their collectives #10-11); rank 4: ddp_allreduce"
                       " of 8 float32 with MAX (its collective #10)") == 0,
        "one rank with another op: %s", buf);
    for (int r = 0; r < 4096; r++)
        all[r] = check_sig_make (r % 7 == 3 ? DDP_COLL_GATHER : DDP_COLL_BCAST,
                                 (size_t)(r % 7 == 3 ? 1 : r % 6 + 1),
                                 DDP_INT8, DDP_SUM, 0, 5);
    calls = check_report (buf, sizeof (buf), all, 4096);
    ok (calls == 7 && strlen (buf) < sizeof (buf) - 1
            && strncmp (buf, "ranks 0,6,12,", 13) == 0
            && strstr (buf, "ddp_bcast of 1 int8 from root 0 (their "
                       "collective #5); ranks 1,7,13,")
            && strstr (buf, "; 2924 more ranks in 5 other calls"),
        "4096 ranks in 7 calls: those that fit listed, the rest counted: %s",
        buf);
    calls = check_report (buf, 32, all, 4096);
    ok (calls == 7 && strlen (buf) == 31 && strncmp (buf, "ranks 0,6", 9) == 0,
        "the first call is listed even where it does not fit: %s", buf);
    for (int r = 0; r < 3; r++)
        all[r] = check_sig_make (r == 1 ? CHECK_FINALIZE : CHECK_BARRIER, 0,
                                 DDP_INT8, DDP_SUM, 0, 4 - (r == 1));
    calls = check_report (buf, 24, all, 3);
    ok (calls == 2 && strlen (buf) == 23, "a short buffer is filled and "
        "terminated: %s", buf);
}

int main (void)
{
    plan (NO_PLAN);
    test_name ();
    test_same ();
    test_report ();
    return done_testing ();
}
