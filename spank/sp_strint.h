/* sp_strint.h - strict parsing of unsigned decimal integers.
 *
 * Values from plugstack.conf and from the job environment are untrusted: a
 * number is one or more ASCII digits and nothing else (no sign, no blanks, no
 * hex, no trailing text), at most 19 digits, within caller-given bounds.
 */
#ifndef SP_STRINT_H
#define SP_STRINT_H

#include <stddef.h>

/* Parse the LEN characters at S as a decimal number in [MIN, MAX].
 * Returns 0 and stores it in *OUT; on failure returns -1 with errno EINVAL
 * (NULL argument, empty, a non-digit, more than 19 digits) or ERANGE (outside
 * [MIN, MAX]), and leaves *OUT alone. */
int sp_parse_uint_n (const char *s, size_t len, unsigned long long min,
                     unsigned long long max, unsigned long long *out);

/* sp_parse_uint_n() over the whole NUL-terminated string S. */
int sp_parse_uint (const char *s, unsigned long long min,
                   unsigned long long max, unsigned long long *out);

/* Parse the decimal number at *P (its digits, up to the first character
 * that is not one) into [MIN, MAX] and advance *P past it.  Returns 0, or
 * -1 with errno EINVAL (NULL, no digit, more than 19 digits) or ERANGE,
 * and *P and *OUT alone. */
int sp_parse_uint_at (const char **p, unsigned long long min,
                      unsigned long long max, unsigned long long *out);

#endif /* SP_STRINT_H */
