/* conf.c - plugstack.conf arguments (spank/sp_conf.c). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "sp_conf.h"
#include "tap.h"
#include "words.h"

/* Parse the arguments AV; returns the rc, fills *C and ERR. */
static int parse (struct sp_conf *c, char *err, size_t len, char **av)
{
    return sp_conf_parse (nwords (av), av, c, err, len);
}

static bool untouched (const struct sp_conf *c)
{
    return c->default_backend == SP_BACKEND_NCCL && !c->bind
        && c->port_lo == 1 && c->port_hi == 2 && !c->torch_env
        && !strcmp (c->socket_ifname, "poison");
}

/* A config value that no parse produces, to see failures change nothing. */
static void poison (struct sp_conf *c)
{
    c->default_backend = SP_BACKEND_NCCL;
    c->bind = false;
    c->port_lo = 1;
    c->port_hi = 2;
    c->torch_env = 0;
    snprintf (c->socket_ifname, sizeof (c->socket_ifname), "poison");
}

static void bad (char *arg, const char *want_in_msg)
{
    struct sp_conf c;
    char err[256] = "";
    int rc;
    poison (&c);
    errno = 0;
    rc = parse (&c, err, sizeof (err), WORDS (arg));
    ok (rc == -1 && errno == EINVAL && untouched (&c)
        && strncmp (err, "ddp: ", 5) == 0 && strstr (err, want_in_msg),
        "'%s' is refused, message names '%s'", arg, want_in_msg);
    if (rc == 0 || !strstr (err, want_in_msg))
        diag ("  message: %s", err);
}

int main (void)
{
    struct sp_conf c;
    char err[256];
    unsigned lo = 7, hi = 7;
    bool b = false;

    poison (&c);
    ok (parse (&c, err, sizeof (err), NO_WORDS) == 0
        && c.default_backend == SP_BACKEND_OFF && c.bind
        && c.torch_env == SP_TORCH_ALL
        && c.port_lo == 29500 && c.port_hi == 29999,
        "no arguments: default=off bind=gpu port_range=29500-29999 "
        "torch_env=yes");
    ok (parse (&c, err, sizeof (err), WORDS ("default=nccl", "bind=none",
               "port_range=40000-40010", "torch_env=no")) == 0
        && c.default_backend == SP_BACKEND_NCCL && !c.bind && !c.torch_env
        && c.port_lo == 40000 && c.port_hi == 40010, "every key is applied");
    ok (parse (&c, err, sizeof (err), WORDS ("default=auto", "bind=gpu",
               "torch_env=true")) == 0
        && c.default_backend == SP_BACKEND_AUTO && c.bind && c.torch_env,
        "default=auto bind=gpu torch_env=true");
    ok (parse (&c, err, sizeof (err), WORDS ("default=host")) == 0
        && c.default_backend == SP_BACKEND_HOST && c.port_lo == 29500,
        "unset keys keep their defaults");

    bad ("bogus=1", "unknown key 'bogus'");
    bad ("ifname=ib0", "keys: default, bind, port_range, torch_env, "
         "socket_ifname");
    bad ("defaults=auto", "unknown key 'defaults'");
    bad ("Default=auto", "unknown key 'Default'");
    bad ("default", "'default' is not KEY=VALUE");
    bad ("=auto", "is not KEY=VALUE");
    bad ("default=bogus", "bad value 'bogus' for key 'default'");
    bad ("default=", "bad value '' for key 'default'");
    bad ("bind=all", "bad value 'all' for key 'bind'");
    bad ("port_range=5-2", "key 'port_range'");
    bad ("port_range=0-10", "key 'port_range'");
    bad ("port_range=100-70000", "key 'port_range'");
    bad ("port_range=100", "key 'port_range'");
    bad ("port_range=-100", "key 'port_range'");
    bad ("port_range=a-b", "key 'port_range'");
    bad ("port_range=1-2-3", "key 'port_range'");
    bad ("torch_env=maybe", "key 'torch_env'");
    bad ("torch_env=env,env", "key 'torch_env'");
    bad ("torch_env=env,", "key 'torch_env'");
    bad ("torch_env=,omp", "key 'torch_env'");
    bad ("torch_env=env,yes", "key 'torch_env'");
    bad ("torch_env=Env", "key 'torch_env'");
    bad ("socket_ifname=", "bad value '' for key 'socket_ifname'");
    bad ("socket_ifname=eth,,ib", "key 'socket_ifname': "
         "socket_ifname='eth,,ib' has an empty name: give interface names");
    bad ("socket_ifname=eth0;reboot", "socket_ifname='eth0;reboot' has a "
         "character an interface name does not have");
    bad ("socket_ifname==^ib", "socket_ifname='=^ib' has ^ or = after");
    bad ("socket_ifname=averyveryverylongname", "longer than 15");
    bad ("socket_ifname=^", "socket_ifname='^' names no interface");
    ok (parse (&c, err, sizeof (err), WORDS ("socket_ifname=^=eth1,docker"))
        == 0 && !strcmp (c.socket_ifname, "^=eth1,docker"),
        "socket_ifname=^=eth1,docker is kept as given");
    ok (parse (&c, err, sizeof (err), WORDS ("socket_ifname=ib,hsn")) == 0
        && !strcmp (c.socket_ifname, "ib,hsn"), "socket_ifname=ib,hsn");
    ok (parse (&c, err, sizeof (err), WORDS ("default=host")) == 0
        && c.socket_ifname[0] == '\0', "no socket_ifname by default");
    poison (&c);
    ok (parse (&c, err, sizeof (err), WORDS ("socket_ifname=ib0",
               "socket_ifname=ib1")) == -1 && untouched (&c)
        && strstr (err, "'socket_ifname' given twice"),
        "socket_ifname twice is refused");
    ok (sp_parse_socket_ifname ("ib0", NULL, 0) == 0,
        "sp_parse_socket_ifname: ib0, no message buffer");
    errno = 0;
    ok (sp_parse_socket_ifname (NULL, err, sizeof (err)) == -1
        && errno == EINVAL, "sp_parse_socket_ifname: NULL is EINVAL");
    ok (parse (&c, err, sizeof (err), WORDS ("torch_env=omp,env")) == 0
        && c.torch_env == (SP_TORCH_OMP | SP_TORCH_ENV),
        "torch_env=omp,env: those two groups");
    ok (parse (&c, err, sizeof (err), WORDS ("torch_env=elastic")) == 0
        && c.torch_env == SP_TORCH_ELASTIC, "torch_env=elastic: that one");
    ok (parse (&c, err, sizeof (err), WORDS ("torch_env=env,elastic,omp")) == 0
        && c.torch_env == SP_TORCH_ALL, "every group named: as yes");
    poison (&c);
    ok (parse (&c, err, sizeof (err), WORDS ("bind=gpu", "bind=none")) == -1
        && untouched (&c) && strstr (err, "'bind' given twice"),
        "a key given twice is refused");
    poison (&c);
    ok (parse (&c, err, sizeof (err), WORDS ("default=host", "oops=1")) == -1
        && untouched (&c), "a bad key after good ones changes nothing");
    {
        char longarg[300];
        memset (longarg, 'x', sizeof (longarg) - 1);
        longarg[sizeof (longarg) - 1] = '\0';
        bad (longarg, "longer than");
    }
    errno = 0;
    ok (sp_conf_parse (0, NULL, NULL, err, sizeof (err)) == -1
        && errno == EINVAL, "a NULL config is EINVAL");
    ok (sp_conf_parse (1, NULL, &c, err, sizeof (err)) == -1,
        "ac 1 with NULL av is refused");
    {
        char *holes[] = { "bind=gpu", NULL };
        poison (&c);
        ok (sp_conf_parse (2, holes, &c, err, sizeof (err)) == -1
            && untouched (&c) && strstr (err, "missing argument"),
            "a NULL argument inside av is refused");
    }

    ok (sp_parse_port_range ("1-65535", &lo, &hi) == 0 && lo == 1
        && hi == 65535, "port range 1-65535");
    ok (sp_parse_port_range ("80-80", &lo, &hi) == 0 && lo == 80 && hi == 80,
        "a one-port range");
    errno = 0;
    ok (sp_parse_port_range ("90-80", &lo, &hi) == -1 && errno == ERANGE
        && lo == 80, "LO > HI is ERANGE, outputs untouched");
    errno = 0;
    ok (sp_parse_port_range (NULL, &lo, &hi) == -1 && errno == EINVAL,
        "a NULL range is EINVAL");

    ok (sp_parse_bool ("yes", &b) == 0 && b, "yes is true");
    ok (sp_parse_bool ("1", &b) == 0 && b, "1 is true");
    ok (sp_parse_bool ("on", &b) == 0 && b, "on is true");
    ok (sp_parse_bool ("false", &b) == 0 && !b, "false is false");
    ok (sp_parse_bool ("0", &b) == 0 && !b, "0 is false");
    errno = 0;
    ok (sp_parse_bool ("YES", &b) == -1 && errno == EINVAL && !b,
        "YES (upper case) is EINVAL");
    ok (sp_parse_bool (NULL, &b) == -1, "NULL is EINVAL");

    sp_conf_init (&c);
    ok (c.default_backend == SP_BACKEND_OFF && c.bind,
        "sp_conf_init gives the defaults");
    sp_conf_init (NULL);
    ok (1, "sp_conf_init (NULL) does nothing");
    return done_testing ();
}
