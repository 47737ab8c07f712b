/* core.c - libddp's public API as a single process: calls before init,
 * argument checks, environment parsing, and the singleton collectives. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "ddp.h"
#include "ddp_internal.h"

static void clean_env (void)
{
    static const char *vars[] = { "WORLD_SIZE", "RANK", "LOCAL_RANK",
        "DDP_TIMEOUT", "DDP_INIT_TIMEOUT", "DDP_DEBUG", "DDP_BACKEND", "DDP_BOOTSTRAP", "SLURM_STEP_NUM_TASKS",
        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_NAMESPACE",
        "PMIX_SERVER_URI", "PMIX_SERVER_URI2", "PMIX_SERVER_URI3",
        "PMIX_SERVER_URI4", "PMIX_SERVER_URI21", "PMIX_SERVER_URI41",
        "DDP_SHM_SLOT", "DDP_STRAGGLERS", "DDP_NCCL_BUFFER_CACHE", "DDP_LANES",
        NULL };
    for (int i = 0; vars[i]; i++)
        unsetenv (vars[i]);
}

static void before_init (void)
{
    int x = 1, y;

    is_int (ddp_barrier (), DDP_ENOINIT, "barrier before init: ENOINIT");
    is_int (ddp_allreduce (&x, &y, 1, DDP_INT32, DDP_SUM), DDP_ENOINIT,
            "allreduce before init: ENOINIT");
    is_int (ddp_bcast (&x, 1, DDP_INT32, 0), DDP_ENOINIT, "bcast before init");
    is_int (ddp_reduce (&x, &y, 1, DDP_INT32, DDP_SUM, 0), DDP_ENOINIT,
            "reduce before init");
    is_int (ddp_gather (&x, &y, 1, DDP_INT32, 0), DDP_ENOINIT,
            "gather before init");
    is_int (ddp_allgather (&x, &y, 1, DDP_INT32), DDP_ENOINIT,
            "allgather before init");
    is_int (ddp_finalize (), DDP_ENOINIT, "finalize before init: ENOINIT");
    ok (ddp_rank () == 0 && ddp_world_size () == 1 && ddp_local_rank () == 0
        && ddp_local_world_size () == 1 && ddp_node_rank () == 0
        && ddp_num_nodes () == 1, "identity before init: rank 0 of 1");
    ok (ddp_is_main () && ddp_is_local_main () && !ddp_is_distributed (),
        "main, local main, not distributed before init");
    is_str (ddp_backend_name (), "none", "backend none before init");
}

static void misc (void)
{
    int e, bad = 0;

    for (e = 0; e >= -14; e--)
        if (!ddp_strerror (e) || !strcmp (ddp_strerror (e), "unknown error"))
            bad++;
    ok (!bad, "every DDP_E* code has a message");
    is_str (ddp_strerror (-999), "unknown error", "unknown codes say so");
    is_str (ddp_strerror (5), "unknown error", "positive codes are unknown");
    ok (ddp_version () && strchr (ddp_version (), '.'), "version %s",
        ddp_version ());
    ok (ddp_dtype_size (DDP_INT8) == 1 && ddp_dtype_size (DDP_UINT8) == 1
        && ddp_dtype_size (DDP_FLOAT16) == 2 && ddp_dtype_size (DDP_BFLOAT16) == 2
        && ddp_dtype_size (DDP_INT32) == 4 && ddp_dtype_size (DDP_UINT32) == 4
        && ddp_dtype_size (DDP_FLOAT32) == 4 && ddp_dtype_size (DDP_INT64) == 8
        && ddp_dtype_size (DDP_UINT64) == 8 && ddp_dtype_size (DDP_FLOAT64) == 8,
        "dtype sizes");
    is_int ((int)ddp_dtype_size (DDP_NUM_DTYPES), 0, "unknown dtype size 0");
    is_int ((int)ddp_dtype_size ((ddp_dtype_t)-1), 0, "negative dtype size 0");
}

/* ddp_host_addrs: arguments, DDP_HOST_ADDR alone, a selector, and what
 * does not fit.  Loopback ("lo") is on every Linux machine. */
static void host_addrs (void)
{
    char buf[256], small[20];
    int n;

    is_int (ddp_host_addrs (NULL, 64), DDP_EINVAL, "host_addrs: NULL buf");
    is_int (ddp_host_addrs (buf, 8), DDP_EINVAL, "host_addrs: 8 bytes");
    ok (strstr (ddp_last_error (), "at least 16 bytes") != NULL,
        "host_addrs: says how long: %s", ddp_last_error ());
    setenv ("DDP_HOST_ADDR", "10.1.2.3", 1);
    n = ddp_host_addrs (buf, sizeof (buf));
    ok (n == 1 && !strcmp (buf, "10.1.2.3"),
        "host_addrs: DDP_HOST_ADDR alone (%d: %s)", n, buf);
    setenv ("DDP_HOST_ADDR", "10.1.2", 1);
    is_int (ddp_host_addrs (buf, sizeof (buf)), DDP_EINVAL,
            "host_addrs: a malformed DDP_HOST_ADDR");
    ok (strstr (ddp_last_error (), "DDP_HOST_ADDR='10.1.2'") != NULL,
        "host_addrs: names it: %s", ddp_last_error ());
    setenv ("DDP_HOST_ADDR", "10.1.2.3", 1);
    setenv ("DDP_SOCKET_IFNAME", "lo", 1);
    is_int (ddp_host_addrs (buf, sizeof (buf)), DDP_EINVAL,
            "host_addrs: DDP_HOST_ADDR and DDP_SOCKET_IFNAME both set");
    unsetenv ("DDP_HOST_ADDR");
    n = ddp_host_addrs (buf, sizeof (buf));
    ok (n == 1 && !strcmp (buf, "127.0.0.1"),
        "host_addrs: DDP_SOCKET_IFNAME=lo (%d: %s)", n, buf);
    setenv ("DDP_SOCKET_IFNAME", "=nosuchif0", 1);
    is_int (ddp_host_addrs (buf, sizeof (buf)), DDP_ETRANSPORT,
            "host_addrs: a selector that lets nothing in");
    unsetenv ("DDP_SOCKET_IFNAME");
    n = ddp_host_addrs (buf, sizeof (buf));
    ok (n >= 1 && !strcmp (buf + strlen (buf) - 9, "127.0.0.1")
        && (int)strlen (buf) < 16 * n, "host_addrs: default, loopback last "
        "(%d: %s)", n, buf);
    n = ddp_host_addrs (small, sizeof (small));
    ok (n >= 1 && !strchr (small, ',') == (n == 1) && strlen (small) < 20,
        "host_addrs: whole addresses that fit 20 bytes (%d: %s)", n, small);
}

static void env_case (const char *name, const char *val, const char *name2,
                      const char *val2, int want, const char *what)
{
    int rc;

    clean_env ();
    setenv (name, val, 1);
    if (name2)
        setenv (name2, val2, 1);
    rc = ddp_init ();
    is_int (rc, want, "%s", what);
    if (rc == 0)
        ddp_finalize ();
    ok (ddp_world_size () == 1 && !ddp_is_distributed (),
        "nothing is left initialized after: %s", what);
    clean_env ();
}

static void environment (void)
{
    env_case ("WORLD_SIZE", "4", NULL, NULL, DDP_ENOLAUNCH,
              "WORLD_SIZE=4 without PMIx: ENOLAUNCH");
    env_case ("SLURM_STEP_NUM_TASKS", "2", NULL, NULL, DDP_ENOLAUNCH,
              "srun -n2 without PMIx: ENOLAUNCH");
    env_case ("OMPI_COMM_WORLD_SIZE", "3", NULL, NULL, DDP_ENOLAUNCH,
              "mpirun -n3 without PMIx: ENOLAUNCH");
    env_case ("WORLD_SIZE", "abc", NULL, NULL, DDP_EINVAL, "WORLD_SIZE=abc");
    env_case ("WORLD_SIZE", "0", NULL, NULL, DDP_EINVAL, "WORLD_SIZE=0");
    env_case ("WORLD_SIZE", "-2", NULL, NULL, DDP_EINVAL, "WORLD_SIZE=-2");
    env_case ("WORLD_SIZE", "4x", NULL, NULL, DDP_EINVAL, "WORLD_SIZE=4x");
    env_case ("WORLD_SIZE", "", NULL, NULL, DDP_EINVAL, "WORLD_SIZE empty");
    env_case ("WORLD_SIZE", "99999999999999999999", NULL, NULL, DDP_EINVAL,
              "WORLD_SIZE overflowing");
    env_case ("RANK", "abc", NULL, NULL, DDP_EINVAL, "RANK=abc");
    env_case ("RANK", " 0", NULL, NULL, DDP_EINVAL, "RANK with a space");
    env_case ("RANK", "4", "WORLD_SIZE", "4", DDP_EINVAL, "RANK=4 WORLD_SIZE=4");
    env_case ("RANK", "1", "WORLD_SIZE", "1", DDP_EINVAL, "RANK=1 WORLD_SIZE=1");
    env_case ("RANK", "0", "WORLD_SIZE", "1", 0, "RANK=0 WORLD_SIZE=1 is fine");
    env_case ("DDP_TIMEOUT", "abc", NULL, NULL, DDP_EINVAL, "DDP_TIMEOUT=abc");
    env_case ("DDP_TIMEOUT", "0", NULL, NULL, DDP_EINVAL, "DDP_TIMEOUT=0");
    env_case ("DDP_TIMEOUT", "2.5", NULL, NULL, 0, "DDP_TIMEOUT=2.5 is fine");
    env_case ("DDP_TIMEOUT", "1e9", NULL, NULL, DDP_EINVAL, "DDP_TIMEOUT=1e9");
    env_case ("DDP_TIMEOUT", "inf", NULL, NULL, 0, "DDP_TIMEOUT=inf is fine");
    env_case ("DDP_INIT_TIMEOUT", "-1", NULL, NULL, DDP_EINVAL,
              "DDP_INIT_TIMEOUT=-1");
    env_case ("DDP_INIT_TIMEOUT", "600", "DDP_TIMEOUT", "5", 0,
              "DDP_INIT_TIMEOUT=600 with DDP_TIMEOUT=5 is fine");
    env_case ("DDP_BACKEND", "bogus", NULL, NULL, DDP_EINVAL,
              "DDP_BACKEND=bogus");
    env_case ("DDP_BACKEND", "host", NULL, NULL, 0, "DDP_BACKEND=host");
    env_case ("DDP_BOOTSTRAP", "carrier-pigeon", NULL, NULL, DDP_EINVAL,
              "DDP_BOOTSTRAP=carrier-pigeon");
    env_case ("DDP_BOOTSTRAP", "single", "WORLD_SIZE", "2", DDP_ENOLAUNCH,
              "DDP_BOOTSTRAP=single with WORLD_SIZE=2");
}

/* What a bad value says (a timeout, any variable of env.c, RANK beyond
 * WORLD_SIZE without a launcher), and the bounds init uses (DDP_DEBUG's
 * line). */
static void timeout_messages (void)
{
    static const struct {
        const char *name, *val, *want;
    } cases[] = {
        { "DDP_TIMEOUT", "1e9", "DDP_TIMEOUT='1e9' is too long: give at most "
          "1000000 seconds (about 11 days), or inf for no timeout" },
        { "DDP_TIMEOUT", "soon", "DDP_TIMEOUT='soon' is not a number of "
          "seconds: give one in (0, 1000000], or inf for no timeout" },
        { "DDP_INIT_TIMEOUT", "0", "DDP_INIT_TIMEOUT='0' must be more than "
          "0: give a number of seconds in (0, 1000000], or inf" },
        { "DDP_TIMEOUT", "0x10", "DDP_TIMEOUT='0x10' is not a number of "
          "seconds" },
        { "DDP_SHM_SLOT", "-1", "DDP_SHM_SLOT='-1' is not a whole number "
          "from 4096 to 1073741824" },
        { "DDP_SHM_SLOT", "abc", "DDP_SHM_SLOT='abc' is not a whole number" },
        { "DDP_SHM_SLOT", "99999999999999999999", "DDP_SHM_SLOT="
          "'99999999999999999999' is not a whole number" },
        { "DDP_DEBUG", "yes", "DDP_DEBUG='yes' is not 0 or 1" },
        { "DDP_STRAGGLERS", "x", "DDP_STRAGGLERS='x' is not 0 or 1" },
        { "DDP_NCCL_BUFFER_CACHE", "no", "DDP_NCCL_BUFFER_CACHE='no' is not "
          "0 or 1" },
        { "DDP_LANES", "010", "DDP_LANES='010' is not a whole number" },
        { "RANK", "3", "RANK=3 is not a rank of WORLD_SIZE=1 (give one in "
          "[0, 0]), and there is no launcher" },
    };
    char path[] = "/tmp/ddp-core-t.XXXXXX", log[2048] = "";
    int fd, saved, rc;
    ssize_t n;

    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        clean_env ();
        setenv (cases[i].name, cases[i].val, 1);
        if (strcmp (cases[i].name, "RANK") == 0)
            setenv ("WORLD_SIZE", "1", 1);
        rc = ddp_init ();
        is_int (rc, DDP_EINVAL, "%s=%s", cases[i].name, cases[i].val);
        if (rc == 0)
            ddp_finalize ();    /* the next case starts from nothing */
        ok (strstr (ddpi_last_error (), cases[i].want) != NULL,
            "says what is allowed: %s", ddpi_last_error ());
    }
    /* The bounds in force, from DDP_DEBUG's init line. */
    clean_env ();
    if ((fd = mkstemp (path)) < 0 || (saved = dup (2)) < 0)
        return;
    unlink (path);
    fflush (stderr);
    dup2 (fd, 2);
    setenv ("DDP_DEBUG", "1", 1);
    setenv ("DDP_TIMEOUT", "inf", 1);
    if (ddp_init () == 0)
        ddp_finalize ();
    setenv ("DDP_TIMEOUT", "7", 1);
    setenv ("DDP_INIT_TIMEOUT", "90", 1);
    if (ddp_init () == 0)
        ddp_finalize ();
    fflush (stderr);
    dup2 (saved, 2);
    close (saved);
    clean_env ();
    n = pread (fd, log, sizeof (log) - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close (fd);
    ok (strstr (log, "timeout 1e+06 s (init 1e+06 s)") != NULL,
        "DDP_TIMEOUT=inf: no timeout (the maximum), for init too");
    ok (strstr (log, "timeout 7 s (init 90 s)") != NULL,
        "DDP_INIT_TIMEOUT apart from DDP_TIMEOUT");
}

static void bad_args (void)
{
    int x = 3, y = 0;
    int buf[4] = { 0 };
    ddp_dtype_t bad_dt = (ddp_dtype_t)99;
    ddp_op_t bad_op = (ddp_op_t)42;

    is_int (ddp_allreduce (NULL, &y, 1, DDP_INT32, DDP_SUM), DDP_EINVAL,
            "allreduce NULL sendbuf");
    is_int (ddp_allreduce (&x, NULL, 1, DDP_INT32, DDP_SUM), DDP_EINVAL,
            "allreduce NULL recvbuf");
    is_int (ddp_allreduce (NULL, NULL, 0, DDP_INT32, DDP_SUM), 0,
            "allreduce NULL buffers with count 0 is fine");
    is_int (ddp_allreduce (&x, &y, 1, bad_dt, DDP_SUM), DDP_EINVAL,
            "allreduce unknown dtype");
    is_int (ddp_allreduce (&x, &y, 1, (ddp_dtype_t)-1, DDP_SUM), DDP_EINVAL,
            "allreduce negative dtype");
    is_int (ddp_allreduce (&x, &y, 1, DDP_INT32, bad_op), DDP_EINVAL,
            "allreduce unknown op");
    is_int (ddp_allreduce (&x, &y, 1, DDP_INT32, (ddp_op_t)-1), DDP_EINVAL,
            "allreduce negative op");
    is_int (ddp_allreduce (&x, &y, SIZE_MAX / 2, DDP_INT32, DDP_SUM),
            DDP_EINVAL, "allreduce count overflowing size_t");
    is_int (ddp_reduce (&x, &y, 1, DDP_INT32, DDP_SUM, 1), DDP_EINVAL,
            "reduce root out of range");
    is_int (ddp_reduce (&x, &y, 1, DDP_INT32, DDP_SUM, -1), DDP_EINVAL,
            "reduce negative root");
    is_int (ddp_reduce (&x, NULL, 1, DDP_INT32, DDP_SUM, 0), DDP_EINVAL,
            "reduce NULL recvbuf on root");
    is_int (ddp_reduce (&x, &y, 1, DDP_INT32, bad_op, 0), DDP_EINVAL,
            "reduce unknown op");
    is_int (ddp_bcast (NULL, 1, DDP_INT32, 0), DDP_EINVAL, "bcast NULL buf");
    is_int (ddp_bcast (&x, 1, DDP_INT32, 1), DDP_EINVAL, "bcast root 1 of 1");
    is_int (ddp_bcast (&x, 1, bad_dt, 0), DDP_EINVAL, "bcast unknown dtype");
    is_int (ddp_gather (&x, NULL, 1, DDP_INT32, 0), DDP_EINVAL,
            "gather NULL recvbuf on root");
    is_int (ddp_gather (NULL, buf, 1, DDP_INT32, 0), DDP_EINVAL,
            "gather NULL sendbuf");
    is_int (ddp_gather (&x, buf, 1, DDP_INT32, 2), DDP_EINVAL,
            "gather root out of range");
    is_int (ddp_allgather (&x, NULL, 1, DDP_INT32), DDP_EINVAL,
            "allgather NULL recvbuf");
    is_int (ddp_allgather (&x, buf, 1, bad_dt), DDP_EINVAL,
            "allgather unknown dtype");
    is_int (ddp_barrier (), 0, "barrier still works after the errors");
}

/* A rank alone's copy over 256 KiB goes in pieces (host/coll.c). */
static void big_alone (void)
{
    size_t n = ((size_t)1 << 20) + 3;
    uint8_t *s = malloc (n), *r = malloc (n);
    bool same = false;

    if (s && r) {
        for (size_t i = 0; i < n; i++)
            s[i] = (uint8_t)(i * 7 + 1);
        memset (r, 0, n);
        same = ddp_allreduce (s, r, n, DDP_UINT8, DDP_SUM) == 0
               && memcmp (s, r, n) == 0;
    }
    ok (same, "allreduce of one rank: 1 MiB + 3 bytes copied in pieces");
    free (s);
    free (r);
}

static void single (void)
{
    int32_t a[5] = { 1, -2, 3, -4, 5 }, b[5];
    uint16_t h = 0x3c00, hb;
    double d = 2.5, all[1];
    int i, bad = 0;

    is_int (ddp_init (), 0, "init as a single process");
    is_int (ddp_init (), 0, "init again is a no-op");
    ok (ddp_rank () == 0 && ddp_world_size () == 1 && ddp_num_nodes () == 1
        && ddp_local_world_size () == 1, "rank 0 of 1 on 1 node");
    ok (!ddp_is_distributed () && ddp_is_main (), "not distributed, main");
    is_str (ddp_backend_name (), "host", "backend host");
    for (int op = 0; op < DDP_NUM_OPS; op++) {
        memset (b, 0, sizeof (b));
        if (ddp_allreduce (a, b, 5, DDP_INT32, (ddp_op_t)op) != 0
            || memcmp (a, b, sizeof (a)) != 0)
            bad++;
    }
    ok (!bad, "allreduce of one rank copies, every op");
    is_int (ddp_allreduce (&h, &hb, 1, DDP_FLOAT16, DDP_AVG), 0, "fp16 avg");
    ok (hb == 0x3c00, "fp16 avg of one rank is the value");
    big_alone ();
    memcpy (b, a, sizeof (a));
    is_int (ddp_allreduce (b, b, 5, DDP_INT32, DDP_SUM), 0, "in place");
    ok (memcmp (a, b, sizeof (a)) == 0, "in place keeps the data");
    memset (b, 0, sizeof (b));
    ok (ddp_reduce (a, b, 5, DDP_INT32, DDP_MAX, 0) == 0
        && memcmp (a, b, sizeof (a)) == 0, "reduce copies");
    ok (ddp_bcast (a, 5, DDP_INT32, 0) == 0 && a[4] == 5, "bcast keeps data");
    ok (ddp_gather (&d, all, 1, DDP_FLOAT64, 0) == 0 && all[0] == 2.5,
        "gather");
    all[0] = 0;
    ok (ddp_allgather (&d, all, 1, DDP_FLOAT64) == 0 && all[0] == 2.5,
        "allgather");
    for (i = 0; i < 1000; i++)
        if (ddp_barrier () != 0)
            bad++;
    ok (!bad, "1000 barriers");
    bad_args ();
    is_int (ddp_finalize (), 0, "finalize");
    is_int (ddp_finalize (), DDP_ENOINIT, "finalize twice: ENOINIT");
    is_int (ddp_barrier (), DDP_ENOINIT, "barrier after finalize: ENOINIT");
    is_str (ddp_backend_name (), "none", "backend none after finalize");
    is_int (ddp_init (), 0, "init again after finalize");
    is_int (ddp_allreduce (a, b, 5, DDP_INT32, DDP_SUM), 0, "and it works");
    is_int (ddp_finalize (), 0, "finalize again");
}

/* The NCCL section of ddp.h on the host backend (and in a build without
 * NCCL): DDP_ENOTSUP from the core, NULL / -1 from the accessors. */
static void gpu_section (void)
{
    double x = 1, y = 0;
    size_t used = 7, total = 7;

#ifdef HAVE_NCCL
    is_int (ddp_allreduce_stream (&x, &y, 1, DDP_FLOAT64, DDP_SUM, NULL),
            DDP_ENOINIT, "allreduce_stream before init: ENOINIT");
#else
    is_int (ddp_allreduce_stream (&x, &y, 1, DDP_FLOAT64, DDP_SUM, NULL),
            DDP_ENOTSUP, "built without NCCL: allreduce_stream is ENOTSUP");
    is_int (ddp_gpu_mem_info (&used, &total), DDP_ENOTSUP,
            "built without NCCL: gpu_mem_info is ENOTSUP");
#endif
    setenv ("DDP_BACKEND", "host", 1);
    if (ddp_init () < 0) {
        ok (0, "init on the host backend");
        return;
    }
    is_int (ddp_allreduce_stream (&x, &y, 1, DDP_FLOAT64, DDP_SUM, NULL),
            DDP_ENOTSUP, "host backend: allreduce_stream is ENOTSUP");
    is_int (ddp_bcast_stream (&x, 1, DDP_FLOAT64, 0, NULL), DDP_ENOTSUP,
            "host backend: bcast_stream is ENOTSUP");
    is_int (ddp_reduce_stream (&x, &y, 1, DDP_FLOAT64, DDP_SUM, 0, NULL),
            DDP_ENOTSUP, "host backend: reduce_stream is ENOTSUP");
    is_int (ddp_gather_stream (&x, &y, 1, DDP_FLOAT64, 0, NULL), DDP_ENOTSUP,
            "host backend: gather_stream is ENOTSUP");
    is_int (ddp_allgather_stream (&x, &y, 1, DDP_FLOAT64, NULL), DDP_ENOTSUP,
            "host backend: allgather_stream is ENOTSUP");
    is_int (ddp_stream_synchronize (NULL), DDP_ENOTSUP,
            "host backend: stream_synchronize is ENOTSUP");
    ok (ddp_nccl_comm () == NULL && ddp_cuda_stream () == NULL
            && ddp_cuda_device () == -1,
        "host backend: no communicator, stream or device");
    ok (y == 0, "and no data moved");
    if (ddp_gpu_mem_info (&used, &total) < 0)
        ok (used == 7 && total == 7, "gpu_mem_info failing leaves its outputs");
    ddp_finalize ();
    unsetenv ("DDP_BACKEND");
}

int main (void)
{
    plan (NO_PLAN);
    clean_env ();
    setenv ("DDP_DEBUG", "0", 1);
    before_init ();
    misc ();
    host_addrs ();
    environment ();
    timeout_messages ();
    single ();
    gpu_section ();
    done_testing ();
    return 0;
}
