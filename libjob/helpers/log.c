/* log.c - rank-prefixed logging.
 *
 * Every line of a message gets the prefix "[ddp rank R/W] " and the whole
 * message goes to stderr in a single write(2), so lines from different ranks
 * (which srun merges into one stream) never interleave mid-line.  A message
 * without a final newline gets one.  Before ddp_init() the prefix says
 * "0/1" (the identity functions describe a single process then).
 */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ddp.h"

#define LOG_STACK_BUF 1024

int ddp_log_prefix (char *buf, size_t size)
{
    int n;

    if (!buf && size > 0)
        return DDP_EINVAL;
    n = snprintf (buf, size, "[ddp rank %d/%d] ", ddp_rank (),
                  ddp_world_size ());
    return n < 0 ? DDP_EINVAL : n;
}

/* Write all of buf to fd, retrying on EINTR and short writes. */
static void write_all (int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write (fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += n;
        len -= (size_t) n;
    }
}

/* Size of msg once every line carries a prefix of plen bytes and the last
 * line ends in a newline. */
static size_t prefixed_size (const char *msg, size_t plen)
{
    size_t size = plen;

    for (const char *p = msg; *p; p++) {
        size++;
        if (*p == '\n' && p[1] != '\0')
            size += plen;
    }
    return size + 1;    /* the final newline (or the one we add) */
}

/* Copy msg into out, prefix before every line, newline at the end. */
static size_t prefix_lines (char *out, const char *prefix, size_t plen,
                            const char *msg)
{
    size_t o = 0;

    memcpy (out, prefix, plen);
    o = plen;
    for (const char *p = msg; *p; p++) {
        out[o++] = *p;
        if (*p == '\n' && p[1] != '\0') {
            memcpy (out + o, prefix, plen);
            o += plen;
        }
    }
    if (o == plen || out[o - 1] != '\n')
        out[o++] = '\n';
    return o;
}

void ddp_vlog (const char *fmt, va_list ap)
{
    char prefix[64];
    char stackmsg[LOG_STACK_BUF];
    char stackout[LOG_STACK_BUF + 256];
    char *msg = stackmsg, *out = stackout;
    int saved_errno = errno;
    va_list ap2;
    int plen, mlen;
    size_t size;

    if (!fmt)
        goto out;
    plen = ddp_log_prefix (prefix, sizeof (prefix));
    if (plen < 0 || (size_t) plen >= sizeof (prefix))
        goto out;
    va_copy (ap2, ap);
    mlen = vsnprintf (stackmsg, sizeof (stackmsg), fmt, ap);
    if (mlen >= (int) sizeof (stackmsg)) {
        if (!(msg = malloc ((size_t) mlen + 1)))
            msg = stackmsg;     /* truncated rather than nothing */
        else
            vsnprintf (msg, (size_t) mlen + 1, fmt, ap2);
    }
    va_end (ap2);
    if (mlen < 0)
        goto out;
    size = prefixed_size (msg, (size_t) plen);
    if (size > sizeof (stackout) && !(out = malloc (size)))
        goto out;
    size = prefix_lines (out, prefix, (size_t) plen, msg);
    write_all (STDERR_FILENO, out, size);
out:
    if (msg != stackmsg)
        free (msg);
    if (out != stackout)
        free (out);
    errno = saved_errno;
}

void ddp_log (const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    ddp_vlog (fmt, ap);
    va_end (ap);
}

void ddp_log_main (const char *fmt, ...)
{
    va_list ap;

    if (!ddp_is_main ())
        return;
    va_start (ap, fmt);
    ddp_vlog (fmt, ap);
    va_end (ap);
}

/* vi: ts=4 sw=4 expandtab
 */
