/* method.c - what the bootstrap chain (bootstrap.c) and its methods
 * (local.c, pmix*.c, single.c) share that needs no handle (method.h): the
 * error formatter every one of them returns through, and the check for a
 * world that a launcher announced without a bootstrap.  Below bootstrap.c
 * and the methods, so that the chain's calls into a method never come
 * back up into bootstrap.c.  (The blobs methods keep on this side:
 * blobs.c.) */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ddp_internal.h"
#include "method.h"

int bootstrap_err (char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start (ap, fmt);
        vsnprintf (err, errlen, fmt, ap);
        va_end (ap);
    }
    return code;
}

long bootstrap_foreign_world (const char **name)
{
    static const char *vars[] = { "WORLD_SIZE", "SLURM_STEP_NUM_TASKS",
                                  "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL };
    long v;
    int i;

    for (i = 0; vars[i]; i++) {
        if (ddpi_parse_long (getenv (vars[i]), 1, INT_MAX, &v) == 0 && v > 1) {
            *name = vars[i];
            return v;
        }
    }
    return 0;
}
