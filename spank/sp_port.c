/* sp_port.c - MASTER_PORT for a job step. */
#include "config.h"
#include <errno.h>

#include "sp_port.h"

/* A 32-bit integer hash (xorshift-multiply), so neighbouring job ids land
 * far apart in the range. */
static uint32_t mix32 (uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

int sp_port_derive (uint32_t jobid, uint32_t stepid, unsigned lo, unsigned hi)
{
    uint64_t span;

    if (lo < 1 || lo > hi || hi > 65535) {
        errno = EINVAL;
        return -1;
    }
    span = (uint64_t) hi - lo + 1;
    return (int) (lo + ((uint64_t) mix32 (jobid) + stepid) % span);
}
