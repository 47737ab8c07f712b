/* util.c - error recording, debug logging and strict parsing for libddp. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"

static __thread char last_error[512];
static __thread bool last_logged;
static int log_rank = -1;
static int log_size = 0;

void ddpi_log_set_identity (int rank, int size)
{
    log_rank = rank;
    log_size = size;
}

/* Write one prefixed line to stderr with a single write(2). */
void ddpi_log_line (const char *msg)
{
    char line[768];
    int n;

    if (log_rank >= 0)
        n = snprintf (line, sizeof (line), "[ddp rank %d/%d] %s\n", log_rank,
                      log_size, msg);
    else
        n = snprintf (line, sizeof (line), "[ddp pid %d] %s\n", (int)getpid (),
                      msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof (line)) {
        n = sizeof (line) - 1;
        line[n - 1] = '\n';
    }
    if (write (STDERR_FILENO, line, (size_t)n) < 0) {
        /* nothing to do: stderr is gone */
    }
}

static bool always_logged (int code)
{
    return code == DDP_ENOLAUNCH || code == DDP_EPMIX || code == DDP_ETRANSPORT
        || code == DDP_ETIMEDOUT || code == DDP_EPEER || code == DDP_EMISMATCH;
}

int ddpi_error_quiet (int code, const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (last_error, sizeof (last_error), fmt, ap);
    va_end (ap);
    last_logged = ddpi_debug_enabled ();
    if (last_logged)
        ddpi_debug ("error: %s", last_error);
    return code;
}

int ddpi_error (int code, const char *fmt, ...)
{
    va_list ap;
    char msg[512];

    va_start (ap, fmt);
    vsnprintf (msg, sizeof (msg), fmt, ap);
    va_end (ap);
    snprintf (last_error, sizeof (last_error), "%s", msg);
    last_logged = always_logged (code) || ddpi_debug_enabled ();
    if (last_logged) {
        char line[600];
        snprintf (line, sizeof (line), "error: %s", msg);
        ddpi_log_line (line);
    }
    return code;
}

const char *ddpi_last_error (void)
{
    return last_error;
}

bool ddpi_last_error_logged (void)
{
    return last_logged;
}

void ddpi_log (const char *fmt, ...)
{
    va_list ap;
    char msg[512];

    va_start (ap, fmt);
    vsnprintf (msg, sizeof (msg), fmt, ap);
    va_end (ap);
    ddpi_log_line (msg);
}

void ddpi_debug (const char *fmt, ...)
{
    va_list ap;
    char msg[512];

    if (!ddpi_debug_enabled ())
        return;
    va_start (ap, fmt);
    vsnprintf (msg, sizeof (msg), fmt, ap);
    va_end (ap);
    ddpi_log_line (msg);
}

double ddpi_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The length of the digits at s (0 if none). */
static size_t digits (const char *s)
{
    size_t n = 0;

    while (s[n] >= '0' && s[n] <= '9')
        n++;
    return n;
}

int ddpi_parse_long (const char *s, long min, long max, long *out)
{
    const char *d;
    size_t n;
    char *end;
    long v;

    if (!s)
        return -1;
    d = s + (*s == '-');
    n = digits (d);
    if (n == 0 || d[n] != '\0' || (n > 1 && d[0] == '0')
        || (d != s && (min >= 0 || d[0] == '0')))
        return -1;
    errno = 0;
    v = strtol (s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int ddpi_parse_flag (const char *s, bool *out)
{
    if (!s || (strcmp (s, "0") != 0 && strcmp (s, "1") != 0))
        return -1;
    *out = s[0] == '1';
    return 0;
}

/* Is s a decimal number as ddpi_parse_seconds takes it (its grammar
 * only, not its value)? */
static bool decimal_number (const char *s)
{
    size_t whole = digits (s), frac = 0;

    s += whole;
    if (*s == '.') {
        frac = digits (s + 1);
        s += 1 + frac;
    }
    if (whole + frac == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s += 1 + (s[1] == '+' || s[1] == '-');
        if (digits (s) == 0)
            return false;
        s += digits (s);
    }
    return *s == '\0';
}

int ddpi_parse_seconds (const char *s, double max, double *out)
{
    double v;

    if (!s || !decimal_number (s))
        return -1;
    v = strtod (s, NULL);
    if (!(v >= DBL_MIN))
        return -3;      /* zero, or too small for a double: not above 0 */
    if (v > max)
        return -2;      /* overflow is HUGE_VAL: above it too */
    *out = v;
    return 0;
}

int ddpi_parse_timeout (const char *s, double *out)
{
    if (s && (strcmp (s, "inf") == 0 || strcmp (s, "infinity") == 0)) {
        *out = DDPI_TIMEOUT_MAX;
        return 0;
    }
    return ddpi_parse_seconds (s, DDPI_TIMEOUT_MAX, out);
}

char *ddpi_format_ranks (char *buf, size_t len, const int *ranks, int n)
{
    char tail[40], item[32];
    size_t off = 0, room;
    int i = 0, j;

    buf[0] = '\0';
    snprintf (tail, sizeof (tail), ",... (%d ranks)", n);
    room = len > strlen (tail) + 1 ? len - strlen (tail) - 1 : 0;
    while (i < n) {
        for (j = i; j + 1 < n && ranks[j + 1] == ranks[j] + 1; j++)
            ;
        if (j > i)
            snprintf (item, sizeof (item), "%s%d-%d", i ? "," : "", ranks[i],
                      ranks[j]);
        else
            snprintf (item, sizeof (item), "%s%d", i ? "," : "", ranks[i]);
        if (off + strlen (item) > room) {
            snprintf (buf + off, len - off, "%s", i ? tail : tail + 1);
            return buf;
        }
        memcpy (buf + off, item, strlen (item) + 1);
        off += strlen (item);
        i = j + 1;
    }
    return buf;
}

bool ddpi_rank_in (const int *ranks, int n, int r)
{
    for (int i = 0; i < n; i++)
        if (ranks[i] == r)
            return true;
    return false;
}

void ddpi_sort_ranks (int *r, int n)
{
    int i, j;

    for (i = 1; i < n; i++) {
        int x = r[i];
        for (j = i - 1; j >= 0 && r[j] > x; j--)
            r[j + 1] = r[j];
        r[j + 1] = x;
    }
}

uint64_t ddpi_hash_str (const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void *ddpi_grow (void *v, size_t n, size_t *cap, size_t esize)
{
    size_t room = *cap ? 2 * *cap : 16;
    void *nv;

    if (n < *cap)
        return v;
    if (room < n + 1 || room > SIZE_MAX / esize
        || !(nv = calloc (room, esize)))
        return NULL;
    if (n)
        memcpy (nv, v, n * esize);
    free (v);
    *cap = room;
    return nv;
}
