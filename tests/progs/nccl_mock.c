/* nccl_mock.c - a stand-in for libcudart and libnccl, for LD_PRELOAD.
 *
 * Lets machines without a GPU run the NCCL backend's own logic for real:
 * device selection, the bootstrap fence, pointer classification, host
 * staging, in-place and gather handling, the stream variants, and above all
 * the failure paths (hangs, asynchronous errors, init that never finishes),
 * which a real GPU rarely shows on demand.  Compiled against the real
 * cuda_runtime_api.h and nccl.h, so every prototype is checked.
 *
 * "Device" memory is host memory the mock hands out and remembers; an
 * operation runs when it is enqueued, for one rank (world size 1 moves data;
 * a larger communicator never finishes initializing, like NCCL without its
 * peers).  ncclReduceScatter moves this rank's block of sendbuff (the
 * whole result in a world of one).
 *
 * ncclCommSplit returns ncclInProgress with a new communicator that is
 * ready at its first ncclCommGetAsyncError (NCCL_SPLIT_NOCOLOR: NULL, and
 * ncclSuccess at once).  What it models: in a world of one, NCCL exactly
 * (a communicator of one).  With MOCK_NCCL_PEERS=fake only what one
 * process can see: the mock does not know the other ranks' colours and
 * keys, so the new communicator has one rank, rank 0, whatever the group
 * (its collectives complete at once, moving this rank's data; a
 * reduce-scatter moves block 0); the backend takes a group's rank and
 * size from the group's bootstrap, not from NCCL.  A split communicator's
 * collectives count in MOCK_NCCL_HANG_AFTER/ERROR_AFTER and in the counts
 * as any other's.  MOCK_NCCL_PEER_DIR counts and waits for the
 * collectives of the communicators init made (the world) only: neither
 * ncclCommSplit nor a split communicator's collectives are counted there,
 * so every rank of the world, in a group or not, keeps the same count,
 * and a group's ranks are not watched through DIR.  Built a second time
 * as nccl_mock_nosplit.so (MOCK_NO_SPLIT_SYMBOL), without ncclCommSplit:
 * an NCCL older than 2.18 to the backend.
 *
 * Controls, read at each call:
 *   MOCK_CUDA_DEVICES=N       devices (default: the CUDA_VISIBLE_DEVICES
 *                             entries, else 1; 0: cudaErrorNoDevice)
 *   MOCK_NCCL_INIT=hang|fail  init (and ncclCommSplit's new communicator)
 *                             stays in progress / fails
 *   MOCK_NCCL_HANG_AFTER=N    after N collectives the stream never drains
 *   MOCK_NCCL_ERROR_AFTER=N   after N collectives the communicator reports
 *                             ncclRemoteError (and the stream stalls)
 *   MOCK_NCCL_FINALIZE=hang   ncclCommFinalize never completes
 *   MOCK_CUDA_DRIVER=none|stub|mismatch
 *                             CUDA is there in name only: every call fails
 *                             as libcudart does without libcuda.so.1 (or
 *                             with one too old), with the toolkit's stub
 *                             libcuda, or with a kernel module that does not
 *                             match the driver library
 *   MOCK_NCCL_PEERS=fake      a communicator of several ranks forms, and
 *                             its collectives complete at once moving only
 *                             this rank's data (for set-up at scale: every
 *                             rank gets through ddp_init and finalize)
 *   MOCK_NCCL_PEER_DIR=DIR    with MOCK_NCCL_PEERS=fake, the ranks see each
 *                             other through files in DIR (one per rank:
 *                             its pid and how many collectives it
 *                             enqueued), as NCCL's connections would: a
 *                             rank's stream completes only once every peer
 *                             enqueued as many collectives (a rank that
 *                             never enters one leaves the others waiting),
 *                             and once a peer's process has exited the
 *                             communicator reports ncclRemoteError with
 *                             NCCL's words for a closed socket (and the
 *                             stream stalls); a gather's sends and
 *                             receives are not counted
 *   MOCK_GPU_ID=rank          the GPU identity comes from the rank
 *                             (SLURM_PROCID, PMIX_RANK or RANK): every rank
 *                             its own
 *   MOCK_NCCL_AVG_TAIL=N      NCCL 2.28.3's defect: an ncclAllReduce or
 *                             ncclReduce (on its root) with ncclAvg on a
 *                             floating type, out of place (sendbuff !=
 *                             recvbuff), of more than 1048576 elements
 *                             leaves the last N elements of recvbuff
 *                             unwritten (N=3 is what an H100 showed for
 *                             1048579 and 4194307 elements)
 *   MOCK_CUDA_COUNTS=1        at exit, log how many times
 *                             cudaPointerGetAttributes was called and how
 *                             many collectives ran ("mock: counts: ...")
 * Otherwise the GPU identity comes from this process's CUDA_VISIBLE_DEVICES
 * entry for the device (so tasks bound to one fake gres GPU share a UUID).
 * Abort, finalize and destroy are logged to stderr as "mock: ..." lines.
 *
 * Memory as CUDA lays it out: device and managed allocations come from one
 * reserved range of addresses (an arena, like CUDA's own reservation), so
 * host memory (malloc, cudaMallocHost) never takes an address that device
 * memory had; a freed device range may come back from the next device or
 * managed allocation (as cudaMalloc's addresses do), and until then it is
 * inaccessible (PROT_NONE), so a stale device pointer faults.  Each
 * allocation remembers the device that was current (cudaSetDevice).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define MAX_ALLOCS 4096
#define ARENA_MAX ((size_t)64 << 30) /* address space, not memory */
#define ARENA_MIN ((size_t)256 << 20)

struct alloc {
    void *p;
    size_t size;
    size_t len;          /* pages taken from the arena (device, managed) */
    enum cudaMemoryType type;
    int device;          /* current when it was allocated */
};

static struct alloc allocs[MAX_ALLOCS];
static int current_device;
static cudaError_t last_error = cudaSuccess;
static long ops_done;   /* collectives, every communicator's */
static long world_ops;  /* those of communicators made by init (PEER_DIR) */
static long attr_calls;

/* The arena: device and managed allocations, first fit in the holes that
 * freed ones left, else at its top. */
static char *arena;
static size_t arena_size, arena_top;
static struct hole {
    char *p;
    size_t n;
} holes[MAX_ALLOCS];
static int nholes;

struct ncclComm {
    int nranks;
    int rank;
    int init_hang;
    ncclResult_t async;
    int dead_peer;       /* MOCK_NCCL_PEER_DIR: the peer found gone, or -1 */
    bool split;          /* made by ncclCommSplit (not watched through DIR) */
};

/* MOCK_NCCL_PEER_DIR: what a rank shows its peers, in DIR/rank.R. */
struct shown {
    volatile long pid;
    volatile long ops;   /* collectives enqueued */
};

static struct ncclComm *the_comm; /* the live communicator (one at a time) */
static struct shown *mine;        /* this rank's file, mapped */
static struct shown **theirs;     /* the peers' files, mapped when seen */


static long env_long (const char *name, long dflt)
{
    const char *s = getenv (name);
    return s && *s ? strtol (s, NULL, 10) : dflt;
}

/* What libcudart answers without a usable driver, or cudaSuccess. */
static cudaError_t driver_error (void)
{
    const char *d = getenv ("MOCK_CUDA_DRIVER");

    if (d && strcmp (d, "none") == 0)
        return cudaErrorInsufficientDriver;
    if (d && strcmp (d, "stub") == 0)
        return cudaErrorStubLibrary;
    if (d && strcmp (d, "mismatch") == 0)
        return cudaErrorSystemDriverMismatch;
    return cudaSuccess;
}

/* Like CUDA: as many devices as CUDA_VISIBLE_DEVICES lists, else one. */
static int ndevices (void)
{
    const char *s = getenv ("CUDA_VISIBLE_DEVICES");
    int n = 1;

    if (driver_error () != cudaSuccess)
        return 0;
    if (s && *s)
        for (n = 1; *s; s++)
            n += *s == ',';
    return (int)env_long ("MOCK_CUDA_DEVICES", n);
}

/* MOCK_NCCL_PEERS=fake: communicators of several ranks work. */
static bool fake_peers (void)
{
    const char *s = getenv ("MOCK_NCCL_PEERS");
    return s && strcmp (s, "fake") == 0;
}

static bool stalled (void)
{
    long h = env_long ("MOCK_NCCL_HANG_AFTER", -1);
    long e = env_long ("MOCK_NCCL_ERROR_AFTER", -1);
    return (h >= 0 && ops_done > h) || (e >= 0 && ops_done > e);
}

static cudaError_t fail (cudaError_t e)
{
    last_error = e;
    return e;
}

static struct alloc *find (const void *p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].p && (const char *)p >= (const char *)allocs[i].p
            && (const char *)p < (const char *)allocs[i].p + allocs[i].size)
            return &allocs[i];
    return NULL;
}

/* n bytes (a multiple of the page size) of the arena, readable and
 * zeroed, or NULL. */
static char *arena_take (size_t n)
{
    char *p = NULL;

    /* The largest reservation the system grants (valgrind grants less). */
    for (size_t sz = ARENA_MAX; !arena && sz >= ARENA_MIN; sz /= 2) {
        void *a = mmap (NULL, sz, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a != MAP_FAILED) {
            arena = a;
            arena_size = sz;
        }
    }
    if (!arena)
        return NULL;
    for (int i = 0; i < nholes && !p; i++)
        if (holes[i].n >= n) {
            p = holes[i].p;
            holes[i].p += n;
            holes[i].n -= n;
            if (holes[i].n == 0)
                holes[i] = holes[--nholes];
        }
    if (!p && arena_top + n <= arena_size) {
        p = arena + arena_top;
        arena_top += n;
    }
    if (p && mprotect (p, n, PROT_READ | PROT_WRITE) < 0)
        return NULL; /* lost to the arena: only when the system is out */
    return p;
}

/* Give n bytes at p back to the arena: freed pages, no access. */
static void arena_give (char *p, size_t n)
{
    madvise (p, n, MADV_DONTNEED);
    mprotect (p, n, PROT_NONE);
    if (nholes < MAX_ALLOCS)
        holes[nholes++] = (struct hole){p, n};
}

static bool in_arena (enum cudaMemoryType t)
{
    return t == cudaMemoryTypeDevice || t == cudaMemoryTypeManaged;
}

static cudaError_t mock_alloc (void **p, size_t size, enum cudaMemoryType t)
{
    size_t page = (size_t)sysconf (_SC_PAGESIZE);

    if (ndevices () < 1)
        return fail (cudaErrorNoDevice);
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].p) {
            struct alloc *a = &allocs[i];
            a->size = size ? size : 1;
            a->len = in_arena (t) ? (a->size + page - 1) / page * page : 0;
            a->p = in_arena (t) ? (void *)arena_take (a->len)
                                : calloc (1, a->size);
            if (!a->p)
                return fail (cudaErrorMemoryAllocation);
            a->type = t;
            a->device = current_device;
            *p = a->p;
            return cudaSuccess;
        }
    return fail (cudaErrorMemoryAllocation);
}

static cudaError_t mock_free (void *p)
{
    for (int i = 0; p && i < MAX_ALLOCS; i++)
        if (allocs[i].p == p) {
            if (in_arena (allocs[i].type))
                arena_give (p, allocs[i].len);
            else
                free (p);
            allocs[i].p = NULL;
            return cudaSuccess;
        }
    return p ? fail (cudaErrorInvalidValue) : cudaSuccess;
}

__attribute__ ((destructor)) static void log_counts (void)
{
    if (env_long ("MOCK_CUDA_COUNTS", 0) > 0)
        fprintf (stderr, "mock: counts: cudaPointerGetAttributes %ld,"
                 " collectives %ld\n", attr_calls, ops_done);
}

/* ---- MOCK_NCCL_PEER_DIR: peers through files --------------------------- */

static const char *peer_dir (void)
{
    const char *d = getenv ("MOCK_NCCL_PEER_DIR");
    return d && *d && fake_peers () ? d : NULL;
}

/* Map DIR/rank.R read-only, or NULL while it is not there. */
static struct shown *map_rank (int r)
{
    char path[4096];
    void *p;
    int fd;

    snprintf (path, sizeof (path), "%s/rank.%d", peer_dir (), r);
    if ((fd = open (path, O_RDONLY | O_CLOEXEC)) < 0)
        return NULL;
    p = mmap (NULL, sizeof (struct shown), PROT_READ, MAP_SHARED, fd, 0);
    close (fd);
    return p == MAP_FAILED ? NULL : p;
}

/* This rank joins DIR as c->rank: its file is written whole under another
 * name, then renamed, so that a peer never maps a short one. */
static void peers_join (struct ncclComm *c)
{
    char tmp[4096], path[4096];
    void *p;
    int fd;

    if (!peer_dir ())
        return;
    snprintf (tmp, sizeof (tmp), "%s/.rank.%d.%ld", peer_dir (), c->rank,
              (long)getpid ());
    snprintf (path, sizeof (path), "%s/rank.%d", peer_dir (), c->rank);
    if ((fd = open (tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
        return;
    p = ftruncate (fd, sizeof (struct shown)) < 0
            ? MAP_FAILED
            : mmap (NULL, sizeof (struct shown), PROT_READ | PROT_WRITE,
                    MAP_SHARED, fd, 0);
    close (fd);
    if (p == MAP_FAILED)
        return;
    mine = p;
    mine->ops = world_ops;
    mine->pid = getpid ();
    theirs = calloc ((size_t)c->nranks, sizeof (*theirs));
    if (rename (tmp, path) < 0)
        mine = NULL;
}

/* Has process pid exited (gone, or a zombie nobody reaped yet)? */
static bool exited (long pid)
{
    char path[64], st[512];
    const char *p;
    FILE *f;
    size_t n;

    snprintf (path, sizeof (path), "/proc/%ld/stat", pid);
    if (!(f = fopen (path, "r")))
        return true;
    n = fread (st, 1, sizeof (st) - 1, f);
    fclose (f);
    st[n] = '\0';
    p = strrchr (st, ')'); /* "pid (comm) S ..." */
    return !p || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X';
}

/* Are the peers as far as this rank?  A peer that exited breaks c. */
static bool peers_ready (struct ncclComm *c)
{
    bool ready = true;

    if (!mine || !theirs || c->async != ncclSuccess || c->split)
        return c->async == ncclSuccess;
    for (int r = 0; r < c->nranks; r++) {
        if (r == c->rank)
            continue;
        if (!theirs[r] && !(theirs[r] = map_rank (r)))
            return false;
        if (theirs[r]->ops >= world_ops)
            continue;
        /* Behind and gone: it never comes.  Its count is read again once
         * it is known to be gone (it may have got this far just before). */
        if (exited (theirs[r]->pid) && theirs[r]->ops < world_ops) {
            c->async = ncclRemoteError;
            c->dead_peer = r;
            return false;
        }
        ready = ready && theirs[r]->ops >= world_ops; /* arrived meanwhile */
    }
    return ready;
}

/* ---- CUDA runtime ------------------------------------------------------ */

cudaError_t cudaGetDeviceCount (int *count)
{
    if (driver_error () != cudaSuccess)
        return fail (driver_error ());
    if (ndevices () < 1)
        return fail (cudaErrorNoDevice);
    *count = ndevices ();
    return cudaSuccess;
}

cudaError_t cudaSetDevice (int device)
{
    if (device < 0 || device >= ndevices ())
        return fail (cudaErrorInvalidDevice);
    current_device = device;
    return cudaSuccess;
}

/* The identity of device d: its CUDA_VISIBLE_DEVICES entry as a number
 * (d if unset), or with MOCK_GPU_ID=rank this process's rank. */
static unsigned entry_of (int d)
{
    const char *s = getenv ("CUDA_VISIBLE_DEVICES");
    const char *id = getenv ("MOCK_GPU_ID");

    if (id && strcmp (id, "rank") == 0)
        return (unsigned)env_long ("SLURM_PROCID",
                                   env_long ("PMIX_RANK",
                                             env_long ("RANK", 0)));
    for (int i = 0; s && i < d; i++) {
        s = strchr (s, ',');
        s = s ? s + 1 : NULL;
    }
    return s ? (unsigned)strtoul (s, NULL, 10) : (unsigned)d;
}

cudaError_t cudaDeviceGetPCIBusId (char *busid, int len, int device)
{
    if (device < 0 || device >= ndevices ())
        return fail (cudaErrorInvalidDevice);
    snprintf (busid, (size_t)len, "0000:%02x:00.0", 0x10 + entry_of (device));
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties (struct cudaDeviceProp *prop, int device)
{
    if (device < 0 || device >= ndevices ())
        return fail (cudaErrorInvalidDevice);
    memset (prop, 0, sizeof (*prop));
    snprintf (prop->name, sizeof (prop->name), "mock GPU %u",
              entry_of (device));
    unsigned e = entry_of (device);
    for (int i = 0; i < 16; i++)
        prop->uuid.bytes[i] = (char)(i < 4 ? e >> (8 * i) : 0x40u + (unsigned)i);
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion (int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion (int *v)
{
    *v = driver_error () != cudaSuccess ? 0 : CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetLastError (void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

/* An error code's text, from a table ending with {0, NULL}. */
struct text {
    int code;
    const char *text;
};

static const char *text_of (const struct text *t, int code, const char *other)
{
    for (; t->text; t++)
        if (t->code == code)
            return t->text;
    return other;
}

const char *cudaGetErrorString (cudaError_t e)
{
    static const struct text t[] = {
        {cudaSuccess, "no error (mock)"},
        {cudaErrorNoDevice, "no CUDA-capable device is detected (mock)"},
        {cudaErrorNotReady, "device not ready (mock)"},
        {cudaErrorInsufficientDriver, "CUDA driver version is insufficient"
                                      " for CUDA runtime version (mock)"},
        {cudaErrorStubLibrary, "CUDA driver is a stub library (mock)"},
        {cudaErrorSystemDriverMismatch, "system has unsupported display"
                                        " driver / cuda driver combination"
                                        " (mock)"},
        {0, NULL},
    };
    return text_of (t, e, "mock CUDA error");
}

cudaError_t cudaMalloc (void **p, size_t size)
{
    return mock_alloc (p, size, cudaMemoryTypeDevice);
}

cudaError_t cudaMallocManaged (void **p, size_t size, unsigned int flags)
{
    (void)flags;
    return mock_alloc (p, size, cudaMemoryTypeManaged);
}

cudaError_t cudaMallocHost (void **p, size_t size)
{
    return mock_alloc (p, size, cudaMemoryTypeHost);
}

cudaError_t cudaFree (void *p)
{
    if (ndevices () < 1)
        return fail (cudaErrorNoDevice);
    return mock_free (p);
}

cudaError_t cudaFreeHost (void *p)
{
    return mock_free (p);
}

cudaError_t cudaMemset (void *p, int v, size_t n)
{
    memset (p, v, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpy (void *dst, const void *src, size_t n,
                        enum cudaMemcpyKind kind)
{
    (void)kind;
    memmove (dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync (void *dst, const void *src, size_t n,
                             enum cudaMemcpyKind kind, cudaStream_t s)
{
    (void)kind, (void)s;
    memmove (dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes (struct cudaPointerAttributes *a,
                                      const void *p)
{
    struct alloc *m = find (p);

    attr_calls++;
    memset (a, 0, sizeof (*a));
    a->type = m ? m->type : cudaMemoryTypeUnregistered;
    a->device = m ? m->device : -2;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo (size_t *freeb, size_t *total)
{
    if (ndevices () < 1)
        return fail (cudaErrorNoDevice);
    *total = (size_t)80 << 30;
    *freeb = *total - ((size_t)1 << 30);
    return cudaSuccess;
}

cudaError_t cudaStreamCreate (cudaStream_t *s)
{
    static int token;
    *s = (cudaStream_t)&token;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy (cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}

cudaError_t cudaStreamQuery (cudaStream_t s)
{
    (void)s;
    if (stalled () || (the_comm && !peers_ready (the_comm)))
        return cudaErrorNotReady;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize (cudaStream_t s)
{
    (void)s;
    return cudaSuccess; /* only nccl_bench uses it, never stalled */
}

/* ---- NCCL --------------------------------------------------------------- */

ncclResult_t ncclGetVersion (int *v)
{
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId (ncclUniqueId *id)
{
    memset (id, 0x5a, sizeof (*id));
    return ncclSuccess;
}

/* A communicator as init (split: ncclCommSplit) makes it. */
static struct ncclComm *comm_alloc (int nranks, int rank, bool split)
{
    const char *init = getenv ("MOCK_NCCL_INIT");
    struct ncclComm *c;

    if (init && strcmp (init, "fail") == 0)
        return NULL;
    if (!(c = calloc (1, sizeof (*c))))
        return NULL;
    c->nranks = nranks;
    c->rank = rank;
    c->split = split;
    c->init_hang = (init && strcmp (init, "hang") == 0)
                   || (nranks > 1 && !fake_peers ());
    c->async = c->init_hang ? ncclInProgress : ncclSuccess;
    c->dead_peer = -1;
    return c;
}

static ncclResult_t comm_new (ncclComm_t *comm, int nranks, int rank)
{
    struct ncclComm *c = comm_alloc (nranks, rank, false);

    if (!c)
        return ncclSystemError;
    *comm = c;
    the_comm = c;
    peers_join (c);
    return ncclInProgress;
}

ncclResult_t ncclCommInitRankScalable (ncclComm_t *comm, int nranks,
                                       int rank, int nid, ncclUniqueId *ids,
                                       ncclConfig_t *config)
{
    (void)ids, (void)config;
    if (nid < 1)
        return ncclInvalidArgument;
    return comm_new (comm, nranks, rank);
}

ncclResult_t ncclCommInitRankConfig (ncclComm_t *comm, int nranks,
                                     ncclUniqueId id, int rank,
                                     ncclConfig_t *config)
{
    (void)id, (void)config;
    return comm_new (comm, nranks, rank);
}

#ifndef MOCK_NO_SPLIT_SYMBOL
/* A new communicator of one rank (see the header), or NULL for
 * NCCL_SPLIT_NOCOLOR; config NULL or not, it is non-blocking as its
 * parent is here. */
ncclResult_t ncclCommSplit (ncclComm_t comm, int color, int key,
                            ncclComm_t *newcomm, ncclConfig_t *config)
{
    (void)key, (void)config;
    if (!comm || !newcomm || comm->async == ncclInProgress
        || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
        return ncclInvalidArgument;
    *newcomm = NULL;
    if (color == NCCL_SPLIT_NOCOLOR)
        return ncclSuccess;
    if (!(*newcomm = comm_alloc (1, 0, true)))
        return ncclSystemError;
    return ncclInProgress;
}
#endif

ncclResult_t ncclCommGetAsyncError (ncclComm_t c, ncclResult_t *r)
{
    long e = env_long ("MOCK_NCCL_ERROR_AFTER", -1);

    if (!c)
        return ncclInvalidArgument;
    if (!c->init_hang && e >= 0 && ops_done > e)
        c->async = ncclRemoteError;
    if (!c->init_hang)
        (void)peers_ready (c);
    *r = c->async;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort (ncclComm_t c)
{
    fprintf (stderr, "mock: ncclCommAbort\n");
    if (c == the_comm)
        the_comm = NULL;
    free (c);
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize (ncclComm_t c)
{
    const char *f = getenv ("MOCK_NCCL_FINALIZE");

    fprintf (stderr, "mock: ncclCommFinalize\n");
    if (f && strcmp (f, "hang") == 0)
        c->async = ncclInProgress; /* never globally quiescent */
    return ncclInProgress;
}

ncclResult_t ncclCommDestroy (ncclComm_t c)
{
    fprintf (stderr, "mock: ncclCommDestroy\n");
    if (c == the_comm)
        the_comm = NULL;
    free (c);
    return ncclSuccess;
}

const char *ncclGetErrorString (ncclResult_t r)
{
    static const struct text t[] = {
        {ncclRemoteError, "remote process exited or there was a network"
                          " error (mock)"},
        {ncclSystemError, "unhandled system error (mock)"},
        {ncclInvalidUsage, "invalid usage (mock)"},
        {0, NULL},
    };
    return text_of (t, r, "mock NCCL result");
}

const char *ncclGetLastError (ncclComm_t c)
{
    if (c && c->dead_peer >= 0)
        return "socketProgress: Connection closed by remote peer (mock)";
    return "mock: last error";
}

static size_t type_size (ncclDataType_t t)
{
    switch (t) {
        case ncclInt8: case ncclUint8: return 1;
        case ncclFloat16: case ncclBfloat16: return 2;
        case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
        case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
        default: return 0;
    }
}

/* A collective on a live one-rank communicator: check, count, move. */
static ncclResult_t op (ncclComm_t c, ncclDataType_t t, const void *src,
                        void *dst, size_t count)
{
    if (!c || c->async == ncclInProgress)
        return ncclInvalidUsage;
    if (type_size (t) == 0)
        return ncclInvalidArgument;
    if (c->nranks != 1 && !fake_peers ())
        return ncclInvalidUsage;
    ops_done++;
    if (!c->split)
        world_ops++;
    if (mine)
        mine->ops = world_ops;
    if (dst && src && count)
        memmove (dst, src, count * type_size (t));
    return ncclSuccess;
}

/* How many elements at the end of recvbuff a reduction with o leaves
 * unwritten (MOCK_NCCL_AVG_TAIL): 0 unless it is NCCL 2.28.3's case. */
static size_t avg_tail (ncclRedOp_t o, ncclDataType_t t, const void *s,
                        const void *r, size_t n)
{
    long tail = env_long ("MOCK_NCCL_AVG_TAIL", 0);
    bool floating = t == ncclFloat16 || t == ncclBfloat16 || t == ncclFloat32
                    || t == ncclFloat64;

    if (tail <= 0 || o != ncclAvg || !floating || s == r || !r
        || n <= ((size_t)1 << 20))
        return 0;
    return (size_t)tail < n ? (size_t)tail : n;
}

/* A reduction: op() on all but the tail MOCK_NCCL_AVG_TAIL leaves. */
static ncclResult_t reduction (ncclComm_t c, ncclDataType_t t, ncclRedOp_t o,
                               const void *s, void *r, size_t n)
{
    if ((int)o < 0 || o >= ncclNumOps)
        return ncclInvalidArgument;
    return op (c, t, s, r, n - avg_tail (o, t, s, r, n));
}

ncclResult_t ncclAllReduce (const void *s, void *r, size_t n,
                            ncclDataType_t t, ncclRedOp_t o, ncclComm_t c,
                            cudaStream_t st)
{
    (void)st;
    return reduction (c, t, o, s, r, n);
}

ncclResult_t ncclReduce (const void *s, void *r, size_t n, ncclDataType_t t,
                         ncclRedOp_t o, int root, ncclComm_t c,
                         cudaStream_t st)
{
    (void)st;
    if (!c || root != 0)
        return ncclInvalidArgument;
    return reduction (c, t, o, s, r, n);
}

ncclResult_t ncclBroadcast (const void *s, void *r, size_t n,
                            ncclDataType_t t, int root, ncclComm_t c,
                            cudaStream_t st)
{
    (void)st;
    if (!c || root != 0)
        return ncclInvalidArgument;
    return op (c, t, s, r, n);
}

ncclResult_t ncclAllGather (const void *s, void *r, size_t n,
                            ncclDataType_t t, ncclComm_t c, cudaStream_t st)
{
    (void)st;
    return op (c, t, s, r, n);
}

/* In a world of one the whole result; with fake peers only this rank's
 * block (its own data, as the other collectives do). */
ncclResult_t ncclReduceScatter (const void *s, void *r, size_t n,
                                ncclDataType_t t, ncclRedOp_t o,
                                ncclComm_t c, cudaStream_t st)
{
    (void)st;
    if (!c || !s)
        return ncclInvalidArgument;
    return reduction (c, t, o,
                      (const char *)s + (size_t)c->rank * n * type_size (t),
                      r, n);
}

ncclResult_t ncclSend (const void *s, size_t n, ncclDataType_t t, int peer,
                       ncclComm_t c, cudaStream_t st)
{
    (void)s, (void)n, (void)t, (void)peer, (void)c, (void)st;
    return fake_peers () ? ncclSuccess : ncclInvalidUsage;
}

ncclResult_t ncclRecv (void *r, size_t n, ncclDataType_t t, int peer,
                       ncclComm_t c, cudaStream_t st)
{
    (void)r, (void)n, (void)t, (void)peer, (void)c, (void)st;
    return fake_peers () ? ncclSuccess : ncclInvalidUsage;
}

ncclResult_t ncclGroupStart (void)
{
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd (void)
{
    return ncclSuccess;
}
