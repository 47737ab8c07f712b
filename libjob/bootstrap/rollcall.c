/* rollcall.c - pool the nodes' views of who never reached ddp_init
 * (rollcall.h).
 *
 * Wire format (host byte order: every party runs the same library on the
 * same kind of machine, and the magic would not match otherwise):
 *   report: struct report, then nlocal int32 ranks, then nmissing int32;
 *   answer: struct answer, then the listed missing, then the listed
 *           unheard ranks (int32 each).
 * A reporter sends its report in one send() and waits for the answer; the
 * hub answers every reporter at once when every node has reported and
 * every rank seen arriving has called in, or when its window ends.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "net.h"
#include "rollcall.h"

#define REPORT_MAGIC 0x6464702d726f6c6cULL  /* "ddp-roll" */
#define ANSWER_MAGIC 0x6464702d72616e73ULL  /* "ddp-rans" */
#define REPORT_MAX_RANKS 65536  /* ranks of one node in a report */
#define HUB_MAX_CLIENTS 1024    /* reporters the hub answers; others wait
                                   out their window and keep their view */

struct report {
    uint64_t magic;
    uint64_t tag;
    uint32_t node, nlocal, nmissing, pad;
};

struct answer {
    uint64_t magic;
    uint64_t tag;
    int32_t nmissing, nmissing_listed, nunheard, nunheard_listed;
};

int ddpi_tally_init (struct ddpi_tally *t, int size, int nnodes)
{
    memset (t, 0, sizeof (*t));
    t->size = size;
    t->nnodes = nnodes;
    t->state = calloc ((size_t)size, 1);
    t->heard = calloc ((size_t)nnodes, sizeof (bool));
    return t->state && t->heard ? 0 : -1;
}

void ddpi_tally_free (struct ddpi_tally *t)
{
    free (t->state);
    free (t->heard);
    t->state = NULL;
    t->heard = NULL;
}

int ddpi_tally_add (struct ddpi_tally *t, int node, const int32_t *ranks,
                    int n, const int32_t *missing, int m)
{
    int i;

    if (node < 0 || node >= t->nnodes || n < 1 || n > t->size || m < 0
        || m > n)
        return -1;
    for (i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= t->size)
            return -1;
    for (i = 0; i < m; i++)
        if (!ddpi_rank_in (ranks, n, missing[i]))
            return -1;
    for (i = 0; i < n; i++) {
        bool gone = ddpi_rank_in (missing, m, ranks[i]);
        if (!gone)
            t->state[ranks[i]] = RANK_PRESENT;
        else if (t->state[ranks[i]] != RANK_PRESENT)
            t->state[ranks[i]] = RANK_MISSING;
    }
    if (!t->heard[node]) {
        t->heard[node] = true;
        t->nheard++;
    }
    return 0;
}

int ddpi_tally_list (const struct ddpi_tally *t, int st, int32_t *out,
                     int max)
{
    int r, n = 0;

    for (r = 0; r < t->size; r++) {
        if (t->state[r] != st)
            continue;
        if (n < max)
            out[n] = r;
        n++;
    }
    return n;
}

/* MASTER_ADDR and MASTER_PORT as a socket address.  Returns 0 or -1. */
static int hub_address (struct sockaddr_in *sin)
{
    const char *addr = getenv ("MASTER_ADDR");
    const char *port = getenv ("MASTER_PORT");
    long p;

    memset (sin, 0, sizeof (*sin));
    sin->sin_family = AF_INET;
    if (!addr || !port || ddpi_parse_long (port, 1, 65535, &p) < 0
        || inet_pton (AF_INET, addr, &sin->sin_addr) != 1)
        return -1;
    sin->sin_port = htons ((uint16_t)p);
    return 0;
}

/* Node 0: listen on MASTER_PORT unless someone else does.  Returns the
 * listening socket, or -1. */
static int hub_listen (const struct sockaddr_in *hub)
{
    struct sockaddr_in any = *hub;
    int one = 1;
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0)
        return -1;
    any.sin_addr.s_addr = htonl (INADDR_ANY);
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    if (bind (fd, (struct sockaddr *)&any, sizeof (any)) < 0
        || listen (fd, HUB_MAX_CLIENTS) < 0) {
        close (fd);
        return -1;
    }
    return fd;
}

_Static_assert (sizeof (struct report) == ROLLCALL_REPORT_HDR,
                "rollcall.h announces the report header's size");

size_t ddpi_report_len (const void *hdr, uint64_t tag)
{
    struct report rp;

    memcpy (&rp, hdr, sizeof (rp));
    if (rp.magic != REPORT_MAGIC || rp.tag != tag || rp.nlocal < 1
        || rp.nlocal > REPORT_MAX_RANKS || rp.nmissing > rp.nlocal)
        return 0;
    return sizeof (rp) + ((size_t)rp.nlocal + rp.nmissing) * sizeof (int32_t);
}

int ddpi_report_add (struct ddpi_tally *t, uint64_t tag, const void *buf,
                     size_t len)
{
    struct report rp;
    int32_t *ranks;
    size_t n;
    int rc;

    if (len < sizeof (rp) || ddpi_report_len (buf, tag) != len)
        return -1;
    memcpy (&rp, buf, sizeof (rp));
    n = (size_t)rp.nlocal + rp.nmissing;
    if (!(ranks = malloc (n * sizeof (int32_t))))
        return -1;
    memcpy (ranks, (const char *)buf + sizeof (rp), n * sizeof (int32_t));
    rc = ddpi_tally_add (t, (int)rp.node, ranks, (int)rp.nlocal,
                         ranks + rp.nlocal, (int)rp.nmissing);
    free (ranks);
    return rc;
}

/* Read one report from fd (by end) and add it to t.  Returns 0 or -1. */
static int report_in (int fd, const struct ddpi_rollcall_in *in,
                      struct ddpi_tally *t, double end)
{
    char hdr[sizeof (struct report)], *buf = NULL;
    size_t len;
    int rc = -1;

    if (ddpi_io_full (fd, hdr, sizeof (hdr), false, end) == 0
        && (len = ddpi_report_len (hdr, in->tag)) > 0
        && (buf = malloc (len))) {
        memcpy (buf, hdr, sizeof (hdr));
        if (ddpi_io_full (fd, buf + sizeof (hdr), len - sizeof (hdr), false,
                          end) == 0)
            rc = ddpi_report_add (t, in->tag, buf, len);
    }
    free (buf);
    return rc;
}

/* How many of n ranks an answer lists. */
static int listed_of (int n)
{
    return n < ROLLCALL_LIST_MAX ? n : ROLLCALL_LIST_MAX;
}

/* The answer to everyone, from the tally. */
static size_t answer_fill (const struct ddpi_tally *t, uint64_t tag,
                           char *buf)
{
    struct answer a = { ANSWER_MAGIC, tag, 0, 0, 0, 0 };
    int32_t *list = (int32_t *)(buf + sizeof (a));

    a.nmissing = ddpi_tally_list (t, RANK_MISSING, list, ROLLCALL_LIST_MAX);
    a.nmissing_listed = listed_of (a.nmissing);
    a.nunheard = ddpi_tally_list (t, RANK_UNHEARD, list + a.nmissing_listed,
                                  ROLLCALL_LIST_MAX);
    a.nunheard_listed = listed_of (a.nunheard);
    memcpy (buf, &a, sizeof (a));
    return sizeof (a) + (size_t)(a.nmissing_listed + a.nunheard_listed)
                        * sizeof (int32_t);
}

int ddpi_answer_parse (const void *buf, size_t len, uint64_t tag, int size,
                       struct ddpi_rollcall *out)
{
    const char *lists = (const char *)buf + sizeof (struct answer);
    struct answer a;
    int i;

    if (len < sizeof (a))
        return -1;
    memcpy (&a, buf, sizeof (a));
    if (a.magic != ANSWER_MAGIC || a.tag != tag
        || a.nmissing < 0 || a.nmissing > size
        || a.nunheard < 0 || a.nunheard > size
        || a.nmissing_listed != listed_of (a.nmissing)
        || a.nunheard_listed != listed_of (a.nunheard)
        || len != sizeof (a) + (size_t)(a.nmissing_listed
                                        + a.nunheard_listed)
                               * sizeof (int32_t))
        return -1;
    out->nmissing = a.nmissing;
    out->nmissing_listed = a.nmissing_listed;
    memcpy (out->missing, lists, (size_t)a.nmissing_listed * sizeof (int32_t));
    out->nunheard = a.nunheard;
    out->nunheard_listed = a.nunheard_listed;
    memcpy (out->unheard, lists + (size_t)a.nmissing_listed * sizeof (int32_t),
            (size_t)a.nunheard_listed * sizeof (int32_t));
    for (i = 0; i < a.nmissing_listed; i++)
        if (out->missing[i] < 0 || out->missing[i] >= size)
            return -1;
    for (i = 0; i < a.nunheard_listed; i++)
        if (out->unheard[i] < 0 || out->unheard[i] >= size)
            return -1;
    return 0;
}

/* This node's report, in one malloc'd buffer; *len its size. */
static char *report_make (const struct ddpi_rollcall_in *in, size_t *len)
{
    struct report rp = { REPORT_MAGIC, in->tag, (uint32_t)in->node,
                         (uint32_t)in->local_size, (uint32_t)in->nmissing, 0 };
    int32_t *list;
    char *buf;
    int i;

    *len = sizeof (rp) + (size_t)(in->local_size + in->nmissing)
                         * sizeof (int32_t);
    if (!(buf = malloc (*len)))
        return NULL;
    memcpy (buf, &rp, sizeof (rp));
    list = (int32_t *)(buf + sizeof (rp));
    for (i = 0; i < in->local_size; i++)
        list[i] = in->local_ranks[i];
    for (i = 0; i < in->nmissing; i++)
        list[in->local_size + i] = in->missing[i];
    return buf;
}

/* The hub: gather reports on lfd, then answer every reporter. */
static int hub_run (const struct ddpi_rollcall_in *in, int lfd,
                    struct ddpi_rollcall *out)
{
    struct ddpi_tally t;
    int *fds = calloc (HUB_MAX_CLIENTS, sizeof (int));
    char *ans = malloc (sizeof (struct answer)
                        + 2 * ROLLCALL_LIST_MAX * sizeof (int32_t));
    double end = ddpi_now () + in->window;
    int nfds = 0, rc = -1, i;
    size_t len;

    if (ddpi_tally_init (&t, in->size, in->nnodes) < 0 || !fds || !ans
        || ddpi_tally_add (&t, in->node, in->local_ranks, in->local_size,
                           in->missing, in->nmissing) < 0)
        goto out;
    while (ddpi_now () < end) {
        struct pollfd p = { lfd, POLLIN, 0 };
        int fd;

        /* Everyone in: every node reported, every rank seen arriving
         * (ourselves included) called in. */
        if (t.nheard == t.nnodes
            && nfds + 1 >= ddpi_tally_list (&t, RANK_PRESENT, NULL, 0))
            break;
        if (poll (&p, 1, 10) <= 0)
            continue;
        fd = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            continue;
        if (nfds < HUB_MAX_CLIENTS
            && report_in (fd, in, &t, ddpi_now () + 0.2) == 0)
            fds[nfds++] = fd;
        else
            close (fd);
    }
    len = answer_fill (&t, in->tag, ans);
    end = ddpi_now () + 0.5;
    for (i = 0; i < nfds; i++)
        (void)ddpi_io_full (fds[i], ans, len, true, end);
    rc = ddpi_answer_parse (ans, len, in->tag, in->size, out);
out:
    for (i = 0; fds && i < nfds; i++)
        close (fds[i]);
    free (fds);
    free (ans);
    ddpi_tally_free (&t);
    return rc;
}

/* Connect to the hub, retrying until end (it may not be up yet).  Returns
 * a connected non-blocking socket, or -1. */
static int hub_connect (const struct sockaddr_in *hub, double end)
{
    while (ddpi_now () < end) {
        struct timespec nap = { 0, 50 * 1000 * 1000 };
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         0);
        int err = 0;
        socklen_t el = sizeof (err);

        if (fd < 0)
            return -1;
        if (connect (fd, (const struct sockaddr *)hub, sizeof (*hub)) == 0)
            return fd;
        if (errno == EINPROGRESS) {
            struct pollfd p = { fd, POLLOUT, 0 };
            double left = end - ddpi_now ();
            if (left > 0 && poll (&p, 1, (int)(left * 1000) + 1) == 1
                && getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0
                && err == 0)
                return fd;
        }
        close (fd);
        nanosleep (&nap, NULL);
    }
    return -1;
}

/* A reporter: send our report, read the answer. */
static int report_run (const struct ddpi_rollcall_in *in,
                       const struct sockaddr_in *hub,
                       struct ddpi_rollcall *out)
{
    double end = ddpi_now () + in->window + 0.5;
    size_t len, alen = sizeof (struct answer);
    char *rep = report_make (in, &len);
    char *ans = malloc (sizeof (struct answer)
                        + 2 * ROLLCALL_LIST_MAX * sizeof (int32_t));
    struct answer a;
    int fd = -1, rc = -1;

    if (!rep || !ans || (fd = hub_connect (hub, end)) < 0
        || ddpi_io_full (fd, rep, len, true, end) < 0
        || ddpi_io_full (fd, ans, alen, false, end) < 0)
        goto out;
    memcpy (&a, ans, sizeof (a));
    if (a.nmissing_listed < 0 || a.nmissing_listed > ROLLCALL_LIST_MAX
        || a.nunheard_listed < 0 || a.nunheard_listed > ROLLCALL_LIST_MAX)
        goto out;
    alen += (size_t)(a.nmissing_listed + a.nunheard_listed) * sizeof (int32_t);
    if (ddpi_io_full (fd, ans + sizeof (a), alen - sizeof (a), false,
                      end) < 0)
        goto out;
    rc = ddpi_answer_parse (ans, alen, in->tag, in->size, out);
out:
    if (fd >= 0)
        close (fd);
    free (rep);
    free (ans);
    return rc;
}

int ddpi_rollcall_run (const struct ddpi_rollcall_in *in,
                       struct ddpi_rollcall *out)
{
    struct sockaddr_in hub;
    int lfd, rc;

    if (in->local_size < 1 || in->local_size > REPORT_MAX_RANKS
        || in->nmissing < 0 || in->nmissing > in->local_size
        || hub_address (&hub) < 0)
        return -1;
    if (in->node == 0 && (lfd = hub_listen (&hub)) >= 0) {
        ddpi_debug ("roll call: hub on port %d", ntohs (hub.sin_port));
        rc = hub_run (in, lfd, out);
        close (lfd);
        return rc;
    }
    return report_run (in, &hub, out);
}
