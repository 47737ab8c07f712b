/* words.h - argument vectors for the plugin's unit tests.
 *
 * WORDS ("a", "b") is the NULL-terminated vector { "a", "b", NULL } and
 * NO_WORDS the empty one; nwords() counts a vector's words, so a test
 * passes (nwords (w), w) wherever the code takes ac/av or argc/argv.
 */
#ifndef SPANK_TEST_WORDS_H
#define SPANK_TEST_WORDS_H

#define WORDS(...) ((char *[]) { __VA_ARGS__, NULL })
#define NO_WORDS ((char *[]) { NULL })

/* Number of words of W before its NULL. */
static inline int nwords (char *const *w)
{
    int n = 0;

    while (w[n])
        n++;
    return n;
}

#endif /* SPANK_TEST_WORDS_H */
