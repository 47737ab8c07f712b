/* local_server.c - the local launcher's server (local_server.h). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap.h"
#include "ddp_internal.h"
#include "local_proto.h"
#include "local_server.h"
#include "method.h"
#include "net.h"

/* A rank whose connection closed while its process is not known to have
 * ended counts as gone this long after (it may just be ending). */
#define CLOSE_GRACE 0.5
/* Bound on one message in or out (the ranks are on this machine). */
#define IO_BOUND 5.0
/* Largest message a rank sends: a put of the largest blob. */
#define MAX_IN (BOOTSTRAP_MAX_BLOB + sizeof (struct lp_put) + LP_KEY_MAX + 64)

struct put {
    uint32_t scope;
    char key[LP_KEY_MAX + 1];
    size_t len;
    char *data;
};

struct lrank {
    int fd;                 /* -1 once closed */
    double closed_at;       /* when it closed (0: open) */
    bool ended;             /* its process ended, with status */
    int status;
    bool victim;            /* it said another rank failed its calls */
    char why[LP_TEXT_MAX + 1];  /* its words for that ("": none) */
    char reason[LP_TEXT_MAX + 1];   /* why it ends badly ("": not said) */
    bool arrived;           /* synced the open round */
    unsigned long done;     /* rounds it completed */
    struct put *puts;
    int nputs;
    size_t puts_cap;
};

struct ddpi_lserver {
    int size, nnodes;
    int *node_of;
    long job;
    char name[64];
    struct lrank *r;
    struct pollfd *pfd;
    struct {
        bool open;
        char key[LP_KEY_MAX + 1];
        bool collect;
        int narrived;
        double deadline;
        unsigned long index;    /* rounds completed before it */
    } round;
    struct {
        char key[LP_KEY_MAX + 1];   /* "" when no round failed */
        struct lp_fail f;
        int32_t ranks[64];
        char text[LP_TEXT_MAX];
    } fail;
    bool aborted;
    int abort_rank, abort_code;
};

char *ddpi_lserver_status_str (int st, char *buf, size_t len)
{
    if (WIFEXITED (st))
        snprintf (buf, len, "exited with status %d", WEXITSTATUS (st));
    else if (WIFSIGNALED (st))
        snprintf (buf, len, "killed by signal %d (%s)", WTERMSIG (st),
                  strsignal (WTERMSIG (st)));
    else
        snprintf (buf, len, "ended (wait status %#x)", (unsigned)st);
    return buf;
}

static bool layout_ok (int size, int nnodes, const int *node_of)
{
    bool *used = calloc ((size_t)nnodes, sizeof (bool));
    int r, n, ok = used != NULL;

    for (r = 0; ok && r < size; r++) {
        if (node_of[r] < 0 || node_of[r] >= nnodes)
            ok = 0;
        else
            used[node_of[r]] = true;
    }
    for (n = 0; ok && n < nnodes; n++)
        if (!used[n])
            ok = 0;
    free (used);
    return ok;
}

struct ddpi_lserver *ddpi_lserver_create (int size, int nnodes,
                                          const int *node_of, const int *fds,
                                          long job, const char *name)
{
    struct ddpi_lserver *s;
    int r;

    if (size < 1 || nnodes < 1 || nnodes > size
        || !layout_ok (size, nnodes, node_of)) {
        errno = EINVAL;
        return NULL;
    }
    if (!(s = calloc (1, sizeof (*s)))
        || !(s->node_of = calloc ((size_t)size, sizeof (int)))
        || !(s->r = calloc ((size_t)size, sizeof (*s->r)))
        || !(s->pfd = calloc ((size_t)size, sizeof (*s->pfd)))) {
        ddpi_lserver_destroy (s);
        errno = ENOMEM;
        return NULL;
    }
    s->size = size;
    s->nnodes = nnodes;
    s->job = job;
    snprintf (s->name, sizeof (s->name), "%s", name ? name : "ddp-local");
    memcpy (s->node_of, node_of, (size_t)size * sizeof (int));
    for (r = 0; r < size; r++) {
        s->r[r].fd = fds[r];
        (void)ddpi_set_nonblock (fds[r]);
    }
    return s;
}

static void drop_puts (struct lrank *x, const char *round)
{
    size_t n = strlen (round);
    int i, j = 0;

    for (i = 0; i < x->nputs; i++) {
        if (!round[0] || (strncmp (x->puts[i].key, round, n) == 0
                          && x->puts[i].key[n] == '.'))
            free (x->puts[i].data);
        else
            x->puts[j++] = x->puts[i];
    }
    x->nputs = j;
}

static void close_rank (struct ddpi_lserver *s, int r)
{
    if (s->r[r].fd >= 0) {
        close (s->r[r].fd);
        s->r[r].fd = -1;
        s->r[r].closed_at = ddpi_now ();
    }
}

void ddpi_lserver_destroy (struct ddpi_lserver *s)
{
    int r;

    if (!s)
        return;
    for (r = 0; s->r && r < s->size; r++) {
        close_rank (s, r);
        drop_puts (&s->r[r], "");
        free (s->r[r].puts);
    }
    free (s->r);
    free (s->pfd);
    free (s->node_of);
    free (s);
}

/* Will rank r never come to the open round? */
static bool gone (struct ddpi_lserver *s, int r)
{
    struct lrank *x = &s->r[r];

    return x->ended
           || (x->fd < 0 && ddpi_now () - x->closed_at > CLOSE_GRACE);
}

static void send_to (struct ddpi_lserver *s, int r, uint32_t type,
                     const struct iovec *iov, int n)
{
    if (s->r[r].fd >= 0
        && lp_send (s->r[r].fd, type, iov, n, ddpi_now () + IO_BOUND) < 0)
        close_rank (s, r);
}

static void send_fail (struct ddpi_lserver *s, int r)
{
    struct iovec iov[4] = {
        { &s->fail.f, sizeof (s->fail.f) },
        { s->fail.key, s->fail.f.keylen },
        { s->fail.ranks, (size_t)s->fail.f.nranks * sizeof (int32_t) },
        { s->fail.text, s->fail.f.textlen },
    };
    send_to (s, r, LP_FAIL, iov, 4);
}

/* Fail the open round for every rank in it: kind, the ranks at fault
 * (at[] of n, ascending), text. */
static void fail_round (struct ddpi_lserver *s, int kind, const int *at, int n,
                        const char *text)
{
    int r, i;

    snprintf (s->fail.key, sizeof (s->fail.key), "%s", s->round.key);
    snprintf (s->fail.text, sizeof (s->fail.text), "%s", text);
    s->fail.f.kind = kind;
    s->fail.f.nranks = n < 64 ? n : 64;
    s->fail.f.keylen = (uint32_t)strlen (s->fail.key);
    s->fail.f.textlen = (uint32_t)strlen (s->fail.text);
    for (i = 0; i < s->fail.f.nranks; i++)
        s->fail.ranks[i] = at[i];
    fprintf (stderr, "%s: bootstrap round %s failed: %s\n", s->name,
             s->round.key, text);
    for (r = 0; r < s->size; r++)
        if (s->r[r].arrived) {
            send_fail (s, r);
            s->r[r].arrived = false;
        }
    s->round.open = false;
}

/* Send rank r the round's blobs it may see. */
static void send_done (struct ddpi_lserver *s, int r)
{
    size_t kl = strlen (s->round.key), nblobs = 0, k = 0;
    struct lp_done d = { (uint32_t)kl, 0 };
    struct iovec *iov;
    struct lp_blob *hdr;
    int src, i;

    for (src = 0; s->round.collect && src < s->size; src++)
        nblobs += (size_t)s->r[src].nputs;
    iov = calloc (2 + 3 * nblobs, sizeof (*iov));
    hdr = calloc (nblobs ? nblobs : 1, sizeof (*hdr));
    if (!iov || !hdr) {
        close_rank (s, r);  /* it then fails on its own */
        goto out;
    }
    iov[k++] = (struct iovec){ &d, sizeof (d) };
    iov[k++] = (struct iovec){ s->round.key, kl };
    for (src = 0; s->round.collect && src < s->size; src++)
        for (i = 0; i < s->r[src].nputs; i++) {
            struct put *p = &s->r[src].puts[i];
            if (strncmp (p->key, s->round.key, kl) != 0 || p->key[kl] != '.'
                || (p->scope == BOOTSTRAP_LOCAL
                    && s->node_of[src] != s->node_of[r]))
                continue;
            hdr[d.nblobs] = (struct lp_blob){ src, (uint32_t)strlen (p->key),
                                              p->len };
            iov[k++] = (struct iovec){ &hdr[d.nblobs], sizeof (*hdr) };
            iov[k++] = (struct iovec){ p->key, hdr[d.nblobs].keylen };
            iov[k++] = (struct iovec){ p->data, p->len };
            d.nblobs++;
        }
    send_to (s, r, LP_DONE, iov, (int)k);
out:
    free (iov);
    free (hdr);
}

static void complete_round (struct ddpi_lserver *s)
{
    int r;

    for (r = 0; r < s->size; r++) {
        send_done (s, r);
        s->r[r].arrived = false;
        s->r[r].done++;
    }
    for (r = 0; r < s->size; r++)
        drop_puts (&s->r[r], s->round.key);
    s->round.open = false;
    s->round.index++;
}

/* "rank 3 killed by signal 9; rank 5 still running" for the ranks at[]. */
static void describe (struct ddpi_lserver *s, const int *at, int n,
                      char *text, size_t len)
{
    size_t off = 0;
    char st[96];
    int i;

    text[0] = '\0';
    for (i = 0; i < n && off + 1 < len; i++) {
        const struct lrank *x = &s->r[at[i]];
        const char *what = x->ended ? ddpi_lserver_status_str (x->status, st,
                                                               sizeof (st))
                           : x->fd < 0 ? "closed its connection to the "
                                         "launcher"
                           : "still running (the launcher sees it alive)";
        int k = snprintf (text + off, len - off, "%srank %d %s",
                          i ? "; " : "", at[i], what);
        if (k < 0)
            break;
        off += (size_t)k;
    }
}

/* Complete or fail the open round when its time has come. */
static void check_round (struct ddpi_lserver *s)
{
    char text[LP_TEXT_MAX];
    int *at, n = 0, r;

    if (!s->round.open)
        return;
    if (s->round.narrived == s->size) {
        complete_round (s);
        return;
    }
    if (!(at = calloc ((size_t)s->size, sizeof (int))))
        return;
    for (r = 0; r < s->size; r++)
        if (!s->r[r].arrived && gone (s, r))
            at[n++] = r;
    if (n > 0) {
        describe (s, at, n, text, sizeof (text));
        fail_round (s, LP_FAIL_GONE, at, n, text);
    }
    else if (ddpi_now () >= s->round.deadline) {
        for (r = 0; r < s->size; r++)
            if (!s->r[r].arrived)
                at[n++] = r;
        describe (s, at, n, text, sizeof (text));
        fail_round (s, LP_FAIL_TIMEOUT, at, n, text);
    }
    free (at);
}

static void on_hello (struct ddpi_lserver *s, int r)
{
    struct lp_welcome w = { r, s->size, s->nnodes, 0, s->job };
    int32_t *map = calloc ((size_t)s->size, sizeof (int32_t));
    struct iovec iov[2] = { { &w, sizeof (w) },
                            { map, (size_t)s->size * sizeof (int32_t) } };

    if (!map) {
        close_rank (s, r);
        return;
    }
    for (int i = 0; i < s->size; i++)
        map[i] = s->node_of[i];
    send_to (s, r, LP_WELCOME, iov, 2);
    free (map);
}

static int on_put (struct ddpi_lserver *s, int r, struct lp_cur *c)
{
    struct lrank *x = &s->r[r];
    struct lp_put p;
    struct put e = { 0 }, *np;
    const void *data;

    if (!lp_take (c, &p, sizeof (p)) || p.len > BOOTSTRAP_MAX_BLOB
        || (p.scope != BOOTSTRAP_GLOBAL && p.scope != BOOTSTRAP_LOCAL)
        || lp_take_key (c, p.keylen, e.key) < 0
        || !(data = lp_take (c, NULL, (size_t)p.len)) || c->left != 0
        || !(np = ddpi_grow (x->puts, (size_t)x->nputs, &x->puts_cap,
                             sizeof (*np))))
        return -1;
    x->puts = np;
    /* Filled, then stored whole (gcc 12's -fanalyzer reports a buffer
     * malloc'd straight into the table as leaked). */
    if (!(e.data = malloc (p.len ? (size_t)p.len : 1)))
        return -1;
    memcpy (e.data, data, (size_t)p.len);
    e.len = (size_t)p.len;
    e.scope = p.scope;
    x->puts[x->nputs++] = e;
    return 0;
}

/* A rank came to another round than the open one, or to it with another
 * call (a fence where the others exchange). */
static void mismatch (struct ddpi_lserver *s, int r, const char *key,
                      bool collect)
{
    char text[LP_TEXT_MAX];

    snprintf (text, sizeof (text), "came to bootstrap round %s (%s) while "
              "others are in round %s (%s): the ranks do not make the same "
              "set-up calls in the same order", key,
              collect ? "an exchange" : "a fence", s->round.key,
              s->round.collect ? "an exchange" : "a fence");
    s->r[r].arrived = true;
    fail_round (s, LP_FAIL_MISMATCH, &r, 1, text);
}

static int on_sync (struct ddpi_lserver *s, int r, struct lp_cur *c)
{
    struct lp_sync y;
    char key[LP_KEY_MAX + 1];
    double now = ddpi_now ();

    if (!lp_take (c, &y, sizeof (y)) || lp_take_key (c, y.keylen, key) < 0
        || c->left != 0 || !(y.timeout_s > 0) || s->r[r].arrived)
        return -1;
    if (!s->round.open && strcmp (key, s->fail.key) == 0) {
        send_fail (s, r);
        return 0;
    }
    if (s->round.open && (strcmp (key, s->round.key) != 0
                          || s->round.collect != (y.collect != 0))) {
        mismatch (s, r, key, y.collect != 0);
        return 0;
    }
    if (!s->round.open) {
        s->round.open = true;
        snprintf (s->round.key, sizeof (s->round.key), "%s", key);
        s->round.collect = y.collect != 0;
        s->round.narrived = 0;
        s->round.deadline = now + y.timeout_s;
    }
    if (now + y.timeout_s < s->round.deadline)
        s->round.deadline = now + y.timeout_s;
    s->r[r].arrived = true;
    s->round.narrived++;
    return 0;
}

static void on_abort (struct ddpi_lserver *s, int r, struct lp_cur *c)
{
    struct lp_abort a;
    char text[LP_TEXT_MAX + 1] = "";

    if (lp_take (c, &a, sizeof (a)) && a.textlen <= LP_TEXT_MAX
        && lp_take (c, text, a.textlen))
        text[a.textlen] = '\0';
    else
        a.code = 1;
    fprintf (stderr, "%s: rank %d aborted the job (status %d): %s\n",
             s->name, r, (int)a.code, text);
    if (!s->aborted) {
        s->aborted = true;
        s->abort_rank = r;
        s->abort_code = a.code;
    }
}

static int on_victim (struct ddpi_lserver *s, int r, struct lp_cur *c)
{
    struct lp_victim v;
    const char *text;

    if (!lp_take (c, &v, sizeof (v)) || v.textlen > LP_TEXT_MAX
        || !(text = lp_take (c, NULL, v.textlen)))
        return -1;
    if (s->r[r].victim)
        return 0;       /* the first failure is the one that counts */
    s->r[r].victim = true;
    memcpy (s->r[r].why, text, v.textlen);
    s->r[r].why[v.textlen] = '\0';
    return 0;
}

/* Why rank r ends badly: the first reason it gives counts. */
static int on_reason (struct ddpi_lserver *s, int r, struct lp_cur *c)
{
    struct lp_victim v;
    const char *text;

    if (!lp_take (c, &v, sizeof (v)) || v.textlen > LP_TEXT_MAX
        || !(text = lp_take (c, NULL, v.textlen)))
        return -1;
    if (s->r[r].reason[0] == '\0') {
        memcpy (s->r[r].reason, text, v.textlen);
        s->r[r].reason[v.textlen] = '\0';
    }
    return 0;
}

/* Read and handle one message of rank r; a bad one closes it. */
static void on_message (struct ddpi_lserver *s, int r)
{
    uint32_t type = 0;
    void *buf = NULL;
    size_t len = 0;
    int rc = 0;

    if (lp_recv (s->r[r].fd, &type, &buf, &len, MAX_IN,
                 ddpi_now () + IO_BOUND) < 0) {
        close_rank (s, r);
        return;
    }
    struct lp_cur c = { buf, len };
    switch (type) {
    case LP_HELLO: on_hello (s, r); break;
    case LP_PUT: rc = on_put (s, r, &c); break;
    case LP_SYNC: rc = on_sync (s, r, &c); break;
    case LP_ABORT: on_abort (s, r, &c); break;
    case LP_VICTIM: rc = on_victim (s, r, &c); break;
    case LP_REASON: rc = on_reason (s, r, &c); break;
    default: rc = -1; break;
    }
    free (buf);
    if (rc < 0) {
        fprintf (stderr, "%s: rank %d sent a malformed message (type %u): "
                 "closing its connection\n", s->name, r, type);
        close_rank (s, r);
    }
}

int ddpi_lserver_serve (struct ddpi_lserver *s, double wait_s)
{
    int r, open = 0;
    int ms = wait_s > 0 ? (int)(wait_s * 1000) : 0;

    for (r = 0; r < s->size; r++) {
        s->pfd[r].fd = s->r[r].fd;  /* poll skips negative fds */
        s->pfd[r].events = POLLIN;
        s->pfd[r].revents = 0;
    }
    if (s->round.open) {
        int left = (int)((s->round.deadline - ddpi_now ()) * 1000) + 1;
        if (left < ms)
            ms = left > 0 ? left : 0;
    }
    if (poll (s->pfd, (nfds_t)s->size, ms) > 0)
        for (r = 0; r < s->size; r++)
            if (s->pfd[r].revents && s->r[r].fd >= 0)
                on_message (s, r);
    check_round (s);
    for (r = 0; r < s->size; r++)
        if (s->r[r].fd >= 0)
            open++;
    return open;
}

void ddpi_lserver_drain (struct ddpi_lserver *s, int rank)
{
    struct pollfd p;
    int n;

    if (rank < 0 || rank >= s->size)
        return;
    for (n = 0; n < 64 && s->r[rank].fd >= 0 && !s->aborted; n++) {
        p.fd = s->r[rank].fd;
        p.events = POLLIN;
        p.revents = 0;
        if (poll (&p, 1, 0) <= 0)
            break;
        on_message (s, rank);
    }
    check_round (s);
}

void ddpi_lserver_ended (struct ddpi_lserver *s, int rank, int st)
{
    if (rank < 0 || rank >= s->size)
        return;
    s->r[rank].ended = true;
    s->r[rank].status = st;
    check_round (s);
}

const char *ddpi_lserver_victim (struct ddpi_lserver *s, int rank)
{
    if (rank < 0 || rank >= s->size || !s->r[rank].victim)
        return NULL;
    return s->r[rank].why;
}

const char *ddpi_lserver_reason (struct ddpi_lserver *s, int rank)
{
    if (rank < 0 || rank >= s->size || s->r[rank].reason[0] == '\0')
        return NULL;
    return s->r[rank].reason;
}

bool ddpi_lserver_aborted (struct ddpi_lserver *s, int *rank, int *code)
{
    if (!s->aborted)
        return false;
    *rank = s->abort_rank;
    *code = s->abort_code;
    return true;
}
