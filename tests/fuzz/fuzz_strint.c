/* fuzz-sources: spank/sp_strint.c */
/* fuzz_strint.c - sp_parse_uint_n() / sp_parse_uint(): the plugin's strict
 * parser for numbers from plugstack.conf and the job environment.
 *
 * Input: two bytes choosing the bounds, then the text.  The contract checked
 * against an independent reference: accepted iff 1..19 ASCII digits, the
 * value is the decimal value and within [min, max]; on failure errno is
 * EINVAL (syntax) or ERANGE (bounds) and *out is untouched. */
#include "config.h"
#include <errno.h>
#include <limits.h>

#include "fuzz.h"
#include "sp_strint.h"

static const unsigned long long bounds[] = {
    0, 1, 9, 10, 65535, 4294967295ULL, 9999999999999999999ULL, ULLONG_MAX,
};
#define NBOUNDS (sizeof (bounds) / sizeof (bounds[0]))

/* Reference: 1 and *v when s[0..len) is 1..19 digits. */
static int reference (const char *s, size_t len, unsigned long long *v)
{
    size_t i;

    if (len == 0 || len > 19)
        return 0;
    *v = 0;
    for (i = 0; i < len; i++) {
        if (!memchr ("0123456789", s[i], 10) || s[i] == '\0')
            return 0;
        *v = *v * 10 + (unsigned long long) (s[i] - '0');
    }
    return 1;
}

static void check (const char *s, size_t len, unsigned long long min,
                   unsigned long long max, int rc, int err,
                   unsigned long long out)
{
    unsigned long long ref;
    int syntax_ok = reference (s, len, &ref);

    if (!syntax_ok) {
        fuzz_assert (rc == -1 && err == EINVAL);
        fuzz_assert (out == 4242);
    }
    else if (ref < min || ref > max) {
        fuzz_assert (rc == -1 && err == ERANGE);
        fuzz_assert (out == 4242);
    }
    else {
        fuzz_assert (rc == 0);
        fuzz_assert (out == ref);
    }
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    unsigned long long min, max, out;
    const char *text;
    size_t len;
    char *s;
    int rc;

    if (size < 2)
        return 0;
    min = bounds[data[0] % NBOUNDS];
    max = bounds[data[1] % NBOUNDS];
    s = fuzz_cstr (data + 2, size - 2);
    text = s;
    len = size - 2;

    /* Explicit length (the text may hold NUL bytes). */
    out = 4242;
    errno = 0;
    rc = sp_parse_uint_n (text, len, min, max, &out);
    check (text, len, min, max, rc, errno, out);

    /* NUL-terminated form: what the reference sees is up to the first NUL. */
    out = 4242;
    errno = 0;
    rc = sp_parse_uint (text, min, max, &out);
    check (text, strlen (text), min, max, rc, errno, out);

    /* NULL arguments are refused, never dereferenced. */
    fuzz_assert (sp_parse_uint (NULL, min, max, &out) == -1);
    fuzz_assert (sp_parse_uint (text, min, max, NULL) == -1);
    free (s);
    return 0;
}
