/* ddp_internal.h - shared helpers inside libddp (not installed).
 *
 * Internal symbols start with ddpi_ so the export list (^ddp_) keeps them
 * out of the ABI; unit tests link the libddpcore.la convenience library. */
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
 * Returns code, so `return ddpi_error (DDP_EINVAL, "...")` works. */
int ddpi_error (int code, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

/* As ddpi_error(), logged only with DDP_DEBUG (repeats of a known fault). */
int ddpi_error_quiet (int code, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

/* The message of the last ddpi_error() on this thread ("" if none). */
const char *ddpi_last_error (void);

/* Log a rank-prefixed line to stderr, always (warnings, init failures). */
void ddpi_log (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* True if the last ddpi_error() on this thread was logged already. */
bool ddpi_last_error_logged (void);

/* When DDP_DEBUG is set: log a rank-prefixed line to stderr. */
void ddpi_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* True when DDP_DEBUG is set to a non-zero value. */
bool ddpi_debug_enabled (void);

/* Monotonic time in seconds. */
double ddpi_now (void);

/* Parse a whole decimal integer in [min, max] from s (no sign for min >= 0,
 * no spaces, no trailing garbage).  Returns 0 and sets *out, or -1. */
int ddpi_parse_long (const char *s, long min, long max, long *out);

/* Parse a positive decimal number of seconds ("30", "0.5", "1e3"; no sign,
 * blank, "inf" or "nan") of at most max.  Returns 0 and sets *out, -1 when s
 * is not such a number (*out untouched), -2 when it is one above max. */
int ddpi_parse_seconds (const char *s, double max, double *out);

/* The longest timeout libddp takes (seconds, about 11.6 days), and what
 * "inf" stands for: no job waits that long on purpose, and deadlines this
 * far stay in the range the waits convert to milliseconds (an int). */
#define DDPI_TIMEOUT_MAX 1e6

/* Parse a timeout variable's value (DDP_TIMEOUT, DDP_INIT_TIMEOUT): seconds
 * in (0, DDPI_TIMEOUT_MAX] as ddpi_parse_seconds() takes them, or "inf" /
 * "infinity" for no timeout (*out = DDPI_TIMEOUT_MAX).  Returns 0, -1 (not
 * a positive number) or -2 (above the maximum). */
int ddpi_parse_timeout (const char *s, double *out);

/* A 64-bit hash of the string s, the same on every machine: FNV-1a's
 * steps, from the offset 1469598103934665603 (not FNV's standard one; the
 * values are only compared with each other, never stored). */
uint64_t ddpi_hash_str (const char *s);

/* Is r among ranks[0..n-1] (any order)? */
bool ddpi_rank_in (const int *ranks, int n, int r);

/* Sort a short list of ranks ascending, in place (insertion sort: lists
 * here are a node's ranks or a fault list, so n is small). */
void ddpi_sort_ranks (int *r, int n);

/* Write the ascending ranks[0..n-1] to buf (len bytes, len >= 32) as a
 * compact list, "1,3-5,9"; when it does not fit, as much as fits followed by
 * ",... (N ranks)".  Always NUL-terminates.  Returns buf. */
char *ddpi_format_ranks (char *buf, size_t len, const int *ranks, int n);

/* The names of a dtype ("float32") and an op ("SUM") for messages; "?"
 * for a value out of range. */
const char *ddpi_dtype_name (int dtype);
const char *ddpi_op_name (int op);

/* Room for one more element in the array v (cap elements of esize bytes,
 * n of them used): v itself while n < *cap, else a new array of twice the
 * room (16 at first) with the n elements copied over, v freed and *cap
 * updated.  Returns the array, or NULL when out of memory (v and *cap
 * unchanged).  Not realloc(): gcc 12's -fanalyzer loses track of the
 * buffers that a realloc'd array's elements point to, and reports them
 * leaked. */
void *ddpi_grow (void *v, size_t n, size_t *cap, size_t esize);

/* Identity used by the log prefix; set by core once known. */
void ddpi_log_set_identity (int rank, int size);

#endif /* DDP_INTERNAL_H */
