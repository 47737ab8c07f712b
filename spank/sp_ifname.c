/* sp_ifname.c - the site's socket_ifname and the job's choice of
 * interfaces (sp_ifname.h). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sp_ifname.h"
#include "../libjob/common/ifsel.h"

/* Is S set and not empty (libddp's ddpi_env_given)? */
static bool given (const char *s)
{
    return s && *s;
}

const char *sp_ifname_effective (const char *site,
                                 const struct sp_ifname_job *job)
{
    if (job && given (job->ddp))
        return job->ddp;
    if (!given (site) || (job && given (job->host_addr)))
        return NULL;
    return site;
}

int sp_ifname_nccl (const char *sel, char *out, size_t len)
{
    struct ddpi_ifsel s;

    if (!given (sel) || !out || len == 0
        || ddpi_ifsel_parse ("DDP_SOCKET_IFNAME", sel, &s, NULL, 0) < 0
        || strlen (sel) >= len) {
        errno = EINVAL;
        return -1;
    }
    out[0] = '\0';
    if (strchr (sel, ':'))
        return 0;
    memcpy (out, sel, strlen (sel) + 1);
    return 1;
}

int sp_ifname_task (const char *site, const struct sp_ifname_job *job,
                    struct sp_ifname_task *t)
{
    const char *sel;

    if (!job || !t) {
        errno = EINVAL;
        return -1;
    }
    memset (t, 0, sizeof (*t));
    if (!given (site))
        return 0;
    if (!given (job->ddp) && !given (job->host_addr))
        t->ddp = site;
    if (given (job->nccl))
        return 0;
    sel = given (job->ddp) ? job->ddp : site;
    if (sp_ifname_nccl (sel, t->nccl, sizeof (t->nccl)) == 0)
        t->nccl_unsayable = true;
    return 0;
}
