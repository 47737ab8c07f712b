/* args.c - the settings and the request in effect (spank/sp_args.c). */
#include "config.h"
#include <errno.h>
#include "sp_args.h"
#include "sp_err.h"
#include "tap.h"
#include "words.h"

/* sp_args_init() with the arguments AV; fills ERR. */
static int init (char *err, size_t len, char **av)
{
    return sp_args_init (nwords (av), av, err, len);
}

/* Is the request in effect BACKEND, with binding BIND? */
static void effective (enum sp_backend backend, bool bind, const char *what)
{
    struct sp_effective e = sp_args_effective ();
    ok (e.backend == backend && e.bind == bind, "%s: %s, %s", what,
        sp_backend_name (backend), bind ? "bind" : "no binding");
    if (e.backend != backend || e.bind != bind)
        diag ("  got %s, %s", sp_backend_name (e.backend),
              e.bind ? "bind" : "no binding");
}

static void test_before_init (void)
{
    const struct sp_conf *c = sp_args_conf ();
    ok (c != NULL && c->default_backend == SP_BACKEND_OFF && !c->bind,
        "before sp_args_init the settings are all zero");
    effective (SP_BACKEND_OFF, false, "before sp_args_init");
    ok (!sp_args_have_option (), "before sp_args_init no option");
}

static void test_sources (void)
{
    char err[SP_ERRLEN];

    ok (init (err, sizeof (err), NO_WORDS) == 0, "no arguments load");
    ok (sp_args_conf ()->port_lo == 29500 && sp_args_conf ()->torch_env,
        "no arguments: the defaults");
    effective (SP_BACKEND_OFF, true, "nothing given: the default (off)");
    ok (sp_args_set_found ("host", err, sizeof (err)) == 0,
        "srun's init finds --ddp=host");
    effective (SP_BACKEND_HOST, true, "what srun found counts");
    ok (!sp_args_have_option (), "what srun found is not the option");
    ok (sp_args_set_option ("off", err, sizeof (err)) == 0
        && sp_args_have_option (), "the option callback gives off");
    effective (SP_BACKEND_OFF, true, "the option beats what srun found");
    ok (sp_args_set_found ("nccl", err, sizeof (err)) == 0,
        "srun's init finds another value later");
    effective (SP_BACKEND_OFF, true, "the option still wins");
    ok (sp_args_set_option ("nccl,nobind", err, sizeof (err)) == 0,
        "the option is given again");
    effective (SP_BACKEND_NCCL, false, "the last option wins, nobind");
    ok (sp_args_set_option (NULL, err, sizeof (err)) == 0,
        "a bare --ddp");
    effective (SP_BACKEND_AUTO, true, "a bare --ddp is auto");
}

static void test_bad_values (void)
{
    char err[SP_ERRLEN] = "";

    ok (init (err, sizeof (err), WORDS ("default=host")) == 0,
        "default=host loads");
    errno = 0;
    ok (sp_args_set_found ("sometimes", err, sizeof (err)) == -1
        && errno == EINVAL && strstr (err, "invalid --ddp value 'sometimes'"),
        "a bad value srun found is refused, naming it");
    effective (SP_BACKEND_HOST, true, "and changes nothing");
    ok (sp_args_set_option ("nccl", err, sizeof (err)) == 0, "--ddp=nccl");
    errno = 0;
    ok (sp_args_set_option ("nccl,host", err, sizeof (err)) == -1
        && errno == EINVAL && strstr (err, "off, auto, host or nccl"),
        "a bad option is refused with the valid values");
    effective (SP_BACKEND_NCCL, true, "and the last good one stays");
}

static void test_init (void)
{
    char err[SP_ERRLEN] = "";

    ok (init (err, sizeof (err), WORDS ("default=auto", "bind=none",
              "port_range=40000-40001", "torch_env=no")) == 0,
        "every key loads");
    effective (SP_BACKEND_AUTO, false,
               "bind=none: the admin turns binding off");
    ok (sp_args_conf ()->port_lo == 40000 && sp_args_conf ()->port_hi == 40001
        && !sp_args_conf ()->torch_env, "the settings are kept");
    ok (sp_args_set_option ("host", err, sizeof (err)) == 0, "--ddp=host");
    effective (SP_BACKEND_HOST, false, "the user cannot turn binding on");
    ok (init (err, sizeof (err), WORDS ("default=nccl")) == 0, "init again");
    ok (!sp_args_have_option (), "init forgets the option");
    effective (SP_BACKEND_NCCL, true, "and the earlier settings");
    ok (sp_args_set_found ("host", err, sizeof (err)) == 0, "srun finds host");
    errno = 0;
    ok (init (err, sizeof (err), WORDS ("default=nccl", "oops=1")) == -1
        && errno == EINVAL && strstr (err, "unknown key 'oops'"),
        "a bad argument fails init, naming it");
    ok (sp_args_conf ()->default_backend == SP_BACKEND_OFF
        && sp_args_conf ()->bind && sp_args_conf ()->port_lo == 29500,
        "a failed init leaves the defaults");
    effective (SP_BACKEND_OFF, true, "and forgets what srun found");
    ok (sp_args_conf_error () && strstr (sp_args_conf_error (),
                                         "unknown key 'oops'"),
        "the refusal is kept, for slurmstepd to refuse --ddp steps with");
    ok (init (err, sizeof (err), WORDS ("default=nccl", "default=sometimes"))
        == -1 && sp_args_conf ()->default_backend == SP_BACKEND_OFF,
        "a key parsed before the bad one is not kept either");
    ok (init (err, sizeof (err), WORDS ("default=auto")) == 0
        && sp_args_conf_error () == NULL, "a good init clears it");
}

/* A step id Slurm could not give must not mean "no ddp". */
static void test_step (void)
{
    char err[SP_ERRLEN];
    uint32_t id;

    ok (init (err, sizeof (err), NO_WORDS) == 0, "defaults (off)");
    id = 3;
    is_int (sp_args_step_ddp (&id), 0, "no --ddp: step 3 is not a ddp step");
    is_int (sp_args_step_ddp (NULL), 0,
            "no --ddp: an unknown step id does not matter");
    ok (sp_args_set_option ("host", err, sizeof (err)) == 0, "--ddp=host");
    is_int (sp_args_step_ddp (&id), 1, "--ddp: step 3 is a ddp step");
    id = 0xfffffffbU;           /* SLURM_BATCH_SCRIPT */
    is_int (sp_args_step_ddp (&id), 0, "--ddp: the batch step is not");
    id = 0xfffffffcU;           /* SLURM_EXTERN_CONT */
    is_int (sp_args_step_ddp (&id), 0, "--ddp: the extern step is not");
    id = 0xffffffefU;
    is_int (sp_args_step_ddp (&id), 1, "--ddp: the last ordinary step id is");
    is_int (sp_args_step_ddp (NULL), -1,
            "--ddp and an unknown step id: an error, not a step without ddp");
}

int main (void)
{
    test_before_init ();
    test_sources ();
    test_bad_values ();
    test_init ();
    test_step ();
    return done_testing ();
}
