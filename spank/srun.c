/* srun.c - the plugin in srun (local context).
 *
 * Turning PMIx on must happen in slurm_spank_init, before srun reads
 * SLURM_MPI_TYPE and before any option callback runs, so here the plugin
 * finds --ddp itself: in srun's own argument vector, else in the variable
 * that carries --ddp from sbatch/salloc, else the plugstack default.  Only
 * then does it set SLURM_MPI_TYPE=pmix, without overwriting: an explicit
 * --mpi still wins, and sp_srun_user_init turns a non-PMIx choice into an
 * error.  Without --ddp (and default=off) nothing is touched.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sp_args.h"
#include "sp_argv.h"
#include "sp_err.h"
#include "sp_option.h"
#include "srun.h"

#define CMDLINE_MAX (256 * 1024)
#define ARGV_MAX 4096

/* The option variable Slurm uses to carry --ddp from sbatch/salloc (and from
 * srun) to the steps: "_SLURM_SPANK_OPTION_" + plugin name + "_" + option. */
#define OPTION_ENV "_SLURM_SPANK_OPTION_ddp_ddp"
/* The variable users may set to give a SPANK option (Slurm >= 21.08). */
#define OPTION_USER_ENV "SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp"

/* init found --ddp in srun's command line (sp_srun_user_init checks that srun
 * saw it too). */
static bool init_from_argv;

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
    static char buf[CMDLINE_MAX];
    static char *argv[ARGV_MAX];
    int argc;

    argc = read_cmdline (buf, sizeof (buf), argv, ARGV_MAX);
    if (argc > 0 && sp_argv_find (argc, argv, "ddp", value) == 1) {
        *source = "srun's command line";
        init_from_argv = true;
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

int sp_srun_init (spank_t sp)
{
    const char *value = NULL, *source = NULL;
    char err[SP_ERRLEN];

    (void) sp;
    if (find_request (&value, &source)
        && sp_args_set_found (value, err, sizeof (err)) < 0) {
        slurm_error ("%s (from %s)", err, source);
        return -1;
    }
    if (sp_args_effective ().backend == SP_BACKEND_OFF)
        return 0;
    if (setenv ("SLURM_MPI_TYPE", "pmix", 0) < 0) {
        slurm_error ("ddp: cannot set SLURM_MPI_TYPE: %s", strerror (errno));
        return -1;
    }
    return 0;
}

/* srun has put its MPI plugin choice in SLURM_MPI_TYPE by now. */
int sp_srun_user_init (spank_t sp)
{
    struct sp_effective r = sp_args_effective ();
    const char *mpi = getenv ("SLURM_MPI_TYPE");

    (void) sp;
    if (init_from_argv && !sp_args_have_option ())
        slurm_error ("ddp: warning: the command line scan took a word for "
                     "--ddp that srun did not; this step gets a PMIx server "
                     "but no ddp (write srun options as --option=VALUE)");
    if (r.backend == SP_BACKEND_OFF)
        return 0;
    if (!mpi || strncmp (mpi, "pmix", 4) != 0) {
        slurm_error ("ddp: --ddp=%s needs Slurm's PMIx plugin, but this step "
                     "uses --mpi=%s; drop --mpi (the plugin selects pmix) or "
                     "use --mpi=pmix", sp_backend_name (r.backend),
                     mpi ? mpi : "(unset)");
        return -1;
    }
    return 0;
}
