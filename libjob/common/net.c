/* net.c - small socket helpers (net.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ddp_internal.h"
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

int ddpi_local_ipv4 (uint32_t *ip, int max)
{
    const char *env = getenv ("DDP_HOST_ADDR");
    char q[DDPI_ENV_QUOTED];
    struct ifaddrs *ifs, *i;
    struct in_addr in;
    int n = 0;

    if (ddpi_env_given ("DDP_HOST_ADDR")) {
        if (inet_pton (AF_INET, env, &in) != 1)
            return ddpi_error (DDP_EINVAL, "DDP_HOST_ADDR='%s' is not an "
                               "IPv4 address in dotted decimal (such as "
                               "10.1.2.3)", ddpi_env_quote (env, q,
                                                            sizeof (q)));
        ip[0] = in.s_addr;
        return 1;
    }
    if (getifaddrs (&ifs) < 0)
        return ddpi_error (DDP_ETRANSPORT, "getifaddrs: %s", strerror (errno));
    for (int pass = 0; pass < 2; pass++) {
        for (i = ifs; i && n < max; i = i->ifa_next) {
            bool lo;
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET
                || !(i->ifa_flags & IFF_UP))
                continue;
            lo = (i->ifa_flags & IFF_LOOPBACK) != 0;
            if (lo != (pass == 1))
                continue;
            ip[n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        }
    }
    freeifaddrs (ifs);
    if (n == 0)
        ip[n++] = htonl (INADDR_LOOPBACK);
    return n;
}
