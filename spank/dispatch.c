/* dispatch.c - SPANK entry points of ddp.so: hand the plugstack.conf
 * arguments and the --ddp value to sp_args.c, register --ddp, and dispatch
 * to the file of the context (srun.c, slurmstepd.c).  sbatch and salloc
 * (allocator context) only validate --ddp; Slurm carries it to the steps.
 * No state here: it lives in sp_args.c and the context files. */
#include "config.h"
#include <slurm/spank.h>

#include "slurmstepd.h"
#include "sp_args.h"
#include "sp_err.h"
#include "srun.h"

SPANK_PLUGIN (ddp, 1);

static int option_cb (int val, const char *optarg, int remote);

static struct spank_option option = {
    .name = "ddp",
    .arginfo = "BACKEND",
    .usage = "Run the step for distributed training: set RANK, WORLD_SIZE, "
             "LOCAL_RANK, MASTER_ADDR, MASTER_PORT, ..., bind one GPU per "
             "task and start PMIx.  BACKEND (optional) is auto (the "
             "default), nccl, host or off; add ',nobind' to keep every GPU "
             "visible to every task.",
    .has_arg = 2,
    .val = 0,
    .cb = option_cb,
};

/* --ddp[=VALUE], from srun/sbatch/salloc (remote == 0) or forwarded to
 * slurmstepd (remote == 1; errors there are only logged, so srun validates
 * first).  It may run more than once: srun first applies the value inherited
 * from sbatch/salloc (SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp), then its own
 * command line, and slurmstepd gets it both from the launch message and the
 * environment.  The last value wins, as for srun's own options. */
static int option_cb (int val, const char *optarg, int remote)
{
    char err[SP_ERRLEN];

    (void) val;
    (void) remote;
    if (sp_args_set_option (optarg, err, sizeof (err)) < 0) {
        slurm_error ("%s", err);
        return -1;
    }
    return 0;
}

/* Start the plugin: the plugstack.conf arguments AC/AV, then --ddp.
 * Returns 0, or -1 after logging why. */
static int load (spank_t sp, int ac, char **av)
{
    char err[SP_ERRLEN];
    spank_err_t rc;

    if (sp_args_init (ac, av, err, sizeof (err)) < 0) {
        /* In srun, sbatch and salloc a plugin that fails to load stops
         * the command with the message: loud, on the host where the admin
         * edited the file.  In slurmstepd Slurm reports it as a launch
         * failure without the reason, and Slurm 22.05's srun then exits 0
         * with no task run: there the plugin loads, and refuses only the
         * --ddp steps, with the reason (slurmstepd.c). */
        if (spank_context () != S_CTX_REMOTE) {
            slurm_error ("%s; the ddp plugin refuses to load", err);
            return -1;
        }
        slurm_error ("%s; this node refuses every --ddp step until its "
                     "plugstack.conf is fixed (steps without --ddp run)",
                     err);
    }
    if ((rc = spank_option_register (sp, &option)) != ESPANK_SUCCESS) {
        slurm_error ("ddp: cannot register --ddp: %s", spank_strerror (rc));
        return -1;
    }
    return 0;
}

int slurm_spank_init (spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context ();

    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return 0;
    if (load (sp, ac, av) < 0)
        return -1;
    if (ctx == S_CTX_REMOTE)
        sp_slurmstepd_init ();
    return ctx == S_CTX_LOCAL ? sp_srun_init (sp) : 0;
}

/* The callbacks below run FN (SP) in context CTX only, and do nothing
 * elsewhere (they are called in every context).  AC and AV, the
 * plugstack.conf arguments, were parsed by slurm_spank_init. */
static int in_context (spank_context_t ctx, int (*fn) (spank_t), spank_t sp,
                       int ac, char **av)
{
    (void) ac;
    (void) av;
    return spank_context () == ctx ? fn (sp) : 0;
}

int slurm_spank_local_user_init (spank_t sp, int ac, char **av)
{
    return in_context (S_CTX_LOCAL, sp_srun_user_init, sp, ac, av);
}

int slurm_spank_init_post_opt (spank_t sp, int ac, char **av)
{
    return in_context (S_CTX_REMOTE, sp_slurmstepd_post_opt, sp, ac, av);
}

int slurm_spank_user_init (spank_t sp, int ac, char **av)
{
    return in_context (S_CTX_REMOTE, sp_slurmstepd_user_init, sp, ac, av);
}

int slurm_spank_task_init (spank_t sp, int ac, char **av)
{
    return in_context (S_CTX_REMOTE, sp_slurmstepd_task_init, sp, ac, av);
}

int slurm_spank_exit (spank_t sp, int ac, char **av)
{
    if (spank_context () == S_CTX_LOCAL)
        sp_srun_exit ();
    return in_context (S_CTX_REMOTE, sp_slurmstepd_exit, sp, ac, av);
}
