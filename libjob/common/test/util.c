/* util.c - libddp's internal helpers: the compact rank lists that failure
 * messages are made of (ddpi_format_ranks), sorting them
 * (ddpi_sort_ranks), the string hash (ddpi_hash_str), and a bounded
 * wait's deadline (ddpi_wait_*), waiting for a pipe's reader
 * (ddpi_wait_pipe_read), and the grammars of the environment's values
 * (ddpi_parse_*, env.c). */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pipes.h"
#include "tap.h"
#include "ddp_internal.h"
#include "wait.h"

/* A wait of timeout_s runs out; extended by more_s it goes on for about
 * that long, then runs out again. */
static void wait_extend_checks (void)
{
    struct ddpi_waiter w;
    double t0 = ddpi_now (), t1, t2;
    int rc;

    ddpi_wait_init (&w, 0.05, 0);
    while ((rc = ddpi_wait_step (&w)) >= 0)
        ;
    t1 = ddpi_now ();
    ok (t1 - t0 >= 0.05 && t1 - t0 < 1, "wait: runs out after its timeout "
        "(%.3f s)", t1 - t0);
    ddpi_wait_extend (&w, 0.1);
    ok (ddpi_wait_step (&w) >= 0, "wait: extended, it goes on");
    while ((rc = ddpi_wait_step (&w)) >= 0)
        ;
    t2 = ddpi_now ();
    /* The extension moves the deadline (start + 0.05 s, start >= t0), not
     * the moment the loop above noticed it (t1, later under load). */
    ok (t2 - t0 >= 0.15 && t2 - t1 < 1, "wait: runs out again after the "
        "extension (%.3f s after the start)", t2 - t0);
}

static void ranks_is (const int *r, int n, size_t len, const char *want,
                      const char *what)
{
    char buf[256];

    memset (buf, 'x', sizeof (buf));
    is_str (ddpi_format_ranks (buf, len, r, n), want, "%s", what);
    ok (strlen (buf) < len, "%s: fits in %zu bytes", what, len);
}

static void seconds_checks (void)
{
    double v = -1;

    ok (ddpi_parse_seconds ("30", 100, &v) == 0 && v == 30, "seconds: 30");
    ok (ddpi_parse_seconds ("0.25", 100, &v) == 0 && v == 0.25,
        "seconds: 0.25");
    ok (ddpi_parse_seconds ("1e2", 100, &v) == 0 && v == 100,
        "seconds: 1e2, the maximum itself");
    v = -1;
    is_int (ddpi_parse_seconds ("101", 100, &v), -2, "seconds: above the "
            "maximum is -2");
    is_int (ddpi_parse_seconds ("1e999", 100, &v), -2, "seconds: overflow "
            "is above the maximum too");
    is_int (ddpi_parse_seconds ("0", 100, &v), -3, "seconds: 0 is not "
            "positive (-3, not -1: it is a number)");
    is_int (ddpi_parse_seconds ("-5", 100, &v), -1, "seconds: no sign");
    is_int (ddpi_parse_seconds ("soon", 100, &v), -1, "seconds: a word");
    is_int (ddpi_parse_seconds ("5s", 100, &v), -1, "seconds: a suffix");
    is_int (ddpi_parse_seconds ("inf", 1e300, &v), -1, "seconds: inf is not "
            "a number of seconds");
    is_int (ddpi_parse_seconds ("1e-999", 100, &v), -3, "seconds: underflow "
            "is not above 0");
    is_int (ddpi_parse_seconds ("0x10", 100, &v), -1, "seconds: no "
            "hexadecimal (strtod would say 16)");
    is_int (ddpi_parse_seconds ("0x1p4", 100, &v), -1, "seconds: no "
            "hexadecimal float");
    is_int (ddpi_parse_seconds ("nan", 100, &v), -1, "seconds: no nan");
    is_int (ddpi_parse_seconds ("+5", 100, &v), -1, "seconds: no '+'");
    is_int (ddpi_parse_seconds (" 5", 100, &v), -1, "seconds: no blank "
            "before");
    is_int (ddpi_parse_seconds ("5 ", 100, &v), -1, "seconds: no blank "
            "after");
    is_int (ddpi_parse_seconds ("", 100, &v), -1, "seconds: empty");
    is_int (ddpi_parse_seconds (".", 100, &v), -1, "seconds: a point alone");
    is_int (ddpi_parse_seconds ("1e", 100, &v), -1, "seconds: an exponent "
            "without digits");
    is_int (ddpi_parse_seconds ("1e+", 100, &v), -1, "seconds: an exponent "
            "sign without digits");
    is_int (ddpi_parse_seconds ("1.2.3", 100, &v), -1, "seconds: two "
            "points");
    is_int (ddpi_parse_seconds ("0.0", 100, &v), -3, "seconds: 0.0 is not "
            "positive");
    ok (v == -1, "seconds: failures leave the output alone");
    ok (ddpi_parse_seconds (".5", 100, &v) == 0 && v == 0.5, "seconds: .5");
    ok (ddpi_parse_seconds ("2.", 100, &v) == 0 && v == 2, "seconds: 2.");
    ok (ddpi_parse_seconds ("5E-1", 100, &v) == 0 && v == 0.5,
        "seconds: 5E-1");
    ok (ddpi_parse_seconds ("007", 100, &v) == 0 && v == 7,
        "seconds: leading zeros are decimal");
    ok (ddpi_parse_timeout ("inf", &v) == 0 && v == DDPI_TIMEOUT_MAX,
        "timeout: inf is the maximum");
    ok (ddpi_parse_timeout ("infinity", &v) == 0 && v == DDPI_TIMEOUT_MAX,
        "timeout: infinity too");
    ok (ddpi_parse_timeout ("1000000", &v) == 0 && v == DDPI_TIMEOUT_MAX,
        "timeout: the maximum written out");
    is_int (ddpi_parse_timeout ("1e9", &v), -2, "timeout: 1e9 is too long");
    is_int (ddpi_parse_timeout ("0", &v), -3, "timeout: 0 is not above 0");
    is_int (ddpi_parse_timeout ("0x10", &v), -1, "timeout: 0x10 is not 16");
    is_int (ddpi_parse_timeout ("INF", &v), -1, "timeout: INF is not inf");
}

static void long_is_bad (const char *s, long min, long max, const char *what)
{
    long v = 4242;

    ok (ddpi_parse_long (s, min, max, &v) == -1 && v == 4242,
        "long: %s refused, output untouched", what);
}

/* Decimal digits only: no base prefix, no leading zero, no sign where a
 * negative number is not allowed, nothing beyond a long. */
static void long_checks (void)
{
    long v = 0;

    ok (ddpi_parse_long ("0", 0, 10, &v) == 0 && v == 0, "long: 0");
    ok (ddpi_parse_long ("4096", 4096, 1L << 30, &v) == 0 && v == 4096,
        "long: the minimum itself");
    ok (ddpi_parse_long ("-5", -10, 10, &v) == 0 && v == -5,
        "long: a negative number where one is allowed");
    ok (ddpi_parse_long ("9223372036854775807", 0, LONG_MAX, &v) == 0
        && v == LONG_MAX, "long: LONG_MAX");
    long_is_bad ("-1", 4096, 1L << 30, "-1 (DDP_SHM_SLOT)");
    long_is_bad ("-0", 0, 10, "-0 where no sign is allowed");
    long_is_bad ("-0", -10, 10, "-0 even where negatives are allowed");
    long_is_bad ("abc", 0, 10, "abc");
    long_is_bad ("99999999999999999999", 0, LONG_MAX, "an overflow");
    long_is_bad ("9223372036854775808", 0, LONG_MAX, "LONG_MAX + 1");
    long_is_bad ("0x10", 0, 100, "0x10");
    long_is_bad ("010", 0, 100, "010 (octal or decimal? neither)");
    long_is_bad ("00", 0, 100, "00");
    long_is_bad ("+5", 0, 10, "+5");
    long_is_bad (" 5", 0, 10, "a blank before");
    long_is_bad ("5 ", 0, 10, "a blank after");
    long_is_bad ("5k", 0, 10000, "a suffix");
    long_is_bad ("", 0, 10, "empty");
    long_is_bad (NULL, 0, 10, "NULL");
    long_is_bad ("-", -10, 10, "a sign alone");
    long_is_bad ("11", 0, 10, "above the maximum");
    long_is_bad ("1e3", 0, 10000, "an exponent");
}

static void flag_checks (void)
{
    static const char *const bad[] = { "", "yes", "true", "2", "01", " 1",
                                       "1 ", "-1", "0x1", "on", NULL };
    bool f = false;

    ok (ddpi_parse_flag ("1", &f) == 0 && f, "flag: 1");
    ok (ddpi_parse_flag ("0", &f) == 0 && !f, "flag: 0");
    for (int i = 0; bad[i]; i++) {
        f = true;
        ok (ddpi_parse_flag (bad[i], &f) == -1 && f, "flag: '%s' refused",
            bad[i]);
    }
    ok (ddpi_parse_flag (NULL, &f) == -1, "flag: NULL refused");
}

/* ddpi_env_explain (name=value) says want; or accepts it (want NULL). */
static void explain_is (const char *name, const char *value,
                        const char *want)
{
    char msg[DDPI_ENV_MSG] = "";
    int rc = ddpi_env_explain (name, value, msg, sizeof (msg));

    if (!want) {
        is_int (rc, 0, "env: %s='%s' accepted", name, value ? value : "");
        return;
    }
    is_int (rc, DDP_EINVAL, "env: %s='%s' refused", name, value);
    ok (strstr (msg, want) != NULL, "env: says \"%s\": %s", want, msg);
}

/* Each variable's grammar, with the message that refuses a bad value. */
static void env_checks (void)
{
    char big[200], q[DDPI_ENV_QUOTED];

    explain_is ("DDP_SHM_SLOT", "-1", "DDP_SHM_SLOT='-1' is not a whole "
                "number from 4096 to 1073741824 (bytes, in decimal digits)");
    explain_is ("DDP_SHM_SLOT", "abc", "DDP_SHM_SLOT='abc' is not a whole "
                "number from 4096");
    explain_is ("DDP_SHM_SLOT", "99999999999999999999", "DDP_SHM_SLOT="
                "'99999999999999999999' is not a whole number");
    explain_is ("DDP_SHM_SLOT", "0x10000", "is not a whole number");
    explain_is ("DDP_SHM_SLOT", "65536", NULL);
    explain_is ("DDP_TIMEOUT", "0x10", "DDP_TIMEOUT='0x10' is not a number "
                "of seconds: give one in (0, 1000000], or inf for no "
                "timeout");
    explain_is ("DDP_TIMEOUT", "0", "DDP_TIMEOUT='0' must be more than 0: "
                "give a number of seconds in (0, 1000000], or inf");
    explain_is ("DDP_INIT_TIMEOUT", "1e9", "DDP_INIT_TIMEOUT='1e9' is too "
                "long: give at most 1000000 seconds");
    explain_is ("DDP_TIMEOUT", "inf", NULL);
    explain_is ("DDP_TIMEOUT", "2.5", NULL);
    explain_is ("DDP_DEBUG", "yes", "DDP_DEBUG='yes' is not 0 or 1: set 1 "
                "to log what libddp does, 0 or nothing to leave it off");
    explain_is ("DDP_DEBUG", "2", "DDP_DEBUG='2' is not 0 or 1");
    explain_is ("DDP_DEBUG", "1", NULL);
    explain_is ("DDP_DEBUG", "", NULL);
    explain_is ("DDP_DEBUG", NULL, NULL);
    explain_is ("DDP_STRAGGLERS", "x", "DDP_STRAGGLERS='x' is not 0 or 1");
    explain_is ("DDP_CMA", "yes", "DDP_CMA='yes' is not 0 or 1");
    explain_is ("DDP_NCCL_BUFFER_CACHE", "off", "DDP_NCCL_BUFFER_CACHE="
                "'off' is not 0 or 1");
    explain_is ("DDP_CHECK", "yes", "DDP_CHECK='yes' is not 0 or 1: set 1 "
                "to compare every collective's arguments");
    explain_is ("DDP_PMIX_COLLECT", "yes", "DDP_PMIX_COLLECT='yes' is not 1 "
                "(fences collect the setup data: the default) or 0");
    explain_is ("DDP_LANES", "17", "DDP_LANES='17' is not a whole number "
                "from 1 to 16");
    explain_is ("DDP_SPIN", "-1", "from 0 to 10000000 (microseconds");
    explain_is ("DDP_NCCL_RANKS_PER_ROOT", "0", "from 1 to 2147483647");
    explain_is ("DDP_BACKEND", "NCCL", "DDP_BACKEND='NCCL' is not one of "
                "auto, host, nccl");
    explain_is ("DDP_BACKEND", "hos", "is not one of auto, host, nccl");
    explain_is ("DDP_BACKEND", "host,", "is not one of auto, host, nccl");
    explain_is ("DDP_BACKEND", "nccl", NULL);
    explain_is ("DDP_BOOTSTRAP", "carrier-pigeon", "DDP_BOOTSTRAP="
                "'carrier-pigeon' is not one of local, pmix, single");
    explain_is ("DDP_BOOTSTRAP", "single", NULL);
    explain_is ("DDP_NOT_OURS", "whatever", NULL);
    /* What a message shows of a value: unprintable bytes, quotes and
     * backslashes escaped; a long one cut. */
    explain_is ("DDP_SPIN", "1\n2", "DDP_SPIN='1\\x0a2' is not");
    explain_is ("DDP_SPIN", "it's", "DDP_SPIN='it\\x27s' is not");
    memset (big, '7', sizeof (big) - 1);
    big[sizeof (big) - 1] = '\0';
    explain_is ("DDP_SPIN", big, "DDP_SPIN='7777777777777777777777777777777"
                "777777777...' is not");
    is_str (ddpi_env_quote ("\xff\x01", q, sizeof (q)), "\\xff\\x01",
            "quote: bytes above ASCII and controls");
    is_str (ddpi_env_quote ("abcdef", q, 4), "abc", "quote: a small buffer "
            "cuts, NUL-terminated");
    is_str (ddpi_env_quote ("a\x01", q, 4), "a", "quote: no half escape");
}

/* setenv name=value, then ddpi_env_check: rc and the recorded message. */
static void check_is (const char *name, const char *value, int want,
                      const char *msg)
{
    int rc;

    setenv (name, value, 1);
    rc = ddpi_env_check ();
    unsetenv (name);
    is_int (rc, want, "check: %s='%s'", name, value);
    if (msg)
        ok (strstr (ddpi_last_error (), msg) != NULL, "check: names it: %s",
            ddpi_last_error ());
}

/* ddp_init's sweep of the whole environment, and the typed getters. */
static void env_sweep_checks (void)
{
    long l = 7;
    bool f = true;
    double d = 3;

    is_int (ddpi_env_check (), 0, "check: a clean environment is fine");
    check_is ("DDP_SHM_SLOT", "-1", DDP_EINVAL, "DDP_SHM_SLOT='-1'");
    check_is ("DDP_SHM_SLOT", "abc", DDP_EINVAL, "DDP_SHM_SLOT='abc'");
    check_is ("DDP_SHM_SLOT", "99999999999999999999", DDP_EINVAL,
              "DDP_SHM_SLOT='99999999999999999999'");
    check_is ("DDP_TIMEOUT", "0x10", DDP_EINVAL, "DDP_TIMEOUT='0x10'");
    check_is ("DDP_TIMEOUT", "0", DDP_EINVAL, "must be more than 0");
    check_is ("DDP_DEBUG", "yes", DDP_EINVAL, "DDP_DEBUG='yes'");
    check_is ("DDP_STRAGGLERS", "x", DDP_EINVAL, "DDP_STRAGGLERS='x'");
    check_is ("DDP_PMIX_COLLECT", "", 0, NULL);
    check_is ("DDP_CHECK", "yes", 0, NULL);     /* the vote's, not init's */
    check_is ("DDP_SEGMENT", "256k", DDP_EINVAL, "DDP_SEGMENT='256k'");

    setenv ("DDP_LANES", "3", 1);
    ok (ddpi_env_long ("DDP_LANES", &l) == 1 && l == 3, "long: DDP_LANES=3");
    setenv ("DDP_LANES", "", 1);
    ok (ddpi_env_long ("DDP_LANES", &l) == 0 && l == 3, "long: empty is "
        "unset, output untouched");
    setenv ("DDP_LANES", "0", 1);
    ok (ddpi_env_long ("DDP_LANES", &l) == DDP_EINVAL && l == 3,
        "long: DDP_LANES=0 refused, output untouched");
    unsetenv ("DDP_LANES");
    setenv ("DDP_CMA", "0", 1);
    ok (ddpi_env_flag ("DDP_CMA", &f) == 1 && !f, "flag: DDP_CMA=0");
    setenv ("DDP_CMA", "no", 1);
    ok (ddpi_env_flag ("DDP_CMA", &f) == DDP_EINVAL && !f,
        "flag: DDP_CMA=no refused");
    unsetenv ("DDP_CMA");
    setenv ("DDP_INIT_TIMEOUT", "inf", 1);
    ok (ddpi_env_timeout ("DDP_INIT_TIMEOUT", &d) == 1
        && d == DDPI_TIMEOUT_MAX, "timeout: inf");
    unsetenv ("DDP_INIT_TIMEOUT");
    ok (ddpi_env_timeout ("DDP_INIT_TIMEOUT", &d) == 0
        && d == DDPI_TIMEOUT_MAX, "timeout: unset leaves the output");
}

/* A malformed DDP_DEBUG before ddp_init: debugging off, and said once. */
static void debug_checks (void)
{
    char path[] = "/tmp/ddp-util-t.XXXXXX", log[2048] = "";
    int fd, saved;
    bool a, b;
    ssize_t n;

    if ((fd = mkstemp (path)) < 0 || (saved = dup (2)) < 0)
        bail_out ("mkstemp or dup failed");
    unlink (path);
    setenv ("DDP_DEBUG", "yes", 1);
    dup2 (fd, 2);
    a = ddpi_debug_enabled ();
    b = ddpi_debug_enabled ();
    dup2 (saved, 2);
    close (saved);
    n = pread (fd, log, sizeof (log) - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close (fd);
    ok (!a && !b, "debug: DDP_DEBUG=yes is not on");
    ok (strstr (log, "warning: DDP_DEBUG='yes' is not 0 or 1") != NULL,
        "debug: said on stderr: %s", log);
    ok (strstr (log, "warning") && !strstr (strstr (log, "warning") + 1,
                                            "warning"), "debug: said once");
    setenv ("DDP_DEBUG", "1", 1);
    ok (ddpi_debug_enabled (), "debug: DDP_DEBUG=1 is on");
    setenv ("DDP_DEBUG", "0", 1);
    ok (!ddpi_debug_enabled (), "debug: DDP_DEBUG=0 is off");
    unsetenv ("DDP_DEBUG");
}

/* ddpi_grow: room for one more, the elements kept. */
static void grow_checks (void)
{
    size_t cap = 0, n;
    int *v = NULL, *w;
    bool kept = true;

    for (n = 0; n < 100; n++) {
        if (!(w = ddpi_grow (v, n, &cap, sizeof (int))))
            break;
        v = w;
        v[n] = (int)n * 3;
    }
    for (size_t i = 0; i < n; i++)
        kept = kept && v[i] == (int)i * 3;
    ok (n == 100 && cap >= 100 && cap < 256 && kept, "grow: 100 elements "
        "one by one, kept in order, %zu of room", cap);
    w = ddpi_grow (v, 50, &cap, sizeof (int));
    ok (w == v, "grow: the same array while there is room");
    free (v);
    cap = 4;
    ok (ddpi_grow (NULL, 4, &cap, SIZE_MAX / 4) == NULL && cap == 4,
        "grow: a size that overflows is refused, the room unchanged");
}

/* ddpi_wait_pipe_read returns when the reader has read, gives up at its
 * deadline, and does not wait on what is not a pipe. */
static void pipe_read_checks (void)
{
    int p[2], fd;
    pthread_t th;
    double t0, took;
    char name[] = "util-pipe.XXXXXX";

    if (pipe (p) < 0 || fcntl (p[0], F_SETFL, O_NONBLOCK) < 0)
        bail_out ("pipe failed");
    is_int (ddpi_wait_pipe_read (p[1], 0), 0, "pipe: empty, at once");
    ok (write (p[1], "last words\n", 11) == 11, "pipe: a line in it");
    t0 = ddpi_now ();
    is_int (ddpi_wait_pipe_read (p[1], 0.05), DDP_ETIMEDOUT,
            "pipe: nobody reads: DDP_ETIMEDOUT");
    took = ddpi_now () - t0;
    ok (took >= 0.05 && took < 1, "pipe: gave up after its timeout (%.3f s)",
        took);
    pthread_create (&th, NULL, late_reader, &p[0]);
    t0 = ddpi_now ();
    is_int (ddpi_wait_pipe_read (p[1], 5), 0, "pipe: read late: 0");
    took = ddpi_now () - t0;
    ok (took >= 0.09 && took < 4, "pipe: returned after the reader "
        "(%.3f s), not at the deadline", took);
    pthread_join (th, NULL);
    close (p[0]);
    close (p[1]);
    if ((fd = mkstemp (name)) < 0)
        bail_out ("mkstemp failed");
    ok (write (fd, "text", 4) == 4, "pipe: a file with data");
    is_int (ddpi_wait_pipe_read (fd, 0), 0, "pipe: a file: nothing to wait");
    close (fd);
    unlink (name);
    is_int (ddpi_wait_pipe_read (fd, 0), 0, "pipe: a closed fd: nothing");
}

int main (void)
{
    static const int one[] = { 7 };
    static const int mixed[] = { 0, 1, 2, 5, 7, 8, 10 };
    static const int pairs[] = { 3, 4, 9, 10 };
    int many[100];
    int i;

    plan (NO_PLAN);
    debug_checks ();    /* first: the warning is said once a process */
    long_checks ();
    flag_checks ();
    env_checks ();
    env_sweep_checks ();
    grow_checks ();
    pipe_read_checks ();
    ranks_is (one, 0, 64, "", "no ranks: empty");
    ranks_is (one, 1, 64, "7", "one rank");
    ranks_is (mixed, 7, 64, "0-2,5,7-8,10", "runs become ranges");
    ranks_is (pairs, 4, 64, "3-4,9-10", "two-rank runs are ranges too");
    for (i = 0; i < 100; i++)
        many[i] = 2 * i;    /* no runs: 100 separate numbers */
    ranks_is (many, 100, 64, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,"
              "... (100 ranks)", "a long list is cut with a count");
    ranks_is (many, 100, 32, "0,2,4,6,8,10,12,... (100 ranks)",
              "cut shorter in a smaller buffer");
    ranks_is (many, 1, 32, "0", "a short one in a small buffer");
    many[0] = 1000000000;
    many[1] = 1000000001;
    ranks_is (many, 2, 32, "... (2 ranks)", "nothing fits: only the count");
    {
        int r[] = { 5, 1, 4, 1, 0 }, want[] = { 0, 1, 1, 4, 5 };
        ddpi_sort_ranks (r, 5);
        ok (memcmp (r, want, sizeof (r)) == 0, "sort: ascending, repeats kept");
        ddpi_sort_ranks (r, 0);
        ok (r[0] == 0, "sort: an empty list is left alone");
        ok (ddpi_rank_in (r, 5, 4) && !ddpi_rank_in (r, 5, 2)
            && !ddpi_rank_in (r, 4, 5) && !ddpi_rank_in (r, 0, 0),
            "rank_in: found only within the first n");
    }
    ok (ddpi_hash_str ("") == 0x14650fb0739d0383ULL
        && ddpi_hash_str ("a") == 0x44bd8ad473cd9906ULL,
        "hash: the values it always gave");
    ok (ddpi_hash_str ("slurm.pmix.12.0") != ddpi_hash_str ("slurm.pmix.12.1"),
        "hash: two steps' namespaces differ");
    wait_extend_checks ();
    seconds_checks ();
    done_testing ();
    return 0;
}
