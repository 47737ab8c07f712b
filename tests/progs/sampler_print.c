/* sampler_print.c - print the indices libddp's distributed sampler gives one
 * rank, for comparing another implementation of it with the C one (the
 * Python module's ddp.Sampler, tests/t0720-python.t).  No launcher, no init:
 * the sampler is a pure function of its arguments.
 *
 * Usage: sampler_print N WORLD RANK SHUFFLE SEED DROP_LAST EPOCH [START COUNT]
 * Prints "num_samples=M total_size=T" on the first line, then the indices
 * of positions START .. START+COUNT-1 (default: all of this rank's list),
 * one a line.  Exit status 2 on bad arguments, 1 if libddp refuses them.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ddp.h"

/* A whole unsigned decimal number; 0 and *out set, or -1. */
static int parse_u64 (const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull (s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = (uint64_t) v;
    return 0;
}

int main (int argc, char **argv)
{
    uint64_t a[9] = { 0 }, *idx = NULL;
    ddp_sampler_t s;
    int rc = 0;

    if (argc != 8 && argc != 10) {
        fprintf (stderr, "usage: %s N WORLD RANK SHUFFLE SEED DROP_LAST EPOCH "
                 "[START COUNT]\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (parse_u64 (argv[i], &a[i - 1]) < 0) {
            fprintf (stderr, "%s: argument %d (%s) is not a whole number\n",
                     argv[0], i, argv[i]);
            return 2;
        }
    if (a[1] > 1u << 30 || a[2] > 1u << 30) {
        fprintf (stderr, "%s: WORLD and RANK must be below 2^30\n", argv[0]);
        return 2;
    }
    if (ddp_sampler_init (&s, a[0], (int) a[1], (int) a[2], a[3] != 0, a[4],
                          a[5] != 0) < 0) {
        fprintf (stderr, "%s: ddp_sampler_init refused the arguments\n",
                 argv[0]);
        return 1;
    }
    ddp_sampler_set_epoch (&s, a[6]);
    if (argc == 8) {
        a[7] = 0;
        a[8] = s.num_samples;
    }
    if (a[8] > SIZE_MAX / sizeof (*idx)
        || !(idx = calloc ((size_t) a[8] + 1, sizeof (*idx)))) {
        fprintf (stderr, "%s: cannot hold %" PRIu64 " indices\n", argv[0],
                 a[8]);
        return 1;
    }
    if (ddp_sampler_indices_from (&s, a[7], idx, (size_t) a[8]) < 0) {
        fprintf (stderr, "%s: positions %" PRIu64 " + %" PRIu64 " are past "
                 "this rank's %" PRIu64 "\n", argv[0], a[7], a[8],
                 s.num_samples);
        rc = 1;
    }
    else {
        printf ("num_samples=%" PRIu64 " total_size=%" PRIu64 "\n",
                s.num_samples, s.total_size);
        for (uint64_t i = 0; i < a[8]; i++)
            printf ("%" PRIu64 "\n", idx[i]);
    }
    free (idx);
    return rc;
}
