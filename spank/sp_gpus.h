/* sp_gpus.h - GPU lists (CUDA_VISIBLE_DEVICES) and the per-task GPU choice.
 *
 * A GPU list is what Slurm's gres put in CUDA_VISIBLE_DEVICES: comma-separated
 * tokens that may be indices ("0,1") or UUIDs ("GPU-8f6c...", "MIG-..."); the
 * plugin treats them as opaque.  A token is 1..SP_GPU_TOKEN_MAX characters
 * from [A-Za-z0-9_.:/-]; an empty list has no GPUs.  Anything else (empty
 * tokens, blanks, other characters, too long) is rejected.
 */
#ifndef SP_GPUS_H
#define SP_GPUS_H

#include <stdbool.h>
#include <stddef.h>

#include "sp_option.h"
#include "sp_plan.h"

#define SP_GPU_TOKEN_MAX 128
#define SP_GPU_LIST_MAXLEN 8192

/* Number of GPUs in LIST ("" or NULL: 0).  Returns the count, or -1 (errno
 * EINVAL) if LIST is malformed. */
int sp_gpus_count (const char *list);

/* Copy token IDX (from 0) of LIST to BUF (LEN bytes).  Returns 0, or -1
 * with errno EINVAL (malformed list or NULL), ERANGE (IDX >= count) or
 * ENOSPC (BUF too small). */
int sp_gpus_pick (const char *list, unsigned idx, char *buf, size_t len);

/* Does SLURMD_TRES_BIND (what slurmd tells the task of srun's
 * --gpu-bind / --tres-bind, e.g. "gpu:none", "gpu:verbose,closest") turn
 * GPU binding off: a "gpu:" entry (entries separated by ';') whose
 * comma-separated words include "none"?  NULL or anything else: false. */
bool sp_gpus_bind_none (const char *tres_bind);

/* What one task of a step has, for the decision below. */
struct sp_task_gpus {
    const char *visible;      /* the task's CUDA_VISIBLE_DEVICES, or NULL */
    const char *step_visible; /* the step's CUDA_VISIBLE_DEVICES on this
                                 node, as user_init saw it before Slurm's
                                 per-task binding, or NULL */
    bool bind_none;           /* srun --gpu-bind=none (sp_gpus_bind_none) */
    int gpus_on_node;         /* SLURM_GPUS_ON_NODE: the step's GPUs on
                                 this node, or -1 when unknown */
    unsigned local_rank;      /* this task's rank on the node */
    unsigned local_tasks;     /* tasks of the step on this node */
    enum sp_backend want;     /* auto, host or nccl */
    bool bind;                /* binding allowed (admin and user) */
    /* For auto only: */
    enum sp_auto_rule rule;   /* the step's rule (sp_plan_rule) */
    unsigned max_local_tasks; /* tasks on the step's busiest node */
    bool driver;              /* this node has an NVIDIA driver */
    const char *why;          /* sp_plan_reason(), for messages, or NULL */
    const char *node;         /* this node's name, for messages, or NULL */
};

/* The decision: the backend and, when binding, the task's one GPU. */
struct sp_task_choice {
    enum sp_backend backend;          /* host or nccl */
    bool bound;                       /* set CUDA_VISIBLE_DEVICES to gpu */
    char gpu[SP_GPU_TOKEN_MAX + 1];
    bool share;                       /* the task keeps its own share of
                                         several GPUs, all visible; libddp
                                         is to use the first (DDP_DEVICE=0) */
    bool step_list;                   /* not bound, and the task had no GPU
                                         list: set CUDA_VISIBLE_DEVICES to
                                         the step's (step_visible) */
    bool unlisted;                    /* the node has GPUs for the step,
                                         but the task has no list and the
                                         step's could not stand in: it runs
                                         unbound (see sp_gpus_note) */
};

/* Decide the backend and GPU of one task.  GPUs are the task's
 * CUDA_VISIBLE_DEVICES.  When the task has none but the node has GPUs for
 * the step (SLURM_GPUS_ON_NODE) and STEP_VISIBLE lists exactly that many
 * (srun --gpu-bind=none: Slurm 22.05 then gives the tasks no list at all),
 * the task's GPUs are the step's list, as for --gres=gpu:N, and an unbound
 * task gets that list (step_list).
 * When the task holds fewer than the step's GPUs on the node and the node
 * has at least one GPU per local task, Slurm has already given each task its
 * own share (--gpus-per-task, --gpu-bind): binding keeps a share of one GPU
 * bound to it, and leaves a share of several whole (share: every GPU stays
 * visible, libddp uses the first); otherwise binding needs one GPU per local
 * task and picks the one at the task's local rank.  Binding happens
 * whenever it is allowed and possible, for either backend.
 * nccl without a GPU of its own (with binding on) is an error.  auto follows
 * the step's rule, the same on every node (sp_plan.h): nccl needs a GPU per
 * local task (bound or not: NCCL cannot run two ranks on one GPU) and an
 * NVIDIA driver; where the rule says nccl and this node cannot, or the rule
 * says "nccl where possible, refuse elsewhere" and it is not possible here,
 * the task is refused rather than given another backend than the rest of
 * the step.
 * Returns 0 and fills *OUT; on failure -1 with errno EINVAL and a message in
 * ERR (ERRLEN bytes) that names the counts and what to do. */
int sp_gpus_choose (const struct sp_task_gpus *in, struct sp_task_choice *out,
                    char *err, size_t errlen);

/* The one-line warning for a task that sp_gpus_choose() left unlisted
 * (host or auto: nccl is refused instead), with the cause and what to do,
 * into BUF (LEN bytes).  Returns 0, or -1 (EINVAL) on NULL arguments. */
int sp_gpus_note (const struct sp_task_gpus *in, enum sp_backend backend,
                  char *buf, size_t len);

#endif /* SP_GPUS_H */
