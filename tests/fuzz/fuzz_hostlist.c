/* fuzz-sources: spank/sp_hostlist.c spank/sp_strint.c spank/sp_err.c */
/* fuzz_hostlist.c - Slurm host lists from the job environment
 * (sp_hostlist_count, sp_hostlist_first).
 *
 * Input: byte 0 picks the buffer size for the first host, the rest is the
 * list.  Checked against an independent reference parser: the count (or the
 * error: EINVAL malformed, EOVERFLOW too many hosts), and that the first host
 * is the reference's first host, or ENOSPC when it does not fit, with the
 * buffer always NUL-terminated. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>

#include "fuzz.h"
#include "sp_hostlist.h"

#define CAP (SP_HOSTLIST_MAXHOSTS + 1ULL)

static bool namec (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

/* Reference: returns the count, 0 if malformed, CAP once the count exceeds
 * the maximum (the error found first, left to right, wins); writes the first
 * host to first (room for strlen (s) + 1). */
static unsigned long long reference (const char *s, char *first)
{
    unsigned long long total = 0;
    size_t fo = 0;
    bool in_first = true;

    while (1) {                                   /* one host expression */
        unsigned long long mult = 1;
        bool empty = true;
        while (*s && *s != ',') {
            if (namec (*s)) {
                if (in_first)
                    first[fo++] = *s;
                s++;
            }
            else if (*s == '[') {
                unsigned long long sum = 0;
                bool firstr = true;
                s++;
                while (1) {                       /* one range */
                    unsigned long long lo = 0, hi;
                    size_t n = 0;
                    const char *num = s;
                    while (s[n] >= '0' && s[n] <= '9')
                        lo = lo * 10 + (unsigned) (s[n++] - '0');
                    if (n == 0 || n > 9)
                        return 0;
                    if (in_first && firstr) {
                        memcpy (first + fo, num, n);
                        fo += n;
                    }
                    firstr = false;
                    s += n;
                    hi = lo;
                    if (*s == '-') {
                        s++;
                        hi = 0;
                        n = 0;
                        while (s[n] >= '0' && s[n] <= '9')
                            hi = hi * 10 + (unsigned) (s[n++] - '0');
                        if (n == 0 || n > 9 || hi < lo)
                            return 0;
                        s += n;
                    }
                    sum += hi - lo + 1;
                    if (sum > SP_HOSTLIST_MAXHOSTS)
                        return CAP;         /* reported before what follows */
                    if (*s == ']')
                        break;
                    if (*s != ',')
                        return 0;
                    s++;
                }
                s++;
                mult *= sum;
                if (mult > SP_HOSTLIST_MAXHOSTS)
                    return CAP;
            }
            else
                return 0;
            empty = false;
        }
        if (empty)
            return 0;
        total += mult;
        if (total > SP_HOSTLIST_MAXHOSTS)
            return CAP;
        in_first = false;
        first[fo] = '\0';
        if (*s == '\0')
            return total;
        s++;
    }
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    unsigned long long ref;
    char *s, *first, *buf;
    size_t len;
    long n;
    int rc, err;

    if (size < 1 || size - 1 > SP_HOSTLIST_MAXLEN)
        return 0;
    len = data[0];
    s = fuzz_cstr (data + 1, size - 1);
    first = calloc (1, size + 1);
    buf = malloc (len ? len : 1);
    if (!first || !buf)
        abort ();
    ref = reference (s, first);     /* the C string: up to a NUL inside */

    errno = 0;
    n = sp_hostlist_count (s);
    err = errno;
    if (ref == 0)
        fuzz_assert (n == -1 && err == EINVAL);
    else if (ref > SP_HOSTLIST_MAXHOSTS)
        fuzz_assert (n == -1 && err == EOVERFLOW);
    else
        fuzz_assert (n >= 1 && (unsigned long long) n == ref);

    memset (buf, 'X', len ? len : 1);
    errno = 0;
    rc = sp_hostlist_first (s, len ? buf : NULL, len);
    err = errno;
    if (len == 0)
        fuzz_assert (rc == -1 && err == EINVAL);
    else if (n < 0)
        fuzz_assert (rc == -1 && buf[0] == '\0');
    else if (strlen (first) >= len)
        fuzz_assert (rc == -1 && err == ENOSPC && buf[0] == '\0');
    else
        fuzz_assert (rc == 0 && strcmp (buf, first) == 0);
    if (len > 0)
        fuzz_assert (fuzz_terminated (buf, len));
    fuzz_assert (sp_hostlist_count (NULL) == -1);
    free (buf);
    free (first);
    free (s);
    return 0;
}
