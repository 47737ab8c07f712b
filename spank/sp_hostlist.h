/* sp_hostlist.h - the parts of Slurm host lists the plugin needs.
 *
 * A host list is a comma-separated list of host expressions; an expression is
 * literal text ([A-Za-z0-9._-]) with bracketed numeric ranges, e.g.
 * "n1", "n[1-2]", "a[01-03,7],b", "r[1-2]n[01-04]".  Ranges are N or N-M with
 * N <= M (digits only, zero padding kept as written).  Anything else is
 * rejected: the list comes from the job environment and is untrusted.
 */
#ifndef SP_HOSTLIST_H
#define SP_HOSTLIST_H

#include <stddef.h>

/* Longest host list accepted, and the most hosts counted. */
#define SP_HOSTLIST_MAXLEN 65536
#define SP_HOSTLIST_MAXHOSTS 1000000

/* Copy the first host of LIST to BUF (LEN bytes).  Returns 0, or -1 with
 * errno EINVAL (NULL, empty or malformed list) or ENOSPC (BUF too small);
 * BUF is then an empty string when LEN > 0. */
int sp_hostlist_first (const char *list, char *buf, size_t len);

/* Number of hosts LIST names (duplicates counted).  Returns the count, or -1
 * with errno EINVAL (malformed) or EOVERFLOW (more than SP_HOSTLIST_MAXHOSTS). */
long sp_hostlist_count (const char *list);

/* The host of rank 0 of a step of NNODES nodes whose node list is LIST
 * (SLURM_STEP_NODELIST): its first host, copied to HOST (LEN bytes).
 * Returns 0; on failure -1 with errno EINVAL and a message in ERR (ERRLEN
 * bytes) saying which: LIST is not a valid host list, its first host name
 * does not fit in LEN, or it names another number of nodes than NNODES. */
int sp_hostlist_master (const char *list, unsigned long nnodes, char *host,
                        size_t len, char *err, size_t errlen);

#endif /* SP_HOSTLIST_H */
