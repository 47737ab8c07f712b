/* srun.h - the plugin in srun (local context), called by dispatch.c. */
#ifndef SP_SRUN_H
#define SP_SRUN_H

#include <slurm/spank.h>

/* slurm_spank_init in srun, after sp_args_init(): find the --ddp value
 * srun is about to see (its command line, else the option variables) and,
 * unless the request in effect is off, turn PMIx and kill-on-bad-exit on
 * for the step (SLURM_MPI_TYPE=pmix, SLURM_KILL_BAD_EXIT=1, never
 * overwriting).  Returns 0, or -1 after logging why (a bad --ddp value,
 * naming where it came from; setenv failed). */
int sp_srun_init (spank_t sp);

/* slurm_spank_local_user_init: after option processing, allocation and
 * step creation, before launch: warn about "--ddp host" (a program called
 * host), and set the plan for --ddp=auto (SP_PLAN_ENV) in srun's
 * environment, which the step's environment is made from next.  Returns 0,
 * or -1 after logging why: the step asks for ddp but srun chose an MPI
 * plugin other than PMIx (naming where that came from), the step is
 * heterogeneous, or it runs torchrun with several tasks on a node. */
int sp_srun_user_init (spank_t sp);

/* For a multi-node step, sp_srun_user_init also starts the relay of its
 * MASTER_PORT (sp_relay.h; a thread of srun's, SP_RELAY_ENV in the step's
 * environment).  slurm_spank_exit in srun: stop the relay and free it
 * (nothing when none runs). */
void sp_srun_exit (void);

#endif /* SP_SRUN_H */
