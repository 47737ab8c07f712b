/* option.c - the --ddp value and its detection in srun's argv
 * (spank/sp_option.c). */
#include "config.h"
#include <errno.h>
#include "sp_option.h"
#include "tap.h"
#include "words.h"

static void good (const char *value, enum sp_backend b, bool nobind)
{
    struct sp_request r = { .backend = SP_BACKEND_OFF, .nobind = !nobind };
    char err[256] = "";
    int rc = sp_option_parse (value, &r, err, sizeof (err));
    ok (rc == 0 && r.backend == b && r.nobind == nobind,
        "--ddp=%s means %s%s", value ? value : "(none)", sp_backend_name (b),
        nobind ? " without binding" : "");
}

static void bad (const char *value)
{
    struct sp_request r = { .backend = SP_BACKEND_HOST, .nobind = true };
    char err[256] = "";
    int rc;
    errno = 0;
    rc = sp_option_parse (value, &r, err, sizeof (err));
    ok (rc == -1 && errno == EINVAL && r.backend == SP_BACKEND_HOST && r.nobind
        && strncmp (err, "ddp: ", 5) == 0
        && strstr (err, "off, auto, host or nccl"),
        "--ddp=%s is rejected with the valid values in the message", value);
    if (rc == 0 || !strstr (err, "off, auto, host or nccl"))
        diag ("  message: %s", err);
}

/* Run sp_argv_find for --ddp on ARGV. */
static int find (const char **value, char **argv)
{
    *value = "unset";
    return sp_argv_find (nwords (argv), argv, "ddp", value);
}

static void test_argv (void)
{
    const char *v;
    char *argv[] = { "srun", NULL };

    ok (find (&v, WORDS ("srun", "--ddp", "prog")) == 1 && v == NULL,
        "bare --ddp is found with no value");
    ok (find (&v, WORDS ("srun", "--ddp=nccl", "prog")) == 1
        && strcmp (v, "nccl") == 0, "--ddp=nccl is found with its value");
    ok (find (&v, WORDS ("srun", "-N2", "-n", "4", "--ddp=host", "prog"))
        == 1 && strcmp (v, "host") == 0, "found after short options with arguments");
    ok (find (&v, WORDS ("srun", "--partition", "debug", "--ddp", "prog"))
        == 1,
        "found after a long option with a separate argument");
    ok (find (&v, WORDS ("srun", "--ddp=host", "--ddp=off", "prog")) == 1
        && strcmp (v, "off") == 0, "the last --ddp wins");
    ok (find (&v, WORDS ("srun", "--dd=host", "prog")) == 1
        && strcmp (v, "host") == 0, "an abbreviation (--dd) is found");
    ok (find (&v, WORDS ("srun", "-N2", "prog", "--ddp")) == 0,
        "--ddp after the command belongs to the command");
    ok (find (&v, WORDS ("srun", "--exclusive", "prog", "--ddp")) == 0,
        "a flag option does not swallow the command");
    ok (find (&v, WORDS ("srun", "-l", "prog", "--ddp")) == 0,
        "a short flag does not swallow the command");
    ok (find (&v, WORDS ("srun", "-lN", "2", "prog", "--ddp")) == 0,
        "a short cluster ending in an option with argument takes the next word");
    ok (find (&v, WORDS ("srun", "-B", "2:4", "--ddp", "prog")) == 1,
        "-B takes the next word (found after it)");
    ok (find (&v, WORDS ("srun", "-w", "n1", "-t", "5", "-J", "x", "--ddp",
                         "prog")) == 1,
        "found after several short options with arguments");
    ok (find (&v, WORDS ("srun", "--", "--ddp")) == 0,
        "nothing after -- is srun's");
    ok (find (&v, WORDS ("srun", "-", "--ddp")) == 0, "'-' is a command word");
    ok (find (&v, WORDS ("srun", "--d", "prog")) == 0,
        "a one-letter abbreviation is not --ddp");
    ok (find (&v, WORDS ("srun", "--ddpx", "prog")) == 0,
        "a longer option name is not --ddp");
    ok (find (&v, WORDS ("srun", "--mpi=pmix", "prog")) == 0,
        "other options are not --ddp");
    ok (find (&v, WORDS ("srun")) == 0, "srun alone: not found");
    ok (sp_argv_find (1, argv, "ddp", &v) == 0, "argc 1: not found");
    errno = 0;
    ok (sp_argv_find (1, NULL, "ddp", &v) == -1 && errno == EINVAL,
        "NULL argv is EINVAL");
    errno = 0;
    ok (sp_argv_find (1, argv, "", &v) == -1 && errno == EINVAL,
        "an empty name is EINVAL");
    errno = 0;
    ok (sp_argv_find (1, argv, "ddp", NULL) == -1 && errno == EINVAL,
        "a NULL value pointer is EINVAL");
}

int main (void)
{
    enum sp_backend b = SP_BACKEND_OFF;
    struct sp_request a = { SP_BACKEND_HOST, false }, c = a;
    char longval[SP_OPTION_MAXLEN + 2];

    good (NULL, SP_BACKEND_AUTO, false);
    good ("", SP_BACKEND_AUTO, false);
    good ("auto", SP_BACKEND_AUTO, false);
    good ("off", SP_BACKEND_OFF, false);
    good ("host", SP_BACKEND_HOST, false);
    good ("nccl", SP_BACKEND_NCCL, false);
    good ("nccl,nobind", SP_BACKEND_NCCL, true);
    good ("nobind,host", SP_BACKEND_HOST, true);
    good ("nobind", SP_BACKEND_AUTO, true);
    bad ("bogus");
    bad ("NCCL");
    bad ("nccl,host");
    bad ("nobind,nobind");
    bad ("nccl,");
    bad (",nccl");
    bad ("nccl,,nobind");
    bad (",");
    bad (" nccl");
    bad ("nccl=1");
    memset (longval, 'a', sizeof (longval) - 1);
    longval[sizeof (longval) - 1] = '\0';
    bad (longval);
    errno = 0;
    ok (sp_option_parse ("host", NULL, NULL, 0) == -1 && errno == EINVAL,
        "a NULL request is EINVAL");
    ok (sp_option_parse ("bogus", &a, NULL, 0) == -1,
        "a NULL message buffer is allowed");

    is_str (sp_backend_name (SP_BACKEND_NCCL), "nccl", "backend name nccl");
    is_str (sp_backend_name ((enum sp_backend) 42), "?",
            "an out-of-range backend has name ?");
    ok (sp_backend_parse ("host", &b) == 0 && b == SP_BACKEND_HOST,
        "backend word host parses");
    errno = 0;
    ok (sp_backend_parse ("nobind", &b) == -1 && errno == EINVAL
        && b == SP_BACKEND_HOST, "backend word nobind is EINVAL");
    ok (sp_backend_parse (NULL, &b) == -1, "a NULL backend word fails");
    ok (sp_request_equal (&a, &c), "equal requests compare equal");
    c.nobind = true;
    ok (!sp_request_equal (&a, &c), "nobind makes requests differ");
    ok (!sp_request_equal (&a, NULL), "NULL is never equal");

    test_argv ();
    return done_testing ();
}
