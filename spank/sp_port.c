/* sp_port.c - MASTER_PORT for a job step, whether it is taken, and the
 * claim a step holds on it. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

/* The walk of job JOBID over the SPAN ports from LO: its start and stride. */
struct walk {
    unsigned lo;
    uint64_t span, start, stride;
};

static int walk_init (struct walk *w, uint32_t jobid, unsigned lo,
                      unsigned hi)
{
    if (lo < 1 || lo > hi || hi > 65535) {
        errno = EINVAL;
        return -1;
    }
    w->lo = lo;
    w->span = (uint64_t) hi - lo + 1;
    w->start = mix32 (jobid) % w->span;
    w->stride = stride (mix32 (jobid ^ 0x9e3779b9U), w->span);
    return 0;
}

/* The port at position I (any value; taken mod the span) of walk W. */
static int walk_port (const struct walk *w, uint64_t i)
{
    return (int) (w->lo + (w->start + i % w->span * w->stride) % w->span);
}

int sp_port_derive (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi)
{
    struct walk w;

    if (walk_init (&w, jobid, lo, hi) < 0)
        return -1;
    return walk_port (&w, stepid);
}

int sp_port_walk (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi,
                  unsigned tries, int (*try_port) (unsigned port, void *arg),
                  void *arg)
{
    struct walk w;
    uint64_t k;
    int port, rc;

    if (!try_port || tries < 1) {
        errno = EINVAL;
        return -1;
    }
    if (walk_init (&w, jobid, lo, hi) < 0)
        return -1;
    for (k = 0; k < tries && k < w.span; k++) {
        port = walk_port (&w, (uint64_t) stepid % w.span + k);
        if ((rc = try_port ((unsigned) port, arg)) == 0)
            return port;
        if (rc < 0)
            return -1;
    }
    errno = EADDRINUSE;
    return -1;
}

int sp_port_claim (const char *prefix, unsigned port)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    socklen_t len;
    int fd, n, e;

    if (!prefix || port < 1 || port > 65535) {
        errno = EINVAL;
        return -1;
    }
    /* sun_path[0] stays '\0': the abstract namespace, no file. */
    n = snprintf (a.sun_path + 1, sizeof (a.sun_path) - 1, "%s%u", prefix,
                  port);
    if (n < 0 || (size_t) n >= sizeof (a.sun_path) - 1) {
        errno = EINVAL;
        return -1;
    }
    len = (socklen_t) (offsetof (struct sockaddr_un, sun_path) + 1
                       + (size_t) n);
    if ((fd = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    if (bind (fd, (struct sockaddr *) &a, len) < 0) {
        e = errno;
        close (fd);
        errno = e;
        return -1;
    }
    return fd;
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
