/* sp_plan.h - one backend for the whole step under --ddp=auto.
 *
 * Each slurmstepd sees its own node only: its tasks and the GPUs Slurm gave
 * the step there.  Deciding auto per node gave nccl on a node with a GPU per
 * task and host on another.  srun sees the whole step's layout and its GPU
 * request, but not how slurmctld spread the GPUs over the nodes.  So srun
 * classifies the request (sp_plan_classify) and hands the class to every
 * node in the step's environment (SP_PLAN_ENV, see sp_plan_format); every
 * node then applies the same rule to the same inputs (the class and the
 * step's tasks per node, which every node knows) and checks only that its
 * own node can do what the rule says (sp_gpus_choose).
 *
 * The request classes and the rule each gives (T: the tasks of the step's
 * busiest node):
 *   per-task   (--gpus-per-task=N, N >= 1)       nccl on every node
 *   per-node:N (--gpus-per-node=N, --gres=gpu:N) nccl if N >= T, else host
 *   none       (--gres=none, a count of 0)       host
 *   other      (--gpus=N, --gpus-per-socket, --ntasks-per-gpu, a request
 *               the plugin cannot read)          nccl on a node with a GPU
 *                                                per task, refusal elsewhere
 *   inherit    (no GPU request: the job's GPUs)  nccl if this node has T
 *                                                GPUs, else host
 * Every class but inherit gives one backend or a refusal; inherit assumes
 * the job has the same GPU count on every node (the usual case).
 */
#ifndef SP_PLAN_H
#define SP_PLAN_H

#include <stdbool.h>
#include <stddef.h>

/* The variable srun sets for the tasks' slurmstepd.  Its name starts with
 * SLURM so that srun --export=NONE still passes it on. */
#define SP_PLAN_ENV "SLURM_SPANK_DDP_PLAN"

/* Longest plan text. */
#define SP_PLAN_MAXLEN 64

enum sp_gpureq {
    SP_GPUREQ_INHERIT = 0,
    SP_GPUREQ_NONE,
    SP_GPUREQ_PER_TASK,
    SP_GPUREQ_PER_NODE,
    SP_GPUREQ_OTHER,
};

/* What srun tells the nodes. */
struct sp_plan {
    enum sp_gpureq gpus;    /* the class of the step's GPU request */
    unsigned per_node;      /* SP_GPUREQ_PER_NODE: GPUs per node, >= 1 */
    bool kill_set;          /* the plugin set SLURM_KILL_BAD_EXIT in srun */
};

/* srun's GPU options as srun applies them: each the command line's value,
 * else the environment's; NULL when not given. */
struct sp_gpu_opts {
    const char *gpus_per_task;   /* --gpus-per-task, SLURM_GPUS_PER_TASK */
    const char *gpus_per_node;   /* --gpus-per-node, SLURM_GPUS_PER_NODE */
    const char *gres;            /* --gres, SLURM_GRES, SLURM_STEP_GRES */
    const char *gpus;            /* --gpus, -G, SLURM_GPUS */
    const char *gpus_per_socket; /* --gpus-per-socket, SLURM_GPUS_PER_SOCKET */
    const char *ntasks_per_gpu;  /* --ntasks-per-gpu, SLURM_NTASKS_PER_GPU */
    bool unsure;                 /* a GPU option was abbreviated */
};

/* How a node resolves auto. */
enum sp_auto_rule {
    SP_AUTO_UNIFORM = 0, /* nccl when this node has a GPU for every task of
                            the busiest node, else host */
    SP_AUTO_NCCL,        /* nccl; a node without a GPU per task refuses */
    SP_AUTO_HOST,        /* host */
    SP_AUTO_EACH,        /* nccl with a GPU per task on this node, else
                            refuse */
};

/* Classify the request O into P's gpus and per_node (see above; kill_set is
 * left alone).  Never fails: a value it cannot read is class other.  O NULL
 * is class inherit. */
void sp_plan_classify (const struct sp_gpu_opts *o, struct sp_plan *p);

/* Write P as text ("per-node:4", "inherit,kill") to BUF (LEN bytes).
 * Returns 0, or -1 with errno EINVAL (NULL, a bad class) or ENOSPC. */
int sp_plan_format (const struct sp_plan *p, char *buf, size_t len);

/* Parse text from sp_plan_format (strictly: exact words, a count of
 * 1..65535 without leading zeros: only what sp_plan_format writes).
 * Returns 0 and fills *P, or -1 with errno EINVAL, *P alone. */
int sp_plan_parse (const char *s, struct sp_plan *p);

/* The rule P gives when the step's busiest node runs MAX_LOCAL tasks. */
enum sp_auto_rule sp_plan_rule (const struct sp_plan *p, unsigned max_local);

/* Why, in a few words for messages ("the step asks for GPUs per task
 * (--gpus-per-task)").  Never NULL. */
const char *sp_plan_reason (const struct sp_plan *p);

#endif /* SP_PLAN_H */
