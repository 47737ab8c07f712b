/* replay.c - run one libFuzzer target over its committed corpus as a TAP
 * unit test, built with the ordinary compiler (tests/reliability.am).
 *
 * So `make check`, the sanitizer build and the valgrind stage of
 * contrib/ci-extra.sh all run every seed and every input a fuzzing session
 * committed, without clang.  A broken contract aborts (fuzz.h), which fails
 * the test.  The corpus is $DDP_SRC_DIR/tests/fuzz/corpus/FUZZ_NAME, else
 * FUZZ_SRCDIR/fuzz/corpus/FUZZ_NAME (both set at build time).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tap.h"

#define REPLAY_MAX_INPUT (1 << 20)

static int cmp (const void *a, const void *b)
{
    return strcmp (*(char *const *)a, *(char *const *)b);
}

/* Read PATH into a malloc'd buffer of exactly its size (at least 1 byte).
 * Returns 0, or -1 with errno set. */
static int slurp (const char *path, uint8_t **buf, size_t *len)
{
    FILE *f = fopen (path, "rb");
    uint8_t *b = NULL;
    size_t n = 0;
    long sz;
    int rc = -1;

    if (!f)
        return -1;
    if (fseek (f, 0, SEEK_END) < 0 || (sz = ftell (f)) < 0 || sz > REPLAY_MAX_INPUT
        || fseek (f, 0, SEEK_SET) < 0) {
        errno = EFBIG;
        goto out;
    }
    if (!(b = malloc ((size_t)sz + 1)))
        goto out;
    n = fread (b, 1, (size_t)sz, f);
    if (n != (size_t)sz) {
        free (b);
        errno = EIO;
        goto out;
    }
    *buf = b;
    *len = n;
    rc = 0;
out:
    fclose (f);
    return rc;
}

int main (void)
{
    const char *src = getenv ("DDP_SRC_DIR");
    char dir[4096], path[8192];
    char **names = NULL;
    size_t n = 0, i;
    struct dirent *e;
    DIR *d;

    if (src && *src)
        snprintf (dir, sizeof (dir), "%s/tests/fuzz/corpus/%s", src, FUZZ_NAME);
    else
        snprintf (dir, sizeof (dir), "%s/fuzz/corpus/%s", FUZZ_SRCDIR, FUZZ_NAME);
    if (!(d = opendir (dir)))
        bail_out ("cannot open the corpus directory");
    while ((e = readdir (d))) {
        char **more;
        if (e->d_name[0] == '.')
            continue;
        if (!(more = realloc (names, (n + 1) * sizeof (*names)))
            || !(more[n] = strdup (e->d_name)))
            bail_out ("out of memory");
        names = more;
        n++;
    }
    closedir (d);
    if (n > 0)
        qsort (names, n, sizeof (*names), cmp);

    ok (n > 0, "the corpus of %s has inputs (%zu)", FUZZ_NAME, n);
    for (i = 0; i < n; i++) {
        uint8_t *buf = NULL;
        size_t len = 0;

        snprintf (path, sizeof (path), "%s/%s", dir, names[i]);
        if (slurp (path, &buf, &len) < 0) {
            ok (0, "read %s: %s", names[i], strerror (errno));
            free (names[i]);
            continue;
        }
        LLVMFuzzerTestOneInput (buf, len);
        ok (1, "%s: %s (%zu bytes) keeps the contract", FUZZ_NAME, names[i], len);
        free (buf);
        free (names[i]);
    }
    free (names);
    return done_testing ();
}
