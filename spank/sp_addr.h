/* sp_addr.h - the address MASTER_ADDR advertises for a host name. */
#ifndef SP_ADDR_H
#define SP_ADDR_H

#include <stdbool.h>
#include <stddef.h>

#include "../libjob/common/ifsel.h"

/* Resolve HOST and write a numeric address of it to ADDR (LEN bytes),
 * preferring IPv4.  When HOST does not resolve, or the address does not fit,
 * write HOST itself (the tasks may still resolve it).  Returns 1 when ADDR
 * holds a numeric address, 0 when it holds HOST, -1 (errno EINVAL) for NULL
 * arguments or when not even HOST fits in LEN. */
int sp_resolve (const char *host, char *addr, size_t len);

/* MASTER_ADDR for a step of nnodes nodes whose first node is HOST, as
 * the node running this code sees it (first: it is that node), into ADDR
 * (LEN bytes).  HOST's addresses but loopback ones (127.0.0.0/8, ::1),
 * IPv4 first.  A loopback one where HOST has no other: for a single-node
 * step (sp_resolve), and where srun's own address (LAUNCH:
 * SLURM_SRUN_COMM_HOST, which the tasks of every node reach) is one:
 * every node of the cluster is on this machine, as in the loopback test
 * cluster.  Otherwise, for a
 * multi-node step whose first node's name resolves to loopback only
 * (Debian's /etc/hosts maps a machine's own name to 127.0.1.1): on the
 * first node itself, the first address libddp would offer from this
 * node's interfaces (sp_addr_own, with IFSEL: DDP_SOCKET_IFNAME of the
 * job, NULL or "" for the default).  Returns 1 with a numeric address, 0
 * with HOST itself (it does not resolve here; the tasks may), or -1 with
 * a message in ERR (ERRLEN bytes): a malformed IFSEL, no address to give
 * (on another node than the first: the name resolves to loopback there
 * too), EINVAL arguments. */
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

#endif /* SP_ADDR_H */
