/* sp_err.h - error messages of the plugin's pure parsers.
 *
 * The parsers report a failure as -1 with errno set and, when the caller
 * passed a buffer, a message saying what was wrong (flux-core's errprintf
 * habit: `return sp_fail (err, errlen, "...", ...)`).
 */
#ifndef SP_ERR_H
#define SP_ERR_H

#include <stddef.h>

/* Room for any message of the plugin (a buffer for ERR below). */
#define SP_ERRLEN 512

/* Format the message into err (errlen bytes; err may be NULL or errlen 0,
 * then nothing is written), set errno to EINVAL and return -1. */
int sp_fail (char *err, size_t errlen, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

#endif /* SP_ERR_H */
