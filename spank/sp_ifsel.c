/* sp_ifsel.c - libddp's choice of interfaces (libjob/common/ifsel.c: the
 * DDP_SOCKET_IFNAME selector and the default), compiled into the plugin
 * as it is into libddp, so that MASTER_ADDR follows the same rules
 * (sp_addr.c).  ifsel.c uses libc only. */
#include "../libjob/common/ifsel.c"
