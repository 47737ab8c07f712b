/* ifsel.c - the interface selector DDP_SOCKET_IFNAME (its grammar, what
 * it lets in), the addresses a node offers by default and with a
 * selector, and the order of a peer's addresses (ifsel.h), as pure
 * functions; the grammar as ddp_init checks it (env.c). */
#include "config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "ddp_internal.h"
#include "ifsel.h"

#define VAR "DDP_SOCKET_IFNAME"

static uint32_t ip4 (const char *s)
{
    struct in_addr in;

    inet_pton (AF_INET, s, &in);
    return in.s_addr;
}

static void parse_good (void)
{
    struct ddpi_ifsel s;
    char msg[512];

    ok (ddpi_ifsel_parse (VAR, NULL, &s, msg, sizeof (msg)) == 0 && !s.given,
        "unset: the default");
    ok (ddpi_ifsel_parse (VAR, "", &s, msg, sizeof (msg)) == 0 && !s.given,
        "empty: the default");
    ok (ddpi_ifsel_parse (VAR, "eth", &s, msg, sizeof (msg)) == 0 && s.given
        && !s.exclude && !s.exact && s.n == 1 && !strcmp (s.name[0], "eth"),
        "eth: one prefix to take");
    ok (ddpi_ifsel_parse (VAR, "ib,eth", &s, msg, sizeof (msg)) == 0
        && s.n == 2 && !strcmp (s.name[0], "ib")
        && !strcmp (s.name[1], "eth"), "ib,eth: two, in order");
    ok (ddpi_ifsel_parse (VAR, "^docker,lo", &s, msg, sizeof (msg)) == 0
        && s.exclude && !s.exact && s.n == 2, "^docker,lo: to leave out");
    ok (ddpi_ifsel_parse (VAR, "=eth0", &s, msg, sizeof (msg)) == 0
        && !s.exclude && s.exact && s.n == 1, "=eth0: an exact name");
    ok (ddpi_ifsel_parse (VAR, "^=eth1", &s, msg, sizeof (msg)) == 0
        && s.exclude && s.exact && !strcmp (s.name[0], "eth1"),
        "^=eth1: an exact name to leave out");
    ok (ddpi_ifsel_parse (VAR, "eth0.100,bond0:1,ib-0_a@x,abcdefghijklmno",
                          &s, msg, sizeof (msg)) == 0 && s.n == 4,
        "names with . : - _ @ and of 15 characters");
    ok (ddpi_ifsel_parse (VAR, "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", &s, msg,
                          sizeof (msg)) == 0 && s.n == 16, "16 names");
}

/* Every one refused, with a message naming the variable and the value. */
static void parse_bad (void)
{
    static const char *bad[] = {
        "^", "=", "^=", "=^eth", "^^eth", "==eth", "eth,,ib", "eth,",
        ",eth", "eth ib", " eth", "eth\t", "eth;x", "eth/0", "eth^",
        "eth=0", "eth,^ib", "eth,=ib", "eth\x01", "\xc3\xa9th0",
        "abcdefghijklmnop", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", ",",
        "eth0'", "eth0\\",
    };

    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        struct ddpi_ifsel s;
        char msg[512] = "", q[DDPI_ENV_QUOTED], want[256];
        int rc = ddpi_ifsel_parse (VAR, bad[i], &s, msg, sizeof (msg));

        snprintf (want, sizeof (want), VAR "='%s' ",
                  ddpi_env_quote (bad[i], q, sizeof (q)));
        ok (rc == -1 && !s.given && strncmp (msg, want, strlen (want)) == 0
            && strstr (msg, "^docker,lo"), "refused: %s", msg);
    }
}

static void parse_env (void)
{
    char msg[DDPI_ENV_MSG] = "";

    ok (ddpi_env_explain (VAR, "eth,,ib", msg, sizeof (msg)) == DDP_EINVAL
        && strstr (msg, VAR "='eth,,ib' has an empty name"),
        "ddp_init's check refuses it: %s", msg);
    ok (ddpi_env_explain (VAR, "^=eth1", msg, sizeof (msg)) == 0,
        "and takes a good one");
    setenv (VAR, "eth0", 1);
    setenv ("DDP_HOST_ADDR", "10.0.0.1", 1);
    ok (ddpi_env_check () == DDP_EINVAL
        && strstr (ddp_last_error (), "both set"),
        "DDP_HOST_ADDR and " VAR " together: refused (%s)",
        ddp_last_error ());
    unsetenv ("DDP_HOST_ADDR");
    ok (ddpi_env_check () == 0, VAR " alone: taken");
    setenv (VAR, "eth0,", 1);
    ok (ddpi_env_check () == DDP_EINVAL
        && strstr (ddp_last_error (), VAR "='eth0,'"),
        "a malformed one fails ddp_init's check (%s)", ddp_last_error ());
    unsetenv (VAR);
}

static void match (void)
{
    struct ddpi_ifsel s;

    ddpi_ifsel_parse (VAR, "ib,eth", &s, NULL, 0);
    ok (ddpi_ifsel_match (&s, "ib0") == 0 && ddpi_ifsel_match (&s, "eth3") == 1
        && ddpi_ifsel_match (&s, "veth0") == -1
        && ddpi_ifsel_match (&s, "enp1s0") == -1,
        "prefixes: ib0 first, eth3 second, veth0 and enp1s0 out");
    ddpi_ifsel_parse (VAR, "=eth0", &s, NULL, 0);
    ok (ddpi_ifsel_match (&s, "eth0") == 0
        && ddpi_ifsel_match (&s, "eth0.100") == -1
        && ddpi_ifsel_match (&s, "eth") == -1, "=eth0: eth0 only");
    ddpi_ifsel_parse (VAR, "^docker,lo", &s, NULL, 0);
    ok (ddpi_ifsel_match (&s, "docker0") == -1
        && ddpi_ifsel_match (&s, "lo") == -1
        && ddpi_ifsel_match (&s, "eth0") == 0, "^docker,lo: those out");
    ddpi_ifsel_parse (VAR, "^=eth1", &s, NULL, 0);
    ok (ddpi_ifsel_match (&s, "eth1") == -1
        && ddpi_ifsel_match (&s, "eth10") == 0, "^=eth1: eth10 stays in");
    ok (ddpi_ifsel_match (NULL, "anything") == 0, "no selector: all in");
    ok (ddpi_if_container ("docker0") && ddpi_if_container ("docker_gwbridge")
        && ddpi_if_container ("veth1a2b3c") && ddpi_if_container ("virbr0")
        && ddpi_if_container ("br-0123456789ab")
        && ddpi_if_container ("cni0") && ddpi_if_container ("podman0"),
        "container bridges known");
    ok (!ddpi_if_container ("br0") && !ddpi_if_container ("br-data")
        && !ddpi_if_container ("br-0123456789aB")
        && !ddpi_if_container ("eth0") && !ddpi_if_container ("ib0")
        && !ddpi_if_container ("bond0"),
        "a site's own bridges (br0, br-data) are not");
}

/* A node as sites have them, in getifaddrs order. */
static const struct ddpi_iface node[] = {
    { "lo", 0, true, true, true },
    { "eth0", 0, true, true, false },
    { "docker0", 0, true, true, false },
    { "ib0", 0, true, false, false },       /* up, no carrier */
    { "data0", 0, true, true, false },
    { "eth1", 0, false, false, false },     /* down */
    { "eth0", 0, true, true, false },       /* a second address, the same */
};
#define NNODE ((int)(sizeof (node) / sizeof (node[0])))

static const char *const node_ip[NNODE] = {
    "127.0.0.1", "10.0.0.1", "172.17.0.1", "10.1.0.1", "10.2.0.1",
    "10.3.0.1", "10.0.0.1",
};

/* The order sel (NULL: the default) gives, as "a b c", into buf. */
static const char *order (const char *spec, int max, char *buf, size_t len)
{
    struct ddpi_iface f[NNODE];
    struct ddpi_ifsel s;
    uint32_t ip[NNODE];
    int n;
    size_t off = 0;

    for (int i = 0; i < NNODE; i++) {
        f[i] = node[i];
        f[i].ip = ip4 (node_ip[i]);
    }
    ddpi_ifsel_parse (VAR, spec, &s, NULL, 0);
    n = ddpi_ifsel_order (&s, f, NNODE, ip, max);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[INET_ADDRSTRLEN];
        inet_ntop (AF_INET, &ip[i], a, sizeof (a));
        off += (size_t)snprintf (buf + off, len - off, "%s%s", i ? " " : "",
                                 a);
    }
    return buf;
}

static void choose (void)
{
    char b[256];

#define IS(spec, max, want) \
    ok (!strcmp (order (spec, max, b, sizeof (b)), want), \
        "%s: %s", spec ? spec : "the default", b)
    IS (NULL, NNODE, "10.0.0.1 10.2.0.1 127.0.0.1");
    IS ("data,eth", NNODE, "10.2.0.1 10.0.0.1");
    IS ("eth,data", NNODE, "10.0.0.1 10.2.0.1");
    IS ("ib", NNODE, "");
    IS ("=eth1", NNODE, "");
    IS ("^eth", NNODE, "10.2.0.1 172.17.0.1 127.0.0.1");
    IS ("^=lo", NNODE, "10.0.0.1 10.2.0.1 172.17.0.1");
    IS ("lo", NNODE, "127.0.0.1");
    IS ("docker", NNODE, "172.17.0.1");
    IS (NULL, 1, "10.0.0.1");
#undef IS
}

static void peer_rank (void)
{
    struct ddpi_ifnet mine[] = {
        { ip4 ("127.0.0.1"), ip4 ("255.0.0.0") },
        { ip4 ("198.18.0.1"), ip4 ("255.255.255.0") },
        { ip4 ("198.19.255.1"), ip4 ("255.255.255.0") },
    };

    ok (ddpi_peer_addr_rank (ip4 ("127.0.0.1"), true, mine, 3) == 0
        && ddpi_peer_addr_rank (ip4 ("127.0.1.1"), false, mine, 3) == -1,
        "loopback: first on our network, never on another's");
    ok (ddpi_peer_addr_rank (ip4 ("198.19.255.1"), false, mine, 3) == -1
        && ddpi_peer_addr_rank (ip4 ("198.18.0.1"), false, mine, 3) == -1,
        "an address of ours advertised by another node: never tried");
    ok (ddpi_peer_addr_rank (ip4 ("198.19.255.1"), true, mine, 3) == 1,
        "an address of ours, for a peer on our network: tried");
    ok (ddpi_peer_addr_rank (ip4 ("198.18.0.2"), false, mine, 3) == 1
        && ddpi_peer_addr_rank (ip4 ("192.0.2.9"), false, mine, 3) == 2,
        "on one of our subnets before elsewhere");
}

int main (void)
{
    plan (NO_PLAN);
    parse_good ();
    parse_bad ();
    parse_env ();
    match ();
    choose ();
    peer_rank ();
    done_testing ();
}
