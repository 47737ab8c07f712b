/* slurmstepd.c - the plugin in slurmstepd (remote context).
 *
 * user_init (once per node and step, before any task): decide whether the
 * step runs with ddp, and compute what all its tasks share: MASTER_ADDR (the
 * first node of SLURM_STEP_NODELIST, which runs rank 0 for block and cyclic
 * distributions, resolved to an address) and MASTER_PORT.  Errors there do
 * not fail a step in Slurm, so they are kept and reported by task_init.
 *
 * task_init (per task, as the user, before exec): the rank variables, the
 * backend and the task's GPU.  An error fails the task's launch.
 *
 * Everything read from the job environment is untrusted and parsed strictly
 * (sp_*.c); nothing here runs a program or writes a file.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "slurmstepd.h"
#include "sp_addr.h"
#include "sp_args.h"
#include "sp_err.h"
#include "sp_gpus.h"
#include "sp_hostlist.h"
#include "sp_port.h"
#include "sp_strint.h"

/* Step ids at and above this are Slurm's special steps (batch, extern,
 * interactive, ...): never a ddp step. */
#define SPECIAL_STEP_MIN 0xfffffff0U

/* The step this slurmstepd runs, from user_init for its tasks. */
static struct {
    bool active;                  /* this step runs with ddp */
    struct sp_effective request;  /* backend and binding */
    char error[SP_ERRLEN];        /* set: fail every task with it */
    char master_addr[NI_MAXHOST];
    int master_port;
} step;

/* Keep an error that fails every task of the step. */
static __attribute__ ((format (printf, 1, 2)))
void step_error (const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (step.error, sizeof (step.error), fmt, ap);
    va_end (ap);
}

/* MASTER_ADDR from SLURM_STEP_NODELIST, checked against the node count. */
static int find_master (spank_t sp, uint32_t nnodes)
{
    static char list[SP_HOSTLIST_MAXLEN + 1];
    char host[256];
    spank_err_t rc;
    long n;

    rc = spank_getenv (sp, "SLURM_STEP_NODELIST", list, sizeof (list));
    if (rc != ESPANK_SUCCESS) {
        step_error ("ddp: cannot read SLURM_STEP_NODELIST: %s",
                    spank_strerror (rc));
        return -1;
    }
    if (sp_hostlist_first (list, host, sizeof (host)) < 0
        || (n = sp_hostlist_count (list)) < 0) {
        step_error ("ddp: SLURM_STEP_NODELIST is not a valid host list: "
                    "'%.64s'", list);
        return -1;
    }
    if ((uint32_t) n != nnodes) {
        step_error ("ddp: SLURM_STEP_NODELIST names %ld nodes but the step "
                    "has %" PRIu32, n, nnodes);
        return -1;
    }
    (void) sp_resolve (host, step.master_addr, sizeof (step.master_addr));
    return 0;
}

/* MASTER_PORT and MASTER_ADDR of step STEPID.  Returns 0, or -1 after
 * step_error(). */
static int find_rendezvous (spank_t sp, uint32_t stepid)
{
    const struct sp_conf *conf = sp_args_conf ();
    uint32_t jobid, nnodes;

    if (spank_get_item (sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS) {
        step_error ("ddp: cannot get the job id and node count from Slurm");
        return -1;
    }
    step.master_port = sp_port_derive (jobid, stepid, conf->port_lo,
                                       conf->port_hi);
    if (step.master_port < 0) {
        step_error ("ddp: no MASTER_PORT in range %u-%u", conf->port_lo,
                    conf->port_hi);
        return -1;
    }
    return find_master (sp, nnodes);
}

int sp_slurmstepd_user_init (spank_t sp)
{
    uint32_t stepid;

    step.active = false;
    if (spank_get_item (sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS
        || stepid >= SPECIAL_STEP_MIN)
        return 0;
    step.request = sp_args_effective ();
    step.active = step.request.backend != SP_BACKEND_OFF;
    if (step.active)
        (void) find_rendezvous (sp, stepid);
    return 0;
}

/* Log MSG: in the task, slurmstepd's log goes to the task's stderr too, so
 * srun shows it to the user. */
static int task_fail (const char *msg)
{
    slurm_error ("%s", msg);
    return -1;
}

/* Read an optional variable of the task's environment into BUF.  Returns a
 * pointer to BUF, NULL when unset, or sets *BAD when unreadable. */
static const char *get_env (spank_t sp, const char *name, char *buf, int len,
                            bool *bad)
{
    spank_err_t rc = spank_getenv (sp, name, buf, len);

    if (rc == ESPANK_SUCCESS)
        return buf;
    if (rc != ESPANK_ENV_NOEXIST)
        *bad = true;
    return NULL;
}

/* Who a task is in its step (SPANK items). */
struct task_ids {
    uint32_t rank, size, nodeid, nnodes, local_tasks;
    int local_rank;
};

/* The task's ranks and counts from Slurm, range-checked.  Returns 0 or -1. */
static int get_ids (spank_t sp, struct task_ids *t)
{
    if (spank_get_item (sp, S_TASK_GLOBAL_ID, &t->rank) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_TOTAL_TASK_COUNT, &t->size)
           != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_ID, &t->local_rank) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_LOCAL_TASK_COUNT, &t->local_tasks)
           != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NODEID, &t->nodeid) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NNODES, &t->nnodes) != ESPANK_SUCCESS)
        return -1;
    if (t->local_rank < 0 || (uint32_t) t->local_rank >= t->local_tasks
        || t->rank >= t->size || t->nodeid >= t->nnodes)
        return -1;
    return 0;
}

/* Set NAME=V in the task's environment.  Returns 0 or -1. */
static int set_u32 (spank_t sp, const char *name, uint32_t v)
{
    char buf[16];

    snprintf (buf, sizeof (buf), "%" PRIu32, v);
    return spank_setenv (sp, name, buf, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* Set the task's variables: the torch ones (torch_env=yes), DDP_BACKEND and,
 * when bound, CUDA_VISIBLE_DEVICES.  Returns 0, or -1 when any failed. */
static int set_env (spank_t sp, const struct task_ids *t,
                    const struct sp_task_choice *c)
{
    int rc = 0;

    if (sp_args_conf ()->torch_env) {
        rc |= set_u32 (sp, "RANK", t->rank);
        rc |= set_u32 (sp, "WORLD_SIZE", t->size);
        rc |= set_u32 (sp, "LOCAL_RANK", (uint32_t) t->local_rank);
        rc |= set_u32 (sp, "LOCAL_WORLD_SIZE", t->local_tasks);
        rc |= set_u32 (sp, "NODE_RANK", t->nodeid);
        rc |= set_u32 (sp, "NNODES", t->nnodes);
        rc |= spank_setenv (sp, "MASTER_ADDR", step.master_addr, 1)
              == ESPANK_SUCCESS ? 0 : -1;
        rc |= set_u32 (sp, "MASTER_PORT", (uint32_t) step.master_port);
    }
    rc |= spank_setenv (sp, "DDP_BACKEND", sp_backend_name (c->backend), 1)
          == ESPANK_SUCCESS ? 0 : -1;
    if (c->bound)
        rc |= spank_setenv (sp, "CUDA_VISIBLE_DEVICES", c->gpu, 1)
              == ESPANK_SUCCESS ? 0 : -1;
    return rc;
}

/* SLURM_GPUS_ON_NODE, set by slurmstepd: the step's GPUs on this node, or
 * -1 (unknown) when unset or not a number. */
static int gpus_on_node (spank_t sp)
{
    char buf[16];
    unsigned long long n;
    bool bad = false;

    if (get_env (sp, "SLURM_GPUS_ON_NODE", buf, sizeof (buf), &bad)
        && sp_parse_uint (buf, 0, 65535, &n) == 0)
        return (int) n;
    return -1;
}

/* Fill *IN, what the GPU choice of task T needs.  Returns 0, or -1 after
 * logging why. */
static int describe_task (spank_t sp, const struct task_ids *t,
                          struct sp_task_gpus *in)
{
    static char visible[SP_GPU_LIST_MAXLEN + 1];
    bool bad = false;

    memset (in, 0, sizeof (*in));
    in->driver = true;          /* auto is still decided per node */
    in->visible = get_env (sp, "CUDA_VISIBLE_DEVICES", visible,
                           sizeof (visible), &bad);
    if (bad)
        return task_fail ("ddp: CUDA_VISIBLE_DEVICES is too long");
    in->gpus_on_node = gpus_on_node (sp);
    in->local_rank = (unsigned) t->local_rank;
    in->local_tasks = t->local_tasks;
    in->want = step.request.backend;
    in->bind = step.request.bind;
    return 0;
}

int sp_slurmstepd_task_init (spank_t sp)
{
    struct task_ids t;
    struct sp_task_gpus in;
    struct sp_task_choice choice;
    char err[SP_ERRLEN];

    if (!step.active)
        return 0;
    if (step.error[0])
        return task_fail (step.error);
    if (get_ids (sp, &t) < 0)
        return task_fail ("ddp: cannot get the task's ranks from Slurm");
    if (describe_task (sp, &t, &in) < 0)
        return -1;
    if (sp_gpus_choose (&in, &choice, err, sizeof (err)) < 0)
        return task_fail (err);
    if (set_env (sp, &t, &choice) < 0)
        return task_fail ("ddp: cannot set the task's environment");
    return 0;
}
