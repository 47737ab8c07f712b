/* sp_addr.h - the address MASTER_ADDR advertises for a host name. */
#ifndef SP_ADDR_H
#define SP_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../libjob/common/ifsel.h"

/* Resolve HOST and write a numeric address of it to ADDR (LEN bytes),
 * preferring IPv4.  When HOST does not resolve, or the address does not fit,
 * write HOST itself (the tasks may still resolve it).  Returns 1 when ADDR
 * holds a numeric address, 0 when it holds HOST, -1 (errno EINVAL) for NULL
 * arguments or when not even HOST fits in LEN. */
int sp_resolve (const char *host, char *addr, size_t len);

/* MASTER_ADDR for a step of nnodes nodes whose first node is HOST, as
 * the node running this code sees it (first: it is that node), into ADDR
 * (LEN bytes).  IFSEL is the selector the step follows
 * (sp_ifname_effective: the job's DDP_SOCKET_IFNAME or the site's
 * socket_ifname; NULL or "": libddp's default).
 *
 * A multi-node step with a well-formed IFSEL, where srun's own address
 * (LAUNCH: SLURM_SRUN_COMM_HOST) is not loopback: on the first node, the
 * first address libddp would offer from its interfaces (sp_addr_own); on
 * the others, the address of HOST's that lies on the subnet of an
 * interface IFSEL lets in here (sp_addr_near); where there is none, as
 * without IFSEL.
 *
 * Otherwise HOST's addresses but loopback ones (127.0.0.0/8, ::1), IPv4
 * first.  A loopback one where HOST has no other: for a single-node step
 * (sp_resolve), and where LAUNCH is one: every node of the cluster is on
 * this machine, as in the loopback test cluster.  Otherwise, for a
 * multi-node step whose first node's name resolves to loopback only
 * (Debian's /etc/hosts maps a machine's own name to 127.0.1.1): on the
 * first node itself, the first address libddp would offer from this
 * node's interfaces (sp_addr_own with IFSEL).  Returns 1 with a numeric
 * address, 0 with HOST itself (it does not resolve here; the tasks may),
 * or -1 with a message in ERR (ERRLEN bytes): a malformed IFSEL where it
 * is needed, no address to give (on another node than the first: the
 * name resolves to loopback there too), EINVAL arguments. */
int sp_master_addr (const char *host, unsigned nnodes, bool first,
                    const char *launch, const char *ifsel, char *addr,
                    size_t len, char *err, size_t errlen);

/* The first address of the N interfaces IFS (in the order getifaddrs
 * lists them) that IFSEL (DDP_SOCKET_IFNAME's value; NULL or "": the
 * default) lets in, loopback ones left out, as libddp orders them
 * (ddpi_ifsel_order), into ADDR (LEN bytes).  Returns 1, 0 when none is
 * left, or -1 with a message in ERR for a malformed IFSEL. */
int sp_addr_own (const struct ddpi_iface *ifs, int n, const char *ifsel,
                 char *addr, size_t len, char *err, size_t errlen);

/* Of the N addresses PEER (IPv4, network byte order: the first node's, as
 * its name resolves here), the one on the subnet of the interface SEL
 * prefers among this node's NIFS interfaces IFS (MASK[i]: IFS[i]'s
 * netmask), in the order of ddpi_ifsel_order; loopback interfaces and
 * addresses never count, nor an address of this node's own.  Returns its
 * index in PEER, or -1 when none is on such a subnet. */
int sp_addr_near (const struct ddpi_ifsel *sel, const struct ddpi_iface *ifs,
                  const uint32_t *mask, int nifs, const uint32_t *peer,
                  int n);

#endif /* SP_ADDR_H */
