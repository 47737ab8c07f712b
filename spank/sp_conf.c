/* sp_conf.c - parse the plugin's plugstack.conf arguments. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sp_conf.h"
#include "sp_err.h"
#include "sp_strint.h"
#include "../libjob/common/ifsel.h"

#define SP_CONF_KEYS "default, bind, port_range, torch_env, socket_ifname"

void sp_conf_init (struct sp_conf *conf)
{
    if (!conf)
        return;
    conf->default_backend = SP_BACKEND_OFF;
    conf->bind = true;
    conf->port_lo = SP_CONF_DEFAULT_PORT_LO;
    conf->port_hi = SP_CONF_DEFAULT_PORT_HI;
    conf->torch_env = SP_TORCH_ALL;
    conf->socket_ifname[0] = '\0';
}

int sp_parse_bool (const char *s, bool *out)
{
    static const char *yes[] = { "yes", "true", "1", "on", NULL };
    static const char *no[] = { "no", "false", "0", "off", NULL };
    int i;

    if (s && out) {
        for (i = 0; yes[i]; i++) {
            if (strcmp (s, yes[i]) == 0) {
                *out = true;
                return 0;
            }
            if (strcmp (s, no[i]) == 0) {
                *out = false;
                return 0;
            }
        }
    }
    errno = EINVAL;
    return -1;
}

/* The bit of torch_env group NAME (LEN bytes), or 0 for none. */
static unsigned torch_group (const char *name, size_t len)
{
    static const struct {
        const char *name;
        unsigned bit;
    } groups[] = { { "env", SP_TORCH_ENV }, { "elastic", SP_TORCH_ELASTIC },
                   { "omp", SP_TORCH_OMP } };
    size_t i;

    for (i = 0; i < sizeof (groups) / sizeof (groups[0]); i++)
        if (strlen (groups[i].name) == len
            && strncmp (groups[i].name, name, len) == 0)
            return groups[i].bit;
    return 0;
}

int sp_parse_torch_env (const char *s, unsigned *out)
{
    unsigned bits = 0, bit;
    bool b;
    size_t len;

    if (!s || !out)
        goto bad;
    if (sp_parse_bool (s, &b) == 0) {
        *out = b ? SP_TORCH_ALL : 0;
        return 0;
    }
    for (;;) {
        len = strcspn (s, ",");
        if (!(bit = torch_group (s, len)) || (bits & bit))
            goto bad;
        bits |= bit;
        if (s[len] == '\0')
            break;
        s += len + 1;
    }
    *out = bits;
    return 0;
bad:
    errno = EINVAL;
    return -1;
}

int sp_parse_port_range (const char *s, unsigned *lo, unsigned *hi)
{
    unsigned long long a, b;
    const char *dash;

    if (!s || !lo || !hi || !(dash = strchr (s, '-'))) {
        errno = EINVAL;
        return -1;
    }
    if (sp_parse_uint_n (s, (size_t) (dash - s), 1, 65535, &a) < 0
        || sp_parse_uint (dash + 1, 1, 65535, &b) < 0)
        return -1;
    if (a > b) {
        errno = ERANGE;
        return -1;
    }
    *lo = (unsigned) a;
    *hi = (unsigned) b;
    return 0;
}

int sp_parse_socket_ifname (const char *s, char *err, size_t errlen)
{
    struct ddpi_ifsel sel;
    char why[SP_ERRLEN];

    if (!s)
        return sp_fail (err, errlen, "ddp: internal error: no value");
    if (!*s)
        return sp_fail (err, errlen, "ddp: plugstack.conf: bad value '' for "
                        "key 'socket_ifname' (expected interface names or "
                        "prefixes as for DDP_SOCKET_IFNAME; leave the key "
                        "out for libddp's default)");
    if (ddpi_ifsel_parse ("socket_ifname", s, &sel, why, sizeof (why)) < 0)
        return sp_fail (err, errlen, "ddp: plugstack.conf: bad value for key "
                        "'socket_ifname': %s (the grammar of "
                        "DDP_SOCKET_IFNAME)", why);
    return 0;
}

enum { K_DEFAULT, K_BIND, K_PORT_RANGE, K_TORCH_ENV, K_SOCKET_IFNAME,
       K_COUNT };
static const char *keys[K_COUNT] = {
    [K_DEFAULT] = "default",
    [K_BIND] = "bind",
    [K_PORT_RANGE] = "port_range",
    [K_TORCH_ENV] = "torch_env",
    [K_SOCKET_IFNAME] = "socket_ifname",
};
static const char *expected[K_COUNT] = {
    [K_DEFAULT] = "off, auto, host or nccl",
    [K_BIND] = "gpu or none",
    [K_PORT_RANGE] = "LO-HI with 1 <= LO <= HI <= 65535",
    [K_TORCH_ENV] = "yes, no, or a list of env, elastic, omp",
    [K_SOCKET_IFNAME] = "a DDP_SOCKET_IFNAME selector",
};

static int find_key (const char *arg, size_t len)
{
    int k;

    for (k = 0; k < K_COUNT; k++) {
        if (strlen (keys[k]) == len && strncmp (keys[k], arg, len) == 0)
            return k;
    }
    return -1;
}

/* Apply VAL to key K of C.  Returns 0 or -1. */
static int apply (int k, const char *val, struct sp_conf *c)
{
    switch (k) {
    case K_DEFAULT:
        return sp_backend_parse (val, &c->default_backend);
    case K_BIND:
        if (strcmp (val, "gpu") == 0)
            c->bind = true;
        else if (strcmp (val, "none") == 0)
            c->bind = false;
        else
            return -1;
        return 0;
    case K_PORT_RANGE:
        return sp_parse_port_range (val, &c->port_lo, &c->port_hi);
    case K_TORCH_ENV:
        return sp_parse_torch_env (val, &c->torch_env);
    case K_SOCKET_IFNAME:
        if (sp_parse_socket_ifname (val, NULL, 0) < 0)
            return -1;
        snprintf (c->socket_ifname, sizeof (c->socket_ifname), "%s", val);
        return 0;
    }
    return -1;
}

int sp_conf_parse (int ac, char *const av[], struct sp_conf *conf, char *err,
                   size_t errlen)
{
    struct sp_conf c;
    bool seen[K_COUNT] = { false };
    const char *arg, *eq;
    int i, k;

    if (!conf || ac < 0 || (ac > 0 && !av))
        return sp_fail (err, errlen, "ddp: internal error: bad arguments");
    sp_conf_init (&c);
    for (i = 0; i < ac; i++) {
        if (!(arg = av[i]))
            return sp_fail (err, errlen, "ddp: plugstack.conf: missing argument");
        if (strnlen (arg, SP_CONF_ARGMAX + 1) > SP_CONF_ARGMAX)
            return sp_fail (err, errlen, "ddp: plugstack.conf: argument %d is "
                         "longer than %d characters", i + 1, SP_CONF_ARGMAX);
        if (!(eq = strchr (arg, '=')) || eq == arg)
            return sp_fail (err, errlen, "ddp: plugstack.conf: argument '%s' is "
                         "not KEY=VALUE (keys: %s)", arg, SP_CONF_KEYS);
        if ((k = find_key (arg, (size_t) (eq - arg))) < 0)
            return sp_fail (err, errlen, "ddp: plugstack.conf: unknown key "
                         "'%.*s' (keys: %s)", (int) (eq - arg), arg,
                         SP_CONF_KEYS);
        if (seen[k])
            return sp_fail (err, errlen, "ddp: plugstack.conf: key '%s' given "
                         "twice", keys[k]);
        seen[k] = true;
        if (k == K_SOCKET_IFNAME
            && sp_parse_socket_ifname (eq + 1, err, errlen) < 0)
            return -1;
        if (apply (k, eq + 1, &c) < 0)
            return sp_fail (err, errlen, "ddp: plugstack.conf: bad value '%s' "
                         "for key '%s' (expected %s)", eq + 1, keys[k],
                         expected[k]);
    }
    *conf = c;
    return 0;
}
