/* sp_strint.c - strict parsing of unsigned decimal integers. */
#include "config.h"
#include <errno.h>
#include <string.h>

#include "sp_strint.h"

#define SP_UINT_MAX_DIGITS 19   /* 10^19 - 1 still fits in 64 bits */

int sp_parse_uint_n (const char *s, size_t len, unsigned long long min,
                     unsigned long long max, unsigned long long *out)
{
    unsigned long long v = 0;
    size_t i;

    if (!s || !out || len == 0 || len > SP_UINT_MAX_DIGITS) {
        errno = EINVAL;
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            errno = EINVAL;
            return -1;
        }
        v = v * 10 + (unsigned long long) (s[i] - '0');
    }
    if (v < min || v > max) {
        errno = ERANGE;
        return -1;
    }
    *out = v;
    return 0;
}

int sp_parse_uint (const char *s, unsigned long long min,
                   unsigned long long max, unsigned long long *out)
{
    if (!s) {
        errno = EINVAL;
        return -1;
    }
    return sp_parse_uint_n (s, strnlen (s, SP_UINT_MAX_DIGITS + 1), min, max,
                            out);
}

int sp_parse_uint_at (const char **p, unsigned long long min,
                      unsigned long long max, unsigned long long *out)
{
    size_t n = 0;

    if (!p || !*p) {
        errno = EINVAL;
        return -1;
    }
    while (n <= SP_UINT_MAX_DIGITS && (*p)[n] >= '0' && (*p)[n] <= '9')
        n++;
    if (sp_parse_uint_n (*p, n, min, max, out) < 0)
        return -1;
    *p += n;
    return 0;
}
