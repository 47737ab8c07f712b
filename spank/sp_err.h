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

/* Room for sp_quote() of N input bytes (each may become \xHH). */
#define SP_QUOTE_LEN(n) (4 * (n) + 1)

/* Copy S into BUF (LEN bytes; BUF may be NULL or LEN 0, then nothing is
 * written) for quoting user input in a message: printable ASCII as is,
 * except the backslash and the single quote, which get a backslash;
 * newline, carriage return and tab as \n, \r, \t; every other byte (other
 * control characters, DEL, anything >= 0x80) as \xHH.  So the message
 * stays on one line and shows the input as it was, without terminal
 * control sequences.  What does not fit is cut at a whole escape; BUF is
 * always terminated.  Returns BUF (or "" when BUF is NULL or LEN 0). */
const char *sp_quote (const char *s, char *buf, size_t len);

#endif /* SP_ERR_H */
