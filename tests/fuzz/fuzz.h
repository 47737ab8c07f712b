/* fuzz.h - small helpers shared by the libFuzzer targets in tests/fuzz/.
 *
 * Each target is one fuzz_NAME.c defining LLVMFuzzerTestOneInput(); its
 * first line names the sources it links (contrib/ci-extra.sh reads it):
 *   / * fuzz-sources: spank/sp_strint.c ... * /
 * A target checks the contract of the functions it calls (bounds, outputs
 * left alone on failure, messages NUL-terminated) and calls fuzz_fail() when
 * one does not hold, which libFuzzer reports as a crash with the input.
 */
#ifndef DDP_FUZZ_H
#define DDP_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Report a broken contract and abort: libFuzzer saves the input. */
#define fuzz_fail(...) do { \
        fprintf (stderr, "fuzz contract broken at %s:%d: ", __FILE__, __LINE__); \
        fprintf (stderr, __VA_ARGS__); \
        fputc ('\n', stderr); \
        abort (); \
    } while (0)

#define fuzz_assert(cond) do { \
        if (!(cond)) \
            fuzz_fail ("%s", #cond); \
    } while (0)

/* A NUL-terminated copy of the input in a block of exactly size + 1 bytes,
 * so AddressSanitizer catches a read past the terminator.  Never NULL. */
static inline char *fuzz_cstr (const uint8_t *data, size_t size)
{
    char *s = malloc (size + 1);
    if (!s)
        abort ();
    if (size > 0)
        memcpy (s, data, size);
    s[size] = '\0';
    return s;
}

/* Check that a message buffer of len > 0 bytes is NUL-terminated. */
static inline int fuzz_terminated (const char *buf, size_t len)
{
    return memchr (buf, '\0', len) != NULL;
}

#endif /* DDP_FUZZ_H */
