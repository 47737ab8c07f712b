/* nccl_util.c - the pure parts of the NCCL backend (libjob/nccl/nccl_util.c):
 * dtype/op mapping, bootstrap roots, GPU choice, the fence blob and the
 * duplicate-GPU check.  Needs no GPU. */
#include "config.h"

#include <string.h>

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

#define BUS "0000:01:00.0"

/* Whether nccl_find_duplicate_gpu() finds ranks 0 and 1 on one GPU. */
static bool two_ranks (struct nccl_blob r0, struct nccl_blob r1, char *msg,
                       size_t size)
{
    struct nccl_blob v[2] = { r0, r1 };

    return nccl_find_duplicate_gpu (v, 2, msg, size);
}

static void test_duplicates (void)
{
    struct nccl_blob v[5];
    char msg[512] = "", ubuf[48];

    v[0] = mkblob ("n1", "0000:3b:00.0", 10);
    v[1] = mkblob ("n1", "0000:5e:00.0", 40);
    v[2] = mkblob ("n2", "0000:3b:00.0", 70); /* same bus id, other host */
    v[3] = mkblob ("n2", "0000:5e:00.0", 100);
    ok (!nccl_find_duplicate_gpu (v, 4, msg, sizeof (msg)),
        "four ranks on four GPUs: no duplicate");

    v[3] = mkblob ("n1", "0000:5e:00.0", 40);
    ok (nccl_find_duplicate_gpu (v, 4, msg, sizeof (msg)),
        "ranks 1 and 3 on one GPU of n1: found");
    diag ("%s", msg);
    ok (strstr (msg, "ranks 1,3 on host n1 share GPU 0000:5e:00.0") != NULL,
        "the message names the ranks, host and bus id");
    ok (strstr (msg, nccl_format_uuid (v[1].uuid, ubuf, sizeof (ubuf)))
            != NULL, "and the UUID");

    v[2] = mkblob ("n1", "0000:3b:00.0", 10);
    v[4] = mkblob ("n1", "0000:3b:00.0", 10);
    ok (nccl_find_duplicate_gpu (v, 5, msg, sizeof (msg)),
        "three ranks on the first GPU: found");
    ok (strstr (msg, "ranks 0,2,4 on host n1") != NULL,
        "all of them are listed: %s", msg);

    /* Same UUID on different hosts cannot be one GPU. */
    ok (!two_ranks (mkblob ("a", BUS, 1), mkblob ("b", BUS, 1), msg,
                    sizeof (msg)),
        "same UUID and bus id on different hosts: not a duplicate");

    /* Unknown UUIDs: fall back to the bus id. */
    ok (two_ranks (mkblob ("a", BUS, 0), mkblob ("a", BUS, 0), msg,
                   sizeof (msg)),
        "no UUIDs, same host and bus id: duplicate");
    ok (strstr (msg, "ranks 0,1 on host a share GPU 0000:01:00.0") != NULL,
        "message without UUID: %s", msg);
    ok (!two_ranks (mkblob ("a", "", 0), mkblob ("a", "", 0), msg,
                    sizeof (msg)),
        "nothing known about the GPUs: no claim");

    /* Different UUIDs with the same bus id on one host (MIG instances). */
    ok (!two_ranks (mkblob ("a", BUS, 1), mkblob ("a", BUS, 2), msg,
                    sizeof (msg)),
        "same bus id, different UUIDs: not a duplicate");

    /* A tiny message buffer is filled safely. */
    v[0] = mkblob ("a", BUS, 1);
    v[1] = mkblob ("a", BUS, 1);
    char small[8];
    ok (nccl_find_duplicate_gpu (v, 2, small, sizeof (small))
            && strlen (small) < sizeof (small),
        "a short message buffer is truncated, terminated: '%s'", small);
    ok (!nccl_find_duplicate_gpu (v, 0, msg, sizeof (msg)),
        "no ranks: nothing found");
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

int main (void)
{
    plan (NO_PLAN);
    test_dtype ();
    test_op ();
    test_roots ();
    test_choose ();
    test_blob ();
    test_duplicates ();
    test_uuid ();
    return done_testing ();
}
