/* fuzz-sources: spank/sp_conf.c spank/sp_option.c spank/sp_strint.c spank/sp_err.c spank/sp_ifsel.c */
/* fuzz_conf.c - the plugstack.conf arguments (sp_conf_parse) and the value
 * parsers behind them (sp_parse_bool, sp_parse_port_range,
 * sp_parse_torch_env, sp_parse_socket_ifname).
 *
 * Input: byte 0 picks the message buffer size, the rest is split at blanks
 * and newlines into arguments, as Slurm splits a plugstack.conf line.
 * Checked against an independent reference: every argument KEY=VALUE with a
 * known key at most once and a valid value, else failure with errno EINVAL,
 * a NUL-terminated message and *conf untouched; on success the result is
 * what the reference computed. */
#include "config.h"
#include <errno.h>

#include "fuzz.h"
#include "sp_conf.h"

#define MAXARGS 32

static int ref_uint (const char *s, size_t n, unsigned *v)
{
    unsigned long long x = 0;
    size_t i;

    if (n == 0 || n > 19)
        return 0;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        x = x * 10 + (unsigned) (s[i] - '0');
    }
    if (x < 1 || x > 65535)
        return 0;
    *v = (unsigned) x;
    return 1;
}

static int ref_range (const char *s, unsigned *lo, unsigned *hi)
{
    const char *dash = strchr (s, '-');

    if (!dash || !ref_uint (s, (size_t) (dash - s), lo)
        || !ref_uint (dash + 1, strlen (dash + 1), hi))
        return 0;
    return *lo <= *hi;
}

static int ref_bool (const char *s, bool *b)
{
    if (!strcmp (s, "yes") || !strcmp (s, "true") || !strcmp (s, "1")
        || !strcmp (s, "on"))
        return (*b = true), 1;
    if (!strcmp (s, "no") || !strcmp (s, "false") || !strcmp (s, "0")
        || !strcmp (s, "off"))
        return (*b = false), 1;
    return 0;
}

/* torch_env: a boolean, or distinct names of env, elastic, omp joined
 * by commas. */
static int ref_torch_env (const char *s, unsigned *bits)
{
    static const char *names[] = { "env", "elastic", "omp" };
    char item[300];
    unsigned got = 0;
    bool b;
    int i;

    if (ref_bool (s, &b))
        return (*bits = b ? 7u : 0u), 1;
    for (;;) {
        const char *comma = strchr (s, ',');
        size_t n = comma ? (size_t) (comma - s) : strlen (s);

        if (n >= sizeof (item))
            return 0;
        memcpy (item, s, n);
        item[n] = '\0';
        for (i = 0; i < 3 && strcmp (item, names[i]); i++)
            ;
        if (i == 3 || (got & (1u << i)))
            return 0;
        got |= 1u << i;
        if (!comma)
            break;
        s = comma + 1;
    }
    *bits = got;
    return 1;
}

static int ref_backend (const char *s, enum sp_backend *b)
{
    static const char *names[] = { "off", "auto", "host", "nccl" };
    int i;

    for (i = 0; i < 4; i++)
        if (!strcmp (s, names[i]))
            return (*b = (enum sp_backend) i), 1;
    return 0;
}

/* socket_ifname: '^'?, '='?, then 1 to 16 names of 1 to 15 characters of
 * [A-Za-z0-9_.:@-], each after the first behind one comma. */
static int ref_ifname (const char *s)
{
    const char *p = s;
    int names = 0;
    size_t w;

    if (*p == '^')
        p++;
    if (*p == '=')
        p++;
    for (;;) {
        w = strspn (p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789_.:@-");
        if (w == 0 || w > 15 || ++names > 16)
            return 0;
        p += w;
        if (*p == '\0')
            return 1;
        if (*p++ != ',')
            return 0;
    }
}

static int reference (int ac, char **av, struct sp_conf *c)
{
    int seen[5] = { 0 }, i;

    sp_conf_init (c);
    for (i = 0; i < ac; i++) {
        const char *eq = strchr (av[i], '=');
        const char *v;
        size_t klen;
        int ok;

        if (strlen (av[i]) > 256 || !eq || eq == av[i])
            return 0;
        klen = (size_t) (eq - av[i]);
        v = eq + 1;
        if (klen == 7 && !strncmp (av[i], "default", 7) && !seen[0]++)
            ok = ref_backend (v, &c->default_backend);
        else if (klen == 4 && !strncmp (av[i], "bind", 4) && !seen[1]++)
            ok = !strcmp (v, "gpu") ? (c->bind = true, 1)
               : !strcmp (v, "none") ? (c->bind = false, 1) : 0;
        else if (klen == 10 && !strncmp (av[i], "port_range", 10) && !seen[2]++)
            ok = ref_range (v, &c->port_lo, &c->port_hi);
        else if (klen == 9 && !strncmp (av[i], "torch_env", 9) && !seen[3]++)
            ok = ref_torch_env (v, &c->torch_env);
        else if (klen == 13 && !strncmp (av[i], "socket_ifname", 13)
                 && !seen[4]++)
            ok = ref_ifname (v)
                 && snprintf (c->socket_ifname, sizeof (c->socket_ifname),
                              "%s", v) > 0;
        else
            ok = 0;
        if (!ok)
            return 0;
    }
    return 1;
}

static int conf_equal (const struct sp_conf *a, const struct sp_conf *b)
{
    return a->default_backend == b->default_backend && a->bind == b->bind
        && a->port_lo == b->port_lo && a->port_hi == b->port_hi
        && a->torch_env == b->torch_env
        && strcmp (a->socket_ifname, b->socket_ifname) == 0;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    struct sp_conf conf, ref, poison;
    char *av[MAXARGS];
    char *s, *p, *save = NULL, *err;
    size_t errlen;
    unsigned lo = 7, hi = 7, rlo, rhi, tbits, rbits;
    bool b = false;
    int ac = 0, rc, ok;

    if (size < 1)
        return 0;
    errlen = data[0];
    s = fuzz_cstr (data + 1, size - 1);

    /* The whole input as one value of each value parser. */
    rc = sp_parse_port_range (s, &lo, &hi);
    ok = ref_range (s, &rlo, &rhi);
    fuzz_assert (ok ? rc == 0 && lo == rlo && hi == rhi
                    : rc == -1 && lo == 7 && hi == 7);
    rc = sp_parse_bool (s, &b);
    fuzz_assert (ref_bool (s, &b) ? rc == 0 : rc == -1 && !b);
    tbits = 99;
    rc = sp_parse_torch_env (s, &tbits);
    fuzz_assert (ref_torch_env (s, &rbits) ? rc == 0 && tbits == rbits
                                            : rc == -1 && tbits == 99);
    rc = sp_parse_socket_ifname (s, NULL, 0);
    fuzz_assert (ref_ifname (s) ? rc == 0 : rc == -1 && errno == EINVAL);

    /* Split into arguments. */
    for (p = strtok_r (s, " \t\n", &save); p && ac < MAXARGS;
         p = strtok_r (NULL, " \t\n", &save))
        av[ac++] = p;
    memset (&poison, 0x5a, sizeof (poison));
    conf = poison;
    err = malloc (errlen ? errlen : 1);
    if (!err)
        abort ();
    memset (err, 'X', errlen ? errlen : 1);
    rc = sp_conf_parse (ac, av, &conf, errlen ? err : NULL, errlen);
    ok = reference (ac, av, &ref);
    if (ok) {
        fuzz_assert (rc == 0);
        fuzz_assert (conf_equal (&conf, &ref));
        fuzz_assert (conf.port_lo >= 1 && conf.port_lo <= conf.port_hi
                     && conf.port_hi <= 65535);
    }
    else {
        fuzz_assert (rc == -1 && errno == EINVAL);
        fuzz_assert (memcmp (&conf, &poison, sizeof (conf)) == 0);
        if (errlen > 0) {
            fuzz_assert (fuzz_terminated (err, errlen));
            fuzz_assert (errlen < 5 || strncmp (err, "ddp: ", 4) == 0);
        }
    }
    free (err);
    free (s);
    return 0;
}
