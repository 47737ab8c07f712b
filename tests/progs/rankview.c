/* rankview.c - print how this task sees the step, one line, for the tests and
 * the quick start: Slurm's own view plus the ddp variables when present.
 *
 *   rankview             the standard line below
 *   rankview NAME...     NAME=VALUE for each variable named ("-" if unset),
 *                        in the order given
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *env (const char *name)
{
    const char *v = getenv (name);
    return v ? v : "-";
}

int main (int argc, char *argv[])
{
    char host[256] = "?";
    int i;

    if (argc > 1) {
        for (i = 1; i < argc; i++)
            printf ("%s%s=%s", i > 1 ? " " : "", argv[i], env (argv[i]));
        printf ("\n");
        return 0;
    }
    gethostname (host, sizeof (host) - 1);
    printf ("procid=%s localid=%s nodeid=%s node=%s ntasks=%s host=%s "
            "RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s NODE_RANK=%s MASTER_ADDR=%s "
            "MASTER_PORT=%s DDP_BACKEND=%s CUDA_VISIBLE_DEVICES=%s pmix=%s\n",
            env ("SLURM_PROCID"), env ("SLURM_LOCALID"), env ("SLURM_NODEID"),
            env ("SLURMD_NODENAME"), env ("SLURM_NTASKS"), host, env ("RANK"),
            env ("LOCAL_RANK"), env ("WORLD_SIZE"), env ("NODE_RANK"),
            env ("MASTER_ADDR"), env ("MASTER_PORT"), env ("DDP_BACKEND"),
            env ("CUDA_VISIBLE_DEVICES"),
            getenv ("PMIX_NAMESPACE") ? "yes" : "no");
    return 0;
}
