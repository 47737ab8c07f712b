/* net.h - small socket helpers shared by the host backend's links
 * (host/tcp.c, mesh.c, flood.c), the roll call after a failed init
 * (rollcall.c) and the NCCL backend's watch (libjob/nccl/watch.c).
 * Internal to libddp. */
#ifndef DDP_NET_H
#define DDP_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Make fd non-blocking.  Returns 0 or -1 (errno set). */
int ddpi_set_nonblock (int fd);

/* Read (wr false) or write (wr true) exactly len bytes on the non-blocking
 * socket fd, polling until the absolute time deadline (ddpi_now()).
 * Returns 0, or -1 on EOF, an error or the deadline. */
int ddpi_io_full (int fd, void *buf, size_t len, bool wr, double deadline);

/* The IPv4 addresses this rank offers its peers, best first, into ip
 * (room for max >= 1; network byte order): DDP_HOST_ADDR alone when it is
 * set; else those DDP_SOCKET_IFNAME or the default picks among the
 * interfaces that are up with a carrier (ifsel.h: ddpi_ifsel_order;
 * loopback last, where a peer on another machine never tries it), else
 * 127.0.0.1.  Returns how many, or DDP_EINVAL (a DDP_HOST_ADDR that is not
 * an IPv4 address, a malformed DDP_SOCKET_IFNAME, both set) /
 * DDP_ETRANSPORT (getifaddrs failed, or DDP_SOCKET_IFNAME lets no address
 * in: the message lists the interfaces that are up) after ddpi_error(). */
int ddpi_local_ipv4 (uint32_t *ip, int max);

#endif /* DDP_NET_H */
