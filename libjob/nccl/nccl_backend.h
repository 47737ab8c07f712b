/* nccl_backend.h - the NCCL backend of libddp (internal; see doc/nccl.md).
 *
 * Compiled only when configure found CUDA and NCCL (HAVE_NCCL).  The core
 * selects it for DDP_BACKEND=nccl, and for auto when nccl_backend_probe()
 * finds a GPU.  No CUDA or NCCL type appears here, so the core includes this
 * header without their include paths.
 */
#ifndef DDP_NCCL_BACKEND_H
#define DDP_NCCL_BACKEND_H

#include <stddef.h>

#include "backend.h"

/* The backend: create() bootstraps with exactly one bootstrap_exchange()
 * carrying every rank's host, GPU identity and the NCCL unique id(s), checks
 * that no two ranks share a GPU, then creates the communicator non-blocking
 * with the cfg->timeout_s deadline. */
extern const struct ddp_backend ddpi_backend_nccl;

/* Can this process use the NCCL backend?  Loads CUDA and NCCL (nccl_dl.h)
 * if not yet done.  Returns 0 when they load and CUDA reports at least one
 * device; else DDP_ECUDA with the reason in why (what was looked for and
 * where; no driver on this node; no device visible).  Does not create a
 * CUDA context.  `auto` picks the host backend when it fails. */
int nccl_backend_probe (char *why, size_t whylen);

/* ddp_gpu_mem_info() of ddp.h: cudaMemGetInfo on the current device (used =
 * total - free, all processes).  Needs no communicator.  Returns 0, or
 * DDP_ENOTSUP without a CUDA device, DDP_ECUDA when the query fails; the
 * outputs are set only on success. */
int nccl_backend_mem_info (size_t *used, size_t *total);

/* ddp_nccl_info() of ddp.h: where CUDA and NCCL are loaded from, or are
 * looked for (nccl_dl.h), into buf.  Loads nothing.  Returns buf. */
const char *nccl_backend_describe (char *buf, size_t len);

#endif /* DDP_NCCL_BACKEND_H */
