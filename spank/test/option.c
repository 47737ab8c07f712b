/* option.c - the --ddp value (spank/sp_option.c). */
#include "config.h"
#include <errno.h>
#include "sp_option.h"
#include "tap.h"

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

    return done_testing ();
}
