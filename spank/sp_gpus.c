/* sp_gpus.c - GPU lists and the per-task GPU choice. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sp_gpus.h"
#include "sp_err.h"

static bool is_token_char (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
        || c == ':' || c == '/';
}

/* Find token IDX of LIST: sets *START and *TLEN.  Returns the token count
 * when IDX is past the end (*START NULL), or -1 (EINVAL) if malformed. */
static int scan (const char *list, unsigned idx, const char **start,
                 size_t *tlen)
{
    const char *p = list, *tok = list;
    int count = 0;

    *start = NULL;
    *tlen = 0;
    if (!list || strnlen (list, SP_GPU_LIST_MAXLEN + 1) > SP_GPU_LIST_MAXLEN)
        goto inval;
    if (*list == '\0')
        return 0;
    for (;; p++) {
        if (*p == ',' || *p == '\0') {
            size_t n = (size_t) (p - tok);
            if (n == 0 || n > SP_GPU_TOKEN_MAX)
                goto inval;
            if ((unsigned) count == idx && !*start) {
                *start = tok;
                *tlen = n;
            }
            count++;
            if (*p == '\0')
                break;
            tok = p + 1;
        }
        else if (!is_token_char (*p))
            goto inval;
    }
    return count;
inval:
    *start = NULL;
    errno = EINVAL;
    return -1;
}

int sp_gpus_count (const char *list)
{
    const char *s;
    size_t n;

    if (!list)
        return 0;
    return scan (list, ~0U, &s, &n);
}

int sp_gpus_pick (const char *list, unsigned idx, char *buf, size_t len)
{
    const char *s;
    size_t n;

    if (!buf || len == 0 || scan (list, idx, &s, &n) < 0) {
        errno = EINVAL;
        return -1;
    }
    if (!s) {
        errno = ERANGE;
        return -1;
    }
    if (n >= len) {
        errno = ENOSPC;
        return -1;
    }
    memcpy (buf, s, n);
    buf[n] = '\0';
    return 0;
}


/* Resolve auto for a task of IN with NGPUS GPUs, ENOUGH when there is one
 * per local task: sets *B.  Returns 0, or -1 with the reason in ERR. */
static int resolve_auto (const struct sp_task_gpus *in, int ngpus, bool enough,
                         enum sp_backend *b, char *err, size_t errlen)
{
    const char *node = in->node ? in->node : "this node";
    const char *why = in->why ? in->why : "every node can run it";
    unsigned busiest = in->max_local_tasks > in->local_tasks
                       ? in->max_local_tasks : in->local_tasks;
    int node_gpus = in->gpus_on_node >= 0 ? in->gpus_on_node : ngpus;
    bool nccl = false;

    switch (in->rule) {
    case SP_AUTO_HOST:
        break;
    case SP_AUTO_UNIFORM:
        nccl = enough && node_gpus >= 0 && (unsigned) node_gpus >= busiest;
        break;
    case SP_AUTO_NCCL:
        if (!enough)
            return sp_fail (err, errlen, "ddp: --ddp=auto chose nccl for the "
                            "whole step because %s, but %s has %u local "
                            "tasks and %d GPUs; use --ddp=host, or request "
                            "one GPU per task on every node", why, node,
                            in->local_tasks, ngpus);
        nccl = true;
        break;
    case SP_AUTO_EACH:
        if (!enough)
            return sp_fail (err, errlen, "ddp: --ddp=auto needs one backend "
                            "for the whole step, but %s has %u local tasks "
                            "and %d GPUs, and %s; request --gpus-per-node or "
                            "--gpus-per-task, or use --ddp=host", node,
                            in->local_tasks, ngpus, why);
        nccl = true;
        break;
    default:
        return sp_fail (err, errlen, "ddp: internal error: bad auto rule");
    }
    if (nccl && !in->driver)
        return sp_fail (err, errlen, "ddp: --ddp=auto chose nccl for the whole "
                        "step because %s, but %s has no NVIDIA driver (no "
                        "/proc/driver/nvidia/version, no /dev/nvidiactl), so "
                        "NCCL cannot run there; use --ddp=host (or --ddp=nccl "
                        "to insist)", why, node);
    *b = nccl ? SP_BACKEND_NCCL : SP_BACKEND_HOST;
    return 0;
}

/* Is WORD (LEN bytes, no NUL needed) "none"? */
static bool is_none (const char *word, size_t len)
{
    return len == 4 && memcmp (word, "none", 4) == 0;
}

/* Does the GPU entry at ENTRY (LEN bytes) hold the word "none"?  Slurm
 * 22.05 writes it "gpu:...", 24.11 "gres/gpu:...". */
static bool gpu_entry_none (const char *entry, size_t len)
{
    const char *p, *end = entry + len, *comma;
    size_t skip;

    if (len >= 9 && memcmp (entry, "gres/gpu:", 9) == 0)
        skip = 9;
    else if (len >= 4 && memcmp (entry, "gpu:", 4) == 0)
        skip = 4;
    else
        return false;
    for (p = entry + skip; p < end; p = comma + 1) {
        comma = memchr (p, ',', (size_t) (end - p));
        if (!comma)
            comma = end;
        if (is_none (p, (size_t) (comma - p)))
            return true;
    }
    return false;
}

bool sp_gpus_bind_none (const char *tres_bind)
{
    const char *p, *semi;
    size_t len;

    if (!tres_bind)
        return false;
    len = strnlen (tres_bind, SP_GPU_LIST_MAXLEN + 1);
    if (len > SP_GPU_LIST_MAXLEN)
        return false;
    for (p = tres_bind;; p = semi + 1) {
        semi = strchr (p, ';');
        if (gpu_entry_none (p, semi ? (size_t) (semi - p) : strlen (p)))
            return true;
        if (!semi)
            return false;
    }
}

/* The GPU list the decision uses for task IN: its own, or the step's when
 * it has none and the step's has exactly SLURM_GPUS_ON_NODE entries (sets
 * *FROM_STEP).  Never NULL. */
static const char *task_list (const struct sp_task_gpus *in, bool *from_step)
{
    int own = sp_gpus_count (in->visible);

    *from_step = false;
    if (own != 0 || in->gpus_on_node <= 0 || !in->step_visible
        || sp_gpus_count (in->step_visible) != in->gpus_on_node)
        return in->visible ? in->visible : "";
    *from_step = true;
    return in->step_visible;
}

/* --ddp=nccl on a task without any GPU: the message for ERR, which names
 * the cause.  Returns -1. */
static int fail_no_gpu (const struct sp_task_gpus *in, char *err,
                        size_t errlen)
{
    if (in->gpus_on_node > 0 && in->bind_none)
        return sp_fail (err, errlen, "ddp: --ddp=nccl needs a GPU per task, "
                        "but srun --gpu-bind=none left the tasks without a "
                        "GPU list (CUDA_VISIBLE_DEVICES unset) and the "
                        "plugin could not read the step's %d GPUs on this "
                        "node; drop --gpu-bind=none (the plugin binds one "
                        "GPU per task itself, and --ddp=nccl,nobind keeps "
                        "them all visible)", in->gpus_on_node);
    if (in->gpus_on_node > 0)
        return sp_fail (err, errlen, "ddp: --ddp=nccl needs a GPU per task, "
                        "but Slurm gave this task no GPU list "
                        "(CUDA_VISIBLE_DEVICES unset) although the step has "
                        "%d GPUs on this node (SLURM_GPUS_ON_NODE); check "
                        "the step's --gpu-bind and --tres-bind options, or "
                        "use --ddp=host", in->gpus_on_node);
    return sp_fail (err, errlen, "ddp: --ddp=nccl needs a GPU per task, but "
                    "this step has no GPU on this node (%u local tasks, 0 "
                    "GPUs); request GPUs (--gres=gpu:N) or use --ddp=host",
                    in->local_tasks);
}

/* Bind task IN to a GPU of LIST (NGPUS entries), OWN_SHARE when that is
 * the task's own share: fills C.  Returns 0, or -1 with a message. */
static int bind_task (const struct sp_task_gpus *in, const char *list,
                      int ngpus, bool own_share, struct sp_task_choice *c,
                      char *err, size_t errlen)
{
    unsigned idx = own_share ? 0 : in->local_rank;

    if (own_share && ngpus > 1) {
        c->share = true;
        return 0;
    }
    if (sp_gpus_pick (list, idx, c->gpu, sizeof (c->gpu)) < 0)
        return sp_fail (err, errlen, "ddp: internal error: cannot pick GPU "
                        "%u of '%.*s'", idx, 64, list);
    c->bound = true;
    return 0;
}

int sp_gpus_choose (const struct sp_task_gpus *in, struct sp_task_choice *out,
                    char *err, size_t errlen)
{
    struct sp_task_choice c = { .backend = SP_BACKEND_HOST, .bound = false };
    const char *list;
    int ngpus;
    bool own_share, enough, from_step;

    if (!in || !out || in->local_tasks == 0
        || in->local_rank >= in->local_tasks
        || (in->want != SP_BACKEND_AUTO && in->want != SP_BACKEND_HOST
            && in->want != SP_BACKEND_NCCL))
        return sp_fail (err, errlen, "ddp: internal error: bad task description");
    if (sp_gpus_count (in->visible) < 0)
        return sp_fail (err, errlen, "ddp: CUDA_VISIBLE_DEVICES is not a valid "
                     "GPU list: '%.*s'", 64, in->visible);
    list = task_list (in, &from_step);
    ngpus = sp_gpus_count (list);
    /* Slurm already split the node's GPUs between the tasks. */
    own_share = ngpus > 0 && in->gpus_on_node > ngpus
                && (unsigned) in->gpus_on_node >= in->local_tasks;
    enough = own_share || (unsigned) ngpus >= in->local_tasks;

    if (in->want == SP_BACKEND_NCCL && ngpus == 0)
        return fail_no_gpu (in, err, errlen);
    if (in->want == SP_BACKEND_NCCL && in->bind && !enough)
        return sp_fail (err, errlen, "ddp: --ddp=nccl needs a GPU per task, but "
                     "this node has %u local tasks and %d GPUs "
                     "(CUDA_VISIBLE_DEVICES=%.*s); request more GPUs, fewer "
                     "tasks per node, or use --ddp=host", in->local_tasks,
                     ngpus, 64, list);
    if (in->want == SP_BACKEND_NCCL)
        c.backend = SP_BACKEND_NCCL;
    else if (in->want == SP_BACKEND_AUTO
             && resolve_auto (in, ngpus, enough, &c.backend, err, errlen) < 0)
        return -1;
    if (in->bind && ngpus > 0 && enough
        && bind_task (in, list, ngpus, own_share, &c, err, errlen) < 0)
        return -1;
    c.step_list = from_step && !c.bound;
    c.unlisted = ngpus == 0 && in->gpus_on_node > 0;
    *out = c;
    return 0;
}

int sp_gpus_note (const struct sp_task_gpus *in, enum sp_backend backend,
                  char *buf, size_t len)
{
    if (!in || !buf || len == 0) {
        errno = EINVAL;
        return -1;
    }
    snprintf (buf, len, "ddp: warning: the step has %d GPUs on %s, but "
              "Slurm gave its tasks no GPU list (CUDA_VISIBLE_DEVICES "
              "unset%s) and the plugin could not read the step's: the %s "
              "backend runs with no GPU bound, and a task may see every GPU "
              "of the node; %s", in->gpus_on_node,
              in->node ? in->node : "this node",
              in->bind_none ? ": srun --gpu-bind=none does that" : "",
              sp_backend_name (backend), in->bind_none
              ? "drop --gpu-bind=none to have one GPU bound per task "
                "(--ddp=...,nobind keeps every GPU of the step visible)"
              : "check the step's --gpu-bind and --tres-bind options");
    return 0;
}
