/* sp_drain.c - let a message written to a pipe reach its reader. */
#include "config.h"
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include "sp_drain.h"

#define POLL_NS 5000000L        /* 5 ms between looks at the pipe */

/* Bytes waiting in pipe FD (Linux answers FIONREAD on either end). */
static int pipe_pending (int fd, int *pending)
{
    return ioctl (fd, FIONREAD, pending);
}

int sp_drain_pipe (int fd, int timeout_ms)
{
    struct stat st;
    struct timespec nap = { 0, POLL_NS };
    long waited_ms = 0;
    int pending = 0;

    if (fstat (fd, &st) < 0)
        return -1;
    if (!S_ISFIFO (st.st_mode))
        return 0;
    for (;;) {
        if (pipe_pending (fd, &pending) < 0)
            return -1;
        if (pending == 0)
            return 0;
        if (waited_ms >= timeout_ms)
            break;
        nanosleep (&nap, NULL);
        waited_ms += POLL_NS / 1000000L;
    }
    errno = ETIMEDOUT;
    return -1;
}
