/* ddp_spank.h - the context files' entry points, called by ddp.c.  The
 * state they share lives in sp_args.c. */
#ifndef DDP_SPANK_H
#define DDP_SPANK_H

#include <slurm/spank.h>

/* Local (srun) context.  Each returns 0 or -1 after logging why. */
int ddp_local_init (spank_t sp);
int ddp_local_user_init (spank_t sp);

/* Remote (slurmstepd) context.  Each returns 0 or -1 after logging why. */
int ddp_remote_user_init (spank_t sp);
int ddp_remote_task_init (spank_t sp);

#endif /* DDP_SPANK_H */
