/* drain.c - waiting for a pipe's reader (spank/sp_drain.c). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "sp_drain.h"
#include "pipes.h"
#include "tap.h"

/* Milliseconds on the monotonic clock. */
static long now_ms (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void test_read_late (void)
{
    int p[2];
    pthread_t th;
    long t0, took;

    if (pipe (p) < 0 || fcntl (p[0], F_SETFL, O_NONBLOCK) < 0)
        bail_out ("pipe failed");
    ok (write (p[1], "ddp: refused\n", 13) == 13, "a reason in the pipe");
    pthread_create (&th, NULL, late_reader, &p[0]);
    t0 = now_ms ();
    is_int (sp_drain_pipe (p[1], 5000), 0, "returns once the reader read it");
    took = now_ms () - t0;
    ok (took >= 90 && took < 4000, "after the reader (%ld ms), not the "
        "deadline", took);
    pthread_join (th, NULL);
    close (p[0]);
    close (p[1]);
}

static void test_never_read (void)
{
    int p[2];
    long t0, took;

    if (pipe (p) < 0)
        bail_out ("pipe failed");
    ok (write (p[1], "x", 1) == 1, "one byte nobody reads");
    t0 = now_ms ();
    errno = 0;
    ok (sp_drain_pipe (p[1], 50) == -1 && errno == ETIMEDOUT,
        "unread at the deadline: ETIMEDOUT");
    took = now_ms () - t0;
    ok (took >= 45 && took < 1000, "gave up at about the deadline (%ld ms)",
        took);
    is_int (sp_drain_pipe (p[1], 0), -1, "a zero timeout looks once");
    close (p[0]);
    close (p[1]);
}

static void test_not_a_pipe (void)
{
    int p[2], fd;
    char name[] = "drain-file.XXXXXX";

    if (pipe (p) < 0)
        bail_out ("pipe failed");
    is_int (sp_drain_pipe (p[1], 0), 0, "an empty pipe: at once");
    close (p[0]);
    close (p[1]);
    if ((fd = mkstemp (name)) < 0)
        bail_out ("mkstemp failed");
    ok (write (fd, "text", 4) == 4, "a file with data");
    is_int (sp_drain_pipe (fd, 0), 0, "a file: nothing to wait for");
    close (fd);
    unlink (name);
    errno = 0;
    ok (sp_drain_pipe (fd, 0) == -1 && errno == EBADF, "a closed fd: EBADF");
}

int main (void)
{
    plan (NO_PLAN);
    test_read_late ();
    test_never_read ();
    test_not_a_pipe ();
    return done_testing ();
}
