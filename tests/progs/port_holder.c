/* port_holder.c - listen on MASTER_PORT (or the port given) for a while, as
 * a PyTorch TCPStore on rank 0 would, for the port tests.
 *
 *   port_holder [PORT] SECONDS
 *
 * Binds 0.0.0.0:PORT, listens, prints "listening on PORT" and a newline
 * (flushed), sleeps SECONDS (or until killed) and exits 0; exits 1 with a
 * message when the port cannot be had.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main (int argc, char *argv[])
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    const char *port = argc > 2 ? argv[1] : getenv ("MASTER_PORT");
    int fd, one = 1, secs = argc > 1 ? atoi (argv[argc - 1]) : 30;

    if (!port || atoi (port) <= 0 || atoi (port) > 65535) {
        fprintf (stderr, "usage: port_holder [PORT] SECONDS (or MASTER_PORT)\n");
        return 1;
    }
    a.sin_port = htons ((uint16_t) atoi (port));
    a.sin_addr.s_addr = htonl (INADDR_ANY);
    if ((fd = socket (AF_INET, SOCK_STREAM, 0)) < 0
        || setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one)) < 0
        || bind (fd, (struct sockaddr *) &a, sizeof (a)) < 0
        || listen (fd, 8) < 0) {
        fprintf (stderr, "port_holder: port %s: %s\n", port, strerror (errno));
        return 1;
    }
    printf ("listening on %s\n", port);
    fflush (stdout);
    sleep ((unsigned) secs);
    close (fd);
    return 0;
}
