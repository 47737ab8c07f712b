/* sp_relay.c - how the nodes of a multi-node step learn the MASTER_PORT
 * its first node chose (sp_relay.h). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sp_relay.h"
#include "sp_strint.h"

#define TOKEN_HEX 32            /* 128 bits */
#define LINE_MAX_LEN 80         /* the longest line either side sends */
#define MAXCONN 256
#define HELLO_MS 5000           /* to say its line */
#define WAIT_MS 120000          /* a GET waiting for the port */

struct conn {
    int fd;
    char buf[LINE_MAX_LEN + 1];
    size_t n;
    bool waiting;               /* a GET with the token, not answered */
    int64_t deadline;
};

struct sp_relay {
    int lfd;
    char token[TOKEN_HEX + 1];
    int port;                   /* -1 until the first node says */
    struct conn c[MAXCONN];
    unsigned n;
};

static int64_t now_ms (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A fresh token of TOKEN_HEX hex digits in BUF.  Returns 0 or -1. */
static int make_token (char *buf)
{
    unsigned char raw[TOKEN_HEX / 2];
    size_t i;

    if (getrandom (raw, sizeof (raw), 0) != (ssize_t) sizeof (raw))
        return -1;
    for (i = 0; i < sizeof (raw); i++)
        snprintf (buf + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* A listening TCP socket on an ephemeral port of every IPv4 address;
 * its port in *PORT.  Returns the descriptor or -1. */
static int listen_any (unsigned *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t len = sizeof (a);
    int fd, e;

    a.sin_addr.s_addr = htonl (INADDR_ANY);
    fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (bind (fd, (struct sockaddr *) &a, sizeof (a)) < 0
        || listen (fd, 64) < 0
        || getsockname (fd, (struct sockaddr *) &a, &len) < 0) {
        e = errno;
        close (fd);
        errno = e;
        return -1;
    }
    *port = ntohs (a.sin_port);
    return fd;
}

struct sp_relay *sp_relay_create (char *spec, size_t len)
{
    struct sp_relay *r;
    unsigned port;
    int e;

    if (!spec || len < SP_RELAY_SPEC_MAX + 1) {
        errno = EINVAL;
        return NULL;
    }
    if (!(r = calloc (1, sizeof (*r))))
        return NULL;
    r->port = -1;
    if (make_token (r->token) < 0 || (r->lfd = listen_any (&port)) < 0) {
        e = errno;
        free (r);
        errno = e;
        return NULL;
    }
    snprintf (spec, len, "%u:%s", port, r->token);
    return r;
}

int sp_relay_port (const struct sp_relay *r)
{
    return r ? r->port : -1;
}

void sp_relay_destroy (struct sp_relay *r)
{
    int e = errno;
    unsigned i;

    if (!r)
        return;
    for (i = 0; i < r->n; i++)
        close (r->c[i].fd);
    close (r->lfd);
    free (r);
    errno = e;
}

/* Send LINE on FD without waiting (a few bytes into an empty socket
 * buffer), then close it. */
static void answer_close (int fd, const char *line)
{
    ssize_t rc = send (fd, line, strlen (line), MSG_NOSIGNAL | MSG_DONTWAIT);

    (void) rc;
    close (fd);
}

/* Answer every waiting GET once the port is known. */
static void answer_waiting (struct sp_relay *r)
{
    char line[32];
    unsigned i;

    snprintf (line, sizeof (line), "PORT %d\n", r->port);
    for (i = 0; i < r->n; i++) {
        if (r->c[i].waiting && r->c[i].fd >= 0) {
            answer_close (r->c[i].fd, line);
            r->c[i].fd = -1;
        }
    }
}

/* Does WORD (LEN bytes) equal the relay's token?  Compared in full. */
static bool token_is (const struct sp_relay *r, const char *word, size_t len)
{
    unsigned char diff = 0;
    size_t i;

    if (len != TOKEN_HEX)
        return false;
    for (i = 0; i < TOKEN_HEX; i++)
        diff |= (unsigned char) (word[i] ^ r->token[i]);
    return diff == 0;
}

/* The complete line of connection C: act on it.  Closes C (fd -1) unless
 * it is a GET that waits for the port. */
static void on_line (struct sp_relay *r, struct conn *c)
{
    char *tok = c->buf + 4, *end;
    unsigned long long port;
    size_t toklen;

    end = strchr (tok, c->buf[0] == 'P' ? ' ' : '\n');
    toklen = end ? (size_t) (end - tok) : 0;
    if (strncmp (c->buf, "GET ", 4) == 0 && end && end[1] == '\0'
        && token_is (r, tok, toklen)) {
        c->waiting = true;
        c->deadline = now_ms () + WAIT_MS;
        if (r->port >= 0)
            answer_waiting (r);
        return;
    }
    if (strncmp (c->buf, "PUT ", 4) == 0 && end && token_is (r, tok, toklen)
        && strchr (end, '\n')) {
        *strchr (end, '\n') = '\0';
        if (sp_parse_uint (end + 1, 0, 65535, &port) == 0) {
            if (r->port < 0)
                r->port = (int) port;
            answer_close (c->fd, "OK\n");
            c->fd = -1;
            answer_waiting (r);
            return;
        }
    }
    close (c->fd);
    c->fd = -1;
}

/* Read what connection C sent; act on a complete line. */
static void on_readable (struct sp_relay *r, struct conn *c)
{
    ssize_t got;

    if (c->waiting) {           /* a waiting GET says nothing more */
        close (c->fd);
        c->fd = -1;
        return;
    }
    got = recv (c->fd, c->buf + c->n, LINE_MAX_LEN - c->n, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (got <= 0) {
        close (c->fd);
        c->fd = -1;
        return;
    }
    c->n += (size_t) got;
    c->buf[c->n] = '\0';
    if (memchr (c->buf, '\n', c->n))
        on_line (r, c);
    else if (c->n == LINE_MAX_LEN) {
        close (c->fd);
        c->fd = -1;
    }
}

/* Make room for a connection: drop the oldest that has not said its line
 * (none: the oldest).  The table is full. */
static void drop_one (struct sp_relay *r)
{
    unsigned i, victim = 0;

    for (i = 0; i < r->n; i++) {
        if (!r->c[i].waiting) {
            victim = i;
            break;
        }
    }
    close (r->c[victim].fd);
    r->c[victim].fd = -1;
}

/* Take the connections out whose descriptor is -1. */
static void compact (struct sp_relay *r)
{
    unsigned i, k = 0;

    for (i = 0; i < r->n; i++)
        if (r->c[i].fd >= 0)
            r->c[k++] = r->c[i];
    r->n = k;
}

/* Accept the connections waiting on the listening socket. */
static void accept_all (struct sp_relay *r)
{
    int fd;

    while ((fd = accept4 (r->lfd, NULL, NULL,
                          SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
        if (r->n == MAXCONN) {
            drop_one (r);
            compact (r);
        }
        memset (&r->c[r->n], 0, sizeof (r->c[r->n]));
        r->c[r->n].fd = fd;
        r->c[r->n].deadline = now_ms () + HELLO_MS;
        r->n++;
    }
}

/* Close the connections past their deadline. */
static void expire (struct sp_relay *r)
{
    int64_t now = now_ms ();
    unsigned i;

    for (i = 0; i < r->n; i++) {
        if (r->c[i].fd >= 0 && r->c[i].deadline <= now) {
            close (r->c[i].fd);
            r->c[i].fd = -1;
        }
    }
}

int sp_relay_serve (struct sp_relay *r, int stop_fd)
{
    struct pollfd p[MAXCONN + 2];
    unsigned i, n;

    for (;;) {
        p[0] = (struct pollfd) { .fd = stop_fd, .events = POLLIN };
        p[1] = (struct pollfd) { .fd = r->lfd, .events = POLLIN };
        for (i = 0; i < r->n; i++)
            p[i + 2] = (struct pollfd) { .fd = r->c[i].fd, .events = POLLIN };
        n = r->n;
        if (poll (p, n + 2, 500) < 0 && errno != EINTR)
            return -1;
        if (p[0].revents)
            return 0;
        for (i = 0; i < n; i++)
            if (p[i + 2].revents && r->c[i].fd >= 0)
                on_readable (r, &r->c[i]);
        expire (r);
        compact (r);
        if (p[1].revents & POLLIN)
            accept_all (r);
    }
}

/* Split SPEC "PORT:TOKEN" into SERV (the port, as text) and TOKEN.
 * Returns 0 or -1 (EINVAL). */
static int parse_spec (const char *spec, char *serv, char *token)
{
    const char *colon = spec ? strchr (spec, ':') : NULL;
    unsigned long long port;
    char num[8];
    size_t i, len;

    errno = EINVAL;
    if (!colon || (len = (size_t) (colon - spec)) == 0 || len >= sizeof (num)
        || strlen (colon + 1) != TOKEN_HEX)
        return -1;
    memcpy (num, spec, len);
    num[len] = '\0';
    if (sp_parse_uint (num, 1, 65535, &port) < 0) {
        errno = EINVAL;
        return -1;
    }
    for (i = 0; i < TOKEN_HEX; i++)
        if (!strchr ("0123456789abcdef", colon[1 + i]))
            return -1;
    snprintf (serv, 8, "%llu", port);
    memcpy (token, colon + 1, TOKEN_HEX + 1);
    return 0;
}

/* Wait until FD is ready for EVENTS or DEADLINE (now_ms) passes.
 * Returns 0, or -1 with errno ETIMEDOUT or poll()'s. */
static int wait_for (int fd, short events, int64_t deadline)
{
    struct pollfd p = { .fd = fd, .events = events };
    int64_t left;
    int rc;

    do {
        if ((left = deadline - now_ms ()) <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        rc = poll (&p, 1, (int) left);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* Connect to HOST:SERV (IPv4) by DEADLINE.  Returns the descriptor or -1. */
static int connect_by (const char *host, const char *serv, int64_t deadline)
{
    struct addrinfo hints = { .ai_family = AF_INET,
                              .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV }, *ai;
    int fd, err = 0, e;
    socklen_t len = sizeof (err);

    if (getaddrinfo (host, serv, &hints, &ai) != 0) {
        errno = EHOSTUNREACH;
        return -1;
    }
    fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && connect (fd, ai->ai_addr, ai->ai_addrlen) < 0
        && (errno != EINPROGRESS || wait_for (fd, POLLOUT, deadline) < 0
            || getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0
            || (err && (errno = err)))) {
        e = errno;
        close (fd);
        fd = -1;
        errno = e;
    }
    freeaddrinfo (ai);
    return fd;
}

/* Send LINE to the relay of SPEC at HOST and read its one-line answer
 * into ANSWER (LEN bytes, without the newline), by TIMEOUT_MS.  Returns 0
 * or -1 with errno set. */
static int ask (const char *host, const char *spec, const char *verb,
                const char *arg, char *answer, size_t len, int timeout_ms)
{
    int64_t deadline = now_ms () + timeout_ms;
    char serv[8], token[TOKEN_HEX + 1], line[LINE_MAX_LEN + 1];
    size_t n = 0;
    ssize_t got;
    int fd, rc = -1, e;

    if (!host || parse_spec (spec, serv, token) < 0)
        return -1;
    snprintf (line, sizeof (line), "%s %s%s\n", verb, token, arg);
    if ((fd = connect_by (host, serv, deadline)) < 0)
        return -1;
    if (send (fd, line, strlen (line), MSG_NOSIGNAL) != (ssize_t) strlen (line))
        goto out;
    while (n + 1 < len) {
        if (wait_for (fd, POLLIN, deadline) < 0)
            goto out;
        if ((got = recv (fd, answer + n, len - 1 - n, 0)) <= 0) {
            if (got == 0)
                errno = EPROTO;
            if (got == 0 || errno != EINTR)
                goto out;
            continue;
        }
        n += (size_t) got;
        answer[n] = '\0';
        if (memchr (answer, '\n', n)) {
            *strchr (answer, '\n') = '\0';
            rc = 0;
            goto out;
        }
    }
    errno = EPROTO;
out:
    e = errno;
    close (fd);
    errno = e;
    return rc;
}

int sp_relay_put (const char *host, const char *spec, int port,
                  int timeout_ms)
{
    char arg[16], answer[16];

    if (port < 0 || port > 65535) {
        errno = EINVAL;
        return -1;
    }
    snprintf (arg, sizeof (arg), " %d", port);
    if (ask (host, spec, "PUT", arg, answer, sizeof (answer), timeout_ms) < 0)
        return -1;
    if (strcmp (answer, "OK") != 0) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

int sp_relay_get (const char *host, const char *spec, int timeout_ms)
{
    char answer[16];
    unsigned long long port;

    if (ask (host, spec, "GET", "", answer, sizeof (answer), timeout_ms) < 0)
        return -1;
    if (strncmp (answer, "PORT ", 5) != 0
        || sp_parse_uint (answer + 5, 0, 65535, &port) < 0) {
        errno = EPROTO;
        return -1;
    }
    return (int) port;
}
