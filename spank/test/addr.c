/* addr.c - MASTER_ADDR resolution (spank/sp_addr.c). */
#include "config.h"
#include <errno.h>
#include "sp_addr.h"
#include "tap.h"

int main (void)
{
    char buf[64], tiny[4], six[6];
    int rc;

    rc = sp_resolve ("127.0.0.1", buf, sizeof (buf));
    ok (rc == 1 && strcmp (buf, "127.0.0.1") == 0,
        "a numeric IPv4 address stays as it is");
    rc = sp_resolve ("localhost", buf, sizeof (buf));
    ok (rc == 1 && (strcmp (buf, "127.0.0.1") == 0 || strcmp (buf, "::1") == 0),
        "localhost resolves to a loopback address (%s), IPv4 preferred",
        buf);
    rc = sp_resolve ("no-such-host.invalid", buf, sizeof (buf));
    ok (rc == 0 && strcmp (buf, "no-such-host.invalid") == 0,
        "a name that does not resolve is kept as it is");
    rc = sp_resolve ("::1", buf, sizeof (buf));
    ok ((rc == 1 && strcmp (buf, "::1") == 0) || rc == 0,
        "an IPv6 literal is kept (rc %d, %s)", rc, buf);
    rc = sp_resolve ("localhost", tiny, sizeof (tiny));
    ok (rc == -1 && errno == EINVAL, "a name longer than the buffer is EINVAL");
    rc = sp_resolve ("127.1", six, sizeof (six));
    ok (rc == 0 && strcmp (six, "127.1") == 0,
        "an address that does not fit (127.0.0.1 in 6 bytes) leaves the name");
    errno = 0;
    ok (sp_resolve (NULL, buf, sizeof (buf)) == -1 && errno == EINVAL,
        "a NULL name is EINVAL");
    errno = 0;
    ok (sp_resolve ("localhost", NULL, 10) == -1 && errno == EINVAL,
        "a NULL buffer is EINVAL");
    return done_testing ();
}
