/* plan.c - a ddp-run job's backend and binding (plan.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "sp_plan.h"

int dr_plan_default_size (const struct dr_gpus *g, enum sp_backend want,
                          int nnodes, char *err, size_t errlen)
{
    if (want == SP_BACKEND_HOST) {
        snprintf (err, errlen, "how many ranks? give -n RANKS (without -n "
                  "ddp-run starts one rank per GPU, and the host backend "
                  "uses none)");
        return -1;
    }
    if (g->count < 1) {
        snprintf (err, errlen, "how many ranks? give -n RANKS (without -n "
                  "ddp-run starts one rank per GPU, and found none: %s)",
                  g->from);
        return -1;
    }
    return g->count * (nnodes > 0 ? nnodes : 1);
}

/* Each rank's local rank and its node's rank count; the busiest node.
 * Returns the busiest node's count, or -1 when J is not a valid layout. */
static int layout (const struct dr_job *j, int *lrank, int *lsize,
                   int *busiest)
{
    int *cnt, r, max = 0;

    if (j->size < 1 || j->nnodes < 1 || j->nnodes > j->size || !j->node_of
        || !(cnt = calloc ((size_t)j->nnodes, sizeof (int))))
        return -1;
    for (r = 0; r < j->size; r++) {
        if (j->node_of[r] < 0 || j->node_of[r] >= j->nnodes) {
            free (cnt);
            return -1;
        }
        lrank[r] = cnt[j->node_of[r]]++;
    }
    *busiest = 0;
    for (r = 0; r < j->size; r++) {
        lsize[r] = cnt[j->node_of[r]];
        if (lsize[r] > max) {
            max = lsize[r];
            *busiest = j->node_of[r];
        }
    }
    free (cnt);
    return max;
}

/* nccl with fewer GPUs than the busiest node's ranks: what to do. */
static int refuse_nccl (const struct dr_job *j, const struct dr_gpus *g,
                        int max, int busiest, char *err, size_t errlen)
{
    if (g->count == 0)
        snprintf (err, errlen, "%s needs a GPU per rank, but there is no GPU "
                  "(%s); use --backend host, or set CUDA_VISIBLE_DEVICES to "
                  "the GPUs to use", j->want_from, g->from);
    else if (j->nnodes == 1)
        snprintf (err, errlen, "%s needs a GPU per rank, but %d ranks would "
                  "share %d GPUs (%s); run -n %d or fewer, or use --backend "
                  "host", j->want_from, max, g->count, g->from, g->count);
    else
        snprintf (err, errlen, "%s needs a GPU per rank, but simulated node "
                  "%d has %d ranks and every node sees the same %d GPUs "
                  "(%s); run at most %d ranks per node (-n %d with -N %d), "
                  "or use --backend host", j->want_from, busiest, max,
                  g->count, g->from, g->count, g->count * j->nnodes,
                  j->nnodes);
    return -1;
}

/* The backend of the whole job, and why, into P. */
static int choose_backend (const struct dr_job *j, const struct dr_gpus *g,
                           int max, int busiest, struct dr_plan *p,
                           char *err, size_t errlen)
{
    const char *from = j->want_from ? j->want_from : "the default";

    p->backend = SP_BACKEND_HOST;
    switch (j->want) {
    case SP_BACKEND_NCCL:
        if (g->count < max)
            return refuse_nccl (j, g, max, busiest, err, errlen);
        p->backend = SP_BACKEND_NCCL;
        snprintf (p->why, sizeof (p->why), "%s", from);
        return 0;
    case SP_BACKEND_HOST:
        snprintf (p->why, sizeof (p->why), "%s", from);
        return 0;
    case SP_BACKEND_AUTO:
        break;
    default:
        snprintf (err, errlen, "internal error: backend %d", (int)j->want);
        return -1;
    }
    if (!g->driver)
        snprintf (p->why, sizeof (p->why), "auto: no NVIDIA driver (no "
                  "/proc/driver/nvidia/version, no /dev/nvidiactl)");
    else if (g->count < 1)
        snprintf (p->why, sizeof (p->why), "auto: no GPU");
    else if (g->count < max)
        snprintf (p->why, sizeof (p->why), "auto: %d ranks on a node and %d "
                  "GPUs", max, g->count);
    else {
        p->backend = SP_BACKEND_NCCL;
        snprintf (p->why, sizeof (p->why), "auto: a GPU per rank (%d ranks "
                  "on a node, %d GPUs) and an NVIDIA driver", max, g->count);
    }
    return 0;
}

/* Rank R's GPU, by the plugin's rule. */
static int bind_rank (const struct dr_job *j, const struct dr_gpus *g,
                      struct dr_plan *p, int r, int lrank, int lsize,
                      char *err, size_t errlen)
{
    struct sp_task_gpus in = {
        .visible = g->list,
        .gpus_on_node = g->count,
        .local_rank = (unsigned)lrank,
        .local_tasks = (unsigned)lsize,
        .want = p->backend,
        .bind = j->bind,
        .rule = SP_AUTO_UNIFORM,
        .max_local_tasks = (unsigned)p->max_local,
        .driver = g->driver,
    };
    struct sp_task_choice c;

    if (sp_gpus_choose (&in, &c, err, errlen) < 0)
        return -1;
    if (c.bound)
        memcpy (p->gpu[r], c.gpu, sizeof (c.gpu));
    else
        p->gpu[r][0] = '\0';
    return 0;
}

int dr_plan_make (const struct dr_job *j, const struct dr_gpus *g,
                  struct dr_plan *p, char *err, size_t errlen)
{
    int *lrank = NULL, *lsize = NULL, busiest = 0, r, rc = -1;

    memset (p, 0, sizeof (*p));
    if (j->size < 1 || !(lrank = calloc ((size_t)j->size, sizeof (int)))
        || !(lsize = calloc ((size_t)j->size, sizeof (int)))
        || !(p->gpu = calloc ((size_t)j->size, sizeof (*p->gpu)))) {
        snprintf (err, errlen, "%d ranks: out of memory", j->size);
        goto out;
    }
    if ((p->max_local = layout (j, lrank, lsize, &busiest)) < 0) {
        snprintf (err, errlen, "internal error: a bad layout of %d ranks on "
                  "%d nodes", j->size, j->nnodes);
        goto out;
    }
    if (choose_backend (j, g, p->max_local, busiest, p, err, errlen) < 0)
        goto out;
    for (r = 0; r < j->size; r++)
        if (bind_rank (j, g, p, r, lrank[r], lsize[r], err, errlen) < 0)
            goto out;
    rc = 0;
out:
    free (lrank);
    free (lsize);
    if (rc < 0)
        dr_plan_free (p);
    return rc;
}

void dr_plan_free (struct dr_plan *p)
{
    if (!p)
        return;
    free (p->gpu);
    p->gpu = NULL;
}
