/* env.c - the grammar of every DDP_* variable libddp reads, in one place
 * (ddp_internal.h): which kind each one is (a whole number in a range, a
 * flag, a timeout, a word of a list, a list of interface names: ifsel.h),
 * the message that refuses a malformed value, the check ddp_init() makes
 * of them all before anything else, and the reading
 * of DDP_DEBUG, which logging does before ddp_init too.  The
 * readers (core.c, host.c, shm.c, nccl.c, pmix.c, choice.c; the helpers
 * through core.c's ddpi_coll_timeout and ddpi_debug_enabled) take their
 * values through ddpi_env_long/_flag/_timeout, so that a range or an
 * allowed word is written here only. */
#include "config.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"
#include "ifsel.h"

enum kind { ENV_LONG, ENV_FLAG, ENV_TIMEOUT, ENV_WORD, ENV_IFNAMES };

struct var {
    const char *name;
    enum kind kind;
    long min, max;      /* ENV_LONG */
    const char *what;   /* ENV_LONG: what it counts; ENV_FLAG: the choices;
                           ENV_WORD: the words, ", " between them */
    bool voted;         /* checked in the backend vote (choice.c), where a
                           bad value fails every rank alike: not at init */
};

#define FLAG_01(what) "0 or 1: " what

static const struct var vars[] = {
    { "DDP_DEBUG", ENV_FLAG, 0, 1, FLAG_01 ("set 1 to log what libddp "
      "does, 0 or nothing to leave it off"), false },
    { "DDP_TIMEOUT", ENV_TIMEOUT, 0, 0, NULL, false },
    { "DDP_BACKEND", ENV_WORD, 0, 0, "auto, host, nccl", true },
    { "DDP_BOOTSTRAP", ENV_WORD, 0, 0, "local, pmix, single", false },
    { "DDP_INIT_TIMEOUT", ENV_TIMEOUT, 0, 0, NULL, false },
    { "DDP_CHECK", ENV_FLAG, 0, 1, FLAG_01 ("set 1 to compare every "
      "collective's arguments across the ranks, 0 or nothing to leave it "
      "off"), true },
    { "DDP_PMIX_COLLECT", ENV_FLAG, 0, 1, "1 (fences collect the setup "
      "data: the default) or 0 (each rank's data is fetched from its node "
      "when read)", false },
    { "DDP_SPIN", ENV_LONG, 0, 10000000, "microseconds", false },
    { "DDP_YIELD", ENV_LONG, 0, 10000000, "microseconds", false },
    { "DDP_SHM_SLOT", ENV_LONG, 4096, 1L << 30, "bytes", false },
    { "DDP_CMA", ENV_FLAG, 0, 1, FLAG_01 ("0 turns single copy between the "
      "ranks of a node off, 1 or nothing leaves it on"), false },
    { "DDP_LANES", ENV_LONG, 1, DDPI_LANES_MAX, "ranks", false },
    { "DDP_LANE_MIN", ENV_LONG, 1, 1L << 30, "bytes", false },
    { "DDP_SMALL_MAX", ENV_LONG, 0, 1L << 30, "bytes", false },
    { "DDP_RING_MIN", ENV_LONG, 0, 1L << 30, "bytes", false },
    { "DDP_SEGMENT", ENV_LONG, 64, 1L << 30, "bytes", false },
    { "DDP_TCP_PIECE", ENV_LONG, 0, 1L << 30, "bytes", false },
    { "DDP_TCP_READAHEAD", ENV_LONG, 0, 1L << 24, "bytes", false },
    { "DDP_TCP_SNDBUF", ENV_LONG, 0, 1L << 30, "bytes", false },
    { "DDP_STRAGGLERS", ENV_FLAG, 0, 1, FLAG_01 ("set 1 to report the ranks "
      "that reach the collectives last, 0 or nothing to leave it off"),
      false },
    { "DDP_SOCKET_IFNAME", ENV_IFNAMES, 0, 0, NULL, false },
    { "DDP_NCCL_RANKS_PER_ROOT", ENV_LONG, 1, INT_MAX, "ranks", false },
    { "DDP_DEVICE", ENV_LONG, 0, 65535, "a CUDA device index of the task's "
      "view", false },
    { "DDP_NCCL_BUFFER_CACHE", ENV_FLAG, 0, 1, FLAG_01 ("0 asks CUDA about "
      "every buffer at every call, 1 or nothing keeps the answer"), false },
};
#define NVARS (sizeof (vars) / sizeof (vars[0]))

static const struct var *find (const char *name)
{
    for (size_t i = 0; i < NVARS; i++)
        if (strcmp (vars[i].name, name) == 0)
            return &vars[i];
    return NULL;
}

/* A malformed DDP_DEBUG has been said (warning or ddp_init's error). */
static atomic_bool debug_said;

bool ddpi_debug_enabled (void)
{
    const char *s = getenv ("DDP_DEBUG");
    char msg[DDPI_ENV_MSG], line[DDPI_ENV_MSG + 64];
    bool on = false;

    if (!s || !*s || ddpi_parse_flag (s, &on) == 0)
        return on;
    if (!atomic_exchange (&debug_said, true)
        && ddpi_env_explain ("DDP_DEBUG", s, msg, sizeof (msg)) < 0) {
        snprintf (line, sizeof (line), "warning: %s (debugging stays off; "
                  "ddp_init refuses it)", msg);
        ddpi_log_line (line);
    }
    return false;
}

const char *ddpi_env_quote (const char *s, char *buf, size_t len)
{
    size_t off = 0, i;

    if (len == 0)
        return buf;
    buf[0] = '\0';
    for (i = 0; i < DDPI_ENV_SHOWN && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        bool plain = c >= 0x20 && c < 0x7f && c != '\'' && c != '\\';

        if (off + (plain ? 1 : 4) + 1 > len)
            return buf;
        if (plain) {
            buf[off++] = (char)c;
            buf[off] = '\0';
        } else {
            snprintf (buf + off, len - off, "\\x%02x", c);
            off += 4;
        }
    }
    if (s[i] && off + 4 <= len)
        memcpy (buf + off, "...", 4);
    return buf;
}

/* The message for value, malformed as a name of kind v.  rc is what the
 * parser said (-1 not of the kind, -2 above the maximum, -3 not above 0). */
static void explain (const struct var *v, const char *value, int rc,
                     char *buf, size_t len)
{
    char q[DDPI_ENV_QUOTED];

    ddpi_env_quote (value, q, sizeof (q));
    if (v->kind == ENV_IFNAMES) {
        struct ddpi_ifsel sel;
        ddpi_ifsel_parse (v->name, value, &sel, buf, len);
    } else if (v->kind == ENV_FLAG)
        snprintf (buf, len, "%s='%s' is not %s", v->name, q, v->what);
    else if (v->kind == ENV_WORD)
        snprintf (buf, len, "%s='%s' is not one of %s", v->name, q,
                  v->what);
    else if (v->kind == ENV_LONG)
        snprintf (buf, len, "%s='%s' is not a whole number from %ld to %ld "
                  "(%s, in decimal digits)", v->name, q, v->min, v->max,
                  v->what);
    else if (rc == -2)
        snprintf (buf, len, "%s='%s' is too long: give at most %.0f seconds "
                  "(about 11 days), or inf for no timeout", v->name, q,
                  DDPI_TIMEOUT_MAX);
    else if (rc == -3)
        snprintf (buf, len, "%s='%s' must be more than 0: give a number of "
                  "seconds in (0, %.0f], or inf for no timeout", v->name, q,
                  DDPI_TIMEOUT_MAX);
    else
        snprintf (buf, len, "%s='%s' is not a number of seconds: give one in "
                  "(0, %.0f], or inf for no timeout", v->name, q,
                  DDPI_TIMEOUT_MAX);
}

/* Is s one of the words of list ("a, b, c")?  Returns 0 or -1. */
static int parse_word (const char *s, const char *list)
{
    size_t n = strlen (s);

    while (*list) {
        size_t w = strcspn (list, ",");

        if (w == n && strncmp (list, s, n) == 0)
            return 0;
        list += w;
        list += strspn (list, ", ");
    }
    return -1;
}

/* Parse value as v's kind into *l or *d.  Returns 0 or the parser's code. */
static int parse (const struct var *v, const char *value, long *l, double *d)
{
    bool f;

    switch (v->kind) {
    case ENV_LONG:
        return ddpi_parse_long (value, v->min, v->max, l);
    case ENV_FLAG:
        if (ddpi_parse_flag (value, &f) < 0)
            return -1;
        *l = f;
        return 0;
    case ENV_TIMEOUT:
        return ddpi_parse_timeout (value, d);
    case ENV_WORD:
        return parse_word (value, v->what);
    case ENV_IFNAMES: {
        struct ddpi_ifsel sel;
        return ddpi_ifsel_parse (v->name, value, &sel, NULL, 0);
    }
    }
    return -1;
}

int ddpi_env_explain (const char *name, const char *value, char *buf,
                      size_t len)
{
    const struct var *v = find (name);
    long l;
    double d;
    int rc;

    if (!v || !value || !*value || (rc = parse (v, value, &l, &d)) == 0)
        return 0;
    explain (v, value, rc, buf, len);
    return DDP_EINVAL;
}

/* name's value into *l or *d: 0 when unset or empty (outputs untouched),
 * 1 when set, or DDP_EINVAL recorded with ddpi_error. */
static int get (const char *name, long *l, double *d)
{
    const struct var *v = find (name);
    const char *s = getenv (name);
    char msg[DDPI_ENV_MSG];
    long lv = 0;
    double dv = 0;
    int rc;

    if (!v)
        return ddpi_error (DDP_EINVAL, "internal: %s has no grammar", name);
    if (!s || !*s)
        return 0;
    if ((rc = parse (v, s, &lv, &dv)) < 0) {
        explain (v, s, rc, msg, sizeof (msg));
        return ddpi_error (DDP_EINVAL, "%s", msg);
    }
    if (l)
        *l = lv;
    if (d)
        *d = dv;
    return 1;
}

bool ddpi_env_given (const char *name)
{
    const char *s = getenv (name);

    return s && *s;
}

int ddpi_env_long (const char *name, long *out)
{
    return get (name, out, NULL);
}

int ddpi_env_flag (const char *name, bool *out)
{
    long l;
    int rc = get (name, &l, NULL);

    if (rc == 1)
        *out = l != 0;
    return rc;
}

int ddpi_env_timeout (const char *name, double *out)
{
    return get (name, NULL, out);
}

int ddpi_env_check (void)
{
    char msg[DDPI_ENV_MSG];

    for (size_t i = 0; i < NVARS; i++)
        if (!vars[i].voted
            && ddpi_env_explain (vars[i].name, getenv (vars[i].name), msg,
                                 sizeof (msg)) < 0) {
            if (strcmp (vars[i].name, "DDP_DEBUG") == 0)
                atomic_store (&debug_said, true);   /* said here, once */
            return ddpi_error (DDP_EINVAL, "%s", msg);
        }
    if (ddpi_env_given ("DDP_HOST_ADDR")
        && ddpi_env_given ("DDP_SOCKET_IFNAME"))
        return ddpi_error (DDP_EINVAL, DDPI_ADDR_BOTH);
    return 0;
}
