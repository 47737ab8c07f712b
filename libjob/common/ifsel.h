/* ifsel.h - which addresses a node offers its peers and which of a peer's
 * it tries, as pure functions of lists (no system call): the
 * DDP_SOCKET_IFNAME selector, in the conventions of NCCL_SOCKET_IFNAME and
 * GLOO_SOCKET_IFNAME, the default without one, and the order of a peer's
 * addresses.  libc only, so that the plugin (spank/sp_addr.c) compiles it
 * too and picks MASTER_ADDR by the same rules as libddp (net.c). */
#ifndef DDP_IFSEL_H
#define DDP_IFSEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Entries a selector may hold, and the longest interface name (Linux's
 * IFNAMSIZ - 1). */
#define DDPI_IFSEL_MAX 16
#define DDPI_IFNAME_MAX 15

/* A parsed DDP_SOCKET_IFNAME: "eth,ib" (interfaces whose names start with
 * eth or ib, in that order of preference), "^docker,lo" (every interface
 * but those), "=eth0" (exactly eth0), "^=eth1" (every one but eth1). */
struct ddpi_ifsel {
    bool given;         /* false: the default (ddpi_ifsel_order) */
    bool exclude;       /* '^': the entries are the ones left out */
    bool exact;         /* '=': whole names, not prefixes */
    int n;
    char name[DDPI_IFSEL_MAX][DDPI_IFNAME_MAX + 1];
};

/* Parse spec (the value of the variable var, for messages) into *s.  NULL
 * or "" is the default (s->given false).  Otherwise: an optional '^', then
 * an optional '=', then 1 to DDPI_IFSEL_MAX names separated by single
 * commas, each 1 to DDPI_IFNAME_MAX characters of [A-Za-z0-9_.:@-].
 * Returns 0, or -1 with a message naming var and the value in msg (len
 * bytes; *s is then the default). */
int ddpi_ifsel_parse (const char *var, const char *spec, struct ddpi_ifsel *s,
                      char *msg, size_t len);

/* Does s let interface name in?  Returns its preference (0 best: the index
 * of the first entry it matches, for a list of names to take; 0 for any
 * interface an exclusion list leaves in or when s is the default), or -1
 * when s leaves it out. */
int ddpi_ifsel_match (const struct ddpi_ifsel *s, const char *name);

/* Is name that of a bridge or link of this node's containers or virtual
 * machines (docker*, br-<12 hex digits> of Docker's own networks, veth*,
 * virbr*, lxcbr*, lxdbr*, cni*, podman*)? */
bool ddpi_if_container (const char *name);

/* One IPv4 address of an interface, as getifaddrs() gives it. */
struct ddpi_iface {
    const char *name;
    uint32_t ip;        /* network byte order */
    bool up;            /* IFF_UP */
    bool running;       /* IFF_RUNNING: it has a carrier */
    bool loopback;      /* IFF_LOOPBACK */
};

/* The addresses to offer, best first, from the n entries of ifs (in the
 * order the system lists them), into ip (room for max).  Interfaces that
 * are down or without carrier are never offered.  The default (s NULL or
 * not given): the others but container bridges (ddpi_if_container: their
 * addresses are private to a node, and often the same on every node, as
 * docker0's 172.17.0.1), loopback last.  A list of names to take: the
 * interfaces it matches, in the order of its entries, loopback last.  An
 * exclusion list: every interface it leaves in, container bridges after
 * the others and loopback last.  An address listed twice is offered once.
 * Returns how many (0: none fits). */
int ddpi_ifsel_order (const struct ddpi_ifsel *s, const struct ddpi_iface *ifs,
                      int n, uint32_t *ip, int max);

/* One address of this node with its netmask (network byte order), to
 * judge a peer's addresses against. */
struct ddpi_ifnet {
    uint32_t ip, mask;
};

/* How near a peer's address ip is, for trying the near ones first, given
 * this node's n addresses mine (loopback ones included) and whether the
 * peer shares this node's network (same_net: the same machine and network
 * namespace, so that our loopback and our addresses reach it too): 0
 * loopback, 1 on a subnet of one of our interfaces, 2 any other; -1 never
 * to be tried: loopback, or an address of our own, of a peer that does not
 * share our network (docker0's 172.17.0.1 on every node: connecting there
 * reaches this node, not the peer). */
int ddpi_peer_addr_rank (uint32_t ip, bool same_net,
                         const struct ddpi_ifnet *mine, int n);

#endif /* DDP_IFSEL_H */
