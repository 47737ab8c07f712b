/* pkgconfig-test.c - a user program built against an installed libddp with
 *     cc pkgconfig-test.c $(pkg-config --cflags --libs ddp)
 * by `make installcheck` (contrib/Makefile.am, run by distcheck against its
 * temporary --prefix) and by tests/t0510-install.t (against DESTDIR).
 *
 * Run alone, without Slurm, it is a single process: it initializes, checks
 * that an all-reduce over one rank is a copy, finalizes, and checks that a
 * collective after ddp_finalize() fails with DDP_ENOINIT.  It prints one
 * line the tests compare.  Exit status 0 on success.
 *
 * With -DDDP_TEST_VERSION_ONLY it only links ddp_version() (for a library
 * built before its core existed). */
#include <stdio.h>
#include <ddp.h>

#ifdef DDP_TEST_VERSION_ONLY
int main (void)
{
    printf ("version %s\n", ddp_version ());
    return 0;
}
#else
int main (void)
{
    double x[3] = { 1.5, -2, 4 };
    double y[3] = { 0, 0, 0 };
    int rc;

    if ((rc = ddp_init ()) < 0) {
        fprintf (stderr, "ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    rc = ddp_allreduce (x, y, 3, DDP_FLOAT64, DDP_SUM);
    printf ("version %s rank %d of %d backend %s allreduce %d %g %g %g\n",
            ddp_version (), ddp_rank (), ddp_world_size (),
            ddp_backend_name (), rc, y[0], y[1], y[2]);
    if (ddp_finalize () < 0 || rc < 0)
        return 1;
    if (ddp_allreduce (x, y, 3, DDP_FLOAT64, DDP_SUM) != DDP_ENOINIT) {
        fprintf (stderr, "a collective after ddp_finalize did not fail\n");
        return 1;
    }
    return 0;
}
#endif
