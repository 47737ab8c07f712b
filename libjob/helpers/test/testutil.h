/* testutil.h - for the helpers' unit tests: a clean single-process
 * environment, and what a call writes to stderr. */
#ifndef DDP_TEST_TESTUTIL_H
#define DDP_TEST_TESTUTIL_H

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

/* A single process: no launcher variable may leak in from outside, and
 * every wait for a peer is bounded by timeout (DDP_TIMEOUT). */
static void single_process_env (const char *timeout)
{
    static const char *const launcher[] = {
        "WORLD_SIZE", "PMIX_NAMESPACE", "PMIX_SERVER_URI2",
        "PMIX_SERVER_URI3", "PMIX_SERVER_URI4", "PMIX_SERVER_URI21",
        "PMIX_SERVER_URI41", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS",
        "DDP_BACKEND",
    };

    for (size_t i = 0; i < sizeof (launcher) / sizeof (launcher[0]); i++)
        unsetenv (launcher[i]);
    setenv ("DDP_TIMEOUT", timeout, 1);
}

#endif /* DDP_TEST_TESTUTIL_H */
