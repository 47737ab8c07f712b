/* sp_port.c - MASTER_PORT for a job step, and whether it is taken. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sp_port.h"
#include "sp_strint.h"

/* A 32-bit integer hash (xorshift-multiply), so neighbouring job ids land
 * far apart in the range. */
static uint32_t mix32 (uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static uint64_t gcd (uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A stride in [1, SPAN) coprime with SPAN, picked by H (1 when SPAN < 3). */
static uint64_t stride (uint32_t h, uint64_t span)
{
    uint64_t s;

    if (span < 3)
        return 1;
    s = 1 + h % (span - 1);
    while (gcd (s, span) != 1)
        s = s % (span - 1) + 1;
    return s;
}

int sp_port_derive (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi)
{
    uint64_t span, start, step;

    if (lo < 1 || lo > hi || hi > 65535) {
        errno = EINVAL;
        return -1;
    }
    span = (uint64_t) hi - lo + 1;
    start = mix32 (jobid) % span;
    step = stride (mix32 (jobid ^ 0x9e3779b9U), span);
    return (int) (lo + (start + (uint64_t) stepid % span * step) % span);
}

int sp_port_resv_last (const char *list)
{
    unsigned long long a, b;
    const char *p = list;

    if (!p || !*p) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        if (sp_parse_uint_at (&p, 1, 65535, &a) < 0)
            return -1;
        b = a;
        if (*p == '-') {
            p++;
            if (sp_parse_uint_at (&p, 1, 65535, &b) < 0)
                return -1;
            if (b < a) {
                errno = EINVAL;
                return -1;
            }
        }
        if (*p == '\0')
            return (int) b;
        if (*p++ != ',') {
            errno = EINVAL;
            return -1;
        }
    }
}

/* Parse the hex number of at most MAXLEN digits at *P, ended by END; put
 * it in *V and move *P past END.  Returns 0 or -1. */
static int hex_field (const char **p, size_t maxlen, char end, unsigned *v)
{
    const char *s = *p;
    unsigned x = 0;
    size_t n = 0;

    for (; n < maxlen && s[n] && s[n] != end; n++) {
        char c = s[n];
        unsigned d;

        if (c >= '0' && c <= '9')
            d = (unsigned) (c - '0');
        else if (c >= 'A' && c <= 'F')
            d = (unsigned) (c - 'A' + 10);
        else if (c >= 'a' && c <= 'f')
            d = (unsigned) (c - 'a' + 10);
        else
            return -1;
        x = x * 16 + d;
    }
    if (n == 0 || s[n] != end)
        return -1;
    *v = x;
    *p = s + n + 1;
    return 0;
}

/* One line of the table: "  N: LADDR:LPORT RADDR:RPORT ST ...", the
 * addresses 8 (IPv4) or 32 (IPv6) hex digits.  Sets *PORT and *STATE.
 * Returns 0 or -1 when malformed. */
static int parse_socket_line (const char *line, unsigned *port,
                              unsigned *state)
{
    const char *p = line + strspn (line, " ");
    unsigned skip;

    if (hex_field (&p, 10, ':', &skip) < 0 || *p++ != ' '
        || hex_field (&p, 32, ':', &skip) < 0
        || hex_field (&p, 4, ' ', port) < 0
        || hex_field (&p, 32, ':', &skip) < 0
        || hex_field (&p, 4, ' ', &skip) < 0)
        return -1;
    return hex_field (&p, 2, ' ', state);
}

int sp_port_listening (const char *path, unsigned port)
{
    char line[512];
    unsigned p, st;
    int found = 0, rc = 0;
    FILE *f;

    if (!path) {
        errno = EINVAL;
        return -1;
    }
    if (!(f = fopen (path, "re")))
        return errno == ENOENT ? 0 : -1;
    if (!fgets (line, sizeof (line), f))
        rc = -1;                                    /* no header */
    while (rc == 0 && fgets (line, sizeof (line), f)) {
        if (parse_socket_line (line, &p, &st) < 0) {
            errno = EINVAL;
            rc = -1;
        }
        else if (p == port && st == 0x0A)
            found = 1;
    }
    if (rc == 0 && ferror (f))
        rc = -1;
    fclose (f);
    return rc < 0 ? -1 : found;
}
