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

/* sp_addr_own on this node's interfaces.  Returns as it does, or 0 when
 * getifaddrs fails. */
static int own_addr (const char *ifsel, char *addr, size_t len, char *err,
                     size_t errlen)
{
    struct ddpi_iface f[64];
    struct ifaddrs *ifs, *i;
    int n = 0, rc;

    if (getifaddrs (&ifs) < 0)
        return 0;
    for (i = ifs; i && n < 64; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_name)
            continue;
        f[n++] = (struct ddpi_iface){
            .name = i->ifa_name,
            .ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr,
            .up = (i->ifa_flags & IFF_UP) != 0,
            .running = (i->ifa_flags & IFF_RUNNING) != 0,
            .loopback = (i->ifa_flags & IFF_LOOPBACK) != 0 };
    }
    rc = sp_addr_own (f, n, ifsel, addr, len, err, errlen);
    freeifaddrs (ifs);
    return rc;
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
