/* sp_hostlist.c - first host and host count of a Slurm host list. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "sp_err.h"
#include "sp_hostlist.h"
#include "sp_strint.h"

#define SP_HOSTLIST_MAXNUM 9    /* digits in one range bound */

static bool is_name_char (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

static bool is_digit (char c)
{
    return c >= '0' && c <= '9';
}

/* Parse one range "N" or "N-M" at *P.  Sets the first number's text (*NUM,
 * *NUMLEN) and the range size *SIZE, advances *P.  Returns 0 or -1. */
static int parse_range (const char **p, const char **num, size_t *numlen,
                        unsigned long long *size)
{
    const char *s = *p;
    unsigned long long lo, hi;
    size_t n = 0;

    while (is_digit (s[n]))
        n++;
    if (n == 0 || n > SP_HOSTLIST_MAXNUM
        || sp_parse_uint_n (s, n, 0, ~0ULL, &lo) < 0)
        return -1;
    *num = s;
    *numlen = n;
    s += n;
    hi = lo;
    if (*s == '-') {
        s++;
        n = 0;
        while (is_digit (s[n]))
            n++;
        if (n == 0 || n > SP_HOSTLIST_MAXNUM
            || sp_parse_uint_n (s, n, lo, ~0ULL, &hi) < 0)
            return -1;
        s += n;
    }
    *size = hi - lo + 1;
    *p = s;
    return 0;
}

/* Walk LIST.  When FIRST is non-NULL, copy the first host into it (LEN
 * bytes).  Returns the host count, or -1 with errno set. */
static long walk (const char *list, char *first, size_t len)
{
    const char *p = list;
    unsigned long long total = 0, mult = 1, size;
    size_t out = 0;
    bool in_first = true, empty = true;

    if (!list || strnlen (list, SP_HOSTLIST_MAXLEN + 1) > SP_HOSTLIST_MAXLEN)
        goto inval;
    for (;; p++) {
        if (*p == ',' || *p == '\0') {
            if (empty)
                goto inval;             /* "", ",a", "a,,b", "a," */
            total += mult;
            if (total > SP_HOSTLIST_MAXHOSTS)
                goto overflow;
            if (*p == '\0')
                break;
            in_first = false;
            empty = true;
            mult = 1;
        }
        else if (*p == '[') {
            unsigned long long sum = 0;
            const char *num = NULL;
            size_t numlen = 0;
            bool first_range = true;

            p++;
            for (;;) {
                const char *n;
                size_t nl;
                if (parse_range (&p, &n, &nl, &size) < 0)
                    goto inval;
                if (first_range) {
                    num = n;
                    numlen = nl;
                    first_range = false;
                }
                sum += size;
                if (sum > SP_HOSTLIST_MAXHOSTS)
                    goto overflow;
                if (*p == ']')
                    break;
                if (*p != ',')
                    goto inval;
                p++;
            }
            mult *= sum;
            if (mult > SP_HOSTLIST_MAXHOSTS)
                goto overflow;
            if (in_first && first) {
                if (out + numlen >= len)
                    goto nospace;
                memcpy (first + out, num, numlen);
                out += numlen;
            }
            empty = false;
        }
        else if (is_name_char (*p)) {
            if (in_first && first) {
                if (out + 1 >= len)
                    goto nospace;
                first[out++] = *p;
            }
            empty = false;
        }
        else
            goto inval;
    }
    if (first)
        first[out] = '\0';
    return (long) total;
inval:
    errno = EINVAL;
    goto error;
overflow:
    errno = EOVERFLOW;
    goto error;
nospace:
    errno = ENOSPC;
error:
    if (first && len > 0)
        first[0] = '\0';
    return -1;
}

int sp_hostlist_first (const char *list, char *buf, size_t len)
{
    if (!buf || len == 0) {
        errno = EINVAL;
        return -1;
    }
    return walk (list, buf, len) < 0 ? -1 : 0;
}

long sp_hostlist_count (const char *list)
{
    return walk (list, NULL, 0);
}

int sp_hostlist_master (const char *list, unsigned long nnodes, char *host,
                        size_t len, char *err, size_t errlen)
{
    long n;

    if (sp_hostlist_first (list, host, len) < 0) {
        if (errno == ENOSPC)
            return sp_fail (err, errlen, "ddp: the first host name of "
                            "SLURM_STEP_NODELIST is longer than %zu "
                            "characters: '%.64s...'", len ? len - 1 : 0,
                            list);
        return sp_fail (err, errlen, "ddp: SLURM_STEP_NODELIST is not a valid "
                        "host list: '%.64s'", list ? list : "(null)");
    }
    if ((n = sp_hostlist_count (list)) < 0)
        return sp_fail (err, errlen, "ddp: SLURM_STEP_NODELIST is not a valid "
                        "host list: '%.64s'", list);
    if ((unsigned long) n != nnodes)
        return sp_fail (err, errlen, "ddp: SLURM_STEP_NODELIST names %ld "
                        "nodes but the step has %lu", n, nnodes);
    return 0;
}
