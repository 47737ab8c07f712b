/* fuzz-sources: libjob/common/util.c */
/* fuzz_envint.c - libddp's parsers for environment values (RANK=abc,
 * WORLD_SIZE=0, DDP_TIMEOUT, DDP_SHM_SLOT, ...): ddpi_parse_long() and
 * ddpi_parse_seconds().
 *
 * Input: byte 0 picks the bounds, the rest is the value.  ddpi_parse_long is
 * checked against an independent reference (optional '-' only when negative
 * values are allowed, then digits only; the value in [min, max]); on failure
 * *out is untouched.  ddpi_parse_seconds must accept only finite numbers in
 * (0, max] written without a leading sign, blanks, "inf" or "nan", say -2
 * for larger ones and -1 for the rest; ddpi_parse_timeout takes the same
 * up to DDPI_TIMEOUT_MAX, and "inf" or "infinity" as that maximum. */
#include "config.h"
#include <ctype.h>
#include <limits.h>
#include <math.h>

#include "fuzz.h"
#include "ddp_internal.h"

/* util.c's messages name the error code; the fuzzer links no core. */
__attribute__ ((weak)) const char *ddp_strerror (int err)
{
    (void) err;
    return "error";
}

static const long bounds[][2] = {
    { 0, LONG_MAX }, { 1, INT_MAX }, { 0, 3 }, { 4096, 1L << 30 },
    { LONG_MIN, LONG_MAX }, { -5, 5 }, { 2, 1 }, { -1, 0 },
};
#define NBOUNDS (sizeof (bounds) / sizeof (bounds[0]))

/* Reference: 1 and *v when s is -?[0-9]+ and fits in a long. */
static int reference (const char *s, long *v)
{
    int neg = (*s == '-');
    const char *d = s + neg;
    unsigned long long mag = 0;
    size_t n = 0;

    if (*d == '\0')
        return 0;
    for (; d[n]; n++) {
        if (d[n] < '0' || d[n] > '9')
            return 0;
        if (mag > (ULLONG_MAX - 9) / 10)
            return 0;                       /* far too big: not a long */
        mag = mag * 10 + (unsigned) (d[n] - '0');
    }
    if (!neg && mag > (unsigned long long) LONG_MAX)
        return 0;
    if (neg && mag > (unsigned long long) LONG_MAX + 1)
        return 0;
    *v = neg ? (long) (0 - mag) : (long) mag;
    return 1;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    long min, max, out = 4242, ref;
    double secs = -1;
    char *s;
    int rc, ok;

    if (size < 1)
        return 0;
    min = bounds[data[0] % NBOUNDS][0];
    max = bounds[data[0] % NBOUNDS][1];
    s = fuzz_cstr (data + 1, size - 1);

    rc = ddpi_parse_long (s, min, max, &out);
    ok = reference (s, &ref) && ref >= min && ref <= max
         && !(s[0] == '-' && min >= 0);
    if (ok)
        fuzz_assert (rc == 0 && out == ref);
    else
        fuzz_assert (rc == -1 && out == 4242);
    fuzz_assert (ddpi_parse_long (NULL, min, max, &out) == -1);

    rc = ddpi_parse_seconds (s, 1e7, &secs);
    if (rc == 0) {
        fuzz_assert (isfinite (secs) && secs > 0 && secs <= 1e7);
        fuzz_assert (isdigit ((unsigned char) s[0]) || s[0] == '.');
        fuzz_assert (!strpbrk (s, " \t\n\v\f\r"));
    }
    else
        fuzz_assert ((rc == -1 || rc == -2) && secs == -1);
    if (rc == -2)
        fuzz_assert (isdigit ((unsigned char) s[0]) || s[0] == '.');
    secs = -1;
    rc = ddpi_parse_timeout (s, &secs);
    if (rc == 0)
        fuzz_assert (secs > 0 && secs <= DDPI_TIMEOUT_MAX
                     && (secs < DDPI_TIMEOUT_MAX || strcmp (s, "inf") == 0
                         || strcmp (s, "infinity") == 0
                         || strtod (s, NULL) == DDPI_TIMEOUT_MAX));
    else
        fuzz_assert ((rc == -1 || rc == -2) && secs == -1);
    free (s);
    return 0;
}
