/* pipes.h - the late reader that the tests of waiting for a pipe's reader
 * share (spank/test/drain.c, libjob/common/test/util.c).  Static: include
 * once per test program.
 */
#ifndef DDP_TEST_PIPES_H
#define DDP_TEST_PIPES_H

#include <time.h>
#include <unistd.h>

/* Thread body: wait 100 ms, then read the pipe end *(int *)arg empty (it
 * must be non-blocking).  Returns NULL. */
static void *late_reader (void *arg)
{
    struct timespec nap = { 0, 100000000L };
    char buf[256];

    nanosleep (&nap, NULL);
    while (read (*(int *)arg, buf, sizeof (buf)) > 0)
        ;
    return NULL;
}

#endif /* DDP_TEST_PIPES_H */
