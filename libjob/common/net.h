/* net.h - small socket helpers shared by the host backend's links
 * (host/tcp.c, mesh.c, flood.c), the roll call after a failed init
 * (rollcall.c) and the NCCL backend's watch (libjob/nccl/watch.c): which
 * addresses to offer and which of a peer's to try.
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

/* A value identifying this machine (a hash of its boot id; of the host
 * name when there is none), so that "nodes" that share one machine
 * (containers, test clusters) are counted together. */
uint64_t ddpi_machine_id (void);

/* A value identifying this machine (machine: ddpi_machine_id()) and the
 * network namespace this process runs in: the nodes of a test cluster with
 * a network (or containers) share a boot id but not their loopback and
 * addresses.  Two processes with one value reach each other's loopback. */
uint64_t ddpi_net_id (uint64_t machine);

/* The most addresses ddpi_peer_addrs_order takes. */
#define PEER_ADDRS_MAX 16

/* Order a peer's n IPv4 addresses ip[] (network byte order) in place for
 * trying, nearest first, as ddpi_peer_addr_rank (ifsel.h) ranks them
 * against this node's interfaces, and leave out those never to be tried
 * (loopback, or an address of our own, when the peer does not share our
 * network: same_net false; docker0's 172.17.0.1 on every node reaches
 * this node, not the peer).  n above PEER_ADDRS_MAX counts as that.
 * Returns how many are left (0 when none is worth trying). */
int ddpi_peer_addrs_order (uint32_t *ip, int n, bool same_net);

/* Write the n IPv4 addresses ip[] (network byte order) to buf (len bytes)
 * in dotted decimal, sep between them: as many whole addresses as fit
 * (INET_ADDRSTRLEN bytes each hold one).  Returns how many it wrote. */
int ddpi_ipv4_join (const uint32_t *ip, int n, char sep, char *buf,
                    size_t len);

#endif /* DDP_NET_H */
