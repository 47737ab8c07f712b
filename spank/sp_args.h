/* sp_args.h - the plugin's settings and the request in effect.
 *
 * The one place that holds what the plugin was told: the plugstack.conf
 * arguments, the --ddp value from the option callback, and the value srun's
 * init found by itself before any option callback ran (srun must turn PMIx on
 * that early; see srun.c).  It also derives from them, in one place, what a
 * step runs with: the --ddp option when given, else what srun found, else the
 * plugstack.conf default; GPU binding when the admin allows it (bind=gpu) and
 * the user did not turn it off (',nobind').
 *
 * One instance per process: every process loads the plugin once, and
 * sp_args_init() starts it afresh.  No Slurm calls: the dispatch and context
 * files pass values in and log the messages that come back.
 */
#ifndef SP_ARGS_H
#define SP_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sp_conf.h"
#include "sp_option.h"

/* What a step runs with. */
struct sp_effective {
    enum sp_backend backend;    /* off, auto, host or nccl */
    bool bind;                  /* bind each task to one GPU */
};

/* Start afresh: parse the plugstack.conf arguments AC/AV and forget any
 * --ddp value.  Returns 0; on failure returns -1 with errno EINVAL and a
 * message naming the argument in ERR (ERRLEN bytes), and the settings are
 * the defaults (sp_conf_init). */
int sp_args_init (int ac, char *const av[], char *err, size_t errlen);

/* The --ddp option callback's VALUE (NULL: a bare --ddp).  The last call
 * wins.  Returns 0; on failure returns -1 with errno EINVAL, a message
 * naming the value and the valid ones in ERR (ERRLEN bytes), and nothing
 * changes. */
int sp_args_set_option (const char *value, char *err, size_t errlen);

/* The --ddp VALUE srun's init found itself (NULL: a bare --ddp), which
 * counts until an option callback gives one.  Returns 0, or -1 as for
 * sp_args_set_option(). */
int sp_args_set_found (const char *value, char *err, size_t errlen);

/* True when sp_args_set_option() succeeded since sp_args_init(). */
bool sp_args_have_option (void);

/* The request in effect (see above).  Never fails. */
struct sp_effective sp_args_effective (void);

/* Does the step slurmstepd runs get ddp?  STEPID is the step id Slurm
 * gave, or NULL when Slurm could not say.  Returns 1 (ddp on), 0 (the
 * request in effect is off, or STEPID is one of Slurm's special steps:
 * batch, extern, interactive), or -1 when ddp is asked for but the step id
 * is unknown: the step must then fail, not run silently without ddp. */
int sp_args_step_ddp (const uint32_t *stepid);

/* Why the last sp_args_init() refused the plugstack.conf arguments (its
 * ERR), or NULL when it accepted them. */
const char *sp_args_conf_error (void);

/* The plugstack.conf settings sp_args_init() set (all zero before the
 * first call: backend off, no binding).  Never NULL. */
const struct sp_conf *sp_args_conf (void);

#endif /* SP_ARGS_H */
