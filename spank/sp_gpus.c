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

int sp_gpus_choose (const struct sp_task_gpus *in, struct sp_task_choice *out,
                    char *err, size_t errlen)
{
    struct sp_task_choice c = { .backend = SP_BACKEND_HOST, .bound = false };
    int ngpus;
    bool own_share, enough;
    unsigned idx;

    if (!in || !out || in->local_tasks == 0
        || in->local_rank >= in->local_tasks
        || (in->want != SP_BACKEND_AUTO && in->want != SP_BACKEND_HOST
            && in->want != SP_BACKEND_NCCL))
        return sp_fail (err, errlen, "ddp: internal error: bad task description");
    if ((ngpus = sp_gpus_count (in->visible)) < 0)
        return sp_fail (err, errlen, "ddp: CUDA_VISIBLE_DEVICES is not a valid "
                     "GPU list: '%.*s'", 64, in->visible);
    /* Slurm already split the node's GPUs between the tasks. */
    own_share = ngpus > 0 && in->gpus_on_node > ngpus
                && (unsigned) in->gpus_on_node >= in->local_tasks;
    enough = own_share || (unsigned) ngpus >= in->local_tasks;

    if (in->want == SP_BACKEND_NCCL && ngpus == 0)
        return sp_fail (err, errlen, "ddp: --ddp=nccl needs a GPU per task, but "
                     "this step has no GPU on this node (%u local tasks, 0 "
                     "GPUs); request GPUs (--gres=gpu:N) or use --ddp=host",
                     in->local_tasks);
    if (in->want == SP_BACKEND_NCCL && in->bind && !enough)
        return sp_fail (err, errlen, "ddp: --ddp=nccl needs a GPU per task, but "
                     "this node has %u local tasks and %d GPUs "
                     "(CUDA_VISIBLE_DEVICES=%.*s); request more GPUs, fewer "
                     "tasks per node, or use --ddp=host", in->local_tasks,
                     ngpus, 64, in->visible);
    if (in->want == SP_BACKEND_NCCL)
        c.backend = SP_BACKEND_NCCL;
    else if (in->want == SP_BACKEND_AUTO
             && resolve_auto (in, ngpus, enough, &c.backend, err, errlen) < 0)
        return -1;
    if (in->bind && ngpus > 0 && enough) {
        idx = own_share ? 0 : in->local_rank;
        if (sp_gpus_pick (in->visible, idx, c.gpu, sizeof (c.gpu)) < 0)
            return sp_fail (err, errlen, "ddp: internal error: cannot pick GPU "
                         "%u of '%.*s'", idx, 64, in->visible);
        c.bound = true;
    }
    *out = c;
    return 0;
}
