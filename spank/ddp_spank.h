/* ddp_spank.h - state shared by the plugin's dispatch and context files. */
#ifndef DDP_SPANK_H
#define DDP_SPANK_H

#include <stdbool.h>
#include <slurm/spank.h>

#include "sp_conf.h"
#include "sp_option.h"

#define DDP_ERRLEN 512

/* The option variable Slurm uses to carry --ddp from sbatch/salloc (and from
 * srun) to the steps: "_SLURM_SPANK_OPTION_" + plugin name + "_" + option. */
#define DDP_OPTION_ENV "_SLURM_SPANK_OPTION_ddp_ddp"
/* The variable users may set to give a SPANK option (Slurm >= 21.08). */
#define DDP_OPTION_USER_ENV "SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp"

struct ddp_state {
    struct sp_conf conf;          /* plugstack.conf arguments */
    bool have_option;             /* the --ddp callback ran */
    struct sp_request option;     /* ... with this value */
};

/* The one instance (each process loads the plugin once). */
extern struct ddp_state ddp_state;

/* The request in effect: --ddp if given, else the plugstack default. */
struct sp_request ddp_effective_request (void);

/* Local (srun) context.  Each returns 0 or -1 after logging why. */
int ddp_local_init (spank_t sp);
int ddp_local_user_init (spank_t sp);

/* Remote (slurmstepd) context.  Each returns 0 or -1 after logging why. */
int ddp_remote_user_init (spank_t sp);
int ddp_remote_task_init (spank_t sp);

#endif /* DDP_SPANK_H */
