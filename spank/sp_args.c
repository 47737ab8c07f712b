/* sp_args.c - the plugin's settings and the request in effect. */
#include "config.h"
#include <stdio.h>
#include <string.h>

#include "sp_args.h"
#include "sp_err.h"

/* Step ids at and above this are Slurm's special steps (batch, extern,
 * interactive, ...): never a ddp step. */
#define SPECIAL_STEP_MIN 0xfffffff0U

/* A request one source gave, or none. */
struct given {
    bool set;
    struct sp_request request;
};

static struct {
    struct sp_conf conf;          /* plugstack.conf arguments */
    struct given option;          /* the --ddp option callback */
    struct given found;           /* what srun's init found itself */
    char conf_error[SP_ERRLEN];   /* why the arguments were refused, or "" */
} args;

int sp_args_init (int ac, char *const av[], char *err, size_t errlen)
{
    memset (&args, 0, sizeof (args));
    sp_conf_init (&args.conf);
    if (sp_conf_parse (ac, av, &args.conf, err, errlen) < 0) {
        snprintf (args.conf_error, sizeof (args.conf_error), "%s", err);
        sp_conf_init (&args.conf);
        return -1;
    }
    return 0;
}

const char *sp_args_conf_error (void)
{
    return args.conf_error[0] ? args.conf_error : NULL;
}

/* Parse VALUE into G; on failure G is left alone. */
static int give (struct given *g, const char *value, char *err, size_t errlen)
{
    if (sp_option_parse (value, &g->request, err, errlen) < 0)
        return -1;
    g->set = true;
    return 0;
}

int sp_args_set_option (const char *value, char *err, size_t errlen)
{
    return give (&args.option, value, err, errlen);
}

int sp_args_set_found (const char *value, char *err, size_t errlen)
{
    return give (&args.found, value, err, errlen);
}

bool sp_args_have_option (void)
{
    return args.option.set;
}

struct sp_effective sp_args_effective (void)
{
    struct sp_request r = { .backend = args.conf.default_backend,
                            .nobind = false };
    struct sp_effective e;

    if (args.option.set)
        r = args.option.request;
    else if (args.found.set)
        r = args.found.request;
    e.backend = r.backend;
    e.bind = args.conf.bind && !r.nobind;
    return e;
}

const struct sp_conf *sp_args_conf (void)
{
    return &args.conf;
}

int sp_args_step_ddp (const uint32_t *stepid)
{
    if (sp_args_effective ().backend == SP_BACKEND_OFF)
        return 0;
    if (!stepid)
        return -1;
    return *stepid < SPECIAL_STEP_MIN ? 1 : 0;
}
