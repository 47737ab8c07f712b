/* sp_addr.h - the address MASTER_ADDR advertises for a host name. */
#ifndef SP_ADDR_H
#define SP_ADDR_H

#include <stddef.h>

/* Resolve HOST and write a numeric address of it to ADDR (LEN bytes),
 * preferring IPv4.  When HOST does not resolve, or the address does not fit,
 * write HOST itself (the tasks may still resolve it).  Returns 1 when ADDR
 * holds a numeric address, 0 when it holds HOST, -1 (errno EINVAL) for NULL
 * arguments or when not even HOST fits in LEN. */
int sp_resolve (const char *host, char *addr, size_t len);

#endif /* SP_ADDR_H */
