/* ddp_internal.h - shared helpers inside libddp (not installed). */
#ifndef DDP_INTERNAL_H
#define DDP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ddp.h"

/* Record why an operation failed: formats the message (kept per thread,
 * logged to stderr rank-prefixed when DDP_DEBUG is set or when code is an
 * environment failure: ENOLAUNCH, EPMIX, ETRANSPORT, ETIMEDOUT, EPEER).
 * Returns code, so `return ddp_error (DDP_EINVAL, "...")` works. */
int ddp_error (int code, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

/* The message of the last ddp_error() on this thread ("" if none). */
const char *ddp_last_error (void);

/* When DDP_DEBUG is set: log a rank-prefixed line to stderr. */
void ddp_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* True when DDP_DEBUG is set to a non-zero value. */
bool ddp_debug_enabled (void);

/* Monotonic time in seconds. */
double ddp_now (void);

/* Parse a whole decimal integer in [min, max] from s (no sign for min >= 0,
 * no spaces, no trailing garbage).  Returns 0 and sets *out, or -1. */
int ddp_parse_long (const char *s, long min, long max, long *out);

/* Parse a positive decimal number of seconds ("30", "0.5").  Returns 0 and
 * sets *out, or -1. */
int ddp_parse_seconds (const char *s, double *out);

/* Identity used by the log prefix; set by core once known. */
void ddp_log_set_identity (int rank, int size);

#endif /* DDP_INTERNAL_H */
