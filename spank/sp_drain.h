/* sp_drain.h - let a message written to a pipe reach its reader.
 *
 * A task that the plugin refuses writes why to its stderr, a pipe that
 * slurmstepd forwards to srun, and then exits.  srun learns of the exit by
 * a message of its own; when that makes it stop the step (kill-on-bad-exit)
 * and a task elsewhere ends by its signal, srun stops reading the step's
 * output at once, and a reason still in the pipe or on its way is lost.
 * Waiting until slurmstepd has read the pipe before exiting puts the reason
 * ahead of the exit.
 */
#ifndef SP_DRAIN_H
#define SP_DRAIN_H

/* Wait until the reader of pipe FD has read everything in it, or until
 * TIMEOUT_MS milliseconds have passed.  Returns 0 when the pipe is empty,
 * or at once when FD is not a pipe (a file, a terminal: nothing to wait
 * for); -1 with errno ETIMEDOUT when data is still there at the deadline,
 * or errno from fstat/ioctl (EBADF for a closed FD).  Never blocks longer
 * than TIMEOUT_MS (plus one poll interval of 5 ms). */
int sp_drain_pipe (int fd, int timeout_ms);

#endif /* SP_DRAIN_H */
