/* machine.c - this machine's GPUs, driver and free ports (machine.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "machine.h"
#include "sp_port.h"

#define PROC_GPUS "/proc/driver/nvidia/gpus"
#define DEV "/dev"

/* ROOT + REL into BUF (PATH_MAX).  Returns 0, or -1 when too long. */
static int under (char *buf, const char *root, const char *rel)
{
    int n = snprintf (buf, PATH_MAX, "%s%s", root, rel);

    return n < 0 || n >= PATH_MAX ? -1 : 0;
}

static bool exists (const char *root, const char *rel)
{
    char path[PATH_MAX];

    return under (path, root, rel) == 0 && access (path, F_OK) == 0;
}

/* "nvidia" followed by digits only: a GPU's device, not nvidiactl,
 * nvidia-uvm or nvidia-caps. */
static bool is_gpu_dev (const char *name)
{
    const char *p = name + 6;

    if (strncmp (name, "nvidia", 6) != 0 || *p == '\0')
        return false;
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

/* Entries of ROOT/REL (every name but dot files, or with DEVS only the GPU
 * devices).  Returns the count, 0 when the directory does not exist. */
static int count_entries (const char *root, const char *rel, bool devs)
{
    char path[PATH_MAX];
    struct dirent *e;
    DIR *d;
    int n = 0;

    if (under (path, root, rel) < 0 || !(d = opendir (path)))
        return 0;
    while ((e = readdir (d)))
        if (devs ? is_gpu_dev (e->d_name) : e->d_name[0] != '.')
            n++;
    closedir (d);
    return n;
}

/* "0,1,...,n-1" into G->list.  Returns 0, or -1 when it does not fit. */
static int number_list (struct dr_gpus *g, int n)
{
    size_t off = 0;
    int i, w;

    g->list[0] = '\0';
    for (i = 0; i < n; i++) {
        w = snprintf (g->list + off, sizeof (g->list) - off, "%s%d",
                      i ? "," : "", i);
        if (w < 0 || (size_t)w >= sizeof (g->list) - off)
            return -1;
        off += (size_t)w;
    }
    g->count = n;
    return 0;
}

/* The GPUs the driver shows, when CUDA_VISIBLE_DEVICES is unset. */
static int from_driver (const char *root, struct dr_gpus *g, char *err,
                        size_t errlen)
{
    int n;

    if ((n = count_entries (root, PROC_GPUS, false)) > 0)
        snprintf (g->from, sizeof (g->from), "%.400s" PROC_GPUS, root);
    else if ((n = count_entries (root, DEV, true)) > 0)
        snprintf (g->from, sizeof (g->from), "%.400s" DEV "/nvidia[0-9]*",
                  root);
    else
        snprintf (g->from, sizeof (g->from), "CUDA_VISIBLE_DEVICES is unset "
                  "and neither %.400s" PROC_GPUS " nor %.400s" DEV
                  "/nvidia[0-9]* shows one", root, root);
    if (number_list (g, n) < 0) {
        snprintf (err, errlen, "%s lists %d GPUs, more than ddp-run can "
                  "bind: set CUDA_VISIBLE_DEVICES to the ones to use",
                  g->from, n);
        return -1;
    }
    return 0;
}

int dr_gpus_find (const char *root, const char *cvd, struct dr_gpus *g,
                  char *err, size_t errlen)
{
    int n;

    memset (g, 0, sizeof (*g));
    if (!root)
        root = "";
    g->driver = exists (root, "/proc/driver/nvidia/version")
                || exists (root, "/dev/nvidiactl");
    if (!cvd)
        return from_driver (root, g, err, errlen);
    if ((n = sp_gpus_count (cvd)) < 0) {
        snprintf (err, errlen, "CUDA_VISIBLE_DEVICES='%.64s%s' is not a list "
                  "of GPUs (indices or UUIDs separated by commas): set it "
                  "to the GPUs to use, or unset it to use every GPU",
                  cvd, strlen (cvd) > 64 ? "..." : "");
        return -1;
    }
    memcpy (g->list, cvd, strlen (cvd) + 1);
    g->count = n;
    snprintf (g->from, sizeof (g->from), "CUDA_VISIBLE_DEVICES=%.64s%s",
              cvd, strlen (cvd) > 64 ? "..." : "");
    return 0;
}

int dr_port_taken (const char *root, unsigned port)
{
    char path[PATH_MAX];
    int r;

    if (!root)
        root = "";
    if (under (path, root, "/proc/net/tcp") < 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if ((r = sp_port_listening (path, port)) != 0)
        return r;
    if (under (path, root, "/proc/net/tcp6") < 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return sp_port_listening (path, port);
}

int dr_port_pick (const char *root, unsigned start, unsigned lo, unsigned hi)
{
    unsigned range, i, p;
    int r;

    if (lo < 1 || hi > 65535 || lo > hi || start < lo || start > hi) {
        errno = EINVAL;
        return -1;
    }
    range = hi - lo + 1;
    for (i = 0; i < range; i++) {
        p = lo + (start - lo + i) % range;
        if ((r = dr_port_taken (root, p)) < 0)
            return -1;
        if (r == 0)
            return (int)p;
    }
    errno = EADDRINUSE;
    return -1;
}
