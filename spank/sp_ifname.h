/* sp_ifname.h - the site's socket_ifname (plugstack.conf) and the job's
 * own choice of interfaces: which selector a step follows, and what its
 * tasks get (DDP_SOCKET_IFNAME, NCCL_SOCKET_IFNAME).  Pure functions.
 *
 * A variable counts as given when it is set and not empty, as libddp
 * counts it (ddpi_env_given).  The job's values are untrusted: they are
 * only compared, parsed (ddpi_ifsel_parse) and copied into bounded
 * buffers. */
#ifndef SP_IFNAME_H
#define SP_IFNAME_H

#include <stdbool.h>
#include <stddef.h>

/* Room for NCCL_SOCKET_IFNAME: the longest selector ddpi_ifsel_parse
 * takes ('^', '=', 16 names of 15 characters and 15 commas) and a NUL. */
#define SP_IFNAME_MAX 258

/* The job's variables that bear on the choice (NULL: unset). */
struct sp_ifname_job {
    const char *ddp;        /* DDP_SOCKET_IFNAME */
    const char *host_addr;  /* DDP_HOST_ADDR */
    const char *nccl;       /* NCCL_SOCKET_IFNAME */
};

/* What a task gets on top of its environment. */
struct sp_ifname_task {
    const char *ddp;             /* DDP_SOCKET_IFNAME to set, or NULL */
    char nccl[SP_IFNAME_MAX];    /* NCCL_SOCKET_IFNAME to set, or "" */
    bool nccl_unsayable;         /* the selector has no NCCL spelling */
};

/* The selector a step of JOB follows for MASTER_ADDR: the job's
 * DDP_SOCKET_IFNAME when given, else SITE (socket_ifname; NULL or "":
 * none) unless the job gives DDP_HOST_ADDR (libddp refuses both).
 * Returns it, or NULL for libddp's default.  Not checked here. */
const char *sp_ifname_effective (const char *site,
                                 const struct sp_ifname_job *job);

/* NCCL_SOCKET_IFNAME for SEL, a DDP_SOCKET_IFNAME value, into OUT (LEN
 * bytes).  The grammars agree ('^' first to leave out, then '=' for exact
 * names, name prefixes separated by commas), but NCCL reads ':' as the
 * start of a port number, so a name with one (an address label as
 * eth0:1) cannot be said to NCCL; nor is the order of a list (NCCL takes
 * the interfaces it lets in in the system's order, libddp in the list's).
 * Returns 1 with OUT set, 0 when SEL cannot be said (OUT ""), or -1 with
 * errno EINVAL when SEL is NULL, empty or malformed or OUT too small. */
int sp_ifname_nccl (const char *sel, char *out, size_t len);

/* What a task of JOB gets from SITE (socket_ifname; NULL or "": none,
 * and then nothing) into *T: DDP_SOCKET_IFNAME=SITE where the job gives
 * neither DDP_SOCKET_IFNAME nor DDP_HOST_ADDR; NCCL_SOCKET_IFNAME where
 * the job gives none: the NCCL spelling (sp_ifname_nccl) of the job's
 * DDP_SOCKET_IFNAME when given and well formed, else of SITE; none when
 * the job's DDP_SOCKET_IFNAME is malformed (libddp refuses it) or the
 * selector has no NCCL spelling (T->nccl_unsayable).  Returns 0, or -1
 * with errno EINVAL for NULL arguments. */
int sp_ifname_task (const char *site, const struct sp_ifname_job *job,
                    struct sp_ifname_task *t);

#endif /* SP_IFNAME_H */
