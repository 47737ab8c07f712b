/* hostlist.c - Slurm host lists (spank/sp_hostlist.c). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "sp_hostlist.h"
#include "tap.h"

static void good (const char *list, const char *first, long count)
{
    char buf[64] = "junk";
    int rc = sp_hostlist_first (list, buf, sizeof (buf));
    ok (rc == 0 && strcmp (buf, first) == 0, "first host of '%s' is '%s'",
        list, first);
    if (rc != 0 || strcmp (buf, first) != 0)
        diag ("  got rc=%d '%s'", rc, buf);
    is_int (sp_hostlist_count (list), count, "'%s' names %ld hosts", list,
            count);
}

static void bad (const char *list, int err)
{
    char buf[64] = "junk";
    int rc;
    errno = 0;
    rc = sp_hostlist_first (list, buf, sizeof (buf));
    ok (rc == -1 && errno == err && buf[0] == '\0',
        "first host of '%s' fails with errno %d", list ? list : "(null)", err);
    errno = 0;
    ok (sp_hostlist_count (list) == -1 && errno == err,
        "count of '%s' fails with errno %d", list ? list : "(null)", err);
}

int main (void)
{
    char small[4], *huge;

    good ("n1", "n1", 1);
    good ("n[1-2]", "n1", 2);
    good ("a[01-03,7],b", "a01", 5);
    good ("b,a[01-03,7]", "b", 5);
    good ("node-[009-011].cluster", "node-009.cluster", 3);
    good ("r[1-2]n[01-04]", "r1n01", 8);
    good ("x[5]", "x5", 1);
    good ("gpu_01,gpu_02", "gpu_01", 2);

    bad (NULL, EINVAL);
    bad ("", EINVAL);
    bad (",n1", EINVAL);
    bad ("n1,", EINVAL);
    bad ("n1,,n2", EINVAL);
    bad ("n[1-2", EINVAL);
    bad ("n1-2]", EINVAL);
    bad ("n[]", EINVAL);
    bad ("n[2-1]", EINVAL);
    bad ("n[1-]", EINVAL);
    bad ("n[-1]", EINVAL);
    bad ("n[a-b]", EINVAL);
    bad ("n[1,,2]", EINVAL);
    bad ("n[[1]]", EINVAL);
    bad ("n 1", EINVAL);
    bad ("n1;rm -rf /", EINVAL);
    bad ("n[1-2000000]", EOVERFLOW);
    bad ("a[1-1000]b[1-1000]c[1-1000]", EOVERFLOW);
    bad ("n[1234567890]", EINVAL);          /* more than 9 digits */
    bad ("n[1-600000,1-600000]", EOVERFLOW);

    errno = 0;
    ok (sp_hostlist_first ("longname", small, sizeof (small)) == -1
        && errno == ENOSPC && small[0] == '\0',
        "a too-small buffer gives ENOSPC and an empty string");
    errno = 0;
    ok (sp_hostlist_first ("n[1000-1001]", small, sizeof (small)) == -1
        && errno == ENOSPC, "a too-small buffer for a range gives ENOSPC");
    errno = 0;
    ok (sp_hostlist_first ("n1", NULL, 10) == -1 && errno == EINVAL,
        "a NULL buffer is EINVAL");
    {
        char host[16], err[256], name[300];
        ok (sp_hostlist_master ("n[3-4]", 2, host, sizeof (host), err,
                                sizeof (err)) == 0 && !strcmp (host, "n3"),
            "master of n[3-4], 2 nodes: n3");
        ok (sp_hostlist_master ("n[3-4]", 1, host, sizeof (host), err,
                                sizeof (err)) == -1
            && strstr (err, "names 2 nodes but the step has 1"),
            "master with the wrong node count says so");
        ok (sp_hostlist_master ("n[3-", 1, host, sizeof (host), err,
                                sizeof (err)) == -1
            && strstr (err, "is not a valid host list"),
            "master of a malformed list says so");
        memset (name, 'a', 299);
        name[299] = '\0';
        ok (sp_hostlist_master (name, 1, host, sizeof (host), err,
                                sizeof (err)) == -1
            && strstr (err, "first host name of SLURM_STEP_NODELIST is longer "
                            "than 15 characters"),
            "a first host name too long for the buffer says so, not "
            "'not a valid host list'");
        diag ("%s", err);
    }
    huge = malloc (SP_HOSTLIST_MAXLEN + 2);
    if (huge) {
        memset (huge, 'a', SP_HOSTLIST_MAXLEN + 1);
        huge[SP_HOSTLIST_MAXLEN + 1] = '\0';
        errno = 0;
        ok (sp_hostlist_count (huge) == -1 && errno == EINVAL,
            "a list longer than %d characters is EINVAL", SP_HOSTLIST_MAXLEN);
        free (huge);
    }
    return done_testing ();
}
