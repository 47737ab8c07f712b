/* ifsel.c - which addresses a node offers its peers, and which of a
 * peer's it tries (ifsel.h): pure functions, libc only. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ifsel.h"

/* What every refusal ends with: the grammar, by example. */
#define IFSEL_HOW "give interface names or name prefixes separated by " \
    "commas (eth,ib), ^ first to leave them out (^docker,lo), = first " \
    "for exact names (=eth0, ^=eth1)"

/* The value as a message shows it: printable ASCII but quotes and
 * backslashes, at most 40 characters (then "..."). */
static void quote (const char *s, char *buf, size_t len)
{
    size_t off = 0, i;

    buf[0] = '\0';
    for (i = 0; i < 40 && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        int w = c >= 0x20 && c < 0x7f && c != '\'' && c != '\\'
                ? snprintf (buf + off, len - off, "%c", c)
                : snprintf (buf + off, len - off, "\\x%02x", c);
        if (w < 0 || (size_t)w >= len - off)
            return;
        off += (size_t)w;
    }
    if (s[i] && off + 4 <= len)
        memcpy (buf + off, "...", 4);
}

static bool name_char (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || (c && strchr ("_.:@-", c) != NULL);
}

/* Refuse spec with why, into msg; returns -1. */
static int refuse (const char *var, const char *spec, const char *why,
                   struct ddpi_ifsel *s, char *msg, size_t len)
{
    char q[176];

    memset (s, 0, sizeof (*s));
    quote (spec, q, sizeof (q));
    if (msg && len)
        snprintf (msg, len, "%s='%s' %s: %s", var, q, why, IFSEL_HOW);
    return -1;
}

int ddpi_ifsel_parse (const char *var, const char *spec, struct ddpi_ifsel *s,
                      char *msg, size_t len)
{
    const char *p = spec;

    memset (s, 0, sizeof (*s));
    if (!spec || !*spec)
        return 0;
    s->given = true;
    if (*p == '^') {
        s->exclude = true;
        p++;
    }
    if (*p == '=') {
        s->exact = true;
        p++;
    }
    if (!*p)
        return refuse (var, spec, "names no interface", s, msg, len);
    for (;;) {
        size_t w = 0;

        while (name_char (p[w]))
            w++;
        if (w == 0)
            return refuse (var, spec, *p == '^' || *p == '='
                           ? "has ^ or = after the start (^ comes first, "
                             "then =, once for the whole list)"
                           : *p == ',' || !*p ? "has an empty name"
                           : "has a character an interface name does not "
                             "have (letters, digits and _.:@- only)",
                           s, msg, len);
        if (w > DDPI_IFNAME_MAX)
            return refuse (var, spec, "has a name longer than 15 "
                           "characters (the longest Linux takes)", s, msg,
                           len);
        if (s->n == DDPI_IFSEL_MAX)
            return refuse (var, spec, "has more than 16 names", s, msg, len);
        memcpy (s->name[s->n], p, w);
        s->name[s->n++][w] = '\0';
        p += w;
        if (!*p)
            return 0;
        if (*p != ',')
            return refuse (var, spec, *p == '^' || *p == '='
                           ? "has ^ or = after the start (^ comes first, "
                             "then =, once for the whole list)"
                           : "has a character an interface name does not "
                             "have (letters, digits and _.:@- only)",
                           s, msg, len);
        p++;
    }
}

int ddpi_ifsel_match (const struct ddpi_ifsel *s, const char *name)
{
    int first = -1;

    if (!s || !s->given)
        return 0;
    for (int i = 0; i < s->n && first < 0; i++)
        if (s->exact ? strcmp (name, s->name[i]) == 0
                     : strncmp (name, s->name[i], strlen (s->name[i])) == 0)
            first = i;
    if (s->exclude)
        return first < 0 ? 0 : -1;
    return first;
}

/* Docker names its own networks' bridges br- and 12 hex digits. */
static bool docker_net (const char *name)
{
    if (strncmp (name, "br-", 3) != 0 || strlen (name) != 15)
        return false;
    for (int i = 3; i < 15; i++)
        if (!strchr ("0123456789abcdef", name[i]))
            return false;
    return true;
}

bool ddpi_if_container (const char *name)
{
    static const char *const prefix[] = { "docker", "veth", "virbr",
                                          "lxcbr", "lxdbr", "cni", "podman" };

    for (size_t i = 0; i < sizeof (prefix) / sizeof (prefix[0]); i++)
        if (strncmp (name, prefix[i], strlen (prefix[i])) == 0)
            return true;
    return docker_net (name);
}

/* Where interface f goes under s: its rank (lower first; loopback after
 * every other), or -1 when it is not offered. */
static int if_rank (const struct ddpi_ifsel *s, const struct ddpi_iface *f)
{
    bool given = s && s->given;
    int m;

    if (!f->up || !f->running || (m = ddpi_ifsel_match (s, f->name)) < 0)
        return -1;
    if (f->loopback)
        return 2 * DDPI_IFSEL_MAX + 1;
    if (!given || s->exclude) {
        /* Container bridges carry a node's own containers (NAT'd private
         * networks): their addresses are the same on every node (docker0's
         * 172.17.0.1, virbr0's 192.168.122.1) or reach only this node's
         * guests, so a peer that tries one reaches itself or nothing.
         * NCCL leaves docker* and lo out by default for the same reason.
         * The default drops them; an exclusion list that leaves them in
         * offers them after the others. */
        if (ddpi_if_container (f->name))
            return given ? DDPI_IFSEL_MAX : -1;
        return 0;
    }
    return m;
}

int ddpi_ifsel_order (const struct ddpi_ifsel *s, const struct ddpi_iface *ifs,
                      int n, uint32_t *ip, int max)
{
    int out = 0;

    for (int want = 0; want <= 2 * DDPI_IFSEL_MAX + 1; want++)
        for (int i = 0; i < n && out < max; i++) {
            bool seen = false;
            if (if_rank (s, &ifs[i]) != want)
                continue;
            for (int k = 0; k < out && !seen; k++)
                seen = ip[k] == ifs[i].ip;
            if (!seen)
                ip[out++] = ifs[i].ip;
        }
    return out;
}

/* Is ip (network byte order) in 127.0.0.0/8? */
static bool is_loopback (uint32_t ip)
{
    const unsigned char *b = (const unsigned char *)&ip;
    return b[0] == 127;
}

int ddpi_peer_addr_rank (uint32_t ip, bool same_net,
                         const struct ddpi_ifnet *mine, int n)
{
    bool near = false;

    if (is_loopback (ip))
        return same_net ? 0 : -1;
    for (int i = 0; i < n; i++) {
        if (is_loopback (mine[i].ip))
            continue;
        if (mine[i].ip == ip && !same_net)
            return -1;
        if ((mine[i].ip & mine[i].mask) == (ip & mine[i].mask))
            near = true;
    }
    return near ? 1 : 2;
}
