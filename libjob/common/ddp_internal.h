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

/* Write msg as one rank-prefixed line to stderr (one write(2)). */
void ddpi_log_line (const char *msg);

/* True if the last ddpi_error() on this thread was logged already. */
bool ddpi_last_error_logged (void);

/* When DDP_DEBUG is set: log a rank-prefixed line to stderr. */
void ddpi_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* True when DDP_DEBUG is 1.  Any other non-empty value but 0 is logged
 * once as a warning (debugging stays off; ddp_init refuses it), since this
 * is asked before ddp_init too; not when ddp_init has refused it already
 * (env.c). */
bool ddpi_debug_enabled (void);

/* Monotonic time in seconds. */
double ddpi_now (void);

/* The grammars of the environment's values.  Every one takes exactly its
 * text: no blank, no '+', no trailing garbage. */

/* A whole number in [min, max] from s, in decimal digits: no 0x, no
 * leading 0 (not even "00"; "010" is neither 8 nor 10: refused), a '-'
 * only before a negative number when min < 0 (no "-0"), nothing that does
 * not fit in a long.  Returns 0 and sets *out, or -1 (*out untouched). */
int ddpi_parse_long (const char *s, long min, long max, long *out);

/* A flag: "0" or "1", nothing else.  Returns 0 and sets *out, or -1. */
int ddpi_parse_flag (const char *s, bool *out);

/* A positive decimal number of seconds of at most max: digits with an
 * optional fraction ("30", "0.5", "1.", ".5") and an optional exponent
 * ("1e3", "5E-1"); no sign, blank, hexadecimal, "inf" or "nan".  Returns 0
 * and sets *out; -1 when s is not such a number, -2 when it is one above
 * max, -3 when it is not above 0 ("0", "0.0", "1e-999"); *out is untouched
 * on failure. */
int ddpi_parse_seconds (const char *s, double max, double *out);

/* The longest timeout libddp takes (seconds, about 11.6 days), and what
 * "inf" stands for: no job waits that long on purpose, and deadlines this
 * far stay in the range the waits convert to milliseconds (an int). */
#define DDPI_TIMEOUT_MAX 1e6

/* Parse a timeout variable's value (DDP_TIMEOUT, DDP_INIT_TIMEOUT): seconds
 * in (0, DDPI_TIMEOUT_MAX] as ddpi_parse_seconds() takes them, or "inf" /
 * "infinity" for no timeout (*out = DDPI_TIMEOUT_MAX).  Returns 0 or
 * ddpi_parse_seconds()'s -1, -2 or -3. */
int ddpi_parse_timeout (const char *s, double *out);

/* The environment variables of libddp (env.c holds each one's kind and
 * range).  An unset or empty variable is the default. */

/* The most ranks of a node the host backend's lanes take (DDP_LANES). */
#define DDPI_LANES_MAX 16

/* How much of a malformed value a message shows (longer ones end in
 * "..."), and room for it quoted (\xNN for each byte that is not
 * printable ASCII, a quote or a backslash). */
#define DDPI_ENV_SHOWN 40
#define DDPI_ENV_QUOTED (4 * DDPI_ENV_SHOWN + 4)
#define DDPI_ENV_MSG 512

/* s as a message shows it, into buf of len bytes (at least
 * DDPI_ENV_QUOTED for all of it).  Returns buf. */
const char *ddpi_env_quote (const char *s, char *buf, size_t len);

/* Is value (NULL: unset) well formed for the variable name?  Returns 0
 * (also for a name env.c does not know), or DDP_EINVAL with the message
 * in buf: the variable, the value quoted, what is allowed. */
int ddpi_env_explain (const char *name, const char *value, char *buf,
                      size_t len);

/* Is the variable name set to a non-empty value (empty is unset)? */
bool ddpi_env_given (const char *name);

/* The variable name (one env.c knows) as its kind: 0 when unset or empty
 * (*out untouched), 1 with *out set, or DDP_EINVAL with the message
 * recorded by ddpi_error(). */
int ddpi_env_long (const char *name, long *out);
int ddpi_env_flag (const char *name, bool *out);
int ddpi_env_timeout (const char *name, double *out);

/* Both DDP_HOST_ADDR and DDP_SOCKET_IFNAME set: refused (ddp_init and
 * net.c), since one would have to overrule the other silently. */
#define DDPI_ADDR_BOTH "DDP_HOST_ADDR and DDP_SOCKET_IFNAME are both set: " \
    "DDP_HOST_ADDR names the one address this node offers, " \
    "DDP_SOCKET_IFNAME its interfaces; unset one of them"

/* The DDP_TIMEOUT in force for the collectives, in seconds: what ddp_init
 * read through env.c (DDPI_TIMEOUT_MAX for inf), else the default (30).
 * Read by the parts that pace themselves by it (the helpers' rounds), so
 * that the environment is parsed once and a later change of it (setenv
 * after ddp_init) is ignored there as it is by the collectives (core.c). */
double ddpi_coll_timeout (void);

/* ddp_init's first step: every variable env.c knows, except those checked
 * in the backend vote (DDP_CHECK), is unset, empty or well formed, and
 * DDP_HOST_ADDR and DDP_SOCKET_IFNAME are not both set.  Returns 0, or
 * DDP_EINVAL for the first malformed one (ddpi_error). */
int ddpi_env_check (void);

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

/* ddp_dtype_size(), inline for the calls' checks (a rank alone's 8-byte
 * call is some 30 ns: each call in it shows). */
static inline size_t ddpi_dtype_bytes (ddp_dtype_t dtype)
{
    switch (dtype) {
    case DDP_INT8:
    case DDP_UINT8:
        return 1;
    case DDP_FLOAT16:
    case DDP_BFLOAT16:
        return 2;
    case DDP_INT32:
    case DDP_UINT32:
    case DDP_FLOAT32:
        return 4;
    case DDP_INT64:
    case DDP_UINT64:
    case DDP_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

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
