/* sp_addr.c - the address MASTER_ADDR advertises for a host name. */
#include "config.h"
#include <errno.h>
#include <netdb.h>
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
