/* sp_err.c - error messages of the plugin's pure parsers, and user input
 * quoted in them. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sp_err.h"

int sp_fail (char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen > 0) {
        va_start (ap, fmt);
        vsnprintf (err, errlen, fmt, ap);
        va_end (ap);
    }
    errno = EINVAL;
    return -1;
}

/* Write the escape of byte C into OUT (at least 5 bytes); returns its
 * length. */
static size_t escape (unsigned char c, char *out)
{
    static const char hex[] = "0123456789abcdef";

    if (c == '\n' || c == '\r' || c == '\t' || c == '\\' || c == '\'') {
        out[0] = '\\';
        out[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : (char) c;
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        out[0] = (char) c;
        return 1;
    }
    out[0] = '\\';
    out[1] = 'x';
    out[2] = hex[c >> 4];
    out[3] = hex[c & 0xf];
    return 4;
}

const char *sp_quote (const char *s, char *buf, size_t len)
{
    size_t n = 0, k;
    char e[5];

    if (!buf || len == 0)
        return "";
    for (; s && *s; s++) {
        k = escape ((unsigned char) *s, e);
        if (n + k >= len)
            break;
        memcpy (buf + n, e, k);
        n += k;
    }
    buf[n] = '\0';
    return buf;
}
