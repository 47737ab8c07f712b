/* hello.c - the first libddp program: who am I, one all-reduce, one thing
 * done by the main rank alone, one shard of a data set each.
 *
 * Build (against an installed libddp; see README, "Run your own program"):
 *   cc -o hello hello.c $(pkg-config --cflags --libs ddp)
 * Run:
 *   ./hello                     one process, no launcher needed
 *   srun --ddp=host -N2 --ntasks-per-node=2 ./hello
 *                               4 ranks, 2 on each of 2 nodes
 *
 * Every rank prints one line (prefixed with its rank by ddp_log); rank 0
 * prints the sum of the ranks, which must be n (n - 1) / 2.  A failed
 * ddp_init, and a fault of another rank, libddp reports on stderr itself
 * (once, with the details); the program only stops.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ddp.h>

/* Runs on rank 0 only (ddp_run_on_main); the others wait for it.  A
 * non-zero return would fail the call on every rank. */
static int write_header (void *arg)
{
    const char *path = arg;
    FILE *f = fopen (path, "w");

    if (!f)
        return -1;
    fprintf (f, "hello from a job of %d ranks\n", ddp_world_size ());
    return fclose (f) == 0 ? 0 : -1;
}

/* This rank's shard of a data set of n items (at most 10): their indices
 * into items[], how many into *count.  Each rank gets its own, every item
 * is someone's (PyTorch's DistributedSampler, without shuffling). */
static int my_shard (uint64_t n, uint64_t items[10], uint64_t *count)
{
    ddp_sampler_t s;
    int rc;

    rc = ddp_sampler_init (&s, n, ddp_world_size (), ddp_rank (), false, 0,
                           false);
    if (rc < 0)
        return rc;
    *count = s.num_samples;
    return ddp_sampler_indices (&s, items, 10);
}

int main (void)
{
    int64_t sum;
    uint64_t items[10], count = 0;
    char list[64] = "";
    int rc, len = 0;

    if (ddp_init () < 0)
        return 1;           /* libddp has logged why */

    ddp_log ("rank %d of %d, local rank %d of %d on node %d of %d, "
             "backend %s", ddp_rank (), ddp_world_size (), ddp_local_rank (),
             ddp_local_world_size (), ddp_node_rank (), ddp_num_nodes (),
             ddp_backend_name ());

    /* Every rank contributes its rank; every rank gets the sum. */
    sum = ddp_rank ();
    if ((rc = ddp_allreduce (&sum, &sum, 1, DDP_INT64, DDP_SUM)) < 0)
        goto out;
    ddp_log_main ("sum of the ranks: %lld (expected %d)", (long long)sum,
                  ddp_world_size () * (ddp_world_size () - 1) / 2);

    /* Rank 0 writes a file; the others go on once it has. */
    if ((rc = ddp_run_on_main (write_header, "hello.out", NULL, NULL,
                               false)) < 0)
        goto out;

    /* A data set of 10 items, shared out among the ranks. */
    if ((rc = my_shard (10, items, &count)) < 0)
        goto out;
    for (uint64_t i = 0; i < count && len < (int)sizeof (list) - 8; i++)
        len += snprintf (list + len, sizeof (list) - (size_t)len, " %llu",
                         (unsigned long long)items[i]);
    ddp_log ("my shard of 10 items:%s", list);
out:
    if (rc < 0)     /* a fault's details are logged by libddp already */
        ddp_log ("stopped: %s", ddp_strerror (rc));
    ddp_finalize ();
    return rc < 0;
}
