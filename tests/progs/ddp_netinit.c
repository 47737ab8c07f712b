/* ddp_netinit.c - how long ddp_init takes, and a checked allreduce of a
 * given size, for the multi-homed cases of the networked test cluster
 * (t0270-ddp-ifaces.t).
 *
 * Usage: ddp_netinit [BYTES [TIMES]]  (default 8 bytes, once)
 * Every rank prints "ddp_netinit rank R: init_s=S allreduce_s=T ok"
 * (T: all TIMES calls), or "... FAIL: why" and exits 1; the tasks' own
 * MASTER_ADDR is printed too ("master=ADDR").
 */
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ddp.h"

static double now (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main (int argc, char **argv)
{
    size_t bytes = argc > 1 ? strtoul (argv[1], NULL, 10) : 8;
    long times = argc > 2 ? strtol (argv[2], NULL, 10) : 1;
    size_t n = bytes / sizeof (int32_t) ? bytes / sizeof (int32_t) : 1;
    const char *master = getenv ("MASTER_ADDR");
    double t0 = now (), t1, t2;
    int32_t *buf;
    int rc, rank, size;
    size_t bad = 0;

    if ((rc = ddp_init ()) != 0) {
        printf ("ddp_netinit: FAIL: ddp_init: %s: %s\n", ddp_strerror (rc),
                ddp_last_error ());
        return 1;
    }
    t1 = now ();
    rank = ddp_rank ();
    size = ddp_world_size ();
    if (!(buf = malloc (n * sizeof (*buf)))) {
        printf ("ddp_netinit rank %d: FAIL: out of memory\n", rank);
        return 1;
    }
    for (long k = 0; k < times && !bad; k++) {
        for (size_t i = 0; i < n; i++)
            buf[i] = (int32_t)(rank + 1) + (int32_t)(i % 7);
        if ((rc = ddp_allreduce (buf, buf, n, DDP_INT32, DDP_SUM)) != 0) {
            printf ("ddp_netinit rank %d: FAIL: allreduce: %s: %s\n", rank,
                    ddp_strerror (rc), ddp_last_error ());
            return 1;
        }
        for (size_t i = 0; i < n; i++)
            bad += buf[i] != (int32_t)(size * (size + 1) / 2)
                             + (int32_t)(size * (int32_t)(i % 7));
    }
    t2 = now ();
    printf ("ddp_netinit rank %d: init_s=%.3f allreduce_s=%.3f master=%s "
            "%s\n", rank, t1 - t0, t2 - t1, master ? master : "-",
            bad ? "FAIL: wrong sums" : "ok");
    free (buf);
    ddp_finalize ();
    return bad != 0;
}
