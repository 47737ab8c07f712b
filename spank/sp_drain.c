/* sp_drain.c - let a message written to a pipe reach its reader. */
#include "config.h"
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include "sp_drain.h"

#define POLL_NS 5000000L        /* 5 ms between looks at the pipe */

/* Milliseconds on the monotonic clock. */
static long now_ms (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int sp_drain_pipe (int fd, int timeout_ms)
{
    struct stat st;
    struct timespec nap = { 0, POLL_NS };
    long deadline;
    int pending = 0;

    if (fstat (fd, &st) < 0)
        return -1;
    if (!S_ISFIFO (st.st_mode))
        return 0;
    /* The clock, not a count of naps: on a loaded node a nap overruns. */
    deadline = now_ms () + timeout_ms;
    for (;;) {
        /* Linux answers FIONREAD on either end of a pipe. */
        if (ioctl (fd, FIONREAD, &pending) < 0)
            return -1;
        if (pending == 0)
            return 0;
        if (now_ms () >= deadline)
            break;
        nanosleep (&nap, NULL);
    }
    errno = ETIMEDOUT;
    return -1;
}
