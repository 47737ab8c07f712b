/* fuzz-sources: spank/sp_option.c spank/sp_argv.c spank/sp_err.c */
/* fuzz_option.c - the --ddp value (sp_option_parse, sp_backend_parse) and the
 * search for --ddp in srun's argument vector (sp_argv_find).
 *
 * Input: byte 0 picks the message buffer size (0..255), the rest is the
 * value; split at '\n' it is also an argument vector.  Checked: success
 * gives a known backend and only for words the reference accepts; failure
 * leaves the request untouched and a NUL-terminated message (naming the
 * valid values when there is room) on one line, without control
 * characters, whatever the value holds (sp_quote); sp_argv_find's value
 * points into argv. */
#include "config.h"
#include <errno.h>

#include "fuzz.h"
#include "sp_argv.h"
#include "sp_option.h"

#define MAXARGS 64

/* Reference for a --ddp value: comma-separated words, each one of the four
 * backends (at most one) or "nobind" (at most once); "" means auto. */
static int reference (const char *v, struct sp_request *r)
{
    static const char *names[] = { "off", "auto", "host", "nccl" };
    const char *p = v;
    int seen_backend = 0, seen_nobind = 0;

    r->backend = SP_BACKEND_AUTO;
    r->nobind = false;
    if (*v == '\0')
        return 1;
    if (strlen (v) > SP_OPTION_MAXLEN)
        return 0;
    for (;;) {
        size_t n = strcspn (p, ",");
        int i, hit = 0;

        if (n == 6 && strncmp (p, "nobind", 6) == 0) {
            if (seen_nobind++)
                return 0;
            r->nobind = true;
            hit = 1;
        }
        for (i = 0; i < 4 && !hit; i++) {
            if (strlen (names[i]) == n && strncmp (p, names[i], n) == 0) {
                if (seen_backend++)
                    return 0;
                r->backend = (enum sp_backend) i;
                hit = 1;
            }
        }
        if (!hit)
            return 0;
        if (p[n] == '\0')
            return 1;
        p += n + 1;
    }
}

static void check_parse (const char *v, size_t errlen)
{
    struct sp_request req = { .backend = (enum sp_backend) 77, .nobind = true };
    struct sp_request ref;
    char *err = malloc (errlen ? errlen : 1);
    int ok = reference (v, &ref);
    int rc;
    size_t i;

    if (!err)
        abort ();
    memset (err, 'X', errlen ? errlen : 1);
    rc = sp_option_parse (v, &req, errlen ? err : NULL, errlen);
    if (ok) {
        fuzz_assert (rc == 0);
        fuzz_assert (sp_request_equal (&req, &ref));
        fuzz_assert (strcmp (sp_backend_name (req.backend), "?") != 0);
    }
    else {
        fuzz_assert (rc == -1 && errno == EINVAL);
        fuzz_assert (req.backend == (enum sp_backend) 77 && req.nobind);
        if (errlen > 0) {
            fuzz_assert (fuzz_terminated (err, errlen));
            for (i = 0; err[i]; i++)
                fuzz_assert ((unsigned char) err[i] >= 0x20
                             && err[i] != 0x7f);
        }
        if (errlen >= 256)
            fuzz_assert (strstr (err, "valid values") != NULL);
    }
    free (err);
}

static void check_argv (char *s, size_t len)
{
    char *argv[MAXARGS + 1];
    const char *value = (const char *) 1;
    int argc = 0, rc, i, inside = 0;
    char *p = s;

    argv[argc++] = "srun";
    while (argc < MAXARGS && p <= s + len) {
        char *nl = memchr (p, '\n', (size_t) (s + len - p));
        argv[argc++] = p;
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    rc = sp_argv_find (argc, argv, "ddp", &value);
    fuzz_assert (rc == 0 || rc == 1);
    if (rc == 1 && value) {
        for (i = 1; i < argc; i++)
            if (value > argv[i] && value <= argv[i] + strlen (argv[i]))
                inside = 1;
        fuzz_assert (inside);
    }
    if (rc == 0)
        fuzz_assert (value == (const char *) 1);
    fuzz_assert (sp_argv_find (argc, argv, "", &value) == -1);
    fuzz_assert (sp_argv_find (argc, argv, "ddp", NULL) == -1);
    i = sp_argv_bare_before_command (argc, argv, "ddp");
    fuzz_assert (i == 0 || (rc == 1 && i > 1 && i < argc));
    value = NULL;
    rc = sp_argv_value (argc, argv, "gres", 'G', &value);
    fuzz_assert (rc == 0 || rc == 1);
    if (rc == 1 && value) {
        for (inside = 0, i = 1; i < argc; i++)
            if (value >= argv[i] && value <= argv[i] + strlen (argv[i]))
                inside = 1;
        fuzz_assert (inside);
    }
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    enum sp_backend b = (enum sp_backend) 99;
    char *s;

    if (size < 1)
        return 0;
    s = fuzz_cstr (data + 1, size - 1);
    check_parse (s, data[0]);
    check_parse (s, 256);
    if (sp_backend_parse (s, &b) == 0)
        fuzz_assert (strcmp (sp_backend_name (b), s) == 0);
    else
        fuzz_assert (b == (enum sp_backend) 99);
    check_argv (s, size - 1);
    free (s);
    return 0;
}
