/* strint.c - strict integer parsing (spank/sp_strint.c). */
#include "config.h"
#include <errno.h>
#include "sp_strint.h"
#include "tap.h"

static void good (const char *s, unsigned long long lo, unsigned long long hi,
                  unsigned long long want)
{
    unsigned long long v = 12345;
    int rc = sp_parse_uint (s, lo, hi, &v);
    ok (rc == 0 && v == want, "'%s' in [%llu,%llu] parses to %llu", s, lo, hi,
        want);
}

static void bad (const char *s, unsigned long long lo, unsigned long long hi,
                 int err)
{
    unsigned long long v = 777;
    int rc;
    errno = 0;
    rc = sp_parse_uint (s, lo, hi, &v);
    ok (rc == -1 && errno == err && v == 777,
        "'%s' in [%llu,%llu] fails with %s, output untouched",
        s ? s : "(null)", lo, hi, err == EINVAL ? "EINVAL" : "ERANGE");
}

int main (void)
{
    unsigned long long v = 1;

    good ("0", 0, 10, 0);
    good ("10", 0, 10, 10);
    good ("007", 0, 10, 7);
    good ("65535", 1, 65535, 65535);
    good ("9999999999999999999", 0, ~0ULL, 9999999999999999999ULL);
    bad (NULL, 0, 10, EINVAL);
    bad ("", 0, 10, EINVAL);
    bad ("-1", 0, 10, EINVAL);
    bad ("+1", 0, 10, EINVAL);
    bad (" 1", 0, 10, EINVAL);
    bad ("1 ", 0, 10, EINVAL);
    bad ("0x10", 0, 100, EINVAL);
    bad ("1e3", 0, 10000, EINVAL);
    bad ("12abc", 0, 100, EINVAL);
    bad ("11", 0, 10, ERANGE);
    bad ("0", 1, 10, ERANGE);
    bad ("65536", 1, 65535, ERANGE);
    bad ("99999999999999999999", 0, ~0ULL, EINVAL);     /* 20 digits */
    bad ("00000000000000000001", 0, 10, EINVAL);        /* 20 digits */

    ok (sp_parse_uint_n ("123xyz", 3, 0, 1000, &v) == 0 && v == 123,
        "sp_parse_uint_n reads only LEN characters");
    errno = 0;
    ok (sp_parse_uint_n ("123", 0, 0, 1000, &v) == -1 && errno == EINVAL,
        "sp_parse_uint_n with LEN 0 fails with EINVAL");
    errno = 0;
    ok (sp_parse_uint_n ("123", 3, 0, 1000, NULL) == -1 && errno == EINVAL,
        "sp_parse_uint_n with a NULL output fails with EINVAL");
    {
        const char *p = "12(x3)", *q;
        ok (sp_parse_uint_at (&p, 1, 100, &v) == 0 && v == 12
            && strcmp (p, "(x3)") == 0,
            "sp_parse_uint_at reads the digits and moves past them");
        q = p;
        errno = 0;
        ok (sp_parse_uint_at (&p, 0, 100, &v) == -1 && errno == EINVAL
            && p == q, "sp_parse_uint_at without a digit is EINVAL, P alone");
        p = "200,";
        errno = 0;
        ok (sp_parse_uint_at (&p, 0, 100, &v) == -1 && errno == ERANGE
            && strcmp (p, "200,") == 0, "out of range is ERANGE, P alone");
        p = "123456789012345678901";
        ok (sp_parse_uint_at (&p, 0, ~0ULL, &v) == -1,
            "more than 19 digits fail");
        ok (sp_parse_uint_at (NULL, 0, 1, &v) == -1, "a NULL P fails");
    }
    return done_testing ();
}
