/* nccl_util.c - the pure parts of the NCCL backend (see nccl_util.h). */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"
#include "nccl_util.h"

int nccl_map_dtype (ddp_dtype_t dtype, ncclDataType_t *out)
{
    static const ncclDataType_t map[DDP_NUM_DTYPES] = {
        [DDP_INT8] = ncclInt8,         [DDP_UINT8] = ncclUint8,
        [DDP_INT32] = ncclInt32,       [DDP_UINT32] = ncclUint32,
        [DDP_INT64] = ncclInt64,       [DDP_UINT64] = ncclUint64,
        [DDP_FLOAT16] = ncclFloat16,   [DDP_BFLOAT16] = ncclBfloat16,
        [DDP_FLOAT32] = ncclFloat32,   [DDP_FLOAT64] = ncclFloat64,
    };
    if ((int)dtype < 0 || dtype >= DDP_NUM_DTYPES || !out)
        return -1;
    *out = map[dtype];
    return 0;
}

int nccl_map_op (ddp_op_t op, ncclRedOp_t *out)
{
    if (!out)
        return -1;
    switch (op) {
        case DDP_SUM:
            *out = ncclSum;
            return 0;
        case DDP_PROD:
            *out = ncclProd;
            return 0;
        case DDP_MIN:
            *out = ncclMin;
            return 0;
        case DDP_MAX:
            *out = ncclMax;
            return 0;
        case DDP_AVG:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
            *out = ncclAvg;
            return 0;
#else
            return -1;
#endif
        case DDP_NUM_OPS:
            break;
    }
    return -1;
}

bool nccl_avg_in_place (ncclRedOp_t op, const void *send, const void *recv,
                        size_t bytes)
{
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    const char *s = send, *r = recv;

    if (op != ncclAvg || !send || !recv || bytes == 0)
        return false;
    return s + bytes <= r || r + bytes <= s; /* disjoint */
#else
    (void)op, (void)send, (void)recv, (void)bytes;
    return false;
#endif
}

void nccl_known_add (struct nccl_known *k, uintptr_t p, size_t len)
{
    uintptr_t hi = len > UINTPTR_MAX - p ? UINTPTR_MAX : p + len;
    int i;

    if (len == 0)
        return;
    for (i = 0; i < k->n; i++)
        if (p <= k->r[i].hi && k->r[i].lo <= hi) {
            k->r[i].lo = p < k->r[i].lo ? p : k->r[i].lo;
            k->r[i].hi = hi > k->r[i].hi ? hi : k->r[i].hi;
            return;
        }
    if (k->n < NCCL_KNOWN_MAX)
        i = k->n++;
    else {
        i = NCCL_KNOWN_MAX / 2 + k->next;
        k->next = (k->next + 1) % (NCCL_KNOWN_MAX / 2);
    }
    k->r[i] = (struct nccl_range){p, hi};
}

char *nccl_state_name (uint64_t st, char *buf, size_t len)
{
    static const char *const names[NCCL_CALLS] = {
        [NCCL_CALL_NONE] = "a collective", [NCCL_CALL_INIT] = "ddp_init",
        [NCCL_CALL_BARRIER] = "ddp_barrier", [NCCL_CALL_BCAST] = "ddp_bcast",
        [NCCL_CALL_REDUCE] = "ddp_reduce",
        [NCCL_CALL_ALLREDUCE] = "ddp_allreduce",
        [NCCL_CALL_GATHER] = "ddp_gather",
        [NCCL_CALL_ALLGATHER] = "ddp_allgather",
        [NCCL_CALL_FINALIZE] = "ddp_finalize",
        [NCCL_CALL_REDUCE_SCATTER] = "ddp_reduce_scatter",
        [NCCL_CALL_SPLIT] = "ddp_comm_split",
    };
    int call = NCCL_STATE_CALL (st);
    bool coll = call != NCCL_CALL_INIT && call != NCCL_CALL_FINALIZE;
    bool stream = coll && call != NCCL_CALL_BARRIER && call != NCCL_CALL_NONE
                  && (NCCL_STATE_FLAGS (st) & NCCL_ST_STREAM);

    if (call >= NCCL_CALLS)
        call = NCCL_CALL_NONE;
    if (coll)
        snprintf (buf, len, "%s%s #%llu", names[call], stream ? "_stream" : "",
                  (unsigned long long)NCCL_STATE_NUM (st));
    else
        snprintf (buf, len, "%s", names[call]);
    return buf;
}

/* What peer p was found doing that puts it at fault, seen from state mine,
 * into buf, said of one rank or (plural) of several; "" when it is not at
 * fault. */
static void fault_text (const struct nccl_peer *p, uint64_t mine,
                        double window, bool plural, char *buf, size_t len)
{
    char its[64], my[64];
    uint64_t st = p->state, num = NCCL_STATE_NUM (st);
    uint64_t my_num = NCCL_STATE_NUM (mine);
    unsigned fl = NCCL_STATE_FLAGS (st);
    int call = NCCL_STATE_CALL (st);
    const char *is = plural ? "are" : "is";

    buf[0] = '\0';
    nccl_state_name (st, its, sizeof (its));
    nccl_state_name (mine, my, sizeof (my));
    switch (p->seen) {
    case NCCL_SEEN_GONE:
        snprintf (buf, len, "%s gone: %s exited (connection refused)", is,
                  plural ? "their processes" : "its process");
        return;
    case NCCL_SEEN_UNREACHABLE:
        snprintf (buf, len, "cannot be reached: no connection to %s within"
                  " %.1f s", plural ? "them" : "it", window);
        return;
    case NCCL_SEEN_SILENT:
        snprintf (buf, len, "%s not answer: connected, but no reply within"
                  " %.1f s", plural ? "do" : "does", window);
        return;
    case NCCL_SEEN_ANSWERED:
        break;
    default:
        return;
    }
    if (fl & NCCL_ST_ABORTED)
        snprintf (buf, len, "called ddp_abort");
    else if (fl & NCCL_ST_FAILED)
        return;
    else if (call == NCCL_CALL_FINALIZE)
        snprintf (buf, len, "%s in ddp_finalize", is);
    else if (call == NCCL_CALL_INIT && NCCL_STATE_CALL (mine) != NCCL_CALL_INIT)
        snprintf (buf, len, "%s still in ddp_init", is);
    else if (num < my_num && (fl & NCCL_ST_IN))
        snprintf (buf, len, "%s still in %s", is, its);
    else if (num < my_num && num + 1 < my_num)
        snprintf (buf, len, "never entered %s (%s left %s)", my,
                  plural ? "they" : "it", its);
    else if (num < my_num)
        snprintf (buf, len, "never entered %s", my);
    else if (num == my_num && strcmp (its, my) != 0)
        snprintf (buf, len, "%s in %s instead (the ranks called the"
                  " collectives in different orders)", is, its);
}

/* Whether peer p is at fault beyond doubt: gone, unreachable, silent, or
 * it called ddp_abort. */
static bool hard_fault (const struct nccl_peer *p)
{
    return p->seen == NCCL_SEEN_GONE || p->seen == NCCL_SEEN_UNREACHABLE
           || p->seen == NCCL_SEEN_SILENT
           || (p->seen == NCCL_SEEN_ANSWERED
               && (NCCL_STATE_FLAGS (p->state) & NCCL_ST_ABORTED));
}

/* Whether peer p is still in the call just before mine, on its way out:
 * that call finished here, so it did its part.  Under load a survivor is
 * often found so when another rank has died; that is not a fault. */
static bool just_behind (const struct nccl_peer *p, uint64_t mine)
{
    uint64_t st = p->state;

    return p->seen == NCCL_SEEN_ANSWERED && (NCCL_STATE_FLAGS (st) & NCCL_ST_IN)
           && !(NCCL_STATE_FLAGS (st) & (NCCL_ST_ABORTED | NCCL_ST_FAILED))
           && NCCL_STATE_CALL (st) != NCCL_CALL_INIT
           && NCCL_STATE_CALL (st) != NCCL_CALL_FINALIZE
           && NCCL_STATE_NUM (st) + 1 == NCCL_STATE_NUM (mine);
}

#define DESCRIBE_GROUPS 4

/* Ranks found at fault the same way (what, said of one rank). */
struct fault_group {
    char what[160];
    const struct nccl_peer *first;
    int *ranks;
    int n;
};

/* "rank 1 (host n2) WHAT" or "ranks 1,3 (host n2) WHAT" (the host when
 * every rank of the group has the same one), appended at *at. */
static void group_text (const struct fault_group *g, uint64_t mine,
                        double window, const char *(*host) (void *, int),
                        void *arg, char *out, size_t len, size_t *at)
{
    char list[128], where[96] = "", what[160];
    const char *h = host ? host (arg, g->ranks[0]) : NULL;

    for (int i = 1; h && i < g->n; i++)
        if (strcmp (h, host (arg, g->ranks[i])) != 0)
            h = NULL;
    if (h && *h)
        snprintf (where, sizeof (where), " (host %s)", h);
    fault_text (g->first, mine, window, g->n > 1, what, sizeof (what));
    if (*at < len)
        *at += (size_t)snprintf (out + *at, len - *at, "%srank%s %s%s %s",
                                 *at ? "; " : "", g->n > 1 ? "s" : "",
                                 ddpi_format_ranks (list, sizeof (list),
                                                    g->ranks, g->n),
                                 where, what);
}

int nccl_describe (const struct nccl_peer *peers, int size, int me,
                   uint64_t mine, const char *(*host) (void *arg, int r),
                   void *arg, double window, char *out, size_t len)
{
    struct fault_group g[DESCRIBE_GROUPS];
    char cur[160];
    int ng = 0, at_fault = 0, more = 0, answered = 0, rc = 0;
    bool hard = false;
    size_t at = 0;

    if (len == 0)
        return 0;
    out[0] = '\0';
    for (int r = 0; r < size; r++)
        hard |= r != me && hard_fault (&peers[r]);
    for (int r = 0; r < size; r++) {
        int k;
        if (r == me)
            continue;
        answered += peers[r].seen == NCCL_SEEN_ANSWERED;
        if (hard && just_behind (&peers[r], mine))
            continue;
        fault_text (&peers[r], mine, window, false, cur, sizeof (cur));
        if (!cur[0])
            continue;
        at_fault++;
        for (k = 0; k < ng && strcmp (g[k].what, cur) != 0; k++)
            ;
        if (k == ng && ng < DESCRIBE_GROUPS) {
            g[ng].ranks = malloc ((size_t)size * sizeof (int));
            if (!g[ng].ranks) {
                rc = -1;
                more++;
                continue;
            }
            snprintf (g[ng].what, sizeof (g[ng].what), "%s", cur);
            g[ng].first = &peers[r];
            g[ng++].n = 0;
        }
        if (k < ng)
            g[k].ranks[g[k].n++] = r;
        else
            more++;
    }
    for (int k = 0; k < ng; k++) {
        group_text (&g[k], mine, window, host, arg, out, len, &at);
        free (g[k].ranks);
    }
    if (more > 0 && at < len)
        snprintf (out + at, len - at, "%s%d more rank%s at fault",
                  at ? "; " : "", more, more > 1 ? "s" : "");
    if (at_fault == 0)
        snprintf (out, len, "no rank is gone or behind: %d of %d answered"
                  " (NCCL_DEBUG=WARN may say more)", answered, size - 1);
    return rc < 0 ? rc : at_fault;
}

int nccl_num_roots (int nranks, int ranks_per_root)
{
    if (nranks < 1 || ranks_per_root < 1)
        return -1;
    return (nranks - 1) / ranks_per_root + 1;
}

int nccl_root_rank (int idx, int nranks, int nroots)
{
    int per, extra;

    if (nranks < 1 || nroots < 1 || nroots > nranks || idx < 0
        || idx >= nroots)
        return -1;
    per = nranks / nroots;
    extra = nranks % nroots;
    return idx * per + (idx < extra ? idx : extra);
}

int nccl_root_index (int rank, int nranks, int nroots)
{
    int per, extra, big;

    if (nranks < 1 || nroots < 1 || nroots > nranks || rank < 0
        || rank >= nranks)
        return -1;
    per = nranks / nroots;
    extra = nranks % nroots;
    big = extra * (per + 1); /* ranks in the blocks holding one more */
    if (rank < big)
        return rank % (per + 1) == 0 ? rank / (per + 1) : -1;
    return (rank - big) % per == 0 ? extra + (rank - big) / per : -1;
}

int nccl_count_visible (const char *cvd)
{
    int n = 0;
    const char *p;

    if (!cvd)
        return -1;
    if (*cvd == '\0')
        return 0;
    for (p = cvd; *p; p++)
        if (*p == ',')
            n++;
    return n + 1;
}

int nccl_pick_device (int ndev, const char *cvd, long device, int local_rank,
                      char *err, size_t errlen)
{
    if (ndev < 1) {
        snprintf (err, errlen, "no CUDA device visible%s%s%s",
                  cvd ? " (CUDA_VISIBLE_DEVICES=" : "", cvd ? cvd : "",
                  cvd ? ")" : "");
        return -1;
    }
    if (local_rank < 0) {
        snprintf (err, errlen, "local rank %d is negative", local_rank);
        return -1;
    }
    if (device >= ndev) {
        snprintf (err, errlen, "DDP_DEVICE=%ld, but this task sees %d CUDA "
                  "device%s (CUDA_VISIBLE_DEVICES=%s): give an index from 0 "
                  "to %d", device, ndev, ndev == 1 ? "" : "s",
                  cvd ? cvd : "unset", ndev - 1);
        return -1;
    }
    if (device >= 0)
        return (int) device;
    if (nccl_count_visible (cvd) == 1)
        return 0;
    return local_rank % ndev;
}

int nccl_choose_device (int ndev, const char *cvd, int local_rank, char *err,
                        size_t errlen)
{
    long device = -1;
    int d;

    if (ddpi_env_long ("DDP_DEVICE", &device) < 0) {
        snprintf (err, errlen, "%s", ddpi_last_error ());
        return -1;
    }
    if ((d = nccl_pick_device (ndev, cvd, device, local_rank, err,
                               errlen)) < 0)
        return -1;
    if (device >= 0)
        ddpi_debug ("nccl: CUDA device %d of the %d this task sees "
                    "(CUDA_VISIBLE_DEVICES=%s), as DDP_DEVICE says", d, ndev,
                    cvd ? cvd : "unset");
    else
        ddpi_debug ("nccl: CUDA device %d of the %d this task sees "
                    "(CUDA_VISIBLE_DEVICES=%s): %s", d, ndev,
                    cvd ? cvd : "unset", nccl_count_visible (cvd) == 1
                    ? "the one it sees" : "its local rank modulo the count");
    return d;
}

static void copy_str (char *dst, const char *src, size_t size)
{
    memcpy (dst, src, size);
    dst[size - 1] = '\0';
}

int nccl_blob_decode (const void *p, size_t len, struct nccl_blob *out,
                      char *err, size_t errlen)
{
    struct nccl_blob b;

    if (!p || len != sizeof (b)) {
        snprintf (err, errlen, "bootstrap blob has %zu bytes, expected %zu"
                  " (different libddp builds?)", len, sizeof (b));
        return -1;
    }
    memcpy (&b, p, sizeof (b));
    if (b.magic != NCCL_BLOB_MAGIC) {
        snprintf (err, errlen, "bootstrap blob has a bad magic number"
                  " (different libddp builds?)");
        return -1;
    }
    copy_str (b.host, b.host, sizeof (b.host));
    copy_str (b.busid, b.busid, sizeof (b.busid));
    copy_str (b.reason, b.reason, sizeof (b.reason));
    *out = b;
    return 0;
}

static bool uuid_known (const uint8_t *u)
{
    for (int i = 0; i < 16; i++)
        if (u[i] != 0)
            return true;
    return false;
}

static bool same_gpu (const struct nccl_blob *a, const struct nccl_blob *b)
{
    if (strcmp (a->host, b->host) != 0)
        return false;
    if (uuid_known (a->uuid) && uuid_known (b->uuid))
        return memcmp (a->uuid, b->uuid, 16) == 0;
    return a->busid[0] != '\0' && strcmp (a->busid, b->busid) == 0;
}

/* Append ",R" (or "R" first) to msg at *off; stop quietly when full. */
static void append_rank (char *msg, size_t msglen, size_t *off, int rank,
                         bool first)
{
    int n;

    if (*off >= msglen)
        return;
    n = snprintf (msg + *off, msglen - *off, first ? "%d" : ",%d", rank);
    if (n > 0)
        *off += (size_t)n;
}

/* A rank's GPU identity, for sorting. */
struct gpu_key {
    const struct nccl_blob *b;
    int rank;
};

static int cmp_rank (const struct gpu_key *x, const struct gpu_key *y)
{
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Order by host, then UUID (by_uuid) or bus id. */
static int cmp_key (const struct gpu_key *x, const struct gpu_key *y,
                    bool by_uuid)
{
    int c = strcmp (x->b->host, y->b->host);

    if (c == 0 && by_uuid)
        c = memcmp (x->b->uuid, y->b->uuid, sizeof (x->b->uuid));
    else if (c == 0)
        c = strcmp (x->b->busid, y->b->busid);
    return c;
}

static int cmp_uuid_rank (const void *a, const void *b)
{
    int c = cmp_key (a, b, true);
    return c ? c : cmp_rank (a, b);
}

static int cmp_busid_rank (const void *a, const void *b)
{
    int c = cmp_key (a, b, false);
    return c ? c : cmp_rank (a, b);
}

/* Put the ranks that have a UUID (by_uuid) or else a bus id into k, sorted
 * by host, that identity and rank.  Returns how many. */
static int sorted_keys (const struct nccl_blob *blobs, int n, bool by_uuid,
                        struct gpu_key *k)
{
    int m = 0;

    for (int r = 0; r < n; r++)
        if (by_uuid ? uuid_known (blobs[r].uuid) : blobs[r].busid[0] != '\0')
            k[m++] = (struct gpu_key){&blobs[r], r};
    qsort (k, (size_t)m, sizeof (*k), by_uuid ? cmp_uuid_rank : cmp_busid_rank);
    return m;
}

/* The lowest rank of k[0..m-1] (sorted by sorted_keys) that shares its GPU
 * with another, or INT_MAX.  by_uuid: ranks of one host and UUID share.
 * Else ranks of one host and bus id share when one of the two has no UUID
 * (same_gpu's rule), so a run of them counts if it holds such a rank. */
static int lowest_in_runs (const struct gpu_key *k, int m, bool by_uuid)
{
    int best = INT_MAX;

    for (int i = 0, j; i < m; i = j) {
        bool unknown = !uuid_known (k[i].b->uuid);
        for (j = i + 1; j < m && cmp_key (&k[i], &k[j], by_uuid) == 0; j++)
            unknown = unknown || !uuid_known (k[j].b->uuid);
        if (j - i > 1 && (by_uuid || unknown) && k[i].rank < best)
            best = k[i].rank; /* the run is in rank order */
    }
    return best;
}

/* "ranks F,J,... on host H share GPU ..." for first, the lowest rank of a
 * shared GPU, and every later rank on that GPU. */
static void describe_shared (const struct nccl_blob *blobs, int n, int first,
                             char *msg, size_t msglen)
{
    const struct nccl_blob *f = &blobs[first];
    char ubuf[48];
    size_t off = 0;

    if (msglen > 0) {
        int k = snprintf (msg, msglen, "ranks ");
        off = k > 0 ? (size_t)k : 0;
    }
    append_rank (msg, msglen, &off, first, true);
    for (int j = first + 1; j < n; j++)
        if (same_gpu (f, &blobs[j]))
            append_rank (msg, msglen, &off, j, false);
    if (off < msglen)
        snprintf (msg + off, msglen - off,
                  " on host %s share GPU %s%s%s%s (NCCL needs one GPU per"
                  " rank: give each task its own GPU, e.g."
                  " --gpus-per-task=1)", f->host,
                  f->busid[0] ? f->busid : "(unknown bus id)",
                  uuid_known (f->uuid) ? " (" : "",
                  uuid_known (f->uuid)
                      ? nccl_format_uuid (f->uuid, ubuf, sizeof (ubuf)) : "",
                  uuid_known (f->uuid) ? ")" : "");
}

int nccl_blob_failed (const struct nccl_blob *blobs, int n, int me)
{
    if (me >= 0 && me < n && blobs[me].status != 0)
        return me;
    for (int r = 0; r < n; r++)
        if (blobs[r].status != 0)
            return r;
    return -1;
}

int nccl_find_duplicate_gpu (const struct nccl_blob *blobs, int n, char *msg,
                             size_t msglen)
{
    struct gpu_key *k;
    int by_uuid, by_busid;

    if (n < 2)
        return 0;
    if (!(k = malloc ((size_t)n * sizeof (*k)))) {
        snprintf (msg, msglen, "out of memory checking %d GPUs", n);
        return -1;
    }
    by_uuid = lowest_in_runs (k, sorted_keys (blobs, n, true, k), true);
    by_busid = lowest_in_runs (k, sorted_keys (blobs, n, false, k), false);
    free (k);
    if (by_uuid == INT_MAX && by_busid == INT_MAX)
        return 0;
    describe_shared (blobs, n, by_uuid < by_busid ? by_uuid : by_busid, msg,
                     msglen);
    return 1;
}

char *nccl_format_uuid (const uint8_t uuid[16], char *buf, size_t len)
{
    static const int dash[] = {4, 6, 8, 10};
    size_t off = 0;
    int d = 0;

    if (len == 0)
        return buf;
    buf[0] = '\0';
    off = (size_t)snprintf (buf, len, "GPU-");
    for (int i = 0; i < 16 && off < len; i++) {
        if (d < 4 && i == dash[d]) {
            off += (size_t)snprintf (buf + off, len - off, "-");
            d++;
            if (off >= len)
                break;
        }
        off += (size_t)snprintf (buf + off, len - off, "%02x", uuid[i]);
    }
    return buf;
}
