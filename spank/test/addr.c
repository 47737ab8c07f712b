/* addr.c - MASTER_ADDR resolution (spank/sp_addr.c): never a loopback
 * address for a multi-node step. */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include "sp_addr.h"
#include "tap.h"

static uint32_t ip4 (const char *s)
{
    struct in_addr in;

    inet_pton (AF_INET, s, &in);
    return in.s_addr;
}

/* A node's own interfaces, as sp_addr_own takes them. */
static void own (void)
{
    struct ddpi_iface f[] = {
        { "lo", ip4 ("127.0.0.1"), true, true, true },
        { "docker0", ip4 ("172.17.0.1"), true, true, false },
        { "ib0", ip4 ("10.1.0.5"), true, false, false },
        { "eth0", ip4 ("10.0.0.5"), true, true, false },
        { "data0", ip4 ("10.2.0.5"), true, true, false },
    };
    char buf[64], err[512];

    ok (sp_addr_own (f, 5, NULL, buf, sizeof (buf), err, sizeof (err)) == 1
        && !strcmp (buf, "10.0.0.5"),
        "own: the default skips lo, docker0 and ib0 without carrier (%s)",
        buf);
    ok (sp_addr_own (f, 5, "data", buf, sizeof (buf), err, sizeof (err)) == 1
        && !strcmp (buf, "10.2.0.5"), "own: DDP_SOCKET_IFNAME=data (%s)",
        buf);
    ok (sp_addr_own (f, 5, "^=eth0", buf, sizeof (buf), err,
                     sizeof (err)) == 1 && !strcmp (buf, "10.2.0.5"),
        "own: DDP_SOCKET_IFNAME=^=eth0 (%s)", buf);
    ok (sp_addr_own (f, 5, "lo", buf, sizeof (buf), err, sizeof (err)) == 0,
        "own: loopback is never given, even when selected");
    ok (sp_addr_own (f, 2, NULL, buf, sizeof (buf), err, sizeof (err)) == 0,
        "own: lo and docker0 only: none");
    ok (sp_addr_own (f, 5, "eth,,", buf, sizeof (buf), err,
                     sizeof (err)) == -1
        && strstr (err, "DDP_SOCKET_IFNAME='eth,,' has an empty name"),
        "own: a malformed selector is refused: %s", err);
}

/* sp_addr_near: which of the first node's addresses a node takes. */
static void near (void)
{
    struct ddpi_iface f[] = {
        { "lo", ip4 ("127.0.0.1"), true, true, true },
        { "eth0", ip4 ("10.0.0.6"), true, true, false },
        { "ib0", ip4 ("10.1.0.6"), true, true, false },
        { "hsn0", ip4 ("10.2.0.6"), true, false, false },
    };
    uint32_t mask[] = { ip4 ("255.0.0.0"), ip4 ("255.255.255.0"),
                        ip4 ("255.255.0.0"), ip4 ("255.255.255.0") };
    uint32_t peer[] = { ip4 ("127.0.1.1"), ip4 ("10.0.0.5"),
                        ip4 ("10.1.7.5"), ip4 ("10.2.0.5") };
    uint32_t mine[] = { ip4 ("10.1.0.6"), ip4 ("10.0.0.5") };
    struct ddpi_ifsel sel;

    ddpi_ifsel_parse ("x", "ib", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 4), 2,
            "near: ib: the address on ib0's /16");
    ddpi_ifsel_parse ("x", "=eth0", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 4), 1,
            "near: =eth0: the address on eth0's /24");
    ddpi_ifsel_parse ("x", "ib,eth", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 4), 2,
            "near: ib,eth: ib0 first, by the selector's order");
    ddpi_ifsel_parse ("x", "eth,ib", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 4), 1,
            "near: eth,ib: eth0 first");
    ddpi_ifsel_parse ("x", "hsn", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 4), -1,
            "near: hsn: hsn0 has no carrier, so none");
    ddpi_ifsel_parse ("x", "lo", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 4), -1,
            "near: lo: loopback never counts");
    ddpi_ifsel_parse ("x", "^=eth0", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 1), -1,
            "near: a peer with a loopback address only: none");
    ddpi_ifsel_parse ("x", "ib", &sel, NULL, 0);
    is_int (sp_addr_near (&sel, f, mask, 4, mine, 2), -1,
            "near: an address of this node's own is never taken");
    is_int (sp_addr_near (&sel, f, mask, 4, peer, 0), -1,
            "near: no address: none");
}

static void master (void)
{
    char buf[64], err[512] = "";
    int rc;

    rc = sp_master_addr ("localhost", 1, true, NULL, NULL, buf, sizeof (buf),
                         err, sizeof (err));
    ok (rc == 1 && !strcmp (buf, "127.0.0.1"),
        "one node: loopback is fine (%s)", buf);
    rc = sp_master_addr ("localhost", 2, false, "192.0.2.1", NULL, buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == -1 && strstr (err, "localhost resolves only to a loopback"),
        "two nodes, not the first: a loopback answer is refused: %s", err);
    rc = sp_master_addr ("127.0.1.1", 2, false, NULL, NULL, buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == -1, "two nodes: 127.0.1.1 (Debian's own-name entry) refused");
    rc = sp_master_addr ("192.0.2.7", 2, false, NULL, NULL, buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == 1 && !strcmp (buf, "192.0.2.7"), "two nodes: a routable "
        "address stays as it is");
    rc = sp_master_addr ("192.0.2.7", 2, false, "192.0.2.1", "lo", buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == 1 && !strcmp (buf, "192.0.2.7"), "two nodes, not the first, "
        "a selector with no subnet of the name's: the name's address");
    rc = sp_master_addr ("192.0.2.7", 2, true, "192.0.2.1", "eth,,", buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == 1 && !strcmp (buf, "192.0.2.7"), "the first node, a malformed "
        "selector where the name resolves: the name's (libddp refuses it)");
    rc = sp_master_addr ("192.0.2.7", 2, true, "192.0.2.1", "=no-such-if0",
                         buf, sizeof (buf), err, sizeof (err));
    ok (rc == 1 && !strcmp (buf, "192.0.2.7"), "the first node, a selector "
        "that lets in no interface here: the name's address");
    rc = sp_master_addr ("no-such-host.invalid", 2, true, NULL, NULL, buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == 0 && !strcmp (buf, "no-such-host.invalid"),
        "two nodes: a name that does not resolve is kept");
    rc = sp_master_addr ("localhost", 2, true, NULL, "eth,,", buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == -1 && strstr (err, "DDP_SOCKET_IFNAME='eth,,'"),
        "the first node: a malformed DDP_SOCKET_IFNAME refused");
    buf[0] = '\0';
    rc = sp_master_addr ("localhost", 2, true, "", NULL, buf, sizeof (buf),
                         err, sizeof (err));
    ok ((rc == 1 && strncmp (buf, "127.", 4) != 0 && strcmp (buf, "::1"))
        || (rc == -1 && strstr (err, "no interface of it offers another")),
        "the first node, its name on loopback: one of its interfaces' "
        "addresses or a refusal, never loopback (rc %d, %s)", rc,
        rc == 1 ? buf : err);
    rc = sp_master_addr ("localhost", 2, true, "127.0.0.1", NULL, buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == 1 && !strcmp (buf, "127.0.0.1"),
        "srun reached the node over loopback (every node on this machine, "
        "as the loopback test cluster): loopback kept on the first node");
    rc = sp_master_addr ("localhost", 2, false, "::1", NULL, buf,
                         sizeof (buf), err, sizeof (err));
    ok (rc == 1 && !strcmp (buf, "127.0.0.1"), "and on the others");
}

int main (void)
{
    char buf[64], tiny[4], six[6];
    int rc;

    near ();
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
    own ();
    master ();
    return done_testing ();
}
