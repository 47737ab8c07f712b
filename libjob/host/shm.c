/* shm.c - the node's shared segment and waiting on its flags (host.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "host.h"

#define PAGE 4096

static size_t align_up (size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* Lay out the mapping; the sizes come from the header. */
static void layout (struct host *h)
{
    size_t ctl = align_up (sizeof (struct shm_hdr)
                           + (size_t)h->lsize * sizeof (struct shm_flags), PAGE);
    size_t bank = (size_t)h->lsize * h->slot_bytes + h->res_bytes;

    h->hdr = h->map;
    h->flags = (struct shm_flags *)((char *)h->map + sizeof (struct shm_hdr));
    h->bank[0] = (char *)h->map + ctl;
    h->bank[1] = h->bank[0] + bank;
}

static size_t map_size (struct host *h)
{
    size_t ctl = align_up (sizeof (struct shm_hdr)
                           + (size_t)h->lsize * sizeof (struct shm_flags), PAGE);
    return ctl + 2 * ((size_t)h->lsize * h->slot_bytes + h->res_bytes);
}

int host_shm_create (struct host *h)
{
    size_t slot = (8u << 20) / (size_t)h->lsize;
    const char *s = getenv ("DDP_SHM_SLOT");
    long v;

    if (s && ddpi_parse_long (s, 4096, 1L << 30, &v) == 0)
        slot = (size_t)v;
    if (slot > (1u << 20) && !s)
        slot = 1u << 20;
    if (slot < 65536 && !s)
        slot = 65536;
    h->slot_bytes = align_up (slot, 64);
    h->res_bytes = align_up (h->slot_bytes > (size_t)h->size * 64
                             ? h->slot_bytes : (size_t)h->size * 64, 64);
    h->map_len = map_size (h);
    h->memfd = (int)syscall (SYS_memfd_create, "ddp-host", 1u /* CLOEXEC */);
    if (h->memfd < 0)
        return ddpi_error (DDP_ETRANSPORT, "memfd_create: %s",
                           strerror (errno));
    if (ftruncate (h->memfd, (off_t)h->map_len) < 0)
        return ddpi_error (DDP_ETRANSPORT, "ftruncate shared memory (%zu "
                           "bytes): %s", h->map_len, strerror (errno));
    h->map = mmap (NULL, h->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
                   h->memfd, 0);
    if (h->map == MAP_FAILED) {
        h->map = NULL;
        return ddpi_error (DDP_ETRANSPORT, "mmap shared memory: %s",
                           strerror (errno));
    }
    layout (h);
    h->hdr->slot_bytes = h->slot_bytes;
    h->hdr->res_bytes = h->res_bytes;
    h->hdr->local_size = (uint32_t)h->lsize;
    atomic_store (&h->hdr->attached, 1);
    h->hdr->magic = SHM_MAGIC;
    return 0;
}

int host_shm_attach (struct host *h, pid_t pid0, int fd0)
{
    char path[64];
    struct stat st;
    struct shm_hdr hdr;
    int fd;

    snprintf (path, sizeof (path), "/proc/%d/fd/%d", (int)pid0, fd0);
    if ((fd = open (path, O_RDWR | O_CLOEXEC)) < 0)
        return ddpi_error (DDP_ETRANSPORT, "cannot open local rank 0's shared "
                           "memory (%s): %s", path, strerror (errno));
    if (fstat (fd, &st) < 0 || (size_t)st.st_size < sizeof (hdr)
        || pread (fd, &hdr, sizeof (hdr), 0) != (ssize_t)sizeof (hdr)
        || hdr.magic != SHM_MAGIC || hdr.local_size != (uint32_t)h->lsize) {
        close (fd);
        return ddpi_error (DDP_ETRANSPORT, "%s is not this node's libddp "
                           "segment", path);
    }
    h->slot_bytes = hdr.slot_bytes;
    h->res_bytes = hdr.res_bytes;
    h->map_len = map_size (h);
    if ((size_t)st.st_size != h->map_len) {
        close (fd);
        return ddpi_error (DDP_ETRANSPORT, "shared memory has the wrong size");
    }
    h->map = mmap (NULL, h->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close (fd);
    if (h->map == MAP_FAILED) {
        h->map = NULL;
        return ddpi_error (DDP_ETRANSPORT, "mmap shared memory: %s",
                           strerror (errno));
    }
    layout (h);
    atomic_fetch_add (&h->hdr->attached, 1);
    return 0;
}

int host_shm_wait_attached (struct host *h)
{
    struct ddpi_waiter w;
    int rc;

    ddpi_wait_init (&w, h->cfg->timeout_s, 0);
    while (atomic_load (&h->hdr->attached) < h->lsize) {
        if ((rc = ddpi_wait_step (&w)) < 0)
            return ddpi_error (DDP_ETIMEDOUT, "only %d of %d local ranks "
                               "attached to shared memory within %g s",
                               (int)atomic_load (&h->hdr->attached), h->lsize,
                               h->cfg->timeout_s);
        if (rc == 1 && (rc = host_check_peers (h)) < 0)
            return rc;
    }
    close (h->memfd);
    h->memfd = -1;
    return 0;
}

void host_shm_destroy (struct host *h)
{
    if (h->map)
        munmap (h->map, h->map_len);
    h->map = NULL;
    if (h->memfd >= 0)
        close (h->memfd);
    h->memfd = -1;
}

double host_grace (struct host *h)
{
    return 1.0 + 0.1 * h->cfg->timeout_s;
}

int host_fault_code (int kind)
{
    return kind == FAULT_TIMEOUT ? DDP_ETIMEDOUT
         : kind == FAULT_LINK ? DDP_ETRANSPORT : DDP_EPEER;
}

static const char *kind_str (int kind)
{
    switch (kind) {
    case FAULT_DIED: return "died";
    case FAULT_ABORTED: return "called ddp_abort";
    case FAULT_TIMEOUT: return "did not arrive within DDP_TIMEOUT";
    case FAULT_LINK: return "lost its node's link";
    }
    return "failed";
}

_Static_assert (sizeof (struct shm_hdr) == 256,
                "the flags after the header stay cache-line aligned");

/* The fault record's kind, waiting (1 ms at most) for a claimer that is
 * still writing it; FAULT_DIED if it never shows (the common case then). */
static int record_kind (struct host *h)
{
    double end = 0;
    int kind;

    while ((kind = atomic_load (&h->hdr->fault_kind)) == 0) {
        double t = ddpi_now ();
        if (end == 0)
            end = t + 1e-3;
        else if (t > end)
            return FAULT_DIED;
    }
    return kind;
}

/* Is global rank r in the segment's fault list? */
static bool listed (struct host *h, int r)
{
    int nlist = h->hdr->fault_nlist;

    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    return ddpi_rank_in (h->hdr->fault_list, nlist, r);
}

/* When the fault list names this node's leader, the first local rank it
 * does not name stands in for the leader in the exchange of lists (the
 * leader holds the links, and it is not there to use them).  Returns that
 * local rank, or -1 when the leader is not listed. */
static int standin (struct host *h)
{
    if (!listed (h, h->local_ranks[0]))
        return -1;
    for (int lr = 1; lr < h->lsize; lr++)
        if (!listed (h, h->local_ranks[lr]))
            return lr;
    return -1;
}

/* How long a stand-in waits for the other leaders' lists: a leader that
 * waits for our node in its exchange gives up there two graces after its
 * own timeout, then gathers lists for one more grace. */
static double standin_window (struct host *h)
{
    return 3 * host_grace (h);
}

/* A timeout in a job of several nodes: ranks on other nodes may be absent
 * too, and only their leaders know.  The leader (which sent its own list
 * already), or the rank that stands in for an absent one, merges the
 * others' lists; the other local ranks wait for that. */
static void complete_list (struct host *h)
{
    struct ddpi_waiter w;
    int sub = standin (h);
    double window = sub < 0 ? host_grace (h) : standin_window (h);

    if (h->lrank != 0 && h->lrank != sub) {
        ddpi_wait_init (&w, window + 0.5, h->spin_us);
        while (!atomic_load (&h->hdr->fault_final)
               && ddpi_wait_step (&w) >= 0)
            ;
        return;
    }
    if (h->lrank == 0)
        host_tcp_gather_faults (h, window);
    else
        host_tcp_standin_faults (h, window);
    atomic_store (&h->hdr->fault_final, 1);
}

void host_fault_merge (struct host *h, const int32_t *in, int nlist, int n)
{
    int32_t *have = h->hdr->fault_list, out[FAULT_LIST_MAX] = { 0 };
    int32_t ranks[FAULT_LIST_MAX];
    int i = 0, j = 0, k = 0, dup = 0, nhave = h->hdr->fault_nlist;

    if (nlist < 1)
        return;
    if (n < nlist || n > h->size)   /* from the wire: keep it sane */
        n = n > h->size ? h->size : nlist;
    if (nhave < 0 || nhave > FAULT_LIST_MAX)
        nhave = 0;
    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    memcpy (ranks, in, (size_t)nlist * sizeof (int32_t));
    ddpi_sort_ranks (ranks, nlist);
    while ((i < nhave || j < nlist) && k < FAULT_LIST_MAX) {
        if (j >= nlist || (i < nhave && have[i] < ranks[j]))
            out[k++] = have[i++];
        else if (i >= nhave || ranks[j] < have[i])
            out[k++] = ranks[j++];
        else {
            out[k++] = have[i++];
            j++;
            dup++;
        }
    }
    memcpy (have, out, (size_t)k * sizeof (int32_t));
    h->hdr->fault_nlist = k;
    h->hdr->fault_n += n - dup;
    if (h->hdr->fault_n < k)
        h->hdr->fault_n = k;
}

/* A record whose list is not (yet) sound names the claimer's first rank. */
static void check_list (struct host *h)
{
    int n = h->hdr->fault_n, nlist = h->hdr->fault_nlist;

    if (nlist < 1 || nlist > FAULT_LIST_MAX || n < nlist) {
        h->hdr->fault_list[0] = atomic_load (&h->hdr->fault_rank) - 1;
        h->hdr->fault_n = h->hdr->fault_nlist = 1;
    }
}

/* Log and keep the fault now in the segment; returns its code. */
static int report (struct host *h)
{
    int kind = record_kind (h);
    int who = atomic_load (&h->hdr->fault_reporter);
    int code = host_fault_code (kind);
    int n, nlist;

    check_list (h);
    if (h->lrank == 0 && h->nnodes > 1 && !h->fault_sent) {
        h->fault_sent = true;
        host_tcp_send_fault (h, h->hdr->fault_list, h->hdr->fault_nlist,
                             h->hdr->fault_n, kind, who);
    }
    if (!h->broken && h->nnodes > 1 && kind == FAULT_TIMEOUT) {
        complete_list (h);
        check_list (h);
    }
    n = h->hdr->fault_n;
    nlist = h->hdr->fault_nlist;
    if (!h->broken) {
        char tmo[64] = "", list[192], more[48] = "", by[48] = "";
        h->broken = code;
        if (kind == FAULT_TIMEOUT)
            snprintf (tmo, sizeof (tmo), " (%g s)", h->cfg->timeout_s);
        if (n > nlist)
            snprintf (more, sizeof (more), " (%d ranks in all)", n);
        if (who != h->rank)
            snprintf (by, sizeof (by), " (noticed by rank %d)", who);
        ddpi_error (code, "rank%s %s%s %s%s%s", n > 1 ? "s" : "",
                    ddpi_format_ranks (list, sizeof (list),
                                       h->hdr->fault_list, nlist),
                    more, kind_str (kind), tmo, by);
    }
    return h->broken;
}

int host_fault_claim (struct host *h, const int *ranks, int nlist, int n,
                      int kind, int reporter)
{
    int32_t zero = 0;
    int i;

    if (!atomic_compare_exchange_strong (&h->hdr->fault_rank, &zero,
                                         ranks[0] + 1))
        return 0;
    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    for (i = 0; i < nlist; i++)
        h->hdr->fault_list[i] = ranks[i];
    ddpi_sort_ranks (h->hdr->fault_list, nlist);
    h->hdr->fault_nlist = nlist;
    h->hdr->fault_n = n > nlist ? n : nlist;
    atomic_store (&h->hdr->fault_reporter, reporter);
    atomic_store (&h->hdr->fault_kind, kind);   /* last: the record is whole */
    return 1;
}

int host_fault_set (struct host *h, const int *ranks, int n, int kind)
{
    char list[192];

    if (!h->hdr) {
        h->broken = host_fault_code (kind);
        return ddpi_error (h->broken, "rank%s %s %s", n > 1 ? "s" : "",
                           ddpi_format_ranks (list, sizeof (list), ranks, n),
                           kind_str (kind));
    }
    host_fault_claim (h, ranks, n, n, kind, h->rank);
    return report (h);
}

int host_fault (struct host *h, int bad_rank, int kind)
{
    return host_fault_set (h, &bad_rank, 1, kind);
}

int host_check_fault (struct host *h)
{
    if (atomic_load_explicit (&h->hdr->fault_rank, memory_order_relaxed) == 0)
        return 0;
    return report (h);
}

/* The local index of a local rank whose process is gone, or -1. */
static int gone_peer (struct host *h)
{
    struct pollfd pfd[64];
    int i, n;

    for (i = 0; i < h->lsize; i += n) {
        int j;
        n = h->lsize - i < 32 ? h->lsize - i : 32;
        if (n <= 0)
            break;
        for (j = 0; j < n; j++) {
            pfd[j].fd = h->pidfds[i + j];
            pfd[j].events = POLLIN;
            pfd[j].revents = 0;
        }
        if (poll (pfd, (nfds_t)n & 63, 0) > 0) {
            for (j = 0; j < n; j++)
                if (pfd[j].revents)
                    return i + j;
        }
        for (j = 0; j < n; j++) {
            if (pfd[j].fd < 0 && i + j != h->lrank
                && kill (h->lpids[i + j], 0) < 0 && errno == ESRCH)
                return i + j;
        }
    }
    return -1;
}

int host_check_peers (struct host *h)
{
    int lr = gone_peer (h);

    return lr < 0 ? 0 : host_fault (h, h->local_ranks[lr], FAULT_DIED);
}

static inline uint64_t load_flag (struct host *h, int lr, int which)
{
    struct shm_flags *f = &h->flags[lr];
    _Atomic uint64_t *p = which == 0 ? &f->seq : which == 1 ? &f->red : &f->fin;
    return atomic_load_explicit (p, memory_order_acquire);
}

/* An arrival wait on local rank lr timed out: record every local rank that
 * has not reached step s (ascending, as local_ranks is), not only lr. */
static int absent_fault (struct host *h, int lr, uint64_t s)
{
    int list[FAULT_LIST_MAX];
    int j, n = 0, nlist = 0;

    for (j = 0; j < h->lsize; j++) {
        if (j == h->lrank || load_flag (h, j, 0) >= s)
            continue;
        if (nlist < FAULT_LIST_MAX)
            list[nlist++] = h->local_ranks[j];
        n++;
    }
    if (n == 0)     /* arrived meanwhile: still a timeout of the waited one */
        return host_fault (h, h->local_ranks[lr], FAULT_TIMEOUT);
    host_fault_claim (h, list, nlist, n, FAULT_TIMEOUT, h->rank);
    return host_check_fault (h);
}

int host_wait_flag (struct host *h, int lr, int which, uint64_t s)
{
    struct ddpi_waiter w;
    bool extended = false;
    int rc, gone;

    if (load_flag (h, lr, which) >= s)
        return 0;
    /* At the deadline a rank that has not arrived (seq) is absent.  One
     * that has arrived but whose result (red, fin) is late is waiting on
     * others itself (the leader on its node, then on the other leaders,
     * which allows two graces): it gets three more graces, so that the
     * first report names the rank that never came. */
    ddpi_wait_init (&w, h->cfg->timeout_s, h->spin_us);
    while (load_flag (h, lr, which) < s) {
        if ((rc = host_check_fault (h)) < 0)
            return rc;
        rc = ddpi_wait_step (&w);
        if (rc < 0 && (which == 0 || load_flag (h, lr, 0) < s))
            return absent_fault (h, lr, s);
        if (rc < 0 && !extended) {
            extended = true;
            ddpi_wait_extend (&w, 3 * host_grace (h));
            continue;
        }
        if (rc < 0)
            return host_fault (h, h->local_ranks[lr], FAULT_TIMEOUT);
        if (rc == 1 && (gone = gone_peer (h)) >= 0) {
            /* A rank may set the flag and exit at once, its last collective
             * done: read after its exit was seen, the flag tells a peer that
             * finished from one that died (t0300 once named rank 0 "died"
             * after it had finished). */
            if (load_flag (h, lr, which) >= s)
                break;
            return host_fault (h, h->local_ranks[gone], FAULT_DIED);
        }
    }
    return 0;
}

int host_wait_all (struct host *h, int which, uint64_t s)
{
    int lr, rc;

    for (lr = 0; lr < h->lsize; lr++) {
        if (lr == h->lrank)
            continue;
        if ((rc = host_wait_flag (h, lr, which, s)) < 0)
            return rc;
    }
    return 0;
}
