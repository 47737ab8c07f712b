/* sp_port.h - MASTER_PORT for a job step, and whether it is taken. */
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
