/* sp_addr.c - the address MASTER_ADDR advertises for a host name: for a
 * multi-node step never a loopback one (sp_addr.h). */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "sp_addr.h"

/* Room for a message of ddpi_ifsel_parse. */
#define SP_ADDR_ERRLEN 512

int sp_resolve (const char *host, char *addr, size_t len)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL, *ai, *pick = NULL;
    int numeric = 0;

    if (!host || !addr || len == 0 || strlen (host) >= len) {
        errno = EINVAL;
        return -1;
    }
    if (getaddrinfo (host, NULL, &hints, &res) == 0) {
        for (ai = res; ai; ai = ai->ai_next) {
            if (!pick
                || (ai->ai_family == AF_INET && pick->ai_family != AF_INET))
                pick = ai;
        }
        if (pick && getnameinfo (pick->ai_addr, pick->ai_addrlen, addr,
                                 (socklen_t) len, NULL, 0,
                                 NI_NUMERICHOST) == 0)
            numeric = 1;
        freeaddrinfo (res);
    }
    if (!numeric)
        snprintf (addr, len, "%s", host);
    return numeric;
}

/* Is ai's address a loopback one (127.0.0.0/8, ::1, ::ffff:127.x)? */
static bool ai_loopback (const struct addrinfo *ai)
{
    if (ai->ai_family == AF_INET) {
        const struct sockaddr_in *s = (const void *)ai->ai_addr;
        return (ntohl (s->sin_addr.s_addr) >> 24) == 127;
    }
    if (ai->ai_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const void *)ai->ai_addr;
        const unsigned char *b = s->sin6_addr.s6_addr;
        return IN6_IS_ADDR_LOOPBACK (&s->sin6_addr)
               || (IN6_IS_ADDR_V4MAPPED (&s->sin6_addr) && b[12] == 127);
    }
    return false;
}

/* HOST's first address that is not loopback, IPv4 first, into ADDR.
 * Returns 1, 0 when it has none (*resolved: it resolves at all). */
static int resolve_routable (const char *host, char *addr, size_t len,
                             bool *resolved)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL, *ai, *pick = NULL;
    int rc = 0;

    *resolved = false;
    if (getaddrinfo (host, NULL, &hints, &res) != 0)
        return 0;
    *resolved = true;
    for (ai = res; ai; ai = ai->ai_next)
        if (!ai_loopback (ai)
            && (!pick
                || (ai->ai_family == AF_INET && pick->ai_family != AF_INET)))
            pick = ai;
    if (pick && getnameinfo (pick->ai_addr, pick->ai_addrlen, addr,
                             (socklen_t)len, NULL, 0, NI_NUMERICHOST) == 0)
        rc = 1;
    freeaddrinfo (res);
    return rc;
}

int sp_addr_own (const struct ddpi_iface *ifs, int n, const char *ifsel,
                 char *addr, size_t len, char *err, size_t errlen)
{
    struct ddpi_ifsel sel;
    uint32_t ip[16];
    int k;

    if (ddpi_ifsel_parse ("DDP_SOCKET_IFNAME", ifsel, &sel, err, errlen) < 0)
        return -1;
    k = ddpi_ifsel_order (&sel, ifs, n, ip, 16);
    for (int i = 0; i < k; i++) {
        struct in_addr in = { ip[i] };
        if ((ntohl (ip[i]) >> 24) != 127)
            return inet_ntop (AF_INET, &in, addr, (socklen_t)len) ? 1 : 0;
    }
    return 0;
}

/* Is ip (network byte order) in 127.0.0.0/8? */
static bool ip_loopback (uint32_t ip)
{
    return (ntohl (ip) >> 24) == 127;
}

int sp_addr_near (const struct ddpi_ifsel *sel, const struct ddpi_iface *ifs,
                  const uint32_t *mask, int nifs, const uint32_t *peer, int n)
{
    uint32_t ip[16];
    int k = ddpi_ifsel_order (sel, ifs, nifs, ip, 16);

    for (int j = 0; j < k; j++) {
        uint32_t m = 0;
        if (ip_loopback (ip[j]))
            continue;
        for (int f = 0; f < nifs; f++)
            if (ifs[f].ip == ip[j])
                m = mask[f];
        for (int i = 0; i < n && m; i++)
            if (!ip_loopback (peer[i]) && peer[i] != ip[j]
                && (peer[i] & m) == (ip[j] & m))
                return i;
    }
    return -1;
}

/* This node's interfaces' IPv4 addresses: at most MAX into F and their
 * netmasks into MASK (names point into *IFS, to freeifaddrs after).
 * Returns how many, or -1 when getifaddrs fails. */
static int list_ifs (struct ifaddrs **ifs, struct ddpi_iface *f,
                     uint32_t *mask, int max)
{
    struct ifaddrs *i;
    int n = 0;

    if (getifaddrs (ifs) < 0)
        return -1;
    for (i = *ifs; i && n < max; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_name)
            continue;
        mask[n] = i->ifa_netmask && i->ifa_netmask->sa_family == AF_INET
                  ? ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr
                  : 0xffffffffu;
        f[n++] = (struct ddpi_iface){
            .name = i->ifa_name,
            .ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr,
            .up = (i->ifa_flags & IFF_UP) != 0,
            .running = (i->ifa_flags & IFF_RUNNING) != 0,
            .loopback = (i->ifa_flags & IFF_LOOPBACK) != 0 };
    }
    return n;
}

/* sp_addr_own on this node's interfaces.  Returns as it does, or 0 when
 * getifaddrs fails. */
static int own_addr (const char *ifsel, char *addr, size_t len, char *err,
                     size_t errlen)
{
    struct ddpi_iface f[64];
    uint32_t mask[64];
    struct ifaddrs *ifs;
    int n, rc;

    if ((n = list_ifs (&ifs, f, mask, 64)) < 0)
        return 0;
    rc = sp_addr_own (f, n, ifsel, addr, len, err, errlen);
    freeifaddrs (ifs);
    return rc;
}

/* HOST's IPv4 addresses, at most MAX, into IP.  Returns how many. */
static int resolve_v4 (const char *host, uint32_t *ip, int max)
{
    struct addrinfo hints = { .ai_family = AF_INET,
                              .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL, *ai;
    int n = 0;

    if (getaddrinfo (host, NULL, &hints, &res) != 0)
        return 0;
    for (ai = res; ai && n < max; ai = ai->ai_next)
        ip[n++] = ((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr;
    freeaddrinfo (res);
    return n;
}

/* HOST's address on a subnet of an interface SEL lets in here
 * (sp_addr_near), into ADDR.  Returns 1, or 0 when it has none. */
static int near_addr (const char *host, const struct ddpi_ifsel *sel,
                      char *addr, size_t len)
{
    struct ddpi_iface f[64];
    uint32_t mask[64], peer[16];
    struct ifaddrs *ifs;
    int n, np, i = -1;

    if ((np = resolve_v4 (host, peer, 16)) == 0
        || (n = list_ifs (&ifs, f, mask, 64)) < 0)
        return 0;
    i = sp_addr_near (sel, f, mask, n, peer, np);
    freeifaddrs (ifs);
    if (i < 0)
        return 0;
    return inet_ntop (AF_INET, &(struct in_addr){ peer[i] }, addr,
                      (socklen_t)len) ? 1 : 0;
}

/* MASTER_ADDR by the selector IFSEL (sp_master_addr): on the first node
 * its own address, on the others HOST's near one.  Returns 1, or 0 when
 * IFSEL is none or malformed (libddp refuses that one itself) or gives
 * no address. */
static int by_selector (const char *host, bool first, const char *ifsel,
                        char *addr, size_t len)
{
    struct ddpi_ifsel sel;
    char err[SP_ADDR_ERRLEN];

    if (!ifsel || !*ifsel
        || ddpi_ifsel_parse ("DDP_SOCKET_IFNAME", ifsel, &sel, NULL, 0) < 0)
        return 0;
    if (first)
        return own_addr (ifsel, addr, len, err, sizeof (err)) == 1;
    return near_addr (host, &sel, addr, len);
}

/* Is text a numeric loopback address (127.0.0.0/8, ::1)? */
static bool text_loopback (const char *text)
{
    struct in_addr in;
    struct in6_addr in6;

    if (!text)
        return false;
    if (inet_pton (AF_INET, text, &in) == 1)
        return (ntohl (in.s_addr) >> 24) == 127;
    return inet_pton (AF_INET6, text, &in6) == 1
           && IN6_IS_ADDR_LOOPBACK (&in6);
}

int sp_master_addr (const char *host, unsigned nnodes, bool first,
                    const char *launch, const char *ifsel, char *addr,
                    size_t len, char *err, size_t errlen)
{
    bool resolved;
    int rc;

    if (!host || !addr || len == 0 || strlen (host) >= len || !err) {
        errno = EINVAL;
        if (err && errlen)
            snprintf (err, errlen, "ddp: MASTER_ADDR: no room for the "
                      "first node's address");
        return -1;
    }
    if (nnodes <= 1)
        return sp_resolve (host, addr, len);
    if (!text_loopback (launch)
        && by_selector (host, first, ifsel, addr, len) == 1)
        return 1;
    if (resolve_routable (host, addr, len, &resolved) == 1)
        return 1;
    if (!resolved) {
        snprintf (addr, len, "%s", host);
        return 0;
    }
    if (text_loopback (launch))
        return sp_resolve (host, addr, len);    /* nodes on this machine */
    if (!first) {
        snprintf (err, errlen, "ddp: the step's first node %s resolves only "
                  "to a loopback address on this node, where it would not "
                  "reach %s: map %s to an address the nodes reach (DNS or "
                  "/etc/hosts) for MASTER_ADDR", host, host, host);
        return -1;
    }
    if ((rc = own_addr (ifsel, addr, len, err, errlen)) != 0)
        return rc;
    snprintf (err, errlen, "ddp: this node's name %s resolves only to a "
              "loopback address here, and no interface of it offers "
              "another%s: a multi-node step needs a MASTER_ADDR the nodes "
              "reach", host, ifsel && *ifsel ? " that DDP_SOCKET_IFNAME "
              "lets in" : "");
    return -1;
}
