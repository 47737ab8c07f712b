/* nccl_dl.c - CUDA's runtime and NCCL, loaded at run time (nccl_dl.h says
 * from where, and in which order).
 *
 * One load per process (pthread_once): each library is looked for in turn
 * where nccl_dl.h says, its calls resolved into nccl_dl, and what happened
 * kept (the path it came from, or why it was not found) for the
 * messages, nccl_dl_describe() and DDP_DEBUG.  Nothing is ever unloaded:
 * NCCL's threads and CUDA's context outlive any one communicator.
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ddp.h"
#include "ddp_internal.h"
#include "nccl_dl.h"

#define STR_(x) #x
#define STR(x) STR_ (x)

#ifndef DDP_CUDA_LIBDIR
#define DDP_CUDA_LIBDIR ""
#endif
#ifndef DDP_NCCL_LIBDIR
#define DDP_NCCL_LIBDIR ""
#endif

struct nccl_dl_table nccl_dl;

/* One call to resolve: its name in the library and its entry in nccl_dl. */
struct call {
    const char *name;
    void *slot;       /* &nccl_dl.<call>, a function pointer's storage */
    bool optional;
};

#define CALL(fn) {STR (fn), &nccl_dl.fn, false},
#define OPTIONAL_CALL(fn) {STR (fn), &nccl_dl.fn, true},
static const struct call cudart_calls[] = {NCCL_DL_CUDART_CALLS (CALL)};
static const struct call nccl_calls[] = {
    NCCL_DL_NCCL_CALLS (CALL) NCCL_DL_NCCL_OPTIONAL (OPTIONAL_CALL)};
#undef CALL
#undef OPTIONAL_CALL

/* One library: what it is, where it may be, and what was found. */
struct lib {
    const char *what;         /* "CUDA runtime", "NCCL" */
    const char *stem;         /* "libcudart.so" */
    int major;                /* the build headers' major version */
    const char *dir;          /* configure's directory ("" if none) */
    const char *version_call; /* tells its version, and that it is there */
    const struct call *calls;
    size_t ncalls;
    char soname[32];          /* stem.major */
    void *handle;             /* RTLD_DEFAULT when the process had it */
    char from[256];           /* the file it came from */
    char tried[768];          /* each attempt and its outcome */
};

static struct lib cudart = {
    .what = "CUDA runtime", .stem = "libcudart.so",
    .major = CUDART_VERSION / 1000, .dir = DDP_CUDA_LIBDIR,
    .version_call = "cudaRuntimeGetVersion", .calls = cudart_calls,
    .ncalls = sizeof (cudart_calls) / sizeof (cudart_calls[0]),
};
static struct lib nccl = {
    .what = "NCCL", .stem = "libnccl.so", .major = NCCL_MAJOR,
    .dir = DDP_NCCL_LIBDIR, .version_call = "ncclGetVersion",
    .calls = nccl_calls, .ncalls = sizeof (nccl_calls) / sizeof (nccl_calls[0]),
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;             /* 0 or DDP_ECUDA, after the once */
static atomic_bool loaded;      /* both found and resolved (a handle of
                                 * the process's is RTLD_DEFAULT, NULL) */
static char load_why[512];      /* why load_rc != 0 */

/* Append one attempt's outcome to l->tried. */
static void note (struct lib *l, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));
static void note (struct lib *l, const char *fmt, ...)
{
    size_t n = strlen (l->tried);
    va_list ap;

    if (n + 3 >= sizeof (l->tried))
        return;
    if (n > 0) {
        memcpy (l->tried + n, "; ", 3);
        n += 2;
    }
    va_start (ap, fmt);
    vsnprintf (l->tried + n, sizeof (l->tried) - n, fmt, ap);
    va_end (ap);
}

/* The major version a version call reports: CUDA's 13000 is 13, NCCL's
 * 22803 is 2 (and before 2.9, 2708 is 2). */
static int major_of (const struct lib *l, int v)
{
    if (l == &cudart)
        return v / 1000;
    return v >= 10000 ? v / 10000 : v / 1000;
}

/* Ask the library's version call at f.  Returns the version, or -1. */
static int version_at (const struct lib *l, void *f)
{
    int v = -1;

    if (l == &cudart) {
        __typeof__ (cudaRuntimeGetVersion) *get;
        memcpy (&get, &f, sizeof (get));
        if (get (&v) != cudaSuccess)
            v = -1;
    } else {
        __typeof__ (ncclGetVersion) *get;
        memcpy (&get, &f, sizeof (get));
        if (get (&v) != ncclSuccess)
            v = -1;
    }
    return v;
}

/* The file that holds the symbol at addr, into l->from. */
static void from_file (struct lib *l, void *addr)
{
    Dl_info info;

    if (dladdr (addr, &info) && info.dli_fname && *info.dli_fname)
        snprintf (l->from, sizeof (l->from), "%s", info.dli_fname);
    else
        snprintf (l->from, sizeof (l->from), "(the process)");
}

/* 1. The process already holds the library's calls: take them when they are
 * of the build's major version.  Returns true when taken. */
static bool from_process (struct lib *l)
{
    void *f = dlsym (RTLD_DEFAULT, l->version_call);
    int v;

    if (!f)
        return false;
    from_file (l, f);
    v = version_at (l, f);
    if (v < 0 || major_of (l, v) != l->major) {
        note (l, "%s in the process (%s) reports version %d, not major %d",
              l->version_call, l->from, v, l->major);
        l->from[0] = '\0';
        return false;
    }
    l->handle = RTLD_DEFAULT;
    return true;
}

/* Open path (a file name with a directory, or a bare soname for the
 * linker's search).  Returns true when opened. */
static bool open_lib (struct lib *l, const char *path)
{
    void *h;

    dlerror ();
    if (!(h = dlopen (path, RTLD_NOW | RTLD_LOCAL))) {
        const char *e = dlerror ();
        note (l, "%s", e ? e : path);
        return false;
    }
    l->handle = h;
    return true;
}

/* 2. One directory: dir/soname, when that file exists. */
static bool from_dir (struct lib *l, const char *dir, size_t dirlen)
{
    char path[512];

    if (dirlen == 0 || dirlen >= sizeof (path) - sizeof (l->soname) - 2)
        return false;
    snprintf (path, sizeof (path), "%.*s/%s", (int)dirlen, dir, l->soname);
    if (access (path, F_OK) != 0)
        return false;
    return open_lib (l, path);
}

/* 2. LD_LIBRARY_PATH's directories (empty entries skipped), then
 * configure's directory: the order the linker gave them when libddp was
 * linked with a run path to the latter. */
static bool from_dirs (struct lib *l)
{
    const char *p = getenv ("LD_LIBRARY_PATH");

    while (p && *p) {
        size_t n = strcspn (p, ":");
        if (from_dir (l, p, n))
            return true;
        p += n + (p[n] == ':');
    }
    if (*l->dir && from_dir (l, l->dir, strlen (l->dir)))
        return true;
    return false;
}

/* Resolve l's calls into nccl_dl.  Returns 0, or -1 with why. */
static int resolve (struct lib *l, char *why, size_t whylen)
{
    for (size_t i = 0; i < l->ncalls; i++) {
        void *f = dlsym (l->handle, l->calls[i].name);
        if (!f && !l->calls[i].optional) {
            snprintf (why, whylen, "%s (%s) has no %s: older than the %s"
                      " this build was made with; use a newer one, or"
                      " --ddp=host", l->soname, l->from, l->calls[i].name,
                      l->what);
            return -1;
        }
        memcpy (l->calls[i].slot, &f, sizeof (f));
    }
    return 0;
}

/* Find l and resolve its calls.  Returns 0, or -1 with why. */
static int load_lib (struct lib *l, char *why, size_t whylen)
{
    snprintf (l->soname, sizeof (l->soname), "%s.%d", l->stem, l->major);
    if (!from_process (l)) {
        if (!from_dirs (l) && !open_lib (l, l->soname)) {
            snprintf (why, whylen, "%s %s not found (looked in"
                      " LD_LIBRARY_PATH, %s%sthe system's path): install"
                      " it, or use --ddp=host", l->what, l->soname, l->dir,
                      *l->dir ? ", " : "");
            return -1;
        }
        from_file (l, dlsym (l->handle, l->version_call));
    }
    return resolve (l, why, whylen);
}

static void load_once (void)
{
    if (load_lib (&cudart, load_why, sizeof (load_why)) < 0
        || load_lib (&nccl, load_why, sizeof (load_why)) < 0) {
        load_rc = DDP_ECUDA;
        ddpi_debug ("nccl: not loaded: %s", load_why);
    } else {
        loaded = true;
        ddpi_debug ("nccl: loaded %s from %s and %s from %s", cudart.soname,
                    cudart.from, nccl.soname, nccl.from);
    }
    if (cudart.tried[0])
        ddpi_debug ("nccl: looking for %s: %s", cudart.soname, cudart.tried);
    if (nccl.tried[0])
        ddpi_debug ("nccl: looking for %s: %s", nccl.soname, nccl.tried);
}

int nccl_dl_load (char *why, size_t whylen)
{
    pthread_once (&once, load_once);
    if (load_rc != 0 && why && whylen > 0)
        snprintf (why, whylen, "%s", load_why);
    return load_rc;
}

const char *nccl_dl_describe (char *buf, size_t len)
{
    int v = 0;

    if (loaded) {
        if (DL (ncclGetVersion) (&v) != ncclSuccess)
            v = 0;
        snprintf (buf, len, "loaded at run time: NCCL %d from %s, CUDA"
                  " runtime from %s", v, nccl.from, cudart.from);
    } else {
        snprintf (buf, len, "loaded at run time by the steps that use it:"
                  " libnccl.so.%d and libcudart.so.%d from the process,"
                  " LD_LIBRARY_PATH, %s%s%s or the system's library path"
                  " (built with NCCL %d.%d.%d, CUDA %d.%d)%s%s", NCCL_MAJOR,
                  CUDART_VERSION / 1000, DDP_NCCL_LIBDIR,
                  strcmp (DDP_NCCL_LIBDIR, DDP_CUDA_LIBDIR) ? ", " : "",
                  strcmp (DDP_NCCL_LIBDIR, DDP_CUDA_LIBDIR) ? DDP_CUDA_LIBDIR
                                                            : "",
                  NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, CUDART_VERSION / 1000,
                  CUDART_VERSION % 1000 / 10,
                  load_rc ? "; not loaded: " : "", load_rc ? load_why : "");
    }
    return buf;
}

/* Can the driver's library be loaded here?  (The runtime loads it the
 * same way; RTLD_NOLOAD first: it is most often there already.) */
static bool driver_present (void)
{
    void *h = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

    if (!h)
        h = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return false;
    dlclose (h);
    return true;
}

const char *nccl_dl_cuda_cause (cudaError_t e, char *buf, size_t len,
                                const char **hint)
{
    const char *cvd = getenv ("CUDA_VISIBLE_DEVICES"), *todo;

    if (e == cudaErrorInsufficientDriver && !driver_present ()) {
        snprintf (buf, len, "no NVIDIA driver on this node (libcuda.so.1"
                  " cannot be loaded)");
        todo = "run NCCL steps on GPU nodes, or use --ddp=auto or"
               " --ddp=host here";
    } else if (e == cudaErrorInsufficientDriver) {
        snprintf (buf, len, "the NVIDIA driver on this node is older than"
                  " the CUDA %d.%d runtime this build uses",
                  CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        todo = "update the driver, or use a build made with an older CUDA";
    } else if (e == cudaErrorNoDevice) {
        snprintf (buf, len, "no CUDA device visible to this task"
                  " (CUDA_VISIBLE_DEVICES=%s)", cvd ? cvd : "unset");
        todo = "request GPUs (--gres=gpu:N or --gpus-per-task=N)";
    } else {
        snprintf (buf, len, "cudaGetDeviceCount: %s",
                  DL (cudaGetErrorString) (e));
        todo = "check the node's GPUs (nvidia-smi), or use --ddp=host";
    }
    if (hint)
        *hint = todo;
    return buf;
}
