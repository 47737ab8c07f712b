/* srun.c - the plugin in srun (local context).
 *
 * Turning PMIx on must happen in slurm_spank_init, before srun reads
 * SLURM_MPI_TYPE and before any option callback runs, so here the plugin
 * finds --ddp itself: in srun's own argument vector, else in the variable
 * that carries --ddp from sbatch/salloc, else the plugstack default.  Only
 * then does it set SLURM_MPI_TYPE=pmix and SLURM_KILL_BAD_EXIT=1 (a failed
 * task ends the whole step, as under torchrun), without overwriting: an
 * explicit --mpi, -K0 or variable still wins, and sp_srun_user_init turns a
 * non-PMIx choice into an error naming where it came from.  Without --ddp
 * (and default=off) nothing is touched.
 *
 * After allocation, before launch (sp_srun_user_init), srun refuses what
 * --ddp cannot do (a heterogeneous step, torchrun with several tasks on a
 * node), warns about "--ddp host", and hands every node its plan for
 * --ddp=auto (sp_plan.h) in the step's environment.  For a multi-node step
 * it also starts the relay (sp_relay.h) through which the step's first
 * node tells the others the MASTER_PORT it claimed: a thread of srun's
 * that serves until slurm_spank_exit (sp_srun_exit).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sp_args.h"
#include "sp_argv.h"
#include "sp_err.h"
#include "sp_option.h"
#include "sp_plan.h"
#include "sp_relay.h"
#include "sp_torchrun.h"
#include "srun.h"

#define CMDLINE_MAX (256 * 1024)
#define ARGV_MAX 4096

/* The option variable Slurm uses to carry --ddp from sbatch/salloc (and from
 * srun) to the steps: "_SLURM_SPANK_OPTION_" + plugin name + "_" + option. */
#define OPTION_ENV "_SLURM_SPANK_OPTION_ddp_ddp"
/* The variable users may set to give a SPANK option (Slurm >= 21.08). */
#define OPTION_USER_ENV "SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp"

/* What init saw and did, for sp_srun_user_init. */
static struct {
    int argc;                   /* srun's command line; argc -1: unread */
    char *argv[ARGV_MAX];
    bool from_argv;             /* --ddp found in srun's command line */
    bool set_mpi;               /* the plugin set SLURM_MPI_TYPE=pmix */
    bool set_kill;              /* the plugin set SLURM_KILL_BAD_EXIT=1 */
    char mpi_env[64];           /* SLURM_MPI_TYPE before init, or "" */
} init;

/* Read /proc/self/cmdline into BUF and split it into ARGV.  Returns argc,
 * or -1.  A truncated command line keeps only its complete words. */
static int read_cmdline (char *buf, size_t len, char **argv, int max)
{
    ssize_t n, total = 0;
    int fd, argc = 0;
    char *p;

    if ((fd = open ("/proc/self/cmdline", O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    while ((size_t) total < len - 1
           && (n = read (fd, buf + total, len - 1 - (size_t) total)) > 0)
        total += n;
    close (fd);
    if (total <= 0)
        return -1;
    while (total > 0 && buf[total - 1] != '\0')
        total--;                    /* drop a cut-off last word */
    for (p = buf; p < buf + total && argc < max; p += strlen (p) + 1)
        argv[argc++] = p;
    return argc;
}

/* Find the --ddp value srun is about to see.  Returns 1 and sets *VALUE
 * (possibly NULL) and *SOURCE when given, 0 when not. */
static int find_request (const char **value, const char **source)
{
    if (init.argc > 0
        && sp_argv_find (init.argc, init.argv, "ddp", value) == 1) {
        *source = "srun's command line";
        init.from_argv = true;
        return 1;
    }
    if ((*value = getenv (OPTION_ENV))) {
        *source = "the job's --ddp (" OPTION_ENV ")";
        return 1;
    }
    if ((*value = getenv (OPTION_USER_ENV))) {
        *source = OPTION_USER_ENV;
        return 1;
    }
    return 0;
}

/* setenv (NAME, VALUE) unless NAME is set.  Returns 1 when it set it, 0
 * when NAME was set already, -1 after logging why. */
static int set_default (const char *name, const char *value)
{
    if (getenv (name))
        return 0;
    if (setenv (name, value, 0) < 0) {
        slurm_error ("ddp: cannot set %s: %s", name, strerror (errno));
        return -1;
    }
    return 1;
}

int sp_srun_init (spank_t sp)
{
    static char buf[CMDLINE_MAX];
    const char *value = NULL, *source = NULL, *mpi;
    char err[SP_ERRLEN];
    int rc;

    (void) sp;
    memset (&init, 0, sizeof (init));
    init.argc = read_cmdline (buf, sizeof (buf), init.argv, ARGV_MAX);
    if (find_request (&value, &source)
        && sp_args_set_found (value, err, sizeof (err)) < 0) {
        slurm_error ("%s (from %s)", err, source);
        return -1;
    }
    if ((mpi = getenv ("SLURM_MPI_TYPE")))
        snprintf (init.mpi_env, sizeof (init.mpi_env), "%s", mpi);
    if (sp_args_effective ().backend == SP_BACKEND_OFF)
        return 0;
    if ((rc = set_default ("SLURM_MPI_TYPE", "pmix")) < 0)
        return -1;
    init.set_mpi = rc == 1;
    if ((rc = set_default ("SLURM_KILL_BAD_EXIT", "1")) < 0)
        return -1;
    init.set_kill = rc == 1;
    return 0;
}

/* Say where srun's non-PMIx MPI type MPI came from, and what to do. */
static int refuse_mpi (enum sp_backend b, const char *mpi)
{
    const char *cli = NULL;

    if (init.argc > 0 && sp_argv_value (init.argc, init.argv, "mpi", 0, &cli)
        == 1 && cli)
        slurm_error ("ddp: --ddp=%s needs Slurm's PMIx plugin, but this step "
                     "uses --mpi=%s (srun's command line); drop --mpi (the "
                     "plugin selects pmix) or use --mpi=pmix",
                     sp_backend_name (b), cli);
    else if (init.mpi_env[0])
        slurm_error ("ddp: --ddp=%s needs Slurm's PMIx plugin, but this step "
                     "uses MPI type %s from SLURM_MPI_TYPE=%s in the "
                     "environment; unset SLURM_MPI_TYPE or set it to pmix",
                     sp_backend_name (b), mpi, init.mpi_env);
    else if (!init.set_mpi)
        slurm_error ("ddp: --ddp=%s needs Slurm's PMIx plugin, but this step "
                     "uses the cluster's MpiDefault (%s): the plugin did not "
                     "find --ddp in srun's command line before srun parsed "
                     "it (%s), so it could not select pmix; write srun's "
                     "options as --option=VALUE before the command, or add "
                     "--mpi=pmix", sp_backend_name (b), mpi,
                     init.argc > 0 ? "another option took it for its "
                                     "argument"
                                   : "/proc/self/cmdline could not be read");
    else
        slurm_error ("ddp: --ddp=%s needs Slurm's PMIx plugin, but this step "
                     "uses MPI type %s; use --mpi=pmix", sp_backend_name (b),
                     mpi);
    return -1;
}

/* "srun --ddp host prog" runs a program called host: warn when the word
 * after a bare --ddp, which srun takes for the command, is a --ddp value. */
static void warn_bare_value (void)
{
    struct sp_request r;
    int cmd;

    if (init.argc <= 0
        || !(cmd = sp_argv_bare_before_command (init.argc, init.argv, "ddp"))
        || sp_option_parse (init.argv[cmd], &r, NULL, 0) < 0)
        return;
    slurm_error ("ddp: warning: '--ddp %s' runs a program called '%s' with "
                 "--ddp=auto: srun takes the value of --ddp only after '=' "
                 "(--ddp=%s)", init.argv[cmd], init.argv[cmd],
                 init.argv[cmd]);
}

/* Refuse a heterogeneous step (srun ... : ..., --het-group=0,1): each
 * component's slurmstepd knows only its own tasks. */
static int refuse_het (void)
{
    const char *groups = NULL;

    if (init.argc <= 0)
        return 0;
    if (!sp_argv_has_colon (init.argc, init.argv)
        && !(sp_argv_value (init.argc, init.argv, "het-group", 0, &groups)
             == 1 && groups && strpbrk (groups, ",-")))
        return 0;
    slurm_error ("ddp: --ddp does not support heterogeneous steps (srun ... : "
                 "..., --het-group with several components): the plugin sets "
                 "RANK, WORLD_SIZE, GPUs and MASTER_PORT per component and "
                 "cannot make them one world.  Run one homogeneous step "
                 "with --ddp, or drop --ddp and use --mpi=pmix: Slurm's PMIx "
                 "gives the components one namespace, so libddp programs "
                 "see one world across them");
    return -1;
}

/* Refuse torchrun with more than one task on a node: it starts its own
 * workers. */
static int refuse_torchrun (spank_t sp)
{
    uint32_t ntasks, nnodes;
    char **argv = NULL;
    int argc = 0;

    if (spank_get_item (sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS
        || !sp_cmd_is_torchrun (argc, argv)
        || spank_get_item (sp, S_JOB_TOTAL_TASK_COUNT, &ntasks)
           != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS
        || ntasks <= nnodes)
        return 0;
    slurm_error ("ddp: this step runs torchrun, which starts its own workers, "
                 "with %u tasks on %u nodes; " SP_TORCHRUN_ADVICE,
                 (unsigned) ntasks, (unsigned) nnodes);
    return -1;
}

/* OPTION (-LETTER) from srun's command line, else the variable ENV. */
static const char *option (const char *name, char letter, const char *env)
{
    const char *v = NULL;

    if (init.argc > 0
        && sp_argv_value (init.argc, init.argv, name, letter, &v) == 1 && v)
        return v;
    return getenv (env);
}

/* The plan for --ddp=auto, for every node (SP_PLAN_ENV). */
static int hand_out_plan (void)
{
    static const char *const gpu_options[] = {
        "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket", "gres",
        "ntasks-per-gpu", NULL,
    };
    struct sp_gpu_opts o = { .unsure = init.argc <= 0 };
    struct sp_plan plan;
    char buf[SP_PLAN_MAXLEN + 1];

    o.gpus_per_task = option ("gpus-per-task", 0, "SLURM_GPUS_PER_TASK");
    o.gpus_per_node = option ("gpus-per-node", 0, "SLURM_GPUS_PER_NODE");
    if (!(o.gres = option ("gres", 0, "SLURM_GRES")))
        o.gres = getenv ("SLURM_STEP_GRES");
    o.gpus = option ("gpus", 'G', "SLURM_GPUS");
    o.gpus_per_socket = option ("gpus-per-socket", 0, "SLURM_GPUS_PER_SOCKET");
    o.ntasks_per_gpu = option ("ntasks-per-gpu", 0, "SLURM_NTASKS_PER_GPU");
    if (init.argc > 0 && sp_argv_abbreviates (init.argc, init.argv,
                                              gpu_options))
        o.unsure = true;
    sp_plan_classify (&o, &plan);
    plan.kill_set = init.set_kill;
    if (sp_plan_format (&plan, buf, sizeof (buf)) < 0
        || setenv (SP_PLAN_ENV, buf, 1) < 0) {
        slurm_error ("ddp: cannot set %s: %s", SP_PLAN_ENV, strerror (errno));
        return -1;
    }
    return 0;
}

/* The relay of the step's MASTER_PORT and the thread serving it. */
static struct {
    struct sp_relay *r;
    int stop[2];                /* write a byte to stop[1]: the thread ends */
    pthread_t thread;
} relay = { NULL, { -1, -1 }, 0 };

static void *relay_main (void *arg)
{
    (void) arg;
    if (sp_relay_serve (relay.r, relay.stop[0]) < 0)
        slurm_error ("ddp: the relay of MASTER_PORT stopped: %s",
                     strerror (errno));
    return NULL;
}

/* Start the relay of a step on NNODES nodes (none for one node) and put
 * its "PORT:TOKEN" in SP_RELAY_ENV for the nodes.  A relay that cannot
 * start is a warning: the nodes then use the derived port as it is. */
static void start_relay (uint32_t nnodes)
{
    char spec[SP_RELAY_SPEC_MAX + 1];

    if (nnodes < 2 || relay.r)
        return;
    if (pipe2 (relay.stop, O_CLOEXEC) < 0
        || !(relay.r = sp_relay_create (spec, sizeof (spec)))
        || setenv (SP_RELAY_ENV, spec, 1) < 0
        || pthread_create (&relay.thread, NULL, relay_main, NULL) != 0) {
        slurm_error ("ddp: warning: cannot start the relay of MASTER_PORT "
                     "(%s): the step's nodes use the port derived from its "
                     "ids, refused when taken on its first node",
                     strerror (errno));
        (void) unsetenv (SP_RELAY_ENV);
        sp_relay_destroy (relay.r);
        relay.r = NULL;
    }
}

void sp_srun_exit (void)
{
    if (!relay.r)
        return;
    if (write (relay.stop[1], "x", 1) == 1)
        pthread_join (relay.thread, NULL);
    else
        pthread_cancel (relay.thread);
    sp_relay_destroy (relay.r);
    relay.r = NULL;
}

/* srun has put its MPI plugin choice in SLURM_MPI_TYPE by now, and the
 * environment it launches the step with is srun's own after this. */
int sp_srun_user_init (spank_t sp)
{
    struct sp_effective r = sp_args_effective ();
    const char *mpi = getenv ("SLURM_MPI_TYPE");
    uint32_t nnodes = 1;

    if (init.from_argv && !sp_args_have_option ())
        slurm_error ("ddp: warning: the command line scan took a word for "
                     "--ddp that srun did not; this step gets a PMIx server "
                     "and kill-on-bad-exit but no ddp (write srun options as "
                     "--option=VALUE)");
    if (r.backend == SP_BACKEND_OFF)
        return 0;
    warn_bare_value ();
    if (refuse_het () < 0 || refuse_torchrun (sp) < 0)
        return -1;
    if (!mpi || strncmp (mpi, "pmix", 4) != 0)
        return refuse_mpi (r.backend, mpi ? mpi : "none");
    if (spank_get_item (sp, S_JOB_NNODES, &nnodes) == ESPANK_SUCCESS)
        start_relay (nnodes);
    return hand_out_plan ();
}
