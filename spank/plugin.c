/* plugin.c - SPANK entry points (placeholder: loads, registers nothing). */
#include "config.h"
#include <slurm/spank.h>

SPANK_PLUGIN (ddp, 1);

int slurm_spank_init (spank_t sp, int ac, char **av)
{
    (void) sp; (void) ac; (void) av;
    return ESPANK_SUCCESS;
}
