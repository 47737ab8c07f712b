/* wait.h - bounded waiting: spin briefly, then yield, then sleep. */
#ifndef DDP_WAIT_H
#define DDP_WAIT_H

#include <stdbool.h>

struct ddpi_waiter {
    unsigned iter;
    unsigned spin_us;       /* microseconds of spinning before yielding */
    double yield_s;         /* seconds of yielding before sleeping */
    bool spinning;
    double start;           /* 0 until the first slow step */
    double deadline;
    double next_check;
    double timeout_s;
    /* Instead of a nap: sleep until woken or for at most seconds (see
     * ddpi_wait_nap); NULL naps with nanosleep. */
    int (*nap) (void *arg, double seconds);
    void *nap_arg;
};

/* Prepare w for one wait bounded by timeout_s: spin (cpu pause) for up to
 * spin_us microseconds, then yield the CPU for a while, then sleep in
 * growing naps (50 us, then 0.5 ms).  spin_us is 0 on an oversubscribed
 * node, where spinning only delays the peer we wait for. */
void ddpi_wait_init (struct ddpi_waiter *w, double timeout_s,
                     unsigned spin_us);

/* How long a wait yields, once spinning is over, before it naps. */
#define DDPI_WAIT_YIELD_S 0.02

/* Yield for yield_s seconds (default DDPI_WAIT_YIELD_S) instead, once
 * spinning is over, before the naps: 0 naps at once (for a machine so
 * oversubscribed that the yielding waiters themselves keep the ranks with
 * work off the CPUs). */
void ddpi_wait_yield (struct ddpi_waiter *w, double yield_s);

/* Once yielding is over, call nap (arg, seconds) instead of nanosleep:
 * it sleeps until the condition may have changed (a futex wake) or for
 * at most seconds (up to the next liveness check, 2 ms), and returns 0,
 * or -1 to nap with nanosleep this time instead (futex unavailable). */
void ddpi_wait_nap (struct ddpi_waiter *w, int (*nap) (void *, double),
                    void *arg);

/* One step of a wait whose condition was just found false.  Returns 0 to
 * keep polling, 1 when the caller should also check peer liveness (about
 * every 2 ms of waiting), or -1 when the deadline has passed. */
int ddpi_wait_step (struct ddpi_waiter *w);

/* Move the deadline of a wait that has started (ddpi_wait_step returned
 * -1 once) seconds later; the wait then goes on from where it was. */
void ddpi_wait_extend (struct ddpi_waiter *w, double seconds);

/* Give a wait that has started a whole timeout again from now (the one it
 * waits for is making progress). */
void ddpi_wait_restart (struct ddpi_waiter *w);

/* Seconds waited so far (0 if the wait never left the spin phase). */
double ddpi_wait_elapsed (const struct ddpi_waiter *w);

/* Wait until the reader of pipe fd (slurmstepd, for a task's stderr) has
 * read all that is in it, for at most timeout_s seconds.  A process about
 * to exit after logging why calls it: under kill-on-bad-exit srun stops
 * reading a step's output once another task ends by its signal, and a line
 * still in the pipe is then lost.  Returns 0 when the pipe is empty or fd
 * is not a pipe (a file, a terminal, closed: nothing to wait for), or
 * DDP_ETIMEDOUT with data still unread at the deadline. */
int ddpi_wait_pipe_read (int fd, double timeout_s);

#endif /* DDP_WAIT_H */
