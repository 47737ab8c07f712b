/* sp_port.c - MASTER_PORT for a job step, whether it is taken, who holds
 * it, and the claim a step holds on it. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
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

/* Is NAME one plain path component (not "", ".", "..", no '/')? */
static bool one_component (const char *name)
{
    return name && name[0] && !strchr (name, '/') && strcmp (name, ".") != 0
           && strcmp (name, "..") != 0;
}

/* Is the object of ST owned by this process's effective uid, and not
 * writable by its group or others? */
static bool private_to_us (const struct stat *st)
{
    return st->st_uid == geteuid () && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* Close FD keeping errno; set errno to E (when not 0).  Returns -1. */
static int close_fail (int fd, int e)
{
    int saved = e ? e : errno;

    if (fd >= 0)
        close (fd);
    errno = saved;
    return -1;
}

int sp_port_dir (int parent, const char *name)
{
    struct stat st;
    int fd;

    if (!one_component (name)) {
        errno = EINVAL;
        return -1;
    }
    if (mkdirat (parent, name, 0755) < 0 && errno != EEXIST)
        return -1;
    fd = openat (parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                 | O_CLOEXEC);
    if (fd < 0)
        return close_fail (-1, errno == ELOOP ? ENOTDIR : 0);
    if (fstat (fd, &st) < 0)
        return close_fail (fd, 0);
    if (!S_ISDIR (st.st_mode))
        return close_fail (fd, ENOTDIR);
    if (!private_to_us (&st))
        return close_fail (fd, EPERM);
    return fd;
}

/* Read the holder's text from FD into HOLDER (LEN bytes), keeping
 * printable characters only, up to the first newline. */
static void read_holder (int fd, char *holder, size_t len)
{
    char buf[256];
    ssize_t n;
    size_t i, k = 0;

    if (!holder || len == 0)
        return;
    n = pread (fd, buf, sizeof (buf), 0);
    for (i = 0; n > 0 && i < (size_t) n && buf[i] != '\n' && k + 1 < len;
         i++)
        if (buf[i] >= 0x20 && buf[i] < 0x7f)
            holder[k++] = buf[i];
    holder[k] = '\0';
}

/* Write OWNER and a newline at the start of the lock file FD, in place of
 * what an earlier holder wrote.  Returns 0 or -1. */
static int write_owner (int fd, const char *owner)
{
    char line[256];
    int n = snprintf (line, sizeof (line), "%s\n", owner);

    if (n < 0 || (size_t) n >= sizeof (line))
        n = (int) sizeof (line) - 1;
    if (ftruncate (fd, 0) < 0 || pwrite (fd, line, (size_t) n, 0) != n)
        return -1;
    return 0;
}

int sp_port_lock (int dir, unsigned port, const char *owner, char *holder,
                  size_t len)
{
    char name[16];
    struct stat st;
    int fd;

    if (holder && len)
        holder[0] = '\0';
    if (!owner || port < 1 || port > 65535) {
        errno = EINVAL;
        return -1;
    }
    snprintf (name, sizeof (name), "%u", port);
    fd = openat (dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK
                 | O_CLOEXEC, 0600);
    if (fd < 0)
        return close_fail (-1, errno == ELOOP ? EPERM : 0);
    if (fstat (fd, &st) < 0)
        return close_fail (fd, 0);
    if (!S_ISREG (st.st_mode) || st.st_nlink != 1 || !private_to_us (&st))
        return close_fail (fd, EPERM);
    if (flock (fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK)
            return close_fail (fd, 0);
        read_holder (fd, holder, len);
        return close_fail (fd, EADDRINUSE);
    }
    if (write_owner (fd, owner) < 0)
        return close_fail (fd, 0);
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

/* Parse the decimal number at *P (after blanks), ended by a blank or the
 * end of the line; put it in *V and move *P past it.  Returns 0 or -1. */
static int dec_field (const char **p, long *v)
{
    const char *s = *p + strspn (*p, " ");
    long x = 0;
    size_t n = 0;

    for (; s[n] >= '0' && s[n] <= '9' && n < 10; n++)
        x = x * 10 + (s[n] - '0');
    if (n == 0 || (s[n] != ' ' && s[n] != '\n' && s[n] != '\0'))
        return -1;
    *v = x;
    *p = s + n;
    return 0;
}

/* One line of the table: "  N: LADDR:LPORT RADDR:RPORT ST TXQ:RXQ TR:WHEN
 * RETRNSMT UID ...", the addresses 8 (IPv4) or 32 (IPv6) hex digits.  Sets
 * *PORT, *STATE and *UID.  Returns 0 or -1 when malformed. */
static int parse_socket_line (const char *line, unsigned *port,
                              unsigned *state, long *uid)
{
    const char *p = line + strspn (line, " ");
    unsigned skip;

    if (hex_field (&p, 10, ':', &skip) < 0 || *p++ != ' '
        || hex_field (&p, 32, ':', &skip) < 0
        || hex_field (&p, 4, ' ', port) < 0
        || hex_field (&p, 32, ':', &skip) < 0
        || hex_field (&p, 4, ' ', &skip) < 0
        || hex_field (&p, 2, ' ', state) < 0)
        return -1;
    /* The uid only names a holder: a line cut short of it (or a kernel
     * that writes these fields otherwise) still says who listens where. */
    if (hex_field (&p, 8, ':', &skip) < 0
        || hex_field (&p, 8, ' ', &skip) < 0
        || hex_field (&p, 2, ':', &skip) < 0
        || hex_field (&p, 8, ' ', &skip) < 0
        || hex_field (&p, 8, ' ', &skip) < 0 || dec_field (&p, uid) < 0)
        *uid = -1;
    return 0;
}

int sp_port_listener (const char *path, unsigned port, long *uid)
{
    char line[512];
    unsigned p, st;
    long u;
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
        if (parse_socket_line (line, &p, &st, &u) < 0) {
            errno = EINVAL;
            rc = -1;
        }
        else if (p == port && st == 0x0A && !found) {
            found = 1;
            if (uid)
                *uid = u;
        }
    }
    if (rc == 0 && ferror (f))
        rc = -1;
    fclose (f);
    return rc < 0 ? -1 : found;
}

int sp_port_listening (const char *path, unsigned port)
{
    return sp_port_listener (path, port, NULL);
}
