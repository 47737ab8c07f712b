/* ifname.c - the site's socket_ifname and the job's choice of interfaces
 * (spank/sp_ifname.c): which selector a step follows, NCCL's spelling of
 * it, and what a task gets. */
#include "config.h"
#include <errno.h>
#include <string.h>
#include "sp_ifname.h"
#include "tap.h"

static void effective (void)
{
    struct sp_ifname_job none = { NULL, NULL, NULL };
    struct sp_ifname_job own = { "eth", NULL, NULL };
    struct sp_ifname_job empty = { "", NULL, NULL };
    struct sp_ifname_job addr = { NULL, "10.0.0.5", NULL };
    struct sp_ifname_job both = { "eth", "10.0.0.5", NULL };

    ok (sp_ifname_effective (NULL, &none) == NULL,
        "effective: no site value, nothing from the job: libddp's default");
    ok (sp_ifname_effective ("", &none) == NULL,
        "effective: an empty site value is none");
    is_str (sp_ifname_effective ("ib0", &none), "ib0",
            "effective: the site's when the job gives nothing");
    is_str (sp_ifname_effective ("ib0", &own), "eth",
            "effective: the job's DDP_SOCKET_IFNAME overrides the site's");
    is_str (sp_ifname_effective ("ib0", &empty), "ib0",
            "effective: an empty DDP_SOCKET_IFNAME is none (as libddp)");
    ok (sp_ifname_effective ("ib0", &addr) == NULL,
        "effective: the job's DDP_HOST_ADDR leaves the site's out");
    is_str (sp_ifname_effective (NULL, &own), "eth",
            "effective: the job's without a site value");
    is_str (sp_ifname_effective ("ib0", &both), "eth",
            "effective: the job's own even beside DDP_HOST_ADDR");
    is_str (sp_ifname_effective ("ib0", NULL), "ib0",
            "effective: no job at all: the site's");
}

/* sp_ifname_nccl (SEL) is WANT (NULL: refused, "": cannot be said). */
static void nccl_is (const char *sel, const char *want)
{
    char out[SP_IFNAME_MAX] = "junk";
    int rc;

    errno = 0;
    rc = sp_ifname_nccl (sel, out, sizeof (out));
    if (!want)
        ok (rc == -1 && errno == EINVAL, "nccl: '%s' is refused (rc %d)",
            sel ? sel : "(null)", rc);
    else if (!*want)
        ok (rc == 0 && out[0] == '\0', "nccl: '%s' cannot be said to NCCL "
            "(rc %d, '%s')", sel, rc, out);
    else
        ok (rc == 1 && strcmp (out, want) == 0, "nccl: '%s' is '%s' (rc %d, "
            "'%s')", sel, want, rc, out);
}

static void nccl (void)
{
    char tiny[4];

    nccl_is ("ib0", "ib0");
    nccl_is ("ib,eth", "ib,eth");
    nccl_is ("^docker,lo", "^docker,lo");
    nccl_is ("=hsn0", "=hsn0");
    nccl_is ("^=eth1", "^=eth1");
    nccl_is ("vlan.100,br@x", "vlan.100,br@x");
    nccl_is ("eth0:1", "");
    nccl_is ("=ib0,eth0:data", "");
    nccl_is ("^eth0:1", "");
    nccl_is (NULL, NULL);
    nccl_is ("", NULL);
    nccl_is ("eth,,ib", NULL);
    nccl_is ("=^eth", NULL);
    nccl_is ("eth0;rm", NULL);
    nccl_is ("averyveryverylongname", NULL);
    errno = 0;
    ok (sp_ifname_nccl ("ib0,eth0", tiny, sizeof (tiny)) == -1
        && errno == EINVAL, "nccl: a value that does not fit is EINVAL");
}

static void task (void)
{
    struct sp_ifname_task t;
    struct sp_ifname_job none = { NULL, NULL, NULL };
    struct sp_ifname_job own = { "=eth0", NULL, NULL };
    struct sp_ifname_job bad = { "eth,,", NULL, NULL };
    struct sp_ifname_job addr = { NULL, "10.0.0.5", NULL };
    struct sp_ifname_job nc = { NULL, NULL, "^lo" };
    struct sp_ifname_job empty = { "", NULL, "" };

    ok (sp_ifname_task (NULL, &none, &t) == 0 && !t.ddp && !t.nccl[0],
        "task: no site value: nothing set");
    ok (sp_ifname_task ("", &own, &t) == 0 && !t.ddp && !t.nccl[0],
        "task: an empty site value: nothing set, even with the job's own");
    ok (sp_ifname_task ("ib0", &none, &t) == 0 && t.ddp
        && !strcmp (t.ddp, "ib0") && !strcmp (t.nccl, "ib0"),
        "task: the site's value for both when the job gives neither");
    ok (sp_ifname_task ("ib0", &empty, &t) == 0 && t.ddp
        && !strcmp (t.ddp, "ib0") && !strcmp (t.nccl, "ib0"),
        "task: empty values of the job count as unset");
    ok (sp_ifname_task ("ib0", &own, &t) == 0 && !t.ddp
        && !strcmp (t.nccl, "=eth0"),
        "task: the job's DDP_SOCKET_IFNAME stays and NCCL follows it");
    ok (sp_ifname_task ("ib0", &bad, &t) == 0 && !t.ddp && !t.nccl[0]
        && !t.nccl_unsayable,
        "task: a malformed DDP_SOCKET_IFNAME of the job: nothing set "
        "(libddp refuses it)");
    ok (sp_ifname_task ("ib0", &addr, &t) == 0 && !t.ddp
        && !strcmp (t.nccl, "ib0"),
        "task: DDP_HOST_ADDR: no DDP_SOCKET_IFNAME (libddp refuses both), "
        "NCCL still gets the site's");
    ok (sp_ifname_task ("ib0", &nc, &t) == 0 && t.ddp
        && !strcmp (t.ddp, "ib0") && !t.nccl[0],
        "task: the job's NCCL_SOCKET_IFNAME is never overwritten");
    ok (sp_ifname_task ("eth0:1", &none, &t) == 0 && t.ddp
        && !strcmp (t.ddp, "eth0:1") && !t.nccl[0] && t.nccl_unsayable,
        "task: a site value with ':' goes to libddp only");
    errno = 0;
    ok (sp_ifname_task ("ib0", NULL, &t) == -1 && errno == EINVAL,
        "task: a NULL job is EINVAL");
    ok (sp_ifname_task ("ib0", &none, NULL) == -1, "task: NULL out is EINVAL");
}

int main (void)
{
    effective ();
    nccl ();
    task ();
    return done_testing ();
}
