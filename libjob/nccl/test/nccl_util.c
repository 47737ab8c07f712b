/* nccl_util.c - the pure parts of the NCCL backend (libjob/nccl/nccl_util.c):
 * dtype/op mapping, when an average runs in place, the ranges of known
 * device buffers, bootstrap roots, GPU choice, the fence blob and the
 * duplicate-GPU check.  Needs no GPU. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_util.h"
#include "tap.h"

static void test_dtype (void)
{
    static const struct {
        ddp_dtype_t d;
        ncclDataType_t n;
    } want[] = {
        {DDP_INT8, ncclInt8},       {DDP_UINT8, ncclUint8},
        {DDP_INT32, ncclInt32},     {DDP_UINT32, ncclUint32},
        {DDP_INT64, ncclInt64},     {DDP_UINT64, ncclUint64},
        {DDP_FLOAT16, ncclFloat16}, {DDP_BFLOAT16, ncclBfloat16},
        {DDP_FLOAT32, ncclFloat32}, {DDP_FLOAT64, ncclFloat64},
    };
    ncclDataType_t t;

    is_int ((int)(sizeof (want) / sizeof (want[0])), DDP_NUM_DTYPES,
            "every ddp dtype is in the table");
    for (size_t i = 0; i < sizeof (want) / sizeof (want[0]); i++) {
        t = (ncclDataType_t)-1;
        int rc = nccl_map_dtype (want[i].d, &t);
        ok (rc == 0 && t == want[i].n,
            "dtype %d maps to ncclDataType_t %d (got %d)", (int)want[i].d,
            (int)want[i].n, (int)t);
    }
    ok (nccl_map_dtype (DDP_NUM_DTYPES, &t) < 0, "DDP_NUM_DTYPES is refused");
    ok (nccl_map_dtype ((ddp_dtype_t)-1, &t) < 0, "dtype -1 is refused");
    ok (nccl_map_dtype (DDP_INT8, NULL) < 0, "NULL out is refused");
}

static void test_op (void)
{
    ncclRedOp_t o;

    ok (nccl_map_op (DDP_SUM, &o) == 0 && o == ncclSum, "SUM -> ncclSum");
    ok (nccl_map_op (DDP_PROD, &o) == 0 && o == ncclProd, "PROD -> ncclProd");
    ok (nccl_map_op (DDP_MIN, &o) == 0 && o == ncclMin, "MIN -> ncclMin");
    ok (nccl_map_op (DDP_MAX, &o) == 0 && o == ncclMax, "MAX -> ncclMax");
    ok (nccl_map_op (DDP_AVG, &o) == 0 && o == ncclAvg,
        "AVG -> ncclAvg (NCCL %d >= 2.10)", NCCL_VERSION_CODE);
    ok (nccl_map_op (DDP_NUM_OPS, &o) < 0, "DDP_NUM_OPS is refused");
    ok (nccl_map_op ((ddp_op_t)-1, &o) < 0, "op -1 is refused");
    ok (nccl_map_op (DDP_SUM, NULL) < 0, "NULL out is refused");
}

static void test_avg_in_place (void)
{
    static char a[64], b[64];

    ok (nccl_avg_in_place (ncclAvg, a, b, sizeof (a)),
        "AVG out of place (disjoint buffers) runs in place");
    ok (nccl_avg_in_place (ncclAvg, a, a + 32, 32),
        "AVG on adjacent halves of one allocation runs in place");
    ok (nccl_avg_in_place (ncclAvg, a + 32, a, 32),
        "... in either order");
    ok (!nccl_avg_in_place (ncclAvg, a, a, sizeof (a)),
        "AVG already in place: as is");
    ok (!nccl_avg_in_place (ncclAvg, a, a + 16, 32),
        "AVG on overlapping buffers (not equal): as is, no copy");
    ok (!nccl_avg_in_place (ncclAvg, a + 16, a, 32),
        "... in either order");
    ok (!nccl_avg_in_place (ncclAvg, a, NULL, sizeof (a)),
        "a reduce's non-root (no receive buffer): as is");
    ok (!nccl_avg_in_place (ncclAvg, a, b, 0), "count 0: as is");
    ok (!nccl_avg_in_place (ncclSum, a, b, sizeof (a)), "SUM: as is");
    ok (!nccl_avg_in_place (ncclMax, a, b, sizeof (a)), "MAX: as is");
}

static void test_known_ranges (void)
{
    struct nccl_known k = {0};
    int found = 0;

    ok (!nccl_known_find (&k, 1000, 8), "known ranges: none at first");
    nccl_known_add (&k, 1000, 100);
    ok (nccl_known_find (&k, 1000, 100) && nccl_known_find (&k, 1099, 1)
        && nccl_known_find (&k, 1040, 0), "inside the kept range: found");
    ok (!nccl_known_find (&k, 1000, 101) && !nccl_known_find (&k, 999, 2)
        && !nccl_known_find (&k, 1100, 1),
        "past either end of it, by one byte: not found");
    nccl_known_add (&k, 1100, 100);
    nccl_known_add (&k, 950, 60);
    ok (k.n == 1 && nccl_known_find (&k, 950, 250),
        "a touching range and an overlapping one merge into one");
    nccl_known_add (&k, 5000, 0);
    ok (k.n == 1 && !nccl_known_find (&k, 5000, 0), "nothing kept for 0 bytes");
    nccl_known_add (&k, UINTPTR_MAX - 10, 100);
    ok (nccl_known_find (&k, UINTPTR_MAX - 10, 10)
        && !nccl_known_find (&k, UINTPTR_MAX - 10, 11),
        "a range past the end of the address space is cut there");

    memset (&k, 0, sizeof (k));
    for (uintptr_t i = 0; i < NCCL_KNOWN_MAX; i++)
        nccl_known_add (&k, 0x10000 * (i + 1), 0x100);
    ok (k.n == NCCL_KNOWN_MAX, "%d disjoint ranges: %d entries",
        NCCL_KNOWN_MAX, k.n);
    ok (nccl_known_find (&k, 0x10000 * NCCL_KNOWN_MAX, 0x100)
        && k.r[NCCL_KNOWN_MAX / 2 - 1].lo == 0x10000 * NCCL_KNOWN_MAX,
        "a hit in the back half moves it to the front half");
    nccl_known_add (&k, 0x900000, 0x100);
    for (uintptr_t i = 0; i < NCCL_KNOWN_MAX; i++)
        found += nccl_known_find (&k, 0x10000 * (i + 1), 0x100);
    ok (nccl_known_find (&k, 0x900000, 0x100) && found == NCCL_KNOWN_MAX - 1,
        "full: a new range replaces one (%d of %d old ones left)", found,
        NCCL_KNOWN_MAX);

    /* A loop over 4 buffers while 100 others come and go once each: the 4
     * are always there, whichever half they came into. */
    found = 0;
    for (uintptr_t i = 0; i < 4; i++)
        nccl_known_add (&k, 0x1000000 + 0x10000 * i, 0x100);
    for (uintptr_t j = 0; j < 100; j++) {
        nccl_known_add (&k, 0x2000000 + 0x10000 * j, 0x100);
        for (uintptr_t i = 0; i < 4; i++)
            found += nccl_known_find (&k, 0x1000000 + 0x10000 * i, 0x100);
    }
    ok (found == 400, "buffers in use stay among others used once (%d of"
        " 400 lookups found)", found);
}

static void test_state_names (void)
{
    char b[64];

    is_str (nccl_state_name (NCCL_STATE (6, NCCL_CALL_BARRIER, NCCL_ST_IN), b,
                             sizeof (b)),
            "ddp_barrier #6", "state name: barrier");
    is_str (nccl_state_name (NCCL_STATE (12, NCCL_CALL_ALLREDUCE,
                                         NCCL_ST_STREAM | NCCL_ST_FAILED),
                             b, sizeof (b)),
            "ddp_allreduce_stream #12", "state name: a _stream call");
    is_str (nccl_state_name (NCCL_STATE (0, NCCL_CALL_INIT, NCCL_ST_IN), b,
                             sizeof (b)),
            "ddp_init", "state name: init");
    is_str (nccl_state_name (NCCL_STATE (9, NCCL_CALL_FINALIZE, 0), b,
                             sizeof (b)),
            "ddp_finalize", "state name: finalize");
    is_str (nccl_state_name (NCCL_STATE (4, NCCL_CALL_REDUCE_SCATTER,
                                         NCCL_ST_IN), b, sizeof (b)),
            "ddp_reduce_scatter #4", "state name: reduce-scatter");
    is_str (nccl_state_name (NCCL_STATE (5, NCCL_CALL_SPLIT, NCCL_ST_IN), b,
                             sizeof (b)),
            "ddp_comm_split #5", "state name: a split, on the parent");
    is_str (nccl_state_name (NCCL_STATE (3, 200, 0), b, sizeof (b)),
            "a collective #3", "state name: a call this build does not know");
    ok (NCCL_STATE_NUM (NCCL_STATE (UINT64_C (1) << 40, NCCL_CALL_GATHER,
                                    NCCL_ST_IN))
            == UINT64_C (1) << 40,
        "a state keeps 48 bits of call number");
}

static const char *hosts_of (void *arg, int r)
{
    return ((const char *const *)arg)[r];
}

/* nccl_describe on 6 ranks, rank 0 in ddp_barrier #6 */
static void test_describe (void)
{
    const char *hosts[6] = {"n0", "n1", "n1", "n2", "n2", "n3"};
    uint64_t mine = NCCL_STATE (6, NCCL_CALL_BARRIER,
                                NCCL_ST_IN | NCCL_ST_FAILED);
    struct nccl_peer p[6];
    char out[512];
    int n;

    for (int r = 0; r < 6; r++)
        p[r] = (struct nccl_peer){NCCL_SEEN_ANSWERED, mine};
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    ok (n == 0 && strcmp (out, "no rank is gone or behind: 5 of 5 answered"
                               " (NCCL_DEBUG=WARN may say more)") == 0,
        "everyone failed in my call: nobody at fault (%d: %s)", n, out);
    p[2].seen = NCCL_SEEN_GONE;
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    is_str (out, "rank 2 (host n1) is gone: its process exited (connection"
            " refused)", "one rank gone: named with its host");
    ok (n == 1, "one rank at fault (%d)", n);
    /* A survivor still leaving the call before mine (seen under load in
     * t0405): not at fault while another rank is gone; named without. */
    p[3].state = NCCL_STATE (5, NCCL_CALL_BARRIER, NCCL_ST_IN);
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    is_str (out, "rank 2 (host n1) is gone: its process exited (connection"
            " refused)", "one rank gone, one still leaving the call before:"
            " only the gone one named");
    ok (n == 1, "one rank at fault (%d)", n);
    p[2].seen = NCCL_SEEN_ANSWERED;
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    is_str (out, "rank 3 (host n2) is still in ddp_barrier #5",
            "nobody gone: the one still in the call before is named");
    ok (n == 1, "one rank at fault (%d)", n);
    p[2].seen = NCCL_SEEN_GONE;
    p[3].state = NCCL_STATE (5, NCCL_CALL_ALLREDUCE, 0);
    p[4].state = NCCL_STATE (5, NCCL_CALL_ALLREDUCE, 0);
    p[5].state = NCCL_STATE (4, NCCL_CALL_ALLREDUCE, NCCL_ST_IN);
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    is_str (out, "rank 2 (host n1) is gone: its process exited (connection"
            " refused); ranks 3-4 (host n2) never entered ddp_barrier #6;"
            " rank 5 (host n3) is still in ddp_allreduce #4",
            "grouped by what was found, the host where the group has one");
    ok (n == 4, "four ranks at fault (%d)", n);
    p[1].state = NCCL_STATE (6, NCCL_CALL_ALLREDUCE, NCCL_ST_IN);
    p[3].state = NCCL_STATE (3, NCCL_CALL_BCAST, 0);
    p[4].state = NCCL_STATE (2, NCCL_CALL_BCAST, NCCL_ST_STREAM);
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    is_str (out, "rank 1 (host n1) is in ddp_allreduce #6 instead (the ranks"
            " called the collectives in different orders); rank 2 (host n1)"
            " is gone: its process exited (connection refused); rank 3 (host"
            " n2) never entered ddp_barrier #6 (it left ddp_bcast #3); rank 4"
            " (host n2) never entered ddp_barrier #6 (it left"
            " ddp_bcast_stream #2); 1 more rank at fault",
            "another call of my number; four groups at most, the rest counted");
    ok (n == 5, "five ranks at fault (%d)", n);

    for (int r = 0; r < 6; r++)
        p[r] = (struct nccl_peer){NCCL_SEEN_ANSWERED, mine};
    p[1].seen = NCCL_SEEN_UNREACHABLE;
    p[2].seen = NCCL_SEEN_SILENT;
    p[3].state = NCCL_STATE (5, NCCL_CALL_BARRIER, NCCL_ST_ABORTED);
    p[4].state = NCCL_STATE (7, NCCL_CALL_FINALIZE, NCCL_ST_IN);
    p[5].seen = NCCL_SEEN_NONE;
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    is_str (out, "rank 1 (host n1) cannot be reached: no connection to it"
            " within 0.5 s; rank 2 (host n1) does not answer: connected, but"
            " no reply within 0.5 s; rank 3 (host n2) called ddp_abort;"
            " rank 4 (host n2) is in ddp_finalize",
            "unreachable, silent, aborted, finalizing; not asked: not named");
    ok (n == 4, "four ranks at fault (%d)", n);

    for (int r = 0; r < 6; r++)
        p[r] = (struct nccl_peer){NCCL_SEEN_ANSWERED,
                                  NCCL_STATE (7, NCCL_CALL_BARRIER, 0)};
    p[2].state = NCCL_STATE (0, NCCL_CALL_INIT, NCCL_ST_IN);
    p[3].state = NCCL_STATE (1, NCCL_CALL_BARRIER, 0);
    p[4].seen = NCCL_SEEN_GONE;
    p[5].seen = NCCL_SEEN_GONE;
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    is_str (out, "rank 2 (host n1) is still in ddp_init; rank 3 (host n2)"
            " never entered ddp_barrier #6 (it left ddp_barrier #1); ranks"
            " 4-5 are gone: their processes exited (connection refused)",
            "ahead of me: not at fault; in init; a group on two hosts");
    mine = NCCL_STATE (0, NCCL_CALL_INIT, NCCL_ST_IN | NCCL_ST_FAILED);
    for (int r = 0; r < 6; r++)
        p[r] = (struct nccl_peer){NCCL_SEEN_ANSWERED,
                                  NCCL_STATE (0, NCCL_CALL_INIT, NCCL_ST_IN)};
    p[1].state = NCCL_STATE (1, NCCL_CALL_BARRIER, NCCL_ST_IN);
    n = nccl_describe (p, 6, 0, mine, hosts_of, hosts, 0.5, out,
                       sizeof (out));
    ok (n == 0, "in ddp_init myself: peers in init or past it are not at"
        " fault (%s)", out);
    n = nccl_describe (p, 6, 0, mine, NULL, NULL, 0.5, out, 40);
    ok (n == 0 && strlen (out) == 39, "a short buffer is cut, terminated");
}

static void test_roots (void)
{
    is_int (nccl_num_roots (1, 128), 1, "1 rank: 1 root");
    is_int (nccl_num_roots (128, 128), 1, "128 ranks, 128 per root: 1 root");
    is_int (nccl_num_roots (129, 128), 2, "129 ranks: 2 roots");
    is_int (nccl_num_roots (1000, 128), 8, "1000 ranks: 8 roots");
    is_int (nccl_num_roots (4, 1), 4, "4 ranks, 1 per root: 4 roots");
    is_int (nccl_num_roots (0, 128), -1, "0 ranks is refused");
    is_int (nccl_num_roots (4, 0), -1, "0 ranks per root is refused");

    /* 10 ranks, 3 roots: blocks of 4, 3, 3 start at 0, 4, 7. */
    is_int (nccl_root_rank (0, 10, 3), 0, "10 ranks/3 roots: root 0 is rank 0");
    is_int (nccl_root_rank (1, 10, 3), 4, "root 1 is rank 4");
    is_int (nccl_root_rank (2, 10, 3), 7, "root 2 is rank 7");
    is_int (nccl_root_rank (3, 10, 3), -1, "root 3 is out of range");
    is_int (nccl_root_rank (0, 2, 3), -1, "more roots than ranks is refused");
    int wrong = 0;
    for (int n = 1; n <= 300; n += 7)
        for (int rpr = 1; rpr <= 130; rpr += 43) {
            int nr = nccl_num_roots (n, rpr), found = 0, bad = 0;
            for (int r = 0; r < n; r++) {
                int i = nccl_root_index (r, n, nr);
                if (i >= 0) {
                    found++;
                    if (nccl_root_rank (i, n, nr) != r)
                        bad++;
                }
            }
            if (found != nr || bad) {
                diag ("n=%d rpr=%d: %d roots found, %d inconsistent", n, rpr,
                      found, bad);
                wrong++;
            }
        }
    is_int (wrong, 0, "root_index and root_rank agree for n in 1..300");
    is_int (nccl_root_index (5, 4, 1), -1, "rank out of range is refused");
}

static void test_choose (void)
{
    char err[128] = "";

    unsetenv ("DDP_DEVICE");
    is_int (nccl_count_visible (NULL), -1, "CUDA_VISIBLE_DEVICES unset: -1");
    is_int (nccl_count_visible (""), 0, "empty: 0 devices");
    is_int (nccl_count_visible ("3"), 1, "\"3\": 1 device");
    is_int (nccl_count_visible ("0,1,2,3"), 4, "\"0,1,2,3\": 4 devices");
    is_int (nccl_count_visible ("GPU-8a1b,GPU-77ff"), 2, "UUIDs: 2 devices");

    is_int (nccl_choose_device (1, "2", 3, err, sizeof (err)), 0,
            "bound to one GPU (plugin): device 0 whatever the local rank");
    is_int (nccl_choose_device (4, "0,1,2,3", 2, err, sizeof (err)), 2,
            "four visible, local rank 2: device 2");
    is_int (nccl_choose_device (4, "0,1,2,3", 5, err, sizeof (err)), 1,
            "four visible, local rank 5: device 5 %% 4 = 1");
    is_int (nccl_choose_device (8, NULL, 3, err, sizeof (err)), 3,
            "unset, 8 devices, local rank 3: device 3");
    is_int (nccl_choose_device (2, NULL, 0, err, sizeof (err)), 0,
            "unset, local rank 0: device 0");
    is_int (nccl_choose_device (0, NULL, 0, err, sizeof (err)), -1,
            "no device: refused");
    ok (strstr (err, "no CUDA device") != NULL, "with a reason: %s", err);
    is_int (nccl_choose_device (0, "", 0, err, sizeof (err)), -1,
            "CUDA_VISIBLE_DEVICES empty: refused");
    ok (strstr (err, "CUDA_VISIBLE_DEVICES=") != NULL,
        "the reason names CUDA_VISIBLE_DEVICES: %s", err);
    is_int (nccl_choose_device (2, NULL, -1, err, sizeof (err)), -1,
            "negative local rank: refused");

    /* DDP_DEVICE: the plugin's 0 for a share of several GPUs, or the
     * user's own index. */
    is_int (nccl_pick_device (2, "2,3", 0, 1, err, sizeof (err)), 0,
            "share of two, DDP_DEVICE=0, local rank 1: device 0");
    is_int (nccl_pick_device (2, "2,3", -1, 1, err, sizeof (err)), 1,
            "share of two, no DDP_DEVICE, local rank 1: device 1");
    is_int (nccl_pick_device (4, NULL, 3, 0, err, sizeof (err)), 3,
            "DDP_DEVICE=3 of 4: device 3");
    is_int (nccl_pick_device (1, "5", 0, 7, err, sizeof (err)), 0,
            "one visible, DDP_DEVICE=0: device 0");
    is_int (nccl_pick_device (2, "2,3", 2, 0, err, sizeof (err)), -1,
            "DDP_DEVICE=2 with two visible: refused");
    ok (strstr (err, "DDP_DEVICE=2, but this task sees 2 CUDA devices "
                "(CUDA_VISIBLE_DEVICES=2,3): give an index from 0 to 1")
        != NULL, "the reason names DDP_DEVICE and the range: %s", err);
    is_int (nccl_pick_device (0, "", 0, 0, err, sizeof (err)), -1,
            "DDP_DEVICE with no device: refused");
    ok (strstr (err, "no CUDA device") != NULL, "as no device: %s", err);

    setenv ("DDP_DEVICE", "1", 1);
    is_int (nccl_choose_device (2, "0,1", 0, err, sizeof (err)), 1,
            "DDP_DEVICE=1 from the environment: device 1");
    setenv ("DDP_DEVICE", "0", 1);
    is_int (nccl_choose_device (2, "2,3", 1, err, sizeof (err)), 0,
            "DDP_DEVICE=0 from the environment, local rank 1: device 0");
    setenv ("DDP_DEVICE", "x1", 1);
    is_int (nccl_choose_device (2, "0,1", 0, err, sizeof (err)), -1,
            "DDP_DEVICE=x1: refused");
    ok (strstr (err, "DDP_DEVICE='x1' is not a whole number from 0 to")
        != NULL, "with env.c's message: %s", err);
    setenv ("DDP_DEVICE", "", 1);
    is_int (nccl_choose_device (2, "0,1", 1, err, sizeof (err)), 1,
            "DDP_DEVICE empty is unset: local rank 1, device 1");
    unsetenv ("DDP_DEVICE");
}

static struct nccl_blob mkblob (const char *host, const char *busid,
                                int uuid_seed)
{
    struct nccl_blob b;

    memset (&b, 0, sizeof (b));
    b.magic = NCCL_BLOB_MAGIC;
    snprintf (b.host, sizeof (b.host), "%s", host);
    snprintf (b.busid, sizeof (b.busid), "%s", busid);
    if (uuid_seed)
        for (int i = 0; i < 16; i++)
            b.uuid[i] = (uint8_t)(uuid_seed + i);
    return b;
}

static void test_blob (void)
{
    struct nccl_blob b = mkblob ("n1", "0000:3b:00.0", 1), out;
    char err[256];
    char raw[sizeof (b) + 1];

    memset (b.reason, 'x', sizeof (b.reason)); /* not terminated */
    ok (nccl_blob_decode (&b, sizeof (b), &out, err, sizeof (err)) == 0,
        "a well-formed blob decodes");
    ok (strcmp (out.host, "n1") == 0 && strcmp (out.busid, "0000:3b:00.0") == 0,
        "host and bus id survive");
    ok (strlen (out.reason) == sizeof (out.reason) - 1,
        "an unterminated string is cut, not overrun");
    memcpy (raw, &b, sizeof (b));
    ok (nccl_blob_decode (raw, sizeof (b) + 1, &out, err, sizeof (err)) < 0,
        "a blob of the wrong length is refused");
    ok (strstr (err, "bytes") != NULL, "the reason says so: %s", err);
    b.magic = 0xdeadbeef;
    ok (nccl_blob_decode (&b, sizeof (b), &out, err, sizeof (err)) < 0,
        "a blob with a bad magic is refused");
    ok (nccl_blob_decode (NULL, 0, &out, err, sizeof (err)) < 0,
        "no blob is refused");
}

/* nccl_find_duplicate_gpu on v[0..n-1]: want NULL (no duplicate) or a
 * substring of the message. */
static void expect_dup (const struct nccl_blob *v, int n, const char *want,
                        const char *name)
{
    char msg[512] = "";
    int rc = nccl_find_duplicate_gpu (v, n, msg, sizeof (msg));

    if (!want)
        ok (rc == 0, "%s", name);
    else
        ok (rc == 1 && strstr (msg, want) != NULL, "%s: %s", name, msg);
}

static void expect_pair (const char *h0, const char *b0, int u0,
                         const char *h1, const char *b1, int u1,
                         const char *want, const char *name)
{
    struct nccl_blob v[2] = {mkblob (h0, b0, u0), mkblob (h1, b1, u1)};

    expect_dup (v, 2, want, name);
}

static void test_duplicates (void)
{
    struct nccl_blob v[5];
    char msg[512] = "", ubuf[48], small[8];

    v[0] = mkblob ("n1", "0000:3b:00.0", 10);
    v[1] = mkblob ("n1", "0000:5e:00.0", 40);
    v[2] = mkblob ("n2", "0000:3b:00.0", 70); /* same bus id, other host */
    v[3] = mkblob ("n2", "0000:5e:00.0", 100);
    expect_dup (v, 4, NULL, "four ranks on four GPUs: no duplicate");
    v[3] = mkblob ("n1", "0000:5e:00.0", 40);
    expect_dup (v, 4, "ranks 1,3 on host n1 share GPU 0000:5e:00.0",
                "ranks 1 and 3 on one GPU of n1: named with host and bus id");
    nccl_find_duplicate_gpu (v, 4, msg, sizeof (msg));
    ok (strstr (msg, nccl_format_uuid (v[1].uuid, ubuf, sizeof (ubuf)))
            != NULL, "and the UUID");
    v[2] = mkblob ("n1", "0000:3b:00.0", 10);
    v[4] = mkblob ("n1", "0000:3b:00.0", 10);
    expect_dup (v, 5, "ranks 0,2,4 on host n1",
                "three ranks on the first GPU: all listed");

    /* Two ranks: host, bus id and UUID seed (0: unknown) of each. */
    expect_pair ("a", "0000:01:00.0", 1, "b", "0000:01:00.0", 1, NULL,
                 "same UUID and bus id on two hosts: no duplicate");
    expect_pair ("a", "0000:01:00.0", 0, "a", "0000:01:00.0", 0,
                 "ranks 0,1 on host a share GPU 0000:01:00.0 (NCCL",
                 "no UUIDs, same host and bus id: duplicate, no UUID named");
    expect_pair ("a", "", 0, "a", "", 0, NULL,
                 "nothing known about the GPUs: no claim");
    expect_pair ("a", "0000:01:00.0", 1, "a", "0000:01:00.0", 2, NULL,
                 "same bus id, different UUIDs (MIG instances): none");
    /* One UUID unknown: the bus id decides. */
    v[0] = mkblob ("a", "0000:01:00.0", 1);
    v[1] = mkblob ("a", "0000:01:00.0", 2);
    v[2] = mkblob ("a", "0000:01:00.0", 0);
    expect_dup (v, 3, "ranks 0,2 on host a",
                "a rank without UUID on a bus id shared by two MIG ranks");

    /* A tiny message buffer is filled safely. */
    v[1] = mkblob ("a", "0000:01:00.0", 1);
    ok (nccl_find_duplicate_gpu (v, 2, small, sizeof (small)) == 1
            && strlen (small) < sizeof (small),
        "a short message buffer is truncated, terminated: '%s'", small);
    expect_dup (v, 0, NULL, "no ranks: nothing found");
}

/* Rank r of a simulated job: node r / per_node, GPU r % per_node, each GPU
 * with its own bus id and UUID. */
static struct nccl_blob sim_blob (int r, int per_node)
{
    char host[16], busid[16];
    struct nccl_blob b;
    int node = r / per_node, gpu = r % per_node;

    snprintf (host, sizeof (host), "n%05d", node);
    snprintf (busid, sizeof (busid), "0000:%02x:00.0", 0x10 + gpu);
    b = mkblob (host, busid, 0);
    memcpy (b.uuid, &node, sizeof (node));
    b.uuid[sizeof (node)] = (uint8_t)(gpu + 1);
    return b;
}

static struct nccl_blob *sim_job (int n, int per_node)
{
    struct nccl_blob *v = calloc ((size_t)n, sizeof (*v));

    for (int r = 0; v && r < n; r++)
        v[r] = sim_blob (r, per_node);
    return v;
}

/* Jobs of thousands of ranks: the check sorts, it does not compare pairs. */
static void test_duplicates_scale (void)
{
    int n = 4096;
    struct nccl_blob *v = sim_job (n, 8);

    if (!v) {
        ok (0, "calloc %d blobs", n);
        return;
    }
    expect_dup (v, n, NULL, "4096 ranks on 512 nodes of 8 GPUs: no duplicate");
    v[4095] = sim_blob (4088, 8);
    expect_dup (v, n, "ranks 4088,4095 on host n00511 share GPU 0000:10:00.0",
                "the last two ranks of the last node on one GPU: found");
    v[13] = sim_blob (9, 8);
    v[14] = sim_blob (9, 8);
    expect_dup (v, n, "ranks 9,13,14 on host n00001",
                "two shared GPUs: the one with the lowest rank is named");
    for (int r = 0; r < n; r++) {
        v[r] = sim_blob (r, 8);
        memset (v[r].uuid, 0, sizeof (v[r].uuid));
    }
    expect_dup (v, n, NULL, "no UUIDs anywhere, bus ids distinct per node");
    v[2050] = v[2049];
    expect_dup (v, n, "ranks 2049,2050 on host n00256 share GPU 0000:11:00.0",
                "no UUIDs: a shared bus id is found");
    free (v);

    /* All ranks report one host name (as on the test cluster). */
    n = 3000;
    if (!(v = sim_job (n, 8)))
        return;
    for (int r = 0; r < n; r++)
        snprintf (v[r].host, sizeof (v[r].host), "same");
    expect_dup (v, n, NULL, "3000 ranks, one host name, own UUIDs: none");
    free (v);
}

/* The rule of nccl_util.h, pair by pair, for the cross-check below. */
static bool ref_same (const struct nccl_blob *a, const struct nccl_blob *b)
{
    static const uint8_t zero[16];
    bool ua = memcmp (a->uuid, zero, 16) != 0;
    bool ub = memcmp (b->uuid, zero, 16) != 0;

    if (strcmp (a->host, b->host) != 0)
        return false;
    if (ua && ub)
        return memcmp (a->uuid, b->uuid, 16) == 0;
    return a->busid[0] && strcmp (a->busid, b->busid) == 0;
}

/* "ranks F,J,..." by comparing every pair, or "" when no GPU is shared. */
static void ref_ranks (const struct nccl_blob *v, int n, char *out,
                       size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (ref_same (&v[i], &v[j])) {
                size_t off = (size_t)snprintf (out, len, "ranks %d", i);
                for (int k = i + 1; k < n && off < len; k++)
                    if (ref_same (&v[i], &v[k]))
                        off += (size_t)snprintf (out + off, len - off, ",%d",
                                                 k);
                return;
            }
}

/* Random small jobs (few hosts, GPUs, unknown UUIDs and bus ids mixed):
 * the sorting check names exactly the ranks the pairwise rule gives. */
static void test_duplicates_random (void)
{
    static const char *hosts[] = {"a", "b", "c", "d"};
    static const char *buses[] = {"", "0000:01:00.0", "0000:02:00.0",
                                  "0000:03:00.0", "0000:04:00.0",
                                  "0000:05:00.0", "0000:06:00.0",
                                  "0000:07:00.0"};
    unsigned long seed = 12345;
    struct nccl_blob v[16];
    char msg[512], want[512];
    int wrong = 0, found = 0;

    for (int round = 0; round < 300; round++) {
        int n = 2 + (int)(seed % 15);
        for (int r = 0; r < n; r++) {
            seed = seed * 6364136223846793005UL + 1442695040888963407UL;
            v[r] = mkblob (hosts[(seed >> 33) % 4], buses[(seed >> 40) % 8],
                           (int)((seed >> 48) % 8) * 20);
        }
        ref_ranks (v, n, want, sizeof (want));
        int rc = nccl_find_duplicate_gpu (v, n, msg, sizeof (msg));
        bool same = want[0] ? rc == 1 && strncmp (msg, want, strlen (want)) == 0
                                  && msg[strlen (want)] == ' '
                            : rc == 0;
        found += want[0] != '\0';
        if (!same && wrong++ < 3)
            diag ("round %d: want '%s', got %d '%s'", round, want, rc, msg);
    }
    is_int (wrong, 0, "300 random jobs: the same ranks as the pairwise rule"
            " (%d with a shared GPU)", found);
}

/* --scale N: time the check on N ranks (no duplicate, the full work). */
static int scale (int n)
{
    struct nccl_blob *v = sim_job (n, 8);
    char msg[512];
    struct timespec t0, t1;
    int rc;

    if (!v)
        return 1;
    clock_gettime (CLOCK_MONOTONIC, &t0);
    rc = nccl_find_duplicate_gpu (v, n, msg, sizeof (msg));
    clock_gettime (CLOCK_MONOTONIC, &t1);
    printf ("duplicate-GPU check, %d ranks: rc %d, %.3f ms\n", n, rc,
            (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    free (v);
    return rc != 0;
}

static void test_uuid (void)
{
    uint8_t u[16];
    char buf[48];

    for (int i = 0; i < 16; i++)
        u[i] = (uint8_t)(0xa0 + i);
    is_str (nccl_format_uuid (u, buf, sizeof (buf)),
            "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf", "UUID format");
    ok (strlen (nccl_format_uuid (u, buf, 10)) == 9,
        "a short buffer is truncated");
}

/* Which failed rank each rank names: itself when it failed, else the
 * lowest one that did. */
static void test_blob_failed (void)
{
    struct nccl_blob b[4];

    memset (b, 0, sizeof (b));
    is_int (nccl_blob_failed (b, 4, 2), -1, "no rank failed: -1");
    b[1].status = DDP_ECUDA;
    b[3].status = DDP_ECUDA;
    is_int (nccl_blob_failed (b, 4, 0), 1, "rank 0 names the lowest failed");
    is_int (nccl_blob_failed (b, 4, 2), 1, "rank 2 names the lowest failed");
    is_int (nccl_blob_failed (b, 4, 3), 3, "rank 3 failed: names itself");
    is_int (nccl_blob_failed (b, 4, 1), 1, "rank 1 failed: names itself");
    is_int (nccl_blob_failed (b, 4, 7), 1, "a rank outside: the lowest");
    is_int (nccl_blob_failed (b, 0, 0), -1, "no blobs: -1");
}

int main (int argc, char **argv)
{
    if (argc == 3 && strcmp (argv[1], "--scale") == 0)
        return scale (atoi (argv[2]));
    plan (NO_PLAN);
    test_dtype ();
    test_op ();
    test_avg_in_place ();
    test_known_ranges ();
    test_state_names ();
    test_describe ();
    test_roots ();
    test_choose ();
    test_blob ();
    test_blob_failed ();
    test_duplicates ();
    test_duplicates_scale ();
    test_duplicates_random ();
    test_uuid ();
    return done_testing ();
}
