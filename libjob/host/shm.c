/* shm.c - the node's shared segment, waiting on its flags (with its
 * deadlines), and a rank's scratch buffers (transport.h).  A wait that
 * ends on something it saw reports it (h->ev, HOST_EVENT); it calls
 * nothing above the transport. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "transport.h"
#include "wait.h"

static size_t align_up (size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* The header and the ranks' flags, in whole pages. */
static size_t ctl_bytes (const struct host *h)
{
    return align_up (sizeof (struct shm_hdr)
                     + (size_t)h->lsize * sizeof (struct shm_flags),
                     HOST_PAGE);
}

/* Lay out the mapping; the sizes come from the header. */
static void layout (struct host *h)
{
    size_t ctl = ctl_bytes (h);
    size_t bank = (size_t)h->lsize * h->slot_bytes + h->res_bytes;

    h->hdr = h->map;
    h->flags = (struct shm_flags *)((char *)h->map + sizeof (struct shm_hdr));
    h->bank[0] = (char *)h->map + ctl;
    h->bank[1] = h->bank[0] + bank;
    h->ring = h->bank[1] + bank;
}

static size_t map_size (struct host *h)
{
    return ctl_bytes (h)
           + 2 * ((size_t)h->lsize * h->slot_bytes + h->res_bytes)
           + (size_t)h->lsize * HOST_RING_RANK_BYTES;
}

int host_shm_create (struct host *h)
{
    size_t slot = (8u << 20) / (size_t)h->lsize;
    long v;
    int set = ddpi_env_long ("DDP_SHM_SLOT", &v);

    if (set < 0)
        return set;
    if (set)
        slot = (size_t)v;
    else if (slot > (1u << 20))
        slot = 1u << 20;
    else if (slot < 65536)
        slot = 65536;
    h->slot_bytes = align_up (slot, 64);
    h->res_bytes = h->slot_bytes;
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

_Static_assert (sizeof (struct shm_hdr) == 512,
                "the flags after the header stay cache-line aligned");

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

    return lr < 0 ? 0 : host_event (h, HOST_EV_PEER_GONE, h->local_ranks[lr]);
}

static inline _Atomic uint64_t *flag (struct host *h, int lr, int which)
{
    struct shm_flags *f = &h->flags[lr];
    return which == 0 ? &f->seq : which == 1 ? &f->red : &f->fin;
}

static inline uint64_t load_flag (struct host *h, int lr, int which)
{
    return atomic_load_explicit (flag (h, lr, which), memory_order_acquire);
}

/* The futex word of a 64-bit flag: its low half, which changes whenever
 * the flag does (a step moves it by one). */
static uint32_t *futex_word (_Atomic uint64_t *f)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)f + 1;
#else
    return (uint32_t *)f;
#endif
}

static long futex (uint32_t *word, int op, uint32_t val,
                   const struct timespec *ts)
{
    return syscall (SYS_futex, word, op, val, ts, NULL, 0);
}

/* A post and a sleeper meet as in Dekker's algorithm: the post stores the
 * flag, then reads the sleepers; a sleeper counts itself, then reads the
 * flag (nap_on_flag).  With a full fence between the two on both sides,
 * either the post sees the sleeper and wakes it, or the sleeper sees the
 * new step and does not sleep; the kernel compares the word again under
 * its lock.  The post's fence waits for its store to leave the store
 * buffer, which is for the polled line to come back from the node-mates
 * reading it: 1 x 2 barrier 0.30 -> 0.51 us on the AMD machine.  So a post
 * fences only where waiters sleep soon (h->post_fence: no spinning, where
 * ranks outnumber the CPUs); elsewhere a wait sleeps only after 2 ms of
 * spinning and 20 ms of yielding, and a wake missed in the few hundred
 * nanoseconds the store takes to drain ends at the sleep's bound, 2 ms. */
void host_post (struct host *h, int which, uint64_t s)
{
    _Atomic uint64_t *f = flag (h, h->lrank, which);

    atomic_store_explicit (f, s, memory_order_release);
    if (h->post_fence)
        atomic_thread_fence (memory_order_seq_cst);
    if (atomic_load_explicit (&h->flags[h->lrank].sleepers[which],
                              memory_order_relaxed) != 0)
        futex (futex_word (f), FUTEX_WAKE, INT_MAX, NULL);
}

/* What a wait sleeps on (host_wait_flag). */
struct flag_nap {
    struct host *h;
    int lr, which;
    uint64_t s;
};

/* ddpi_wait_nap's hook: sleep on local rank lr's flag until a post wakes
 * it (host_post) or for at most seconds.  Returns 0, or -1 when this
 * kernel has no futex (the caller naps instead). */
static int nap_on_flag (void *arg, double seconds)
{
    struct flag_nap *n = arg;
    _Atomic uint64_t *f = flag (n->h, n->lr, n->which);
    _Atomic uint32_t *count = &n->h->flags[n->lr].sleepers[n->which];
    struct timespec ts = { (time_t)seconds,
                           (long)((seconds - (double)(time_t)seconds) * 1e9) };
    uint64_t v;
    int rc = 0;

    atomic_fetch_add_explicit (count, 1, memory_order_seq_cst);
    v = atomic_load_explicit (f, memory_order_seq_cst);
    if (v < n->s && futex (futex_word (f), FUTEX_WAIT, (uint32_t)v, &ts) < 0
        && errno == ENOSYS)
        rc = -1;
    atomic_fetch_sub_explicit (count, 1, memory_order_relaxed);
    return rc;
}

/* Every ~2 ms of a wait: a lane takes FAULT frames off its links, and a
 * wait for a result restarts its clock while the rank it waits for makes
 * progress with other nodes (*beat: the last value seen). */
static void wait_check (struct host *h, struct ddpi_waiter *w, int lr,
                        int which, uint64_t *beat)
{
    uint64_t b;

    if (h->lk)
        host_tcp_poll (h);
    if (which == 0)
        return;
    b = atomic_load_explicit (&h->flags[lr].beat, memory_order_relaxed);
    if (b != *beat) {
        *beat = b;
        ddpi_wait_restart (w);
    }
}

int host_wait_flag (struct host *h, int lr, int which, uint64_t s)
{
    struct ddpi_waiter w;
    struct flag_nap nap = { h, lr, which, s };
    bool extended = false;
    uint64_t beat = atomic_load (&h->flags[lr].beat);
    int rc, gone;

    if (load_flag (h, lr, which) >= s)
        return 0;
    /* At the deadline a rank that has not arrived (seq) is absent.  One
     * that has arrived but whose result (red, fin) is late is waiting on
     * others itself (the leader on the other nodes, whose wait began a
     * little later): it gets HOST_LATE_S more, so that its own wait runs
     * out first and the nodes' lists name the rank that never came. */
    ddpi_wait_init (&w, h->cfg->timeout_s, h->spin_us);
    ddpi_wait_yield (&w, h->yield_s);
    ddpi_wait_nap (&w, nap_on_flag, &nap);
    while (load_flag (h, lr, which) < s) {
        if (host_record_stops (h))
            return host_event (h, HOST_EV_RECORD, -1);
        rc = ddpi_wait_step (&w);
        if (rc < 0 && (which == 0 || load_flag (h, lr, 0) < s)) {
            h->ev.lr = lr;
            h->ev.step = s;
            return host_event (h, HOST_EV_ABSENT, h->local_ranks[lr]);
        }
        if (rc < 0 && !extended) {
            extended = true;
            ddpi_wait_extend (&w, HOST_LATE_S);
            continue;
        }
        if (rc < 0)
            return host_event (h, HOST_EV_LATE, h->local_ranks[lr]);
        if (rc == 1)
            wait_check (h, &w, lr, which, &beat);
        if (rc == 1 && (gone = gone_peer (h)) >= 0) {
            /* A rank may set the flag and exit at once, its last collective
             * done: read after its exit was seen, the flag tells a peer that
             * finished from one that died (t0300 once named rank 0 "died"
             * after it had finished). */
            if (load_flag (h, lr, which) >= s)
                break;
            return host_event (h, HOST_EV_PEER_GONE, h->local_ranks[gone]);
        }
    }
    return 0;
}

int host_wait_first (struct host *h, int n, int which, uint64_t s)
{
    int lr, rc;

    for (lr = 0; lr < n && lr < h->lsize; lr++) {
        if (lr == h->lrank)
            continue;
        if ((rc = host_wait_flag (h, lr, which, s)) < 0)
            return rc;
    }
    return 0;
}

int host_wait_all (struct host *h, int which, uint64_t s)
{
    return host_wait_first (h, h->lsize, which, s);
}

void *host_scratch (struct host *h, int i, size_t len)
{
    void *p;

    if (len <= h->scratch_len[i])
        return h->scratch[i];
    if (posix_memalign (&p, HOST_PAGE, len ? len : 1) != 0) {
        ddpi_error (DDP_ENOMEM, "out of memory (%zu bytes of scratch)", len);
        return NULL;
    }
    free (h->scratch[i]);
    h->scratch[i] = p;
    h->scratch_len[i] = len;
    return p;
}

/* ---------------------------------------------------------- single copy */

/* What the probe expects to read at a node-mate's offered address. */
static const uint64_t cma_probe = 0x6464702d636d6121ULL;   /* "ddp-cma!" */

void host_cma_offer (struct host *h)
{
    atomic_store (&h->flags[h->lrank].addr, (uint64_t)(uintptr_t)&cma_probe);
}

/* Read len bytes at addr in process pid into dst.  Returns 0, or -1 with
 * errno (a short read: EFAULT). */
static int vm_read (pid_t pid, uint64_t addr, void *dst, size_t len)
{
    while (len > 0) {
        struct iovec l = { dst, len };
        struct iovec r = { (void *)(uintptr_t)addr, len };
        ssize_t n = process_vm_readv (pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            if (n == 0)
                errno = EFAULT;
            return -1;
        }
        dst = (char *)dst + n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

void host_cma_vote (struct host *h)
{
    uint32_t vote = h->cma_refused ? 2 : 1;

    if (h->cma_refused)
        ddpi_debug ("single copy off here: DDP_CMA=0");

    for (int lr = 0; lr < h->lsize && vote == 1; lr++) {
        uint64_t v = 0;
        if (lr == h->lrank)
            continue;
        if (vm_read (h->lpids[lr], atomic_load (&h->flags[lr].addr), &v,
                     sizeof (v)) < 0 || v != cma_probe) {
            ddpi_debug ("single copy off: cannot read local rank %d's "
                        "memory (process_vm_readv: %s)", lr,
                        v ? "unexpected data" : strerror (errno));
            vote = 2;
        }
    }
    atomic_store (&h->flags[h->lrank].cma, vote);
}

bool host_cma_agreed (struct host *h)
{
    for (int lr = 0; lr < h->lsize; lr++)
        if (atomic_load (&h->flags[lr].cma) != 1)
            return false;
    return true;
}

void host_cma_post (struct host *h, const void *p, const void *q)
{
    atomic_store_explicit (&h->flags[h->lrank].addr, (uint64_t)(uintptr_t)p,
                           memory_order_relaxed);
    atomic_store_explicit (&h->flags[h->lrank].addr2, (uint64_t)(uintptr_t)q,
                           memory_order_relaxed);
}

/* Local rank lr's buffer (which: 0 its p, 1 its q) of its last posted
 * step (host_cma_post). */
static uint64_t posted_addr (struct host *h, int lr, int which)
{
    return atomic_load_explicit (which ? &h->flags[lr].addr2
                                       : &h->flags[lr].addr,
                                 memory_order_relaxed);
}

/* A copy whose destination lies 1-31 bytes past its source modulo a page
 * is 20-25x slower on AMD CPUs with FSRM, whose rep movsb glibc's memcpy
 * and the kernel's copies (process_vm_readv) use from 2 KiB (glibc bug
 * 30994): a 1 MiB all-reduce of 1 x 2 by single copy took 473-487 us into
 * malloc's scratch (16 bytes into its page) against page-aligned buffers,
 * and 179-183 us into page-aligned scratch (doc/benchmarks.md). */
size_t host_cma_page_off (struct host *h, int lr, int which, size_t off)
{
    return (size_t)((posted_addr (h, lr, which) + off) & (HOST_PAGE - 1));
}

int host_cma_read (struct host *h, int lr, int which, size_t off, void *dst,
                   size_t len)
{
    uint64_t addr = posted_addr (h, lr, which);

    if (vm_read (h->lpids[lr], addr + off, dst, len) == 0)
        return 0;
    if (errno == ESRCH)
        return host_event (h, HOST_EV_PEER_GONE, h->local_ranks[lr]);
    return ddpi_error (DDP_ETRANSPORT, "reading local rank %d's buffer "
                       "(process_vm_readv): %s", lr, strerror (errno));
}
