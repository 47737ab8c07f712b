/* sp_port.h - MASTER_PORT for a job step, whether it is taken, who holds
 * it, and the claim a step holds on it (a lock file in a directory of
 * root's, which no other user can create, take or block). */
#ifndef SP_PORT_H
#define SP_PORT_H

#include <stdint.h>

/* Derive the rendezvous port of step STEPID of job JOBID from the inclusive
 * range [LO, HI] of R = HI-LO+1 ports: a hash of the job id picks the job's
 * start in the range and a stride coprime with R (also from the job id),
 * and step s gets start + s * stride (mod R).  So up to R steps of one job
 * (running at the same time or not) get distinct ports, different jobs are
 * spread over the range, and two jobs whose steps meet on one port once do
 * not keep meeting step after step.  Every node computes the same value.
 * Returns the port, or -1 (errno EINVAL) unless 1 <= LO <= HI <= 65535. */
int sp_port_derive (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi);

/* Walk on from sp_port_derive (JOBID, STEPID, LO, HI): try that port, then
 * the one step STEPID+1 would get, STEPID+2's, ... (the job's start and
 * stride, so no port comes twice), at most TRIES ports and at most the
 * whole range.  TRY_PORT (PORT, ARG) returns 0 when it took PORT (the walk
 * stops there), 1 when PORT is taken (the walk goes on) or -1 with errno
 * set (the walk stops).  Every node computes the same sequence, but only
 * the first port is the same everywhere: walk only where one node decides
 * (the step's first node, which tells the others: sp_relay.h).  Returns the port taken, or -1 with errno EINVAL
 * (bad range, TRIES 0, no TRY_PORT), EADDRINUSE (every port tried was
 * taken) or TRY_PORT's. */
int sp_port_walk (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi,
                  unsigned tries, int (*try_port) (unsigned port, void *arg),
                  void *arg);

/* The directory of the claims: SP_PORT_DIR_PARENT/SP_PORT_DIR_NAME, and in
 * it one directory a network namespace (SP_PORT_NETNS_FMT with the inode
 * of /proc/self/ns/net), holding one lock file a port. */
#define SP_PORT_DIR_PARENT "/run"
#define SP_PORT_DIR_NAME "slurm-ddp"
#define SP_PORT_NETNS_FMT "net-%llu"

/* Open the directory NAME (one path component) in the directory PARENT (a
 * descriptor, or AT_FDCWD), creating it (mode 0755) when missing, without
 * following a symbolic link, and check it: a directory owned by this
 * process's effective uid that nobody else may write (no group or other
 * write bit).  Returns a descriptor (close-on-exec), or -1 with errno
 * EINVAL (NAME NULL, empty, with '/', "." or ".."), ENOTDIR (not a
 * directory, a symbolic link included), EPERM (another owner, or writable
 * by others), or mkdirat's and openat's. */
int sp_port_dir (int parent, const char *name);

/* Claim PORT in the claim directory DIR (from sp_port_dir): open or create
 * the lock file named PORT in decimal (mode 0600, never through a symbolic
 * link; it must be a regular file with one link, owned by this process's
 * effective uid, that nobody else may write), take an exclusive flock on it
 * without waiting and write OWNER (a line saying who holds it) in it.  The
 * claim holds while the descriptor (close-on-exec) is open in some
 * process: close it to give the claim up; the kernel does when the process
 * dies, so a killed holder never leaves a port claimed (the file stays,
 * unlocked).  Returns the descriptor, or -1 with errno EADDRINUSE (another
 * holds the claim: HOLDER, LEN bytes, when not NULL, receives its OWNER
 * text, printable characters only, possibly empty), EINVAL (OWNER NULL,
 * PORT outside 1..65535), EPERM (a file that fails the checks) or the
 * system calls'. */
int sp_port_lock (int dir, unsigned port, const char *owner, char *holder,
                  size_t len);

/* The port to use from Slurm's reserved ports for a step
 * (SLURM_STEP_RESV_PORTS: "N", "N-M" items, comma-separated, ascending, as
 * srun --resv-ports or MpiParams=ports= give them): the last one.  Returns
 * the port, or -1 with errno EINVAL (NULL, empty, malformed, a range with
 * N > M) or ERANGE (a port outside 1..65535). */
int sp_port_resv_last (const char *list);

/* Is a TCP socket listening on PORT, according to the kernel's table at
 * PATH (/proc/net/tcp or /proc/net/tcp6 format: a header line, then one
 * socket a line with "local_address" as HEX:PORTHEX and the state in hex,
 * 0A for LISTEN)?  Returns 1 (yes), 0 (no, or PATH does not exist), or -1
 * with errno set when PATH cannot be read or a line is malformed. */
int sp_port_listening (const char *path, unsigned port);

/* Like sp_port_listening, and when a socket listens on PORT, set *UID (when
 * not NULL) to its owner's uid (the table's "uid" column) of the first
 * such line.  Returns 1, 0 or -1 as sp_port_listening. */
int sp_port_listener (const char *path, unsigned port, long *uid);

#endif /* SP_PORT_H */
