/* local.c - the bootstrap method of a rank started by the local launcher
 * (method.h; the server is local_server.c, the protocol local_proto.h).
 *
 * The launcher passes each rank one end of a socketpair, named by
 * DDP_LOCAL_FD.  The rank says hello once and learns its rank, the world
 * size and the simulated nodes' layout; puts go to the server, a sync
 * waits until every rank synced and brings back the round's blobs this
 * rank may read (collected, as under PMIx), or says which ranks failed
 * the round.  The connection stays open until the process exits, so a
 * later ddp_init() finds it again; it is closed on exec (the program's
 * own children do not hold it, so the server sees a rank's end). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "local_proto.h"
#include "method.h"
#include "net.h"

/* Extra seconds a rank waits for the server's answer to a sync after its
 * own bound: the server times the round out first and says who is late. */
#define SYNC_SLACK 2.0

/* The connection and what the hello told, for the process's life. */
static struct {
    int fd;
    struct lp_welcome w;
    int32_t *node_of;
} conn = { .fd = -1 };

static bool local_probe (char *why, size_t why_len)
{
    const char *s = getenv ("DDP_LOCAL_FD");

    if (!s || !*s) {
        snprintf (why, why_len, "DDP_LOCAL_FD is not set");
        return false;
    }
    snprintf (why, why_len, "DDP_LOCAL_FD=%s is set", s);
    return true;
}

/* DDP_LOCAL_FD as a socket ready to use.  Returns the fd or DDP_E*. */
static int open_fd (char *err, size_t errlen)
{
    const char *s = getenv ("DDP_LOCAL_FD");
    int type = 0, domain = 0;
    socklen_t sl = sizeof (int);
    long fd;

    if (!s || ddpi_parse_long (s, 0, INT_MAX, &fd) < 0)
        return bootstrap_err (err, errlen, DDP_EINVAL, "DDP_LOCAL_FD='%s' is "
                              "not a descriptor number (it is set by the "
                              "local launcher for the ranks it starts)",
                              s ? s : "");
    errno = 0;
    if (fcntl ((int)fd, F_GETFD) < 0
        || getsockopt ((int)fd, SOL_SOCKET, SO_TYPE, &type, &sl) < 0
        || getsockopt ((int)fd, SOL_SOCKET, SO_DOMAIN, &domain, &sl) < 0
        || type != SOCK_STREAM || domain != AF_UNIX)
        return bootstrap_err (err, errlen, DDP_ENOLAUNCH, "DDP_LOCAL_FD=%ld "
                              "is not the local launcher's socket (%s): was "
                              "it inherited by a process the launcher did "
                              "not start?", fd, errno ? strerror (errno)
                              : "another kind of descriptor");
    if (fcntl ((int)fd, F_SETFD, FD_CLOEXEC) < 0
        || ddpi_set_nonblock ((int)fd) < 0)
        return bootstrap_err (err, errlen, DDP_ETRANSPORT, "DDP_LOCAL_FD=%ld: "
                              "%s", fd, strerror (errno));
    return (int)fd;
}

/* Check the welcome (payload p of len bytes) and keep it. */
static int take_welcome (const void *p, size_t len, char *err, size_t errlen)
{
    struct lp_cur c = { p, len };
    struct lp_welcome w;
    int32_t *node_of;
    int i;

    if (!lp_take (&c, &w, sizeof (w)) || w.size < 1 || w.rank < 0
        || w.rank >= w.size || w.nnodes < 1 || w.nnodes > w.size
        || c.left != (size_t)w.size * sizeof (int32_t))
        return bootstrap_err (err, errlen, DDP_ETRANSPORT, "the local "
                              "launcher's welcome is malformed");
    if (!(node_of = malloc (c.left)))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    memcpy (node_of, c.p, c.left);
    for (i = 0; i < w.size; i++)
        if (node_of[i] < 0 || node_of[i] >= w.nnodes) {
            free (node_of);
            return bootstrap_err (err, errlen, DDP_ETRANSPORT, "the local "
                                  "launcher's layout is malformed");
        }
    conn.w = w;
    conn.node_of = node_of;
    return 0;
}

/* Connect once: hello, welcome. */
static int connect_once (double timeout_s, char *err, size_t errlen)
{
    double end = ddpi_now () + timeout_s;
    uint32_t type = 0;
    void *buf = NULL;
    size_t len = 0;
    int fd, rc;

    if (conn.fd >= 0)
        return 0;
    if ((fd = open_fd (err, errlen)) < 0)
        return fd;
    if (lp_send (fd, LP_HELLO, NULL, 0, end) < 0
        || lp_recv (fd, &type, &buf, &len, (size_t)INT_MAX, end) < 0
        || type != LP_WELCOME)
        rc = bootstrap_err (err, errlen, DDP_ETRANSPORT, "no welcome from "
                            "the local launcher within %g s", timeout_s);
    else
        rc = take_welcome (buf, len, err, errlen);
    free (buf);
    if (rc == 0)
        conn.fd = fd;
    return rc;
}

static int local_create (struct bootstrap *b, char *err, size_t errlen)
{
    int rc, r, node, n = 0;

    if ((rc = connect_once (b->timeout_s, err, errlen)) < 0)
        return rc;
    if (!(b->priv = calloc (1, sizeof (struct bootstrap_blobs)))
        || !(b->info.local_ranks = calloc ((size_t)conn.w.size,
                                           sizeof (int))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    node = conn.node_of[conn.w.rank];
    for (r = 0; r < conn.w.size; r++) {
        if (conn.node_of[r] != node)
            continue;
        if (r == conn.w.rank)
            b->info.local_rank = n;
        b->info.local_ranks[n++] = r;
    }
    b->info.rank = conn.w.rank;
    b->info.size = conn.w.size;
    b->info.node_rank = node;
    b->info.num_nodes = conn.w.nnodes;
    b->info.local_size = n;
    snprintf (b->job_id, sizeof (b->job_id), "local.%lld",
              (long long)conn.w.job);
    return 0;
}

static int lost (char *err, size_t errlen)
{
    return bootstrap_err (err, errlen, DDP_ETRANSPORT, "lost the connection "
                          "to the local launcher");
}

static int local_put (struct bootstrap *b, const char *key,
                      enum bootstrap_scope scope, const void *blob,
                      size_t len, char *err, size_t errlen)
{
    struct lp_put p = { (uint32_t)scope, (uint32_t)strlen (key), len };
    struct iovec iov[3] = { { &p, sizeof (p) }, { (void *)key, p.keylen },
                            { (void *)blob, len } };

    if (lp_send (conn.fd, LP_PUT, iov, 3, ddpi_now () + b->timeout_s) < 0)
        return lost (err, errlen);
    return 0;
}

/* A DONE: keep its blobs for get(). */
static int take_done (struct bootstrap *b, struct lp_cur *c, char *err,
                      size_t errlen)
{
    struct bootstrap_blobs *t = b->priv;
    struct lp_done d;
    char key[LP_KEY_MAX + 1];
    uint32_t i;

    bootstrap_blobs_clear (t);
    if (!lp_take (c, &d, sizeof (d)) || lp_take_key (c, d.keylen, key) < 0)
        return bootstrap_err (err, errlen, DDP_ETRANSPORT, "a malformed "
                              "answer from the local launcher");
    for (i = 0; i < d.nblobs; i++) {
        struct lp_blob e;
        const void *data;
        if (!lp_take (c, &e, sizeof (e)) || lp_take_key (c, e.keylen, key) < 0
            || e.len > BOOTSTRAP_MAX_BLOB
            || !(data = lp_take (c, NULL, (size_t)e.len)))
            return bootstrap_err (err, errlen, DDP_ETRANSPORT, "a malformed "
                                  "blob from the local launcher");
        if (bootstrap_blobs_add (t, e.rank, key, data, (size_t)e.len) < 0)
            return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory "
                                  "(or blobs out of order)");
    }
    return 0;
}

/* A FAIL: the message for the ranks it names. */
static int take_fail (struct bootstrap *b, struct lp_cur *c, char *err,
                      size_t errlen)
{
    struct lp_fail f;
    char key[LP_KEY_MAX + 1], list[256], text[LP_TEXT_MAX + 1];
    int ranks[64], n;

    if (!lp_take (c, &f, sizeof (f)) || lp_take_key (c, f.keylen, key) < 0
        || f.nranks < 0 || f.nranks > 64 || f.textlen > LP_TEXT_MAX
        || !lp_take (c, ranks, (size_t)f.nranks * sizeof (int32_t))
        || !lp_take (c, text, f.textlen))
        return bootstrap_err (err, errlen, DDP_ETRANSPORT, "a malformed "
                              "failure from the local launcher");
    text[f.textlen] = '\0';
    n = f.nranks;
    ddpi_format_ranks (list, sizeof (list), ranks, n);
    if (f.kind == LP_FAIL_TIMEOUT)
        return bootstrap_err (err, errlen, DDP_ETIMEDOUT, "rank%s %s did not "
                              "reach ddp_init within %g s (%s): %s",
                              n > 1 ? "s" : "", list, b->timeout_s,
                              b->timeout_name, text);
    if (f.kind == LP_FAIL_GONE)
        return bootstrap_err (err, errlen, DDP_EPEER, "rank%s %s never "
                              "reached ddp_init: %s", n > 1 ? "s" : "", list,
                              text);
    return bootstrap_err (err, errlen, DDP_EMISMATCH, "rank%s %s %s",
                          n > 1 ? "s" : "", list, text);
}

static int local_sync (struct bootstrap *b, const char *key, bool collect,
                       char *err, size_t errlen)
{
    struct lp_sync s = { collect, (uint32_t)strlen (key), b->timeout_s };
    struct iovec iov[2] = { { &s, sizeof (s) }, { (void *)key, s.keylen } };
    double end = ddpi_now () + b->timeout_s + SYNC_SLACK;
    uint32_t type = 0;
    void *buf = NULL;
    size_t len = 0, max = (size_t)b->info.size * (BOOTSTRAP_MAX_BLOB + 128)
                          + 4096;
    int rc;

    if (lp_send (conn.fd, LP_SYNC, iov, 2, end) < 0)
        return lost (err, errlen);
    if (lp_recv (conn.fd, &type, &buf, &len, max, end) < 0)
        return ddpi_now () < end ? lost (err, errlen)
            : bootstrap_err (err, errlen, DDP_ETIMEDOUT, "not every rank "
                             "reached ddp_init within %g s (%s), and the "
                             "local launcher did not say who",
                             b->timeout_s, b->timeout_name);
    struct lp_cur c = { buf, len };
    if (type == LP_DONE)
        rc = take_done (b, &c, err, errlen);
    else if (type == LP_FAIL)
        rc = take_fail (b, &c, err, errlen);
    else
        rc = bootstrap_err (err, errlen, DDP_ETRANSPORT, "an unexpected "
                            "message (type %u) from the local launcher",
                            type);
    free (buf);
    return rc;
}

static int local_node_ranks (struct bootstrap *b, int node, int *ranks,
                             int *n, char *err, size_t errlen)
{
    int r;

    (void)err;
    (void)errlen;
    *n = 0;
    for (r = 0; r < b->info.size; r++)
        if (conn.node_of[r] == node)
            ranks[(*n)++] = r;
    return 0;
}

static int local_abort (struct bootstrap *b, int code, const char *msg)
{
    const char *text = msg ? msg : "ddp_abort";
    struct lp_abort a = { code, (uint32_t)strnlen (text, LP_TEXT_MAX) };
    struct iovec iov[2] = { { &a, sizeof (a) }, { (void *)text, a.textlen } };

    if (lp_send (conn.fd, LP_ABORT, iov, 2, ddpi_now () + b->timeout_s) < 0)
        return DDP_ETRANSPORT;
    return 0;
}

/* One text message of type (LP_VICTIM, LP_REASON), sent within 0.1 s. */
static int send_text (uint32_t type, const char *why)
{
    struct lp_victim v = { (uint32_t)strnlen (why, LP_TEXT_MAX), 0 };
    struct iovec iov[2] = { { &v, sizeof (v) }, { (void *)why, v.textlen } };

    return lp_send (conn.fd, type, iov, 2, ddpi_now () + 0.1) < 0
           ? DDP_ETRANSPORT : 0;
}

/* ddp-run names the rank that failed first from these (localjob.c). */
static int local_victim (struct bootstrap *b, const char *why)
{
    (void)b;
    return send_text (LP_VICTIM, why);
}

static int local_reason (struct bootstrap *b, const char *why)
{
    (void)b;
    return send_text (LP_REASON, why);
}

const struct bootstrap_method bootstrap_method_local = {
    .name = "local", .probe = local_probe, .create = local_create,
    .put = local_put, .sync = local_sync, .get = bootstrap_blobs_get,
    .node_ranks = local_node_ranks, .abort = local_abort,
    .victim = local_victim, .reason = local_reason, .destroy = bootstrap_blobs_destroy,
};
