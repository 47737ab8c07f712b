/* sp_err.c - error messages of the plugin's pure parsers. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

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
