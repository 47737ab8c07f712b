/* gpus.c - GPU lists and the per-task choice (spank/sp_gpus.c). */
#include "config.h"
#include <errno.h>
#include "sp_gpus.h"
#include "tap.h"

static void test_lists (void)
{
    char buf[SP_GPU_TOKEN_MAX + 1], tiny[3];
    char longtok[SP_GPU_TOKEN_MAX + 2];
    const char *uuids = "GPU-8f6c3a1e-1b2c-4d5e-9f00-0123456789ab,"
                        "MIG-GPU-8f6c3a1e/1/0,MIG-4b5e7c3d-aaaa-bbbb-cccc-000000000000";
    const char *badlists[] = { ",", "0,", ",0", "0,,1", "0 ,1", " 0", "0;1",
                               "0\n1", "$(id)", "0,1,", NULL };
    int i;

    is_int (sp_gpus_count (NULL), 0, "NULL has no GPUs");
    is_int (sp_gpus_count (""), 0, "an empty list has no GPUs");
    is_int (sp_gpus_count ("0"), 1, "'0' is one GPU");
    is_int (sp_gpus_count ("0,1,2,3"), 4, "'0,1,2,3' is four GPUs");
    is_int (sp_gpus_count (uuids), 3, "three UUID tokens");
    for (i = 0; badlists[i]; i++) {
        errno = 0;
        ok (sp_gpus_count (badlists[i]) == -1 && errno == EINVAL,
            "malformed list #%d is EINVAL", i);
    }
    memset (longtok, '7', sizeof (longtok) - 1);
    longtok[sizeof (longtok) - 1] = '\0';
    ok (sp_gpus_count (longtok) == -1, "a token longer than %d is refused",
        SP_GPU_TOKEN_MAX);
    longtok[SP_GPU_TOKEN_MAX] = '\0';
    is_int (sp_gpus_count (longtok), 1, "a token of exactly %d is fine",
            SP_GPU_TOKEN_MAX);

    ok (sp_gpus_pick ("4,5,6", 0, buf, sizeof (buf)) == 0
        && strcmp (buf, "4") == 0, "pick 0 of 4,5,6 is 4");
    ok (sp_gpus_pick ("4,5,6", 2, buf, sizeof (buf)) == 0
        && strcmp (buf, "6") == 0, "pick 2 of 4,5,6 is 6");
    ok (sp_gpus_pick (uuids, 1, buf, sizeof (buf)) == 0
        && strcmp (buf, "MIG-GPU-8f6c3a1e/1/0") == 0,
        "UUID tokens are copied as they are");
    errno = 0;
    ok (sp_gpus_pick ("4,5,6", 3, buf, sizeof (buf)) == -1 && errno == ERANGE,
        "pick past the end is ERANGE");
    errno = 0;
    ok (sp_gpus_pick ("", 0, buf, sizeof (buf)) == -1 && errno == ERANGE,
        "pick from an empty list is ERANGE");
    errno = 0;
    ok (sp_gpus_pick ("4,,6", 0, buf, sizeof (buf)) == -1 && errno == EINVAL,
        "pick from a malformed list is EINVAL, even before the bad token");
    errno = 0;
    ok (sp_gpus_pick ("GPU-123", 0, tiny, sizeof (tiny)) == -1
        && errno == ENOSPC, "a too-small buffer is ENOSPC");
    errno = 0;
    ok (sp_gpus_pick (NULL, 0, buf, sizeof (buf)) == -1 && errno == EINVAL,
        "pick from NULL is EINVAL");
    errno = 0;
    ok (sp_gpus_pick ("0", 0, NULL, 0) == -1 && errno == EINVAL,
        "pick into NULL is EINVAL");
}

/* A task on a node with an NVIDIA driver; auto follows the uniform rule
 * with this node the busiest of the step. */
static struct sp_task_gpus task (const char *visible, int on_node,
                                 unsigned lrank, unsigned ltasks,
                                 enum sp_backend want, bool bind)
{
    struct sp_task_gpus t = { .visible = visible, .gpus_on_node = on_node,
                              .local_rank = lrank, .local_tasks = ltasks,
                              .want = want, .bind = bind,
                              .rule = SP_AUTO_UNIFORM, .driver = true };
    return t;
}

/* The same task under --ddp=auto with RULE, BUSIEST tasks on the step's
 * busiest node, DRIVER or not, on node n7. */
static struct sp_task_gpus auto_task (const char *visible, int on_node,
                                      unsigned lrank, unsigned ltasks,
                                      enum sp_auto_rule rule,
                                      unsigned busiest, bool driver)
{
    struct sp_task_gpus t = task (visible, on_node, lrank, ltasks,
                                  SP_BACKEND_AUTO, true);
    t.rule = rule;
    t.max_local_tasks = busiest;
    t.driver = driver;
    t.node = "n7";
    t.why = "the reason";
    return t;
}

static void choose_ok (struct sp_task_gpus t, enum sp_backend backend,
                       const char *gpu, const char *what)
{
    struct sp_task_choice c;
    char err[256] = "";
    int rc = sp_gpus_choose (&t, &c, err, sizeof (err));
    ok (rc == 0 && c.backend == backend
        && (gpu ? c.bound && strcmp (c.gpu, gpu) == 0 : !c.bound),
        "%s: %s, %s", what, sp_backend_name (backend), gpu ? gpu : "unbound");
    if (rc != 0)
        diag ("  error: %s", err);
}

static void choose_bad (struct sp_task_gpus t, const char *want_in_msg,
                        const char *what)
{
    struct sp_task_choice c = { .backend = SP_BACKEND_OFF };
    char err[256] = "";
    int rc;
    errno = 0;
    rc = sp_gpus_choose (&t, &c, err, sizeof (err));
    ok (rc == -1 && errno == EINVAL && c.backend == SP_BACKEND_OFF
        && strncmp (err, "ddp: ", 5) == 0 && strstr (err, want_in_msg),
        "%s fails, message has '%s'", what, want_in_msg);
    if (rc == 0 || !strstr (err, want_in_msg))
        diag ("  message: %s", err);
}

/* Task T is not bound and keeps its list; SHARE: it is a share of its own
 * (DDP_DEVICE=0), else the plugin leaves it alone. */
static void choose_share (struct sp_task_gpus t, enum sp_backend backend,
                          bool share, const char *what)
{
    struct sp_task_choice c;
    char err[256] = "";
    int rc = sp_gpus_choose (&t, &c, err, sizeof (err));

    if (share)
        ok (rc == 0 && c.backend == backend && !c.bound && c.share
            && !c.step_list, "%s: %s, share kept", what,
            sp_backend_name (backend));
    else
        ok (rc == 0 && c.backend == backend && !c.share, "%s: %s, no share",
            what, sp_backend_name (backend));
    if (rc != 0)
        diag ("  error: %s", err);
}

/* Task T had no GPU list: it gets the step's (STEP_LIST) or its GPU. */
static void choose_step (struct sp_task_gpus t, enum sp_backend backend,
                         const char *gpu, bool step_list, const char *what)
{
    struct sp_task_choice c;
    char err[256] = "";
    int rc = sp_gpus_choose (&t, &c, err, sizeof (err));

    ok (rc == 0 && c.backend == backend && c.step_list == step_list
        && (gpu ? c.bound && strcmp (c.gpu, gpu) == 0 : !c.bound),
        "%s: %s, %s%s", what, sp_backend_name (backend), gpu ? gpu : "unbound",
        step_list ? ", the step's list" : "");
    if (rc != 0)
        diag ("  error: %s", err);
}

/* srun --gpu-bind=none: the tasks have no list, the step has one. */
static struct sp_task_gpus unbound_task (const char *step, int on_node,
                                         unsigned lrank, unsigned ltasks,
                                         enum sp_backend want, bool bind)
{
    struct sp_task_gpus t = task (NULL, on_node, lrank, ltasks, want, bind);

    t.step_visible = step;
    t.bind_none = true;
    return t;
}

/* A host task left without any GPU list on a node with GPUs: it runs,
 * and the warning says why and what to do. */
static void test_unlisted (void)
{
    struct sp_task_gpus t = unbound_task (NULL, 2, 0, 2, SP_BACKEND_HOST,
                                          true);
    struct sp_task_choice c;
    char err[256] = "", note[512] = "";

    t.node = "n7";
    ok (sp_gpus_choose (&t, &c, err, sizeof (err)) == 0 && c.unlisted
        && !c.bound && !c.step_list && c.backend == SP_BACKEND_HOST,
        "host, no list and no step list: runs, unlisted");
    ok (sp_gpus_note (&t, c.backend, note, sizeof (note)) == 0
        && strstr (note, "ddp: warning: the step has 2 GPUs on n7, but Slurm "
                   "gave its tasks no GPU list (CUDA_VISIBLE_DEVICES unset: "
                   "srun --gpu-bind=none does that)")
        && strstr (note, "the host backend runs with no GPU bound")
        && strstr (note, "drop --gpu-bind=none"), "the warning: %s", note);
    t.bind_none = false;
    ok (sp_gpus_note (&t, c.backend, note, sizeof (note)) == 0
        && !strstr (note, "--gpu-bind=none")
        && strstr (note, "check the step's --gpu-bind and --tres-bind"),
        "without --gpu-bind=none it does not name it");
    t = unbound_task ("0,1", 2, 0, 2, SP_BACKEND_HOST, true);
    ok (sp_gpus_choose (&t, &c, err, sizeof (err)) == 0 && !c.unlisted,
        "with the step's list: not unlisted");
    t = task (NULL, -1, 0, 2, SP_BACKEND_HOST, true);
    ok (sp_gpus_choose (&t, &c, err, sizeof (err)) == 0 && !c.unlisted,
        "a step without GPUs: not unlisted");
    errno = 0;
    ok (sp_gpus_note (NULL, SP_BACKEND_HOST, note, sizeof (note)) == -1
        && errno == EINVAL, "sp_gpus_note (NULL) is EINVAL");
}

static void test_bind_none (void)
{
    const enum sp_backend A = SP_BACKEND_AUTO, H = SP_BACKEND_HOST,
                          N = SP_BACKEND_NCCL;
    const char *yes[] = { "gpu:none", "gpu:verbose,none", "gpu:none,verbose",
                          "nic:x;gpu:none", "gpu:none;nic:x",
                          "gres/gpu:none", "gres/gpu:verbose,none", NULL };
    const char *no[] = { "", "none", "gpu:", "gpu:closest", "gpu:nonesuch",
                         "gpu:single:1", "nic:none", "gpu:map_gpu:0,1",
                         "xgpu:none", "gpu:verbose,non", "gres/gpu:",
                         "gres/gpu:closest", "gres/gpux:none", NULL };
    struct sp_task_gpus t;
    int i;

    ok (!sp_gpus_bind_none (NULL), "no SLURMD_TRES_BIND: binding not off");
    for (i = 0; yes[i]; i++)
        ok (sp_gpus_bind_none (yes[i]), "'%s' turns GPU binding off", yes[i]);
    for (i = 0; no[i]; i++)
        ok (!sp_gpus_bind_none (no[i]), "'%s' does not", no[i]);

    choose_step (unbound_task ("0,1", 2, 1, 2, N, true), N, "1", false,
                 "--gpu-bind=none, nccl: bound from the step's list");
    choose_step (unbound_task ("0,1", 2, 0, 2, H, true), H, "0", false,
                 "--gpu-bind=none, host: bound from the step's list");
    choose_step (unbound_task ("0,1", 2, 1, 2, A, true), N, "1", false,
                 "--gpu-bind=none, auto: bound from the step's list");
    choose_step (unbound_task ("0,1", 2, 1, 2, N, false), N, NULL, true,
                 "--gpu-bind=none, nobind: the step's list");
    choose_step (unbound_task ("0,1", 2, 2, 3, H, true), H, NULL, true,
                 "--gpu-bind=none, host, too few: the step's list");
    choose_step (unbound_task ("0,1,2,3", 4, 1, 2, N, true), N, "1", false,
                 "--gpu-bind=none with 2 per task: one each from the step's");
    /* The step's list must match Slurm's count, or it is not used. */
    choose_bad (unbound_task ("0,1,2", 2, 0, 2, N, true),
                "srun --gpu-bind=none left the tasks without a GPU list",
                "a step list longer than SLURM_GPUS_ON_NODE");
    choose_bad (unbound_task ("0,,1", 2, 0, 2, N, true),
                "drop --gpu-bind=none", "a malformed step list");
    choose_bad (unbound_task (NULL, 2, 0, 2, N, true),
                "the plugin could not read the step's 2 GPUs on this node",
                "no step list");
    choose_step (unbound_task ("0,1", 0, 0, 2, H, true), H, NULL, false,
                 "no GPUs on the node: the step's list is not used");
    t = unbound_task (NULL, 2, 0, 2, N, true);
    t.bind_none = false;
    choose_bad (t, "Slurm gave this task no GPU list (CUDA_VISIBLE_DEVICES "
                "unset) although the step has 2 GPUs on this node",
                "no list, binding not off: says so");
    t = unbound_task ("0,1", 2, 0, 2, N, true);
    t.visible = "1";
    choose_ok (t, N, "1", "the task's own list wins over the step's");
    test_unlisted ();
}

static void test_choose (void)
{
    const enum sp_backend A = SP_BACKEND_AUTO, H = SP_BACKEND_HOST,
                          N = SP_BACKEND_NCCL;

    /* One shared list, one GPU per local task. */
    choose_ok (task ("0,1", 2, 0, 2, N, true), N, "0", "nccl rank 0 of 2 on 0,1");
    choose_ok (task ("0,1", 2, 1, 2, N, true), N, "1", "nccl rank 1 of 2 on 0,1");
    choose_ok (task ("2,3", 2, 1, 2, A, true), N, "3", "auto with enough GPUs");
    choose_ok (task ("GPU-a,GPU-b", -1, 1, 2, A, true), N, "GPU-b",
               "UUIDs, unknown node count");
    choose_ok (task ("0,1,2,3", 4, 1, 2, N, true), N, "1",
               "more GPUs than tasks: the one at the local rank");
    choose_ok (task ("0,1", 2, 1, 2, H, true), H, "1",
               "host with enough GPUs still binds");
    /* Too few GPUs. */
    choose_bad (task ("0,1", 2, 2, 3, N, true), "3 local tasks and 2 GPUs",
                "nccl, 3 tasks on 2 GPUs");
    choose_ok (task ("0,1", 2, 2, 3, A, true), H, NULL,
               "auto, 3 tasks on 2 GPUs");
    choose_ok (task ("0,1", 2, 2, 3, H, true), H, NULL,
               "host, 3 tasks on 2 GPUs");
    /* No GPUs. */
    choose_bad (task (NULL, -1, 0, 1, N, true), "no GPU", "nccl without GPUs");
    choose_bad (task ("", 0, 0, 1, N, false), "no GPU",
                "nccl with an empty list, binding off");
    choose_ok (task (NULL, -1, 0, 2, A, true), H, NULL, "auto without GPUs");
    choose_ok (task (NULL, -1, 0, 2, H, true), H, NULL, "host without GPUs");
    /* Slurm already gave each task its own GPU (--gpus-per-task=1). */
    choose_ok (task ("1", 2, 1, 2, N, true), N, "1",
               "per-task share: nccl keeps the task's own GPU");
    choose_ok (task ("1", 2, 1, 2, A, true), N, "1", "per-task share: auto");
    choose_share (task ("2,3", 4, 1, 2, N, true), N, true,
                  "per-task share of two (--gpus-per-task=2): kept whole");
    choose_share (task ("GPU-c,GPU-d", 4, 1, 2, H, true), H, true,
                  "per-task share of two UUIDs, host: kept whole");
    choose_share (task ("2,3", 4, 1, 2, A, true), N, true,
                  "per-task share of two, auto: nccl, kept whole");
    choose_share (task ("2,3", 4, 1, 2, N, false), N, false,
                  "per-task share of two, binding off: no DDP_DEVICE");
    choose_share (task ("0,1", 2, 1, 2, N, true), N, false,
                  "the node's whole list is no share: bound instead");
    choose_bad (task ("0", 2, 1, 4, N, true), "4 local tasks and 1 GPUs",
                "shares smaller than the task count are not own shares");
    choose_bad (task ("0", 1, 1, 2, N, true), "2 local tasks and 1 GPUs",
                "one GPU on the node shared by two tasks");
    /* Binding off (admin bind=none or --ddp=...,nobind). */
    choose_ok (task ("0,1", 2, 1, 2, N, false), N, NULL, "nccl, binding off");
    choose_ok (task ("0,1", 2, 2, 3, N, false), N, NULL,
               "nccl, binding off, more tasks than GPUs: user's choice");
    choose_ok (task ("0,1", 2, 2, 3, A, false), H, NULL,
               "auto, binding off, more tasks than GPUs: host (NCCL needs a "
               "GPU per rank)");
    choose_ok (task ("0,1", 2, 1, 2, A, false), N, NULL,
               "auto, binding off, a GPU per task: nccl, unbound");
    /* Garbage in. */
    choose_bad (task ("0,,1", 2, 0, 2, A, true), "not a valid GPU list",
                "a malformed CUDA_VISIBLE_DEVICES");
    choose_bad (task ("0,1", 2, 2, 2, A, true), "internal error",
                "local rank >= local tasks");
    choose_bad (task ("0,1", 2, 0, 0, A, true), "internal error",
                "zero local tasks");
    choose_bad (task ("0,1", 2, 0, 2, SP_BACKEND_OFF, true), "internal error",
                "backend off");
    {
        struct sp_task_choice c;
        ok (sp_gpus_choose (NULL, &c, NULL, 0) == -1, "NULL input fails");
    }
}

/* A task on node n7 (see auto_task) under --ddp=auto, and what it gets:
 * BACKEND and GPU (NULL: unbound), or, when REFUSED is set, a refusal
 * whose message has it. */
struct auto_case {
    const char *visible;
    int on_node;
    unsigned lrank, ltasks;
    enum sp_auto_rule rule;
    unsigned busiest;
    bool driver;
    enum sp_backend backend;
    const char *gpu;
    const char *refused;
    const char *what;
};

#define H SP_BACKEND_HOST
#define N SP_BACKEND_NCCL
static const struct auto_case auto_cases[] = {
    /* uniform (the job's GPUs): this node's count against the busiest */
    { "0", 1, 0, 1, SP_AUTO_UNIFORM, 2, true, H, "0", NULL, "uniform, 1 GPU "
      "for 1 task here and 2 on the busiest node: host" },
    { "0,1", 2, 0, 1, SP_AUTO_UNIFORM, 2, true, N, "0", NULL, "uniform, 2 "
      "GPUs, 2 tasks on the busiest node: nccl" },
    { "0", 1, 0, 1, SP_AUTO_UNIFORM, 0, true, N, "0", NULL,
      "uniform, busiest unknown (0): this node counts" },
    { NULL, -1, 0, 2, SP_AUTO_UNIFORM, 2, false, H, NULL, NULL, "uniform, no "
      "GPUs, no driver: host" },
    { "0,1", 2, 1, 2, SP_AUTO_UNIFORM, 2, false, H, NULL,
      "n7 has no NVIDIA driver", "uniform, enough GPUs, no driver" },
    /* nccl for the whole step: this node must be able to */
    { "0,1", 2, 1, 2, SP_AUTO_NCCL, 2, true, N, "1", NULL, "step nccl, "
      "enough here" },
    { "1", 2, 1, 2, SP_AUTO_NCCL, 2, true, N, "1", NULL, "step nccl, a "
      "per-task share here" },
    { "0", 1, 1, 2, SP_AUTO_NCCL, 2, true, H, NULL, "chose nccl for the "
      "whole step because the reason, but n7 has 2 local tasks and 1 GPUs",
      "step nccl, too few GPUs here" },
    { "0,1", 2, 0, 2, SP_AUTO_NCCL, 2, false, H, NULL, "no NVIDIA driver",
      "step nccl, no driver here" },
    /* host for the whole step, GPUs still bound */
    { "0,1", 2, 1, 2, SP_AUTO_HOST, 3, true, H, "1", NULL,
      "step host, enough GPUs here: bound anyway" },
    { "0,1", 2, 1, 2, SP_AUTO_HOST, 3, false, H, "1", NULL, "step host, no "
      "driver: no matter" },
    /* each node: nccl where possible, refusal elsewhere */
    { "0,1", 2, 0, 2, SP_AUTO_EACH, 4, true, N, "0", NULL, "each, enough" },
    { "0", 1, 0, 2, SP_AUTO_EACH, 2, true, H, NULL, "needs one backend for "
      "the whole step, but n7 has 2 local tasks and 1 GPUs, and the reason",
      "each, too few here" },
    { NULL, -1, 0, 1, SP_AUTO_EACH, 1, true, H, NULL, "0 GPUs",
      "each, none here" },
    { "0", 1, 0, 1, SP_AUTO_EACH, 1, false, H, NULL, "no NVIDIA driver",
      "each, enough but no driver" },
    { "0", 1, 0, 1, (enum sp_auto_rule) 42, 1, true, H, NULL,
      "internal error", "an unknown rule" },
};
#undef H
#undef N

/* --ddp=auto: one backend for the whole step, or a refusal (sp_plan.h). */
static void test_auto (void)
{
    const struct auto_case *c;
    struct sp_task_gpus t;
    size_t i;

    for (i = 0; i < sizeof (auto_cases) / sizeof (auto_cases[0]); i++) {
        c = &auto_cases[i];
        t = auto_task (c->visible, c->on_node, c->lrank, c->ltasks, c->rule,
                       c->busiest, c->driver);
        if (c->refused)
            choose_bad (t, c->refused, c->what);
        else
            choose_ok (t, c->backend, c->gpu, c->what);
    }
    /* Explicit nccl is the user's choice: no driver check. */
    t = task ("0,1", 2, 0, 2, SP_BACKEND_NCCL, true);
    t.driver = false;
    choose_ok (t, SP_BACKEND_NCCL, "0", "--ddp=nccl without a driver: nccl");
    /* Defaults in messages. */
    t = auto_task ("0", 1, 0, 2, SP_AUTO_NCCL, 2, true);
    t.node = NULL;
    t.why = NULL;
    choose_bad (t, "but this node has 2 local tasks", "no node name");
}

int main (void)
{
    test_lists ();
    test_choose ();
    test_auto ();
    test_bind_none ();
    return done_testing ();
}
