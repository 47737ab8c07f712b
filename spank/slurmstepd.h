/* slurmstepd.h - the plugin in slurmstepd (remote context), called by
 * dispatch.c. */
#ifndef SP_SLURMSTEPD_H
#define SP_SLURMSTEPD_H

#include <slurm/spank.h>

/* slurm_spank_init in slurmstepd: note which process slurmstepd's own is
 * (the plugin may run in a child, sp_slurmstepd_post_opt). */
void sp_slurmstepd_init (void);

/* slurm_spank_init_post_opt in slurmstepd, as root, once per node and
 * step, after sp_args_init() and the option callbacks: decide whether the
 * step runs with ddp and compute what its tasks share (MASTER_ADDR,
 * MASTER_PORT).  Always returns 0 (Slurm ignores errors here); an error is
 * kept and fails every task in sp_slurmstepd_task_init(). */
int sp_slurmstepd_post_opt (spank_t sp);

/* slurm_spank_user_init in slurmstepd, once per node and step, as the
 * user: for a ddp step, read the step's GPU list (CUDA_VISIBLE_DEVICES of
 * the step's environment, which Slurm has set by then).  Returns 0. */
int sp_slurmstepd_user_init (spank_t sp);

/* On the step's first node it also claims MASTER_PORT for the step
 * (sp_port_lock, as root), which sp_slurmstepd_exit gives back: slurm_spank_exit
 * in slurmstepd, after the step's tasks have ended.  Returns 0. */
int sp_slurmstepd_exit (spank_t sp);

/* slurm_spank_task_init, per task as the user before exec: set the task's
 * rank variables, DDP_BACKEND and its GPU.  Returns 0 (also for steps
 * without ddp), or -1 after logging why, which fails the task's launch. */
int sp_slurmstepd_task_init (spank_t sp);

#endif /* SP_SLURMSTEPD_H */
