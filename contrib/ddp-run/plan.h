/* plan.h - a ddp-run job's backend and each rank's GPU, decided before any
 * rank starts, as the SPANK plugin decides them for a step.
 *
 * Every simulated node of ddp-run is this one machine, so each sees all of
 * its GPUs (machine.h), as the nodes of a cluster would each see their own.
 * Then, as under srun --ddp:
 *   nccl  needs a GPU per rank on every node: a node with more ranks than
 *         GPUs is refused, naming the counts and what to do (also without
 *         binding: NCCL cannot run two ranks of one host on one GPU);
 *   auto  is nccl when an NVIDIA driver is there and the busiest node has
 *         a GPU per rank, else host; one backend for the whole job;
 *   host  is host.
 * Binding is the plugin's own choice (sp_gpus_choose): whenever allowed and
 * possible, for either backend, the rank with local rank L gets the L-th
 * GPU of the list as its only one.
 */
#ifndef DR_PLAN_H
#define DR_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "machine.h"
#include "sp_gpus.h"
#include "sp_option.h"

/* What the user asked for. */
struct dr_job {
    enum sp_backend want;   /* SP_BACKEND_AUTO, _HOST or _NCCL */
    const char *want_from;  /* where want came from, for messages
                               ("--backend nccl", "DDP_BACKEND=nccl") */
    bool bind;              /* false: --nobind */
    int size;               /* ranks, >= 1 */
    int nnodes;             /* simulated nodes, 1 .. size */
    const int *node_of;     /* the node of each rank (size entries), every
                               node 0 .. nnodes-1 holding one at least */
};

/* What the ranks get. */
struct dr_plan {
    enum sp_backend backend;           /* SP_BACKEND_HOST or _NCCL */
    int max_local;                     /* ranks on the busiest node */
    char why[256];                     /* why this backend, one phrase */
    char (*gpu)[SP_GPU_TOKEN_MAX + 1]; /* each rank's CUDA_VISIBLE_DEVICES,
                                          "" when it is not bound */
};

/* The number of ranks when the user gave none: one per GPU on each of
 * NNODES nodes.  Returns it, or -1 with a message in ERR (ERRLEN bytes)
 * when WANT is host or there is no GPU to count. */
int dr_plan_default_size (const struct dr_gpus *g, enum sp_backend want,
                          int nnodes, char *err, size_t errlen);

/* Decide the backend and the binding of job J on GPUs G into *P.  Returns
 * 0, or -1 with the reason and what to do in ERR (ERRLEN bytes), *P then
 * holding nothing to free.  A plan is freed with dr_plan_free(). */
int dr_plan_make (const struct dr_job *j, const struct dr_gpus *g,
                  struct dr_plan *p, char *err, size_t errlen);

void dr_plan_free (struct dr_plan *p);

#endif /* DR_PLAN_H */
