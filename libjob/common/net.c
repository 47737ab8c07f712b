/* net.c - small socket helpers (net.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "ifsel.h"
#include "net.h"

int ddpi_set_nonblock (int fd)
{
    int fl = fcntl (fd, F_GETFL);
    return fl < 0 ? -1 : fcntl (fd, F_SETFL, fl | O_NONBLOCK);
}

int ddpi_io_full (int fd, void *buf, size_t len, bool wr, double deadline)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = wr ? send (fd, (char *)buf + done, len - done,
                               MSG_DONTWAIT | MSG_NOSIGNAL)
                       : recv (fd, (char *)buf + done, len - done,
                               MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0)
            return -1;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        {
            struct pollfd p = { fd, wr ? POLLOUT : POLLIN, 0 };
            double left = deadline - ddpi_now ();
            if (left <= 0)
                return -1;
            /* Wake up now and then on a far deadline: the int stays in
             * range, and the loop re-checks. */
            poll (&p, 1, left < 1000 ? (int)(left * 1000) + 1 : 1000000);
        }
    }
    return 0;
}

/* The most interfaces ddpi_local_ipv4 looks at. */
#define LOCAL_IFS_MAX 64

/* The names of the interfaces in f (n) that are up, for a message. */
static void names_up (const struct ddpi_iface *f, int n, char *buf,
                      size_t len)
{
    size_t off = 0;

    buf[0] = '\0';
    for (int i = 0; i < n && off < len; i++) {
        int w;
        if (!f[i].up)
            continue;
        w = snprintf (buf + off, len - off, "%s%s%s", off ? ", " : "",
                      f[i].name, f[i].running ? "" : " (no carrier)");
        if (w < 0)
            break;
        off += (size_t)w;
    }
    if (!buf[0])
        snprintf (buf, len, "none");
}

/* The addresses the selector of DDP_SOCKET_IFNAME (or the default) picks
 * from this node's interfaces.  Returns how many (0 only without a
 * selector), or an error after ddpi_error(). */
static int pick_ifaces (uint32_t *ip, int max)
{
    const char *spec = getenv ("DDP_SOCKET_IFNAME");
    struct ddpi_iface f[LOCAL_IFS_MAX];
    struct ddpi_ifsel sel;
    struct ifaddrs *ifs, *i;
    char msg[DDPI_ENV_MSG], have[256];
    int nf = 0, n;

    if (ddpi_ifsel_parse ("DDP_SOCKET_IFNAME", spec, &sel, msg,
                          sizeof (msg)) < 0)
        return ddpi_error (DDP_EINVAL, "%s", msg);
    if (getifaddrs (&ifs) < 0)
        return ddpi_error (DDP_ETRANSPORT, "getifaddrs: %s", strerror (errno));
    for (i = ifs; i && nf < LOCAL_IFS_MAX; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_name)
            continue;
        f[nf++] = (struct ddpi_iface){
            .name = i->ifa_name,
            .ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr,
            .up = (i->ifa_flags & IFF_UP) != 0,
            .running = (i->ifa_flags & IFF_RUNNING) != 0,
            .loopback = (i->ifa_flags & IFF_LOOPBACK) != 0 };
    }
    n = ddpi_ifsel_order (&sel, f, nf, ip, max);
    if (n == 0 && sel.given) {
        char q[DDPI_ENV_QUOTED];
        names_up (f, nf, have, sizeof (have));
        n = ddpi_error (DDP_ETRANSPORT, "DDP_SOCKET_IFNAME='%s' lets in no "
                        "interface of this node that is up, has a carrier "
                        "and an IPv4 address (up with IPv4: %s): name one "
                        "of them", ddpi_env_quote (spec, q, sizeof (q)),
                        have);
    }
    freeifaddrs (ifs);
    return n;
}

int ddpi_local_ipv4 (uint32_t *ip, int max)
{
    const char *env = getenv ("DDP_HOST_ADDR");
    char q[DDPI_ENV_QUOTED];
    struct in_addr in;
    int n;

    if (ddpi_env_given ("DDP_HOST_ADDR")) {
        if (ddpi_env_given ("DDP_SOCKET_IFNAME"))
            return ddpi_error (DDP_EINVAL, DDPI_ADDR_BOTH);
        if (inet_pton (AF_INET, env, &in) != 1)
            return ddpi_error (DDP_EINVAL, "DDP_HOST_ADDR='%s' is not an "
                               "IPv4 address in dotted decimal (such as "
                               "10.1.2.3)", ddpi_env_quote (env, q,
                                                            sizeof (q)));
        ip[0] = in.s_addr;
        return 1;
    }
    if ((n = pick_ifaces (ip, max)) != 0)
        return n;
    ip[0] = htonl (INADDR_LOOPBACK);
    return 1;
}

uint64_t ddpi_machine_id (void)
{
    char buf[64] = "";
    FILE *f = fopen ("/proc/sys/kernel/random/boot_id", "r");

    if (f) {
        if (!fgets (buf, sizeof (buf), f))
            buf[0] = '\0';
        fclose (f);
    }
    if (!buf[0])
        gethostname (buf, sizeof (buf) - 1);
    return ddpi_hash_str (buf);
}

uint64_t ddpi_net_id (uint64_t machine)
{
    char ns[64] = "", buf[96];
    ssize_t n = readlink ("/proc/self/ns/net", ns, sizeof (ns) - 1);

    ns[n > 0 ? n : 0] = '\0';
    snprintf (buf, sizeof (buf), "%016llx %s", (unsigned long long)machine,
              ns);
    return ddpi_hash_str (buf);
}

/* The most of this node's addresses a peer's are judged against. */
#define MINE_MAX 64

int ddpi_peer_addrs_order (uint32_t *ip, int n, bool same_net)
{
    struct ddpi_ifnet mine[MINE_MAX];
    struct ifaddrs *ifs = NULL;
    uint32_t out[PEER_ADDRS_MAX];
    int nm = 0, k = 0;

    if (n > PEER_ADDRS_MAX)
        n = PEER_ADDRS_MAX;
    if (getifaddrs (&ifs) < 0)
        ifs = NULL;
    for (struct ifaddrs *i = ifs; i && nm < MINE_MAX; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_netmask
            && i->ifa_addr->sa_family == AF_INET)
            mine[nm++] = (struct ddpi_ifnet){
                ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr,
                ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr };
    if (ifs)
        freeifaddrs (ifs);
    for (int want = 0; want <= 2; want++)
        for (int i = 0; i < n; i++)
            if (ddpi_peer_addr_rank (ip[i], same_net, mine, nm) == want)
                out[k++] = ip[i];
    memcpy (ip, out, (size_t)k * sizeof (*ip));
    return k;
}

int ddpi_ipv4_join (const uint32_t *ip, int n, char sep, char *buf,
                    size_t len)
{
    size_t off = 0;
    int i;

    if (len)
        buf[0] = '\0';
    for (i = 0; i < n; i++) {
        char one[INET_ADDRSTRLEN];
        struct in_addr in = { .s_addr = ip[i] };
        size_t w;

        inet_ntop (AF_INET, &in, one, sizeof (one));
        w = strlen (one);
        if (off + (i ? 1 : 0) + w + 1 > len)
            break;
        if (i)
            buf[off++] = sep;
        memcpy (buf + off, one, w + 1);
        off += w;
    }
    return i;
}
