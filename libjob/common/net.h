/* net.h - small socket helpers shared by the leaders' links (tcp.c) and
 * the roll call after a failed init (rollcall.c).  Internal to libddp. */
#ifndef DDP_NET_H
#define DDP_NET_H

#include <stdbool.h>
#include <stddef.h>

/* Make fd non-blocking.  Returns 0 or -1 (errno set). */
int ddpi_set_nonblock (int fd);

/* Read (wr false) or write (wr true) exactly len bytes on the non-blocking
 * socket fd, polling until the absolute time deadline (ddpi_now()).
 * Returns 0, or -1 on EOF, an error or the deadline. */
int ddpi_io_full (int fd, void *buf, size_t len, bool wr, double deadline);

#endif /* DDP_NET_H */
