/* net.c - small socket helpers (net.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include "ddp_internal.h"
#include "net.h"

int ddpi_set_nonblock (int fd)
{
    int fl = fcntl (fd, F_GETFL);
    return fl < 0 ? -1 : fcntl (fd, F_SETFL, fl | O_NONBLOCK);
}

int ddpi_io_full (int fd, void *buf, size_t len, bool wr, double deadline)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = wr ? send (fd, (char *)buf + done, len - done,
                               MSG_DONTWAIT | MSG_NOSIGNAL)
                       : recv (fd, (char *)buf + done, len - done,
                               MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0)
            return -1;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        {
            struct pollfd p = { fd, wr ? POLLOUT : POLLIN, 0 };
            double left = deadline - ddpi_now ();
            if (left <= 0)
                return -1;
            /* Wake up now and then on a far deadline: the int stays in
             * range, and the loop re-checks. */
            poll (&p, 1, left < 1000 ? (int)(left * 1000) + 1 : 1000000);
        }
    }
    return 0;
}
