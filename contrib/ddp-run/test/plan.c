/* plan.c - ddp-run's GPU search, ports and plan (machine.h, plan.h), on
 * fake machine trees made here. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "machine.h"
#include "plan.h"
#include "tap.h"

static char top[PATH_MAX];

/* Create TOP/NAME/REL: a directory when REL ends in '/', else a file with
 * TEXT.  Parents are made.  Returns 0 or -1. */
static int make (const char *name, const char *rel, const char *text)
{
    char path[PATH_MAX + 64];
    size_t i, len;
    int fd, rc = 0;

    len = (size_t)snprintf (path, sizeof (path), "%s/%s/%s", top, name, rel);
    for (i = strlen (top) + 1; i < len; i++)
        if (path[i] == '/') {
            path[i] = '\0';
            if (mkdir (path, 0700) < 0 && errno != EEXIST)
                return -1;
            path[i] = '/';
        }
    if (path[len - 1] == '/')
        return 0;
    if ((fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
        return -1;
    if (text && write (fd, text, strlen (text)) != (ssize_t)strlen (text))
        rc = -1;
    close (fd);
    return rc;
}

static const char *root_of (const char *name)
{
    static char r[PATH_MAX + 64];

    snprintf (r, sizeof (r), "%s/%s", top, name);
    return r;
}

static void test_gpus_from_cvd (void)
{
    struct dr_gpus g;
    char err[512] = "";

    ok (dr_gpus_find ("", "0,1,2", &g, err, sizeof (err)) == 0
        && g.count == 3 && strcmp (g.list, "0,1,2") == 0
        && strcmp (g.from, "CUDA_VISIBLE_DEVICES=0,1,2") == 0,
        "CUDA_VISIBLE_DEVICES=0,1,2: three GPUs, the list as given");
    ok (dr_gpus_find (root_of ("proc-gpus"), "GPU-a,MIG-b/1/0", &g, err,
                      sizeof (err)) == 0 && g.count == 2
        && strcmp (g.list, "GPU-a,MIG-b/1/0") == 0,
        "UUIDs are kept, and the variable wins over the driver's list");
    ok (dr_gpus_find ("", "", &g, err, sizeof (err)) == 0 && g.count == 0,
        "CUDA_VISIBLE_DEVICES='' hides every GPU");
    err[0] = '\0';
    ok (dr_gpus_find ("", "0,,1", &g, err, sizeof (err)) == -1
        && strstr (err, "CUDA_VISIBLE_DEVICES='0,,1' is not a list of GPUs"),
        "a malformed CUDA_VISIBLE_DEVICES is refused, naming it");
    diag ("%s", err);
}

static void test_gpus_from_driver (void)
{
    struct dr_gpus g;
    char err[512] = "", want[PATH_MAX + 128];

    ok (make ("proc-gpus", "proc/driver/nvidia/gpus/0000:3b:00.0/", NULL) == 0
        && make ("proc-gpus", "proc/driver/nvidia/gpus/0000:5e:00.0/", NULL)
           == 0
        && make ("proc-gpus", "proc/driver/nvidia/version", "NVRM\n") == 0
        && make ("proc-gpus", "dev/nvidia0", "") == 0
        && make ("dev-only", "dev/nvidia0", "") == 0
        && make ("dev-only", "dev/nvidia1", "") == 0
        && make ("dev-only", "dev/nvidia12", "") == 0
        && make ("dev-only", "dev/nvidiactl", "") == 0
        && make ("dev-only", "dev/nvidia-uvm", "") == 0
        && make ("dev-only", "dev/nvidia-caps/nvidia-cap1", "") == 0
        && make ("dev-only", "dev/nvidiax", "") == 0
        && make ("none", "proc/", NULL) == 0,
        "fake machine trees made");
    ok (dr_gpus_find (root_of ("proc-gpus"), NULL, &g, err, sizeof (err))
        == 0 && g.count == 2 && strcmp (g.list, "0,1") == 0 && g.driver,
        "the driver's /proc list: two GPUs, numbered 0,1, and a driver");
    snprintf (want, sizeof (want), "%s/proc/driver/nvidia/gpus",
              root_of ("proc-gpus"));
    is_str (g.from, want, "it says where the list came from");
    ok (dr_gpus_find (root_of ("dev-only"), NULL, &g, err, sizeof (err)) == 0
        && g.count == 3 && strcmp (g.list, "0,1,2") == 0 && g.driver,
        "no /proc list: one GPU per /dev/nvidiaN (not nvidiactl, "
        "nvidia-uvm, nvidia-caps, nvidiax), nvidiactl is a driver");
    ok (dr_gpus_find (root_of ("none"), NULL, &g, err, sizeof (err)) == 0
        && g.count == 0 && !g.driver && strcmp (g.list, "") == 0
        && strstr (g.from, "CUDA_VISIBLE_DEVICES is unset and neither "),
        "nothing: no GPU, no driver, and a reason");
    diag ("%s", g.from);
    ok (dr_gpus_find (root_of ("none"), "0,1", &g, err, sizeof (err)) == 0
        && g.count == 2 && !g.driver,
        "CUDA_VISIBLE_DEVICES without a driver: GPUs, no driver");
}

static void test_ports (void)
{
    const char *hdr = "  sl  local_address rem_address   st tx_queue "
                      "rx_queue\n";
    char tcp[1024];
    const char *r = root_of ("ports");

    /* 0x7334 = 29492 listens; 0x7336 = 29494 is a connection, not a
     * listener.  Whole lines, as the kernel writes them: the parser reads
     * up to the uid. */
    snprintf (tcp, sizeof (tcp), "%s"
              "   0: 00000000:7334 00000000:0000 0A 00000000:00000000"
              " 00:00000000 00000000  1000        0 581 1 0 100 0 0 10 0\n"
              "   1: 0100007F:7336 0100007F:9C40 01 00000000:00000000"
              " 00:00000000 00000000  1000        0 582 1 0 100 0 0 10 0\n", hdr);
    ok (make ("ports", "proc/net/tcp", tcp) == 0
        && make ("ports", "proc/net/tcp6", hdr) == 0, "fake port tables made");
    is_int (dr_port_taken (r, 29492), 1, "a listener is seen");
    is_int (dr_port_taken (r, 29494), 0, "a connection is not a listener");
    is_int (dr_port_pick (r, 29492, 29492, 29494), 29493,
            "the pick skips a taken port");
    snprintf (tcp, sizeof (tcp), "%s"
              "   0: 00000000:7334 00000000:0000 0A 00000000:00000000"
              " 00:00000000 00000000  1000        0 581 1 0 100 0 0 10 0\n"
              "   1: 0100007F:7335 0100007F:9C40 0A 00000000:00000000"
              " 00:00000000 00000000  1000        0 583 1 0 100 0 0 10 0\n", hdr);
    /* Now 0x7335 = 29493 listens too, on IPv6. */
    ok (make ("ports", "proc/net/tcp6", tcp) == 0, "IPv6 table rewritten");
    is_int (dr_port_pick (r, 29493, 29492, 29494), 29494,
            "listeners in either table count, the search wraps");
    errno = 0;
    ok (dr_port_pick (r, 29492, 29492, 29493) == -1 && errno == EADDRINUSE,
        "a range with every port taken: EADDRINUSE");
    errno = 0;
    ok (dr_port_pick (r, 10, 20, 30) == -1 && errno == EINVAL,
        "a start outside the range: EINVAL");
}

/* A job of SIZE ranks over NNODES in blocks (the first nodes larger). */
static struct dr_job job (enum sp_backend want, const char *from, int size,
                          int nnodes, int *node_of)
{
    int r = 0, n, i;

    for (n = 0; n < nnodes; n++)
        for (i = 0; i < size / nnodes + (n < size % nnodes); i++)
            node_of[r++] = n;
    return (struct dr_job){ want, from, true, size, nnodes, node_of };
}

static struct dr_gpus gpus (const char *list, bool driver)
{
    struct dr_gpus g;
    char err[128];

    if (dr_gpus_find ("/nonexistent", list, &g, err, sizeof (err)) < 0)
        bail_out ("dr_gpus_find");
    g.driver = driver;
    return g;
}

static void test_refusals (void)
{
    struct dr_gpus four = gpus ("0,1,2,3", true), none = gpus ("", true),
                   two = gpus ("0,1", true);
    struct dr_plan p;
    int map[16];
    char err[512] = "";
    struct dr_job j = job (SP_BACKEND_NCCL, "--backend nccl", 8, 1, map);

    ok (dr_plan_make (&j, &four, &p, err, sizeof (err)) == -1
        && strstr (err, "--backend nccl needs a GPU per rank, but 8 ranks "
                   "would share 4 GPUs (CUDA_VISIBLE_DEVICES=0,1,2,3); run "
                   "-n 4 or fewer, or use --backend host") && !p.gpu,
        "nccl, 8 ranks, 4 GPUs: refused with the counts and what to do");
    diag ("%s", err);
    j = job (SP_BACKEND_NCCL, "DDP_BACKEND=nccl", 5, 2, map);
    ok (dr_plan_make (&j, &two, &p, err, sizeof (err)) == -1
        && strstr (err, "DDP_BACKEND=nccl needs a GPU per rank, but simulated "
                   "node 0 has 3 ranks and every node sees the same 2 GPUs")
        && strstr (err, "(-n 4 with -N 2)"),
        "nccl, 3+2 ranks on 2 nodes of 2 GPUs: node 0 named, -n 4 -N 2");
    diag ("%s", err);
    j = job (SP_BACKEND_NCCL, "--backend nccl", 1, 1, map);
    j.bind = false;
    ok (dr_plan_make (&j, &none, &p, err, sizeof (err)) == -1
        && strstr (err, "but there is no GPU (CUDA_VISIBLE_DEVICES=); use "
                   "--backend host"),
        "nccl without a GPU: refused, also without binding");
    j = job (SP_BACKEND_NCCL, "--backend nccl", 3, 1, map);
    j.bind = false;
    ok (dr_plan_make (&j, &two, &p, err, sizeof (err)) == -1,
        "nccl, 3 ranks on 2 GPUs, --nobind: refused too");
}

/* The GPUs of a plan, "0,1,-,..." ("-" unbound). */
static const char *bound (const struct dr_plan *p, int size)
{
    static char buf[256];
    size_t off = 0;

    buf[0] = '\0';
    for (int r = 0; r < size && off < sizeof (buf); r++)
        off += (size_t)snprintf (buf + off, sizeof (buf) - off, "%s%s",
                                 r ? "," : "", p->gpu[r][0] ? p->gpu[r] : "-");
    return buf;
}

/* Plan job J on G; check the backend and the binding. */
static void expect (struct dr_job j, struct dr_gpus g, enum sp_backend b,
                    const char *gpus_want, const char *what)
{
    struct dr_plan p;
    char err[512] = "";

    if (dr_plan_make (&j, &g, &p, err, sizeof (err)) < 0) {
        ok (0, "%s: %s", what, err);
        return;
    }
    ok (p.backend == b && strcmp (bound (&p, j.size), gpus_want) == 0,
        "%s: %s, %s (%s)", what, sp_backend_name (p.backend),
        bound (&p, j.size), p.why);
    dr_plan_free (&p);
}

static void test_plans (void)
{
    int map[16];
    struct dr_job j;

    expect (job (SP_BACKEND_NCCL, "--backend nccl", 4, 1, map),
            gpus ("0,1,2,3", false), SP_BACKEND_NCCL, "0,1,2,3",
            "nccl, 4 ranks, 4 GPUs: one each (no driver check for nccl)");
    expect (job (SP_BACKEND_AUTO, "the default", 2, 1, map),
            gpus ("4,5,6,7", true), SP_BACKEND_NCCL, "4,5",
            "auto with a driver and a GPU per rank: nccl, the first GPUs");
    expect (job (SP_BACKEND_AUTO, "the default", 2, 1, map),
            gpus ("0,1", false), SP_BACKEND_HOST, "0,1",
            "auto without a driver: host, still bound as the plugin does");
    expect (job (SP_BACKEND_AUTO, "the default", 8, 1, map),
            gpus ("0,1,2,3", true), SP_BACKEND_HOST, "-,-,-,-,-,-,-,-",
            "auto, 8 ranks on 4 GPUs: host, nobody bound");
    expect (job (SP_BACKEND_AUTO, "the default", 3, 1, map), gpus ("", true),
            SP_BACKEND_HOST, "-,-,-", "auto, no GPU: host");
    expect (job (SP_BACKEND_HOST, "--backend host", 2, 1, map),
            gpus ("0,1", true), SP_BACKEND_HOST, "0,1",
            "host with a GPU per rank: bound");
    expect (job (SP_BACKEND_NCCL, "--backend nccl", 4, 2, map),
            gpus ("GPU-a,GPU-b", true), SP_BACKEND_NCCL,
            "GPU-a,GPU-b,GPU-a,GPU-b",
            "2 nodes of 2 ranks on 2 GPUs: each node binds by local rank");
    j = job (SP_BACKEND_NCCL, "--backend nccl", 2, 1, map);
    j.bind = false;
    expect (j, gpus ("0,1,2,3", true), SP_BACKEND_NCCL, "-,-",
            "--nobind: nobody bound");
    map[0] = 1, map[1] = 0, map[2] = 1;
    expect ((struct dr_job){ SP_BACKEND_NCCL, "--backend nccl", true, 3, 2,
                             map },
            gpus ("0,1", true), SP_BACKEND_NCCL, "0,0,1",
            "an interleaved map: local ranks in rank order per node");
}

static void test_default_size (void)
{
    char err[512] = "";

    is_int (dr_plan_default_size (&(struct dr_gpus){ .count = 4 },
                                  SP_BACKEND_AUTO, 1, err, sizeof (err)),
            4, "no -n: one rank per GPU");
    is_int (dr_plan_default_size (&(struct dr_gpus){ .count = 4 },
                                  SP_BACKEND_NCCL, 2, err, sizeof (err)),
            8, "no -n, 2 nodes: one rank per GPU on each");
    ok (dr_plan_default_size (&(struct dr_gpus){ .count = 0, .from = "X" },
                              SP_BACKEND_AUTO, 1, err, sizeof (err)) == -1
        && strstr (err, "give -n RANKS") && strstr (err, "found none: X"),
        "no -n and no GPU: asks for -n, saying why");
    ok (dr_plan_default_size (&(struct dr_gpus){ .count = 4 },
                              SP_BACKEND_HOST, 1, err, sizeof (err)) == -1
        && strstr (err, "the host backend uses none"),
        "no -n with the host backend: asks for -n");
}

static int remove_one (const char *path, const struct stat *st, int flag,
                       struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove (path);
}

int main (void)
{
    snprintf (top, sizeof (top), "%s/ddp-run-plan.XXXXXX",
              getenv ("TMPDIR") ? getenv ("TMPDIR") : "/tmp");
    if (!mkdtemp (top))
        bail_out ("mkdtemp");
    plan (NO_PLAN);
    test_gpus_from_driver ();
    test_gpus_from_cvd ();
    test_ports ();
    test_refusals ();
    test_plans ();
    test_default_size ();
    if (nftw (top, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        diag ("could not remove %s", top);
    return done_testing ();
}
