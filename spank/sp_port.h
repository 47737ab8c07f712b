/* sp_port.h - MASTER_PORT for a job step. */
#ifndef SP_PORT_H
#define SP_PORT_H

#include <stdint.h>

/* Derive the rendezvous port of step STEPID of job JOBID from the inclusive
 * range [LO, HI]: a hash of the job id picks the job's base within the range,
 * and the step id is added to it (modulo the range size), so up to HI-LO+1
 * consecutive steps of one job get distinct ports and different jobs are
 * spread over the range.  Every node computes the same value.
 * Returns the port, or -1 (errno EINVAL) unless 1 <= LO <= HI <= 65535. */
int sp_port_derive (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi);

#endif /* SP_PORT_H */
