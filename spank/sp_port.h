/* sp_port.h - MASTER_PORT for a job step, whether it is taken, and the
 * claim a step holds on it. */
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
 * (a single-node step).  Returns the port taken, or -1 with errno EINVAL
 * (bad range, TRIES 0, no TRY_PORT), EADDRINUSE (every port tried was
 * taken) or TRY_PORT's. */
int sp_port_walk (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi,
                  unsigned tries, int (*try_port) (unsigned port, void *arg),
                  void *arg);

/* The prefix of the claim names of the plugin (the port number follows). */
#define SP_PORT_CLAIM_PREFIX "slurm-ddp/master-port/"

/* Claim PORT in this network namespace: bind a datagram AF_UNIX socket to
 * the abstract name PREFIX followed by the port in decimal (no file, no
 * listen, close-on-exec so that no program started later inherits it).
 * The claim holds while the descriptor is open in some process; close it
 * to give it up (the kernel also does when the process dies).  It reserves
 * nothing in TCP: it only tells claimers with the same PREFIX apart.
 * Returns the descriptor, or -1 with errno EADDRINUSE (someone holds the
 * claim), EINVAL (PREFIX NULL or too long, PORT outside 1..65535), or
 * socket()'s (EMFILE, ...). */
int sp_port_claim (const char *prefix, unsigned port);

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

#endif /* SP_PORT_H */
