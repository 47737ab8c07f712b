/* addrs.c - ddp_host_addrs(): the addresses this rank offers its peers,
 * for a program or binding that serves something of its own to the other
 * ranks (the Python module's torch.distributed store). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "ddp.h"
#include "ddp_internal.h"
#include "net.h"

/* The most addresses asked of ddpi_local_ipv4. */
#define ADDRS_MAX 16

int ddp_host_addrs (char *buf, size_t len)
{
    uint32_t ip[ADDRS_MAX];
    int n;

    if (!buf || len < INET_ADDRSTRLEN)
        return ddpi_error (DDP_EINVAL, "ddp_host_addrs: buf is %s: pass at "
                           "least %d bytes", buf ? "too short" : "NULL",
                           INET_ADDRSTRLEN);
    if ((n = ddpi_local_ipv4 (ip, ADDRS_MAX)) < 0)
        return n;
    return ddpi_ipv4_join (ip, n, ',', buf, len);
}
