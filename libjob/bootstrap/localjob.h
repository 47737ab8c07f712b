/* localjob.h - start the ranks of a job as processes on this machine,
 * grouped into simulated nodes, with the local launcher's server
 * (local_server.h) in a thread of the caller: several ranks without Slurm
 * or PMIx, for tests (a unit test forks its ranks with a function to run)
 * and for ddp-run (contrib/ddp-run/, whose ranks exec a program).  Not
 * part of libddp (libddplocal.la).
 *
 * Each rank runs in its own process group, with no signal blocked (the
 * caller may block the ones it waits for), DDP_LOCAL_FD (its end of
 * a socketpair to the server: no socket file), RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE and NODE_RANK set, and dies with the
 * thread that started it (PR_SET_PDEATHSIG).  Every wait is bounded by
 * the job's timeout; when the job ends every rank's process group is
 * killed, so nothing the ranks started is left behind.
 *
 * The caller must not have other threads when it calls ddpi_ljob_start()
 * (the ranks are forked), nor reap the ranks itself.
 */
#ifndef DDP_LOCALJOB_H
#define DDP_LOCALJOB_H

#include <stddef.h>
#include <sys/types.h>

struct ddpi_ljob;

struct ddpi_ljob_opts {
    int size;               /* ranks, >= 1 */
    int nnodes;             /* simulated nodes, 1 .. size */
    const int *node_of;     /* node of each rank (size entries), or NULL:
                               consecutive blocks, the first size % nnodes
                               nodes one rank larger */
    double timeout_s;       /* bound on the whole job (> 0): ranks still
                               running then are killed (SIGKILL) */
    const char *name;       /* prefix of the lines logged on stderr */
};

/* What each rank runs, in its own process: the return value is its exit
 * status. */
typedef int (*ddpi_ljob_fn) (int rank, void *arg);

/* Start o->size ranks running fn (rank, arg), and the server thread.
 * Returns the job, or NULL with the reason in err (errlen bytes): a bad
 * option (size, nnodes, layout, timeout), or a failed socketpair, fork or
 * thread (then nothing is left running). */
struct ddpi_ljob *ddpi_ljob_start (const struct ddpi_ljob_opts *o,
                                   ddpi_ljob_fn fn, void *arg, char *err,
                                   size_t errlen);

/* How many ranks have not ended yet. */
int ddpi_ljob_running (const struct ddpi_ljob *j);

/* The pid of rank's process (also its process group). */
pid_t ddpi_ljob_pid (const struct ddpi_ljob *j, int rank);

/* The first rank that ended badly (a non-zero exit status, or killed by a
 * signal), or -1 while none has.  May be called while the job runs.
 * ddpi_ljob_wait() names it unless it said it was a victim of another
 * (bootstrap_victim) and a rank that ended badly did not. */
int ddpi_ljob_failed (const struct ddpi_ljob *j);

/* Send sig to rank's process group.  Returns 0, or -1 when the rank is out
 * of range or has already been reaped. */
int ddpi_ljob_kill (struct ddpi_ljob *j, int rank, int sig);

/* Wait until every rank ended (at most the job's timeout, then the rest
 * are killed), stop the server and free j.  status (size entries, may be
 * NULL) gets each rank's wait status.  Returns the job's exit code, 0
 * when every rank exited 0; otherwise, with what happened in err (errlen
 * bytes): the status a rank gave bootstrap_abort(), 124 when the job
 * timed out, or the exit status of the rank that failed first (128 +
 * signal when a signal killed it): the first to end badly that did not
 * say it was a victim of another rank (bootstrap_victim), else the first
 * to end badly; err then adds the victims and the words of the first,
 * e.g. "rank 2 killed by signal 15 (Terminated); ranks 0,1,3 failed after
 * it, as victims: rank 2 did not arrive within DDP_TIMEOUT (2 s)" (a rank
 * that gave its reason, bootstrap_reason: "rank 1 raised ValueError: x
 * (exited with status 1); ..."), or
 * "rank 0 exited with status 3, a victim (ranks 2,3 too): rank 1 left
 * (ddp_finalize) before ddp_barrier #202". */
int ddpi_ljob_wait (struct ddpi_ljob *j, int *status, char *err,
                    size_t errlen);

/* The node of each of size ranks in consecutive blocks over nnodes nodes
 * (the default layout), into node_of. */
void ddpi_ljob_blocks (int size, int nnodes, int *node_of);

#endif /* DDP_LOCALJOB_H */
