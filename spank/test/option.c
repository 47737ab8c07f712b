/* option.c - the --ddp value (spank/sp_option.c). */
#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "sp_err.h"
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

/* A rejected value with control characters is quoted escaped: the
 * message is one line with no control character, and says WANT. */
static void escaped (const char *value, const char *want, const char *what)
{
    struct sp_request r = { .backend = SP_BACKEND_HOST, .nobind = true };
    char err[256] = "";
    const char *p;
    bool clean = true;

    (void) sp_option_parse (value, &r, err, sizeof (err));
    for (p = err; *p; p++)
        clean = clean && (unsigned char) *p >= 0x20 && *p != 0x7f;
    ok (clean && strstr (err, want) && strstr (err, "off, auto, host or nccl"),
        "%s", what);
    if (!clean || !strstr (err, want))
        diag ("  message: %s", err);
}

static void test_escaped (void)
{
    char ctl[SP_OPTION_MAXLEN + 1];
    char q[16];

    escaped ("host\nnccl", "value 'host\\nnccl'",
             "a newline in --ddp is shown as \\n, on one line");
    escaped ("ho\x1b[2Jst", "value 'ho\\x1b[2Jst'",
             "an escape sequence is shown as \\x1b, not sent to the terminal");
    escaped ("a'b\\c\t\r\x7f\xff", "value 'a\\'b\\\\c\\t\\r\\x7f\\xff'",
             "quote, backslash, tab, CR, DEL and high bytes are escaped");
    memset (ctl, '\n', SP_OPTION_MAXLEN);
    ctl[SP_OPTION_MAXLEN] = '\0';
    escaped (ctl, "value '\\n\\n", "64 newlines: cut, the valid values "
             "still in a 256-byte message");
    is_str (sp_quote ("a\nb", q, 3), "a", "sp_quote cuts at a whole escape");
    is_str (sp_quote ("a\nb", q, 4), "a\\n", "... and keeps one that fits");
    is_str (sp_quote ("x", NULL, 0), "", "sp_quote without a buffer: \"\"");
    is_str (sp_quote (NULL, q, sizeof (q)), "", "sp_quote (NULL): \"\"");
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

    test_escaped ();
    return done_testing ();
}
