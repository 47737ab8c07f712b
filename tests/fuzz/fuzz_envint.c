/* fuzz-sources: libjob/common/util.c libjob/common/env.c libjob/common/ifsel.c */
/* fuzz_envint.c - libddp's grammars of environment values (RANK=abc,
 * WORLD_SIZE=0, DDP_TIMEOUT=0x10, DDP_SHM_SLOT=-1, DDP_DEBUG=yes, ...):
 * ddpi_parse_long(), ddpi_parse_flag(), ddpi_parse_seconds(),
 * ddpi_parse_timeout(), and env.c's ddpi_env_explain() (a word list's
 * too: DDP_BACKEND; an interface selector's: DDP_SOCKET_IFNAME, ifsel.c)
 * and
 * ddpi_env_quote().
 *
 * Input: byte 0 picks the bounds (low 3 bits) and a variable (the rest),
 * the other bytes are the value.  Each parser is checked against an
 * independent reference written here from the grammar in ddp_internal.h
 * and doc/ddp.3: whole numbers in decimal digits, no leading zero, a '-'
 * only where negative values are allowed and never "-0"; flags "0" or
 * "1"; seconds as digits with an optional fraction and exponent, nothing
 * else, refused as not above 0 (-3) or above the maximum (-2) by value;
 * "inf"/"infinity" as the maximum timeout.  On failure no output is
 * written.  ddpi_env_explain must refuse exactly what the reference of
 * the variable's kind refuses (empty is unset), with a message that names
 * the variable and shows the value as printable ASCII only. */
#include "config.h"
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>

#include "fuzz.h"
#include "ddp_internal.h"

/* util.c's messages name the error code; the fuzzer links no core. */
__attribute__ ((weak)) const char *ddp_strerror (int err)
{
    (void) err;
    return "error";
}

static const long bounds[][2] = {
    { 0, LONG_MAX }, { 1, INT_MAX }, { 0, 3 }, { 4096, 1L << 30 },
    { LONG_MIN, LONG_MAX }, { -5, 5 }, { 2, 1 }, { -1, 0 },
};
#define NBOUNDS (sizeof (bounds) / sizeof (bounds[0]))

/* The variables checked through env.c, as doc/ddp.3 states them. */
enum kind { K_LONG, K_FLAG, K_TIMEOUT, K_BACKEND, K_IFNAMES };
static const struct {
    const char *name;
    enum kind kind;
    long min, max;
} vars[] = {
    { "DDP_SHM_SLOT", K_LONG, 4096, 1L << 30 },
    { "DDP_SPIN", K_LONG, 0, 10000000 },
    { "DDP_LANES", K_LONG, 1, 16 },
    { "DDP_TCP_READAHEAD", K_LONG, 0, 1L << 24 },
    { "DDP_NCCL_RANKS_PER_ROOT", K_LONG, 1, INT_MAX },
    { "DDP_DEBUG", K_FLAG, 0, 1 },
    { "DDP_STRAGGLERS", K_FLAG, 0, 1 },
    { "DDP_CMA", K_FLAG, 0, 1 },
    { "DDP_PMIX_COLLECT", K_FLAG, 0, 1 },
    { "DDP_TIMEOUT", K_TIMEOUT, 0, 0 },
    { "DDP_INIT_TIMEOUT", K_TIMEOUT, 0, 0 },
    { "DDP_BACKEND", K_BACKEND, 0, 0 },
    { "DDP_SOCKET_IFNAME", K_IFNAMES, 0, 0 },
};
#define NVARS (sizeof (vars) / sizeof (vars[0]))

static int is_digit (char c)
{
    return c >= '0' && c <= '9';
}

/* Reference: 1 and *v when s is 0, [1-9][0-9]* or -[1-9][0-9]* and fits
 * in a long. */
static int ref_long (const char *s, long *v)
{
    int neg = (*s == '-');
    const char *d = s + neg;
    unsigned long long mag = 0;
    size_t n = 0;

    if (*d == '\0' || (d[0] == '0' && (d[1] != '\0' || neg)))
        return 0;
    for (; d[n]; n++) {
        if (!is_digit (d[n]))
            return 0;
        if (mag > (ULLONG_MAX - 9) / 10)
            return 0;                       /* far too big: not a long */
        mag = mag * 10 + (unsigned) (d[n] - '0');
    }
    if (!neg && mag > (unsigned long long) LONG_MAX)
        return 0;
    if (neg && mag > (unsigned long long) LONG_MAX + 1)
        return 0;
    *v = neg ? (long) (0 - mag) : (long) mag;
    return 1;
}

/* Reference: is s digits, an optional point with digits (one digit at
 * least in all), then an optional exponent?  A state machine. */
static int ref_decimal (const char *s)
{
    enum { START, WHOLE, POINT, FRAC, E, ESIGN, EXP } st = START;
    int mant = 0;

    for (; *s; s++) {
        char c = *s;

        if (is_digit (c)) {
            if (st == START || st == WHOLE)
                st = WHOLE, mant = 1;
            else if (st == POINT || st == FRAC)
                st = FRAC, mant = 1;
            else
                st = EXP;
        } else if (c == '.' && (st == START || st == WHOLE))
            st = POINT;
        else if ((c == 'e' || c == 'E') && mant
                 && (st == WHOLE || st == POINT || st == FRAC))
            st = E;
        else if ((c == '+' || c == '-') && st == E)
            st = ESIGN;
        else
            return 0;
    }
    return mant && (st == WHOLE || st == POINT || st == FRAC || st == EXP);
}

/* Reference: what ddpi_parse_seconds(s, max) returns, and the value. */
static int ref_seconds (const char *s, double max, double *v)
{
    if (!ref_decimal (s))
        return -1;
    *v = strtod (s, NULL);
    if (!(*v >= DBL_MIN))
        return -3;
    return *v > max ? -2 : 0;
}

static int ref_timeout (const char *s, double *v)
{
    if (strcmp (s, "inf") == 0 || strcmp (s, "infinity") == 0) {
        *v = DDPI_TIMEOUT_MAX;
        return 0;
    }
    return ref_seconds (s, DDPI_TIMEOUT_MAX, v);
}

static void check_long (const char *s, long min, long max)
{
    long out = 4242, ref;
    int rc = ddpi_parse_long (s, min, max, &out);

    if (ref_long (s, &ref) && ref >= min && ref <= max)
        fuzz_assert (rc == 0 && out == ref);
    else
        fuzz_assert (rc == -1 && out == 4242);
    fuzz_assert (ddpi_parse_long (NULL, min, max, &out) == -1);
}

static void check_flag (const char *s)
{
    bool f = true;
    int rc = ddpi_parse_flag (s, &f);

    if (strcmp (s, "0") == 0 || strcmp (s, "1") == 0)
        fuzz_assert (rc == 0 && f == (s[0] == '1'));
    else
        fuzz_assert (rc == -1 && f);
}

static void check_seconds (const char *s)
{
    double secs = -1, ref = -1;
    int rc = ddpi_parse_seconds (s, 1e7, &secs), want = ref_seconds (s, 1e7,
                                                                     &ref);

    fuzz_assert (rc == want);
    fuzz_assert (rc == 0 ? secs == ref && isfinite (secs) && secs > 0
                           && secs <= 1e7
                         : secs == -1);
    secs = -1;
    rc = ddpi_parse_timeout (s, &secs);
    want = ref_timeout (s, &ref);
    fuzz_assert (rc == want);
    fuzz_assert (rc == 0 ? secs == ref : secs == -1);
}

/* The message names the variable, then the value quoted as printable
 * ASCII only, within the buffer. */
static void check_message (const char *name, const char *msg, size_t len)
{
    size_t n = strlen (name);
    const char *q = msg + n + 2, *end;

    fuzz_assert (fuzz_terminated (msg, len));
    fuzz_assert (strncmp (msg, name, n) == 0 && msg[n] == '='
                 && msg[n + 1] == '\'');
    end = strchr (q, '\'');
    fuzz_assert (end != NULL);
    fuzz_assert (end - q <= DDPI_ENV_QUOTED);
    for (; q < end; q++)
        fuzz_assert (*q >= 0x20 && *q < 0x7f);
}

/* Reference: 1 when s is an interface selector as doc/ddp.3 states it:
 * an optional '^', an optional '=', then 1 to 16 names of 1 to 15
 * characters of letters, digits and _.:@- separated by single commas. */
static int ref_ifnames (const char *s)
{
    int names = 0;

    s += *s == '^';
    s += *s == '=';
    for (;;) {
        size_t n = strspn (s, "abcdefghijklmnopqrstuvwxyz"
                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:@-");
        if (n < 1 || n > 15 || ++names > 16)
            return 0;
        s += n;
        if (*s == '\0')
            return 1;
        if (*s++ != ',')
            return 0;
    }
}

static void check_env (const char *s, unsigned pick)
{
    unsigned i = pick % NVARS;
    char msg[DDPI_ENV_MSG], q[DDPI_ENV_QUOTED];
    long l;
    double d;
    int rc, ok;

    memset (msg, 'x', sizeof (msg));
    rc = ddpi_env_explain (vars[i].name, s, msg, sizeof (msg));
    if (vars[i].kind == K_LONG)
        ok = ref_long (s, &l) && l >= vars[i].min && l <= vars[i].max;
    else if (vars[i].kind == K_FLAG)
        ok = strcmp (s, "0") == 0 || strcmp (s, "1") == 0;
    else if (vars[i].kind == K_BACKEND)
        ok = strcmp (s, "auto") == 0 || strcmp (s, "host") == 0
             || strcmp (s, "nccl") == 0;
    else if (vars[i].kind == K_IFNAMES)
        ok = ref_ifnames (s);
    else
        ok = ref_timeout (s, &d) == 0;
    ok = ok || *s == '\0';
    fuzz_assert (rc == (ok ? 0 : DDP_EINVAL));
    if (!ok)
        check_message (vars[i].name, msg, sizeof (msg));
    /* A quote in any buffer: terminated, never half an escape. */
    for (size_t len = 1; len < 12; len++) {
        memset (q, 'x', sizeof (q));
        ddpi_env_quote (s, q, len);
        fuzz_assert (fuzz_terminated (q, len));
        for (const char *e = strchr (q, '\\'); e; e = strchr (e + 1, '\\'))
            fuzz_assert (e[1] == 'x' && isxdigit ((unsigned char) e[2])
                         && isxdigit ((unsigned char) e[3]));
    }
    ddpi_env_quote (s, q, sizeof (q));
    fuzz_assert (strlen (q) <= 4 * DDPI_ENV_SHOWN + 3);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *s;

    if (size < 1)
        return 0;
    s = fuzz_cstr (data + 1, size - 1);
    check_long (s, bounds[data[0] % NBOUNDS][0], bounds[data[0] % NBOUNDS][1]);
    check_flag (s);
    check_seconds (s);
    check_env (s, data[0] / NBOUNDS);
    free (s);
    return 0;
}
