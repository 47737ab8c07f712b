/* relay.c - the relay of a multi-node step's MASTER_PORT through srun
 * (spank/sp_relay.c): a server thread here, clients as the nodes. */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sp_relay.h"
#include "tap.h"

struct server {
    struct sp_relay *r;
    int stop[2];
    int rc;
    pthread_t t;
};

static void *serve (void *arg)
{
    struct server *s = arg;

    s->rc = sp_relay_serve (s->r, s->stop[0]);
    return NULL;
}

static int server_start (struct server *s, char *spec, size_t len)
{
    if (pipe (s->stop) < 0 || !(s->r = sp_relay_create (spec, len)))
        return -1;
    return pthread_create (&s->t, NULL, serve, s) == 0 ? 0 : -1;
}

static void server_stop (struct server *s)
{
    if (write (s->stop[1], "x", 1) != 1)
        diag ("cannot stop the server");
    pthread_join (s->t, NULL);
    sp_relay_destroy (s->r);
    close (s->stop[0]);
    close (s->stop[1]);
}

/* A node that asks for the port: its answer in RESULT. */
struct getter {
    const char *spec;
    int timeout_ms;
    int result, err;
    pthread_t t;
};

static void *get_port (void *arg)
{
    struct getter *g = arg;

    g->result = sp_relay_get ("127.0.0.1", g->spec, g->timeout_ms);
    g->err = errno;
    return NULL;
}

/* Send RAW to the relay of SPEC and return how many bytes came back
 * within 1 s (the relay answers a stranger nothing). */
static int stranger (const char *spec, const char *raw)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    struct timeval tv = { 1, 0 };
    char buf[64];
    int fd, n;

    a.sin_port = htons ((uint16_t) atoi (spec));
    a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if ((fd = socket (AF_INET, SOCK_STREAM, 0)) < 0
        || connect (fd, (struct sockaddr *) &a, sizeof (a)) < 0)
        return -1;
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
    if (send (fd, raw, strlen (raw), 0) < 0)
        n = -1;
    else
        n = (int) recv (fd, buf, sizeof (buf), 0);
    close (fd);
    return n < 0 ? 0 : n;
}

/* SPEC with its token changed in one digit. */
static void wrong_token (const char *spec, char *out, size_t len)
{
    char *colon;

    snprintf (out, len, "%s", spec);
    colon = strchr (out, ':');
    colon[5] = colon[5] == 'a' ? 'b' : 'a';
}

static void test_relay (void)
{
    struct server s;
    struct getter g[3];
    char spec[SP_RELAY_SPEC_MAX + 1], bad[SP_RELAY_SPEC_MAX + 1];
    char line[128];
    int i, early = 1;

    if (server_start (&s, spec, sizeof (spec)) < 0) {
        ok (0, "a relay listens: %s", strerror (errno));
        return;
    }
    ok (strchr (spec, ':') && strlen (strchr (spec, ':') + 1) == 32,
        "its spec is PORT:TOKEN, 128 bits of token (%s)", spec);
    is_int (sp_relay_port (s.r), -1, "no port yet");
    for (i = 0; i < 3; i++) {
        g[i] = (struct getter) { .spec = spec, .timeout_ms = 10000 };
        pthread_create (&g[i].t, NULL, get_port, &g[i]);
    }
    wrong_token (spec, bad, sizeof (bad));
    errno = 0;
    ok (sp_relay_put ("127.0.0.1", bad, 4242, 2000) == -1 && errno == EPROTO,
        "a PUT with a wrong token is dropped, unanswered: EPROTO");
    snprintf (line, sizeof (line), "PUT %s 4242\n", strchr (bad, ':') + 1);
    is_int (stranger (spec, line), 0, "... as a stranger sees: no answer");
    is_int (stranger (spec, "GET\n"), 0, "a malformed line: no answer");
    is_int (sp_relay_port (s.r), -1, "... and the port is still unknown");
    usleep (100000);
    for (i = 0; i < 3; i++)
        early &= pthread_tryjoin_np (g[i].t, NULL) == EBUSY;
    ok (early, "the nodes asking wait for the first node");
    ok (sp_relay_put ("127.0.0.1", spec, 29517, 5000) == 0,
        "the first node sends its port");
    for (i = 0; i < 3; i++)
        pthread_join (g[i].t, NULL);
    ok (g[0].result == 29517 && g[1].result == 29517 && g[2].result == 29517,
        "every waiting node learns it (%d %d %d)", g[0].result, g[1].result,
        g[2].result);
    is_int (sp_relay_get ("127.0.0.1", spec, 5000), 29517,
            "a node asking later is answered at once");
    ok (sp_relay_put ("127.0.0.1", spec, 1111, 5000) == 0
        && sp_relay_get ("127.0.0.1", spec, 5000) == 29517,
        "a second PUT does not change the port");
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", bad, 1500) == -1 && errno == EPROTO,
        "a GET with a wrong token gets nothing: EPROTO");
    server_stop (&s);
    is_int (s.rc, 0, "the relay stops when told");
}

static void test_none (void)
{
    struct server s;
    char spec[SP_RELAY_SPEC_MAX + 1];

    if (server_start (&s, spec, sizeof (spec)) < 0) {
        ok (0, "a relay listens");
        return;
    }
    ok (sp_relay_put ("127.0.0.1", spec, 0, 5000) == 0
        && sp_relay_get ("127.0.0.1", spec, 5000) == 0,
        "the first node found no port: the others learn 0");
    server_stop (&s);
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", spec, 1000) == -1 && errno == ECONNREFUSED,
        "no relay: ECONNREFUSED");
}

static void test_timeout (void)
{
    struct server s;
    char spec[SP_RELAY_SPEC_MAX + 1];

    if (server_start (&s, spec, sizeof (spec)) < 0) {
        ok (0, "a relay listens");
        return;
    }
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", spec, 300) == -1 && errno == ETIMEDOUT,
        "the first node never says: ETIMEDOUT");
    server_stop (&s);
}

/* 300 silent connections of a stranger, more than the relay keeps: the
 * nodes are still answered at once. */
static void test_flood (void)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    struct server s;
    char spec[SP_RELAY_SPEC_MAX + 1];
    int fds[300], i, opened = 0;

    if (server_start (&s, spec, sizeof (spec)) < 0) {
        ok (0, "a relay listens");
        return;
    }
    a.sin_port = htons ((uint16_t) atoi (spec));
    a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    for (i = 0; i < 300; i++) {
        fds[i] = socket (AF_INET, SOCK_STREAM, 0);
        if (fds[i] >= 0
            && connect (fds[i], (struct sockaddr *) &a, sizeof (a)) == 0)
            opened++;
    }
    usleep (200000);
    ok (opened == 300 && sp_relay_put ("127.0.0.1", spec, 4000, 2000) == 0
        && sp_relay_get ("127.0.0.1", spec, 2000) == 4000,
        "300 silent connections (%d opened) do not keep the nodes out",
        opened);
    for (i = 0; i < 300; i++)
        if (fds[i] >= 0)
            close (fds[i]);
    server_stop (&s);
}

static void test_bad_args (void)
{
    char spec[8];

    errno = 0;
    ok (sp_relay_create (spec, sizeof (spec)) == NULL && errno == EINVAL,
        "a short spec buffer: EINVAL");
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", "1234", 100) == -1 && errno == EINVAL,
        "a spec without a token: EINVAL");
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", "0:0123456789abcdef0123456789abcdef", 100)
        == -1 && errno == EINVAL, "port 0: EINVAL");
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", "99:0123456789abcdef0123456789abcdeX",
                      100) == -1 && errno == EINVAL, "a token not hex: EINVAL");
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", "99:0123456789abcdef", 100) == -1
        && errno == EINVAL, "a short token: EINVAL");
    errno = 0;
    ok (sp_relay_get ("127.0.0.1", NULL, 100) == -1 && errno == EINVAL,
        "no spec: EINVAL");
    errno = 0;
    ok (sp_relay_put ("127.0.0.1", "99:0123456789abcdef0123456789abcdef",
                      65536, 100) == -1 && errno == EINVAL,
        "PUT of port 65536: EINVAL");
    sp_relay_destroy (NULL);
    ok (sp_relay_port (NULL) == -1, "NULL relay: no port");
}

int main (void)
{
    test_relay ();
    test_none ();
    test_timeout ();
    test_flood ();
    test_bad_args ();
    return done_testing ();
}
