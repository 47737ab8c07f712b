/* capture.h - what a call writes to stderr, for the helpers' unit tests. */
#ifndef DDP_TEST_CAPTURE_H
#define DDP_TEST_CAPTURE_H

#include <stdlib.h>
#include <unistd.h>

/* Run f (arg) with stderr sent to a temporary file in the current
 * directory; return what it wrote (malloc'd, NUL-terminated, at most
 * 64 KiB; "" if the file could not be made). */
static char *capture_stderr (void (*f) (void *), void *arg)
{
    char path[] = "capture-XXXXXX";
    int fd = mkstemp (path), saved = dup (STDERR_FILENO);
    char *buf = calloc (1, 65536);
    ssize_t n = 0;

    if (fd >= 0)
        dup2 (fd, STDERR_FILENO);
    f (arg);
    dup2 (saved, STDERR_FILENO);
    close (saved);
    if (fd >= 0) {
        lseek (fd, 0, SEEK_SET);
        n = read (fd, buf, 65535);
        close (fd);
        unlink (path);
    }
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

#endif /* DDP_TEST_CAPTURE_H */
